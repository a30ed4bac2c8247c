"""The API tokens page and the API docs page in a real browser, under the
Content-Security-Policy: a user makes a token (shown once), sees it listed, revokes it; the
docs page lists the operations."""

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from api.models import ApiToken
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import fresh_session, log_in, screenshot
from tests.helpers import PASSWORD


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_user_creates_and_revokes_a_token_and_reads_the_docs(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    user_create(actor=None, username="lea", password=PASSWORD, roles=[Role.LEAD])
    page = e2e_page
    log_in(page, live_server, "lea")
    page.get_by_role("link", name="API tokens").click()
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
    page.get_by_label("Name").fill("nightly pipeline")
    page.get_by_role("button", name="Create token").click()

    shown = page.locator("#new-token-value")
    expect(shown).to_be_visible()
    token = shown.inner_text().strip()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#new-token-copied")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == token
    screenshot(page, str(tmp_path / "api-tokens-new.png"), full_page=True)
    record = ApiToken.objects.get()
    assert token.startswith(record.prefix)
    assert token != record.prefix
    rows = page.locator("#token-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("nightly pipeline")
    expect(rows.first).to_contain_text(record.prefix)

    # Shown once: a fresh look at the page lists it without the secret.
    page.goto(f"{live_server.url}/api/tokens/")
    expect(page.locator("#new-token-value")).to_have_count(0)
    assert token not in page.content()
    page.get_by_role("button", name="Revoke nightly pipeline").click()
    expect(page.locator("#token-table")).to_contain_text("revoked")
    record.refresh_from_db()
    assert record.revoked_at is not None

    page.get_by_role("link", name="JSON API").click()
    expect(page.locator("#operation-index")).to_contain_text("/api/v1/runs/{run_id}/verdicts")
    expect(page.locator("#operation-index")).to_contain_text("/api/v1/runs/preflight")
    expect(page.locator("#operation-index tbody tr")).to_have_count(11)

    # An annotator (whom every API operation refuses) has no link, and the page is a 403.
    user_create(actor=None, username="ann", password=PASSWORD, roles=[Role.ANNOTATOR])
    fresh_session(page)
    log_in(page, live_server, "ann")
    expect(page.locator(".topbar").get_by_role("link", name="API tokens")).to_have_count(0)
    answer = page.goto(f"{live_server.url}/api/tokens/")
    assert answer is not None
    assert answer.status == 403
    expect(page.get_by_role("heading", name="Not for your role")).to_be_visible()
    screenshot(page, str(tmp_path / "api-tokens-annotator.png"), full_page=True)
