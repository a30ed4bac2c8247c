"""*Suggest a revision*: the LLM layer drafts a revised rubric from the current revision and the
judge's disagreements with humans (paper 004 §8: "guide the rubric generator with patch
rejection justifications"), which the reviewer takes in whole or in part.

Nothing here writes a rubric. The suggestion is the answer of one LLM call, kept in the LLM
log like every call; the editor names that call in a hidden field, and taking a change only
changes the editor's unsaved state. Saving is the reviewer's, with their justification
(``rubric_revise``), which then records the call the revision took changes from.
"""

from dataclasses import dataclass, replace
from typing import Any

from rubrics.models import Rubric, RubricRevision
from rubrics.review.disagreements import JudgeDisagreement
from rubrics.review.forms import EditorState
from rubrics.review.prompts import (
    REVISE_PURPOSE,
    rationale_from_answer,
    revise_request,
    structure_from_revision_answer,
)
from rubrics.review.textdiff import TextDiff, line_diff
from rubrics.rubric_text import RubricStructureError, structure_normalize
from sejury_web.llm import LLMError, Provider, complete
from sejury_web.llm.models import LLMCall

NOTHING_TO_SUGGEST_FROM = "there is no disagreement of the judge with humans to revise from"
UNUSABLE = "the model's suggestion could not be used: {error}"
NOT_A_SUGGESTION = "that suggestion is not one for this rubric: ask for a new one"
EXAMPLE_LISTS = (("acceptable", "Acceptable solution"), ("unacceptable", "Unacceptable solution"))


class SuggestionError(ValueError):
    pass


@dataclass(frozen=True)
class Change:
    """One change the suggestion makes to the current revision: take it alone, or all."""

    index: int
    part: str  # "text", "root_cause", "requirements", "acceptable", "unacceptable"
    kind: str  # "changed", "added", "removed"
    heading: str  # e.g. "Requirement 2", "New acceptable solution"
    before: Any  # a str, a requirement dict, or None for an addition
    after: Any  # a str, a requirement dict, or None for a removal
    position: int | None = None  # a changed requirement's index in the current revision

    @property
    def diff(self) -> TextDiff:
        return line_diff(_shown(self.before), _shown(self.after))


def _shown(item: Any) -> str:
    if item is None:
        return ""
    if isinstance(item, dict):
        return f"{item.get('title', '')}\n{item.get('detail', '')}".strip()
    return str(item)


@dataclass(frozen=True)
class Suggestion:
    call_id: int
    structure: dict[str, Any]
    rationale: str
    is_offline: bool
    changes: list[Change]
    disagreements: int  # how many disagreements it was drafted from


def _requirement_changes(current: list[dict], suggested: list[dict]) -> list[Change]:
    """Requirements paired by equal title first, then the rest in order: changed where they
    differ, added or removed where one side has no partner."""
    partner: dict[int, int] = {}  # suggested index → current index
    used: set[int] = set()
    for s, item in enumerate(suggested):
        for c, old in enumerate(current):
            if c not in used and old["title"] == item["title"]:
                partner[s] = c
                used.add(c)
                break
    free = iter(c for c in range(len(current)) if c not in used)
    for s in range(len(suggested)):
        if s not in partner and (spare := next(free, None)) is not None:
            partner[s] = spare
            used.add(spare)
    changes: list[Change] = []
    for s, item in enumerate(suggested):
        paired = partner.get(s)
        if paired is None:
            changes.append(Change(0, "requirements", "added", "New requirement", None, item))
        elif current[paired] != item:
            heading = f"Requirement {paired + 1}"
            old = current[paired]
            changes.append(Change(0, "requirements", "changed", heading, old, item, paired))
    for c, old in enumerate(current):
        if c not in used:
            changes.append(
                Change(0, "requirements", "removed", f"Requirement {c + 1} removed", old, None)
            )
    return changes


def suggestion_changes(current: dict[str, Any], suggested: dict[str, Any]) -> list[Change]:
    """What ``suggested`` changes in the ``current`` structure, part by part."""
    if "text" in current or "text" in suggested:
        before, after = _shown(current.get("text", "")), _shown(suggested.get("text", ""))
        return (
            [Change(0, "text", "changed", "The rubric", before, after)] if before != after else []
        )
    changes: list[Change] = []
    if current.get("root_cause") != suggested.get("root_cause"):
        changes.append(
            Change(
                0,
                "root_cause",
                "changed",
                "Root cause",
                current["root_cause"],
                suggested["root_cause"],
            )
        )
    changes += _requirement_changes(current["requirements"], suggested["requirements"])
    for part, what in EXAMPLE_LISTS:
        old, new = current.get(part, []), suggested.get(part, [])
        changes += [
            Change(0, part, "added", f"New {what.lower()}", None, t) for t in new if t not in old
        ]
        changes += [
            Change(0, part, "removed", f"{what} removed", t, None) for t in old if t not in new
        ]
    return [replace(change, index=i) for i, change in enumerate(changes)]


def _templated(rubric: Rubric) -> bool:
    return rubric.variant == Rubric.Variant.TEMPLATED


