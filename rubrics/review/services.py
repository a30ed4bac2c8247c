"""Every write to rubrics: drafting, revising, submitting, confirming, sending back.

Each change and its ``RubricEvent`` are written in one transaction. Saves carry the revision
number they were based on (``base_number``); a save based on anything but the current
revision raises ``RubricConflict`` carrying the revision that got there first.
"""

from collections.abc import Collection, Iterable
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import F

from rubrics.models import Bug, DraftBatch, Rubric, RubricEvent, RubricRevision, Theme
from rubrics.review.disagreements import rubric_disagreements
from rubrics.review.prompts import DRAFT_PURPOSE, REVISE_PROMPT_VERSION
from rubrics.rubric_text import RubricStructureError, rubric_markdown, structure_normalize
from rubrics.selectors import rubric_reviewers_since_draft
from rubrics.tasks import rubric_draft_write_task
from sejury_web.durable import enqueue_on_commit
from sejury_web.llm import LLMRequest, Provider
from sejury_web.llm.config import Target, llm_settings
from sejury_web.llm.models_table import reasoning_check

JUSTIFICATION_REQUIRED = "every edit needs a justification: say why you changed the rubric"
UNKNOWN_THEME = "unknown theme {theme!r}"
NO_CHANGE = "nothing changed: the rubric is the same as revision {number}"
NO_DRAFT_YET = "this rubric has no draft yet"
NOT_SUBMITTABLE = "only a rubric in review or sent back can be submitted for confirmation"
NOT_AWAITING = "this rubric is not awaiting confirmation"
OWN_WORK = "a rubric is confirmed by a second reviewer: you edited or submitted it since the draft"
COMMENT_REQUIRED = "say what should change when you send a rubric back"
NO_BUGS = "no bugs to draft"
OFFLINE_REASONING = "the offline heuristic does not reason: a reasoning setting needs a model"
NOTE_REQUIRED = "say why the rubric is right: the note is what the next reviewer reads"
NOTHING_OPEN = "these disagreements were answered meanwhile: reload the page"


class RubricConflict(Exception):
    """Someone saved a newer revision since the editor was opened."""

    def __init__(self, *, current: RubricRevision) -> None:
        super().__init__(f"revision {current.number} by {current.author} was saved meanwhile")
        self.current = current


class RubricActionError(ValueError):
    pass


def _locked(rubric: Rubric, base_number: int) -> Rubric:
    """The rubric, locked for this transaction, if it is still at ``base_number``."""
    locked = Rubric.objects.select_for_update().select_related("bug").get(pk=rubric.pk)
    if locked.current_number < 0:
        raise RubricActionError(NO_DRAFT_YET)
    if locked.current_number != base_number:
        current = locked.revisions.get(number=locked.current_number)
        raise RubricConflict(current=current)
    return locked


def _event(
    rubric: Rubric,
    kind: str,
    *,
    actor: User | None,
    revision: RubricRevision | None = None,
    comment: str = "",
) -> None:
    RubricEvent.objects.create(
        rubric=rubric, kind=kind, actor=actor, revision=revision, comment=comment
    )


# -- drafting -----------------------------------------------------------------------------------


def rubric_draft_request(
    *,
    bugs: Iterable[Bug],
    variant: str,
    actor: User | None,
    provider: str = "",
    model: str = "",
    reasoning: str = "",
) -> DraftBatch:
    """Queue a draft for each bug that has none; a bug never gets two drafts by accident.

    Rubrics that already have a draft, or are being drafted, are left alone; failed ones are
    queued again. The batch records them all, so its progress bar covers the whole request.
    ``provider`` and ``model`` (blank: the configured default) are resolved now, so that the
    batch names the model its drafts go to, and a provider without its key is refused here.
    ``reasoning`` (an effort or a thinking budget) must be one the model takes.
    """
    bugs = list(bugs)
    if not bugs:
        raise RubricActionError(NO_BUGS)
    target = _draft_target(provider, model)
    provider, model = str(target.provider), target.model
    reasoning = _reasoning_checked(target, reasoning)
    with transaction.atomic():
        batch = DraftBatch.objects.create(
            dataset_id=bugs[0].dataset_id,
            variant=variant,
            requested_by=actor,
            provider=provider,
            model=model,
            reasoning=reasoning,
        )
        queued: list[Rubric] = []
        for bug in bugs:
            rubric, created = Rubric.objects.get_or_create(bug=bug, variant=variant)
            if created or rubric.status == Rubric.Status.DRAFT_FAILED:
                rubric.status = Rubric.Status.DRAFTING
                rubric.draft_error = ""
                rubric.draft_attempt += 1
                rubric.save(update_fields=["status", "draft_error", "draft_attempt", "updated_at"])
                queued.append(rubric)
            batch.rubrics.add(rubric)
        for rubric in queued:
            enqueue_on_commit(
                rubric_draft_write_task,
                rubric.pk,
                provider=provider,
                model=model,
                reasoning=reasoning,
                attempt=rubric.draft_attempt,
            )
    return batch


