"""The home page as each role sees it after logging in, in a real browser (issue 28 item 2):
a lead's, a reviewer's and an annotator's part, what waits first with its count and links,
and a user of every role seeing each part; a screenshot of each under --basetemp."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from sejury_web.roles import Role
from tests.e2e.helpers import fresh_session, log_in, screenshot
from tests.sejury_web.test_home import OTHER_NAME, RUN_NAME, _person, build


@pytest.mark.e2e
def test_each_role_lands_on_what_needs_it(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    annotator = _person("annotator", Role.ANNOTATOR)
    _person("lead", Role.LEAD)
    _person("reviewer", Role.REVIEWER)
    _person("everyone", Role.LEAD, Role.REVIEWER, Role.ANNOTATOR)
    build(2, annotator, _person(OTHER_NAME, Role.ANNOTATOR))
    page = e2e_page

    log_in(page, live_server, "lead")  # logging in lands on the home page
    expect(page.get_by_role("heading", level=1)).to_have_text("What needs you")
    runs = page.locator('[data-home-item="runs"]')
    expect(runs).to_contain_text(RUN_NAME)
    expect(runs.locator("progress")).to_have_count(1)
    expect(page.locator('[data-home-item="adjudication"] .home-count')).to_have_text("2")
    screenshot(page, tmp_path / "home-lead.png", full_page=True)
    page.locator('[data-home-item="adjudication"] .home-rows a').first.click()
    expect(page).to_have_url(re.compile(r"/adjudication/[\w-]+/$"))

    fresh_session(page)
    log_in(page, live_server, "reviewer")
    cards = page.locator("section.home-item")
    expect(cards.first).to_have_attribute("data-home-item", "confirm")
    expect(page.locator(".home-empty")).to_contain_text("No rubric was sent back to you.")
    screenshot(page, tmp_path / "home-reviewer.png", full_page=True)

    fresh_session(page)
    log_in(page, live_server, "annotator")
    campaigns = page.locator('[data-home-item="campaigns"]')
    expect(campaigns).to_contain_text("Round 2")
    expect(page.locator("main")).not_to_contain_text(RUN_NAME)
    screenshot(page, tmp_path / "home-annotator.png", full_page=True)
    campaigns.get_by_role("link", name="Continue").click()
    expect(page).to_have_url(re.compile(r"/annotate/\d+/$"))

    fresh_session(page)
    log_in(page, live_server, "everyone")
    expect(page.get_by_role("heading", level=2)).to_have_text(
        ["As lead", "As reviewer", "As annotator"]
    )
    screenshot(page, tmp_path / "home-every-role.png", full_page=True)
