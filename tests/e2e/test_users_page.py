"""The Users page at a team's size, in a real browser (issue 16 item 14): a lead searches
among 60 users, opens one row's *Set password…*, sets it, and the user logs in with it; and
(issue 28 item 3) gives a role to many users at once, then picks annotators by name."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
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


@pytest.mark.e2e
def test_a_lead_gives_a_role_to_many_then_picks_annotators_by_name(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    """Issue 28 item 3: le2019's 37 annotators made so in two changes for many, then found by
    name in the new campaign's picker."""
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    for n in range(37):
        user_create(actor=None, username=f"rater-{n:02d}", password=None, roles=[])
    page = e2e_page
    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}/users/?q=rater-0")
    table = page.locator("#user-table")
    table.get_by_label("Tick rater-01").check()
    table.get_by_label("Tick rater-02").check()
    expect(page.locator("#users-ticked-count")).to_have_text(" (2)")
    bulk = page.get_by_role("form", name="Change a role for many users")
    bulk.get_by_label("Role to give or remove").select_option(Role.ANNOTATOR)
    bulk.get_by_role("button", name="Apply").click()
    expect(page.locator("#bulk-result")).to_have_text("Gave annotator to 2 users.")

    # The head of the table's box ticks the page's users: all 37 are on one page.
    page.get_by_label("Search a name or e-mail").fill("rater")
    page.get_by_role("button", name="Search").click()
    page.get_by_label("Tick every user on this page").check()
    expect(page.locator("#users-ticked-count")).to_have_text(" (37)")
    bulk.get_by_label("Role to give or remove").select_option(Role.ANNOTATOR)
    bulk.get_by_role("button", name="Apply").click()
    expect(page.locator("#bulk-result")).to_have_text(
        "Gave annotator to 35 users; 2 already had it."
    )
    screenshot(page, tmp_path / "users-bulk.png", full_page=True)
    expect(page.locator("#user-table tbody tr").first).to_contain_text("Annotator")

    page.goto(f"{live_server.url}/campaigns/new/")
    picker = page.locator("fieldset.annotators")
    expect(picker.locator("#annotators-count")).to_have_text("0 of 37 ticked")
    names = picker.get_by_label("Filter annotators")
    names.fill("rater-1")
    names.press("Enter")  # filters; never creates the campaign
    expect(picker.locator("li:visible")).to_have_count(10)
    picker.get_by_role("button", name="Select all shown").click()
    names.fill("rater-3")
    picker.get_by_role("button", name="Select all shown").click()
    expect(picker.locator("#annotators-count")).to_have_text("17 of 37 ticked · 7 shown")
    names.fill("")
    expect(picker.locator("li:visible")).to_have_count(37)
    expect(picker.get_by_label("rater-10")).to_be_checked()
    expect(picker.get_by_label("rater-05")).not_to_be_checked()
    screenshot(page, tmp_path / "campaign-picker.png", full_page=True)
    picker.get_by_role("button", name="Clear all").click()
    expect(picker.locator("#annotators-count")).to_have_text("0 of 37 ticked")
    expect(page.locator(".form-errors")).to_have_count(0)  # Enter created nothing
