"""The agreement report's SVG charts: well-formed, accessible, and saying what the tables say.

Pure functions: no database. Each chart is parsed with ElementTree, which also proves it is
well-formed XML.
"""

import xml.etree.ElementTree as ET

import pytest

from judging.reports.charts import (
    HM_DARK,
    HM_LIGHT,
    IC_LEFT,
    IC_RIGHT,
    IC_WIDTH,
    RD_R_MAX,
    RD_R_MIN,
    BinEstimate,
    Estimate,
    confusion_heatmap,
    interval_chart,
    reliability_diagram,
)

SVG = "{http://www.w3.org/2000/svg}"
LEFT_EDGE, RIGHT_EDGE = float(IC_LEFT), float(IC_WIDTH - IC_RIGHT)  # the x axis, lo to hi


def parse_svg(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output, parsed to prove it well-formed


def by_class(root: ET.Element, name: str) -> list[ET.Element]:
    return [e for e in root.iter() if name in (e.get("class") or "").split()]


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def tooltip(element: ET.Element) -> str:
    title = element.find(f"{SVG}title")
    assert title is not None
    return title.text or ""


def assert_accessible(root: ET.Element, chart_id: str, title: str, desc: str) -> None:
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == f"{chart_id}-title {chart_id}-desc"
    assert root.find(f"{SVG}title").text == title  # escaped, then parsed back
    assert root.find(f"{SVG}title").get("id") == f"{chart_id}-title"
    assert root.find(f"{SVG}desc").text == desc
    assert root.find(f"{SVG}desc").get("id") == f"{chart_id}-desc"


ESTIMATES = [
    Estimate("Human–human", 0.58, (0.49, 0.66), 150, "humans"),
    Estimate("Run #1 κ", 0.41, (0.27, 0.55), 120, "judge", "small sample"),
    Estimate("Run #1 AC1", 0.63, None, 120, "judge"),
    Estimate("Run #2 κ", None, None, 0, "judge"),
]


def kappa_chart(estimates: list[Estimate], **kwargs: object) -> ET.Element:
    options: dict = {
        "lo": -0.2,
        "hi": 1.0,
        "x_label": "Cohen's κ",
        "title": "κ <per> judge",
        "desc": "κ & AC1",
        "chart_id": "kappa",
        "reference": 0.0,
        **kwargs,
    }
    return parse_svg(interval_chart(estimates, **options))


# -- interval chart ---------------------------------------------------------------------------


def test_the_interval_chart_is_well_formed_and_labelled() -> None:
    root = kappa_chart(ESTIMATES)

    assert_accessible(root, "kappa", "κ <per> judge", "κ & AC1")
    labels = by_class(root, "chart-label")
    assert ["".join(t.itertext()) for t in labels] == [e.label for e in ESTIMATES]
    shown = texts(root)
    assert {"-0.2", "0", "0.4", "1", "Cohen's κ", "150", "120"} <= set(shown)
    # A legend entry per group present, in order of appearance.
    legend = ["".join(g.itertext()) for g in by_class(root, "chart-legend")]
    assert legend == ["humans", "judge"]
    # The dashed reference line is at 0: a sixth of the way along an axis from -0.2 to 1.
    (reference,) = by_class(root, "chart-reference")
    assert float(reference.get("x1")) == pytest.approx(
        LEFT_EDGE + (RIGHT_EDGE - LEFT_EDGE) / 6, abs=0.01
    )


def test_each_mark_carries_its_value_and_interval() -> None:
    root = kappa_chart(ESTIMATES)
    marks = by_class(root, "chart-mark")

    assert [(m.get("data-value"), m.get("data-ci-lo"), m.get("data-ci-hi")) for m in marks] == [
        ("0.580000", "0.490000", "0.660000"),
        ("0.410000", "0.270000", "0.550000"),
        ("0.630000", None, None),  # no interval: a dot alone
    ]
    assert tooltip(marks[0]) == "Human–human: 0.58 [0.49, 0.66], n=150"
    assert tooltip(marks[1]) == "Run #1 κ: 0.41 [0.27, 0.55], n=120 (small sample)"
    assert tooltip(marks[2]) == "Run #1 AC1: 0.63, n=120"
    assert len(marks[0].findall(f"{SVG}line")) == 1
    assert marks[2].findall(f"{SVG}line") == []
    # Rows keep their colour by group: humans green, judges the accent.
    fills = [m.find(f"{SVG}circle").get("fill") for m in marks]
    assert fills[1] == fills[2] != fills[0]


def test_an_undefined_figure_draws_no_mark_but_keeps_its_row() -> None:
    root = kappa_chart(ESTIMATES)

    assert len(by_class(root, "chart-mark")) == 3  # four rows, one undefined
    assert "Run #2 κ" in ["".join(t.itertext()) for t in by_class(root, "chart-label")]
    (undefined,) = by_class(root, "chart-undefined")
    assert tooltip(undefined) == "Run #2 κ: undefined, n=0"
    assert undefined.get("data-value") is None
    # NaN, which a statistic may return for 0/0, is undefined too.
    root = kappa_chart([Estimate("nan", float("nan"), None, 3)])
    assert by_class(root, "chart-mark") == []
    assert tooltip(by_class(root, "chart-undefined")[0]) == "nan: undefined, n=3"


def test_the_height_grows_with_the_rows() -> None:
    two = kappa_chart(ESTIMATES[:2])
    four = kappa_chart(ESTIMATES)
    assert float(four.get("height")) - float(two.get("height")) == 2 * 26


def test_one_group_has_no_legend() -> None:
    one = kappa_chart(
        [Estimate("a", 0.5, None, 5, "humans"), Estimate("b", 0.2, None, 5, "humans")]
    )
    assert not by_class(one, "chart-legend")


def test_values_off_the_axis_are_clamped_to_its_edges() -> None:
    root = kappa_chart(
        [
            Estimate("low", -0.5, (-0.8, 0.1), 30),
            Estimate("high", 1.3, (0.9, 1.6), 30),
            Estimate("inside", 0.4, (-0.6, 0.7), 30),
        ]
    )
    low, high, inside = by_class(root, "chart-mark")

    assert "chart-clamped" in low.get("class", "")
    assert "chart-clamped" in high.get("class", "")
    assert "chart-clamped" not in inside.get("class", "")
    # The real numbers stay in the data and the tooltip.
    assert (low.get("data-value"), low.get("data-ci-lo")) == ("-0.500000", "-0.800000")
    assert high.get("data-ci-hi") == "1.600000"
    assert tooltip(high) == "high: 1.30 [0.90, 1.60], n=30"
    # Drawn at the edge: an arrowhead whose base is on the edge, the interval cut there.
    for mark, edge in ((low, LEFT_EDGE), (high, RIGHT_EDGE)):
        arrow = mark.find(f"{SVG}path")
        assert arrow is not None
        assert mark.find(f"{SVG}circle") is None
        assert f"L{edge} " in arrow.get("d", "")
        line = mark.find(f"{SVG}line")
        assert edge in (float(line.get("x1")), float(line.get("x2")))
    line = inside.find(f"{SVG}line")
    assert float(line.get("x1")) == LEFT_EDGE
    assert LEFT_EDGE < float(inside.find(f"{SVG}circle").get("cx")) < RIGHT_EDGE


def test_labels_are_escaped_and_long_ones_cut() -> None:
    nasty = "<script>x</script> & co"
    long = "Run #12: gpt-4o-mini, an ensemble of five calibrated judges"
    svg = interval_chart(
        [Estimate(nasty, 0.5, None, 5, "<b>"), Estimate(long, 0.2, None, 5, "judge")],
        lo=0,
        hi=1,
        x_label="x & y",
        title="t",
        desc="d",
        chart_id="esc",
    )
    assert "<script>" not in svg
    assert "<b>" not in svg
    assert "&lt;script&gt;x&lt;/script&gt; &amp; co" in svg
    root = parse_svg(svg)

    first, second = by_class(root, "chart-label")
    assert first.text == nasty  # short: shown whole
    assert first.find(f"{SVG}title") is None
    assert tooltip(by_class(root, "chart-mark")[0]) == f"{nasty}: 0.50, n=5"
    assert "".join(by_class(root, "chart-legend")[0].itertext()) == "<b>"
    # Past 28 characters a label is cut with an ellipsis; the whole of it is its tooltip.
    visible = second.find(f"{SVG}title").tail
    assert visible == "Run #12: gpt-4o-mini, an en…"
    assert len(visible) == 28
    assert long.startswith(visible[:-1])
    assert tooltip(second) == long
    assert tooltip(by_class(root, "chart-mark")[1]) == f"{long}: 0.20, n=5"
    assert "x & y" in texts(root)


def test_percent_axes_and_tooltips() -> None:
    root = parse_svg(
        interval_chart(
            [Estimate("le2019", 0.625, (0.5, 0.75), 40)],
            lo=0,
            hi=1,
            x_label="VALID rate",
            title="t",
            desc="d",
            chart_id="rate",
            percent=True,
        )
    )
    assert {"0%", "20%", "100%"} <= set(texts(root))
    (mark,) = by_class(root, "chart-mark")
    assert mark.get("data-value") == "0.625000"
    assert tooltip(mark) == "le2019: 62.5% [50.0%, 75.0%], n=40"
    assert by_class(root, "chart-legend") == []  # no groups, no legend


def test_an_empty_interval_chart_says_so() -> None:
    root = kappa_chart([])
    assert "No figures" in texts(root)
    assert by_class(root, "chart-mark") == []


# -- confusion heatmap ------------------------------------------------------------------------


def test_the_heatmap_shows_the_four_counts_and_shares() -> None:
    root = parse_svg(
        confusion_heatmap(41, 12, 19, 78, title="Run <1>", desc="d & e", chart_id="cm")
    )
    assert_accessible(root, "cm", "Run <1>", "d & e")
    cells = {(c.get("data-row"), c.get("data-column")): c for c in by_class(root, "chart-cell")}

    # n = 150: rows are the judge's verdict, columns the consensus.
    expected = {
        ("VALID", "VALID"): (41, "0.273333", "41 · 27%"),
        ("VALID", "INVALID"): (12, "0.080000", "12 · 8%"),
        ("INVALID", "VALID"): (19, "0.126667", "19 · 13%"),
        ("INVALID", "INVALID"): (78, "0.520000", "78 · 52%"),
    }
    assert set(cells) == set(expected)
    for key, (count, share, label) in expected.items():
        cell = cells[key]
        assert (int(cell.get("data-count")), cell.get("data-value")) == (count, share)
        assert cell.find(f"{SVG}text").text == label
    assert tooltip(cells["VALID", "INVALID"]) == (
        "Judge VALID, consensus INVALID (false positive): 12 of 150 patches, 8.0%"
    )
    assert {"Judge", "Consensus"} <= set(texts(root))


def test_heatmap_shades_grow_darker_with_the_share_and_dark_cells_get_white_text() -> None:
    root = parse_svg(confusion_heatmap(140, 3, 7, 0, title="t", desc="d", chart_id="cm"))
    cells = {(c.get("data-row"), c.get("data-column")): c for c in by_class(root, "chart-cell")}

    def fill(key: tuple[str, str]) -> str:
        return cells[key].find(f"{SVG}rect").get("fill")

    def text_fill(key: tuple[str, str]) -> str:
        return cells[key].find(f"{SVG}text").get("fill")

    light = "#" + "".join(f"{c:02x}" for c in HM_LIGHT)
    assert fill(("INVALID", "INVALID")) == light  # 0 patches
    dark = [int(fill(("VALID", "VALID"))[i : i + 2], 16) for i in (1, 3, 5)]
    assert sum(dark) < sum(HM_LIGHT)
    assert sum(dark) >= sum(HM_DARK)
    assert text_fill(("VALID", "VALID")) == "#ffffff"  # 93%: a dark cell
    assert text_fill(("VALID", "INVALID")) != "#ffffff"  # 2%: a light one


def test_an_empty_heatmap_draws_the_grid_and_says_no_patches() -> None:
    root = parse_svg(confusion_heatmap(0, 0, 0, 0, title="t", desc="d", chart_id="cm"))
    assert by_class(root, "chart-cell") == []
    assert len(by_class(root, "chart-cell-empty")) == 4
    assert "no patches" in texts(root)


# -- reliability ------------------------------------------------------------------------------


def test_the_reliability_diagram_draws_a_dot_per_non_empty_bin() -> None:
    bins = [
        BinEstimate(1, 2, 4, 0.25, (0.05, 0.6), 1.5),
        BinEstimate(2, 3, 0, None, None, None),  # empty: no dot
        BinEstimate(3, 4, 100, 0.7, (0.6, 0.78), 3.6),
        BinEstimate(4, 5, 9, 0.9, None, None),  # no mean score: drawn at the middle
    ]
    root = parse_svg(
        reliability_diagram(
            bins,
            scale_lo=1,
            scale_hi=5,
            threshold=3.5,
            title="Calib & <ration>",
            desc="d",
            chart_id="rel",
        )
    )
    assert_accessible(root, "rel", "Calib & <ration>", "d")
    dots = {d.get("data-lo"): d for d in by_class(root, "chart-bin")}

    assert set(dots) == {"1.000000", "3.000000", "4.000000"}
    first, big, last = dots["1.000000"], dots["3.000000"], dots["4.000000"]
    assert (first.get("data-value"), first.get("data-score"), first.get("data-n")) == (
        "0.250000",
        "1.500000",
        "4",
    )
    assert (first.get("data-ci-lo"), first.get("data-ci-hi")) == ("0.050000", "0.600000")
    assert tooltip(first) == "Scores [1, 2): n=4, mean score 1.50, 25.0% VALID [5.0%, 60.0%]"
    assert last.get("data-score") == "4.500000"
    assert last.get("data-ci-lo") is None
    assert tooltip(last).startswith("Scores [4, 5]: n=9")
    # The interval is a vertical line at the dot's x; radii grow with n, within bounds.
    line, circle = first.find(f"{SVG}line"), first.find(f"{SVG}circle")
    assert line.get("x1") == line.get("x2") == circle.get("cx")
    radii = [float(d.find(f"{SVG}circle").get("r")) for d in (first, last, big)]
    assert RD_R_MIN <= radii[0] < radii[1] < radii[2] <= RD_R_MAX
    # y: 0% at the bottom of the plot, 100% at its top; the diagonal joins the two corners.
    (diagonal,) = by_class(root, "chart-diagonal")
    bottom, top = float(diagonal.get("y1")), float(diagonal.get("y2"))
    assert float(circle.get("cy")) == pytest.approx(bottom + 0.25 * (top - bottom), abs=0.01)
    left, right = float(diagonal.get("x1")), float(diagonal.get("x2"))
    assert float(circle.get("cx")) == pytest.approx(left + (right - left) / 8, abs=0.01)
    # The threshold: a line at 3.5, labelled.
    (threshold,) = by_class(root, "chart-threshold")
    assert threshold.get("data-value") == "3.500000"
    assert float(threshold.get("x1")) == pytest.approx(left + (right - left) * 2.5 / 4, abs=0.01)
    assert "threshold 3.5" in texts(root)
    assert {"perfectly calibrated", "0%", "100%", "1", "5"} <= set(texts(root))


def test_an_empty_reliability_diagram_says_so() -> None:
    bins: list[BinEstimate] = []
    root = parse_svg(
        reliability_diagram(
            bins, scale_lo=0, scale_hi=10, threshold=None, title="t", desc="d", chart_id="r"
        )
    )
    assert by_class(root, "chart-bin") == []
    assert by_class(root, "chart-threshold") == []
    assert "No scored patches" in texts(root)
