"""The agreement report's charts, drawn on the server as inline SVG: no JavaScript.

Pure functions of plain dataclasses (``Estimate``, ``BinEstimate``) that the report code
builds from its tables:

- ``interval_chart``: a forest plot, one row per estimate, a dot at its value and a line for
  its interval (each judge's κ and AC1 beside the human–human figures, paper 000 RQ2; each
  annotator's κ against the consensus; the VALID rate per patch source);
- ``confusion_heatmap``: a judge's verdicts against the consensus, 2×2;
- ``reliability_diagram``: the share of patches humans found VALID against the team score,
  per score bin (``judges.reliability`` makes the bins, with their intervals).

Every chart has a ``<title>`` and a ``<desc>`` (its text alternative, which the caller
writes) and ``role="img"``. Every mark carries a ``<title>`` tooltip and its numbers as
``data-`` attributes (``data-value``, ``data-ci-lo``, ``data-ci-hi`` as ``f"{x:.6f}"``), so
tests can check that a chart says what the tables say. An undefined figure (``None``) draws
no mark; its row keeps its label and says "undefined". The palette, the opening, the axes
and their ticks are :mod:`sejury_web.svg`'s, shared with the rubric report's chart.
"""

import dataclasses
import math
from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString

from sejury_web.svg import (
    ACCENT,
    AMBER,
    GREEN,
    GRID,
    INK,
    MUTED,
    NAVY,
    RED,
    WHITE,
    data_number,
    hex_colour,
    nice_ticks,
    svg_close,
    svg_open,
    text_on,
    tick_label,
    x_axis,
    x_tick,
    x_title,
    y_axis,
    y_gridline,
    y_title,
)

# Rows are coloured by their group: these three by name, any other from OTHER_COLOURS in
# the order the groups first appear.
GROUP_COLOURS = {"judge": ACCENT, "humans": GREEN, "baseline": MUTED}
OTHER_COLOURS = (AMBER, RED, NAVY)
UNDEFINED = "undefined"
MAX_LABEL = 28  # characters of a row label; a longer one is cut with "…"

# The interval chart: a label column on the left, an n column on the right.
IC_WIDTH, IC_ROW = 600, 26
IC_LEFT, IC_RIGHT, IC_TOP, IC_BOTTOM = 220, 72, 12, 52
IC_N_GAP = 18  # from the plot's right edge to the n column
IC_LEGEND = 22  # a line of the legend above the rows, when the rows have groups

# The confusion heatmap: light to dark in one hue (the accent's), by a cell's share.
HM_CELL, HM_LEFT, HM_TOP, HM_RIGHT, HM_BOTTOM = 84, 88, 44, 12, 12
HM_LIGHT, HM_DARK = (0xF4, 0xF7, 0xFD), (0x1A, 0x3C, 0x8F)
HM_ROWS = ("VALID", "INVALID")  # the judge's verdict
HM_COLUMNS = ("VALID", "INVALID")  # the consensus

# The reliability diagram.
RD_WIDTH, RD_HEIGHT = 520, 380
RD_LEFT, RD_RIGHT, RD_TOP, RD_BOTTOM = 64, 24, 28, 76
RD_R_MIN, RD_R_MAX, RD_R_PER_ROOT_N = 3.0, 12.0, 0.9
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """One row of an interval chart: a figure, its interval and the patches it rests on."""

    label: str
    value: float | None  # None when undefined
    ci: tuple[float, float] | None
    n: int
    group: str = ""  # "judge", "humans", "baseline", …: the row's colour and legend entry
    note: str = ""  # added to the tooltip ("small sample", …)


@dataclasses.dataclass(frozen=True)
class BinEstimate:
    """One bin of a reliability diagram as drawn: the patches whose team score falls in
    [lo, hi) (the top bin: [lo, hi]), plain numbers (``judges.ReliabilityBin`` is the same
    bin as the report computes it, with its ``Figure``)."""

    lo: float
    hi: float
    n: int
    valid_share: float | None  # share of the bin's patches humans found VALID; None if empty
    ci: tuple[float, float] | None
    mean_score: float | None


def _fmt(value: float | None, percent: bool) -> str:
    """A number as the report's tables show it: two decimals, or a percentage."""
    if value is None or math.isnan(value):
        return UNDEFINED
    return f"{value:.1%}" if percent else f"{value:.2f}"


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1].rstrip() + "…"


