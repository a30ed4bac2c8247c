"""The judge sections of an agreement report: each run against the human consensus (paper
004 Table 6; several runs are its ablation columns), beside two baselines a judge must
beat, each run beside the annotators (paper 000 RQ2), and both broken down by bug type and
by patch source. Pure: computed from a ``Scope`` and each run's verdicts.

A run is measured on the patches it gave a verdict; those of its patches that failed, are
pending or were never in the run are counted and left out. A run of a calibrated team
leaves out the calibration patches too: its team was chosen on them (paper 000 §III-B).
"""

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from judging.models import Calibration, JudgingRun
from judging.reports import vectorized
from judging.reports.figures import Figure
from judging.reports.humans import (
    B_CLEAR,
    B_FULL,
    COLUMNS,
    MIN_SHARED,
    PairAgreement,
    median_or_none,
    pair_agreement,
)
from judging.reports.scope import INVALID, Mask, Scope
from judging.reports.vectorized import confusion_cell
from sejury_web.llm import Provider

METRICS = {
    "accuracy": "Accuracy",
    "kappa": "Cohen's κ",
    "ac1": "Gwet's AC1",
    "mcc": "MCC",
    "precision": "Precision (VALID)",
    "recall": "Recall (VALID)",
    "f1": "F1 (VALID)",
    "npv": "NPV",
}
BENCHMARKS = {name: COLUMNS[name] for name in (B_FULL, B_CLEAR)}
NOT_IN_RUN = "not_in_run"
NO_GROUP = "(no {key})"
RELIABILITY_BINS = 10

# A judge is worth its cost only if it beats these (expected values on the benchmark's own
# VALID rate p; no randomness): one that always gives the consensus' more common label,
# and one that says VALID at random with probability p.
MAJORITY, RANDOM = "majority", "random"
BASELINES = {
    MAJORITY: "always the majority label",
    RANDOM: "random at the VALID rate",
}


@dataclasses.dataclass(frozen=True)
class RunVerdicts:
    """What a report needs of one run: its verdicts, statuses and calibration exclusion."""

    run: JudgingRun
    verdicts: Mapping[int, str]  # patch id → VALID/INVALID, for every judgment done
    statuses: Mapping[int, str]  # patch id → status, for every judgment of the run
    calibration: Calibration | None = None  # the calibration that chose the run's team
    excluded: frozenset[int] = frozenset()  # its patches, left out of every figure
    scores: Mapping[int, float] = dataclasses.field(default_factory=dict)  # the team's
    # Its written judges' dimension ratings: member → dimension → patch id → rating.
    dimension_ratings: Mapping[str, Mapping[str, Mapping[int, int]]] = dataclasses.field(
        default_factory=dict
    )

    @property
    def offline(self) -> bool:
        return self.run.provider == Provider.OFFLINE


@dataclasses.dataclass(frozen=True)
class RunMasks:
    """One run's patches in a scope: judged (a verdict, not excluded), and its verdicts."""

    kept: Mask  # not a calibration patch of the run
    judged: Mask  # kept, with a verdict
    verdict_invalid: np.ndarray  # per patch: the verdict is INVALID (False without one)

    @classmethod
    def of(cls, scope: Scope, run: RunVerdicts) -> "RunMasks":
        kept = ~scope.mask(run.excluded)
        with_verdict = scope.mask(run.verdicts)
        invalid = scope.mask(
            {patch_id for patch_id, verdict in run.verdicts.items() if verdict == "INVALID"}
        )
        return cls(kept=kept, judged=kept & with_verdict, verdict_invalid=invalid)


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    """A run's verdicts against the consensus on one benchmark (B_full or B_clear)."""

    name: str
    n: int
    metrics: dict[str, Figure]  # by METRICS key; n is each figure's denominator
    confusion: dict[str, int]  # tp, fp, fn, tn; VALID is the positive class
    prevalence: Figure  # the consensus' VALID rate on these patches
    baselines: dict[str, dict[str, Figure]]  # by BASELINES key, then METRICS key


def expected_confusion(name: str, prevalence: float, n: int) -> np.ndarray:
    """A baseline's expected tp, fp, fn, tn on n patches of which a share p is VALID."""
    p = prevalence
    if name == MAJORITY:
        says_valid = p > 0.5
        return np.array([p, 1 - p, 0, 0] if says_valid else [0, 0, p, 1 - p]) * n
    return np.array([p * p, p * (1 - p), (1 - p) * p, (1 - p) ** 2]) * n


