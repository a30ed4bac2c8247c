"""Plain helpers for the end-to-end tests: Playwright's time limits, and logging in."""

from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from tests.helpers import PASSWORD

ACTION_TIMEOUT_MS = 15_000
NAVIGATION_TIMEOUT_MS = 30_000


def log_in(page: Page, server: LiveServer, username: str) -> None:
    """Log ``username`` in through the login form (every test user has ``PASSWORD``)."""
    page.goto(f"{server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".topbar .who")).to_contain_text(username)
