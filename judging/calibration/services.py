"""Team calibration's write: the team a lead chose kept, with the ranking it was chosen from
(``judging.calibration.selectors`` ranks the teams)."""

from django.contrib.auth.models import User
from django.db import transaction

from judging.calibration.selectors import CalibrationError, calibration_evaluate
from judging.calibration.teams import member_order
from judging.models import Calibration, Campaign, JudgingRun
from sejury_web.audit import audit_record

NOT_A_CANDIDATE = "{team} is not a candidate team of run {run}"

CALIBRATION_KEEP = "calibration.keep"  # audit action (sejury_web.audit)


def calibration_create(
    *, campaign: Campaign, run: JudgingRun, team: list[str], actor: User
) -> Calibration:
    """Store the lead's team with the ranking it was chosen from (recomputed, not trusted)."""
    outcome = calibration_evaluate(campaign=campaign, run=run)
    by_team = {evaluation.team: evaluation for evaluation in outcome.ranking}
    chosen = tuple(sorted(set(team), key=member_order))
    if chosen not in by_team or len(chosen) != len(team):
        raise CalibrationError(NOT_A_CANDIDATE.format(team=", ".join(team), run=run.pk))
    with transaction.atomic():
        calibration = Calibration.objects.create(
            campaign=campaign,
            run=run,
            team=list(chosen),
            ranking=[evaluation.as_json() for evaluation in outcome.ranking],
            patch_count=len(outcome.data.patches),
            chosen_by=actor,
        )
        detail = {"team": list(chosen), "campaign": campaign.pk, "run": run.pk}
        audit_record(actor=actor, action=CALIBRATION_KEEP, target=calibration, detail=detail)
    return calibration
