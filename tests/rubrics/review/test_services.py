"""Drafting, revising, the optimistic lock and the confirmation rules."""

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from rubrics.models import Rubric, RubricEvent, RubricRevision
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.prompts import DRAFT_PROMPT_VERSION
from rubrics.review.selectors import OFFLINE_AUTHOR_PREFIX
from rubrics.review.services import (
    COMMENT_REQUIRED,
    JUSTIFICATION_REQUIRED,
    NO_CHANGE,
    OWN_WORK,
    RubricActionError,
    RubricConflict,
    rubric_confirm,
    rubric_draft_request,
    rubric_revise,
    rubric_send_back,
    rubric_submit,
)
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.llm.models import LLMCall
from tests.rubrics.factories import BugFactory
from tests.sejury_web.llm.fake_servers import OpenAIServer, error, ok

pytestmark = pytest.mark.django_db

DRAFT_ANSWER = (
    '{"root_cause": "f() returns 1.", "requirements": [{"title": "Return 2", '
    '"detail": "f() must return 2."}], "acceptable_solutions": ["x = 2"], '
    '"unacceptable_solutions": ["changing the test"]}'
)


@pytest.fixture
def drafted(reviewer: User) -> Rubric:
    bug = BugFactory()
    rubric = Rubric.objects.create(bug=bug, variant=Rubric.Variant.TEMPLATED)
    return rubric_draft_write(rubric_id=rubric.pk)


def edit(rubric: Rubric, **changes: Any) -> dict[str, Any]:
    structure = dict(rubric.revisions.get(number=rubric.current_number).structure)
    structure.update(changes)
    return structure


def test_a_draft_through_the_offline_model_is_revision_zero_marked_and_linked(
    drafted: Rubric,
) -> None:
    draft = drafted.revisions.get()

    assert drafted.status == Rubric.Status.IN_REVIEW
    assert drafted.current_number == 0
    assert draft.number == 0
    assert draft.author == "llm:offline/heuristic-v1"
    assert draft.prompt_version == DRAFT_PROMPT_VERSION
    assert draft.llm_call is not None
    assert draft.llm_call.purpose == "rubric.draft"
    assert draft.text.startswith("## Root cause")
    # The judge reads the text: the offline label is the author's, on the page, not in it.
    assert OFFLINE_MARKER not in draft.text
    assert draft.author.startswith(OFFLINE_AUTHOR_PREFIX)
    assert draft.structure["requirements"]
    assert drafted.events.get().kind == RubricEvent.Kind.DRAFTED


def test_drafting_twice_writes_one_draft(drafted: Rubric) -> None:
    again = rubric_draft_write(rubric_id=drafted.pk)

    assert again.pk == drafted.pk
    assert RubricRevision.objects.filter(rubric=drafted).count() == 1


