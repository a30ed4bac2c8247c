"""Reads for the review screen and the reviewer's queue."""

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.http import Http404
from django.urls import reverse

from rubrics.analytics import revision_metrics
from rubrics.models import Bug, Rubric, RubricEvent, RubricRevision, Theme
from rubrics.review.disagreements import open_counts, rubric_disagreements
from rubrics.review.forms import EditorState, editor_items
from rubrics.review.suggestions import Suggestion, change_is_taken
from rubrics.review.textdiff import line_diff
from rubrics.rubric_text import ACCEPTABLE, UNACCEPTABLE, RubricStructureError, structure_normalize
from rubrics.selectors import rubric_reviewers_since_draft
from sejury_web.llm import OFFLINE_MARKER

# Each list of the queue shows this many rows at most, and says how many there are.
QUEUE_LIMIT = 200
UNKNOWN_VARIANT = "no rubric variant {variant!r}"
THEME_LABELS = dict(Theme.choices)
OFFLINE_AUTHOR_PREFIX = "llm:offline/"
# Lines of context around each change in the diff against the draft (the other diff is whole).
DRAFT_DIFF_CONTEXT = 3
EXAMPLE_SECTIONS = (
    ("acceptable", ACCEPTABLE, "acceptable solution"),
    ("unacceptable", UNACCEPTABLE, "unacceptable solution"),
)


def _rubrics() -> QuerySet[Rubric]:
    """Rubrics with what the editor's screen shows beside them: the bug and its dataset, the
    golden revision and who submitted it."""
    return Rubric.objects.select_related("bug__dataset", "golden_revision", "submitted_by")


def rubric_for_bug(*, bug: Bug, variant: str) -> Rubric | None:
    """The bug's rubric of ``variant``, or None before drafting was asked for; 404 on a bad
    variant."""
    if variant not in Rubric.Variant.values:
        raise Http404(UNKNOWN_VARIANT.format(variant=variant))
    return _rubrics().filter(bug=bug, variant=variant).first()


def rubric_reload(rubric: Rubric) -> Rubric:
    """``rubric`` as the database has it now: the editor redraws from it after a save or an
    action of this request, or after another reviewer's save refused this one."""
    return _rubrics().get(pk=rubric.pk)


@dataclass(frozen=True)
class HistoryRow:
    revision: RubricRevision
    theme_labels: list[str]
    distance: int
    normalized: float  # Levenshtein distance to the draft / the draft's length


def rubric_revisions(rubric: Rubric) -> list[RubricRevision]:
    """Every revision, oldest first (a rubric has a handful: they are all loaded)."""
    return list(rubric.revisions.select_related("author_user").order_by("number"))


def rubric_history(revisions: list[RubricRevision]) -> list[HistoryRow]:
    """The revisions, newest first, with how far each is from the draft (paper 004 §5.1.1)."""
    draft_text = revisions[0].text if revisions else ""
    rows = []
    for revision in reversed(revisions):
        metrics = revision_metrics(draft_text, revision.text) if draft_text else None
        rows.append(
            HistoryRow(
                revision=revision,
                theme_labels=[THEME_LABELS.get(t, t) for t in revision.themes or []],
                distance=metrics.distance if metrics else 0,
                normalized=metrics.normalized if metrics else 0.0,
            )
        )
    return rows


def rubric_review_events(rubric: Rubric) -> list[RubricEvent]:
    """Submissions, confirmations, send-backs and answers to the judge's disagreements,
    newest first."""
    kinds = (
        RubricEvent.Kind.SUBMITTED,
        RubricEvent.Kind.CONFIRMED,
        RubricEvent.Kind.SENT_BACK,
        RubricEvent.Kind.ANSWERED,
        RubricEvent.Kind.UPHELD,
    )
    return list(
        rubric.events.filter(kind__in=kinds)
        .select_related("actor", "revision")
        .order_by("-created_at", "-id")
    )


def rubric_last_event(rubric: Rubric, kind: str) -> RubricEvent | None:
    return (
        rubric.events.filter(kind=kind).select_related("actor").order_by("-created_at", "-id")
    ).first()


