"""Disagreements go back to the rubric (issue 15 part 2): where the human consensus contradicts
the rubric judge's verdict, the rubric is flagged in the review queue with the count; its editor
shows those patches (the judge's checks and justification, the humans' labels and notes, the
adjudication's themes); *Suggest a revision* drafts a revision taken in whole or in part and
saved only by the reviewer; a new revision or "the rubric is right" answers the flag.

Runs are judged for real by the offline model, on eager tasks.
"""

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.models import Adjudication, DisagreementTheme, JudgingRun, Label
from judging.runs.services import run_rejudge_stale
from rubrics.models import Bug, Rubric, RubricEvent, RubricRevision
from rubrics.review.disagreements import open_counts, rubric_disagreements
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.prompts import REVISE_PROMPT_VERSION, REVISE_PURPOSE
from rubrics.review.services import (
    NOTE_REQUIRED,
    NOTHING_OPEN,
    RubricActionError,
    rubric_confirm,
    rubric_revise,
    rubric_submit,
    rubric_uphold,
)
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.llm.models import LLMCall
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD
from tests.judging.factories import (
    AnnotationFactory,
    UserFactory,
    bug_with_patches,
    confirm_revision,
)
from tests.judging.helpers import Judge
from tests.rubrics.factories import PatchFactory, editor_form

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
# Only a patch that sets `x = 2` in src/app.py meets it: the reference fix does, the other
# patches (x = 3, 4, …) do not.
LENIENT = {
    "root_cause": "f() returns 1 instead of 2.",
    "requirements": [{"title": "Change `src/app.py`", "detail": "so that `x = 2`"}],
    "acceptable": [],
    "unacceptable": [],
}


@pytest.fixture
def reviewers() -> tuple[User, User]:
    return tuple(  # type: ignore[return-value]
        user_create(actor=None, username=name, password=PASSWORD, roles=[Role.REVIEWER])
        for name in ("author", "confirmer")
    )


def label(patch_key: str, *labels: tuple[str, str]) -> None:
    """Give the patch one label per (label, note), each by a different annotator."""
    from rubrics.models import Patch

    patch = Patch.objects.get(key=patch_key)
    for number, (value, note) in enumerate(labels):
        AnnotationFactory(
            patch=patch, annotator=UserFactory(username=f"ann{number}"), label=value, note=note
        )


@pytest.fixture
def judged(reviewers: tuple[User, User], judge_now: Judge) -> tuple[Bug, Rubric, JudgingRun]:
    """Three patches judged with a golden lenient rubric (the reference fix VALID, the rest
    INVALID), and humans who disagree on two of them:

    - ``-0``: the judge says INVALID (fails requirement 1), both annotators VALID;
    - ``-1``: the judge says INVALID, the annotators split, a lead adjudicated INVALID: agreed;
    - ``-ref``: the judge says VALID, annotators split, a lead adjudicated INVALID.
    """
    bug = bug_with_patches(2)
    PatchFactory(bug=bug, key=f"{bug.key}-ref", diff=bug.reference_patch)
    rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug).pk)
    confirm_revision(rubric, LENIENT, reviewers)
    run = judge_now(dataset=bug.dataset, strategies=["rubric"], context="golden")
    assert dict(run.judgments.values_list("patch__key", "verdict")) == {
        f"{bug.key}-0": "INVALID",
        f"{bug.key}-1": "INVALID",
        f"{bug.key}-ref": "VALID",
    }
    label(f"{bug.key}-0", (Label.VALID, "x = 3 is what the issue asks for"), (Label.VALID, ""))
    label(f"{bug.key}-1", (Label.VALID, ""), (Label.INVALID, ""))
    label(f"{bug.key}-ref", (Label.VALID, ""), (Label.INVALID, "breaks the cache <script>"))
    patches = {p.key: p for p in bug.patches.all()}
    Adjudication.objects.create(patch=patches[f"{bug.key}-1"], label=Label.INVALID)
    Adjudication.objects.create(
        patch=patches[f"{bug.key}-ref"],
        label=Label.INVALID,
        themes=[DisagreementTheme.UNNECESSARY_CHANGES, DisagreementTheme.RUBRIC_AMBIGUITY],
        note="Sets x but also clears the cache.",
    )
    rubric.refresh_from_db()
    return bug, rubric, run


def page(rubric: Rubric, name: str = "edit") -> str:
    kwargs = {"slug": rubric.bug.dataset.slug, "bug_key": rubric.bug.key}
    return reverse(f"rubrics:rubric_{name}", kwargs={**kwargs, "variant": rubric.variant})


# -- what is flagged ------------------------------------------------------------------------