def _group_colours(groups: Sequence[str]) -> dict[str, str]:
    """Each group's colour: the named ones fixed, the others in order of appearance."""
    colours: dict[str, str] = {}
    others = 0
    for group in groups:
        if group in colours:
            continue
        if group in GROUP_COLOURS:
            colours[group] = GROUP_COLOURS[group]
        else:
            colours[group] = OTHER_COLOURS[others % len(OTHER_COLOURS)] if group else ACCENT
            others += bool(group)
    return colours


def _legend(groups: Sequence[str], colours: dict[str, str]) -> tuple[list[str], int]:
    """The legend of the groups, left to right from the plot's left edge, wrapped to the
    chart's width; and how many lines it takes (0 without groups)."""
    parts: list[str] = []
    x, line = float(IC_LEFT), 0
    for group in groups:
        label = _short(group)
        width = 14 + round(6.5 * len(label))  # a dot, and about 6.5 px a character at 12 px
        if x > IC_LEFT and x + width > IC_WIDTH - 8:
            x, line = float(IC_LEFT), line + 1
        y = IC_TOP + IC_LEGEND * line
        parts.append(
            f'<g class="chart-legend"><circle cx="{x + 5}" cy="{y + 7}" r="5"'
            f' fill="{colours[group]}"/><text x="{x + 14}" y="{y + 11}"'
            f' fill="{INK}" font-size="12">{escape(label)}</text></g>'
        )
        x += width + 18
    return parts, line + 1 if groups else 0


def _interval_tooltip(estimate: Estimate, percent: bool) -> str:
    text = f"{estimate.label}: {_fmt(estimate.value, percent)}"
    if estimate.value is not None and estimate.ci is not None:
        text += f" [{_fmt(estimate.ci[0], percent)}, {_fmt(estimate.ci[1], percent)}]"
    text += f", n={estimate.n}"
    if estimate.note:
        text += f" ({estimate.note})"
    return escape(text)


def interval_chart(
    estimates: Sequence[Estimate],
    *,
    lo: float,
    hi: float,
    x_label: str,
    title: str,
    desc: str,
    chart_id: str,
    reference: float | None = None,
    percent: bool = False,
) -> SafeString:
    """A forest plot of ``estimates``: one row each, top to bottom, on an x axis lo..hi.

    A row has its label on the left (cut past ``MAX_LABEL`` characters, whole in its
    tooltip), a dot at its value, a line for its interval and its n on the right, in its
    group's colour. A value or interval end outside [lo, hi] is drawn at the edge (a value
    as an arrowhead pointing out), its real number in the tooltip and ``data-`` attributes.
    ``reference`` draws a dashed vertical line (κ = 0, say); ``percent`` shows the axis and
    the tooltips as percentages.
    """
    if hi <= lo:
        raise ValueError(f"the axis needs lo < hi, not {lo} ≥ {hi}")
    colours = _group_colours([e.group for e in estimates])
    named = [g for g in colours if g]
    # One group needs no legend: the title says what the rows are.
    legend, legend_lines = _legend(named, colours) if len(named) > 1 else ([], 0)
    top = IC_TOP + IC_LEGEND * legend_lines + (6 if legend_lines else 0)
    rows_h = IC_ROW * max(len(estimates), 1)
    height = top + rows_h + IC_BOTTOM
    plot_w = IC_WIDTH - IC_LEFT - IC_RIGHT
    bottom, right = top + rows_h, IC_WIDTH - IC_RIGHT

    def sx(x: float) -> float:
        return float(round(IC_LEFT + plot_w * (min(max(x, lo), hi) - lo) / (hi - lo), 2))

    def row_y(index: int) -> float:
        return float(top + IC_ROW * index + IC_ROW / 2)

    parts = svg_open(IC_WIDTH, height, chart_id=chart_id, title=title, desc=desc) + legend
    for tick in nice_ticks(lo, hi):
        parts.append(x_tick(sx(tick), bottom=bottom, label=tick_label(tick, percent), grid_top=top))
    parts += [
        x_axis(left=IC_LEFT, right=right, bottom=bottom),
        x_title(round(IC_LEFT + plot_w / 2, 2), height - 10, x_label),
        f'<text x="{right + IC_N_GAP}" y="{top - 4}" fill="{MUTED}" font-size="12">n</text>',
    ]
    if reference is not None and lo <= reference <= hi:
        x = sx(reference)
        parts.append(
            f'<line class="chart-reference" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"'
            f' stroke="{INK}" stroke-dasharray="4 3"/>'
        )
    if not estimates:
        parts.append(
            f'<text x="{round(IC_LEFT + plot_w / 2, 2)}" y="{row_y(0) + 4}"'
            f' text-anchor="middle" fill="{MUTED}">No figures</text>'
        )
        return svg_close(parts)
    for index, estimate in enumerate(estimates):
        y, colour = row_y(index), colours[estimate.group]
        tooltip = _interval_tooltip(estimate, percent)
        short = _short(estimate.label)
        whole = f"<title>{escape(estimate.label)}</title>" if short != estimate.label else ""
        parts.append(
            f'<text class="chart-label" x="{IC_LEFT - 10}" y="{y + 4}" text-anchor="end"'
            f' fill="{INK}">{whole}{escape(short)}</text>'
            f'<text x="{right + IC_N_GAP}" y="{y + 4}" fill="{MUTED}" font-size="12">'
            f"{estimate.n}</text>"
        )
        if estimate.value is None or math.isnan(estimate.value):
            parts.append(
                f'<text class="chart-undefined" x="{IC_LEFT + 6}" y="{y + 4}" fill="{MUTED}"'
                f' font-size="12" font-style="italic"><title>{tooltip}</title>{UNDEFINED}</text>'
            )
            continue
        value = estimate.value
        attributes = f'data-value="{data_number(value)}"'
        if estimate.ci is not None:
            ci_lo, ci_hi = estimate.ci
            attributes += f' data-ci-lo="{data_number(ci_lo)}" data-ci-hi="{data_number(ci_hi)}"'
        clamped = not lo <= value <= hi
        parts.append(
            f'<g class="chart-mark{" chart-clamped" if clamped else ""}" {attributes}>'
            f"<title>{tooltip}</title>"
        )
        if estimate.ci is not None:
            parts.append(
                f'<line x1="{sx(estimate.ci[0])}" y1="{y}" x2="{sx(estimate.ci[1])}" y2="{y}"'
                f' stroke="{colour}" stroke-width="2" stroke-linecap="round"/>'
            )
        x = sx(value)
        if clamped:  # an arrowhead at the edge, pointing the way the value lies
            tip = 7 if value > hi else -7
            parts.append(
                f'<path d="M{x + tip} {y} L{x} {y - 6} L{x} {y + 6} Z" fill="{colour}"'
                f' stroke="{WHITE}"/>'
            )
        else:
            parts.append(
                f'<circle cx="{x}" cy="{y}" r="5" fill="{colour}" stroke="{WHITE}"'
                ' stroke-width="1.5"/>'
            )
        parts.append("</g>")
    return svg_close(parts)


