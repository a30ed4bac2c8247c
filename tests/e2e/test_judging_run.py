"""A judging run in a real browser, judged by a real Celery worker: a lead starts it from the
dataset, watches the progress reach 100%, reads the verdicts, and opens one with its prompts."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun, PatchJudgment
from judging.runs.views import OFFLINE_NOTE
from judging.strategies.prompts import SYSTEM
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot, wait_until_ready
from tests.helpers import PASSWORD
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff
from tests.workers import running_worker

PATCHES_PER_BUG = 3
BUGS = 2
# A cold worker needs a few seconds to start before the first patch is judged.
RUN_TIMEOUT_MS = 90_000


@pytest.mark.e2e
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_lead_starts_a_run_watches_it_finish_and_reads_a_verdict(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    dataset = DatasetFactory(name="E2E judging", slug="e2e-judging")
    for b in range(BUGS):
        bug = BugFactory(dataset=dataset, key=f"JB-{b}", title=f"f() returns {b} instead of 2")
        for p in range(PATCHES_PER_BUG):
            PatchFactory(bug=bug, key=f"JB-{b}-p{p}", diff=make_diff(new=f"x = {p + 1}"))
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    log = tmp_path / "worker.log"

    with running_worker(log, pool="threads", concurrency=2):
        try:
            wait_until_ready(log)
            # From the dataset's page to the new-run form, with the dataset picked.
            log_in(page, live_server, "lea")
            page.goto(f"{live_server.url}{dataset.get_absolute_url()}")
            page.get_by_role("link", name="Judge this dataset").click()
            expect(page.get_by_label("Dataset")).to_have_value("e2e-judging")
            # A team of the rubric judge, S1b and S4 (whose first step is per bug).
            page.get_by_label("S3 Equivalence Assess").uncheck()
            page.get_by_label("S4 Analyze Reference and Assess").check()
            page.get_by_label("Context").select_option("none")
            page.get_by_label("Name").fill("Browser run")
            screenshot(page, tmp_path / "new-run.png", full_page=True)
            page.get_by_role("button", name="Start the run").click()

            expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
            run = JudgingRun.objects.get()
            assert page.url == f"{live_server.url}{run.get_absolute_url()}"
            assert (run.name, run.strategies) == ("Browser run", ["rubric", "s1b", "s4"])
            expect(page.locator(".offline-note")).to_have_text(OFFLINE_NOTE)
            expect(page.locator("#run-progress .percent")).to_have_text(
                "100%", timeout=RUN_TIMEOUT_MS
            )
            expect(page.locator("#run-progress .badge")).to_have_text("Finished")
            expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
        finally:
            print(log.read_text(errors="replace")[-3000:])

    # The table reloaded itself when the run ended: every patch has its verdict.
    total = BUGS * PATCHES_PER_BUG
    rows = page.locator("#run-table tbody tr")
    expect(rows).to_have_count(total)
    expect(page.locator("#run-table tbody .label")).to_have_count(2 * total)  # team and rubric
    assert set(run.judgments.values_list("status", flat=True)) == {PatchJudgment.Status.DONE}
    judgment = run.judgments.select_related("patch").order_by("patch__key").first()
    expect(rows.first.locator("td").nth(3)).to_have_text(judgment.verdict)
    screenshot(page, tmp_path / "run.png", full_page=True)

    # The verdict page: each member's reasoning and the prompts it was given.
    page.get_by_role("link", name=judgment.patch.key).click()
    expect(page).to_have_url(f"{live_server.url}{judgment.get_absolute_url()}")
    s1b = page.locator("#member-s1b")
    expect(s1b.locator(".reasoning")).to_contain_text(OFFLINE_MARKER)
    expect(page.locator("#member-rubric .reasoning")).not_to_be_empty()
    prompt = s1b.locator("details.prompt").first
    prompt.locator("summary").click()
    expect(prompt.locator("pre").first).to_have_text(SYSTEM)
    expect(prompt).to_contain_text(judgment.patch.diff.splitlines()[0])
    expect(s1b.locator(".raw-answer")).to_contain_text('"score"')
    s4 = page.locator("#member-s4")
    expect(s4).to_contain_text("Step 1, once per bug")
    expect(s4.locator(".llm-call code").first).to_have_text("judge.s4.analyze")
    screenshot(page, tmp_path / "verdict.png", full_page=True)
    expect(page.get_by_role("link", name=re.compile("Next patch"))).to_be_visible()

    # Back on the run page, a sort by a member's score survives a search typed afterwards.
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    s1b_heading = page.locator("#run-table thead th").filter(has_text="s1b")
    s1b_heading.get_by_role("link").click()
    expect(s1b_heading).to_have_attribute("aria-sort", "ascending")
    s1b_heading.get_by_role("link").click()
    expect(s1b_heading).to_have_attribute("aria-sort", "descending")
    expect(page).to_have_url(re.compile(r"sort=-s1b"))
    page.get_by_label("Search patch or bug key").fill("JB-1")
    expect(rows).to_have_count(PATCHES_PER_BUG)
    expect(page).to_have_url(re.compile(r"q=JB-1"))
    best = max(
        run.judgments.filter(patch__bug__key="JB-1").select_related("patch"),
        key=lambda j: (j.results.get(strategy="s1b").score, -j.pk),
    )
    expect(rows.first.locator("td").first).to_have_text(best.patch.key)
    print(f"screenshots: {tmp_path}")
