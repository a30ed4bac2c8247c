"""Fixtures for the end-to-end tests: a real headless Chromium, driven by Playwright.

Debian's Chromium is used, because ``playwright install`` cannot download a browser here: its
headless shell (package ``chromium-headless-shell``, what Playwright itself runs for headless
tests) where it is installed, else the full browser (package ``chromium``) in headless mode.
Both are the same Blink; the shell leaves out the browser's own interface, and the e2e tests
took about a third less of Chromium's CPU with it. ``SEJURY_CHROMIUM`` names another binary.
Without one the e2e tests skip, unless ``SEJURY_REQUIRE_BROWSER=1`` (as CI sets): then they
fail, so that a missing browser never passes silently.
"""

import asyncio
import contextlib
import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from django.db import connections
from playwright.sync_api import Browser, Page, sync_playwright
from playwright.sync_api import Error as PlaywrightError

from tests.e2e.helpers import ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, SCREENSHOTS

# Each phase's report on its test item, so that a fixture's teardown knows whether it failed.
REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    return report


def _failed(item: pytest.Item) -> bool:
    return any(report.failed for report in item.stash.get(REPORTS, {}).values())


HEADLESS_SHELL = Path("/usr/bin/chromium-headless-shell")
CHROMIUM = Path(
    os.environ.get("SEJURY_CHROMIUM")
    or (HEADLESS_SHELL if HEADLESS_SHELL.is_file() else "/usr/bin/chromium")
)
# As root (CI) Chromium needs --no-sandbox; the rest keeps it off the (closed) network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def _chromium() -> Iterator[tuple[Browser, asyncio.AbstractEventLoop]]:
    """A headless Chromium for the whole session (of each xdist worker), closed at its end.

    Starting Playwright's driver and a browser takes seconds (about 7 on a busy machine), more
    than many e2e tests do; each test gets a fresh context (cookies, storage) of its own.
    """
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        reason = f"Chromium not found at {CHROMIUM} (apt-get install chromium-headless-shell)"
        if os.environ.get("SEJURY_REQUIRE_BROWSER", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail(f"SEJURY_REQUIRE_BROWSER is set but {reason}", pytrace=False)
        pytest.skip(reason)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            chromium_sandbox=False,
            args=CHROMIUM_ARGS,
            timeout=NAVIGATION_TIMEOUT_MS,
        )
        # Playwright's sync API marks its asyncio loop as running in this thread (and marks it
        # again after each of its calls), and Django then refuses ORM calls from synchronous
        # code (SynchronousOnlyOperation). Outside the e2e tests nothing here is asynchronous:
        # the mark is taken off until an e2e test puts it back (e2e_browser).
        loop = asyncio.get_running_loop()
        asyncio.events._set_running_loop(None)
        try:
            yield browser, loop
        finally:
            asyncio.events._set_running_loop(loop)
            browser.close()


@pytest.fixture
def e2e_browser(
    _chromium: tuple[Browser, asyncio.AbstractEventLoop], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Browser]:
    """The session's headless Chromium, with Playwright's loop marked running for the test."""
    browser, loop = _chromium
    # With Playwright's loop "running", Django refuses ORM calls from the test, though they
    # are synchronous all the same: this is Django's documented escape hatch, set for the e2e
    # tests only (monkeypatch undoes it after the test).
    # With that loop "running", Django also keeps its connections per asyncio context
    # rather than per thread, so the test's ORM calls get a connection of their own; it is
    # closed below while that context is still current, or PostgreSQL could not drop the
    # test database at the end ("being accessed by other users").
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    asyncio.events._set_running_loop(loop)
    try:
        yield browser
    finally:
        connections.close_all()
        asyncio.events._set_running_loop(None)


@pytest.fixture
def e2e_page(
    e2e_browser: Browser, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A fresh browser context and page; its last state is saved as ``final-page.png``."""
    context = e2e_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    page = context.new_page()
    # Every page must work under the Content-Security-Policy: a refused script, style or
    # request fails the test that met it.
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(f"{message.text} ({message.location.get('url')})")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    try:
        yield page
    finally:
        # For a failed test, the page it stopped on is the first thing to look at.
        if SCREENSHOTS or _failed(request.node):
            with contextlib.suppress(PlaywrightError):
                page.screenshot(path=tmp_path / "final-page.png", full_page=True)
        context.close()
    assert not violations, f"Content-Security-Policy violations: {violations}"