def _shade(share: float) -> tuple[int, int, int]:
    """The cell colour for ``share``: HM_LIGHT at 0, HM_DARK at 1, in a straight line."""
    r, g, b = (
        round(light + (dark - light) * share) for light, dark in zip(HM_LIGHT, HM_DARK, strict=True)
    )
    return r, g, b


def confusion_heatmap(
    tp: int, fp: int, fn: int, tn: int, *, title: str, desc: str, chart_id: str
) -> SafeString:
    """A judge's verdicts (rows) against the consensus (columns) as a 2×2 heatmap.

    Each cell shows its count and share of the patches ("41 · 27%") and is shaded by its
    share, light to dark; its text turns white where that reads better. Each cell carries
    ``data-count`` and ``data-value`` (its share). With no patches the grid is empty and
    says so.
    """
    n = tp + fp + fn + tn
    side = 2 * HM_CELL
    width, height = HM_LEFT + side + HM_RIGHT, HM_TOP + side + HM_BOTTOM
    parts = svg_open(width, height, chart_id=chart_id, title=title, desc=desc)
    middle_x, middle_y = HM_LEFT + side / 2, HM_TOP + side / 2
    parts += [
        f'<text x="{middle_x}" y="14" text-anchor="middle" fill="{INK}" font-weight="600">'
        "Consensus</text>",
        f'<text transform="translate(16 {middle_y}) rotate(-90)" text-anchor="middle"'
        f' fill="{INK}" font-weight="600">Judge</text>',
    ]
    for index, name in enumerate(HM_COLUMNS):
        x = HM_LEFT + HM_CELL * index + HM_CELL / 2
        parts.append(
            f'<text x="{x}" y="{HM_TOP - 8}" text-anchor="middle" fill="{MUTED}"'
            f' font-size="12">{name}</text>'
        )
    for index, name in enumerate(HM_ROWS):
        y = HM_TOP + HM_CELL * index + HM_CELL / 2
        parts.append(
            f'<text x="{HM_LEFT - 8}" y="{y + 4}" text-anchor="end" fill="{MUTED}"'
            f' font-size="12">{name}</text>'
        )
    cells = (
        (0, 0, tp, "true positive"),
        (0, 1, fp, "false positive"),
        (1, 0, fn, "false negative"),
        (1, 1, tn, "true negative"),
    )
    for row, column, count, kind in cells:
        x, y = HM_LEFT + HM_CELL * column, HM_TOP + HM_CELL * row
        if not n:
            parts.append(
                f'<rect class="chart-cell-empty" x="{x}" y="{y}" width="{HM_CELL}"'
                f' height="{HM_CELL}" fill="{WHITE}" stroke="{GRID}"/>'
            )
            continue
        share = count / n
        rgb, text = _shade(share), f"{count} · {share:.0%}"
        tooltip = (
            f"Judge {HM_ROWS[row]}, consensus {HM_COLUMNS[column]} ({kind}):"
            f" {count} of {n} patches, {share:.1%}"
        )
        parts.append(
            f'<g class="chart-cell" data-row="{HM_ROWS[row]}" data-column="{HM_COLUMNS[column]}"'
            f' data-count="{count}" data-value="{data_number(share)}"><title>{tooltip}</title>'
            f'<rect x="{x}" y="{y}" width="{HM_CELL}" height="{HM_CELL}"'
            f' fill="{hex_colour(rgb)}" stroke="{WHITE}" stroke-width="2"/>'
            f'<text x="{x + HM_CELL / 2}" y="{y + HM_CELL / 2 + 5}" text-anchor="middle"'
            f' fill="{text_on(rgb)}" font-size="{14 if len(text) <= 9 else 12}">{text}</text></g>'
        )
    if not n:
        parts.append(
            f'<rect x="{middle_x - 42}" y="{middle_y - 12}" width="84" height="22" rx="4"'
            f' fill="{WHITE}"/>'
            f'<text x="{middle_x}" y="{middle_y + 4}" text-anchor="middle" fill="{MUTED}">'
            "no patches</text>"
        )
    return svg_close(parts)


