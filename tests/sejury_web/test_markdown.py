from html.parser import HTMLParser

import pytest
from django.template import Context, Template
from django.utils.safestring import SafeString

from rubrics.rubric_text import rubric_markdown
from sejury_web.markdown import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, LINK_REL, markdown_html

# Listing 1 of paper 004, with its double-backtick code spans.
LISTING_1 = {
    "root_cause": (
        "The bug is a ``use_of_uninitialized_value`` error. A new member, "
        "``redacted_property_name``, was added to ``RedactedClass`` in "
        "``some/redacted/path.h`` but was not initialized in any constructor."
    ),
    "requirements": [
        {"title": "Initialize the Member", "detail": "``redacted_property_name`` must be set."},
        {"title": "Correct Default Value", "detail": "Must be ``redactedValue``."},
        {"title": "Robust Implementation", "detail": "Use a C++11 in-class initializer."},
        {"title": "Correct Location", "detail": "The change must be in ``some/redacted/path.h``."},
    ],
    "acceptable": ["An in-class initializer."],
    "unacceptable": ["Initializing it in the test."],
}


class _Elements(HTMLParser):
    """Every start tag of an HTML fragment, with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(html)
    parser.close()
    return parser.elements


def assert_inert(html: str) -> None:
    """Only allowed tags and attributes; links only to http, https and mailto."""
    for tag, attrs in elements(html):
        assert tag in ALLOWED_TAGS, (tag, html)
        for name, value in attrs.items():
            if tag == "a" and name == "rel":
                assert value == LINK_REL
                continue
            assert name in ALLOWED_ATTRIBUTES.get(tag, set()), (tag, name, html)
            if name == "href":
                assert value is not None
                assert value.lower().startswith(("http://", "https://", "mailto:")), html


def test_the_rubric_template_renders_as_headings_a_numbered_list_and_code() -> None:
    html = markdown_html(rubric_markdown(LISTING_1))
    assert isinstance(html, SafeString)
    assert "<h2>Root cause</h2>" in html
    assert "<h2>Requirements</h2>" in html
    assert "<h2>Unacceptable solutions</h2>" in html
    assert "<code>use_of_uninitialized_value</code>" in html
    assert "<code>some/redacted/path.h</code>" in html
    assert "<li><strong>Initialize the Member:</strong> <code>redacted_property_name</code>" in html
    assert [tag for tag, _ in elements(html)].count("ol") == 1
    assert [tag for tag, _ in elements(html)].count("li") == 6  # 4 requirements, 2 examples
    assert "``" not in html
    assert_inert(html)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("*em* and **strong**", "<em>em</em> and <strong>strong</strong>"),
        ("~~gone~~", "<s>gone</s>"),
        ("3. third\n4. fourth", '<ol start="3">'),
        ("> quoted", "<blockquote>"),
        ("```\nx = 1\n```", "<pre><code>x = 1\n</code></pre>"),
        ("a  \nb", "a<br>"),
        ("---", "<hr>"),
        ("| a | b |\n|--:|---|\n| 1 | 2 |", "<th>a</th>"),  # alignment styles are dropped
        (
            "[paper](https://example.org/p?a=1&b=2)",
            f'<a href="https://example.org/p?a=1&amp;b=2" rel="{LINK_REL}">paper</a>',
        ),
        ("<https://example.org>", '<a href="https://example.org"'),
        ("<dev@example.org>", '<a href="mailto:dev@example.org"'),
    ],
)
def test_common_markdown_renders(text: str, expected: str) -> None:
    html = markdown_html(text)
    assert expected in html
    assert_inert(html)


@pytest.mark.parametrize(
    ("text", "shown_as_text"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("<SCRIPT SRC=//evil.example/x.js></SCRIPT>", "&lt;SCRIPT"),
        ("a <img src=x onerror=alert(1)> b", "&lt;img src=x onerror=alert(1)&gt;"),
        ('<iframe src="https://evil.example"></iframe>', "&lt;iframe"),
        ('<p style="color:red">red</p>', "&lt;p style="),
        ('<a href="javascript:alert(1)">x</a>', "&lt;a href="),
        ("<svg onload=alert(1)>", "&lt;svg onload=alert(1)&gt;"),
        ("<!-- <script>alert(1)</script> -->", "&lt;!--"),
        (
            "``<b onmouseover=alert(1)>x</b>``",
            "<code>&lt;b onmouseover=alert(1)&gt;x&lt;/b&gt;</code>",
        ),
        ("```html\n<script>alert(1)</script>\n```", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("[x](JaVaScRiPt:alert(1))", "[x](JaVaScRiPt:alert(1))"),
        ("[x](&#106;avascript:alert(1))", "[x](javascript:alert(1))"),
        ("[x](&#x6A;avascript&#58;alert(1))", "[x](javascript:alert(1))"),
        ("[x](vbscript:msgbox(1))", "[x](vbscript:msgbox(1))"),
        ("[x](data:text/html;base64,PHNjcmlwdD4=)", "[x](data:text/html"),
        ("<javascript:alert(1)>", "&lt;javascript:alert(1)&gt;"),
    ],
)
def test_raw_html_and_script_urls_come_out_as_text(text: str, shown_as_text: str) -> None:
    html = markdown_html(text)
    assert shown_as_text in html
    assert_inert(html)


@pytest.mark.parametrize(
    "text",
    [
        "![pixel](data:image/png;base64,iVBORw0KGgo=)",
        "[x](<java script:alert(1)>)",
        "[x](/admin/)",
        "[x](//evil.example/)",
        "[x](#top)",
        "[x](data:image/svg+xml;base64,PHN2Zz4=)",
    ],
)
def test_images_relative_and_odd_urls_lose_their_target(text: str) -> None:
    html = markdown_html(text)
    assert "<img" not in html
    assert "href" not in html
    assert_inert(html)


def test_an_image_becomes_a_link_so_no_remote_image_is_loaded() -> None:
    html = markdown_html("![pixel](https://tracker.example/p.png)")
    assert "<img" not in html
    assert f'!<a href="https://tracker.example/p.png" rel="{LINK_REL}">pixel</a>' in html


def test_a_link_title_cannot_break_out_of_its_attribute() -> None:
    html = markdown_html('[x](https://example.org "t\\" onmouseover=\\"alert(1)")')
    assert [tag for tag, _ in elements(html)] == ["p", "a"]
    attrs = elements(html)[1][1]
    assert set(attrs) == {"href", "title", "rel"}
    assert attrs["title"] == 't" onmouseover="alert(1)'
    assert_inert(html)


def test_the_template_filter_renders_and_escapes() -> None:
    template = Template("{% load markdown %}<div>{{ text|markdown }}</div>")
    html = template.render(Context({"text": "**bold** <script>alert(1)</script>"}))
    assert html == (
        "<div><p><strong>bold</strong> &lt;script&gt;alert(1)&lt;/script&gt;</p>\n</div>"
    )
    assert template.render(Context({"text": None})) == "<div></div>"