def test_a_dataset_draft_request_queues_each_bug_once(
    reviewer: User, eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    bugs = BugFactory.create_batch(3)
    with django_capture_on_commit_callbacks(execute=True):
        batch = rubric_draft_request(bugs=bugs, variant="templated", actor=reviewer)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        again = rubric_draft_request(bugs=bugs, variant="templated", actor=reviewer)

    assert batch.rubrics.count() == again.rubrics.count() == 3
    assert len(callbacks) == 0  # every bug already has its draft
    assert set(Rubric.objects.values_list("status", flat=True)) == {Rubric.Status.IN_REVIEW}
    assert RubricRevision.objects.count() == 3


def test_a_free_form_draft_is_text(reviewer: User) -> None:
    rubric = Rubric.objects.create(bug=BugFactory(), variant=Rubric.Variant.FREE_FORM)
    rubric = rubric_draft_write(rubric_id=rubric.pk)

    draft = rubric.revisions.get()
    assert set(draft.structure) == {"text"}
    assert OFFLINE_MARKER not in draft.text
    assert draft.author.startswith(OFFLINE_AUTHOR_PREFIX)


def test_a_draft_through_an_openai_server_records_the_model(openai_server: OpenAIServer) -> None:
    rubric = Rubric.objects.create(bug=BugFactory(), variant=Rubric.Variant.TEMPLATED)
    bug = rubric.bug
    openai_server.script(ok(DRAFT_ANSWER, input_tokens=900, output_tokens=120))

    rubric = rubric_draft_write(rubric_id=rubric.pk)

    prompt = openai_server.requests[0].body["messages"][1]["content"]
    draft = rubric.revisions.get()
    assert draft.author == "llm:openai/gpt-4o-mini"
    assert draft.structure["requirements"] == [
        {"title": "Return 2", "detail": "f() must return 2."}
    ]
    assert "1. **Return 2:** f() must return 2." in draft.text
    assert bug.reference_patch.strip() in prompt
    assert draft.llm_call.input_tokens == 900


def test_a_failed_draft_shows_its_error_and_can_be_retried(
    openai_server: OpenAIServer, reviewer: User, eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:  # fmt: skip
    bug = BugFactory()
    openai_server.script(*[error(503, "overloaded")] * 3)
    with django_capture_on_commit_callbacks(execute=True):
        rubric_draft_request(bugs=[bug], variant="templated", actor=reviewer)
    rubric = Rubric.objects.get(bug=bug)
    assert rubric.status == Rubric.Status.DRAFT_FAILED
    assert "503" in rubric.draft_error
    assert LLMCall.objects.get(pk=rubric.draft_call_id).status == LLMCall.Status.ERROR

    openai_server.script(ok(DRAFT_ANSWER))
    with django_capture_on_commit_callbacks(execute=True):
        rubric_draft_request(bugs=[bug], variant="templated", actor=reviewer)

    rubric.refresh_from_db()
    assert rubric.status == Rubric.Status.IN_REVIEW
    assert rubric.draft_error == ""


def test_every_edit_is_a_justified_revision(drafted: Rubric, reviewer: User) -> None:
    revision = rubric_revise(
        rubric=drafted,
        base_number=0,
        structure=edit(drafted, root_cause="The loop stops one element early."),
        justification="The draft blamed the wrong line.",
        themes=["hallucination"],
        actor=reviewer,
    )

    assert revision.number == 1
    assert revision.author == "reviewer"
    assert revision.themes == ["hallucination"]
    assert "The loop stops one element early." in revision.text
    drafted.refresh_from_db()
    assert drafted.current_number == 1
    assert drafted.revisions.get(number=0).text != revision.text  # the draft is untouched


@pytest.mark.parametrize(
    ("justification", "themes", "message"),
    [("", [], JUSTIFICATION_REQUIRED), ("why", ["vibes"], "unknown theme 'vibes'")],
)
def test_an_edit_without_justification_or_with_an_unknown_theme_is_refused(
    drafted: Rubric, reviewer: User, justification: str, themes: list[str], message: str
) -> None:
    with pytest.raises(RubricActionError, match=message):
        rubric_revise(
            rubric=drafted,
            base_number=0,
            structure=edit(drafted, root_cause="changed"),
            justification=justification,
            themes=themes,
            actor=reviewer,
        )
    assert drafted.revisions.count() == 1


def test_an_edit_that_changes_nothing_is_refused(drafted: Rubric, reviewer: User) -> None:
    with pytest.raises(RubricActionError, match=NO_CHANGE.format(number=0)):
        rubric_revise(
            rubric=drafted,
            base_number=0,
            structure=edit(drafted),
            justification="no-op",
            actor=reviewer,
        )


def test_the_second_of_two_concurrent_saves_is_refused_with_the_first(
    drafted: Rubric, reviewer: User, reviewer2: User
) -> None:
    first = rubric_revise(
        rubric=drafted,
        base_number=0,
        structure=edit(drafted, root_cause="First reviewer's root cause."),
        justification="clearer",
        actor=reviewer,
    )

    with pytest.raises(RubricConflict) as conflict:
        rubric_revise(
            rubric=drafted,
            base_number=0,  # opened before the first save
            structure=edit(drafted, root_cause="Second reviewer's root cause."),
            justification="also clearer",
            actor=reviewer2,
        )

    assert conflict.value.current == first
    assert drafted.revisions.count() == 2


def _submitted(drafted: Rubric, author: User) -> Rubric:
    rubric_revise(
        rubric=drafted,
        base_number=0,
        structure=edit(drafted, root_cause="Refined."),
        justification="precise",
        actor=author,
    )
    return rubric_submit(rubric=drafted, base_number=1, actor=author)


def test_a_second_reviewer_confirms_and_the_rubric_becomes_golden(
    drafted: Rubric, reviewer: User, reviewer2: User
) -> None:
    rubric = _submitted(drafted, reviewer)

    with pytest.raises(RubricActionError, match=OWN_WORK):
        rubric_confirm(rubric=rubric, base_number=1, actor=reviewer)
    rubric = rubric_confirm(rubric=rubric, base_number=1, actor=reviewer2)

    assert rubric.status == Rubric.Status.GOLDEN
    assert rubric.golden_revision == rubric.revisions.get(number=1)
    assert list(rubric.events.values_list("kind", flat=True)) == [
        "drafted",
        "revised",
        "submitted",
        "confirmed",
    ]


def test_changing_a_golden_rubric_needs_a_new_confirmation(
    drafted: Rubric, reviewer: User, reviewer2: User
) -> None:
    rubric = rubric_confirm(rubric=_submitted(drafted, reviewer), base_number=1, actor=reviewer2)

    rubric_revise(
        rubric=rubric,
        base_number=1,
        structure=edit(rubric, root_cause="Refined again."),
        justification="scope",
        actor=reviewer2,
    )
    rubric.refresh_from_db()

    assert rubric.status == Rubric.Status.IN_REVIEW
    assert rubric.golden_revision.number == 1  # still the golden text until confirmed
    rubric_submit(rubric=rubric, base_number=2, actor=reviewer2)
    # Both reviewers have now edited it: neither can confirm.
    for user in (reviewer, reviewer2):
        with pytest.raises(RubricActionError, match=OWN_WORK):
            rubric_confirm(rubric=rubric, base_number=2, actor=user)


def test_sending_back_needs_a_comment_and_returns_the_rubric(
    drafted: Rubric, reviewer: User, reviewer2: User
) -> None:
    rubric = _submitted(drafted, reviewer)

    with pytest.raises(RubricActionError, match=COMMENT_REQUIRED):
        rubric_send_back(rubric=rubric, base_number=1, actor=reviewer2, comment=" ")
    rubric = rubric_send_back(
        rubric=rubric, base_number=1, actor=reviewer2, comment="Requirement 1 overfits."
    )

    assert rubric.status == Rubric.Status.SENT_BACK
    assert rubric.events.last().comment == "Requirement 1 overfits."
    # The author may submit it again as it is, or edit it first.
    assert rubric_submit(rubric=rubric, base_number=1, actor=reviewer).status == (
        Rubric.Status.AWAITING_CONFIRMATION
    )


def test_confirming_a_stale_revision_is_a_conflict(
    drafted: Rubric, reviewer: User, reviewer2: User
) -> None:
    rubric = _submitted(drafted, reviewer)

    with pytest.raises(RubricConflict):
        rubric_confirm(rubric=rubric, base_number=0, actor=reviewer2)