def test_the_judge_s_disagreements_with_the_consensus_are_listed_with_what_each_side_said(
    judged: tuple[Bug, Rubric, JudgingRun],
) -> None:
    bug, rubric, run = judged
    assert open_counts() == {rubric.pk: 2}
    found = rubric_disagreements(rubric)
    assert found.answered == []
    by_key = {d.patch_key: d for d in found.open}
    assert set(by_key) == {f"{bug.key}-0", f"{bug.key}-ref"}

    valid = by_key[f"{bug.key}-0"]
    assert (valid.human_label, valid.judge_verdict) == ("VALID", "INVALID")
    assert valid.consensus_state == "unanimous"
    assert [(c.index, c.passed) for c in valid.requirements] == [(1, False)]
    assert valid.justification.startswith("[offline heuristic")
    assert valid.is_offline
    assert valid.revision_number == rubric.golden_revision.number  # type: ignore[union-attr]
    assert [(h.label, h.note) for h in valid.labels] == [
        ("VALID", "x = 3 is what the issue asks for"),
        ("VALID", ""),
    ]
    result = run.judgments.get(patch__key=f"{bug.key}-0").results.get()
    assert valid.key == f"{result.pk}:VALID"

    invalid = by_key[f"{bug.key}-ref"]
    assert (invalid.human_label, invalid.judge_verdict) == ("INVALID", "VALID")
    assert invalid.consensus_state == "adjudicated"
    assert invalid.themes == ("Unnecessary changes", "Rubric ambiguity")
    assert invalid.adjudication_note == "Sets x but also clears the cache."
    prompt = invalid.for_prompt()
    assert prompt.notes == ("breaks the cache <script>", "Sets x but also clears the cache.")


def test_preview_runs_do_not_count_and_only_the_latest_verdict_of_a_patch_does(
    judged: tuple[Bug, Rubric, JudgingRun], judge_now: Judge
) -> None:
    bug, rubric, run = judged
    run.kind = JudgingRun.Kind.PREVIEW
    run.save()
    assert open_counts() == {}
    run.kind = JudgingRun.Kind.RUN
    run.save()
    # A later run's verdict on -0 agrees with the humans: only -ref is left.
    later = judge_now(dataset=bug.dataset, strategies=["rubric"], context="golden")
    result = later.judgments.get(patch__key=f"{bug.key}-0").results.get()
    result.verdict = "VALID"
    result.save()
    assert [d.patch_key for d in rubric_disagreements(rubric).open] == [f"{bug.key}-ref"]


def test_the_review_queue_flags_the_rubric_with_the_count(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer_client: Client
) -> None:
    bug, _, _ = judged
    response = reviewer_client.get(reverse("rubrics:review_queue"))
    assert response.status_code == 200
    section = response.content.decode().split('id="queue-disagreed"')[1].split("</section>")[0]
    assert bug.key in section
    assert "the judge disagreed with humans on <strong>2</strong> patches" in " ".join(
        section.split()
    )


def test_the_editor_shows_the_patches_beside_the_rubric_escaped(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer_client: Client
) -> None:
    bug, rubric, _ = judged
    html = reviewer_client.get(page(rubric)).content.decode()
    assert 'id="tab-disagreements"' in html
    assert "The judge disagreed with humans on 2 patches" in html
    assert f"{bug.key}-0" in html
    assert f"{bug.key}-ref" in html
    assert "x = 3 is what the issue asks for" in html
    assert "breaks the cache &lt;script&gt;" in html
    assert "<script>" not in html.split("breaks the cache")[1][:20]
    assert "Rubric ambiguity" in html
    assert "Sets x but also clears the cache." in html
    assert "Requirement 1" in html
    assert "not met" in html
    assert OFFLINE_MARKER in html  # the judge's verdicts are the offline model's


def test_annotators_cannot_open_or_act_on_any_of_it(
    judged: tuple[Bug, Rubric, JudgingRun], annotator_client: Client, lead_client: Client
) -> None:
    _, rubric, _ = judged
    for name in ("edit", "suggest", "uphold"):
        method = annotator_client.get if name == "edit" else annotator_client.post
        assert method(page(rubric, name)).status_code == 403
    assert annotator_client.get(reverse("rubrics:review_queue")).status_code == 403
    # Leads read the editor but do not write rubrics.
    assert lead_client.post(page(rubric, "suggest"), editor_form(rubric)).status_code == 403
    assert lead_client.post(page(rubric, "uphold"), {"note": "x"}).status_code == 403


# -- suggest a revision, take it, save it ----------------------------------------------------


