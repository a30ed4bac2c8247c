"""The judge sections of an agreement report: each run against the human consensus (paper
004 Table 6; several runs are its ablation columns), each run beside the annotators (paper
000 RQ2), and both broken down by bug type and by patch source. Pure: computed from
``PatchRecord`` lists and each run's verdicts.

A run is measured on the patches it gave a verdict; those of its patches that failed, are
pending or were never in the run are counted and left out. A run of a calibrated team
leaves out the calibration patches too: its team was chosen on them (paper 000 §III-B).
"""

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import fmean

from judging.agreement import binary_metrics
from judging.models import Calibration, JudgingRun
from judging.reports.figures import Figure, PatchRecord, Sampling, paired_kappa
from judging.reports.humans import (
    B_CLEAR,
    B_FULL,
    COLUMNS,
    MIN_SHARED,
    PairAgreement,
    PairCache,
    median_or_none,
    unanimous_share,
    weighted_consensus_kappa,
)
from sejury_web.llm import Provider

METRICS = {
    "accuracy": "Accuracy",
    "kappa": "Cohen's κ",
    "precision": "Precision (VALID)",
    "recall": "Recall (VALID)",
    "f1": "F1 (VALID)",
    "npv": "NPV",
}
BENCHMARKS = {name: COLUMNS[name] for name in (B_FULL, B_CLEAR)}
NOT_IN_RUN = "not_in_run"
NO_GROUP = "(none)"

Judged = tuple[str, str]  # (the run's verdict, the consensus)


@dataclasses.dataclass(frozen=True)
class RunVerdicts:
    """What a report needs of one run: its verdicts, statuses and calibration exclusion."""

    run: JudgingRun
    verdicts: Mapping[int, str]  # patch id → VALID/INVALID, for every judgment done
    statuses: Mapping[int, str]  # patch id → status, for every judgment of the run
    calibration: Calibration | None = None  # the calibration that chose the run's team
    excluded: frozenset[int] = frozenset()  # its patches, left out of every figure

    @property
    def offline(self) -> bool:
        return self.run.provider == Provider.OFFLINE

    def kept(self, records: Iterable[PatchRecord]) -> list[PatchRecord]:
        return [record for record in records if record.patch_id not in self.excluded]

    def judged(self, records: Iterable[PatchRecord]) -> list[PatchRecord]:
        return [record for record in self.kept(records) if record.patch_id in self.verdicts]


def metric_statistic(name: str) -> Callable[[list[Judged]], float | None]:
    """One ``binary_metrics`` figure as a statistic of (verdict, consensus) pairs."""

    def statistic(items: list[Judged]) -> float | None:
        metrics = binary_metrics([verdict for verdict, _ in items], [truth for _, truth in items])
        value: float | None = getattr(metrics, name)
        return value

    return statistic


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    """A run's verdicts against the consensus on one benchmark (B_full or B_clear)."""

    name: str
    n: int
    metrics: dict[str, Figure]  # by METRICS key; n is each figure's denominator
    confusion: dict[str, int]  # tp, fp, fn, tn; VALID is the positive class


def benchmark_result(name: str, items: Sequence[Judged], sampling: Sampling) -> BenchmarkResult:
    """Every metric of ``METRICS`` with its interval, and the confusion matrix."""
    confusion = binary_metrics([v for v, _ in items], [c for _, c in items]).confusion
    tp, fp, fn, tn = (confusion[key] for key in ("tp", "fp", "fn", "tn"))
    denominators = {"precision": tp + fp, "recall": tp + fn, "npv": tn + fn}
    metrics = {
        key: sampling.estimate(items, metric_statistic(key), n=denominators.get(key, len(items)))
        for key in METRICS
    }
    return BenchmarkResult(name=name, n=len(items), metrics=metrics, confusion=confusion)


def judged_items(records: Iterable[PatchRecord], run: RunVerdicts) -> list[Judged]:
    """(verdict, consensus) of every record with both, calibration patches left out."""
    return [
        (run.verdicts[record.patch_id], record.consensus)
        for record in run.judged(records)
        if record.consensus
    ]


@dataclasses.dataclass(frozen=True)
class JudgeColumn:
    """One run in the Table 6 ablation: its figures on B_full and B_clear."""

    run: RunVerdicts
    with_consensus: int  # patches in scope with a consensus, calibration ones left out
    excluded: int  # calibration patches with a consensus, left out
    without_verdict: dict[str, int]  # failed / pending / not_in_run: left out, counted
    benchmarks: dict[str, BenchmarkResult]

    @property
    def left_out(self) -> int:
        return sum(self.without_verdict.values())