def _radius(n: int) -> float:
    """A dot's radius: its area grows with n, within bounds."""
    return round(min(RD_R_MAX, max(RD_R_MIN, 2.5 + RD_R_PER_ROOT_N * math.sqrt(n))), 2)


def reliability_diagram(
    bins: Sequence[BinEstimate],
    *,
    scale_lo: float,
    scale_hi: float,
    threshold: float | None,
    title: str,
    desc: str,
    chart_id: str,
) -> SafeString:
    """The share of patches humans found VALID (y) against the team score (x), per bin.

    A dot per non-empty bin at (its mean score, its VALID share), its area growing with the
    bin's n, with its interval as a vertical line; the dashed diagonal from (scale_lo, 0%)
    to (scale_hi, 100%) is a perfectly calibrated team; a red line marks the run's
    ``threshold``. A bin without a mean score is drawn at its middle.
    """
    if scale_hi <= scale_lo:
        raise ValueError(f"the scale needs scale_lo < scale_hi, not {scale_lo} ≥ {scale_hi}")
    plot_w = RD_WIDTH - RD_LEFT - RD_RIGHT
    plot_h = RD_HEIGHT - RD_TOP - RD_BOTTOM

    def sx(x: float) -> float:
        x = min(max(x, scale_lo), scale_hi)
        return float(round(RD_LEFT + plot_w * (x - scale_lo) / (scale_hi - scale_lo), 2))

    def sy(share: float) -> float:
        return float(round(RD_TOP + plot_h * (1 - min(max(share, 0.0), 1.0)), 2))

    left, right, bottom, top = sx(scale_lo), sx(scale_hi), sy(0), sy(1)
    parts = svg_open(RD_WIDTH, RD_HEIGHT, chart_id=chart_id, title=title, desc=desc)
    for share in Y_TICKS:
        parts.append(y_gridline(sy(share), left=left, right=right, label=f"{share:.0%}"))
    for tick in nice_ticks(scale_lo, scale_hi):
        parts.append(x_tick(sx(tick), bottom=bottom, label=tick_label(tick), grid_top=top))
    legend_y = RD_HEIGHT - 14
    parts += [
        x_axis(left=left, right=right, bottom=bottom),
        y_axis(left=left, top=top, bottom=bottom),
        x_title(round((left + right) / 2, 2), bottom + 38, "Team score"),
        y_title(sy(0.5), "Share VALID (humans)"),
        f'<line class="chart-diagonal" x1="{left}" y1="{bottom}" x2="{right}" y2="{top}"'
        f' stroke="{MUTED}" stroke-dasharray="5 4"/>',
        # The legend, under the axis: no dot can hide it.
        f'<line x1="{left}" y1="{legend_y - 4}" x2="{left + 24}" y2="{legend_y - 4}"'
        f' stroke="{MUTED}" stroke-dasharray="5 4"/>'
        f'<text x="{left + 30}" y="{legend_y}" fill="{MUTED}" font-size="12">'
        "perfectly calibrated</text>"
        f'<circle cx="{left + 170}" cy="{legend_y - 4}" r="5" fill="{ACCENT}"'
        ' fill-opacity="0.75"/>'
        f'<text x="{left + 180}" y="{legend_y}" fill="{MUTED}" font-size="12">'
        "a bin of patches (area ∝ n)</text>",
    ]
    if threshold is not None:
        x = sx(threshold)
        # Centred over its line, but inside the chart near either end of the axis.
        anchor = "end" if x > right - 40 else "start" if x < left + 40 else "middle"
        parts.append(
            f'<line class="chart-threshold" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"'
            f' stroke="{RED}" stroke-width="1.5" data-value="{data_number(threshold)}">'
            f"<title>threshold {threshold:g}</title></line>"
            f'<text x="{x}" y="{top - 8}" text-anchor="{anchor}" fill="{RED}" font-size="12">'
            f"threshold {threshold:g}</text>"
        )
    drawn = [b for b in bins if b.n and b.valid_share is not None and not math.isnan(b.valid_share)]
    if not drawn:
        middle = round((left + right) / 2, 2)
        parts.append(
            f'<rect x="{middle - 70}" y="{sy(0.5) - 16}" width="140" height="24" rx="4"'
            f' fill="{WHITE}"/><text x="{middle}" y="{sy(0.5)}" text-anchor="middle"'
            f' fill="{MUTED}">No scored patches</text>'
        )
        return svg_close(parts)
    # The largest dots first, so a small one is never hidden under a large one.
    for b in sorted(drawn, key=lambda b: -b.n):
        assert b.valid_share is not None
        score = b.mean_score if b.mean_score is not None else (b.lo + b.hi) / 2
        x, y = sx(score), sy(b.valid_share)
        closing = "]" if b.hi == scale_hi else ")"
        tooltip = (
            f"Scores [{b.lo:g}, {b.hi:g}{closing}: n={b.n},"
            f" mean score {score:.2f}, {b.valid_share:.1%} VALID"
        )
        attributes = (
            f'data-value="{data_number(b.valid_share)}" data-score="{data_number(score)}"'
            f' data-n="{b.n}" data-lo="{data_number(b.lo)}" data-hi="{data_number(b.hi)}"'
        )
        if b.ci is not None:
            tooltip += f" [{b.ci[0]:.1%}, {b.ci[1]:.1%}]"
            attributes += (
                f' data-ci-lo="{data_number(b.ci[0])}" data-ci-hi="{data_number(b.ci[1])}"'
            )
        parts.append(f'<g class="chart-bin" {attributes}><title>{tooltip}</title>')
        if b.ci is not None:
            parts.append(
                f'<line x1="{x}" y1="{sy(b.ci[0])}" x2="{x}" y2="{sy(b.ci[1])}"'
                f' stroke="{ACCENT}" stroke-width="2" stroke-linecap="round"/>'
            )
        parts.append(
            f'<circle cx="{x}" cy="{y}" r="{_radius(b.n)}" fill="{ACCENT}" fill-opacity="0.75"'
            f' stroke="{WHITE}" stroke-width="1.5"/></g>'
        )
    return svg_close(parts)


