"""The lead's adjudication: a consensus label and the themes of the disagreement."""

from django import forms

from judging.models import DisagreementTheme, Label

NO_LABEL = "pick the consensus label: VALID or INVALID"


class AdjudicationForm(forms.Form):
    """A lead's consensus on one patch; ``adjudication_record`` checks the themes' rules."""

    label = forms.ChoiceField(
        choices=[(Label.VALID, "VALID"), (Label.INVALID, "INVALID")],
        widget=forms.RadioSelect,
        error_messages={"required": NO_LABEL},
    )
    themes = forms.MultipleChoiceField(
        choices=DisagreementTheme.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    campaign = forms.IntegerField(required=False, widget=forms.HiddenInput)
