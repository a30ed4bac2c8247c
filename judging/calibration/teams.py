"""Team calibration (paper 000 §III-B): every candidate team scored against the human
consensus of a few labelled patches, from member scores a run already has. Pure: no ORM.

Candidate teams are built from the run's LLM strategies (the match-based baselines bleu,
chrf and edit are never members):

- every subset of at least two of them that contains ``s1a`` or ``s1b`` (paper 000 requires
  S1, "the most fundamental strategy"; either variant counts, and both may be members);
- the ``rubric``-based teams: the judge of paper 004 alone, and with any other LLM
  strategies (``rubric`` + ``s2``, say, which has no S1: the rubric judge stands in for it);
- a written judge (issue 29; a member ``name@N``, always an LLM judge) counts as the rubric
  judge does: alone, and as what a team of other LLM strategies is built on. Its members come
  after the built-in ones, by name.

A team's score on a patch is its members' mean (0–100, ``ensemble.combine``); its verdict is
VALID when the mean reaches the run's threshold mapped back to 0–100. Against the consensus
(VALID → 1, INVALID → 0) it gets Kendall's τ-b and Spearman's ρ (the correlations paper 000
ranks teams by), their mean, and Cohen's κ of its verdicts. Teams are ranked by the mean
correlation, best first, undefined last; ties go to the cheaper team, then the one with the
higher κ, then the smaller one.
"""

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from judging.agreement import cohen_kappa, kendall_tau_b, spearman_rho
from judging.models import Label
from judging.strategies import STRATEGIES, VERSIONED, get_strategy
from judging.strategies.ensemble import combine

S1_VARIANTS = frozenset({"s1a", "s1b"})
RUBRIC = "rubric"
MIN_TEAM_SIZE = 2
MIN_PATCHES = 2
# Correlations equal up to floating-point noise are a tie, decided by cost.
TIE_DIGITS = 12

TOO_FEW_PATCHES = "teams_rank: {n} patch(es); correlations need at least {min}"
ONE_CLASS = (
    "teams_rank: every patch's consensus is {label}; a correlation with the human label needs "
    "both VALID and INVALID patches"
)
NO_CANDIDATES = (
    "teams_rank: no candidate team among {strategies}; a team needs s1a or s1b and another "
    "LLM strategy, or the rubric judge"
)
MISSING_MEMBER = "teams_rank: patch {patch} has no result of {strategy}"
BAD_CONSENSUS = "teams_rank: patch {patch} has consensus {label!r}; expected VALID or INVALID"


@dataclasses.dataclass(frozen=True)
class MemberResult:
    """One strategy on one patch: its score, and what running it there takes."""

    score: float  # 0–100
    calls: float = 0.0  # LLM calls, a bug-level first step's shared among the bug's patches
    cost_usd: float | None = 0.0  # what those calls cost; None when a price is unknown
    is_offline: bool = False  # scored by the offline heuristic, not an LLM


@dataclasses.dataclass(frozen=True)
class CalibrationPatch:
    patch_id: int
    consensus: str  # VALID or INVALID
    members: Mapping[str, MemberResult]


@dataclasses.dataclass(frozen=True)
class TeamEvaluation:
    team: tuple[str, ...]  # registry order
    kendall: float | None
    spearman: float | None
    mean: float | None  # (τ-b + ρ) / 2; None when either is undefined
    kappa: float | None
    calls_per_patch: float
    cost_per_patch: float | None
    n: int
    is_offline: bool  # a member's scores came from the offline heuristic

    @property
    def key(self) -> str:
        """The team as a form value and in URLs: "s1b,s3"."""
        return ",".join(self.team)

    def as_json(self) -> dict[str, Any]:
        """A row of ``Calibration.ranking``."""
        return {**dataclasses.asdict(self), "team": list(self.team)}


def is_written(name: str) -> bool:
    """Whether ``name`` is a written judge's member (``name@N``), not a built-in strategy."""
    return name not in STRATEGIES and VERSIONED.match(name) is not None


def member_order(name: str) -> tuple[int, str]:
    """Where a member goes in a team: the built-in strategies in registry order, then the
    written judges by name."""
    order = list(STRATEGIES)
    return (order.index(name), "") if name in STRATEGIES else (len(order), name)


