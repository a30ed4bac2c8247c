"""Team calibration: the candidate teams, a hand-computed ranking with its tie-breaks, the
cost of a team (bug-level steps shared by the bug's patches, cached answers counted), the
loader's refusals, storing the chosen team, and the patches reports then leave out."""

import math
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from scipy import stats

from judging.calibration.selectors import (
    MISSING_NOTE,
    NO_TEAMS,
    ONE_LABEL,
    OTHER_DATASET,
    TOO_FEW,
    CalibrationError,
    calibration_evaluate,
    calibration_load,
    calibration_patch_ids,
    calibration_runs,
    run_threshold,
)
from judging.calibration.services import CALIBRATION_KEEP, NOT_A_CANDIDATE, calibration_create
from judging.calibration.teams import (
    NO_CANDIDATES,
    ONE_CLASS,
    TOO_FEW_PATCHES,
    CalibrationPatch,
    MemberResult,
    TeamEvaluation,
    candidate_teams,
    rank_key,
    team_evaluate,
    teams_rank,
)
from judging.consensus.rules import ConsensusRule
from judging.models import (
    Assignment,
    BugStep,
    Calibration,
    Campaign,
    JudgingRun,
    Label,
    StrategyResult,
)
from rubrics.models import Dataset, Patch
from sejury_web.audit import audit_events
from tests.judging.calibration.factories import campaign_of, llm_call, run_of
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE

# --- Candidate teams ---------------------------------------------------------------------


def test_candidate_teams_need_s1_and_a_second_llm_strategy() -> None:
    assert candidate_teams(["s3", "s1b", "bleu"]) == [("s1b", "s3")]  # registry order
    assert candidate_teams(["s1a", "s1b"]) == [("s1a", "s1b")]  # both variants may serve
    assert candidate_teams(["s1b", "bleu", "chrf", "edit"]) == []  # baselines never count
    assert candidate_teams(["s2", "s3", "s4"]) == []


def test_the_rubric_judge_alone_and_with_any_other_llm_strategy() -> None:
    assert candidate_teams(["rubric", "s1b", "s3", "bleu"]) == [
        ("rubric",),
        ("rubric", "s1b"),
        ("rubric", "s3"),
        ("s1b", "s3"),
        ("rubric", "s1b", "s3"),
    ]
    assert candidate_teams(["rubric", "s2", "s3"]) == [
        ("rubric",),
        ("rubric", "s2"),
        ("rubric", "s3"),
        ("rubric", "s2", "s3"),
    ]


def test_a_written_judge_counts_as_the_rubric_judge_does_after_the_built_ins() -> None:
    # Alone, and as what a team without S1 is built on; its members after the built-ins.
    assert candidate_teams(["minimalism@2", "s3", "bleu"]) == [
        ("minimalism@2",),
        ("s3", "minimalism@2"),
    ]
    assert candidate_teams(["zeta@1", "s1b", "alpha@3"]) == [
        ("alpha@3",),
        ("zeta@1",),
        ("s1b", "alpha@3"),
        ("s1b", "zeta@1"),
        ("alpha@3", "zeta@1"),
        ("s1b", "alpha@3", "zeta@1"),
    ]
    # Equal teams go smaller first, then built-ins before written judges, then by name.
    patches = [
        CalibrationPatch(n, label, {m: MemberResult(score) for m in ("s1b", "alpha@3", "zeta@1")})
        for n, (label, score) in enumerate([(VALID, 90.0), (INVALID, 10.0)])
    ]
    ranking = teams_rank(patches, ["zeta@1", "s1b", "alpha@3"])
    assert [evaluation.team for evaluation in ranking] == [
        ("alpha@3",),
        ("zeta@1",),
        ("s1b", "alpha@3"),
        ("s1b", "zeta@1"),
        ("alpha@3", "zeta@1"),
        ("s1b", "alpha@3", "zeta@1"),
    ]


def test_every_strategy_gives_110_candidates() -> None:
    # 7 LLM strategies: 120 subsets of two or more, minus the 11 of two or more among
    # s2–s5 alone (no S1, no rubric judge): 109; plus the rubric judge alone.
    every = ["rubric", "s1a", "s1b", "s2", "s3", "s4", "s5", "bleu", "chrf", "edit"]
    teams = candidate_teams(every)
    assert len(teams) == 110 == len(set(teams))
    assert all(len(team) >= 2 for team in teams[1:])


