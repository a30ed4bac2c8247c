"""The review screen in a real browser: a reviewer edits an LLM draft with a justification, a
second reviewer confirms it, and the dataset's rubric report counts the edit."""

import re
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Browser, BrowserContext, Page, expect
from pytest_django.live_server_helper import LiveServer

from rubrics.models import Rubric
from rubrics.review.drafting import rubric_draft_write
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, log_in, screenshot
from tests.helpers import PASSWORD
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

ROOT_CAUSE = "f() returns 1 where every caller expects 2."
TITLE = "Return 2 from f()"
JUSTIFICATION = "The draft's root cause and title were read off the diff; state the real cause."


def new_page(browser: Browser) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    return context, context.new_page()


@pytest.mark.e2e
def test_a_reviewer_edits_a_draft_and_a_second_reviewer_confirms_it(
    transactional_db: None,
    live_server: LiveServer,
    e2e_browser: Browser,
    e2e_page: Page,
    tmp_path: Path,
) -> None:
    dataset = DatasetFactory(name="E2E review", slug="e2e-review")
    bug = BugFactory(dataset=dataset, key="BUG-7", description="f() returns 1 instead of 2.")
    PatchFactory(bug=bug, key="BUG-7-agent")
    rubric = rubric_draft_write(
        rubric_id=Rubric.objects.create(bug=bug, variant=Rubric.Variant.TEMPLATED).pk
    )
    user_create(actor=None, username="alice", password=PASSWORD, roles=[Role.REVIEWER])
    user_create(actor=None, username="bob", password=PASSWORD, roles=[Role.REVIEWER])
    page = e2e_page

    # Alice finds the draft in her queue and opens the editor.
    log_in(page, live_server, "alice")
    page.locator(".topbar nav").get_by_role("link", name="Review queue").click()
    page.locator("#queue-review").get_by_role("link", name="BUG-7").click()
    expect(page).to_have_url(f"{live_server.url}{rubric.get_absolute_url()}")
    # Said once, above the editor: the draft's own text carries no marker.
    expect(page.locator("#offline-draft-note .tag.offline")).to_have_text(OFFLINE_MARKER)
    expect(page.get_by_label("Root cause")).not_to_have_value(re.compile("offline heuristic"))
    screenshot(page, tmp_path / "offline-draft.png", full_page=True)
    expect(page.locator("#rubric-status .badge").first).to_have_text("in review")

    # She edits the root cause and a requirement; the preview follows as she types.
    page.get_by_label("Root cause").fill(ROOT_CAUSE)
    page.get_by_label("Requirement 1: title").fill(TITLE)
    expect(page.locator("#rubric-preview")).to_contain_text(ROOT_CAUSE)
    expect(page.locator("#rubric-preview strong").first).to_contain_text(TITLE)
    # Adding a requirement re-renders the editor without losing the edit, and removing it too.
    page.get_by_role("button", name="+ Add requirement").click()
    expect(page.get_by_label("Requirement 2: title")).to_be_focused()
    expect(page.get_by_label("Root cause")).to_have_value(ROOT_CAUSE)
    page.get_by_role("button", name="Remove requirement 2").click()
    expect(page.get_by_label("Requirement 2: title")).to_have_count(0)
    expect(page.get_by_label("Requirement 1: title")).to_have_value(TITLE)
    # The focus moves to the item that took the removed one's place (after htmx settles).
    expect(page.get_by_label("Requirement 1: title")).to_be_focused()

    page.get_by_label("Justification").fill(JUSTIFICATION)
    page.get_by_label("Correcting LLM errors & hallucinations").check()
    page.get_by_role("tab", name="Changes").click()
    expect(page.locator("#rubric-changes")).to_contain_text("Your unsaved edit")
    screenshot(page, tmp_path / "editor.png", full_page=True)
    # Ctrl+Enter saves.
    page.get_by_label("Justification").press("Control+Enter")
    expect(page.locator("#rubric-editor .flash.ok")).to_contain_text(
        "Saved revision 1.", timeout=ACTION_TIMEOUT_MS
    )
    # The panels follow the save, and no preview sent before it shows a stale state.
    expect(page.locator("#rubric-changes")).to_contain_text("what the last save changed")
    expect(page.locator("#rubric-preview")).not_to_contain_text("unsaved")
    expect(page.locator('#rubric-editor input[name="base_number"]')).to_have_value("1")
    expect(page.get_by_label("Justification")).to_have_value("")
    page.get_by_role("tab", name="History").click()
    expect(page.locator("#rubric-history .history-row").first).to_contain_text(JUSTIFICATION)
    expect(page.locator("#rubric-history .history-row").first).to_contain_text(
        "Correcting LLM errors & hallucinations"
    )
    revision = rubric.revisions.get(number=1)
    assert revision.structure["root_cause"] == ROOT_CAUSE
    assert revision.themes == ["hallucination"]

    # She submits it, and is told why she cannot confirm her own work.
    page.get_by_role("button", name="Submit revision 1 for confirmation").click()
    expect(page.locator("#rubric-status .badge").first).to_have_text("awaiting confirmation")
    expect(page.locator("#rubric-status")).to_contain_text("You can't confirm this rubric")
    screenshot(page, tmp_path / "submitted.png", full_page=True)

    # Bob, in a browser of his own, confirms it from his queue.
    context, bob = new_page(e2e_browser)
    try:
        log_in(bob, live_server, "bob")
        bob.goto(f"{live_server.url}{reverse('rubrics:review_queue')}")
        screenshot(bob, tmp_path / "queue-confirm.png", full_page=True)
        bob.locator("#queue-confirm").get_by_role("link", name="BUG-7").click()
        # He lands on what Alice changed and why (issue 28 item 5), not on the preview.
        expect(bob.get_by_role("tab", name="Changes")).to_have_attribute("aria-selected", "true")
        expect(bob.locator("#tab-changes")).to_be_visible()
        expect(bob.locator("#rubric-change-reasons")).to_contain_text(JUSTIFICATION)
        screenshot(bob, tmp_path / "confirm-changes.png", full_page=True)
        bob.get_by_role("button", name="Confirm revision 1 as golden").click()
        expect(bob.locator("#rubric-status .badge").first).to_have_text(
            "golden", timeout=ACTION_TIMEOUT_MS
        )
        expect(bob.locator("#rubric-status")).to_contain_text(
            "Revision 1 is now the golden rubric."
        )
        rubric.refresh_from_db()
        assert rubric.status == Rubric.Status.GOLDEN
        assert rubric.golden_revision.number == 1

        # The dataset's report counts one modified golden rubric.
        bob.goto(f"{live_server.url}{reverse('rubrics:rubric_report', args=[dataset.slug])}")
        modified = bob.get_by_role("row", name=re.compile("Modified golden rubrics"))
        expect(modified.locator("td")).to_have_text("1")
        screenshot(bob, tmp_path / "report.png", full_page=True)
    finally:
        context.close()
    print(f"screenshots: {tmp_path}")
