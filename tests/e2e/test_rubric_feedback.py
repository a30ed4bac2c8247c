"""Disagreements back to the rubric, in a real browser: a reviewer finds a rubric flagged in
the review queue, reads the patches where the rubric judge and the humans disagree, asks for a
suggested revision (the offline model's, labelled), takes one change into the editor, saves it
as answering the flag, and the queue no longer lists the rubric."""

from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import (
    Adjudication,
    Annotation,
    DisagreementTheme,
    JudgingRun,
    PatchJudgment,
    StrategyResult,
)
from rubrics.models import Rubric, RubricEvent
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.prompts import REVISE_PROMPT_VERSION
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import ACTION_TIMEOUT_MS, log_in, screenshot
from tests.helpers import PASSWORD
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

JUSTIFICATION = "Humans accept a fix in the caller; requirement 1 was narrower than that."


@pytest.mark.e2e
def test_a_reviewer_answers_the_judge_s_disagreements_with_a_suggested_revision(
    transactional_db: None, live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    dataset = DatasetFactory(name="Feedback", slug="feedback")
    bug = BugFactory(dataset=dataset, key="BUG-9", description="f() returns 1 instead of 2.")
    valid = PatchFactory(bug=bug, key="BUG-9-caller", diff=make_diff(path="src/caller.py"))
    rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug).pk)
    revision = rubric.revisions.get(number=0)
    rubric.golden_revision, rubric.status = revision, Rubric.Status.GOLDEN
    rubric.save()
    # The rubric judge read the golden draft and failed the patch on requirement 1.
    run = JudgingRun.objects.create(
        dataset=dataset, strategies=["rubric"], context="golden", provider="offline",
        model="offline", status=JudgingRun.Status.FINISHED, name="Golden run",
    )  # fmt: skip
    judgment = PatchJudgment.objects.create(
        run=run, patch=valid, status="done", score=0.0, verdict="INVALID"
    )
    StrategyResult.objects.create(
        judgment=judgment,
        strategy="rubric",
        status="done",
        score=0.0,
        verdict="INVALID",
        reasoning="It changes the caller, not f().",
        answers={
            "judge": {"requirements": [{"index": 1, "passed": False, "reason": "f() untouched"}]}
        },
        prompt_version="judge-rubric-v1",
        rubric_revision=revision,
    )
    people = [
        user_create(actor=None, username=name, password=PASSWORD, roles=[Role.ANNOTATOR])
        for name in ("ana", "ben")
    ]
    Annotation.objects.create(patch=valid, annotator=people[0], label="VALID", note="Fine fix.")
    Annotation.objects.create(patch=valid, annotator=people[1], label="INVALID")
    Adjudication.objects.create(
        patch=valid,
        label="VALID",
        themes=[DisagreementTheme.RUBRIC_AMBIGUITY],
        note="The caller is a valid place.",
    )
    user_create(actor=None, username="rita", password=PASSWORD, roles=[Role.REVIEWER])
    page = e2e_page

    # The queue flags the rubric with its count; the editor shows the patch beside it.
    log_in(page, live_server, "rita")
    page.goto(f"{live_server.url}{reverse('rubrics:review_queue')}")
    flagged = page.locator("#queue-disagreed")
    expect(flagged).to_contain_text("the judge disagreed with humans on 1 patch")
    flagged.get_by_role("link", name="BUG-9").click()
    expect(page.locator("#rubric-status")).to_contain_text("The judge disagreed with humans on")
    page.get_by_role("tab", name="Judge vs humans").click()
    panel = page.locator("#rubric-disagreements")
    expect(panel).to_contain_text("BUG-9-caller")
    expect(panel).to_contain_text("It changes the caller, not f().")
    expect(panel).to_contain_text("f() untouched")
    expect(panel).to_contain_text("Fine fix.")
    expect(panel).to_contain_text("Rubric ambiguity")
    expect(panel).to_contain_text("The caller is a valid place.")

    # She asks for a suggestion: the offline model's, labelled; nothing is saved.
    page.get_by_role("button", name="Suggest a revision").click()
    suggestion = panel.locator(".suggestion")
    expect(suggestion).to_contain_text("Suggested revision", timeout=ACTION_TIMEOUT_MS)
    expect(suggestion.locator(".tag.offline")).to_have_text(OFFLINE_MARKER)
    assert rubric.revisions.count() == 1
    screenshot(page, tmp_path / "suggestion.png", full_page=True)

    # She takes the first change only; the editor holds it, unsaved.
    first = suggestion.locator(".suggested-change").first
    first.get_by_role("button", name="Take").click()
    expect(first).to_contain_text("in the editor", timeout=ACTION_TIMEOUT_MS)
    expect(page.locator("#rubric-editor")).to_have_attribute("data-dirty", "true")
    assert rubric.revisions.count() == 1

    # She saves it with her justification, as answering the flag.
    expect(page.get_by_label("This revision answers the judge's disagreements")).to_be_checked()
    page.get_by_label("Justification").fill(JUSTIFICATION)
    page.get_by_role("button", name="Save as revision 1").click()
    expect(page.locator("#rubric-editor .flash.ok")).to_contain_text(
        "Saved revision 1.", timeout=ACTION_TIMEOUT_MS
    )
    expect(page.locator("#rubric-disagreements")).to_contain_text("No open disagreement")
    saved = rubric.revisions.get(number=1)
    assert (saved.justification, saved.prompt_version) == (JUSTIFICATION, REVISE_PROMPT_VERSION)
    assert rubric.events.filter(kind=RubricEvent.Kind.ANSWERED, revision=saved).exists()

    page.goto(f"{live_server.url}{reverse('rubrics:review_queue')}")
    expect(page.locator("#queue-disagreed")).not_to_contain_text("BUG-9")
    screenshot(page, tmp_path / "queue.png", full_page=True)
