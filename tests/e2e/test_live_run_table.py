"""A running run's verdict table in a real browser: rows turn from Pending to their scores as
patches finish, in place, in the order and filter the lead chose, without the table being
fetched again; when the run ends, the polling stops.

The patches are judged here, one by one, by the code the worker runs (``patch_judge``), so
that the test says when each finishes."""

import re

import pytest
from django.utils import timezone
from playwright.sync_api import Page, Request, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun, PatchJudgment
from judging.runs.execution import patch_judge
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in
from tests.helpers import PASSWORD
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

PATCHES = 8
LIVE_MS = 10_000  # a poll a second: a row changes within a few


def running_run() -> JudgingRun:
    """A run of 8 patches, started and all pending, as a worker that just began leaves it."""
    dataset = DatasetFactory(name="E2E live table", slug="e2e-live")
    bug = BugFactory(dataset=dataset, key="LV", title="f() returns 1 instead of 2")
    for n in range(PATCHES):
        PatchFactory(bug=bug, key=f"LV-p{n}", diff=make_diff(new=f"x = {n + 1}"))
    run = JudgingRun.objects.create(
        dataset=dataset,
        name="Live",
        strategies=["rubric", "s1b"],
        context="none",
        provider="offline",
        model="heuristic-v1",
        status=JudgingRun.Status.RUNNING,
        started_at=timezone.now(),
    )
    PatchJudgment.objects.bulk_create(
        PatchJudgment(run=run, patch=patch) for patch in dataset.patches.order_by("key")
    )
    return run


def judge(run: JudgingRun, *keys: str) -> None:
    for judgment in run.judgments.filter(patch__key__in=keys):
        assert patch_judge(judgment.pk, run.generation) == PatchJudgment.Status.DONE


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_rows_fill_in_as_patches_finish_and_the_polling_stops_at_the_end(
    live_server: LiveServer, e2e_page: Page
) -> None:
    run = running_run()
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_server, "lea")
    page.goto(f"{live_server.url}{run.get_absolute_url()}")
    rows = page.locator("#run-table tbody tr")
    expect(rows).to_have_count(PATCHES)
    expect(page.locator("#run-table tbody")).not_to_contain_text("Done")

    # The lead sorts by patch key, descending: p7 first.
    patch_heading = page.locator("#run-table thead th").filter(has_text="Patch")
    patch_heading.get_by_role("link").click()
    expect(patch_heading).to_have_attribute("aria-sort", "descending")
    expect(rows.first.locator("td").first).to_have_text("LV-p7")
    table_fetches: list[str] = []

    def record(request: Request) -> None:
        if request.headers.get("hx-target") == "run-table":
            table_fetches.append(request.url)

    page.on("request", record)
    page.evaluate("window.sameDocument = true")

    judge(run, "LV-p7", "LV-p2")

    p7, p2 = rows.nth(0), rows.nth(5)
    expect(p7.locator("td").last).to_have_text("Done", timeout=LIVE_MS)
    expect(p2.locator("td").last).to_have_text("Done", timeout=LIVE_MS)
    scores = {j.patch.key: j for j in run.judgments.select_related("patch").filter(status="done")}
    expect(p7.locator("td").nth(2)).to_have_text(f"{scores['LV-p7'].score:.2f}")
    expect(p7.locator("td").nth(3)).to_have_text(scores["LV-p7"].verdict)
    expect(p2.locator("td").first).to_have_text("LV-p2")  # in place: the order is kept
    expect(rows.nth(1).locator("td").last).to_have_text("Pending")
    expect(page.locator("#run-progress .percent")).to_have_text("25%")
    assert page.evaluate("window.sameDocument") is True  # no reload
    assert table_fetches == []  # the table was not sent again: only the changed rows
    assert re.search(r"sort=-patch", page.url)

    # The rest finish; the run ends: the table reloads once, in its order, and polling stops.
    judge(run, *(f"LV-p{n}" for n in range(PATCHES)))
    expect(page.locator("#run-progress .badge")).to_have_text("Finished", timeout=LIVE_MS)
    expect(page.locator("#run-table tbody")).not_to_contain_text("Pending", timeout=LIVE_MS)
    expect(rows.first.locator("td").first).to_have_text("LV-p7")
    polls: list[str] = []

    def record_poll(request: Request) -> None:
        if "/progress/" in request.url:
            polls.append(request.url)

    page.on("request", record_poll)
    page.wait_for_timeout(2500)
    assert polls == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