def judge_column(
    records: Sequence[PatchRecord], run: RunVerdicts, sampling: Sampling
) -> JudgeColumn:
    """One run against the consensus on B_full and B_clear, and what it leaves out."""
    with_consensus = [record for record in records if record.consensus]
    kept = run.kept(with_consensus)
    without = Counter(
        run.statuses.get(record.patch_id, NOT_IN_RUN)
        for record in kept
        if record.patch_id not in run.verdicts
    )
    full = judged_items(with_consensus, run)
    clear = judged_items([record for record in records if record.unanimous], run)
    b_full = benchmark_result(B_FULL, full, sampling)
    # Until a lead settles a dispute, B_clear is B_full: the same figures, once.
    b_clear = (
        dataclasses.replace(b_full, name=B_CLEAR)
        if clear == full
        else benchmark_result(B_CLEAR, clear, sampling)
    )
    return JudgeColumn(
        run=run,
        with_consensus=len(kept),
        excluded=len(with_consensus) - len(kept),
        without_verdict=dict(sorted(without.items())),
        benchmarks={B_FULL: b_full, B_CLEAR: b_clear},
    )


def judge_annotator_labels(
    records: Iterable[PatchRecord], verdicts: Mapping[int, str]
) -> dict[int, list[tuple[str, str]]]:
    """Each annotator's (verdict, label) pairs on the judged patches they labelled decisively."""
    pairs: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for record in records:
        verdict = verdicts.get(record.patch_id)
        if verdict:
            for annotator, label in record.decisive.items():
                pairs[annotator].append((verdict, label))
    return pairs


def mean_judge_kappa(verdicts: Mapping[int, str]) -> Callable[[list[PatchRecord]], float | None]:
    """The mean κ(judge, annotator) over annotators, as a statistic of patch records."""

    def statistic(records: list[PatchRecord]) -> float | None:
        pairs = judge_annotator_labels(records, verdicts).values()
        kappas = [paired_kappa(own) for own in pairs if len(own) >= MIN_SHARED]
        defined = [value for value in kappas if value is not None]
        return fmean(defined) if defined else None

    return statistic


@dataclasses.dataclass(frozen=True)
class HumanJudgeAgreement:
    """Paper 000 RQ2 for one run: the judge paired with each annotator, beside the pairs of
    annotators, on the same patches (those the run judged, calibration ones left out)."""

    run: RunVerdicts
    patches: int
    judge_pairs: dict[int, Figure]  # annotator id → κ(judge, annotator)
    judge_mean: Figure
    judge_median: float | None
    humans: PairAgreement


def human_judge_agreement(
    records: Sequence[PatchRecord],
    run: RunVerdicts,
    sampling: Sampling,
    pairs_on: PairCache,
) -> HumanJudgeAgreement:
    """Paper 000 RQ2 for one run, on the patches it judged (calibration ones left out)."""
    judged = [record for record in run.judged(records) if record.labels]
    figures = {}
    for annotator, pairs in sorted(judge_annotator_labels(judged, run.verdicts).items()):
        figures[annotator] = (
            sampling.estimate(pairs, paired_kappa)
            if len(pairs) >= MIN_SHARED
            else Figure(None, len(pairs))
        )
    defined = [figure.value for figure in figures.values() if figure.value is not None]
    return HumanJudgeAgreement(
        run=run,
        patches=len(judged),
        judge_pairs=figures,
        judge_mean=sampling.estimate(judged, mean_judge_kappa(run.verdicts)),
        judge_median=median_or_none(defined),
        humans=pairs_on(judged),
    )


@dataclasses.dataclass(frozen=True)
class BreakdownRow:
    group: str
    patches: int  # labelled patches of the group
    unanimous: Figure
    weighted_kappa: Figure  # annotators against the consensus
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


def breakdown(
    records: Sequence[PatchRecord], key: str, runs: Sequence[RunVerdicts], sampling: Sampling
) -> Breakdown:
    """Unanimity, annotators' κ against the consensus and each run's B_full figures, per
    value of ``key`` (a patch without one is in the group ``(none)``). With one group only,
    the main tables say it all: no rows."""
    groups: dict[str, list[PatchRecord]] = defaultdict(list)
    for record in records:
        groups[getattr(record, key) or NO_GROUP].append(record)
    rows = []
    for group, members in sorted(groups.items()) if len(groups) > 1 else ():
        labelled = [record for record in members if record.labels]
        with_consensus = [record for record in members if record.consensus]
        rows.append(
            BreakdownRow(
                group=group,
                patches=len(labelled),
                unanimous=sampling.estimate(labelled, unanimous_share),
                weighted_kappa=sampling.estimate(with_consensus, weighted_consensus_kappa),
                judges={
                    run.run.pk: benchmark_result(B_FULL, judged_items(members, run), sampling)
                    for run in runs
                },
            )
        )
    return Breakdown(key=key, title=BREAKDOWNS[key], rows=rows, groups=sorted(groups))