def test_a_suggested_revision_is_taken_in_part_and_saved_only_by_the_reviewer(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer: User, reviewer_client: Client
) -> None:
    bug, rubric, _ = judged
    revisions_before = RubricRevision.objects.count()

    response = reviewer_client.post(page(rubric, "suggest"), editor_form(rubric), **HX)
    assert response.status_code == 200
    html = response.content.decode()
    call = LLMCall.objects.get(purpose=REVISE_PURPOSE)
    assert f'name="suggestion" value="{call.pk}"' in html
    assert "Suggested revision" in html
    assert OFFLINE_MARKER in html
    assert "Take the whole suggestion" in html
    # Nothing is saved by asking.
    assert RubricRevision.objects.count() == revisions_before
    assert len(call.inputs["disagreements"]) == 2

    # Take one change: the editor holds it, the rest of the rubric is as it was.
    data = editor_form(rubric, suggestion=call.pk)
    taken = reviewer_client.post(page(rubric, "editor"), data | {"op": "take:0"}, **HX)
    assert taken.status_code == 200
    assert "in the editor" in taken.content.decode()
    assert RubricRevision.objects.count() == revisions_before

    # Take all: the editor becomes the suggested rubric; save it, answering the flag.
    whole = reviewer_client.post(page(rubric, "editor"), data | {"op": "take:all"}, **HX)
    suggested = call.answer
    assert suggested is not None
    for item in suggested["unacceptable_solutions"]:
        assert item.split("\n")[0][:40] in whole.content.decode().replace("&#x27;", "'")
    keys = [d.key for d in rubric_disagreements(rubric).open]
    saved = reviewer_client.post(
        page(rubric, "save"),
        editor_form(
            rubric,
            root_cause=suggested["root_cause"],
            requirement_title=[r["title"] for r in suggested["requirements"]],
            requirement_detail=[r["detail"] for r in suggested["requirements"]],
            acceptable=suggested["acceptable_solutions"],
            unacceptable=suggested["unacceptable_solutions"],
            suggestion=call.pk,
            answers="on",
            answer_keys=keys,
            justification="Requirement 1 was narrower than the fix humans accept.",
        ),
        **HX,
    )
    assert saved.status_code == 200
    rubric.refresh_from_db()
    revision = rubric.revisions.get(number=rubric.current_number)
    assert (revision.author_user, revision.prompt_version, revision.llm_call_id) == (
        reviewer,
        REVISE_PROMPT_VERSION,
        call.pk,
    )
    assert rubric.status == Rubric.Status.IN_REVIEW  # it needs a confirmation, as always
    event = rubric.events.get(kind=RubricEvent.Kind.ANSWERED)
    assert (event.revision, sorted(event.subjects), event.actor) == (
        revision,
        sorted(keys),
        reviewer,
    )
    assert open_counts() == {}
    assert [d.key for d in rubric_disagreements(rubric).answered] == keys
    queue = reviewer_client.get(reverse("rubrics:review_queue")).content.decode()
    assert bug.key not in queue.split('id="queue-disagreed"')[1].split("</section>")[0]


def test_a_save_without_the_box_ticked_answers_nothing(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer_client: Client
) -> None:
    _, rubric, _ = judged
    keys = rubric_disagreements(rubric).open_keys
    data = editor_form(rubric, root_cause="Another cause.", justification="Clearer.")
    reviewer_client.post(page(rubric, "save"), data | {"answer_keys": keys}, **HX)
    rubric.refresh_from_db()
    assert rubric.current_number == 2
    assert not rubric.events.filter(kind=RubricEvent.Kind.ANSWERED).exists()
    assert open_counts() == {rubric.pk: 2}


def test_without_disagreements_there_is_nothing_to_suggest_from(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer: User, reviewer_client: Client
) -> None:
    _, rubric, _ = judged
    rubric_uphold(
        rubric=rubric, answers=rubric_disagreements(rubric).open_keys, note="ok", actor=reviewer
    )
    response = reviewer_client.post(page(rubric, "suggest"), editor_form(rubric), **HX)
    assert "there is no disagreement of the judge with humans" in response.content.decode()
    assert not LLMCall.objects.filter(purpose=REVISE_PURPOSE).exists()


def test_a_take_without_a_suggestion_is_refused(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer_client: Client
) -> None:
    _, rubric, _ = judged
    response = reviewer_client.post(page(rubric, "editor"), editor_form(rubric, op="take:all"))
    assert response.status_code == 400


# -- "the rubric is right" -------------------------------------------------------------------


