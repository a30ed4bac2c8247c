"""Plain helpers for the end-to-end tests: Playwright's time limits, logging in, and
screenshots."""

import os
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect
from pytest_django.live_server_helper import LiveServer

from tests.helpers import PASSWORD

ACTION_TIMEOUT_MS = 15_000
NAVIGATION_TIMEOUT_MS = 30_000
# A cold Celery worker on a fresh SQLite broker needs some seconds before its first task.
WORKER_START_TIMEOUT_S = 90
# A screenshot is for a person to look at and asserts nothing, so the suite takes none (a
# full page of the report costs its browser seconds); ``make screenshots`` takes them all.
SCREENSHOTS = os.environ.get("SEJURY_SCREENSHOTS") == "1"


def screenshot(target: Page | Locator, path: Path, **options: Any) -> None:
    """Save what ``target`` shows at ``path`` when screenshots are asked for
    (``SEJURY_SCREENSHOTS=1``, as ``make screenshots`` sets); ``options`` are Playwright's."""
    if SCREENSHOTS:
        target.screenshot(path=path, **options)


def fresh_session(page: Page) -> None:
    """As a private window: no cookie of the last user. The page is left first, so that none
    of its polls, sent without cookies once they are cleared, is answered by the login page
    with a new CSRF cookie while the next login form holds the token of the one before."""
    page.goto("about:blank")
    page.context.clear_cookies()
    # A request the last page had open when it was left is cancelled by the browser, but its
    # answer may still reach the cookie store just after the clear (seen once in a full suite:
    # the next login form's CSRF token no longer matched its cookie). No event tells when the
    # server has answered a cancelled request: the clear is made again after a moment.
    page.wait_for_timeout(300)
    page.context.clear_cookies()


def log_in(page: Page, server: LiveServer, username: str) -> None:
    """Log ``username`` in through the login form (every test user has ``PASSWORD``)."""
    page.goto(f"{server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".topbar .who")).to_contain_text(username)


def wait_until_ready(log: Path) -> None:
    """Wait for the worker writing ``log`` to declare its queue: on a fresh SQLite broker,
    kombu's get-or-create of the queue races between processes (UNIQUE constraint failed)."""
    deadline = time.monotonic() + WORKER_START_TIMEOUT_S
    while " ready." not in log.read_text(errors="replace"):
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.2)
