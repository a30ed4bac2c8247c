"""The review screen, where a reviewer turns an LLM draft into a golden rubric, and the queue.

Leads and reviewers read; only reviewers write. The editor's state lives in the browser's
form until Save: add, remove and move post it and get the editor re-rendered from it, and the
live preview posts it too. Nothing is written before Save, and nothing typed is dropped by a
refused save (invalid, or a conflict with another reviewer's save). Also here: starting
LLM drafts (of a dataset's bugs, or of one bug) and following a draft batch's progress.
"""

from typing import Any

from django.contrib import messages
from django.contrib.auth.models import User
from django.contrib.messages import error as message_error
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from rubrics import selectors
from rubrics.models import Rubric, RubricRevision
from rubrics.review import selectors as review_selectors
from rubrics.review.disagreements import rubric_disagreements
from rubrics.review.forms import (
    DraftRequestForm,
    EditorOpError,
    EditorState,
    ReviewActionForm,
    RevisionForm,
    UpholdForm,
    editor_apply,
)
from rubrics.review.selectors import (
    QUEUE_EMPTY_CONFIRM,
    QUEUE_EMPTY_DISAGREED,
    QUEUE_EMPTY_REVIEW,
    QUEUE_EMPTY_SENT_BACK,
)
from rubrics.review.services import (
    JUSTIFICATION_REQUIRED,
    NOTE_REQUIRED,
    RubricActionError,
    RubricConflict,
    rubric_confirm,
    rubric_draft_request,
    rubric_revise,
    rubric_send_back,
    rubric_submit,
    rubric_uphold,
)
from rubrics.review.suggestions import (
    Suggestion,
    SuggestionError,
    change_is_taken,
    changes_take,
    suggestion_get,
    suggestion_request,
)
from rubrics.review.textdiff import line_diff
from rubrics.rubric_text import EMPTY_ROOT_CAUSE, EMPTY_TEXT, NO_REQUIREMENTS
from rubrics.views import dataset_page
from sejury_web.forms import ReasoningTargetForm
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.llm import OFFLINE_MARKER, Provider
from sejury_web.roles import Role, role_required, user_has_role

READ_ROLES = (Role.LEAD, Role.REVIEWER)
BAD_FORM = "the form was incomplete: reload the page and try again"
SAVED = "Saved revision {number}."
SUBMITTED = "Submitted revision {number} for confirmation."
CONFIRMED = "Revision {number} is now the golden rubric."
SENT_BACK = "Sent revision {number} back to its authors."
UPHELD = "Recorded: the rubric is right on {count} patch{plural}."
TAKE_WITHOUT_SUGGESTION = "there is no suggestion to take changes from: ask for one first"
ACTION_CONFLICT = (
    "{author} saved revision {number} meanwhile: reload the page and read it before you act."
)
# Lines of context around each change in the diff a refused save shows.
CONFLICT_CONTEXT = 2
# Which field a service error belongs next to.
ERROR_FIELDS = {
    JUSTIFICATION_REQUIRED: "justification",
    EMPTY_ROOT_CAUSE: "root_cause",
    NO_REQUIREMENTS: "requirements",
    EMPTY_TEXT: "text",
}


def _rubric(slug: str, bug_key: str, variant: str) -> Rubric:
    """The drafted rubric the URL names; 404 if there is none (yet)."""
    bug = selectors.bug_get(dataset=selectors.dataset_get(slug=slug), key=bug_key)
    rubric = review_selectors.rubric_for_bug(bug=bug, variant=variant)
    if rubric is None or rubric.current_number < 0:
        raise Http404("this rubric has no draft yet")
    return rubric


def _context(request: AuthenticatedHtmxRequest, rubric: Rubric, **kwargs: Any) -> dict[str, Any]:
    user: User = request.user
    return review_selectors.rubric_screen(
        rubric, user=user, can_edit=user_has_role(user, Role.REVIEWER), **kwargs
    )