def test_upholding_the_rubric_needs_a_note_and_is_a_history_row(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer: User, reviewer_client: Client
) -> None:
    _, rubric, _ = judged
    keys = rubric_disagreements(rubric).open_keys
    refused = reviewer_client.post(page(rubric, "uphold"), {"note": " ", "answer_keys": keys}, **HX)
    assert NOTE_REQUIRED in refused.content.decode()
    assert open_counts() == {rubric.pk: 2}

    # Answer one of the two: the other stays open.
    done = reviewer_client.post(
        page(rubric, "uphold"),
        {"note": "The judge misread requirement 1.", "answer_keys": keys[:1]},
        **HX,
    )
    assert "Recorded: the rubric is right on 1 patch." in done.content.decode()
    event = rubric.events.get(kind=RubricEvent.Kind.UPHELD)
    assert (event.subjects, event.comment, event.actor) == (
        keys[:1],
        "The judge misread requirement 1.",
        reviewer,
    )
    assert event.revision == rubric.revisions.get(number=rubric.current_number)
    assert open_counts() == {rubric.pk: 1}
    history = reviewer_client.get(page(rubric)).content.decode()
    assert "upheld: the rubric is right" in history
    assert "The judge misread requirement 1." in history
    # Answered keys cannot be answered twice.
    with pytest.raises(RubricActionError, match=NOTHING_OPEN):
        rubric_uphold(rubric=rubric, answers=keys[:1], note="again", actor=reviewer)


def test_a_disagreement_comes_back_when_a_new_verdict_still_disagrees(
    judged: tuple[Bug, Rubric, JudgingRun],
    reviewers: tuple[User, User],
    reviewer: User,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    """The loop: answered by a revision, the rubric becomes golden, the stale verdicts are
    re-judged with it, and where the judge still disagrees the rubric is flagged again."""
    bug, rubric, run = judged
    keys = rubric_disagreements(rubric).open_keys
    strict = LENIENT | {"root_cause": "f() returns 1 instead of 2, in every caller."}
    rubric_revise(
        rubric=rubric,
        base_number=rubric.current_number,
        structure=strict,
        justification="Name every caller.",
        answers=keys,
        actor=reviewer,
    )
    assert open_counts() == {}
    author, confirmer = reviewers
    rubric.refresh_from_db()
    rubric_submit(rubric=rubric, base_number=rubric.current_number, actor=author)
    rubric_confirm(rubric=rubric, base_number=rubric.current_number, actor=confirmer)
    with django_capture_on_commit_callbacks(execute=True):
        run_rejudge_stale(run=run, actor=None)
    # The same requirement, the same verdicts: both disagreements are back, as new keys.
    reopened = rubric_disagreements(rubric)
    assert {d.patch_key for d in reopened.open} == {f"{bug.key}-0", f"{bug.key}-ref"}
    assert not set(reopened.open_keys) & set(keys)
    assert {d.revision_number for d in reopened.open} == {rubric.current_number}


# -- scale -----------------------------------------------------------------------------------


def test_the_queue_and_the_editor_read_in_a_fixed_number_of_queries(
    judged: tuple[Bug, Rubric, JudgingRun],
    reviewer_client: Client,
    judge_now: Judge,
    reviewers: tuple[User, User],
) -> None:
    bug, rubric, _ = judged

    def queries(url: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert reviewer_client.get(url).status_code == 200
        return len(captured)

    queue_before, editor_before = queries(reverse("rubrics:review_queue")), queries(page(rubric))
    # Four more patches of the same bug that the humans call VALID, and a second flagged bug.
    for number in range(4):
        PatchFactory(
            bug=bug,
            key=f"{bug.key}-x{number}",
            diff=bug.patches.get(key=f"{bug.key}-0").diff.replace("x = 3", f"x = {10 + number}"),
        )
        label(f"{bug.key}-x{number}", (Label.VALID, "fine"), (Label.VALID, "fine too"))
    other = bug_with_patches(2, dataset=bug.dataset)
    other_rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=other).pk)
    confirm_revision(other_rubric, LENIENT, reviewers)
    judge_now(dataset=bug.dataset, strategies=["rubric"], context="golden")
    label(f"{other.key}-0", (Label.VALID, ""), (Label.VALID, ""))
    assert open_counts() == {rubric.pk: 6, other_rubric.pk: 1}
    assert queries(reverse("rubrics:review_queue")) == queue_before
    assert queries(page(rubric)) == editor_before


def test_a_suggestion_is_taken_only_into_the_rubric_it_was_asked_for(
    judged: tuple[Bug, Rubric, JudgingRun], reviewer_client: Client
) -> None:
    """Bug keys repeat across datasets: another dataset's bug of the same key cannot take
    this rubric's suggestion (its call id travels in a hidden field)."""
    bug, rubric, _ = judged
    reviewer_client.post(page(rubric, "suggest"), editor_form(rubric), **HX)
    call = LLMCall.objects.get(purpose=REVISE_PURPOSE)
    twin_bug = bug_with_patches(1, key=bug.key, description="Another bug, same key.")
    twin = rubric_draft_write(rubric_id=Rubric.objects.create(bug=twin_bug).pk)
    refused = reviewer_client.post(
        page(twin, "editor"), editor_form(twin, suggestion=call.pk, op="take:all"), **HX
    )
    assert refused.status_code == 400
    taken = reviewer_client.post(
        page(rubric, "editor"), editor_form(rubric, suggestion=call.pk, op="take:all"), **HX
    )
    assert taken.status_code == 200