def _metric_figures(counts: np.ndarray, scope: Scope) -> tuple[dict[str, Figure], Figure]:
    """Every metric of ``METRICS`` and the VALID rate, their intervals in one pass."""
    tp, fp, fn, tn = (int(value) for value in counts[0])
    n = tp + fp + fn + tn
    denominators = {"precision": tp + fp, "recall": tp + fn, "npv": tn + fn}
    values = vectorized.binary(counts)
    stacked = np.stack([values[key] for key in (*METRICS, "prevalence")], axis=1)
    ns = [denominators.get(key, n) for key in METRICS] + [n]
    *figures, prevalence = scope.figures(stacked, ns, items=[n] * (len(METRICS) + 1))
    return dict(zip(METRICS, figures, strict=True)), prevalence


def benchmark_result(scope: Scope, name: str, mask: Mask, masks: RunMasks) -> BenchmarkResult:
    """Every metric of ``METRICS`` with its interval, the confusion matrix, the VALID rate
    and the baselines, over the judged patches of ``mask`` with a consensus."""
    chosen = mask & masks.judged & scope.with_consensus
    counts = scope.consensus_cells(chosen, masks.verdict_invalid)
    metrics, prevalence = _metric_figures(counts, scope)
    return _benchmark(name, counts, metrics, prevalence)


def _benchmark_by_group(
    scope: Scope, name: str, mask: Mask, masks: RunMasks, group: np.ndarray, groups: int
) -> list[BenchmarkResult]:
    """``benchmark_result`` on each group's patches of ``mask`` (``group``: each patch's, of
    ``groups``), from one tally and one interval pass."""
    chosen = np.flatnonzero(mask & masks.judged & scope.with_consensus)
    cells = confusion_cell(masks.verdict_invalid[chosen], scope.consensus[chosen] == INVALID)
    counts = scope.tally(chosen, group[chosen] * 4 + cells, groups * 4).reshape(-1, groups, 4)
    values = vectorized.binary(counts)
    keys = (*METRICS, "prevalence")
    stacked = np.stack([values[key] for key in keys], axis=2).reshape(len(counts), -1)
    ns: list[int] = []
    for tp, fp, fn, tn in counts[0].astype(int).tolist():
        n = tp + fp + fn + tn
        denominators = {"precision": tp + fp, "recall": tp + fn, "npv": tn + fn}
        ns += [denominators.get(key, n) for key in METRICS] + [n]
    items = [n for n in ns[len(METRICS) :: len(keys)] for _ in keys]
    figures = scope.figures(stacked, ns, items=items)
    metrics, prevalences = [], []
    for number in range(groups):
        *metric, prevalence = figures[number * len(keys) : (number + 1) * len(keys)]
        metrics.append(dict(zip(METRICS, metric, strict=True)))
        prevalences.append(prevalence)
    return _benchmarks(name, counts, metrics, prevalences)


def _benchmark(
    name: str, counts: np.ndarray, metrics: dict[str, Figure], prevalence: Figure
) -> BenchmarkResult:
    [result] = _benchmarks(name, counts[:, None], [metrics], [prevalence])
    return result


def _benchmarks(
    name: str,
    counts: np.ndarray,
    metrics: Sequence[dict[str, Figure]],
    prevalences: Sequence[Figure],
) -> list[BenchmarkResult]:
    """The results of groups (``counts``: (R + 1, groups, 4)), their baselines each computed
    once for every group with a VALID rate."""
    confusions = [[int(value) for value in row] for row in counts[0].tolist()]
    ns = [sum(confusion) for confusion in confusions]
    rated = [number for number, rate in enumerate(prevalences) if rate.value is not None]
    baselines: list[dict[str, dict[str, Figure]]] = [{} for _ in confusions]
    for baseline in BASELINES if rated else ():
        expected = vectorized.binary(
            np.array(
                [
                    expected_confusion(baseline, prevalences[number].value or 0.0, ns[number])
                    for number in rated
                ]
            )
        )
        if baseline == RANDOM:
            # 0 by definition; the expected counts would leave ±1e-17 of rounding.
            for key in ("kappa", "mcc"):
                expected[key] = np.where(np.isfinite(expected[key]), 0.0, np.nan)
        values = {key: expected[key].tolist() for key in METRICS}
        for place, number in enumerate(rated):
            baselines[number][baseline] = {
                key: Figure(None if np.isnan(value) else value, ns[number], estimated=False)
                for key, value in ((key, values[key][place]) for key in METRICS)
            }
    return [
        BenchmarkResult(
            name=name,
            n=ns[number],
            metrics=metrics[number],
            confusion=dict(zip(("tp", "fp", "fn", "tn"), confusions[number], strict=True)),
            prevalence=prevalences[number],
            baselines=baselines[number],
        )
        for number in range(len(confusions))
    ]


@dataclasses.dataclass(frozen=True)
class ReliabilityBin:
    """Team scores in [lo, hi) (the last bin's top included) and what humans said of them."""

    lo: float
    hi: float
    n: int
    mean_score: float | None
    valid_share: Figure  # the consensus' VALID rate in the bin