# --- A hand-computed ranking -----------------------------------------------------------

HUMAN = [VALID, VALID, VALID, INVALID, INVALID, INVALID]
S1A = [80, 60, 40, 50, 30, 20]
S1B = [70, 90, 50, 40, 60, 10]
S3 = S1B  # the same scores as S1b, twice the price: teams with S3 tie and cost more
COST = {"s1a": 0.001, "s1b": 0.001, "s3": 0.002}


def hand_case() -> list[CalibrationPatch]:
    return [
        CalibrationPatch(
            patch_id=index,
            consensus=HUMAN[index],
            members={
                name: MemberResult(score=scores[index], calls=1, cost_usd=COST[name])
                for name, scores in (("s1a", S1A), ("s1b", S1B), ("s3", S3))
            },
        )
        for index in range(6)
    ]


def test_a_team_by_hand() -> None:
    # s1a + s1b: means 75, 75, 45 | 45, 45, 15 against 1, 1, 1 | 0, 0, 0.
    # Kendall: 9 pairs across the classes: 7 concordant, 0 discordant, 2 tied (45 = 45);
    # 4 pairs tied in x (75-75, three 45s), 6 tied in y: τ-b = 7 / √((15−4)(15−6)) = 7/√99.
    # Spearman: x ranks 5.5, 5.5, 3, 3, 3, 1; y ranks 5, 5, 5, 2, 2, 2:
    # ρ = 10.5 / √(15 · 13.5). Verdicts at 50: V V I I I I: 5 of 6 agree, chance 1/2: κ = 2/3.
    evaluation = team_evaluate(["s1a", "s1b"], hand_case(), threshold=50)
    assert evaluation.kendall == pytest.approx(7 / math.sqrt(99))
    assert evaluation.spearman == pytest.approx(10.5 / math.sqrt(15 * 13.5))
    assert evaluation.mean == pytest.approx((7 / math.sqrt(99) + 10.5 / math.sqrt(202.5)) / 2)
    assert evaluation.kappa == pytest.approx(2 / 3)
    assert evaluation.calls_per_patch == 2
    assert evaluation.cost_per_patch == pytest.approx(0.002)
    assert evaluation.n == 6
    assert not evaluation.is_offline


def test_the_ranking_against_scipy_and_its_tie_breaks() -> None:
    ranking = teams_rank(hand_case(), ["s1a", "s1b", "s3", "bleu"], threshold=50)
    # s1a+s1b and s1a+s3 score alike (0.72): the cheaper first. s1b+s3 and all three order
    # the patches as s1b does (τ-b 7/√135): the cheaper, also smaller, first.
    assert [evaluation.team for evaluation in ranking] == [
        ("s1a", "s1b"),
        ("s1a", "s3"),
        ("s1b", "s3"),
        ("s1a", "s1b", "s3"),
    ]
    human = [1 if label == VALID else 0 for label in HUMAN]
    for evaluation in ranking:
        members = {"s1a": S1A, "s1b": S1B, "s3": S3}
        scores = [
            sum(members[name][i] for name in evaluation.team) / len(evaluation.team)
            for i in range(6)
        ]
        assert evaluation.kendall == pytest.approx(stats.kendalltau(scores, human).statistic)
        assert evaluation.spearman == pytest.approx(stats.spearmanr(scores, human).statistic)
    assert ranking[2].kendall == pytest.approx(7 / math.sqrt(135))
    costs = [evaluation.cost_per_patch for evaluation in ranking]
    assert costs == [
        pytest.approx(0.002),
        pytest.approx(0.003),
        pytest.approx(0.003),
        pytest.approx(0.004),
    ]


def test_equal_teams_go_smaller_first_then_registry_order() -> None:
    patches = [
        CalibrationPatch(i, label, {name: MemberResult(score) for name in ("s1b", "s2", "s3")})
        for i, (label, score) in enumerate([(VALID, 90.0), (INVALID, 10.0), (VALID, 80.0)])
    ]
    ranking = teams_rank(patches, ["s1b", "s2", "s3"])
    assert [evaluation.team for evaluation in ranking] == [
        ("s1b", "s2"),
        ("s1b", "s3"),
        ("s1b", "s2", "s3"),
    ]


