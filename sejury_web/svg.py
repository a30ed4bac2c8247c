"""What every chart drawn on the server as inline SVG shares: the palette, the opening with
its text alternative, axes, ticks and numbers as the charts print them.

It knows no domain: a chart module (``judging.reports.charts``,
``rubrics.templatetags.charts``) lays out its own marks and calls these for the rest. Every
piece of text passed in is escaped here; the callers' own markup is trusted, which is why
:func:`svg_close` marks the whole as safe.
"""

import math

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# The palette, the site's colours (static/css/app.css), one name for each.
INK = "#1d232b"  # text and axes (--fg)
MUTED = "#667085"  # secondary text, reference lines, a baseline (--muted)
GRID = "#e3e7ee"  # grid lines, empty cells (--line)
ACCENT = "#2454c6"  # the main marks (--accent)
RED = "#b3261e"  # a threshold, a median (--del-fg)
GREEN = "#137333"  # (--add-fg)
AMBER = "#8a5300"  # (the offline tag)
NAVY = "#2d4a8a"  # (the theme tag)
PURPLE = "#7b3fa0"
TEAL = "#00796b"
WHITE = "#ffffff"
# Lines or groups told apart by colour, in this order. Each is dark enough for a line or its
# label on white (contrast ≥ 4.5:1), but not every pair survives colour blindness (with
# deuteranopia AMBER and RED, NAVY and PURPLE look alike): a chart names its lines in a legend
# or beside it, never by colour alone.
SERIES = (ACCENT, GREEN, AMBER, RED, NAVY, PURPLE, TEAL, MUTED)
FONT = 'font-family="system-ui, sans-serif" font-size="13"'


def svg_open(width: float, height: float, *, chart_id: str, title: str, desc: str) -> list[str]:
    """The opening of a chart: ``<svg role="img">`` with its ``<title>`` and ``<desc>`` (its
    text alternative), as the parts a chart goes on appending to."""
    ident = escape(chart_id)
    return [
        f'<svg class="chart" id="{ident}" viewBox="0 0 {width} {height}"'
        f' width="{width}" height="{height}" role="img"'
        f' aria-labelledby="{ident}-title {ident}-desc"'
        f' xmlns="http://www.w3.org/2000/svg" {FONT}>',
        f'<title id="{ident}-title">{escape(title)}</title>',
        f'<desc id="{ident}-desc">{escape(desc)}</desc>',
    ]


def svg_close(parts: list[str]) -> SafeString:
    """The chart of ``parts`` (from :func:`svg_open`), closed."""
    return mark_safe("".join(parts) + "</svg>")  # noqa: S308 - every text in it is escaped


def data_number(value: float) -> str:
    """A number in a ``data-`` attribute: six decimals, for tests to compare with tables."""
    return f"{value:.6f}"


def tick_label(value: float, percent: bool = False) -> str:
    """A tick's label: the shortest form of the number, or a percentage of it."""
    return f"{value * 100:g}%" if percent else f"{value:g}"


def nice_ticks(lo: float, hi: float, most: int = 7) -> tuple[float, ...]:
    """Ticks at a round step (1, 2, 2.5 or 5 times a power of ten) from ``lo`` to ``hi``.

    The step is the smallest that gives at most ``most`` ticks; ticks fall on its multiples.
    """
    if hi <= lo:
        return (lo,)
    span = hi - lo
    power = 10.0 ** math.floor(math.log10(span / most))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0, 20.0):
        step = factor * power
        first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
        if last - first + 1 <= most:
            break
    return tuple(round(i * step, 10) + 0.0 for i in range(first, last + 1))


def y_gridline(y: float, *, left: float, right: float, label: str) -> str:
    """A horizontal grid line across the plot at ``y``, labelled left of the y axis."""
    return (
        f'<line x1="{left}" y1="{y}" x2="{right}" y2="{y}" stroke="{GRID}"/>'
        f'<text x="{left - 8}" y="{y + 4}" text-anchor="end" fill="{INK}">'
        f"{escape(label)}</text>"
    )


def x_tick(x: float, *, bottom: float, label: str, grid_top: float | None = None) -> str:
    """A tick under the x axis at ``x`` with its label; with ``grid_top``, a vertical grid
    line from there down to the axis."""
    grid = (
        f'<line x1="{x}" y1="{grid_top}" x2="{x}" y2="{bottom}" stroke="{GRID}"/>'
        if grid_top is not None
        else ""
    )
    return (
        f'{grid}<line x1="{x}" y1="{bottom}" x2="{x}" y2="{bottom + 5}" stroke="{INK}"/>'
        f'<text x="{x}" y="{bottom + 18}" text-anchor="middle" fill="{INK}">'
        f"{escape(label)}</text>"
    )


def x_axis(*, left: float, right: float, bottom: float) -> str:
    return f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{INK}"/>'


def y_axis(*, left: float, top: float, bottom: float) -> str:
    return f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{INK}"/>'


def x_title(x: float, y: float, text: str) -> str:
    """The x axis's title, centred on ``x``."""
    return f'<text x="{x}" y="{y}" text-anchor="middle" fill="{INK}">{escape(text)}</text>'


def y_title(y: float, text: str) -> str:
    """The y axis's title, turned to read upwards along the left edge, centred on ``y``."""
    return (
        f'<text transform="translate(16 {y}) rotate(-90)" text-anchor="middle"'
        f' fill="{INK}">{escape(text)}</text>'
    )


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return f"#{rgb[0]:02x}{rgb[1]:02x}{rgb[2]:02x}"


def _luminance(rgb: tuple[int, int, int]) -> float:
    """Relative luminance (WCAG 2)."""

    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_on(rgb: tuple[int, int, int]) -> str:
    """INK or white, whichever contrasts more with a background of colour ``rgb``."""
    background = _luminance(rgb)
    on_white = (1.05) / (background + 0.05)
    on_ink = (background + 0.05) / (_luminance((0x1D, 0x23, 0x2B)) + 0.05)
    return WHITE if on_white > on_ink else INK
