"""The lead's form to send a run's least certain verdicts to humans."""

from typing import Any

from django import forms

from judging.annotations.forms import AnnotatorsField
from judging.annotations.selectors import annotator_users
from judging.runs.uncertainty import DEFAULT_SIGNAL, SIGNALS

ONE_BUDGET = "give either a number of patches or a share, not both and not neither"


class RouteForm(forms.Form):
    patches = forms.IntegerField(
        required=False, min_value=1, label="Patches", help_text="How many to send…"
    )
    percent = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=100,
        label="or a share (%)",
        help_text="…or what share of the run's verdicts humans have not settled yet.",
    )
    signal = forms.ChoiceField(
        choices=list(SIGNALS.items()),
        initial=DEFAULT_SIGNAL,
        label="Least certain means",
        help_text="Ties go to the verdict closest to the threshold, then to the members"
        " furthest apart.",
    )
    annotators = AnnotatorsField(
        queryset=annotator_users(), widget=forms.CheckboxSelectMultiple, label="Annotators"
    )
    overlap = forms.IntegerField(
        min_value=1, initial=2, label="Labels a patch", help_text="At most the annotators."
    )
    name = forms.CharField(max_length=200, required=False, label="Campaign name")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotators"].queryset = annotator_users()  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if (cleaned.get("patches") is None) == (cleaned.get("percent") is None):
            raise forms.ValidationError(ONE_BUDGET)
        return cleaned
