"""The agreement report in a real browser, on the demo's le2019-sized synthetic dataset: the
shell shows at once, each section loads through htmx, and every chart draws the numbers
its table shows."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.management.commands.load_demo import REPORT_DEMO_DATASET, REPORT_DEMO_SHAPE
from judging.models import JudgingRun
from judging.reports.synthetic import Shape, synthetic_dataset
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD

SECTIONS = ("humans", "judges", "human-judge", "breakdowns")


def values(page: Page, selector: str, attribute: str = "data-value") -> list[str]:
    return [str(element.get_attribute(attribute)) for element in page.locator(selector).all()]


@pytest.mark.e2e
def test_the_report_loads_its_sections_and_draws_their_numbers(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    dataset = synthetic_dataset(REPORT_DEMO_DATASET, REPORT_DEMO_SHAPE)
    runs = list(JudgingRun.objects.filter(dataset=dataset).order_by("pk"))
    user_create(actor=None, username="e2e-lead", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    log_in(page, live_server, "e2e-lead")
    page.goto(f"{live_server.url}/reports/{dataset.slug}/")

    # The shell and its run picker are there at once; every section then replaces its
    # placeholder.
    expect(page.locator("#report-form")).to_be_visible()
    expect(page.locator("#report-rule")).to_contain_text("Unanimous")
    for section in SECTIONS:
        expect(page.locator(f"section#{section} h2")).to_be_visible()
    expect(page.locator(".report-section .loading")).to_have_count(0)
    for table in ("human-summary", "judge-table", "human-judge-table", "breakdown-source"):
        expect(page.locator(f"#{table}")).to_be_visible()

    # Every chart is an SVG image with a title and a text alternative.
    charts = page.locator("svg.chart")
    assert charts.count() >= 2 + 2 * len(runs) + 1
    for svg in charts.all():
        assert svg.get_attribute("role") == "img"
        assert svg.locator("title").first.text_content()
        assert len(svg.locator("desc").first.text_content() or "") > 20

    # RQ2: the judges' mean κ and AC1, as the table's footer gives them.
    drawn = values(page, "#chart-rq2 .chart-mark")
    tables = []
    for run in runs:
        for figure in ("judge-mean", "judge-mean-ac1"):
            cell = f"#human-judge-table tr[data-figure={figure}] td[data-run='{run.pk}'] .figure"
            tables += values(page, cell)
    assert drawn[: len(tables)] == tables

    # Each annotator's κ against the consensus: the same numbers as the table's column.
    drawn = sorted(values(page, "#chart-annotators .chart-mark"))
    column = sorted(
        value for value in values(page, "#human-annotators td[data-column=b_full] .figure") if value
    )
    assert drawn == column
    assert drawn

    # The confusion heatmaps count what the confusion table counts.
    for run in runs:
        cells = page.locator(f"#chart-confusion-{run.pk}-b_full .chart-cell")
        counts = sorted(int(str(c.get_attribute("data-count"))) for c in cells.all())
        row = page.locator(f"#judge-confusion tr[data-run='{run.pk}'][data-benchmark=b_full] td")
        counted = sorted(int(text) for text in row.all_text_contents()[3:7])
        assert counts == counted
        expect(page.locator(f"#chart-reliability-{run.pk} .chart-bin").first).to_be_attached()

    # The VALID rate per patch source: the breakdown table's column.
    drawn = values(page, "#chart-valid-rate-source .chart-mark")
    column = values(page, "#breakdown-source td[data-figure=valid_rate] .figure")
    assert drawn == column
    assert len(drawn) == 4

    # The contents bar lists every section, and each one's subsections once it has arrived;
    # it follows the page down, and marks where the reader is.
    contents = page.locator("#report-contents")
    for section in SECTIONS:
        expect(contents.locator(f"a[href='#{section}']")).to_be_visible()
    expect(contents.locator("a[href='#valid-at-k']")).to_be_visible()
    contents.locator("a[href='#breakdowns']").click()
    expect(page.locator("section#breakdowns h2")).to_be_in_viewport()
    expect(contents).to_be_in_viewport()
    expect(contents.locator("a[aria-current]")).to_have_attribute("href", "#breakdowns")
    # A run's figures per patch source fit their card: the last column is not cut off.
    card = page.locator("section#breakdowns").bounding_box()
    assert card
    for run in runs:
        by_source = page.locator(f"#breakdown-source-run-{run.pk}")
        by_source.scroll_into_view_if_needed()
        last = by_source.locator("thead th").last.bounding_box()
        assert last
        assert last["x"] + last["width"] <= card["x"] + card["width"], (last, card)
        assert by_source.evaluate("t => t.parentElement.scrollWidth <= t.parentElement.clientWidth")
        # Each source's name on one line (not "agent-" over "a").
        lines = by_source.evaluate(
            "t => [...t.querySelectorAll('tbody th')].map(th => {"
            " const range = document.createRange(); range.selectNodeContents(th.firstChild);"
            " return range.getClientRects().length; })"
        )
        assert lines == [1] * len(lines), lines
    expect(contents).to_be_in_viewport()
    screenshot(page, tmp_path / "report-breakdowns.png")

    # The judge's valid share per source beside its correction, each within [0, 1], and the
    # judge's sensitivity and specificity they rest on.
    corrected = page.locator("#corrected-valid-rate-table")
    corrected.scroll_into_view_if_needed()
    expect(corrected.locator("tbody tr")).to_have_count(4)
    shares = values(page, "#corrected-valid-rate-table td[data-figure] .figure")
    assert shares
    assert all(0.0 <= float(share) <= 1.0 for share in shares if share)
    expect(page.locator("#corrected-judge-errors")).to_contain_text("sensitivity")
    screenshot(page.locator("#corrected-valid-rate-part"), tmp_path / "report-corrected.png")


@pytest.mark.e2e
def test_a_section_that_fails_says_so_and_loads_when_tried_again(
    transactional_db: None, live_server: LiveServer, e2e_page: Page
) -> None:
    dataset = synthetic_dataset(
        "E2E failing section", Shape(bugs=4, annotators=4, labels_per_patch=3, runs=1)
    )
    user_create(actor=None, username="e2e-lead", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    log_in(page, live_server, "e2e-lead")
    # The judges section fails once, as a server error would.
    page.route("**section=judges**", lambda route: route.fulfill(status=500, body="boom"))
    page.goto(f"{live_server.url}/reports/{dataset.slug}/")
    expect(page.locator("#human-summary")).to_be_visible()
    status = page.locator("section#judges .loading")
    expect(status).to_contain_text("could not be loaded (the server answered 500)")
    page.unroute("**section=judges**")
    status.get_by_role("button", name="Try again").click()
    expect(page.locator("#judge-table")).to_be_visible()
