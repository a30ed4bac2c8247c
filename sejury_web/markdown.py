"""Markdown that users wrote (rubrics, justifications), rendered as HTML that is safe to show.

Two layers, so that a mistake in one is caught by the other: markdown-it-py renders CommonMark
(with tables and strikethrough) with raw HTML turned off, so ``<script>`` arrives as text;
nh3 then keeps only an allow-list of tags and attributes, and links only to ``http``,
``https`` and ``mailto`` URLs. Images are not rendered (``![alt](url)`` shows as a link):
a rubric has no use for them, and a remote image would tell its server who read the rubric.
"""

from functools import lru_cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

ALLOWED_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "code", "pre", "em", "strong"}
    | {"a", "blockquote", "table", "thead", "tbody", "tr", "th", "td", "hr", "br", "del", "s"}
)
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
ALLOWED_URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"
# Dropped with their content: what is inside them is code or markup, never prose.
DROPPED_WITH_CONTENT = frozenset({"script", "style", "iframe", "object", "embed", "template"})


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    return (
        MarkdownIt("commonmark", {"html": False})
        .enable(["table", "strikethrough"])
        .disable("image")
    )


@lru_cache(maxsize=1)
def _cleaner() -> nh3.Cleaner:
    return nh3.Cleaner(
        tags=set(ALLOWED_TAGS),
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(ALLOWED_URL_SCHEMES),
        url_relative="deny",
        link_rel=LINK_REL,
    )


def markdown_html(text: str) -> SafeString:
    """``text`` (CommonMark, tables, strikethrough) as sanitized HTML, safe to put in a page."""
    return mark_safe(_cleaner().clean(_renderer().render(text)))  # noqa: S308 - sanitized above