def rubric_drafts_resume_unfinished() -> list[int]:
    """Queue again every draft still being written, with the model of the last batch that
    asked for it: a worker starting calls this, so that a draft a killed worker was writing
    is written when a worker is back (a second writer's draft is dropped, never doubled).
    Each is queued as the next attempt, so the task queued before (still in the queue when
    a draft was asked for just before the worker started) does nothing instead of asking
    the model a second time. Returns the rubrics."""
    rubrics = (
        Rubric.objects.filter(status=Rubric.Status.DRAFTING, current_number__lt=0)
        .prefetch_related("batches")
        .order_by("pk")
    )
    resumed = []
    for rubric in rubrics:
        batch = max(rubric.batches.all(), key=lambda b: (b.created_at, b.pk), default=None)
        Rubric.objects.filter(pk=rubric.pk).update(draft_attempt=F("draft_attempt") + 1)
        rubric.refresh_from_db(fields=["draft_attempt"])
        enqueue_on_commit(
            rubric_draft_write_task,
            rubric.pk,
            provider=batch.provider if batch else "",
            model=batch.model if batch else "",
            reasoning=batch.reasoning if batch else "",
            attempt=rubric.draft_attempt,
        )
        resumed.append(rubric.pk)
    return resumed


def _draft_target(provider: str, model: str) -> Target:
    """The provider and model drafts go to (blank: the configured default), or the refusal."""
    try:
        return llm_settings().target(
            LLMRequest(
                purpose=DRAFT_PURPOSE,
                messages=(),
                schema={},
                provider=Provider(provider) if provider else None,
                model=model or None,
            )
        )
    except (ImproperlyConfigured, ValueError) as error:
        raise RubricActionError(str(error)) from None


def _reasoning_checked(target: Target, reasoning: str) -> str:
    """``reasoning`` normalised for the model the drafts will go to, or the refusal."""
    if not reasoning.strip():
        return ""
    try:
        if target.provider == Provider.OFFLINE:
            raise ValueError(OFFLINE_REASONING)
        return reasoning_check(target.provider, target.model, reasoning)
    except ValueError as error:
        raise RubricActionError(str(error)) from None


# -- review -------------------------------------------------------------------------------------


def rubric_revise(
    *,
    rubric: Rubric,
    base_number: int,
    structure: dict[str, Any],
    justification: str,
    themes: Iterable[str] = (),
    answers: Collection[str] = (),
    suggestion_call_id: int | None = None,
    actor: User,
) -> RubricRevision:
    """Save an edit as the next revision; refused if someone saved since ``base_number``.

    ``answers``: the keys of the judge's disagreements with humans this revision answers
    (those still unanswered are recorded as answered by it). ``suggestion_call_id``: the LLM
    call of the *Suggest a revision* whose changes the reviewer took, recorded with its
    prompt's version.
    """
    justification = justification.strip()
    if not justification:
        raise RubricActionError(JUSTIFICATION_REQUIRED)
    themes = sorted(set(themes))
    for theme in themes:
        if theme not in Theme.values:
            raise RubricActionError(UNKNOWN_THEME.format(theme=theme))
    try:
        normalized = structure_normalize(
            structure, templated=rubric.variant == Rubric.Variant.TEMPLATED
        )
    except RubricStructureError as error:
        raise RubricActionError(str(error)) from error
    text = rubric_markdown(normalized)
    with transaction.atomic():
        rubric = _locked(rubric, base_number)
        current = rubric.revisions.get(number=base_number)
        if current.text == text:
            raise RubricActionError(NO_CHANGE.format(number=base_number))
        revision = RubricRevision.objects.create(
            rubric=rubric,
            number=base_number + 1,
            structure=normalized,
            text=text,
            author=actor.get_username(),
            author_user=actor,
            justification=justification,
            themes=themes,
            prompt_version=REVISE_PROMPT_VERSION if suggestion_call_id else "",
            llm_call_id=suggestion_call_id,
        )
        rubric.current_number = revision.number
        # An edit, even of a golden rubric, needs a (new) confirmation.
        rubric.status = Rubric.Status.IN_REVIEW
        rubric.submitted_by = None
        rubric.save()
        _event(rubric, RubricEvent.Kind.REVISED, actor=actor, revision=revision)
        if answered := _still_open(rubric, answers):
            RubricEvent.objects.create(
                rubric=rubric,
                kind=RubricEvent.Kind.ANSWERED,
                actor=actor,
                revision=revision,
                comment=justification,
                subjects=answered,
            )
    return revision


