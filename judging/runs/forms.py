"""Forms of the judging run pages: a new run, and a pair of runs to compare."""

from typing import Any

from django import forms

from judging.judges.selectors import team_judge_options
from judging.models import Context, JudgeVersion
from judging.runs.webhooks import URL_MAX, WebhookError, webhook_url_check
from judging.strategies import STRATEGIES
from judging.strategies.ensemble import check_scale
from judging.strategies.reducers import DEFAULT_REDUCER, reducer_choices
from rubrics.forms import DatasetChoiceField
from rubrics.models import Dataset
from rubrics.selectors import UNKNOWN_PATCHES, dataset_list, dataset_patches_named
from sejury_web.forms import ReasoningTargetForm, split_keys

# A reference-based team that runs on any dataset: the rubric judge, plus SE-Jury's direct
# assessment with the reference (S1b) and its equivalence check (S3).
DEFAULT_TEAM = ["rubric", "s1b", "s3"]
# The reference is the one context every bug has; rubric contexts need drafted or golden rubrics.
DEFAULT_CONTEXT = Context.REFERENCE
CONTEXT_HELP = {
    Context.GOLDEN: "The bug's golden rubric, reviewed and confirmed by engineers. "
    "Bugs without one fail the rubric judge.",
    Context.DRAFT: "The LLM's templated draft rubric, before any review.",
    Context.FREE_FORM: "The LLM's free-form draft rubric: prose, without numbered requirements.",
    Context.REFERENCE: "No rubric: the developers' reference fix only.",
    Context.NONE: "Nothing besides the bug and the candidate.",
}
NUMBER = forms.NumberInput(attrs={"step": "any"})
NO_TEAM = "pick at least one strategy for the team"
BAD_SCALE_FIELD = "scale_hi"


class RunForm(ReasoningTargetForm):
    """What ``run_create`` needs, from a lead."""

    dataset = DatasetChoiceField(queryset=Dataset.objects.none(), to_field_name="slug")
    strategies = forms.MultipleChoiceField(
        label="Team",
        choices=[(name, strategy.label) for name, strategy in STRATEGIES.items()],
        widget=forms.CheckboxSelectMultiple,
        initial=DEFAULT_TEAM,
        error_messages={"required": NO_TEAM},
    )
    context = forms.ChoiceField(
        choices=[(value, label) for value, label in Context.choices if value != Context.REVISION],
        initial=DEFAULT_CONTEXT,
    )
    # provider, model, reasoning: ReasoningTargetForm's
    batch = forms.BooleanField(
        label="Batch mode",
        required=False,
        help_text="Through the provider's batch API: half the price (the forecast's batch "
        "column), each round of calls answered within 24 hours, usually sooner; a call that "
        "needs an earlier answer (s2's rethink, s4 and s5 after their bug step) waits a round.",
    )
    threshold = forms.FloatField(
        initial=50.0, widget=NUMBER, help_text="A score at or above it is VALID."
    )
    reducer = forms.ChoiceField(
        label="Team score",
        choices=reducer_choices,
        initial=DEFAULT_REDUCER,
        required=False,  # a form that says none: the mean, as before reducers had names
        help_text="How the members' scores become the team's.",
    )
    scale_lo = forms.FloatField(label="Scale from", initial=0.0, widget=NUMBER)
    scale_hi = forms.FloatField(
        label="Scale to",
        initial=100.0,
        widget=forms.NumberInput(attrs={"step": "any", "aria-label": "Scale to"}),
    )
    patch_keys = forms.CharField(
        label="Patches",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Leave empty to judge every patch of the dataset; or name patch keys, "
        "one per line or separated by commas.",
    )
    name = forms.CharField(required=False, max_length=200, help_text="Optional, for the list.")
    webhook_url = forms.CharField(
        label="Webhook",
        required=False,
        max_length=URL_MAX,
        widget=forms.TextInput(
            attrs={"inputmode": "url", "placeholder": "https://ci.example/hooks/sejury"}
        ),
        help_text="Optional: a URL called with a signed POST when the run ends.",
    )
    # Set by the pre-flight's "Judge only the N ready patches": the N the lead agreed to; if
    # the form now makes another number ready, the pre-flight asks again.
    only_ready = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = dataset_list()  # type: ignore[attr-defined]
        # Written judges: each one's newest trusted version by its bare name, and its newest
        # version by ``name@N`` when that one is not trusted (``team_judge_options``).
        self.judge_options = team_judge_options()
        field = self.fields["strategies"]
        field.choices = [  # type: ignore[attr-defined]
            *field.choices,  # type: ignore[attr-defined]
            *((value, version.title) for value, version in self.judge_options),
        ]
        chosen = self.initial.get("strategies")
        if chosen and not self.is_bound:
            # A team from a link (``?team=minimalism``) names versions (``minimalism@3``):
            # the newest trusted one is ticked as its bare name, as the form offers it.
            bare = {v.label: value for value, v in self.judge_options if value == v.judge.name}
            self.initial["strategies"] = [bare.get(name, name) for name in chosen]

    def clean_webhook_url(self) -> str:
        url = self.cleaned_data.get("webhook_url", "")
        if not url:
            return ""
        try:
            return webhook_url_check(url)
        except WebhookError as error:
            raise forms.ValidationError(str(error)) from None

    def clean_reducer(self) -> str:
        return self.cleaned_data.get("reducer") or DEFAULT_REDUCER

    def clean_strategies(self) -> list[str]:
        chosen = set(self.cleaned_data["strategies"])
        written = [value for value, _ in self.judge_options]
        return [name for name in [*STRATEGIES, *written] if name in chosen]  # the form's order

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        lo, hi, threshold = (cleaned.get(key) for key in ("scale_lo", "scale_hi", "threshold"))
        if lo is not None and hi is not None and threshold is not None:
            try:
                check_scale(lo, hi, threshold)
            except ValueError as error:
                field = "threshold" if lo < hi else BAD_SCALE_FIELD
                self.add_error(field, str(error))
        dataset = cleaned.get("dataset")
        keys = split_keys(cleaned.get("patch_keys", ""))
        cleaned["patches"] = None
        if dataset is not None and keys:
            cleaned["patches"], missing = dataset_patches_named(dataset, keys)
            if missing:
                message = UNKNOWN_PATCHES.format(keys=", ".join(missing), dataset=dataset.name)
                self.add_error("patch_keys", message)
        return cleaned

    def team_options(self) -> list[tuple[Any, bool]]:
        """Each strategy in registry order, and whether its box is ticked."""
        chosen = set(self["strategies"].value() or ())
        return [(strategy, name in chosen) for name, strategy in STRATEGIES.items()]

    def written_options(self) -> list[tuple[str, JudgeVersion, bool]]:
        """Each written judge the team may name (what it names, the version), and whether its
        box is ticked."""
        chosen = set(self["strategies"].value() or ())
        return [(value, version, value in chosen) for value, version in self.judge_options]

    def context_options(self) -> list[tuple[str, str, str]]:
        """Each context a lead may pick: value, label, and what the rubric judge then sees."""
        return [
            (value, label, CONTEXT_HELP[Context(value)])
            for value, label in self.fields["context"].choices  # type: ignore[attr-defined]
        ]


class CompareForm(forms.Form):
    a = forms.IntegerField(label="Run A", min_value=1)
    b = forms.IntegerField(label="Run B", min_value=1)
