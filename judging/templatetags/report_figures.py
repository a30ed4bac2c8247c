"""``{% report_figure f %}``: one figure of an agreement report as the tables show it.

A figure is its value (two decimals), its interval in brackets and its n, with the exact
value in ``data-value`` for tests and scripts; a count is the number alone; None is an
empty cell and "self" (the diagonal of the κ matrix) a dash. Written in Python rather than
as an included template: a report of 37 annotators has a few thousand of them.
"""

from django import template
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
    # Plain formatting, no escaping: every part is a number this function formats itself
    # (a page of 37 annotators has thousands of figures; format_html was a fifth of it).
    if f is None:
        return mark_safe("")
    if isinstance(f, str):
        return mark_safe('<span class="muted">—</span>')
    if not f.estimated:
        count = str(f.value)
        return mark_safe(f'<span class="figure" data-value="{count}">{count}</span>')  # noqa: S308
    if f.value is None:
        value = f'<span class="figure" data-value="" data-n="{f.n:d}">{UNDEFINED}</span>'
    else:
        value = (
            f'<span class="figure" data-value="{f.value:.6f}" data-n="{f.n:d}">'
            f"{two_places(f.value)}</span>"
        )
    interval = (
        f'<span class="ci">[{two_places(f.ci[0])}, {two_places(f.ci[1])}]</span> ' if f.ci else ""
    )
    return mark_safe(  # noqa: S308 - numbers only, formatted above
        f'{value} <span class="muted small-text nowrap">{interval}<span class="n">n={f.n:d}</span>'
        "</span>"
    )
