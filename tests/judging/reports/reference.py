"""A plain reference for the agreement report's figures and intervals: the statistics of the
report before it was vectorized, as Python over ``PatchRecord`` lists.

Every figure is a statistic ``f(records) -> float | None`` of the report's *whole* record
list: it picks its own patches (a column, a run's judged patches, a group) out of what it is
given, so a resample of the report is just another list of records (a patch drawn twice is
in it twice, and counts twice in every figure it belongs to). ``plain_interval`` applies a
statistic to each row of an index matrix and takes the percentile interval of the defined
values: what ``judging.reports.resampling.Replicates`` must reproduce in one matrix.

Nothing here imports the vectorized code; the formulas are ``judging.agreement``'s.
"""

import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from statistics import fmean

import numpy as np

from judging.agreement import (
    binary_metrics,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    weighted_mean,
)
from judging.models import Label
from judging.reports.figures import PatchRecord
from judging.reports.judges import RunVerdicts

Records = list[PatchRecord]
Statistic = Callable[[Records], float | None]
Selector = Callable[[Records], Records]
Pair = tuple[int, int]

LABELLED, B_FULL, B_CLEAR = "labelled", "b_full", "b_clear"
MIN_SHARED = 2
METRICS = ("accuracy", "kappa", "ac1", "mcc", "precision", "recall", "f1", "npv")


# Intervals.