def _page(
    request: AuthenticatedHtmxRequest, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    bug = context["bug"]
    context["patches"] = selectors.bug_patches(bug=bug)
    return render(request, "rubrics/review/rubric_edit.html", context, status=status)


@require_GET
@role_required(*READ_ROLES)
def rubric_edit(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """The review screen; a page that says so when the rubric has no draft yet."""
    bug = selectors.bug_get(dataset=selectors.dataset_get(slug=slug), key=bug_key)
    rubric = review_selectors.rubric_for_bug(bug=bug, variant=variant)
    if rubric is None or rubric.current_number < 0:
        context = {
            "undrafted": True,
            "bug": bug,
            "dataset": bug.dataset,
            "rubric": rubric,
            "variant": variant,
            "variant_label": Rubric.Variant(variant).label,
        }
        return render(request, "rubrics/review/rubric_edit.html", context)
    return _page(request, _context(request, rubric))


class _BadForm(Exception):
    pass


def _posted(request: AuthenticatedHtmxRequest, rubric: Rubric) -> tuple[EditorState, RevisionForm]:
    state = EditorState.from_post(
        request.POST, text_only=rubric.variant == Rubric.Variant.FREE_FORM
    )
    form = RevisionForm(request.POST)
    if not form.is_valid():
        raise _BadForm
    return state, form


def _suggestion(rubric: Rubric, form: RevisionForm) -> Suggestion | None:
    """The suggested revision the editor shows (its call id is a hidden field), read back
    against the current revision; None when there is none or it no longer applies."""
    call_id = form.cleaned_data.get("suggestion")
    if not call_id:
        return None
    current = review_selectors.revision_get(rubric=rubric, number=rubric.current_number)
    try:
        return suggestion_get(rubric=rubric, revision=current, call_id=call_id) if current else None
    except SuggestionError:
        return None


def _posted_context(
    request: AuthenticatedHtmxRequest, rubric: Rubric, state: EditorState, form: RevisionForm
) -> dict[str, Any]:
    """The unsaved editor as posted: its state, base, justification, themes and suggestion."""
    return {
        "state": state,
        "base_number": form.cleaned_data["base_number"],
        "justification": form.cleaned_data["justification"],
        "themes": form.cleaned_data["themes"],
        "suggestion": _suggestion(rubric, form),
    }


def _editor_response(
    request: AuthenticatedHtmxRequest, context: dict[str, Any], *, panels: bool, status: int = 200
) -> HttpResponse:
    """The editor partial with the preview and changes (and with ``panels`` the status and
    history) swapped out of band; the whole page without htmx."""
    if not request.htmx:
        return _page(request, context, status=status)
    context["panels"] = panels
    # htmx swaps only 2xx answers: a refused save is still the editor to show.
    return render(request, "rubrics/review/_rubric_update.html", context)


@require_POST
@role_required(Role.REVIEWER)
@vary_on_headers("HX-Request")
def rubric_editor(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """Add, remove or move an item of the unsaved editor state; nothing is saved."""
    rubric = _rubric(slug, bug_key, variant)
    op = request.POST.get("op", "")
    try:
        state, form = _posted(request, rubric)
        posted = _posted_context(request, rubric, state, form)
        if op.startswith("take:"):
            # Take one change of the suggested revision, or all of them.
            if posted["suggestion"] is None:
                raise EditorOpError(TAKE_WITHOUT_SUGGESTION)
            posted["state"], focus = changes_take(state, posted["suggestion"], op[5:]), ""
        else:
            posted["state"], focus = editor_apply(state, op)
    except (_BadForm, EditorOpError, SuggestionError) as error:
        return HttpResponseBadRequest(str(error) or BAD_FORM)
    context = _context(request, rubric, focus=focus, **posted)
    return _editor_response(request, context, panels=False)


@require_POST
@role_required(Role.REVIEWER)
def rubric_preview(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """The live preview and the changes of the unsaved editor state (htmx only)."""
    rubric = _rubric(slug, bug_key, variant)
    try:
        state, form = _posted(request, rubric)
    except _BadForm:
        return HttpResponseBadRequest(BAD_FORM)
    context = _context(
        request,
        rubric,
        state=state,
        base_number=form.cleaned_data["base_number"],
        justification=form.cleaned_data["justification"],
    )
    return render(request, "rubrics/review/_rubric_live.html", context)


@require_POST
@role_required(Role.REVIEWER)
@vary_on_headers("HX-Request")
def rubric_save(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """Save the editor as the next revision; a refused save keeps the editor as it was."""
    rubric = _rubric(slug, bug_key, variant)
    try:
        state, form = _posted(request, rubric)
    except _BadForm:
        return HttpResponseBadRequest(BAD_FORM)
    base_number: int = form.cleaned_data["base_number"]
    kept = _posted_context(request, rubric, state, form)
    del kept["base_number"]
    suggestion = kept["suggestion"]
    took = suggestion and any(change_is_taken(state, c) for c in suggestion.changes)
    user: User = request.user
    try:
        revision = rubric_revise(
            rubric=rubric,
            base_number=base_number,
            structure=state.structure(),
            justification=form.cleaned_data["justification"],
            themes=form.cleaned_data["themes"],
            answers=request.POST.getlist("answer_keys") if form.cleaned_data["answers"] else (),
            suggestion_call_id=suggestion.call_id if took and suggestion else None,
            actor=user,
        )
    except RubricConflict as conflict:
        rubric = review_selectors.rubric_reload(rubric)
        context = _context(
            request,
            rubric,
            base_number=conflict.current.number,
            conflict=_conflict(rubric, started_from=base_number, other=conflict.current),
            **kept,
        )
        return _editor_response(request, context, panels=True, status=409)
    except RubricActionError as error:
        context = _context(
            request,
            rubric,
            base_number=base_number,
            errors=[str(error)],
            error_field=ERROR_FIELDS.get(str(error), ""),
            **kept,
        )
        return _editor_response(request, context, panels=False, status=400)
    if not request.htmx:
        messages.success(request, SAVED.format(number=revision.number))
        return redirect(rubric)
    rubric = review_selectors.rubric_reload(rubric)
    return _editor_response(request, _context(request, rubric, saved=revision), panels=True)


def _conflict(rubric: Rubric, *, started_from: int, other: RubricRevision) -> dict[str, Any]:
    """What the banner of a refused save shows: the other save and what it changed."""
    base = review_selectors.revision_get(rubric=rubric, number=started_from)
    return {
        "revision": other,
        "started_from": started_from,
        "diff": line_diff(base.text, other.text, context=CONFLICT_CONTEXT) if base else None,
    }


@require_POST
@role_required(Role.REVIEWER)
@vary_on_headers("HX-Request")
def rubric_act(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str, action: str
) -> HttpResponse:
    """Submit, confirm or send back the revision the reviewer was looking at; the URL names
    ``action``."""
    rubric = _rubric(slug, bug_key, variant)
    form = ReviewActionForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(BAD_FORM)
    number: int = form.cleaned_data["base_number"]
    comment: str = form.cleaned_data["comment"]
    user: User = request.user
    problem = done = ""
    try:
        if action == "submit":
            rubric_submit(rubric=rubric, base_number=number, actor=user)
            done = SUBMITTED
        elif action == "confirm":
            rubric_confirm(rubric=rubric, base_number=number, actor=user, comment=comment)
            done = CONFIRMED
        else:
            rubric_send_back(rubric=rubric, base_number=number, actor=user, comment=comment)
            done = SENT_BACK
    except RubricConflict as conflict:
        current = conflict.current
        problem = ACTION_CONFLICT.format(author=current.author, number=current.number)
    except RubricActionError as error:
        problem = str(error)
    if not request.htmx:
        if problem:
            messages.error(request, problem)
        else:
            messages.success(request, done.format(number=number))
        return redirect(rubric)
    rubric = review_selectors.rubric_reload(rubric)
    context = _context(
        request,
        rubric,
        action_error=problem,
        action_done=done.format(number=number) if done else "",
        comment=comment if problem else "",
        send_back_open=bool(problem) and action == "send_back",
    )
    return render(request, "rubrics/review/_rubric_acted.html", context)


@require_POST
@role_required(Role.REVIEWER)
@vary_on_headers("HX-Request")
def rubric_suggest(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """*Suggest a revision*: the LLM layer drafts one from the current revision and the
    judge's unanswered disagreements with humans; the editor keeps what was typed, and shows
    the suggestion beside it to take in whole or in part. Nothing is saved."""
    rubric = _rubric(slug, bug_key, variant)
    try:
        state, form = _posted(request, rubric)
    except _BadForm:
        return HttpResponseBadRequest(BAD_FORM)
    posted = _posted_context(request, rubric, state, form)
    current = review_selectors.rubric_current_revision(rubric)
    problem = ""
    try:
        posted["suggestion"] = suggestion_request(
            rubric=rubric, revision=current, disagreements=rubric_disagreements(rubric).open
        )
    except SuggestionError as error:
        problem = str(error)
    context = _context(request, rubric, suggestion_error=problem, **posted)
    if not request.htmx:
        if problem:
            messages.error(request, problem)
        return _page(request, context, status=400 if problem else 200)
    return _editor_response(request, context, panels=False)


@require_POST
@role_required(Role.REVIEWER)
@vary_on_headers("HX-Request")
def rubric_uphold_view(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """Answer the judge's disagreements with "the rubric is right" and a note."""
    rubric = _rubric(slug, bug_key, variant)
    form = UpholdForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest(BAD_FORM)
    keys = request.POST.getlist("answer_keys")
    user: User = request.user
    problem = done = ""
    try:
        event = rubric_uphold(
            rubric=rubric, answers=keys, note=form.cleaned_data["note"], actor=user
        )
        count = len(event.subjects)
        done = UPHELD.format(count=count, plural="" if count == 1 else "es")
    except RubricActionError as error:
        problem = str(error)
    if not request.htmx:
        if problem:
            messages.error(request, problem)
        else:
            messages.success(request, done)
        return redirect(rubric)
    context = _context(
        request,
        rubric,
        uphold_error=problem,
        uphold_done=done,
        uphold_note=form.cleaned_data["note"] if problem else "",
        uphold_note_invalid=problem == NOTE_REQUIRED,
    )
    return render(request, "rubrics/review/_rubric_upheld.html", context)


@require_GET
@role_required(Role.REVIEWER)
def review_queue(request: AuthenticatedHtmxRequest) -> HttpResponse:
    """Rubrics awaiting my confirmation, sent back to me, flagged by the judge's
    disagreements, and awaiting review: the parts where something waits first, then the
    empty ones, a line each."""
    user: User = request.user
    queue = review_selectors.review_queue(user=user)
    sections = [
        (
            "Awaiting my confirmation",
            queue.awaiting_my_confirmation,
            "confirm",
            QUEUE_EMPTY_CONFIRM,
        ),
        ("Sent back to me", queue.sent_back_to_me, "sent-back", QUEUE_EMPTY_SENT_BACK),
        (
            "The judge disagreed with humans",
            queue.judge_disagreed,
            "disagreed",
            QUEUE_EMPTY_DISAGREED,
        ),
        ("Awaiting review", queue.awaiting_review, "review", QUEUE_EMPTY_REVIEW),
    ]
    context = {
        "queue": queue,
        "sections": [section for section in sections if section[1].total],
        "empty_sections": [section for section in sections if not section[1].total],
    }
    return render(request, "rubrics/review/review_queue.html", context)


DRAFT_ROLES = (Role.LEAD, Role.REVIEWER)


@require_POST
@role_required(*DRAFT_ROLES)
def rubric_draft_dataset(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    """Draft the rubrics of a whole dataset, or of the bugs the form names."""
    dataset = selectors.dataset_get(slug=slug)
    form = DraftRequestForm(request.POST, dataset=dataset)
    if form.is_valid():
        data = form.cleaned_data
        try:
            batch = rubric_draft_request(
                bugs=data["bugs"],
                variant=data["variant"],
                actor=request.user,
                provider=data["provider"],
                model=data["model"],
                reasoning=data["reasoning"],
            )
        except RubricActionError as error:  # a provider without its key, a reasoning refused
            form.add_error(None, str(error))
        else:
            return redirect("rubrics:draft_batch", slug=dataset.slug, batch_id=batch.pk)
    # Refused: the dataset's page again, the form as the user filled it, its errors in it.
    return dataset_page(request, dataset, draft_form=form, status=400)


@require_POST
@role_required(*DRAFT_ROLES)
def rubric_draft_bug(
    request: AuthenticatedHtmxRequest, slug: str, bug_key: str, variant: str
) -> HttpResponse:
    """Draft (or retry the failed draft of) one bug's rubric, by the model posted (a batch
    page's Retry posts its batch's) or else the configured default."""
    bug = selectors.bug_get(dataset=selectors.dataset_get(slug=slug), key=bug_key)
    if variant not in Rubric.Variant.values:
        raise Http404("no such rubric variant")
    target = ReasoningTargetForm(request.POST)
    chosen = target.cleaned_data if target.is_valid() else {}
    try:
        batch = rubric_draft_request(
            bugs=[bug],
            variant=variant,
            actor=request.user,
            provider=chosen.get("provider", ""),
            model=chosen.get("model", ""),
            reasoning=chosen.get("reasoning", ""),
        )
    except RubricActionError as problem:
        message_error(request, str(problem))
        return redirect(bug)
    return redirect("rubrics:draft_batch", slug=slug, batch_id=batch.pk)


@require_GET
@role_required(*DRAFT_ROLES)
@vary_on_headers("HX-Request")
def draft_batch(request: AuthenticatedHtmxRequest, slug: str, batch_id: int) -> HttpResponse:
    """The live progress of a draft request; htmx polls the progress partial."""
    batch = selectors.draft_batch_get(dataset_slug=slug, batch_id=batch_id)
    context = {
        "batch": batch,
        "progress": selectors.draft_batch_progress(batch),
        # Said once for the whole batch: the drafts' own text carries no marker.
        "offline_marker": OFFLINE_MARKER if batch.provider == Provider.OFFLINE else "",
        "retry_with": [
            ("provider", batch.provider),
            ("model", batch.model),
            ("reasoning", batch.reasoning),
        ],
    }
    if request.htmx:
        return render(request, "rubrics/review/_draft_progress.html", context)
    return render(request, "rubrics/review/draft_batch.html", context)