@dataclasses.dataclass(frozen=True)
class Reliability:
    """A reliability diagram's bins, and the scores it could not place."""

    bins: list[ReliabilityBin]
    outside: int  # scores off the run's scale (or not a number): left out, counted


def reliability(
    scope: Scope, run: RunVerdicts, mask: Mask, *, bins: int = RELIABILITY_BINS
) -> Reliability:
    """The run's team scores in equal bins over its scale against the share of the bin's
    patches the consensus found VALID (a reliability diagram), on ``mask``'s patches with a
    score and a consensus. A score off the scale is left out and counted."""
    lo, hi = run.run.scale_lo, run.run.scale_hi
    members = np.flatnonzero(mask & scope.mask(run.scores) & scope.with_consensus)
    if not (hi > lo) or not len(members):
        return Reliability([], 0)
    scores = np.array([run.scores[patch_id] for patch_id in scope.ids(members)], float)
    on_scale = np.isfinite(scores) & (scores >= lo) & (scores <= hi)
    outside = int((~on_scale).sum())
    members, scores = members[on_scale], scores[on_scale]
    # The same edges bound the bins and place the scores: a score on an edge opens the bin
    # above it (the top edge closes the last bin).
    edges = lo + (hi - lo) * np.arange(bins + 1) / bins
    which = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, bins - 1)
    valid = (scope.consensus[members] == 1).astype(np.int64)
    counts = scope.tally(members, which * 2 + valid, bins * 2).reshape(-1, bins, 2)
    shares = vectorized.share(counts)
    result = []
    for position in range(bins):
        inside = which == position
        n = int(inside.sum())
        result.append(
            ReliabilityBin(
                lo=float(edges[position]),
                hi=float(edges[position + 1]),
                n=n,
                mean_score=float(scores[inside].mean()) if n else None,
                valid_share=scope.figure(shares[:, position], n),
            )
        )
    return Reliability(result, outside)


@dataclasses.dataclass(frozen=True)
class JudgeColumn:
    """One run in the Table 6 ablation: its figures on B_full and B_clear."""

    run: RunVerdicts
    with_consensus: int  # patches in scope with a consensus, calibration ones left out
    excluded: int  # calibration patches with a consensus, left out
    without_verdict: dict[str, int]  # failed / pending / not_in_run: left out, counted
    benchmarks: dict[str, BenchmarkResult]
    reliability: Reliability  # on B_full

    @property
    def left_out(self) -> int:
        return sum(self.without_verdict.values())


def judge_column(scope: Scope, run: RunVerdicts, masks: RunMasks) -> JudgeColumn:
    """One run against the consensus on B_full and B_clear, and what it leaves out."""
    kept = masks.kept & scope.with_consensus
    without = Counter(
        run.statuses.get(patch_id, NOT_IN_RUN)
        for patch_id in scope.ids(np.flatnonzero(kept & ~masks.judged))
    )
    full = kept & masks.judged
    clear = full & scope.unanimous
    b_full = benchmark_result(scope, B_FULL, full, masks)
    # Until a consensus exists beyond the unanimous patches (a lead's, or a majority's),
    # B_clear is B_full: the same figures, once.
    b_clear = (
        dataclasses.replace(b_full, name=B_CLEAR)
        if np.array_equal(clear, full)
        else benchmark_result(scope, B_CLEAR, clear, masks)
    )
    return JudgeColumn(
        run=run,
        with_consensus=int(kept.sum()),
        excluded=int((scope.with_consensus & ~masks.kept).sum()),
        without_verdict=dict(sorted(without.items())),
        benchmarks={B_FULL: b_full, B_CLEAR: b_clear},
        reliability=reliability(scope, run, full),
    )


@dataclasses.dataclass(frozen=True)
class HumanJudgeAgreement:
    """Paper 000 RQ2 for one run: the judge paired with each annotator, beside the pairs of
    annotators, on the same patches (those the run judged, calibration ones left out)."""

    run: RunVerdicts
    patches: int
    judge_pairs: dict[int, Figure]  # annotator id → κ(judge, annotator)
    judge_mean: Figure
    judge_median: float | None
    judge_mean_ac1: Figure  # Gwet's AC1 of the judge with each annotator, averaged
    humans: PairAgreement
    every_labelled_patch: bool  # judged them all: ``humans`` is the human section's pairs