def llm_members(strategies: Sequence[str]) -> list[str]:
    """The strategies a team may have among ``strategies``: the LLM ones (built-in, or
    written judges'), in ``member_order``."""
    chosen = set(strategies)
    builtin = [name for name in STRATEGIES if name in chosen and get_strategy(name).uses_llm]
    return builtin + sorted(name for name in chosen if is_written(name))


def candidate_teams(strategies: Sequence[str]) -> list[tuple[str, ...]]:
    """Every team to try from a run's strategies, each in ``member_order``."""
    members = llm_members(strategies)
    alone = [name for name in members if name == RUBRIC or is_written(name)]
    teams: list[tuple[str, ...]] = [(name,) for name in alone]
    # A team has S1, or is built on the rubric judge or a written judge.
    anchors = S1_VARIANTS | set(alone)
    for size in range(MIN_TEAM_SIZE, len(members) + 1):
        teams.extend(team for team in itertools.combinations(members, size) if anchors & set(team))
    return teams


def team_evaluate(
    team: Sequence[str], patches: Sequence[CalibrationPatch], *, threshold: float = 50.0
) -> TeamEvaluation:
    """One team's correlations, agreement and cost on the patches; ``threshold`` on 0–100."""
    scores: list[float] = []
    verdicts: list[str] = []
    calls = 0.0
    cost: float | None = 0.0
    for patch in patches:
        results = [patch.members[name] for name in team]
        verdict = combine([result.score for result in results], threshold=threshold)
        scores.append(verdict.mean)
        verdicts.append(verdict.verdict)
        calls += sum(result.calls for result in results)
        for result in results:
            cost = None if cost is None or result.cost_usd is None else cost + result.cost_usd
    human = [1.0 if patch.consensus == Label.VALID else 0.0 for patch in patches]
    kendall = kendall_tau_b(scores, human)
    spearman = spearman_rho(scores, human)
    n = len(patches)
    return TeamEvaluation(
        team=tuple(team),
        kendall=kendall,
        spearman=spearman,
        mean=None if kendall is None or spearman is None else (kendall + spearman) / 2,
        kappa=cohen_kappa(verdicts, [patch.consensus for patch in patches]),
        calls_per_patch=calls / n,
        cost_per_patch=None if cost is None else cost / n,
        n=n,
        is_offline=any(patch.members[name].is_offline for patch in patches for name in team),
    )


def rank_key(evaluation: TeamEvaluation) -> tuple[Any, ...]:
    """Sort key of the ranking: mean correlation, then cost, then κ, then size, then names."""
    return (
        evaluation.mean is None,
        -round(evaluation.mean, TIE_DIGITS) if evaluation.mean is not None else 0.0,
        evaluation.cost_per_patch is None,
        evaluation.cost_per_patch or 0.0,
        # Still tied (the offline model, or a cache that priced nothing): the team whose
        # verdicts agree best with the consensus.
        -round(evaluation.kappa, TIE_DIGITS) if evaluation.kappa is not None else float("inf"),
        len(evaluation.team),
        [member_order(name) for name in evaluation.team],
    )


def check_patches(patches: Sequence[CalibrationPatch], team_members: set[str]) -> None:
    """Raise ``ValueError`` unless the patches can rank teams: enough, both classes, complete."""
    if len(patches) < MIN_PATCHES:
        raise ValueError(TOO_FEW_PATCHES.format(n=len(patches), min=MIN_PATCHES))
    for patch in patches:
        if patch.consensus not in (Label.VALID, Label.INVALID):
            raise ValueError(BAD_CONSENSUS.format(patch=patch.patch_id, label=patch.consensus))
        missing = team_members - patch.members.keys()
        if missing:
            raise ValueError(MISSING_MEMBER.format(patch=patch.patch_id, strategy=min(missing)))
    classes = {patch.consensus for patch in patches}
    if len(classes) == 1:
        raise ValueError(ONE_CLASS.format(label=classes.pop()))


def teams_rank(
    patches: Sequence[CalibrationPatch], strategies: Sequence[str], *, threshold: float = 50.0
) -> list[TeamEvaluation]:
    """Every candidate team of ``strategies`` evaluated on ``patches``, best first."""
    teams = candidate_teams(strategies)
    if not teams:
        raise ValueError(NO_CANDIDATES.format(strategies=", ".join(strategies) or "none"))
    check_patches(patches, {name for team in teams for name in team})
    evaluations = [team_evaluate(team, patches, threshold=threshold) for team in teams]
    return sorted(evaluations, key=rank_key)