def test_undefined_correlations_rank_last_and_unknown_costs_after_known() -> None:
    patches = [
        CalibrationPatch(
            i,
            label,
            {
                "rubric": MemberResult(100.0),  # constant: correlation undefined
                "s1b": MemberResult(score, cost_usd=None if i == 0 else 0.01),
                "s3": MemberResult(score, cost_usd=0.01),
            },
        )
        for i, (label, score) in enumerate([(VALID, 90.0), (INVALID, 10.0), (VALID, 70.0)])
    ]
    ranking = teams_rank(patches, ["rubric", "s1b", "s3"])
    assert ranking[-1].team == ("rubric",)
    assert ranking[-1].mean is None
    assert ranking[-1].kendall is None
    by_team = {evaluation.team: evaluation for evaluation in ranking}
    assert by_team["s1b", "s3"].cost_per_patch is None  # one unknown price: unknown
    assert by_team["rubric", "s1b"].cost_per_patch is None
    # rubric+s1b+s3 and s1b+s3 order patches alike; the priced one comes first.
    assert ranking.index(by_team["rubric", "s1b", "s3"]) > ranking.index(by_team["s1b", "s3"])


def test_the_verdict_threshold_is_on_0_to_100() -> None:
    patches = hand_case()
    strict = team_evaluate(["s1a", "s1b"], patches, threshold=80)  # nothing reaches 80
    assert strict.kappa == 0.0
    lenient = team_evaluate(["s1a", "s1b"], patches, threshold=45)  # 5 VALID, 1 INVALID
    assert lenient.kappa == pytest.approx((4 / 6 - (5 / 6 * 3 / 6 + 1 / 6 * 3 / 6)) / (1 - 0.5))


@pytest.mark.parametrize(
    ("patches", "strategies", "message"),
    [
        (hand_case()[:1], ["s1a", "s1b"], TOO_FEW_PATCHES.format(n=1, min=2)),
        (hand_case()[:3], ["s1a", "s1b"], ONE_CLASS.format(label=VALID)),
        (hand_case(), ["s2", "s3"], NO_CANDIDATES.format(strategies="s2, s3")),
    ],
)
def test_teams_rank_refuses(
    patches: list[CalibrationPatch], strategies: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^teams_rank") as refused:
        teams_rank(patches, strategies)
    assert str(refused.value) == message


def test_offline_members_mark_their_teams() -> None:
    patches = [
        CalibrationPatch(
            i,
            label,
            {"s1b": MemberResult(score, is_offline=True), "s3": MemberResult(score)},
        )
        for i, (label, score) in enumerate([(VALID, 90.0), (INVALID, 10.0)])
    ]
    assert teams_rank(patches, ["s1b", "s3"])[0].is_offline


# --- From the database -------------------------------------------------------------------

pytest_db = pytest.mark.django_db


@pytest.fixture
def dataset() -> Dataset:
    """One bug with four patches, P-0 … P-3."""
    dataset = DatasetFactory(slug="calib")
    bug = BugFactory(dataset=dataset, key="B")
    for n in range(4):
        PatchFactory(bug=bug, key=f"P-{n}")
    return dataset


def patches(dataset: Dataset) -> list[Patch]:
    return list(dataset.patches.order_by("key"))


@pytest_db
def test_the_cost_of_a_team_counts_every_call_and_shares_the_bug_step(dataset: Dataset) -> None:
    p0, p1, p2, _ = patches(dataset)
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (INVALID, INVALID)})
    run = run_of(
        dataset,
        ["s1b", "s4", "bleu"],
        {p: {"s1b": 80.0, "s4": 70.0, "bleu": 50.0} for p in (p0, p1, p2)},  # P-3 not judged
    )
    run.judgments.get(patch=p1).results.filter(strategy="s1b").update(score=10.0)
    # The s4 step was asked once for the bug, at $0.006; P-1's s4 answer came from the cache
    # (the result records nothing spent) yet running the team would pay for it.
    BugStep.objects.create(
        run=run, bug=p0.bug, strategy="s4", prompt_version="t", call_id=llm_call("0.006")
    )
    cached = run.judgments.get(patch=p1).results.get(strategy="s4")
    StrategyResult.objects.filter(pk=cached.pk).update(
        cached_call_ids=cached.call_ids, provider_calls=0, cost_usd=Decimal(0)
    )

    data = calibration_load(campaign=campaign, run=run)

    assert data.strategies == ["s1b", "s4"]
    member = data.patches[1].members["s4"]
    # Shared by the bug's three patches in the run (not only the two labelled ones).
    assert member.calls == pytest.approx(1 + 1 / 3)
    assert member.cost_usd == pytest.approx(0.001 + 0.006 / 3)
    (team,) = calibration_evaluate(campaign=campaign, run=run).ranking
    assert team.team == ("s1b", "s4")
    assert team.calls_per_patch == pytest.approx(2 + 1 / 3)
    assert team.cost_per_patch == pytest.approx(0.002 + 0.002)
    assert (team.kendall, team.n) == (pytest.approx(1.0), 2)


