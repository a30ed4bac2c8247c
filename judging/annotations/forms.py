"""Forms of the campaign pages: a lead's new campaign, and an annotator's label."""

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib.auth.models import User

from judging.annotations.dimensions import HIGHEST, LOWEST, campaign_dimensions_parse
from judging.annotations.selectors import annotator_users
from judging.annotations.services import DEFAULT_CALIBRATION_SAMPLE, clamp_seconds
from judging.consensus.forms import RULES_EXPLAINED
from judging.consensus.rules import ConsensusRule
from judging.dimensions import EXAMPLE, MAX_DIMENSIONS, Dimension, DimensionsError
from judging.models import Campaign, JudgingRun, Label
from rubrics.forms import DatasetChoiceField
from rubrics.models import Dataset
from rubrics.selectors import dataset_list
from sejury_web.forms import ModelIdsField, split_keys

NOTE_MAX_LENGTH = 5000
# The tests filter's choices, and the value each stands for in the campaign's filters.
TESTS_CHOICES = [
    ("", "Any"),
    ("pass", "Tests pass"),
    ("fail", "Tests fail"),
    ("unknown", "Unknown"),
]
TESTS_VALUES: dict[str, bool | None] = {"pass": True, "fail": False, "unknown": None}


class AnnotatorsField(ModelIdsField):
    def label_from_instance(self, obj: Any) -> str:
        return str(obj.username)


