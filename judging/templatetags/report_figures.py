"""``{% report_figure f %}``: one figure of an agreement report as the tables show it.

A figure is its value (two decimals), its interval in brackets and its n, with the exact
value in ``data-value`` for tests and scripts; a count is the number alone; None is an
empty cell and "self" (the diagonal of the κ matrix) a dash. Written in Python rather than
as an included template: a report of 37 annotators has a few thousand of them.
"""

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from judging.reports.figures import Figure

register = template.Library()

UNDEFINED = mark_safe(
    '<span class="muted" title="undefined: nothing to compare, or a zero denominator">—</span>'
)


def two_places(value: float) -> str:
    """``value`` with two decimals, never "-0.00" (a tiny negative number rounds to 0)."""
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


@register.simple_tag
def report_figure(f: Figure | str | None) -> SafeString:
    if f is None:
        return mark_safe("")
    if isinstance(f, str):
        return mark_safe('<span class="muted">—</span>')
    if not f.estimated:
        return format_html('<span class="figure" data-value="{}">{}</span>', f.value, f.value)
    if f.value is None:
        value = format_html(
            '<span class="figure" data-value="" data-n="{}">{}</span>', f.n, UNDEFINED
        )
    else:
        value = format_html(
            '<span class="figure" data-value="{}" data-n="{}">{}</span>',
            f"{f.value:.6f}",
            f.n,
            two_places(f.value),
        )
    interval = (
        format_html('<span class="ci">[{}, {}]</span> ', two_places(f.ci[0]), two_places(f.ci[1]))
        if f.ci
        else ""
    )
    return format_html(
        '{} <span class="muted small-text nowrap">{}<span class="n">n={}</span></span>',
        value,
        interval,
        f.n,
    )