@pytest_db
def test_an_unknown_price_makes_the_cost_unknown(dataset: Dataset) -> None:
    p0, p1, *_ = patches(dataset)
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (INVALID, INVALID)})
    run = run_of(
        dataset, ["s1b", "s3"], {p0: {"s1b": 90, "s3": 80}, p1: {"s1b": 5, "s3": 0}}, cost=None
    )
    (team,) = calibration_evaluate(campaign=campaign, run=run).ranking
    assert team.cost_per_patch is None
    assert team.calls_per_patch == 2


@pytest_db
def test_the_loader_leaves_out_patches_without_results_or_consensus(dataset: Dataset) -> None:
    p0, p1, p2, p3 = patches(dataset)
    campaign = campaign_of(
        dataset,
        {
            p0: (VALID, VALID, UNSURE),
            p1: (INVALID, INVALID),
            p2: (VALID, VALID),
            p3: (VALID, INVALID),
        },
    )
    run = run_of(
        dataset,
        ["s1a", "s1b"],
        {
            p0: {"s1a": 90, "s1b": 70},
            p1: {"s1a": 20, "s1b": 30},
            p2: {"s1a": 60, "s1b": None},  # s1b failed on P-2
            p3: {"s1a": 50, "s1b": 50},
        },
        threshold=3.0,
        scale_lo=1.0,
        scale_hi=5.0,
    )
    data = calibration_load(campaign=campaign, run=run)
    assert [patch.patch_id for patch in data.patches] == [p0.pk, p1.pk]
    assert [patch.consensus for patch in data.patches] == [VALID, INVALID]
    assert data.missing == ["P-2"]
    assert data.without_consensus == 1  # P-3 is disputed
    assert data.threshold == run_threshold(run) == 50.0
    assert data.offline == []


@pytest_db
def test_the_loader_and_the_runs_use_the_campaigns_consensus_rule(dataset: Dataset) -> None:
    p0, p1, p2, p3 = patches(dataset)
    campaign = campaign_of(
        dataset,
        {
            p0: (VALID, VALID),
            p1: (INVALID, VALID, INVALID),  # 2 of 3: a consensus under the majority rule only
            p2: (VALID, VALID, VALID, INVALID, INVALID),  # 3 of 5: no consensus either way
            p3: (VALID, INVALID, UNSURE),
        },
    )
    run = run_of(dataset, ["s1b", "s3"], {p: {"s1b": 50, "s3": 50} for p in (p0, p1, p2, p3)})
    with pytest.raises(CalibrationError, match="1 of the campaign's patches"):
        calibration_load(campaign=campaign, run=run)  # unanimous: only P-0
    assert calibration_runs(campaign) == []

    Campaign.objects.filter(pk=campaign.pk).update(consensus_rule=ConsensusRule.MAJORITY)
    campaign.refresh_from_db()
    data = calibration_load(campaign=campaign, run=run)
    assert [(p.patch_id, p.consensus) for p in data.patches] == [(p0.pk, VALID), (p1.pk, INVALID)]
    assert data.without_consensus == 2
    assert [(row.run, row.covered, row.labelled) for row in calibration_runs(campaign)] == [
        (run, 2, 2)
    ]
    # The dataset's own rule plays no part in a campaign's calibration.
    Dataset.objects.filter(pk=dataset.pk).update(consensus_rule=ConsensusRule.UNANIMOUS)
    assert len(calibration_load(campaign=campaign, run=run).patches) == 2


