"""A new run's cost forecast in a real browser (issue 26 item 4): the lead asks for the forecast
of an offline run, reads it by strategy and how it was counted, starts nothing; then starts the
run, and its page shows the forecast it kept beside what it has spent. (No worker: the run is
only started, so its bill is what it has spent so far: nothing.)"""

import re

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in
from tests.helpers import PASSWORD
from tests.judging.factories import bug_with_patches
from tests.rubrics.factories import DatasetFactory


@pytest.mark.e2e
def test_a_lead_reads_the_forecast_before_starting_and_beside_the_spend_after(
    transactional_db: None, live_server: LiveServer, e2e_page: Page
) -> None:
    dataset = DatasetFactory(name="Forecast", slug="forecast")
    bug_with_patches(2, dataset=dataset, key="F-0")
    bug_with_patches(1, dataset=dataset, key="F-1")
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    log_in(page, live_server, "lea")
    page.goto(f"{live_server.url}{dataset.get_absolute_url()}")
    page.get_by_role("link", name="Judge this dataset").click()
    page.get_by_label("S4 Analyze Reference and Assess").check()
    page.get_by_role("button", name="Forecast the cost").click()

    card = page.locator("#forecast")
    expect(card).to_contain_text("3 patches of 2 bugs")
    expect(card).to_contain_text("not an LLM")
    # s4: once a patch and once a bug.
    expect(card.locator('tr[data-strategy="s4"] td').first).to_contain_text("5 incl. 2 per bug")
    expect(card).to_contain_text("usually within hours, 24 h at most")
    card.get_by_text("How this was counted").click()
    expect(card).to_contain_text("characters per token")
    assert not JudgingRun.objects.exists()

    page.get_by_role("button", name="Start the run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"))
    run = JudgingRun.objects.get()
    calls = run.forecast["total"]["calls"]
    bill = page.locator("#run-bill")
    expect(bill).to_contain_text("Spent so far, beside the forecast")
    expect(bill.locator('tr[data-line="provider-calls"] td').first).to_have_text(str(calls))
