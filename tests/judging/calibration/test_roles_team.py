"""The ``roles`` strategy in calibration: a candidate member like any LLM strategy, whose four
calls per patch count in the team's cost, and a team a lead can keep."""

import pytest
from django.contrib.auth.models import User

from judging.calibration.selectors import calibration_evaluate
from judging.calibration.services import calibration_create
from judging.calibration.teams import candidate_teams
from judging.models import Label
from tests.judging.calibration.factories import campaign_of
from tests.judging.factories import bug_with_patches
from tests.judging.helpers import Judge
from tests.rubrics.factories import PatchFactory

VALID, INVALID = Label.VALID, Label.INVALID


def test_roles_is_a_candidate_member_with_s1_or_the_rubric_judge() -> None:
    assert candidate_teams(["roles", "s1b", "bleu"]) == [("s1b", "roles")]
    assert candidate_teams(["rubric", "roles"]) == [("rubric",), ("rubric", "roles")]
    assert candidate_teams(["s3", "roles"]) == []  # neither S1 nor the rubric judge


@pytest.mark.django_db
def test_a_run_with_roles_calibrates_counting_four_calls_per_patch(
    judge_now: Judge, lead: User
) -> None:
    bug = bug_with_patches(1)
    PatchFactory(bug=bug, key=f"{bug.key}-ref", diff=bug.reference_patch)
    wrong, right = bug.patches.order_by("key")
    run = judge_now(dataset=bug.dataset, strategies="s1b,roles", context="reference")
    campaign = campaign_of(bug.dataset, {wrong: (INVALID, INVALID), right: (VALID, VALID)})

    outcome = calibration_evaluate(campaign=campaign, run=run)

    assert outcome.data.strategies == ["s1b", "roles"]
    assert outcome.data.offline == ["s1b", "roles"]
    (team,) = outcome.ranking
    assert team.team == ("s1b", "roles")
    assert team.calls_per_patch == 1 + 4
    assert team.is_offline
    kept = calibration_create(campaign=campaign, run=run, team=["roles", "s1b"], actor=lead)
    assert kept.team == ["s1b", "roles"]