def user_may_confirm(rubric: Rubric, user: User) -> bool:
    """Whether ``user`` is a second reviewer of ``rubric``: no edit or submission since the
    draft."""
    return user.pk not in rubric_reviewers_since_draft(rubric)


# -- the review screen ----------------------------------------------------------------------


def _urls(rubric: Rubric) -> dict[str, str]:
    page = rubric.get_absolute_url()
    names = ("editor", "preview", "save", "submit", "confirm", "send_back", "suggest", "uphold")
    kwargs = {"slug": rubric.bug.dataset.slug, "bug_key": rubric.bug.key}
    kwargs["variant"] = rubric.variant
    urls = {name: reverse(f"rubrics:rubric_{name}", kwargs=kwargs) for name in names}
    return {"page": page, **urls}


def _text_only(rubric: Rubric) -> bool:
    return rubric.variant == Rubric.Variant.FREE_FORM


def _preview_problem(rubric: Rubric, state: EditorState) -> str:
    try:
        structure_normalize(state.structure(), templated=not _text_only(rubric))
    except RubricStructureError as error:
        return str(error)
    return ""


def rubric_screen(
    rubric: Rubric,
    *,
    user: User,
    can_edit: bool,
    state: EditorState | None = None,
    base_number: int | None = None,
    justification: str = "",
    themes: list[str] | None = None,
    focus: str = "",
    suggestion: Suggestion | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Everything the review screen's partials show; ``state`` is the unsaved editor, if any.

    ``base_number`` is the revision the editor's state is based on (the current one unless
    told otherwise, e.g. by a save that lost a race); ``suggestion`` the revision the LLM
    suggested, if the reviewer asked for one; ``extra`` is passed through.
    """
    revisions = rubric_revisions(rubric)
    by_number = {revision.number: revision for revision in revisions}
    current = by_number[rubric.current_number]
    draft = by_number[0]
    base_number = current.number if base_number is None else base_number
    base = by_number.get(base_number, current)
    state = state or EditorState.from_structure(current.structure)
    text = state.preview_markdown()
    previous = by_number.get(base.number - 1)
    dirty = text != base.text or bool(justification.strip())
    items = editor_items(state, focus)
    may_confirm = user_may_confirm(rubric, user)
    return {
        "rubric": rubric,
        "bug": rubric.bug,
        "dataset": rubric.bug.dataset,
        "urls": _urls(rubric),
        "can_edit": can_edit,
        "current": current,
        "draft": draft,
        "offline_marker": OFFLINE_MARKER if draft.author.startswith(OFFLINE_AUTHOR_PREFIX) else "",
        "offline_label": OFFLINE_MARKER,
        "base_number": base_number,
        "base": base,
        "state": state,
        "dirty": dirty,
        "justification": justification,
        "themes": themes or [],
        "theme_choices": Theme.choices,
        "focus": focus,
        "requirement_items": items["requirements"],
        "example_sections": [
            {
                "name": name,
                "heading": heading,
                "what": what,
                "items": items[name],
                "add_id": f"{name}-add",
            }
            for name, heading, what in EXAMPLE_SECTIONS
        ],
        "preview_text": text,
        "preview_problem": _preview_problem(rubric, state),
        "edit_diff": line_diff(base.text, text) if text != base.text else None,
        "last_diff": line_diff(previous.text, base.text) if previous else None,
        "draft_diff": line_diff(draft.text, text, context=DRAFT_DIFF_CONTEXT),
        "history": rubric_history(revisions),
        "events": rubric_review_events(rubric),
        "may_confirm": may_confirm,
        # The tab the page opens on: what the first reviewer changed, for the second one to
        # confirm knowingly; else the one the reviewer last chose (rubric_editor.js).
        "open_tab": "tab-changes"
        if can_edit and may_confirm and rubric.status == Rubric.Status.AWAITING_CONFIRMATION
        else "",
        "sent_back": rubric_last_event(rubric, RubricEvent.Kind.SENT_BACK)
        if rubric.status == Rubric.Status.SENT_BACK
        else None,
        "disagreements": rubric_disagreements(rubric),
        "suggestion": suggestion,
        "suggested_changes": [
            (change, change_is_taken(state, change)) for change in suggestion.changes
        ]
        if suggestion
        else [],
        **extra,
    }


# -- the queue ------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueList:
    rubrics: list[Rubric]
    total: int


# What a part of a reviewer's queue says when it is empty: the review queue and the home page
# (``rubrics.home``) say it in the same words.
QUEUE_EMPTY_CONFIRM = "No rubric awaits your confirmation."
QUEUE_EMPTY_SENT_BACK = "No rubric was sent back to you."
QUEUE_EMPTY_REVIEW = "No rubric awaits review."
QUEUE_EMPTY_DISAGREED = "No rubric has a disagreement of the judge with humans to answer."


@dataclass(frozen=True)
class ReviewQueue:
    awaiting_review: QueueList
    awaiting_my_confirmation: QueueList
    sent_back_to_me: QueueList
    judge_disagreed: QueueList  # each rubric's ``disagreements``: how many are unanswered


def _queue_rows(queryset: QuerySet[Rubric]) -> QuerySet[Rubric]:
    """Rubrics with what a row shows, in one query: who changed them last, and how."""
    current = RubricRevision.objects.filter(
        rubric=OuterRef("pk"), number=OuterRef("current_number")
    )
    last_event = RubricEvent.objects.filter(rubric=OuterRef("pk")).order_by("-created_at", "-id")
    return (
        queryset.select_related("bug__dataset", "submitted_by")
        .annotate(
            current_author=Subquery(current.values("author")[:1]),
            last_actor=Subquery(last_event.values("actor__username")[:1]),
            last_comment=Subquery(last_event.values("comment")[:1]),
        )
        .order_by("bug__dataset__name", "bug__sort_key", "variant")
    )


def _listed(queryset: QuerySet[Rubric]) -> QueueList:
    rows = list(_queue_rows(queryset)[:QUEUE_LIMIT])
    total = len(rows) if len(rows) < QUEUE_LIMIT else queryset.count()
    return QueueList(rubrics=rows, total=total)


def _judge_disagreed() -> QueueList:
    """Rubrics whose judge disagreed with the humans' consensus on patches no reviewer has
    answered yet, each with how many."""
    counts = open_counts()
    listed = _listed(Rubric.objects.filter(pk__in=list(counts)))
    for rubric in listed.rubrics:
        rubric.disagreements = counts[rubric.pk]  # type: ignore[attr-defined]
    return listed


def _mine(user: User) -> Exists:
    return Exists(
        RubricRevision.objects.filter(rubric=OuterRef("pk"), number__gt=0, author_user=user)
    )


def rubrics_awaiting_review() -> QuerySet[Rubric]:
    return Rubric.objects.filter(status=Rubric.Status.IN_REVIEW)


def rubrics_awaiting_confirmation_by(user: User) -> QuerySet[Rubric]:
    """Rubrics submitted for confirmation that ``user`` may confirm: not theirs."""
    # Two excludes, not one of an OR: ``submitted_by`` is nullable, and Django makes each
    # exclude keep the rows where it is NULL.
    awaiting = Rubric.objects.filter(status=Rubric.Status.AWAITING_CONFIRMATION)
    return awaiting.exclude(_mine(user)).exclude(submitted_by=user)


def rubrics_sent_back_to(user: User) -> QuerySet[Rubric]:
    return Rubric.objects.filter(
        Q(status=Rubric.Status.SENT_BACK) & (_mine(user) | Q(submitted_by=user))
    )


def review_queue(*, user: User) -> ReviewQueue:
    """Rubrics awaiting review, awaiting ``user``'s confirmation, sent back to ``user``, and
    those whose judge disagreed with humans."""
    return ReviewQueue(
        awaiting_review=_listed(rubrics_awaiting_review()),
        awaiting_my_confirmation=_listed(rubrics_awaiting_confirmation_by(user)),
        sent_back_to_me=_listed(rubrics_sent_back_to(user)),
        judge_disagreed=_judge_disagreed(),
    )


def rubric_current_revision(rubric: Rubric) -> RubricRevision:
    """The revision the editor shows (``RubricRevision.DoesNotExist`` before a draft)."""
    return rubric.revisions.get(number=rubric.current_number)


def revision_get(*, rubric: Rubric, number: int) -> RubricRevision | None:
    """Revision ``number`` of ``rubric``, if it exists."""
    return rubric.revisions.filter(number=number).first()
