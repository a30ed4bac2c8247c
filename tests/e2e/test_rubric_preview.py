"""The judge preview in a real browser, judged by a real Celery worker: from the editor, a
reviewer judges the candidates with the rubric and with its draft, sees the patch her edit
flips and why, is told when a later save makes it stale, and judges again."""

import contextlib
import re
import subprocess
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import APIResponse, Page, Route, expect
from playwright.sync_api import Error as PlaywrightError
from pytest_django.live_server_helper import LiveServer

from judging.models import JudgingRun
from rubrics.models import Rubric
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.services import rubric_revise
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

# Judging goes through a worker polling a SQLite broker: allow it some seconds.
JUDGED_TIMEOUT_MS = 60_000


@pytest.mark.e2e
@pytest.mark.worker
def test_a_reviewer_sees_which_candidates_her_edit_flips(
    worker: subprocess.Popen[bytes], live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    dataset = DatasetFactory(name="E2E preview", slug="e2e-preview")
    bug = BugFactory(dataset=dataset, key="BUG-9")
    PatchFactory(bug=bug, key="BUG-9-same", diff=make_diff())
    both = make_diff() + make_diff(path="src/other.py", old="y = 1", new="y = 3")
    PatchFactory(bug=bug, key="BUG-9-both", diff=both)
    rubric = rubric_draft_write(
        rubric_id=Rubric.objects.create(bug=bug, variant=Rubric.Variant.TEMPLATED).pk
    )
    alice = user_create(actor=None, username="alice", password=PASSWORD, roles=[Role.REVIEWER])
    structure = dict(rubric.revisions.get(number=0).structure)
    first = structure["requirements"][0]
    structure["requirements"] = [
        {**first, "detail": first["detail"] + " Also update `src/other.py`."}
    ]
    rubric_revise(
        rubric=rubric,
        base_number=0,
        structure=structure,
        justification="the other module must change too",
        actor=alice,
    )
    page = e2e_page
    panel = page.locator("#judge-preview")
    preview_url = reverse("judging:rubric_preview", args=[rubric.pk])

    try:
        log_in(page, live_server, "alice")
        page.goto(f"{live_server.url}{rubric.get_absolute_url()}")
        page.get_by_role("tab", name="Judge candidates").click()
        page.get_by_role("button", name="Judge the candidates with this rubric").click()

        flipped = panel.locator("tr.flipped")
        expect(flipped).to_have_count(1, timeout=JUDGED_TIMEOUT_MS)
        expect(flipped).to_contain_text("BUG-9-same")
        expect(flipped).to_contain_text("flipped: VALID → INVALID")
        expect(flipped).to_contain_text("does not touch `src/other.py`")
        expect(panel).to_contain_text("1 of 2 verdicts flipped")
        expect(panel.locator(".tag.offline")).to_have_text(OFFLINE_MARKER)
        expect(panel.locator("progress")).to_have_count(0)
        screenshot(page, tmp_path / "preview.png", full_page=True)

        # A save makes the preview stale; the panel notices on its own.
        page.get_by_label("Root cause").fill("f() returns 1 where callers expect 2.")
        page.get_by_label("Justification").fill("state the real cause")
        page.get_by_label("Justification").press("Control+Enter")
        expect(page.locator("#rubric-editor .flash.ok")).to_contain_text("Saved revision 2.")
        expect(panel).to_contain_text("Stale:")

        # She saves again and judges at once, while the panel's own reload (the save's) is
        # still out: its answer, older than her start, comes back first. It must not replace
        # the running panel (CI once saw the start's answer orphaned, the run never shown).
        stale_reloads: list[tuple[Route, APIResponse]] = []

        def hold_reload_until_the_start(route: Route) -> None:
            if route.request.method == "GET":
                stale_reloads.append((route, route.fetch()))
                return
            for reload, answer in stale_reloads:
                with contextlib.suppress(PlaywrightError):  # aborted by the start: the fix
                    reload.fulfill(response=answer)
            route.continue_()

        page.route(f"**{preview_url}", hold_reload_until_the_start)
        page.get_by_label("Root cause").fill("f() returns 1 where all callers expect 2.")
        page.get_by_label("Justification").fill("say all callers")
        page.get_by_label("Justification").press("Control+Enter")
        expect(page.locator("#rubric-editor .flash.ok")).to_contain_text("Saved revision 3.")
        for _ in range(200):  # the save's reload reaches the route (handlers run while waiting)
            if stale_reloads:
                break
            page.wait_for_timeout(50)
        assert len(stale_reloads) == 1

        # Judging again judges the saved revision only: the draft's verdicts are kept.
        panel.get_by_role("button", name=re.compile("^Judge again with revision")).click()
        expect(panel).to_contain_text("Revision 3: run", timeout=JUDGED_TIMEOUT_MS)
        page.unroute(f"**{preview_url}")
        expect(panel.locator("progress")).to_have_count(0, timeout=JUDGED_TIMEOUT_MS)
        expect(panel).not_to_contain_text("Stale:")
        expect(panel.locator("tr.flipped")).to_have_count(1)
        assert JudgingRun.objects.filter(rubric_revision__number=0).count() == 1
        assert JudgingRun.objects.count() == 3
    finally:
        print((tmp_path / "worker.log").read_text(errors="replace")[-3000:])
