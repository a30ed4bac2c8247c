"""Team calibration's reads: a campaign's consensus and a run's member results in, the
ranked teams out (``judging.calibration.teams``); the calibration page's campaigns and runs,
and the calibrations kept (``judging.calibration.services`` keeps one).

No model is called: every score and every cost is one the run already recorded. A team's
cost is what running it would cost, not what this run paid: every call a member needed
counts, the cache's answers too, priced from their ``LLMCall`` rows; a bug-level first step
(s4, s5) is shared by the bug's patches in the run.
"""

import dataclasses
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

from django.core.paginator import Page, Paginator
from django.db.models import Case, Count, QuerySet, When

from judging.annotations.selectors import campaign_patch_ids
from judging.calibration.teams import (
    MIN_PATCHES,
    MIN_TEAM_SIZE,
    CalibrationPatch,
    MemberResult,
    TeamEvaluation,
    candidate_teams,
    llm_members,
    teams_rank,
)
from judging.consensus.rules import PatchConsensus, consensus_rule_for, dataset_consensus
from judging.models import BugStep, Calibration, Campaign, JudgingRun, PatchJudgment, StrategyResult
from judging.strategies import get_strategy
from rubrics.models import Dataset, Patch
from sejury_web.llm.models import LLMCall

OTHER_DATASET = "run {run} judged {run_dataset}, and campaign “{campaign}” labels {dataset}"
NO_TEAMS = (
    "run {run} has no candidate team: it needs s1a or s1b and another LLM strategy, or the "
    "rubric judge (its team: {team})"
)
TOO_FEW = (
    "{n} of the campaign's patches have a consensus and a result of every LLM strategy of run "
    "{run}; ranking teams needs at least {min}{missing}"
)
MISSING_NOTE = " ({missing} labelled patches lack a result)"
ONE_LABEL = (
    "the consensus of all {n} patches is {label}: a correlation with the human label is "
    "undefined; the campaign needs both VALID and INVALID patches"
)
CALIBRATIONS_PER_PAGE = 25


class CalibrationError(ValueError):
    """Teams cannot be ranked from this campaign and run; the message says why."""


def run_threshold(run: JudgingRun) -> float:
    """The run's threshold mapped back from its scale to the members' 0–100."""
    return 100.0 * (run.threshold - run.scale_lo) / (run.scale_hi - run.scale_lo)


@dataclasses.dataclass(frozen=True)
class CalibrationSet:
    """What a campaign and a run give to rank teams on."""

    campaign: Campaign
    run: JudgingRun
    strategies: list[str]  # the run's LLM strategies, registry order
    threshold: float  # 0–100
    patches: list[CalibrationPatch]
    missing: list[str]  # keys of labelled patches left out: a member's result is missing
    without_consensus: int  # the campaign's patches with no consensus yet
    offline: list[str]  # strategies whose scores came from the offline heuristic


@dataclasses.dataclass(frozen=True)
class CalibrationOutcome:
    data: CalibrationSet
    ranking: list[TeamEvaluation]  # best first

    @property
    def best(self) -> TeamEvaluation:
        return self.ranking[0]


def _decimal_sum(values: list[Decimal | None]) -> Decimal | None:
    """The sum, or None when a value is unknown: a cost is never understated."""
    total = Decimal(0)
    for value in values:
        if value is None:
            return None
        total += value
    return total


StepShare = dict[tuple[int, str], tuple[float, Decimal | None]]


def _bug_steps(run: JudgingRun, strategies: list[str], bug_ids: set[int]) -> StepShare:
    """(bug id, strategy) → (calls, cost) of each bug-level step, shared by the bug's patches."""
    stepped = [name for name in strategies if get_strategy(name).bug_step]
    if not stepped or not bug_ids:
        return {}
    judged = dict(
        PatchJudgment.objects.filter(run=run, patch__bug_id__in=bug_ids)
        .values("patch__bug_id")
        .annotate(n=Count("pk"))
        .values_list("patch__bug_id", "n")
    )
    steps = BugStep.objects.filter(run=run, strategy__in=stepped, bug_id__in=bug_ids)
    rows = list(steps.values_list("bug_id", "strategy", "call_id"))
    costs = dict(
        LLMCall.objects.filter(pk__in=[call for *_, call in rows if call]).values_list(
            "pk", "cost_usd"
        )
    )
    shared: StepShare = {}
    for bug_id, name, call_id in rows:
        patches = judged.get(bug_id) or 1
        cost = costs.get(call_id) if call_id else Decimal(0)
        shared[bug_id, name] = (
            (1.0 if call_id else 0.0) / patches,
            None if cost is None else cost / patches,
        )
    return shared


