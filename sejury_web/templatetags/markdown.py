"""``{% load markdown %}{{ text|markdown }}``: user-written Markdown as sanitized HTML."""

from django import template
from django.utils.safestring import SafeString

from sejury_web.markdown import markdown_html

register = template.Library()


@register.filter(name="markdown")
def markdown(text: object) -> SafeString:
    """Render ``text`` with :func:`sejury_web.markdown.markdown_html` (``None`` is empty)."""
    return markdown_html("" if text is None else str(text))