@dataclasses.dataclass(frozen=True)
class CurvePoint:
    x: float  # 0–1
    y: float | None  # None: undefined, no mark
    ci: tuple[float, float] | None = None


@dataclasses.dataclass(frozen=True)
class Series:
    """One line of a curve chart: its name, points and look."""

    name: str
    points: Sequence[CurvePoint]
    dashed: bool = False
    colour: str = ACCENT


CC_WIDTH, CC_HEIGHT = 560, 340
CC_LEFT, CC_RIGHT, CC_TOP, CC_BOTTOM = 64, 24, 36, 60


def curve_chart(
    series: Sequence[Series],
    *,
    lo: float,
    hi: float,
    x_label: str,
    y_label: str,
    title: str,
    desc: str,
    chart_id: str,
    x_ticks: Sequence[tuple[float, str]] | None = None,
    legend: bool = True,
) -> SafeString:
    """Lines over a 0–100 % x axis (the share of something), y from ``lo`` to ``hi``: each
    series a polyline through its defined points, a shaded band for its intervals, and a
    dot per point carrying ``data-x``/``data-value`` (and ``data-ci-*``) with a tooltip.

    ``x_ticks`` replaces the percent ticks by named positions on 0–1 (the ladder levels),
    which the tooltips then name too. Without ``legend`` the caller names the lines beside
    the chart (too many for one row)."""
    if hi <= lo:
        raise ValueError(f"the axis needs lo < hi, not {lo} ≥ {hi}")
    plot_w = CC_WIDTH - CC_LEFT - CC_RIGHT
    plot_h = CC_HEIGHT - CC_TOP - CC_BOTTOM

    def sx(x: float) -> float:
        return float(round(CC_LEFT + plot_w * min(max(x, 0.0), 1.0), 2))

    def sy(y: float) -> float:
        return float(round(CC_TOP + plot_h * (1 - (min(max(y, lo), hi) - lo) / (hi - lo)), 2))

    left, right, bottom, top = sx(0), sx(1), sy(lo), sy(hi)
    parts = svg_open(CC_WIDTH, CC_HEIGHT, chart_id=chart_id, title=title, desc=desc)
    for tick in nice_ticks(lo, hi, most=6):
        parts.append(y_gridline(sy(tick), left=left, right=right, label=tick_label(tick)))
    ticks = x_ticks or [(share, f"{share:.0%}") for share in (0.0, 0.25, 0.5, 0.75, 1.0)]
    tick_names = dict(ticks)
    for share, name in ticks:
        parts.append(x_tick(sx(share), bottom=bottom, label=name))
    parts += [
        x_axis(left=left, right=right, bottom=bottom),
        y_axis(left=left, top=top, bottom=bottom),
        x_title(round((left + right) / 2, 2), bottom + 38, x_label),
        y_title(sy((lo + hi) / 2), y_label),
    ]
    legend_x = left + 8
    for line in series if legend else ():
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        parts.append(
            f'<line x1="{legend_x}" y1="{top - 18}" x2="{legend_x + 24}" y2="{top - 18}"'
            f' stroke="{line.colour}" stroke-width="2"{dash}/>'
            f'<text x="{legend_x + 30}" y="{top - 14}" fill="{INK}" font-size="12">'
            f"{escape(line.name)}</text>"
        )
        legend_x += 40 + 7 * len(line.name)
    for line in series:
        defined = [p for p in line.points if p.y is not None and not math.isnan(p.y)]
        banded = [p for p in defined if p.ci]
        if len(banded) > 1:
            upper = " ".join(f"{sx(p.x)},{sy(p.ci[1])}" for p in banded if p.ci)
            lower = " ".join(f"{sx(p.x)},{sy(p.ci[0])}" for p in reversed(banded) if p.ci)
            parts.append(
                f'<polygon class="chart-band" points="{upper} {lower}" fill="{line.colour}"'
                ' fill-opacity="0.12" stroke="none"/>'
            )
        if len(defined) > 1:
            path = " ".join(f"{sx(p.x)},{sy(p.y)}" for p in defined if p.y is not None)
            dash = ' stroke-dasharray="6 4"' if line.dashed else ""
            parts.append(
                f'<polyline class="chart-line" points="{path}" fill="none"'
                f' stroke="{line.colour}" stroke-width="2"{dash}/>'
            )
        for p in defined:
            assert p.y is not None
            interval = f" [{p.ci[0]:.2f}, {p.ci[1]:.2f}]" if p.ci else ""
            attributes = f'data-series="{escape(line.name)}" data-x="{data_number(p.x)}"'
            attributes += f' data-value="{data_number(p.y)}"'
            if p.ci:
                attributes += (
                    f' data-ci-lo="{data_number(p.ci[0])}" data-ci-hi="{data_number(p.ci[1])}"'
                )
            parts.append(
                f'<g class="chart-point" {attributes}>'
                f'<circle cx="{sx(p.x)}" cy="{sy(p.y)}" r="3" fill="{line.colour}"/>'
                f"<title>{escape(line.name)}, {escape(tick_names.get(p.x, f'{p.x:.0%}'))}: "
                f"{p.y:.2f}{interval}</title></g>"
            )
    return svg_close(parts)
