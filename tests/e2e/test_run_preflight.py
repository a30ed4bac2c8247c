"""A new run's pre-flight in a real browser (issue 16 item 12): the lead asks for a rubric-judge
run on a dataset where only one bug has a golden rubric; the form says how many patches lack
one and starts nothing; *Go back* keeps the form; *Judge only the ready patches* starts the run
with those, and its page says how many were left out. (No worker: the run is only started.)"""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD
from tests.judging.factories import make_golden
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff


@pytest.mark.e2e
def test_a_lead_is_told_what_patches_lack_and_judges_only_the_ready_ones(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    dataset = DatasetFactory(name="Pre-flight", slug="pre-flight")
    for b in range(3):
        bug = BugFactory(dataset=dataset, key=f"PF-{b}")
        for p in range(2):
            PatchFactory(bug=bug, key=f"PF-{b}-p{p}", diff=make_diff(new=f"x = {p + 3}"))
    make_golden(dataset.bugs.get(key="PF-0"))
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    log_in(page, live_server, "lea")
    page.goto(f"{live_server.url}{dataset.get_absolute_url()}")
    page.get_by_role("link", name="Judge this dataset").click()
    for label in ("S1b Direct Assess with reference", "S3 Equivalence Assess"):
        box = page.get_by_label(label)
        if box.is_checked():
            box.uncheck()
    page.get_by_label("Rubric-guided judge").check()
    page.get_by_label("Context").select_option("golden")
    page.get_by_label("Name").fill("Golden only")
    page.get_by_role("button", name="Start the run").click()

    panel = page.locator("#preflight")
    expect(panel).to_contain_text("Not started: 4 of 6 patches would fail")
    expect(panel).to_contain_text("4 of 6 patches have no golden rubric")
    screenshot(page, tmp_path / "preflight.png", full_page=True)
    assert not JudgingRun.objects.exists()

    # Going back keeps what was entered and starts nothing.
    page.get_by_role("button", name="Go back and change the run").click()
    expect(page.locator("#preflight")).to_have_count(0)
    expect(page.get_by_label("Name")).to_have_value("Golden only")
    assert not JudgingRun.objects.exists()

    page.get_by_role("button", name="Start the run").click()
    page.get_by_role("button", name="Judge only the 2 ready patches").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    run = JudgingRun.objects.get()
    assert sorted(run.judgments.values_list("patch__key", flat=True)) == ["PF-0-p0", "PF-0-p1"]
    expect(page.locator("main")).to_contain_text("Left out 4 patches")
