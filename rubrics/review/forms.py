"""The rubric editor's state as posted by the browser, and the review action forms.

The editor is plain form fields: a templated rubric posts ``root_cause``, parallel lists
``requirement_title``/``requirement_detail``, and lists ``acceptable`` and ``unacceptable``;
a free-form one posts ``text``. The add, remove and move buttons post that state with an
``op`` and get the editor back re-rendered from it, so nothing typed is lost until Save.
``DraftRequestForm`` asks for LLM drafts of a dataset's bugs.
"""

from dataclasses import dataclass, field, replace
from itertools import zip_longest
from typing import Any

from django import forms
from django.http import QueryDict

from rubrics.models import Dataset, Rubric, Theme
from rubrics.review.services import NO_BUGS
from rubrics.rubric_text import Requirement, rubric_markdown
from rubrics.selectors import UNKNOWN_BUGS, dataset_bugs_named
from sejury_web.forms import ReasoningTargetForm, split_keys

# The lists an op can change, and how many items one may hold.
LISTS = ("requirements", "acceptable", "unacceptable")
MAX_ITEMS = 100
BAD_OP = "unknown editor operation {op!r}"
TEXT_MODE, TEMPLATED_MODE = "text", "templated"


class EditorOpError(ValueError):
    pass


@dataclass
class EditorState:
    """What the editor shows: a structure being edited, never validated until Save."""

    mode: str = TEMPLATED_MODE
    root_cause: str = ""
    requirements: list[Requirement] = field(default_factory=list)
    acceptable: list[str] = field(default_factory=list)
    unacceptable: list[str] = field(default_factory=list)
    text: str = ""

    @property
    def is_text(self) -> bool:
        return self.mode == TEXT_MODE

    @classmethod
    def from_structure(cls, structure: dict[str, Any]) -> "EditorState":
        if "text" in structure:
            return cls(mode=TEXT_MODE, text=str(structure["text"]))
        return cls(
            root_cause=structure.get("root_cause", ""),
            requirements=[
                {"title": r.get("title", ""), "detail": r.get("detail", "")}
                for r in structure.get("requirements", [])
            ],
            acceptable=list(structure.get("acceptable", [])),
            unacceptable=list(structure.get("unacceptable", [])),
        )

    @classmethod
    def from_post(cls, data: QueryDict, *, text_only: bool) -> "EditorState":
        """The posted state; a free-form rubric is always a single text."""

        def values(name: str) -> list[str]:
            # Browsers post textareas with CRLF line ends; rubrics are stored with LF.
            return [value.replace("\r\n", "\n") for value in data.getlist(name)][:MAX_ITEMS]

        if text_only or data.get("mode") == TEXT_MODE:
            return cls(mode=TEXT_MODE, text=(values("text") or [""])[0])
        titles, details = values("requirement_title"), values("requirement_detail")
        return cls(
            root_cause=(values("root_cause") or [""])[0],
            requirements=[
                {"title": title or "", "detail": detail or ""}
                for title, detail in zip_longest(titles, details)
            ],
            acceptable=values("acceptable"),
            unacceptable=values("unacceptable"),
        )

    def structure(self) -> dict[str, Any]:
        """The structure to save (``rubric_revise`` validates and trims it)."""
        if self.is_text:
            return {"text": self.text}
        return {
            "root_cause": self.root_cause,
            "requirements": self.requirements,
            "acceptable": self.acceptable,
            "unacceptable": self.unacceptable,
        }

    def preview_markdown(self) -> str:
        """The Markdown of the state as it is, empty rows left out (for the live preview)."""
        if self.is_text:
            return rubric_markdown({"text": self.text})
        requirements: list[Requirement] = [
            {"title": r["title"].strip(), "detail": r["detail"].strip()}
            for r in self.requirements
            if r["title"].strip() or r["detail"].strip()
        ]
        return rubric_markdown(
            {
                "root_cause": self.root_cause.strip(),
                "requirements": requirements,
                "acceptable": [t.strip() for t in self.acceptable if t.strip()],
                "unacceptable": [t.strip() for t in self.unacceptable if t.strip()],
            }
        )


def _with(state: EditorState, name: str, items: list[Any]) -> EditorState:
    changed = replace(state)
    setattr(changed, name, items)
    return changed