def defined(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def replicate_values(
    records: Sequence[PatchRecord], indices: np.ndarray, f: Statistic
) -> list[float | None]:
    """``f([records[i] for i in row])`` for each row of ``indices``, None where undefined."""
    values: list[float | None] = []
    for row in np.asarray(indices).tolist():
        value = f([records[index] for index in row])
        values.append(value if defined(value) else None)
    return values


def percentile_interval(
    values: Sequence[float | None], level: float = 0.95
) -> tuple[float, float] | None:
    """The percentile interval (numpy's linear percentile) of the defined ``values``; None
    when none is."""
    kept = [value for value in values if value is not None]
    if not kept:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(kept, [tail, 100.0 - tail])
    return float(low), float(high)


def plain_interval(
    records: Sequence[PatchRecord],
    indices: np.ndarray,
    f: Statistic,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """The percentile interval of ``f`` over the defined values of
    ``f([records[i] for i in row])``, one per row of ``indices``; None when none is."""
    return percentile_interval(replicate_values(records, indices, f), level)


def on(select: Selector, statistic: Statistic) -> Statistic:
    """``statistic`` of the records ``select`` picks."""

    def f(records: Records) -> float | None:
        return statistic(select(records))

    return f


# Selections.


def column(name: str) -> Selector:
    """Labelled patches, those with a consensus (B_full), the unanimous ones (B_clear)."""

    def select(records: Records) -> Records:
        if name == LABELLED:
            return [record for record in records if record.labels]
        if name == B_FULL:
            return [record for record in records if record.consensus]
        return [record for record in records if record.unanimous]

    return select


def kept(run: RunVerdicts) -> Selector:
    """The patches of a run's report: its calibration patches left out."""
    return lambda records: [r for r in records if r.patch_id not in run.excluded]


def judged(run: RunVerdicts) -> Selector:
    """The kept patches the run gave a verdict."""
    return lambda records: [r for r in kept(run)(records) if r.patch_id in run.verdicts]


def judged_labelled(run: RunVerdicts) -> Selector:
    """What the human–judge comparison rests on: judged patches with a label."""
    return lambda records: [r for r in judged(run)(records) if r.labels]


def benchmark(run: RunVerdicts, name: str, key: str | None = None, group: str = "") -> Selector:
    """The judged patches with a consensus (B_full), unanimous too (B_clear); with ``key``,
    only those whose ``key`` (bug_type, source) is ``group`` ("" for none)."""

    def select(records: Records) -> Records:
        chosen = [r for r in judged(run)(records) if r.consensus]
        if name == B_CLEAR:
            chosen = [r for r in chosen if r.unanimous]
        if key is not None:
            chosen = [r for r in chosen if (getattr(r, key) or "") == group]
        return chosen

    return select


def in_group(key: str, group: str) -> Selector:
    """The patches whose ``key`` is ``group`` ("" for none)."""
    return lambda records: [r for r in records if (getattr(r, key) or "") == group]


def then(first: Selector, second: Selector) -> Selector:
    return lambda records: second(first(records))


# Human statistics (over the records given).


def alpha(records: Records) -> float | None:
    """Krippendorff's nominal α over the decisive labels, one row per label slot."""
    columns = [list(record.decisive.values()) for record in records]
    rows = max((len(labels) for labels in columns), default=0)
    data = [
        [labels[slot] if slot < len(labels) else None for labels in columns] for slot in range(rows)
    ]
    return krippendorff_alpha(data, level="nominal")


def fleiss_labels(records: Iterable[PatchRecord]) -> int | None:
    """The most common number (≥ 2) of decisive labels, the larger on a tie."""
    counts = Counter(len(r.decisive) for r in records if len(r.decisive) >= 2)
    if not counts:
        return None
    return max(counts, key=lambda k: (counts[k], k))


def fleiss(labels: int | None) -> Statistic:
    """Fleiss' κ over the records with exactly ``labels`` decisive labels."""

    def f(records: Records) -> float | None:
        chosen = [r for r in records if labels is not None and len(r.decisive) == labels]
        table = [
            [list(r.decisive.values()).count(label) for label in ("VALID", "INVALID")]
            for r in chosen
        ]
        return fleiss_kappa(table)

    return f


def annotators_of(records: Iterable[PatchRecord]) -> list[int]:
    return sorted({annotator for record in records for annotator in record.labels})


def ac1(records: Records) -> float | None:
    """Gwet's AC1 over the decisive labels, annotators × patches."""
    annotators = annotators_of(records)
    data = [[r.decisive.get(annotator) for r in records] for annotator in annotators]
    if not data:
        return None
    return gwet_ac1(data)


def unanimous_share(records: Records) -> float | None:
    return sum(r.unanimous for r in records) / len(records) if records else None


def valid_rate(records: Records) -> float | None:
    """The consensus' VALID rate among the records with one."""
    with_consensus = [r for r in records if r.consensus]
    if not with_consensus:
        return None
    return sum(r.consensus == Label.VALID for r in with_consensus) / len(with_consensus)


def pair_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    return binary_metrics([a for a, _ in pairs], [b for _, b in pairs]).kappa


def pair_ac1(pairs: Sequence[tuple[str, str]]) -> float | None:
    return gwet_ac1([[a for a, _ in pairs], [b for _, b in pairs]])


def consensus_pairs(records: Iterable[PatchRecord]) -> dict[int, list[tuple[str, str]]]:
    """Each annotator's (decisive label, consensus) on the records with a consensus."""
    pairs: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for record in records:
        if record.consensus:
            for annotator, label in record.decisive.items():
                pairs[annotator].append((label, record.consensus))
    return pairs


def weighted_consensus_kappa(records: Records) -> float | None:
    pairs = consensus_pairs(records)
    kappas = [pair_kappa(own) for own in pairs.values()]
    return weighted_mean(kappas, [len(own) for own in pairs.values()])


def annotator_kappa(annotator: int) -> Statistic:
    """One annotator's κ against the consensus."""
    return lambda records: pair_kappa(consensus_pairs(records).get(annotator, []))


def shared_labels(records: Iterable[PatchRecord]) -> dict[Pair, list[tuple[str, str]]]:
    """Every annotator pair's decisive labels on the patches both labelled."""
    shared: dict[Pair, list[tuple[str, str]]] = defaultdict(list)
    for record in records:
        for (a, label_a), (b, label_b) in itertools.combinations(
            sorted(record.decisive.items()), 2
        ):
            shared[(a, b)].append((label_a, label_b))
    return shared


def one_pair_kappa(pair: Pair) -> Statistic:
    """κ of the pair (a < b) on the patches both labelled: their entry of ``shared_labels``."""
    a, b = pair
    return lambda records: pair_kappa(
        [(r.decisive[a], r.decisive[b]) for r in records if a in r.decisive and b in r.decisive]
    )


def _mean_over_pairs(
    records: Records,
    measure: Callable[[Sequence[tuple[str, str]]], float | None],
    member: int | None = None,
) -> float | None:
    values = [
        measure(labels)
        for pair, labels in shared_labels(records).items()
        if len(labels) >= MIN_SHARED and (member is None or member in pair)
    ]
    kept_values = [value for value in values if value is not None]
    return fmean(kept_values) if kept_values else None


def mean_pair_kappa(records: Records) -> float | None:
    """The mean κ of the annotator pairs sharing at least two patches (defined ones)."""
    return _mean_over_pairs(records, pair_kappa)


def mean_pair_ac1(records: Records) -> float | None:
    """The mean AC1 of the annotator pairs sharing at least two patches (defined ones)."""
    return _mean_over_pairs(records, pair_ac1)


def pairwise_mean(annotator: int) -> Statistic:
    """One annotator's mean κ with each other annotator sharing two patches with them."""
    return lambda records: _mean_over_pairs(records, pair_kappa, member=annotator)


# Judge statistics.


def judge_metric(run: RunVerdicts, key: str) -> Statistic:
    """One figure of the run's verdicts against the consensus on the records given (which
    must all have both): a ``binary_metrics`` attribute, "ac1" or "prevalence"."""

    def f(records: Records) -> float | None:
        verdicts = [run.verdicts[r.patch_id] for r in records]
        truths = [str(r.consensus) for r in records]
        if key == "ac1":
            return gwet_ac1([verdicts, truths])
        if key == "prevalence":
            return sum(t == Label.VALID for t in truths) / len(truths) if truths else None
        value: float | None = getattr(binary_metrics(verdicts, truths), key)
        return value

    return f


def confusion(run: RunVerdicts, records: Records) -> dict[str, int]:
    verdicts = [run.verdicts[r.patch_id] for r in records]
    return binary_metrics(verdicts, [str(r.consensus) for r in records]).confusion


def judge_annotator_pairs(
    run: RunVerdicts, records: Iterable[PatchRecord]
) -> dict[int, list[tuple[str, str]]]:
    """Each annotator's (verdict, decisive label) on the records given."""
    pairs: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for record in records:
        verdict = run.verdicts.get(record.patch_id)
        if verdict:
            for annotator, label in record.decisive.items():
                pairs[annotator].append((verdict, label))
    return pairs


def judge_kappa(run: RunVerdicts, annotator: int) -> Statistic:
    """κ(judge, annotator) on the records given."""
    return lambda records: pair_kappa(judge_annotator_pairs(run, records).get(annotator, []))


def _mean_judge(
    run: RunVerdicts, measure: Callable[[Sequence[tuple[str, str]]], float | None]
) -> Statistic:
    def f(records: Records) -> float | None:
        values = [
            measure(own)
            for own in judge_annotator_pairs(run, records).values()
            if len(own) >= MIN_SHARED
        ]
        kept_values = [value for value in values if value is not None]
        return fmean(kept_values) if kept_values else None

    return f


def mean_judge_kappa(run: RunVerdicts) -> Statistic:
    """The mean κ(judge, annotator) over annotators sharing two patches with the judge."""
    return _mean_judge(run, pair_kappa)


def mean_judge_ac1(run: RunVerdicts) -> Statistic:
    """The mean AC1(judge, annotator), averaged the same way."""
    return _mean_judge(run, pair_ac1)


def reliability_bin(run: RunVerdicts, position: int, bins: int = 10) -> Selector:
    """The records of B_full with a team score in bin ``position`` of the run's scale."""
    lo, hi = float(run.run.scale_lo), float(run.run.scale_hi)
    edges = [lo + (hi - lo) * k / bins for k in range(bins + 1)]

    def which(score: float) -> int | None:
        """The last bin whose lower edge the score reaches; None off the scale."""
        if not (lo <= score <= hi):
            return None
        return min(max(k for k in range(bins) if edges[k] <= score), bins - 1)

    def select(records: Records) -> Records:
        return [
            r
            for r in benchmark(run, B_FULL)(records)
            if r.patch_id in run.scores and which(run.scores[r.patch_id]) == position
        ]

    return select
