"""The Users page at a team's size, in a real browser (issue 16 item 14): a lead searches
among 60 users, opens one row's *Set password…*, sets it, and the user logs in with it."""

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in
from tests.helpers import PASSWORD

NEW_PASSWORD = "a-long-enough-pass-91"


@pytest.mark.e2e
def test_a_lead_finds_a_user_and_sets_their_password(
    transactional_db: None, live_server: LiveServer, e2e_page: Page
) -> None:
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    for n in range(60):
        user_create(actor=None, username=f"rater-{n:02d}", password=None, roles=[Role.ANNOTATOR])
    page = e2e_page
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}/users/")
    expect(page.locator("#user-table tbody tr")).to_have_count(50)
    expect(page.locator(".pager")).to_contain_text("Page 1 of 2")
    # No password box shows until its row's button is pressed.
    expect(page.get_by_label("New password for rater-42")).to_be_hidden()

    page.get_by_label("Search a name or e-mail").fill("rater-42")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#user-table tbody tr")).to_have_count(1)
    row = page.locator("#user-table tbody tr")
    row.get_by_text("Set password…").click()
    # A mismatch is said, on the row, and the box stays open.
    row.get_by_label("New password for rater-42").fill(NEW_PASSWORD)
    row.get_by_label("New password again for rater-42").fill("something-else-91")
    row.get_by_role("button", name="Set").click()
    expect(page.locator("#user-table tbody tr [role=alert]")).to_contain_text("didn")
    row = page.locator("#user-table tbody tr")
    row.get_by_label("New password for rater-42").fill(NEW_PASSWORD)
    row.get_by_label("New password again for rater-42").fill(NEW_PASSWORD)
    row.get_by_role("button", name="Set").click()
    expect(page.locator("#user-table tbody tr")).to_contain_text("password set")

    page.get_by_role("button", name="Log out").click()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("rater-42")
    page.get_by_label("Password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".topbar .who")).to_contain_text("rater-42")
