"""README's *The first five minutes*, walked in a real browser on ``load_demo``'s data, with a
real worker: each step as README tells it, asserting what README says it shows, so that a
README sentence that stops being true fails here (issue 28). Then the first thing a new user
does with real data: the le2019 bundle on the Import page, after ``load_demo``.

A screenshot of each step is saved under --basetemp."""

import io
import re
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.management.commands.load_demo import DEMO_PASSWORD, DEMO_RUN_NAME
from sejury_web.celery import app as celery_app
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role, user_roles
from tests.e2e.helpers import fresh_session, screenshot

# Drafting, judging the candidates and the golden run go through a worker polling a SQLite
# broker, after the demo's own run: allow it some seconds.
WORKER_TIMEOUT_MS = 60_000
REPORT = "Demo report (synthetic, le2019-sized)"
BUG = "py-slugify-1"  # the bug README's step 2 opens
TITLE = "Fold accented letters to ASCII before slugging"


def load_demo_as_make_run_leaves_it() -> None:
    """``load_demo``, with its run judged by the time anyone logs in, as ``make run``'s worker
    has judged it before a new user gets there: here inline (the worker the test starts meanwhile
    does the walk's own drafts and runs)."""
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    try:
        call_command("load_demo", stdout=io.StringIO())
    finally:
        celery_app.conf.task_always_eager = False
        celery_app.conf.task_eager_propagates = False