@pytest_db
def test_the_loader_marks_offline_strategies(dataset: Dataset) -> None:
    p0, p1, *_ = patches(dataset)
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (INVALID, INVALID)})
    run = run_of(dataset, ["s1b", "s3"], {p0: {"s1b": 90, "s3": 80}, p1: {"s1b": 5, "s3": 0}})
    StrategyResult.objects.filter(strategy="s3").update(is_offline=True)
    outcome = calibration_evaluate(campaign=campaign, run=run)
    assert outcome.data.offline == ["s3"]
    assert outcome.best.is_offline


@pytest_db
def test_the_loader_refuses_a_run_of_another_dataset(dataset: Dataset) -> None:
    p0, p1, *_ = patches(dataset)
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (INVALID, INVALID)})
    other = DatasetFactory(name="Elsewhere")
    run = run_of(other, ["s1b", "s3"], {})
    with pytest.raises(CalibrationError) as refused:
        calibration_evaluate(campaign=campaign, run=run)
    assert str(refused.value) == OTHER_DATASET.format(
        run=run.pk, run_dataset=other, campaign=campaign, dataset=dataset
    )


@pytest_db
def test_the_loader_refuses_a_run_without_candidate_teams(dataset: Dataset) -> None:
    p0, p1, *_ = patches(dataset)
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (INVALID, INVALID)})
    run = run_of(dataset, ["s2", "s3", "bleu"], {p0: {"s2": 1, "s3": 1, "bleu": 1}})
    with pytest.raises(CalibrationError) as refused:
        calibration_evaluate(campaign=campaign, run=run)
    assert str(refused.value) == NO_TEAMS.format(run=run.pk, team="s2, s3, bleu")


@pytest_db
def test_the_loader_refuses_fewer_than_two_patches(dataset: Dataset) -> None:
    p0, p1, *_ = patches(dataset)
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (INVALID, INVALID)})
    run = run_of(dataset, ["s1b", "s3"], {p0: {"s1b": 90, "s3": 80}, p1: {"s1b": None, "s3": 0}})
    with pytest.raises(CalibrationError) as refused:
        calibration_evaluate(campaign=campaign, run=run)
    missing = MISSING_NOTE.format(missing=1)
    assert str(refused.value) == TOO_FEW.format(n=1, run=run.pk, min=2, missing=missing)


@pytest_db
def test_the_loader_refuses_a_single_label_class(dataset: Dataset) -> None:
    p0, p1, *_ = patches(dataset)
    campaign = campaign_of(dataset, {p0: (VALID, VALID), p1: (VALID, VALID)})
    run = run_of(dataset, ["s1b", "s3"], {p0: {"s1b": 90, "s3": 80}, p1: {"s1b": 5, "s3": 0}})
    with pytest.raises(CalibrationError) as refused:
        calibration_evaluate(campaign=campaign, run=run)
    assert str(refused.value) == ONE_LABEL.format(n=2, label=VALID)


@pytest.fixture
def calibrated(dataset: Dataset) -> tuple[Campaign, JudgingRun]:
    p0, p1, p2, _ = patches(dataset)
    campaign = campaign_of(
        dataset, {p0: (VALID, VALID), p1: (INVALID, INVALID), p2: (VALID, VALID)}
    )
    run = run_of(
        dataset,
        ["s1a", "s1b", "s3", "bleu"],
        {
            p0: {"s1a": 90, "s1b": 70, "s3": 60, "bleu": 10},
            p1: {"s1a": 20, "s1b": 80, "s3": 30, "bleu": 10},
            p2: {"s1a": 60, "s1b": 40, "s3": 70, "bleu": 10},
        },
    )
    return campaign, run


@pytest_db
def test_choosing_a_team_stores_it_with_the_ranking(
    calibrated: tuple[Campaign, JudgingRun], lead: User
) -> None:
    campaign, run = calibrated
    stored = calibration_create(campaign=campaign, run=run, team=["s3", "s1a"], actor=lead)
    stored.refresh_from_db()
    assert stored.team == ["s1a", "s3"]  # registry order
    assert (stored.campaign, stored.run, stored.chosen_by, stored.patch_count) == (
        campaign,
        run,
        lead,
        3,
    )
    [event] = audit_events(stored)  # the lead's choice is in the audit trail
    assert (event.actor, event.action, event.detail["team"]) == (
        lead,
        CALIBRATION_KEEP,
        stored.team,
    )
    ranking = calibration_evaluate(campaign=campaign, run=run).ranking
    assert [row["team"] for row in stored.ranking] == [list(e.team) for e in ranking]
    assert set(stored.ranking[0]) >= {"kendall", "spearman", "mean", "kappa", "n", "is_offline"}
    assert set(stored.ranking[0]) >= {"calls_per_patch", "cost_per_patch"}