def _campaign_consensus(campaign: Campaign, patch_ids: set[int]) -> dict[int, PatchConsensus]:
    """The consensus of the campaign's patches under the campaign's rule."""
    rule = consensus_rule_for(campaign.dataset, campaign)
    return dataset_consensus(campaign.dataset, patch_ids=sorted(patch_ids), rule=rule)


def calibration_load(*, campaign: Campaign, run: JudgingRun) -> CalibrationSet:
    """The campaign's patches with a consensus (under the campaign's rule) and a DONE result
    of every LLM member of run.

    Refuses (``CalibrationError``) a run of another dataset, a run without candidate teams,
    and fewer than two such patches or a single consensus label among them.
    """
    if run.dataset_id != campaign.dataset_id:
        raise CalibrationError(
            OTHER_DATASET.format(
                run=run.pk, run_dataset=run.dataset, campaign=campaign, dataset=campaign.dataset
            )
        )
    strategies = llm_members(run.strategies)
    if not candidate_teams(strategies):
        raise CalibrationError(NO_TEAMS.format(run=run.pk, team=", ".join(run.strategies)))
    assigned = campaign_patch_ids(campaign)
    labelled = {
        patch_id: state.consensus
        for patch_id, state in _campaign_consensus(campaign, assigned).items()
        if state.consensus
    }
    rows = list(
        StrategyResult.objects.filter(
            judgment__run=run,
            judgment__patch_id__in=list(labelled),
            strategy__in=strategies,
            status=StrategyResult.Status.DONE,
            score__isnull=False,
        ).values_list(
            "judgment__patch_id",
            "judgment__patch__bug_id",
            "strategy",
            "score",
            "call_ids",
            "is_offline",
        )
    )
    call_ids = {call for row in rows for call in row[4]}
    costs = dict(LLMCall.objects.filter(pk__in=call_ids).values_list("pk", "cost_usd"))
    bugs = {row[1] for row in rows}
    shared = _bug_steps(run, strategies, bugs)
    members: dict[int, dict[str, MemberResult]] = {}
    offline: set[str] = set()
    for patch_id, bug_id, name, score, calls, is_offline in rows:
        step_calls, step_cost = shared.get((bug_id, name), (0.0, Decimal(0)))
        cost = _decimal_sum([*(costs.get(call) for call in calls), step_cost])
        members.setdefault(patch_id, {})[name] = MemberResult(
            score=float(score or 0.0),  # never None: the query asks for a score
            calls=len(calls) + step_calls,
            cost_usd=None if cost is None else float(cost),
            is_offline=is_offline,
        )
        if is_offline:
            offline.add(name)
    complete = sorted(pid for pid in labelled if len(members.get(pid, {})) == len(strategies))
    missing = sorted(labelled.keys() - set(complete))
    _check_enough(run, [labelled[pid] for pid in complete], missing=len(missing))
    return CalibrationSet(
        campaign=campaign,
        run=run,
        strategies=strategies,
        threshold=run_threshold(run),
        patches=[CalibrationPatch(pid, labelled[pid], members[pid]) for pid in complete],
        missing=list(Patch.objects.filter(pk__in=missing).values_list("key", flat=True)),
        without_consensus=len(assigned - labelled.keys()),
        offline=[name for name in strategies if name in offline],
    )


def _check_enough(run: JudgingRun, consensus: list[str], *, missing: int) -> None:
    """Refuse what no correlation can be computed on: under two patches, or one class."""
    n = len(consensus)
    if n < MIN_PATCHES:
        note = MISSING_NOTE.format(missing=missing) if missing else ""
        raise CalibrationError(TOO_FEW.format(n=n, run=run.pk, min=MIN_PATCHES, missing=note))
    classes = set(consensus)
    if len(classes) == 1:
        raise CalibrationError(ONE_LABEL.format(n=n, label=classes.pop()))


def calibration_evaluate(*, campaign: Campaign, run: JudgingRun) -> CalibrationOutcome:
    """Every candidate team of the run ranked on the campaign's consensus."""
    data = calibration_load(campaign=campaign, run=run)
    ranking = teams_rank(data.patches, data.strategies, threshold=data.threshold)
    return CalibrationOutcome(data, ranking)


def calibration_campaigns() -> QuerySet[Campaign]:
    """Every campaign, calibration campaigns first, newest first."""
    calibration_first = Case(When(purpose=Campaign.Purpose.CALIBRATION, then=0), default=1)
    return Campaign.objects.select_related("dataset").order_by(
        calibration_first, "-created_at", "-id"
    )


