"""The Judges pages' forms: a judge's definition as a lead types it (a new judge, or a new
version of one), and the patch a preview renders a version on.

Dimensions are typed one per line, ``name low..high description`` (``security 1..5 Does the
patch open a hole?``), as a campaign's dimensions to rate are (``judging.dimensions``): a lead
writes them without reading the docs. The definition itself is checked by the service
(``services.definition_check``), whose message names the field (and, for a template, the
block's line and column); the form shows it under that field.
"""

from typing import Any

from django import forms

from judging.dimensions import (
    EXAMPLE,
    MAX_DIMENSIONS,
    DimensionsError,
    dimensions_of,
    dimensions_parse,
    dimensions_text,
)
from judging.models import Context, JudgeVersion

from .answers import DIMENSIONS, JUDGE_SCALES
from .services import JudgeDefinitionError

DIMENSION_HELP = (
    "One per line: its name, its scale and what it measures, e.g. "
    f"“{EXAMPLE}” (the same lines as a campaign's dimensions to rate: the report pairs a "
    f"judge's dimension with the annotators' of the same name). At most {MAX_DIMENSIONS}; "
    "only for the kind “named dimensions”."
)
NOTE_REQUIRED = "say why this version is written: the history shows it"
# A service's message starts with the field it is about ("template: unknown block …").
FIELD_OF = {"name", "title", "template", "kind", "dimensions", "overall", "note"}
TEMPLATE_ROWS = 18


class JudgeForm(forms.Form):
    """A judge's definition: a new version of a judge (``name`` fixed by the page), or a new
    judge (``with_name``)."""

    name = forms.CharField(
        max_length=24,
        help_text="How a team names it: lowercase letters, digits and hyphens, e.g. "
        "“minimalism-strict”.",
    )
    title = forms.CharField(max_length=200)
    template = forms.CharField(
        widget=forms.Textarea(attrs={"rows": TEMPLATE_ROWS, "spellcheck": "false"}),
        help_text="The prompt. Put each piece of data where the model should read it: "
        "{{ bug }}, {{ reference_fix }}, {{ rubric }}, {{ candidate_patch }} (required), "
        "{{ test_evidence }}.",
    )
    kind = forms.ChoiceField(
        label="Answer", choices=JudgeVersion.Kind.choices, widget=forms.RadioSelect
    )
    dimensions = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text=DIMENSION_HELP,
    )
    overall = forms.CharField(
        label="Overall score",
        required=False,
        max_length=32,
        help_text="Leave empty for the mean of every dimension, or name the one dimension "
        "that is the overall score.",
    )
    note = forms.CharField(
        label="Note",
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why this version: what you changed and why. Required.",
        error_messages={"required": NOTE_REQUIRED},
    )

    def __init__(self, *args: Any, with_name: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not with_name:
            del self.fields["name"]

    def clean_template(self) -> str:
        # A browser sends a textarea's lines ending in CRLF: stored as typed in JSON (LF), so
        # that saving an unchanged form is no new version and the prompt has no stray CRs.
        return str(self.cleaned_data.get("template", "")).replace("\r\n", "\n")

    def clean_dimensions(self) -> list[dict[str, Any]]:
        if self.cleaned_data.get("kind") != DIMENSIONS:
            return []  # ignored for the other kinds (switching kind is no error)
        try:
            found = dimensions_parse(self.cleaned_data.get("dimensions", ""), JUDGE_SCALES)
        except DimensionsError as error:
            raise forms.ValidationError(str(error)) from None
        return [d.as_json() for d in found]

    def clean_note(self) -> str:
        note = self.cleaned_data.get("note", "").strip()
        if not note:
            raise forms.ValidationError(NOTE_REQUIRED)
        return note

    def definition(self, name: str | None = None) -> dict[str, Any]:
        """The cleaned form as ``judge_define``'s JSON (dimensions only for that kind)."""
        data = self.cleaned_data
        dimensional = data["kind"] == DIMENSIONS
        return {
            "name": name if name is not None else data["name"],
            "title": data["title"],
            "template": data["template"],
            "kind": data["kind"],
            "dimensions": data["dimensions"] if dimensional else [],
            "overall": data["overall"].strip() if dimensional else "",
            "note": data["note"],
        }

    def refused(self, error: JudgeDefinitionError) -> None:
        """The service's refusal under the field it names (else above the form)."""
        field, _, rest = str(error).partition(": ")
        if field in FIELD_OF and field in self.fields and rest:
            self.add_error(field, rest)
        else:
            self.add_error(None, str(error))


def judge_initial(definition: dict[str, Any]) -> dict[str, Any]:
    """A definition (a version's, a starter's) as the form's initial values."""
    return {
        "name": definition.get("name", ""),
        "title": definition.get("title", ""),
        "template": definition.get("template", ""),
        "kind": definition.get("kind", JudgeVersion.Kind.VERDICT),
        "dimensions": dimensions_text(dimensions_of(definition.get("dimensions"))),
        "overall": definition.get("overall", ""),
    }


class PreviewForm(forms.Form):
    """The patch a preview renders on: a dataset, then one of its bugs (typed by its key) and
    patches, and the run context (which rubric, if any, ``{{ rubric }}`` shows)."""

    dataset = forms.CharField(required=False, max_length=200)
    bug = forms.CharField(required=False, max_length=200)
    patch = forms.CharField(required=False, max_length=200)
    # The dataset whose bugs the page listed: a bug key is checked against it, and ignored
    # when the lead has since picked another dataset.
    shown = forms.CharField(required=False, max_length=200)
    context = forms.ChoiceField(
        required=False,
        choices=[(value, label) for value, label in Context.choices if value != Context.REVISION],
    )

    def clean_context(self) -> str:
        return self.cleaned_data.get("context") or Context.GOLDEN


class JudgeTestStartForm(forms.Form):
    """The dataset a version is tested on, by its slug (a slug field: text no dataset's slug
    can be, a NUL among it, is refused before any query)."""

    dataset = forms.SlugField(max_length=255)