def editor_apply(state: EditorState, op: str) -> tuple[EditorState, str]:
    """``state`` after ``op`` (``add:LIST``, ``remove:LIST:I``, ``up:LIST:I``, ``down:LIST:I``),

    and the id of the field to focus afterwards (empty for none).
    """
    action, _, rest = op.partition(":")
    name, _, index_text = rest.partition(":")
    if state.is_text or name not in LISTS or action not in {"add", "remove", "up", "down"}:
        raise EditorOpError(BAD_OP.format(op=op))
    items: list[Any] = list(getattr(state, name))
    if action == "add":
        if len(items) >= MAX_ITEMS:
            return state, ""
        items.append({"title": "", "detail": ""} if name == "requirements" else "")
        return _with(state, name, items), f"{name}-{len(items) - 1}"
    try:
        index = int(index_text)
    except ValueError as error:
        raise EditorOpError(BAD_OP.format(op=op)) from error
    if not 0 <= index < len(items):
        raise EditorOpError(BAD_OP.format(op=op))
    if action == "remove":
        del items[index]
        focus = f"{name}-add" if not items else f"{name}-{min(index, len(items) - 1)}"
        return _with(state, name, items), focus
    target = index - 1 if action == "up" else index + 1
    if not 0 <= target < len(items):
        return state, f"{name}-{index}-{action}"
    items[index], items[target] = items[target], items[index]
    # Keep the focus on the same button of the moved item, so that it can be pressed again.
    return _with(state, name, items), f"{name}-{target}-{action}"


@dataclass(frozen=True)
class EditorItem:
    """One item of an editor list as the template shows it."""

    index: int
    number: int
    value: Any  # a requirement dict, or the text of an example
    focus: str  # "field", "up", "down", or "" for none
    first: bool
    last: bool


def editor_items(state: EditorState, focus: str) -> dict[str, list[EditorItem]]:
    """Each list of ``state``, with the field or button to focus marked (see ``editor_apply``)."""
    lists: dict[str, list[EditorItem]] = {}
    for name in LISTS:
        items = getattr(state, name)
        lists[name] = []
        for i, value in enumerate(items):
            prefix = f"{name}-{i}"
            mark = {prefix: "field", f"{prefix}-up": "up", f"{prefix}-down": "down"}.get(focus, "")
            lists[name].append(
                EditorItem(i, i + 1, value, mark, first=i == 0, last=i == len(items) - 1)
            )
    return lists


class RevisionForm(forms.Form):
    """Save's fields besides the structure; the justification is checked by the service."""

    base_number = forms.IntegerField(min_value=0, widget=forms.HiddenInput)
    justification = forms.CharField(required=False, widget=forms.Textarea)
    themes = forms.MultipleChoiceField(
        choices=Theme.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    # The judge's disagreements with humans this revision answers: the box, and the keys of
    # those the reviewer was shown (``answer_keys``, one hidden field each).
    answers = forms.BooleanField(required=False)
    # The LLM call of the suggested revision the editor shows, if any.
    suggestion = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)


class UpholdForm(forms.Form):
    """ "The rubric is right": the note says why; ``answer_keys`` name what it answers."""

    note = forms.CharField(required=False, widget=forms.Textarea)


class ReviewActionForm(forms.Form):
    """Submit, confirm and send back act on the revision the reviewer was looking at."""

    base_number = forms.IntegerField(min_value=0, widget=forms.HiddenInput)
    comment = forms.CharField(required=False, widget=forms.Textarea)


class DraftRequestForm(ReasoningTargetForm):
    """Which bugs to draft, how, and by which model: every bug of the dataset, or those named
    (comma or space separated); the provider and model as a new run chooses them."""

    variant = forms.ChoiceField(
        choices=Rubric.Variant.choices,
        initial=Rubric.Variant.TEMPLATED,
        widget=forms.RadioSelect,
        help_text="Templated: root cause, numbered requirements, acceptable and unacceptable "
        "solutions (paper 004). Free-form: one Markdown text.",
    )
    bug_keys = forms.CharField(
        label="Bugs",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "every bug of the dataset"}),
        help_text="Leave empty for every bug of the dataset; or name bug keys, one per line "
        "or separated by commas.",
    )
    field_order = ["variant", "bug_keys", "provider", "model", "reasoning"]

    def __init__(self, *args: Any, dataset: Dataset, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dataset = dataset

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        keys = split_keys(cleaned.get("bug_keys", ""))
        cleaned["bugs"], missing = dataset_bugs_named(self.dataset, keys)
        if missing:
            raise forms.ValidationError(UNKNOWN_BUGS.format(keys=", ".join(missing)))
        if not cleaned["bugs"]:
            raise forms.ValidationError(NO_BUGS)
        return cleaned