class CampaignForm(forms.Form):
    """What ``campaign_create`` needs, from a lead."""

    dataset = DatasetChoiceField(queryset=Dataset.objects.none(), to_field_name="slug")
    name = forms.CharField(max_length=200)
    purpose = forms.ChoiceField(
        choices=Campaign.Purpose.choices,
        initial=Campaign.Purpose.CALIBRATION,
        widget=forms.RadioSelect,
    )
    selection = forms.ChoiceField(
        choices=Campaign.Selection.choices,
        initial=Campaign.Selection.SAMPLE,
        widget=forms.RadioSelect,
    )
    sample_size = forms.IntegerField(
        required=False,
        min_value=1,
        label="Sample size (N)",
        help_text=f"Empty: {DEFAULT_CALIBRATION_SAMPLE} for a calibration campaign.",
    )
    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=2**62,
        help_text="Empty: a random seed. It is stored: it draws the sample and orders each "
        "annotator's queue, so the campaign can be drawn again.",
    )
    bug_type = forms.CharField(required=False, max_length=100, label="Bug type")
    source = forms.CharField(required=False, max_length=200, label="Patch source")
    tests = forms.ChoiceField(required=False, choices=TESTS_CHOICES, label="Tests")
    patch_keys = forms.CharField(
        label="Patch keys",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Only these patches: keys one per line or separated by commas.",
    )
    annotators = AnnotatorsField(
        queryset=User.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "pick at least one annotator"},
    )
    overlap = forms.IntegerField(
        min_value=1, initial=2, label="Labels per patch (k)", help_text="Distinct annotators."
    )
    show_rubric = forms.BooleanField(
        required=False, initial=True, label="Annotators see the bug's golden rubric"
    )
    dimensions = forms.CharField(
        required=False,
        max_length=2000,
        label="Dimensions to rate (optional)",
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "maintainability 1..5\nperformance 1..5"}
        ),
        help_text=f"Besides VALID/INVALID, annotators rate each of these on its scale: one a "
        f"line, its name, its scale and what it measures (shown to annotators; optional), as "
        f"“{EXAMPLE}” (at most {MAX_DIMENSIONS}; ratings {LOWEST}–{HIGHEST}, one key each). "
        "The same lines as a written judge's dimensions: the report compares a judge's "
        "dimension with the one of the same name.",
    )
    consensus_rule = forms.ChoiceField(
        choices=ConsensusRule.choices,
        initial=ConsensusRule.UNANIMOUS,
        required=False,  # not given (a script's post): unanimous, paper 004's rule
        label="Consensus rule",
        help_text=f"{RULES_EXPLAINED} A lead can change it later on the adjudication page: "
        "which patches wait for adjudication changes with it.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = dataset_list()  # type: ignore[attr-defined]
        self.fields["annotators"].queryset = annotator_users()  # type: ignore[attr-defined]

    def clean_dimensions(self) -> list[Dimension]:
        try:
            return campaign_dimensions_parse(self.cleaned_data.get("dimensions") or "")
        except DimensionsError as error:
            raise forms.ValidationError(str(error)) from None

    def clean_consensus_rule(self) -> str:
        return self.cleaned_data.get("consensus_rule") or ConsensusRule.UNANIMOUS

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        filters: dict[str, Any] = {}
        for name in ("bug_type", "source"):
            if value := cleaned.get(name, "").strip():
                filters[name] = value
        if tests := cleaned.get("tests"):
            filters["tests_pass"] = TESTS_VALUES[tests]
        if keys := split_keys(cleaned.get("patch_keys", "")):
            filters["patches"] = keys
        cleaned["filters"] = filters
        return cleaned

    def annotator_options(self) -> list[tuple[User, bool]]:
        """Each annotator user, and whether their box is ticked."""
        chosen = {str(pk) for pk in self["annotators"].value() or ()}
        return [
            (user, str(user.pk) in chosen)
            for user in self.fields["annotators"].queryset  # type: ignore[attr-defined]
        ]


class LabelForm(forms.Form):
    """An annotator's label of one patch; ``seconds`` is the time on the page (set by JS)."""

    label = forms.ChoiceField(choices=Label.choices)
    note = forms.CharField(required=False, max_length=NOTE_MAX_LENGTH, widget=forms.Textarea)
    seconds = forms.CharField(required=False, max_length=32, widget=forms.HiddenInput)

    def __init__(self, *args: Any, dimensions: Sequence[Dimension] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dimensions = list(dimensions)
        for dimension in self.dimensions:
            self.fields[f"rating-{dimension.name}"] = forms.TypedChoiceField(
                required=False,  # a dimension may be left unrated
                coerce=int,
                empty_value=None,
                choices=[("", "not rated"), *((n, str(n)) for n in dimension.scale)],
                label=dimension.name,
            )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        cleaned["ratings"] = {
            d.name: cleaned[f"rating-{d.name}"]
            for d in self.dimensions
            if cleaned.get(f"rating-{d.name}") is not None
        }
        return cleaned

    def clean_seconds(self) -> float:
        # A time that does not parse never costs the annotator their label: it counts as 0.
        try:
            return clamp_seconds(float(self.cleaned_data.get("seconds") or 0))
        except ValueError:
            return 0.0


class RunChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        offline = " · offline heuristic, not an LLM" if obj.provider == "offline" else ""
        name = f" {obj.name}" if obj.name else ""
        return f"Run {obj.pk}{name}: {'+'.join(obj.strategies)} · {obj.model}{offline}"


class LabelStudioExportForm(forms.Form):
    """Which run's verdicts the tasks carry as predictions, if any (a lead's choice)."""

    run = RunChoiceField(
        queryset=JudgingRun.objects.none(),
        required=False,
        empty_label="None: tasks without verdicts",
        label="Judge's verdicts as predictions",
    )

    def __init__(self, *args: Any, dataset: Dataset, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        runs = JudgingRun.objects.filter(dataset=dataset, kind=JudgingRun.Kind.RUN)
        self.fields["run"].queryset = runs.order_by("-created_at", "-id")  # type: ignore[attr-defined]


class LabelStudioImportForm(forms.Form):
    file = forms.FileField(
        label="Label Studio export (JSON)",
        help_text="Label Studio's Export › JSON of the tasks exported here.",
    )
    users = forms.FileField(
        label="Users (optional)",
        required=False,
        help_text="Needed for Label Studio's Export › JSON, which gives annotators as ids:"
        ' Label Studio\'s user list (GET /api/users, saved as JSON) or {"7": "rater-01"}.',
    )
    grant_annotator_role = forms.BooleanField(
        required=False,
        label="Give the annotator role to the existing users these annotations name",
        help_text="Only to users without any role; each change is recorded in the audit trail."
        " A lead or a reviewer is never made an annotator by an import.",
    )
