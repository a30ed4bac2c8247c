"""Forms of the lead's calibration pages: a campaign and a run to rank, and the team kept."""

from typing import Any

from django import forms

from judging.calibration.selectors import RunCoverage, calibration_campaigns, calibration_runs
from judging.models import Campaign, JudgingRun
from sejury_web.ids import is_id
from sejury_web.llm import OFFLINE_MARKER, Provider

NO_TEAM = "pick a team"
NO_CAMPAIGN = "none picked: teams are ranked on a campaign's consensus labels, so pick one first"
RUN_NOT_COVERING = "run {run} does not cover this campaign's labelled patches; pick one of the list"


class CampaignChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} — {obj.dataset.name} ({obj.get_purpose_display().split(' (')[0]})"


class CalibrationPickForm(forms.Form):
    """Which campaign's consensus, and which run's scores, to rank teams with (GET).

    The run's choices depend on the campaign: the runs that cover its labelled patches.
    Without a run, the one covering most of them is taken.
    """

    campaign = CampaignChoiceField(
        queryset=Campaign.objects.none(), required=False, empty_label="Pick a campaign"
    )
    run = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        campaigns = calibration_campaigns()
        self.fields["campaign"].queryset = campaigns  # type: ignore[attr-defined]
        self.coverage: list[RunCoverage] = []
        campaign_id = str(self.data.get("campaign", ""))
        if is_id(campaign_id):
            campaign = campaigns.filter(pk=int(campaign_id)).first()
            if campaign is not None:
                self.coverage = calibration_runs(campaign)
        self.fields["run"].choices = [  # type: ignore[attr-defined]
            ("", "The run covering most patches"),
            *[(row.run.pk, self.run_label(row)) for row in self.coverage],
        ]
        self.fields["run"].error_messages["invalid_choice"] = RUN_NOT_COVERING.format(
            run="%(value)s"
        )

    @staticmethod
    def run_label(row: RunCoverage) -> str:
        run = row.run
        name = f": {run.name}" if run.name else ""
        offline = f" ({OFFLINE_MARKER})" if run.provider == Provider.OFFLINE else ""
        return (
            f"Run {run.pk}{name} — {', '.join(run.strategies)} · {run.provider}/{run.model}"
            f"{offline} · {row.covered} of {row.labelled} labelled patches"
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("campaign") is None and "campaign" not in self.errors:
            self.add_error("campaign", NO_CAMPAIGN)
        return cleaned

    def chosen_run(self) -> JudgingRun | None:
        """The run asked for, or the best-covering one; None without a campaign or runs."""
        if not self.coverage:
            return None
        wanted = self.cleaned_data.get("run")
        for row in self.coverage:
            if wanted is None or row.run.pk == wanted:
                return row.run
        return None


class CalibrationChooseForm(forms.Form):
    """The team a lead picked from a ranking; ``calibration_create`` checks it is a candidate."""

    campaign = forms.ModelChoiceField(queryset=Campaign.objects.all(), widget=forms.HiddenInput)
    run = forms.ModelChoiceField(queryset=JudgingRun.objects.all(), widget=forms.HiddenInput)
    team = forms.CharField(error_messages={"required": NO_TEAM})

    def clean_team(self) -> list[str]:
        return [name.strip() for name in self.cleaned_data["team"].split(",") if name.strip()]