@pytest.mark.parametrize("team", [["s3"], ["s1b", "bleu"], ["s1a", "s1a", "s3"], ["s2", "s1a"]])
@pytest_db
def test_only_a_candidate_team_can_be_chosen(
    calibrated: tuple[Campaign, JudgingRun], lead: User, team: list[str]
) -> None:
    campaign, run = calibrated
    with pytest.raises(CalibrationError) as refused:
        calibration_create(campaign=campaign, run=run, team=team, actor=lead)
    assert str(refused.value) == NOT_A_CANDIDATE.format(team=", ".join(team), run=run.pk)
    assert not Calibration.objects.exists()


@pytest_db
def test_reports_of_the_calibrated_team_leave_out_the_campaign(
    calibrated: tuple[Campaign, JudgingRun], lead: User, dataset: Dataset
) -> None:
    campaign, run = calibrated
    stored = calibration_create(campaign=campaign, run=run, team=["s1a", "s3"], actor=lead)
    later = run_of(dataset, ["s3", "s1a"], {})
    assert calibration_patch_ids(later) == (
        stored,
        set(Assignment.objects.filter(campaign=campaign).values_list("patch_id", flat=True)),
    )
    assert calibration_patch_ids(run_of(dataset, ["s1a", "s3", "bleu"], {})) == (None, set())
    assert calibration_patch_ids(run_of(DatasetFactory(), ["s1a", "s3"], {})) == (None, set())
    newer = calibration_create(campaign=campaign, run=run, team=["s1a", "s3"], actor=lead)
    assert calibration_patch_ids(later)[0] == newer


@pytest_db
def test_the_runs_to_calibrate_with(
    calibrated: tuple[Campaign, JudgingRun], dataset: Dataset
) -> None:
    campaign, run = calibrated
    p0, p1, p2, _ = patches(dataset)
    partial = run_of(dataset, ["s1b", "s3"], {p0: {"s1b": 1, "s3": 1}, p1: {"s1b": 1, "s3": None}})
    wider = run_of(
        dataset, ["s1b", "s2"], {p: {"s1b": 1, "s2": 1} for p in (p0, p1, p2)}, name="wider"
    )
    run_of(dataset, ["s1b", "bleu"], {p: {"s1b": 1, "bleu": 1} for p in (p0, p1, p2)})  # one LLM
    run_of(dataset, ["s1b", "s3"], {p: {"s1b": 1, "s3": 1} for p in (p0, p1, p2)}, kind="preview")
    assert partial.pk  # covers one labelled patch only: not listed
    coverage = calibration_runs(campaign)
    assert [(row.run, row.covered, row.labelled) for row in coverage] == [
        (wider, 3, 3),
        (run, 3, 3),
    ]


def test_a_tie_in_correlation_and_cost_goes_to_the_better_kappa() -> None:
    """With the offline model every cost is $0: κ of the verdicts then decides, before size."""

    def evaluation(team: tuple[str, ...], kappa: float | None) -> TeamEvaluation:
        return TeamEvaluation(
            team=team, kendall=0.5, spearman=0.5, mean=0.5, kappa=kappa,
            calls_per_patch=2.0, cost_per_patch=0.0, n=6, is_offline=True,
        )  # fmt: skip

    tied = [
        evaluation(("rubric", "s1a"), 0.0),
        evaluation(("s1b", "s2", "s3"), 0.6),
        evaluation(("s1a", "s3"), None),
        evaluation(("s1b", "s3"), 0.6),
    ]
    ranked = sorted(tied, key=rank_key)
    assert [e.team for e in ranked] == [
        ("s1b", "s3"),  # κ 0.6, two members
        ("s1b", "s2", "s3"),  # κ 0.6, three members
        ("rubric", "s1a"),  # κ 0
        ("s1a", "s3"),  # κ undefined
    ]