@dataclasses.dataclass(frozen=True)
class RunCoverage:
    run: JudgingRun
    covered: int  # labelled patches with a DONE result of every LLM strategy of the run
    labelled: int  # the campaign's patches with a consensus


def calibration_runs(campaign: Campaign) -> list[RunCoverage]:
    """The runs a team can be picked from for the campaign: same dataset, at least two LLM
    strategies, and results on at least two of its labelled patches; most coverage first."""
    runs = [
        run
        for run in JudgingRun.objects.filter(dataset=campaign.dataset, kind=JudgingRun.Kind.RUN)
        if len(llm_members(run.strategies)) >= MIN_TEAM_SIZE and candidate_teams(run.strategies)
    ]
    consensus = _campaign_consensus(campaign, campaign_patch_ids(campaign))
    labelled = [patch_id for patch_id, state in consensus.items() if state.consensus]
    if not runs or not labelled:
        return []
    done = (
        StrategyResult.objects.filter(
            judgment__run__in=runs,
            judgment__patch_id__in=labelled,
            status=StrategyResult.Status.DONE,
            score__isnull=False,
            strategy__in={name for run in runs for name in llm_members(run.strategies)},
        )
        .values("judgment__run_id", "judgment__patch_id")
        .annotate(members=Count("strategy", distinct=True))
        .values_list("judgment__run_id", "members")
    )
    needed = {run.pk: len(llm_members(run.strategies)) for run in runs}
    covered = Counter(run_id for run_id, members in done if members == needed[run_id])
    coverage = [RunCoverage(run, covered[run.pk], len(labelled)) for run in runs]
    coverage = [row for row in coverage if row.covered >= MIN_PATCHES]
    return sorted(coverage, key=lambda row: -row.covered)  # stable: newest first within


def dataset_calibrations(dataset: Dataset) -> QuerySet[Calibration]:
    """The dataset's calibrations, newest first (the history under the calibration pages)."""
    return _calibrations_of(dataset.pk)


def _calibrations_of(dataset_id: int) -> QuerySet[Calibration]:
    return Calibration.objects.filter(campaign__dataset_id=dataset_id).select_related(
        "campaign__dataset", "run", "chosen_by"
    )


def calibrations_page(*, page: int | str = 1) -> Page:
    """Every kept calibration, newest first, a page at a time (the calibration page before a
    campaign is picked): a count and one query, however many there are."""
    calibrations = Calibration.objects.select_related("campaign__dataset", "run", "chosen_by")
    return Paginator(calibrations.defer("ranking"), CALIBRATIONS_PER_PAGE).get_page(page)


def calibration_kept(*, campaign: Campaign, run: JudgingRun) -> Calibration | None:
    """The newest calibration kept from this campaign and run: reopening it shows its team
    picked in the ranking."""
    kept = Calibration.objects.filter(campaign=campaign, run=run).defer("ranking")
    return kept.select_related("chosen_by").first()


def calibration_get(*, calibration_id: int) -> Calibration:
    """One calibration with what its page shows; ``Calibration.DoesNotExist`` otherwise."""
    return Calibration.objects.select_related(
        "campaign", "campaign__dataset", "run", "chosen_by"
    ).get(pk=calibration_id)


def calibration_patch_ids(run: JudgingRun) -> tuple[Calibration | None, set[int]]:
    """The calibration whose chosen team is this run's team (as a set) on its dataset, and
    its campaign's patches, which reports of the run leave out (paper 000 §III-C); the newest
    such calibration wins. ``(None, set())`` when the run's team was not calibrated."""
    [found] = runs_calibration_patch_ids([run])
    return found


def runs_calibration_patch_ids(
    runs: Sequence[JudgingRun],
) -> list[tuple[Calibration | None, set[int]]]:
    """``calibration_patch_ids`` of each run, reading each dataset's calibrations once (a
    report's runs share theirs)."""
    calibrations: dict[int, list[Calibration]] = {}
    result: list[tuple[Calibration | None, set[int]]] = []
    for run in runs:
        if run.dataset_id not in calibrations:
            calibrations[run.dataset_id] = list(_calibrations_of(run.dataset_id))
        team = set(run.strategies)
        chosen = next((c for c in calibrations[run.dataset_id] if set(c.team) == team), None)
        result.append((chosen, campaign_patch_ids(chosen.campaign)) if chosen else (None, set()))
    return result