def _still_open(rubric: Rubric, keys: Collection[str]) -> list[str]:
    """Those of ``keys`` that are disagreements of ``rubric`` no one has answered yet."""
    if not keys:
        return []
    still = set(rubric_disagreements(rubric).open_keys)
    return sorted(key for key in set(keys) if key in still)


def rubric_uphold(
    *, rubric: Rubric, answers: Collection[str], note: str, actor: User
) -> RubricEvent:
    """Answer the judge's disagreements with humans with "the rubric is right" and a note:
    the judge misread the rubric, or the humans' labels are wrong; nothing is revised."""
    note = note.strip()
    if not note:
        raise RubricActionError(NOTE_REQUIRED)
    with transaction.atomic():
        rubric = Rubric.objects.select_for_update().get(pk=rubric.pk)
        answered = _still_open(rubric, answers)
        if not answered:
            raise RubricActionError(NOTHING_OPEN)
        current = rubric.revisions.filter(number=rubric.current_number).first()
        return RubricEvent.objects.create(
            rubric=rubric,
            kind=RubricEvent.Kind.UPHELD,
            actor=actor,
            revision=current,
            comment=note,
            subjects=answered,
        )


def rubric_submit(*, rubric: Rubric, base_number: int, actor: User) -> Rubric:
    """Ask a second reviewer to confirm the current revision."""
    with transaction.atomic():
        rubric = _locked(rubric, base_number)
        if rubric.status not in (Rubric.Status.IN_REVIEW, Rubric.Status.SENT_BACK):
            raise RubricActionError(NOT_SUBMITTABLE)
        rubric.status = Rubric.Status.AWAITING_CONFIRMATION
        rubric.submitted_by = actor
        rubric.save()
        revision = rubric.revisions.get(number=base_number)
        _event(rubric, RubricEvent.Kind.SUBMITTED, actor=actor, revision=revision)
    return rubric


def _check_second_reviewer(rubric: Rubric, user: User) -> None:
    if rubric.status != Rubric.Status.AWAITING_CONFIRMATION:
        raise RubricActionError(NOT_AWAITING)
    if user.pk in rubric_reviewers_since_draft(rubric):
        raise RubricActionError(OWN_WORK)


def rubric_confirm(*, rubric: Rubric, base_number: int, actor: User, comment: str = "") -> Rubric:
    """A second reviewer confirms: the current revision becomes the golden rubric."""
    with transaction.atomic():
        rubric = _locked(rubric, base_number)
        _check_second_reviewer(rubric, actor)
        revision = rubric.revisions.get(number=base_number)
        rubric.status = Rubric.Status.GOLDEN
        rubric.golden_revision = revision
        rubric.save()
        _event(
            rubric,
            RubricEvent.Kind.CONFIRMED,
            actor=actor,
            revision=revision,
            comment=comment.strip(),
        )
    return rubric


def rubric_send_back(*, rubric: Rubric, base_number: int, actor: User, comment: str) -> Rubric:
    """A second reviewer returns the rubric to its authors with what should change."""
    comment = comment.strip()
    if not comment:
        raise RubricActionError(COMMENT_REQUIRED)
    with transaction.atomic():
        rubric = _locked(rubric, base_number)
        _check_second_reviewer(rubric, actor)
        rubric.status = Rubric.Status.SENT_BACK
        rubric.save()
        revision = rubric.revisions.get(number=base_number)
        _event(
            rubric,
            RubricEvent.Kind.SENT_BACK,
            actor=actor,
            revision=revision,
            comment=comment,
        )
    return rubric
