"""The calibration page in a real browser, 1400 px wide: "Show teams" without a campaign says
so, the ranking fits the width and says once that the scores are the offline heuristic's, and
a kept calibration is listed and reopens with its team picked."""

import re

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.calibration.forms import NO_CAMPAIGN
from judging.models import Calibration, Label, StrategyResult
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in
from tests.helpers import PASSWORD
from tests.judging.calibration.factories import campaign_of, run_of
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

WIDTH = 1400
VALID, INVALID = Label.VALID, Label.INVALID
TEAM = ["s1a", "s1b", "s2", "s3", "s4", "s5"]


def scores(n: int) -> dict[str, float]:
    """Members' scores of patch ``n``: the even patches look valid to all of them."""
    return {name: (80.0 if n % 2 == 0 else 20.0) + 3 * index for index, name in enumerate(TEAM)}


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_the_calibration_page_reads_well_and_a_kept_calibration_reopens(
    live_server: LiveServer, e2e_page: Page
) -> None:
    dataset = DatasetFactory(name="E2E calibration with a long dataset name", slug="e2e-cal")
    bug = BugFactory(dataset=dataset, key="CAL")
    patches = [PatchFactory(bug=bug, key=f"CAL-p{n}") for n in range(6)]
    campaign = campaign_of(
        dataset,
        {p: (VALID, VALID) if n % 2 == 0 else (INVALID, INVALID) for n, p in enumerate(patches)},
        name="Calibration round with a name long enough to fill its select",
    )
    run = run_of(
        dataset,
        TEAM,
        {p: scores(n) for n, p in enumerate(patches)},
        name="Every SE-Jury strategy on every patch, with a long and descriptive run name",
    )
    StrategyResult.objects.filter(judgment__run=run).update(is_offline=True)
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    page.set_viewport_size({"width": WIDTH, "height": 900})
    log_in(page, live_server, "lea")
    page.goto(f"{live_server.url}/calibration/")
    expect(page.locator("#calibration-none-kept")).to_be_visible()

    # "Show teams" before a campaign is picked: a form error, not a silent nothing.
    page.get_by_role("button", name="Show teams").click()
    expect(page.locator(".form-errors")).to_contain_text(NO_CAMPAIGN)

    # The campaign picked (htmx), the ranking: no sideways scroll, the offline badge once.
    page.get_by_label("Campaign").select_option(str(campaign.pk))
    ranking = page.locator("#calibration-ranking tbody tr")
    expect(ranking.first).to_be_visible()
    expect(page.locator(".form-errors")).to_have_count(0)
    assert ranking.count() > 10
    expect(page.locator(".tag.offline")).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH

    # Keep the second team; its page reopens the ranking with it picked.
    second = ranking.nth(1).locator("input[name=team]")
    team = second.get_attribute("value")
    second.check()
    page.get_by_role("button", name="Use this team").click()
    expect(page).to_have_url(re.compile(r"/calibration/\d+/$"))
    chosen = Calibration.objects.get()
    assert ",".join(chosen.team) == team
    expect(page.locator(".tag.offline")).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    page.get_by_role("link", name="Reopen the ranking").click()
    expect(page.locator(f'input[name=team][value="{team}"]')).to_be_checked()
    expect(page.locator("#calibration-kept")).to_contain_text(f"calibration {chosen.pk}")
    expect(page.locator("#calibration-ranking .tag.ok")).to_have_text("chosen")

    # Listed on the calibration page before any pick, and opened from there.
    page.get_by_role("link", name="Calibration", exact=True).click()
    history = page.locator("#calibration-history")
    expect(history).to_contain_text(dataset.name)
    history.locator(f'a[href="/calibration/{chosen.pk}/"]').click()
    expect(page).to_have_url(f"{live_server.url}/calibration/{chosen.pk}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
