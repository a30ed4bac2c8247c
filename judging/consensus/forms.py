"""The lead's adjudication: a consensus label and the themes of the disagreement; and the
consensus rule of the campaign or dataset the queue shows."""

from django import forms

from judging.consensus.rules import ConsensusRule
from judging.models import DisagreementTheme, Label

NO_LABEL = "pick the consensus label: VALID or INVALID"
# Both rules, for the forms that choose one (here and the new campaign's).
RULES_EXPLAINED = (
    "Unanimous (paper 004): a patch has a consensus when at least two decisive labels "
    "(VALID or INVALID; UNSURE counts as none) all agree. Two-thirds majority: also when at "
    "least three decisive labels are given and at least two thirds of them agree (2 of 3, "
    "3 of 4, 4 of 6; not 3 of 5). Every other labelled patch waits for a lead's "
    "adjudication, which wins under either rule."
)
RULE_HELP = (
    f"{RULES_EXPLAINED} Changing the rule changes which patches wait here; adjudications stay."
)


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


class ConsensusRuleForm(forms.Form):
    """A lead's consensus rule for the queue's scope: its campaign, or else its dataset."""

    rule = forms.ChoiceField(
        choices=ConsensusRule.choices, label="Consensus rule", help_text=RULE_HELP
    )
    campaign = forms.IntegerField(required=False, widget=forms.HiddenInput)