def suggestion_request(
    *,
    rubric: Rubric,
    revision: RubricRevision,
    disagreements: list[JudgeDisagreement],
    provider: str = "",
    model: str = "",
) -> Suggestion:
    """Ask the LLM layer for a revision of ``revision`` from ``disagreements``.

    Raises ``SuggestionError`` when there is nothing to revise from, the call failed, or its
    answer is not a usable rubric; nothing is written but the LLM log's row.
    """
    if not disagreements:
        raise SuggestionError(NOTHING_TO_SUGGEST_FROM)
    request = revise_request(
        revision,
        [d.for_prompt() for d in disagreements],
        variant=rubric.variant,
        provider=Provider(provider) if provider else None,
        model=model or None,
    )
    try:
        response = complete(request)
    except LLMError as error:
        raise SuggestionError(str(error)) from error
    return _suggestion(rubric, revision, response.call_id, response.answer, len(disagreements))


def _suggestion(
    rubric: Rubric, revision: RubricRevision, call_id: int, answer: Any, disagreements: int
) -> Suggestion:
    try:
        structure = structure_normalize(
            structure_from_revision_answer(answer, variant=rubric.variant),
            templated=_templated(rubric),
        )
        rationale = rationale_from_answer(answer)
    except (RubricStructureError, KeyError, TypeError) as error:
        raise SuggestionError(UNUSABLE.format(error=error)) from error
    call = LLMCall.objects.only("provider").get(pk=call_id)
    return Suggestion(
        call_id=call_id,
        structure=structure,
        rationale=rationale,
        is_offline=call.provider == Provider.OFFLINE,
        changes=suggestion_changes(revision.structure, structure),
        disagreements=disagreements,
    )


def _asked_for(inputs: dict[str, Any], rubric: Rubric) -> bool:
    """Whether a call's inputs are this rubric's bug (bug keys repeat across datasets: its
    description and reference fix must match too) and variant family."""
    bug = inputs.get("bug") or {}
    variant = inputs.get("variant")
    text_only = variant == Rubric.Variant.FREE_FORM
    return (
        bug.get("key") == rubric.bug.key
        and bug.get("description") == rubric.bug.description
        and inputs.get("reference_diff") == rubric.bug.reference_patch
        # A templated rubric stored as text alone is revised as free form.
        and (
            variant == rubric.variant or (text_only and rubric.variant == Rubric.Variant.TEMPLATED)
        )
    )


def suggestion_get(*, rubric: Rubric, revision: RubricRevision, call_id: int) -> Suggestion:
    """The suggestion an earlier call made for this rubric, read back from the LLM log,
    with its changes against ``revision``."""
    call = LLMCall.objects.filter(
        pk=call_id, purpose=REVISE_PURPOSE, status=LLMCall.Status.OK
    ).first()
    if call is None or not _asked_for(call.inputs, rubric):
        raise SuggestionError(NOT_A_SUGGESTION)
    shown = len(call.inputs.get("disagreements") or [])
    return _suggestion(rubric, revision, call.pk, call.answer, shown)


# -- taking changes into the editor --------------------------------------------------------


def _without(items: list[Any], item: Any) -> list[Any]:
    kept = list(items)
    if item in kept:
        kept.remove(item)
    return kept


def _same_title(items: list[Any], position: int | None, before: Any) -> bool:
    """Whether the editor still has, at ``position``, the requirement ``before`` was (its
    title unchanged): otherwise a change is appended, never written over another one."""
    if position is None or position >= len(items) or not isinstance(before, dict):
        return False
    item = items[position]
    return isinstance(item, dict) and item.get("title") == before.get("title")


def change_take(state: EditorState, change: Change) -> EditorState:
    """``state`` with ``change`` applied where it still fits: an item the reviewer has
    edited since is left alone by a removal; a changed requirement whose detail the reviewer
    edited is replaced at its place if its title is still there, else the suggested one is
    appended."""
    taken = replace(state)
    if change.part == "text":
        taken.text = str(change.after)
        return taken
    if change.part == "root_cause":
        taken.root_cause = str(change.after)
        return taken
    items = list(getattr(state, change.part))
    if change.kind == "added":
        if change.after not in items:
            items.append(change.after)
    elif change.kind == "removed":
        items = _without(items, change.before)
    elif change.after not in items:
        if change.before in items:
            items[items.index(change.before)] = change.after
        elif change.position is not None and _same_title(items, change.position, change.before):
            # The reviewer edited its detail since: it is still the same requirement.
            items[change.position] = change.after
        else:
            items.append(change.after)
    setattr(taken, change.part, items)
    return taken


def changes_take(state: EditorState, suggestion: Suggestion, which: str) -> EditorState:
    """``state`` with one change of the suggestion taken (``which`` its index), or all of them
    (``which`` "all": the editor becomes the suggested rubric)."""
    if which == "all":
        return EditorState.from_structure(suggestion.structure)
    try:
        change = suggestion.changes[int(which)]
    except (ValueError, IndexError) as error:
        raise SuggestionError(NOT_A_SUGGESTION) from error
    return change_take(state, change)


def change_is_taken(state: EditorState, change: Change) -> bool:
    """Whether the editor already holds what ``change`` would make of it."""
    return change_take(state, change) == state
