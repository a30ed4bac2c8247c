"""Every template comment is one Django reads as one: ``{# … #}`` holds on one line, so a
``{#`` whose ``#}`` is on a later line is printed on the page as text (it was, on the judge
form). A longer comment is ``{% comment %}…{% endcomment %}``."""

from pathlib import Path

from django.conf import settings

OPEN_WITHOUT_CLOSE = "{# with no #} on its line (Django prints it; use {% comment %})"


def test_no_template_comment_runs_past_its_line() -> None:
    roots = [Path(directory) for engine in settings.TEMPLATES for directory in engine["DIRS"]]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.html")):
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if line.count("{#") > line.count("#}"):
                    found.append(f"{path.relative_to(root)}:{number}")
    assert roots
    assert all(root.is_dir() for root in roots)
    assert found == [], OPEN_WITHOUT_CLOSE + ": " + ", ".join(found)