def log_in_as(page: Page, server: LiveServer, username: str) -> None:
    """A private window per user, as README says: a fresh login with the demo's password,
    which lands on the home page."""
    fresh_session(page)
    page.goto(f"{server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".topbar .who")).to_contain_text(username)
    expect(page.get_by_role("heading", level=1)).to_have_text("What needs you")


def nav(page: Page, name: str) -> None:
    page.locator(".topbar nav").get_by_role("link", name=name, exact=True).click()


@pytest.mark.e2e
@pytest.mark.worker
def test_the_first_five_minutes_as_readme_tells_them(
    worker: subprocess.Popen[bytes], live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    load_demo_as_make_run_leaves_it()
    page = e2e_page

    def shot(name: str, *, full_page: bool = True) -> None:
        screenshot(page, tmp_path / f"{name}.png", full_page=full_page)

    # 1. lead: the demo dataset, its drafts, the demo run, the synthetic report.
    log_in_as(page, live_server, "lead")
    nav(page, "Datasets")
    page.get_by_role("link", name="Demo", exact=True).click()
    stats = page.locator(".stats").first
    for count in ("6 bugs", "24 patches", "51 labels"):
        expect(stats).to_contain_text(count)
    page.get_by_role("button", name="Draft rubrics").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Drafting templated rubrics")
    expect(page.locator("#draft-batch-offline .tag.offline")).to_have_text(OFFLINE_MARKER)
    drafts = page.url  # the worker drafts while the lead looks at the run and the report

    nav(page, "Judging runs")
    page.get_by_role("link", name=re.compile(re.escape(DEMO_RUN_NAME))).click()
    expect(page.locator("#run-progress .badge")).to_have_text("Finished")
    table = page.locator("#run-table")
    for column in ("Margin", "s1a", "s1b", "s2", "s3", "s4", "s5"):
        expect(table.locator("thead")).to_contain_text(column)
    expect(table.locator("tbody tr")).to_have_count(24)
    expect(page.get_by_role("link", name="Send uncertain verdicts to humans")).to_be_visible()
    shot("1-lead-demo-run")

    nav(page, "Reports")
    page.get_by_role("row", name=REPORT).get_by_role("link", name="Agreement report").click()
    report = page.locator("main")
    for heading in (
        "Humans: agreement among annotators",
        "Judges against the consensus",
        "What sending uncertain verdicts to humans buys",  # the routing curve
        "Valid patches per agent: pass@k against valid@k",
    ):
        expect(report.get_by_role("heading", name=heading)).to_be_visible()
    expect(report).to_contain_text("Krippendorff")
    expect(report).to_contain_text("bootstrap interval")
    shot("1-lead-report", full_page=False)  # 13,000 px: its top is enough

    page.goto(drafts)
    progress = page.locator("#draft-progress")
    expect(progress).to_contain_text("6 drafted", timeout=WORKER_TIMEOUT_MS)
    expect(progress.get_by_role("link", name="Review")).to_have_count(6)
    shot("1-lead-drafts")

    # 2. reviewer: edits the draft of py-slugify-1, submits it, judges its candidates.
    log_in_as(page, live_server, "reviewer")
    nav(page, "Review queue")
    awaiting = page.locator("#queue-review")
    expect(awaiting.locator("tbody tr")).to_have_count(6)
    awaiting.get_by_role("link", name=BUG).click()
    page.get_by_label("Requirement 1: title").fill(TITLE)
    page.get_by_label("Justification").fill("The draft's title was read off the diff.")
    page.get_by_role("button", name="Save as revision 1").click()
    expect(page.locator("#rubric-editor .flash.ok")).to_contain_text("Saved revision 1.")
    page.get_by_role("button", name="Submit revision 1 for confirmation").click()
    status = page.locator("#rubric-status")
    expect(status.locator(".badge").first).to_have_text("awaiting confirmation")
    expect(status).to_contain_text("You can't confirm this rubric")
    page.get_by_role("tab", name="Judge candidates").click()
    page.get_by_role("button", name="Judge the candidates with this rubric").click()
    expect(page.locator("#judge-preview")).to_contain_text(
        "verdicts flipped between the draft and revision 1", timeout=WORKER_TIMEOUT_MS
    )
    shot("2-reviewer-revision")

    # 3. reviewer2: confirms it; it is the golden rubric.
    log_in_as(page, live_server, "reviewer2")
    nav(page, "Review queue")
    page.locator("#queue-confirm").get_by_role("link", name=BUG).click()
    page.get_by_role("button", name="Confirm revision 1 as golden").click()
    expect(page.locator("#rubric-status .badge").first).to_have_text("golden")
    shot("3-reviewer2-golden")

    # 4. annotator1: blind, one patch at a time; a note, then `i`; My labels lists it.
    log_in_as(page, live_server, "annotator1")
    nav(page, "My campaigns")
    page.get_by_role("link", name="Demo calibration round").click()
    page.get_by_role("link", name="Continue").first.click()
    labelling = page.locator("main")
    expect(labelling).not_to_contain_text(DEMO_RUN_NAME)
    expect(labelling).not_to_contain_text("annotator2")
    expect(page.locator("#annotate[data-shortcuts=on]")).to_be_visible()
    page.locator("#annotate-note").fill("Checks only the happy path.")
    page.keyboard.press("Escape")
    page.keyboard.press("i")
    expect(page.get_by_text(re.compile(r"Labelled INVALID · patch \d+"))).to_be_visible()
    shot("4-annotator-labelled")
    nav(page, "My labels")
    mine = page.get_by_role("row", name=re.compile("Checks only the happy path."))
    expect(mine).to_contain_text("INVALID")
    expect(mine.get_by_role("link", name="Change")).to_be_visible()
    shot("4-annotator-my-labels")

    # 5. lead: settles a dispute, then a golden run of the ready patches only.
    log_in_as(page, live_server, "lead")
    nav(page, "Adjudication")
    page.get_by_role("link", name="Demo", exact=True).click()
    dispute = page.locator("article.adjudication[data-state=disputed]").first
    dispute.get_by_role("radio", name="VALID", exact=True).check()
    dispute.get_by_role("checkbox", name="Correctness assessment").check()
    dispute.get_by_role("button", name="Record the consensus").click()
    expect(page.locator("#count-adjudicated")).to_have_text("1")
    shot("5-lead-adjudicated")

    nav(page, "Judging runs")
    page.get_by_role("link", name="New run").click()
    ticked = page.locator("input[name=strategies]:checked")
    assert ticked.evaluate_all("boxes => boxes.map(b => b.value)") == ["rubric", "s1b", "s3"]
    page.get_by_label("Dataset").select_option(label="Demo (24 patches)")
    page.get_by_label("Context").select_option(label="Golden rubric")
    page.get_by_role("button", name="Start the run").click()
    expect(page.locator("main")).to_contain_text("Not started: 20 of 24 patches would fail")
    shot("5-lead-preflight")
    page.get_by_role("button", name="Judge only the 4 ready patches").click()
    expect(page.locator("#run-progress .badge")).to_have_text("Finished", timeout=WORKER_TIMEOUT_MS)
    rows = page.locator("#run-table tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.filter(has_text="≠ judge")).to_have_count(1)
    # The card of the judge against the humans says the same once the run has ended.
    card = page.locator("#run-agreement")
    expect(card).to_contain_text("n=3 verdicts with a human consensus")
    expect(card).to_contain_text("1 disagrees")
    shot("5-lead-golden-run")

    log_in_as(page, live_server, "reviewer")
    nav(page, "Review queue")
    page.locator("#queue-disagreed").get_by_role("link", name=BUG).click()
    page.get_by_role("tab", name=re.compile("Judge vs humans")).click()
    expect(page.get_by_role("button", name="Suggest a revision")).to_be_visible()
    shot("5-reviewer-disagreement")


@pytest.mark.e2e
def test_the_real_le2019_bundle_imports_on_the_import_page_after_the_demo(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, le2019_bundle: Path,
    tmp_path: Path,
) -> None:  # fmt: skip
    call_command("load_demo", stdout=io.StringIO())
    page = e2e_page
    log_in_as(page, live_server, "lead")
    nav(page, "Datasets")
    page.get_by_role("link", name="Import a bundle").click()
    page.get_by_label("Dataset").fill("defects4j-le2019")
    page.set_input_files("#id_file", le2019_bundle)
    # The demo's people collide with none of the real raters (rater-01…): no role to give.
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("defects4j-le2019")
    expect(page.locator("main")).to_contain_text(
        "Imported bundle.jsonl into defects4j-le2019: 100 bugs, 150 patches, 950 labels created."
    )
    expect(page.locator("main")).to_contain_text("69 of 250 diffs have hunk headers")
    screenshot(page, tmp_path / "le2019-imported.png", full_page=True)
    raters = User.objects.filter(username__startswith="rater-")
    assert raters.count() == 37
    assert all(
        user_roles(rater) == {Role.ANNOTATOR} and not rater.has_usable_password()
        for rater in raters
    )
