"""Charts drawn on the server as inline SVG: no JavaScript, no external files.

``{% cdf_chart report %}`` draws the CDF of normalized edit distance (paper 004, Figure 2)
as a step chart; ``cdf_svg`` is the pure function behind it, drawn with the palette, axes
and ticks of :mod:`sejury_web.svg`, as the agreement report's charts are.
"""

import math
from collections.abc import Sequence

from django import template
from django.utils.safestring import SafeString

from rubrics.analytics import NO_GOLDEN_RUBRICS, CdfPoint, RubricReport
from sejury_web.svg import (
    ACCENT,
    RED,
    svg_close,
    svg_open,
    tick_label,
    x_axis,
    x_tick,
    x_title,
    y_axis,
    y_gridline,
    y_title,
)

register = template.Library()

WIDTH, HEIGHT = 560, 320
# Room for the tick labels and the axis titles.
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 20, 16, 52
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
LINE, MEDIAN = ACCENT, RED


def x_ticks(largest: float) -> tuple[float, ...]:
    """Ticks from 0 covering ``largest``: steps of 0.2 up to 1, then of 0.5, then wider."""
    if largest <= 1:
        return tuple(round(0.2 * i, 1) for i in range(6))
    step = 0.5 if largest <= 3 else float(math.ceil(largest / 6))
    count = math.ceil(largest / step - 1e-9)
    return tuple(round(step * i, 1) for i in range(count + 1))


def cdf_svg(
    points: Sequence[CdfPoint],
    *,
    title: str,
    desc: str,
    median: float | None = None,
    x_label: str = "Normalized edit distance",
    y_label: str = "Share of golden rubrics",
    chart_id: str = "cdf",
) -> SafeString:
    """An SVG step chart of an empirical CDF; ``points`` as ``cdf_points`` gives them.

    The line starts at (0, 0), rises by each point's share at its x, and runs on to the end
    of the axis. With no points the axes carry a "no golden rubrics yet" note.
    """
    ticks = x_ticks(max((p.x for p in points), default=0.0))
    x_top = ticks[-1]
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = HEIGHT - MARGIN_TOP - MARGIN_BOTTOM

    def sx(x: float) -> float:
        return float(round(MARGIN_LEFT + plot_w * x / x_top, 2))

    def sy(share: float) -> float:
        return float(round(MARGIN_TOP + plot_h * (1 - share), 2))

    bottom, left, right = sy(0), sx(0), sx(x_top)
    parts = svg_open(WIDTH, HEIGHT, chart_id=chart_id, title=title, desc=desc)
    for share in Y_TICKS:
        parts.append(y_gridline(sy(share), left=left, right=right, label=f"{share:.0%}"))
    for tick in ticks:
        parts.append(x_tick(sx(tick), bottom=bottom, label=tick_label(tick)))
    parts += [
        x_axis(left=left, right=right, bottom=bottom),
        y_axis(left=left, top=sy(1), bottom=bottom),
        x_title(sx(x_top / 2), HEIGHT - 10, x_label),
        y_title(sy(0.5), y_label),
    ]
    if not points:
        parts.append(x_title(sx(x_top / 2), sy(0.5), NO_GOLDEN_RUBRICS.capitalize()))
        return svg_close(parts)
    if median is not None:
        x = sx(median)
        # Right of the line, near the bottom, the CDF is above 50%: no point hides the label.
        # Near the end of the axis it goes on the left, inside the chart.
        label_x, anchor = (x + 4, "start") if median <= 0.75 * x_top else (x - 4, "end")
        parts.append(
            f'<line class="chart-median" x1="{x}" y1="{sy(1)}" x2="{x}" y2="{bottom}"'
            f' stroke="{MEDIAN}" stroke-dasharray="4 3"/>'
            f'<text x="{label_x}" y="{bottom - 6}" text-anchor="{anchor}" fill="{MEDIAN}">'
            f"median {median:.2f}</text>"
        )
    path = [f"M{left} {bottom}"]
    for point in points:
        path.append(f"H{sx(point.x)} V{sy(point.share)}")
    path.append(f"H{sx(x_top)}")
    parts.append(
        f'<path class="chart-step" d="{" ".join(path)}" fill="none" stroke="{LINE}"'
        ' stroke-width="2"/>'
    )
    for point in points:
        parts.append(
            f'<circle cx="{sx(point.x)}" cy="{sy(point.share)}" r="3" fill="{LINE}">'
            f"<title>≤ {point.x:.2f}: {point.share:.0%} of golden rubrics</title></circle>"
        )
    return svg_close(parts)


@register.simple_tag
def cdf_chart(report: RubricReport) -> SafeString:
    """Figure 2 of paper 004 for ``report``: the CDF of normalized edit distance."""
    if report.has_golden:
        desc = (
            f"Empirical CDF of the normalized edit distance between draft and golden rubric,"
            f" over {report.golden_count} golden rubrics: median {report.normalized_median:.2f},"
            f" maximum {report.normalized_max:.2f}."
        )
    else:
        desc = f"Empty chart: {NO_GOLDEN_RUBRICS}."
    return cdf_svg(
        report.cdf,
        title="CDF of normalized edit distance",
        desc=desc,
        median=report.normalized_median,
    )


@register.filter
def percent(value: float | None, digits: int = 1) -> str:
    """``0.667`` → ``66.7%``; ``–`` for nothing."""
    if value is None:
        return "–"
    return f"{value:.{digits}%}"


@register.filter
def number(value: float | None, digits: int = 2) -> str:
    """An ``int`` as it is, a ``float`` with ``digits`` decimals; thousands separated."""
    if value is None:
        return "–"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"