def human_judge_agreement(scope: Scope, run: RunVerdicts, masks: RunMasks) -> HumanJudgeAgreement:
    """Paper 000 RQ2 for one run, on the patches it judged (calibration ones left out)."""
    judged = masks.judged & scope.labelled
    cells = scope.judge_annotator_cells(judged, masks.verdict_invalid)
    shared = cells.sum(axis=-1)
    usable = shared >= MIN_SHARED
    kappas = vectorized.kappa(cells)
    present = np.flatnonzero(shared[0])
    counts = shared[0, present].astype(int).tolist()
    figures = {
        int(scope.annotators[position]): figure if n >= MIN_SHARED else Figure(None, n)
        for position, n, figure in zip(
            present, counts, scope.figures(kappas[:, present], counts), strict=True
        )
    }
    defined = [figure.value for figure in figures.values() if figure.value is not None]
    patches = int(judged.sum())
    return HumanJudgeAgreement(
        run=run,
        patches=patches,
        judge_pairs=figures,
        judge_mean=scope.figure(vectorized.mean_defined(kappas, usable), patches),
        judge_median=median_or_none(defined),
        judge_mean_ac1=scope.figure(
            vectorized.mean_defined(vectorized.ac1_pair(cells), usable), patches
        ),
        humans=pair_agreement(scope, judged),
        every_labelled_patch=bool(np.array_equal(judged, scope.labelled)),
    )


@dataclasses.dataclass(frozen=True)
class BreakdownRow:
    group: str
    patches: int  # labelled patches of the group
    unanimous: Figure
    weighted_kappa: Figure  # annotators against the consensus
    valid_rate: Figure  # the consensus' VALID rate among the group's patches with one
    judges: dict[int, BenchmarkResult]  # run id → B_full figures on the group's patches


@dataclasses.dataclass(frozen=True)
class Breakdown:
    key: str  # "bug_type" or "source"
    title: str
    rows: list[BreakdownRow]  # none when every patch is in one group
    groups: list[str]  # every group, rows or not

    @property
    def single_group(self) -> bool:
        return len(self.groups) == 1


BREAKDOWNS = {"bug_type": "Bug type", "source": "Patch source"}


def breakdown(scope: Scope, key: str, runs: Sequence[tuple[RunVerdicts, RunMasks]]) -> Breakdown:
    """Unanimity, annotators' κ against the consensus, the VALID rate and each run's B_full
    figures, per value of ``key`` (a patch without one is in the group "(no bug type)" or
    "(no source)"). With one group only, the main tables say it all: no rows.

    Every group's figure of a kind comes from one tally and one interval pass, each as if
    its patches were all there was."""
    missing = NO_GROUP.format(key=BREAKDOWNS[key].lower().replace("patch ", ""))
    groups: dict[str, list[int]] = defaultdict(list)
    for index, value in enumerate(scope.groups[key]):
        groups[value or missing].append(index)
    names = sorted(groups)
    if len(names) <= 1:
        return Breakdown(key=key, title=BREAKDOWNS[key], rows=[], groups=names)
    size = len(names)
    group = np.empty(len(scope), np.int64)
    for number, name in enumerate(names):
        group[groups[name]] = number
    patches = np.bincount(group[scope.labelled], minlength=size).tolist()
    decided = np.bincount(group[scope.with_consensus], minlength=size).tolist()
    unanimous = scope.figures(
        _group_shares(scope, scope.labelled, scope.unanimous, group, size), patches
    )
    valid_rate = scope.figures(
        _group_shares(scope, scope.with_consensus, scope.consensus == 1, group, size), decided
    )
    kappas = scope.figures(_group_consensus_kappas(scope, group, size), decided)
    judges = {
        run.run.pk: _benchmark_by_group(scope, B_FULL, masks.kept, masks, group, size)
        for run, masks in runs
    }
    rows = [
        BreakdownRow(
            group=name,
            patches=patches[number],
            unanimous=unanimous[number],
            weighted_kappa=kappas[number],
            valid_rate=valid_rate[number],
            judges={pk: results[number] for pk, results in judges.items()},
        )
        for number, name in enumerate(names)
    ]
    return Breakdown(key=key, title=BREAKDOWNS[key], rows=rows, groups=names)


def _group_shares(
    scope: Scope, mask: Mask, flag: np.ndarray, group: np.ndarray, groups: int
) -> np.ndarray:
    """(R + 1, groups): per group, the share of its patches of ``mask`` with ``flag``."""
    members = np.flatnonzero(mask)
    columns = group[members] * 2 + np.asarray(flag, np.int64)[members]
    counts = scope.tally(members, columns, groups * 2).reshape(-1, groups, 2)
    return vectorized.share(counts)


def _group_consensus_kappas(scope: Scope, group: np.ndarray, groups: int) -> np.ndarray:
    """(R + 1, groups): ``weighted_consensus_kappa``'s values on each group's patches."""
    cells = scope.annotator_consensus_cells(scope.with_consensus, group, groups)
    return np.stack(
        [
            vectorized.weighted_mean(vectorized.kappa(part), part.sum(axis=-1))
            for part in (cells[:, number] for number in range(groups))
        ],
        axis=1,
    )
