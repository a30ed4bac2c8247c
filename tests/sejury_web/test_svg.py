"""The pieces every server-drawn chart shares: ticks, the palette, the opening."""

import xml.etree.ElementTree as ET

from sejury_web.svg import INK, SERIES, WHITE, nice_ticks, svg_close, svg_open, text_on


def test_nice_ticks() -> None:
    assert nice_ticks(-0.2, 1.0) == (-0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert nice_ticks(0, 1) == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert nice_ticks(-1, 1) == (-1.0, -0.5, 0.0, 0.5, 1.0)
    assert nice_ticks(1, 5) == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert nice_ticks(0, 10) == (0.0, 2.0, 4.0, 6.0, 8.0, 10.0)
    assert nice_ticks(0, 100) == (0.0, 20.0, 40.0, 60.0, 80.0, 100.0)


def _contrast_on_white(colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(colour[i : i + 2], 16)) for i in (1, 3, 5))
    return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05)


def test_every_series_colour_reads_on_white_and_is_distinct() -> None:
    assert len(set(SERIES)) == len(SERIES)
    # WCAG 2: 4.5:1 for text, the lines' labels are drawn in their colour.
    assert min(_contrast_on_white(colour) for colour in SERIES) >= 4.5


def test_text_on_a_dark_background_is_white_and_on_a_light_one_ink() -> None:
    assert text_on((0x1A, 0x3C, 0x8F)) == WHITE
    assert text_on((0xF4, 0xF7, 0xFD)) == INK


def test_the_opening_escapes_and_the_chart_parses() -> None:
    parts = svg_open(100, 50, chart_id='a"b', title="x < y", desc="a & b")
    root = ET.fromstring(svg_close(parts))  # noqa: S314 - our own output
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == 'a"b-title a"b-desc'
    assert ["".join(e.itertext()) for e in root] == ["x < y", "a & b"]
