"""Quality ladders in a real browser, judged by a real Celery worker: a lead builds the demo
dataset's ladders, tests two configurations on the offline model, and reads their ranking
and the per-level chart, which say what the tester's own figures say."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun
from judging.refine.selectors import ladder_runs, refine_ranking
from rubrics.bundle.services import bundle_import
from rubrics.models import Dataset
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.e2e.test_judging_run import RUN_TIMEOUT_MS, wait_until_ready
from tests.helpers import DEMO_BUNDLE, PASSWORD
from tests.workers import running_worker

WIDTH = 1400


@pytest.mark.e2e
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_lead_builds_ladders_tests_two_configurations_and_reads_the_ranking(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    with DEMO_BUNDLE.open("rb") as bundle:
        bundle_import(source=bundle, dataset_name="Demo", actor=None)
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    log = tmp_path / "worker.log"
    with running_worker(log, pool="threads", concurrency=2):
        try:
            wait_until_ready(log)
            log_in(page, live_server, "lea")
            page.get_by_role("link", name="Ladders").click()
            row = page.locator("#ladder-sources tr", has_text="Demo")
            expect(row).to_contain_text("not built")
            screenshot(page, tmp_path / "ladders-index.png", full_page=True)
            row.get_by_role("button", name="Build ladders").click()

            ladder = Dataset.objects.get(derivation="ladders")
            expect(page).to_have_url(re.compile(rf"/refine/{ladder.slug}/$"))
            expect(page.locator(".messages")).to_contain_text("Ladders of Demo: 6 bugs")
            summary = page.locator("#ladder-summary")
            l0 = summary.locator("tr", has_text="reference fix").first
            expect(l0.locator("td.num")).to_have_text("6")
            expect(page.locator("#refine-ranking")).to_have_count(0)

            page.get_by_label("Configurations").fill("s1b; s1a,s3")
            page.get_by_label("Provider").select_option("offline")
            page.get_by_role("button", name="Judge the ladders").click()
            expect(page.locator(".messages")).to_contain_text("2 runs started, 0 reused")
            # the results poll while the runs are judged, and stop once both are done
            expect(page.locator("#refine-active")).to_have_count(0, timeout=RUN_TIMEOUT_MS)
            expect(page.locator("#refine-ranking tbody tr")).to_have_count(4)
        finally:
            print(log.read_text(errors="replace")[-3000:])

    runs = ladder_runs(ladder)
    assert {tuple(run.strategies) for run in runs} == {("s1b",), ("s1a", "s3")}
    assert all(run.status == JudgingRun.Status.FINISHED for run in runs)
    ranking = refine_ranking(ladder, runs=runs)
    rows = page.locator("#refine-ranking tbody tr")
    for index, ranked in enumerate(ranking):
        cells = rows.nth(index).locator("td")
        expect(cells.nth(1)).to_contain_text(ranked.evaluator.label)
        expect(cells.nth(2)).to_contain_text("offline")
        value = ranked.ordering.alignment.value
        assert value is not None
        expect(cells.nth(4)).to_contain_text(f"{value:.3f}")
    expect(page.locator(".offline-note")).to_contain_text(OFFLINE_MARKER)

    # The chart: a line per configuration, a point per level at its mean score.
    chart = page.locator("svg#refine-levels")
    expect(chart).to_be_visible()
    best = ranking[0]
    series = best.evaluator.label + (" (member)" if best.evaluator.member_of else "")
    points = chart.locator(f'.chart-point[data-series="{series}"]')
    expect(points).to_have_count(5)
    for level in range(5):
        mean = best.ordering.level_means[level].value
        assert mean is not None
        point = points.nth(level)
        assert float(point.get_attribute("data-value") or "nan") == pytest.approx(mean, abs=1e-6)
    expect(chart.locator("text", has_text="L4 no fix")).to_have_count(1)  # the axis label
    expect(chart.locator(".chart-point title").first).to_contain_text(", L")
    screenshot(page, tmp_path / "ladders-ranking.png", full_page=True)

    # Scoring fewer levels re-ranks on those only.
    page.locator(".level-filter").get_by_label("L1 equivalent rewrite").uncheck()
    page.get_by_role("button", name="Score these levels").click()
    expect(page.locator("#refine-ranking thead th", has_text="L1")).to_have_count(0)
    expect(page.locator(".chart-point")).to_have_count(4 * min(len(ranking), 8))
