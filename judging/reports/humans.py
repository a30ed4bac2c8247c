"""The human section of an agreement report (paper 004 Table 5): how far annotators agree
with each other and with the consensus. Pure: computed from ``PatchRecord`` lists.

Three columns: every labelled patch, B_full (the patches with a consensus) and B_clear (the
unanimous ones). While disputes wait for a lead, B_full is smaller than the labelled
patches; the paper's B_full is both, after every dispute was settled. UNSURE is a missing
label everywhere, as in the papers.
"""

import dataclasses
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from statistics import fmean, median

from judging.agreement import fleiss_kappa, krippendorff_alpha, weighted_mean
from judging.models import Label
from judging.reports.figures import DECISIVE, Figure, PatchRecord, Sampling, count, paired_kappa

LABELLED, B_FULL, B_CLEAR = "labelled", "b_full", "b_clear"
COLUMNS = {LABELLED: "All labelled", B_FULL: "B_full", B_CLEAR: "B_clear"}
MIN_SHARED = 2  # patches two annotators must share for their κ

Pair = tuple[int, int]  # two annotator ids, the smaller first


def column_records(records: Iterable[PatchRecord], column: str) -> list[PatchRecord]:
    """The records of one column: labelled, with a consensus (B_full), unanimous (B_clear)."""
    if column == LABELLED:
        return [record for record in records if record.labels]
    if column == B_FULL:
        return [record for record in records if record.consensus]
    return [record for record in records if record.unanimous]


def alpha(records: Sequence[PatchRecord]) -> float | None:
    """Krippendorff's α (nominal) over the records' decisive labels.

    Nominal α depends only on how many of each label every patch got, not on who gave
    them, so the reliability data has one row per label slot (at most the largest number
    of labels on a patch) rather than one per annotator: the same α, a fraction of the
    cells, which matters in the bootstrap.
    """
    columns = [list(record.decisive.values()) for record in records]
    rows = max((len(column) for column in columns), default=0)
    data = [[column[slot] if slot < len(column) else None for column in columns]
            for slot in range(rows)]  # fmt: skip
    return krippendorff_alpha(data, level="nominal")


def fleiss_labels(records: Iterable[PatchRecord]) -> int | None:
    """The number of decisive labels Fleiss' κ uses: the most common one among the patches
    with at least two (the larger on a tie); None when no patch has two."""
    counts = Counter(len(record.decisive) for record in records if len(record.decisive) >= 2)
    if not counts:
        return None
    return max(counts, key=lambda k: (counts[k], k))


def fleiss(records: Sequence[PatchRecord]) -> float | None:
    """Fleiss' κ over records that all have the same number of decisive labels."""
    table = [[list(record.decisive.values()).count(label) for label in DECISIVE]
             for record in records]  # fmt: skip
    return fleiss_kappa(table)


def consensus_pairs(records: Iterable[PatchRecord]) -> dict[int, list[tuple[str, str]]]:
    """Each annotator's (label, consensus) pairs over the records with a consensus."""
    pairs: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for record in records:
        if record.consensus:
            for annotator, label in record.decisive.items():
                pairs[annotator].append((label, record.consensus))
    return pairs


def weighted_consensus_kappa(records: Sequence[PatchRecord]) -> float | None:
    """Annotators' κ against the consensus, averaged with weights = patches each labelled."""
    pairs = consensus_pairs(records)
    kappas = [paired_kappa(own) for own in pairs.values()]
    return weighted_mean(kappas, [len(own) for own in pairs.values()])


def shared_labels(records: Iterable[PatchRecord]) -> dict[Pair, list[tuple[str, str]]]:
    """Every annotator pair's labels on the patches both labelled decisively."""
    shared: dict[Pair, list[tuple[str, str]]] = defaultdict(list)
    for record in records:
        labels = sorted(record.decisive.items())
        for (a, label_a), (b, label_b) in itertools.combinations(labels, 2):
            shared[(a, b)].append((label_a, label_b))
    return shared


def pair_kappas(records: Iterable[PatchRecord]) -> list[float]:
    """The defined κ of every annotator pair that shares at least two patches."""
    kappas = (paired_kappa(labels) for labels in shared_labels(records).values()
              if len(labels) >= MIN_SHARED)  # fmt: skip
    return [value for value in kappas if value is not None]


def mean_pair_kappa(records: Sequence[PatchRecord]) -> float | None:
    """The mean of the annotator pairs' defined κ (a statistic to bootstrap over patches)."""
    kappas = pair_kappas(records)
    return fmean(kappas) if kappas else None


def median_or_none(values: Sequence[float]) -> float | None:
    """The median, or None for no values (a report shows "—")."""
    return median(values) if values else None


@dataclasses.dataclass(frozen=True)
class AnnotatorRow:
    """One annotator in one column: labels given, κ against the consensus, weight."""

    annotator_id: int
    labels: int  # labels on the column's patches, UNSURE included
    unsure: int
    kappa: Figure  # against the consensus, over their decisive labels on patches with one
    weight: float | None  # their share of the weighted average (None: κ undefined)


@dataclasses.dataclass(frozen=True)
class HumanColumn:
    name: str
    bugs: Figure
    patches: Figure
    labels: dict[str, Figure]  # VALID, INVALID, UNSURE counts
    unanimous: Figure  # share of the column's patches
    unanimous_count: int
    alpha: Figure
    fleiss: Figure  # over fleiss_labels decisive labels per patch, n = those patches
    fleiss_labels: int | None
    weighted_kappa: Figure  # κ against the consensus, weighted average over annotators
    consensus_valid: Figure
    consensus_invalid: Figure
    awaiting: Figure  # labelled patches without a consensus yet
    annotators: list[AnnotatorRow]

    @property
    def title(self) -> str:
        return COLUMNS[self.name]


def annotator_rows(records: Sequence[PatchRecord], sampling: Sampling) -> list[AnnotatorRow]:
    """Each annotator of the records, by id, with their κ against the consensus and weight."""
    pairs = consensus_pairs(records)
    given: Counter[int] = Counter()
    unsure: Counter[int] = Counter()
    for record in records:
        given.update(record.labels.keys())
        unsure.update(a for a, label in record.labels.items() if label == Label.UNSURE)
    figures = {annotator: sampling.estimate(own, paired_kappa) for annotator, own in pairs.items()}
    weights = {a: len(pairs[a]) for a, figure in figures.items() if figure.value is not None}
    total = sum(weights.values())
    return [
        AnnotatorRow(
            annotator_id=annotator,
            labels=given[annotator],
            unsure=unsure[annotator],
            kappa=figures.get(annotator, Figure(None, 0)),
            weight=weights[annotator] / total if annotator in weights else None,
        )
        for annotator in sorted(given)
    ]


def human_column(records: Sequence[PatchRecord], name: str, sampling: Sampling) -> HumanColumn:
    """One column of Table 5 over ``records`` (already the column's patches)."""
    labels = Counter(label for record in records for label in record.labels.values())
    unanimous = sum(record.unanimous for record in records)
    k = fleiss_labels(records)
    fleiss_items = [record for record in records if len(record.decisive) == k]
    with_consensus = [record for record in records if record.consensus]
    consensus = Counter(record.consensus for record in with_consensus)
    return HumanColumn(
        name=name,
        bugs=count(len({record.bug_id for record in records})),
        patches=count(len(records)),
        labels={label: count(labels[label]) for label in Label.values},
        unanimous=sampling.estimate(records, unanimous_share),
        unanimous_count=unanimous,
        alpha=sampling.estimate(records, alpha),
        fleiss=sampling.estimate(fleiss_items, fleiss),
        fleiss_labels=k,
        weighted_kappa=sampling.estimate(with_consensus, weighted_consensus_kappa),
        consensus_valid=count(consensus[Label.VALID]),
        consensus_invalid=count(consensus[Label.INVALID]),
        awaiting=count(len(records) - len(with_consensus)),
        annotators=annotator_rows(records, sampling),
    )


def unanimous_share(records: Sequence[PatchRecord]) -> float | None:
    """The share of the records that are unanimous (B_clear); None for no records."""
    return sum(record.unanimous for record in records) / len(records) if records else None


@dataclasses.dataclass(frozen=True)
class PairAgreement:
    """Annotator pairs on a set of patches: each pair's κ, and their mean and median."""

    kappas: dict[Pair, Figure]  # every pair sharing a decisive patch (value None: under 2)
    mean: Figure  # over the defined κ; its interval resamples the patches
    median: float | None

    def pair(self, a: int, b: int) -> Figure | None:
        return self.kappas.get((a, b) if a < b else (b, a))


class PairCache:
    """The annotator pairs on a set of patches, computed once per distinct set: the human
    section and every run's RQ2 usually ask for the same patches."""

    def __init__(self, sampling: Sampling) -> None:
        self.sampling = sampling
        self.done: dict[frozenset[int], PairAgreement] = {}

    def __call__(self, records: Sequence[PatchRecord]) -> PairAgreement:
        key = frozenset(record.patch_id for record in records)
        if key not in self.done:
            kappas = {}
            for pair, labels in sorted(shared_labels(records).items()):
                kappas[pair] = (
                    self.sampling.estimate(labels, paired_kappa)
                    if len(labels) >= MIN_SHARED
                    else Figure(None, len(labels))
                )
            defined = [figure.value for figure in kappas.values() if figure.value is not None]
            mean = self.sampling.estimate(records, mean_pair_kappa)
            self.done[key] = PairAgreement(kappas, mean, median_or_none(defined))
        return self.done[key]


@dataclasses.dataclass(frozen=True)
class HumanSection:
    columns: list[HumanColumn]
    annotators: list[int]  # ids of everyone with a label in scope, in name order
    pairs: PairAgreement  # on every labelled patch

    def column(self, name: str) -> HumanColumn:
        return next(column for column in self.columns if column.name == name)


def human_section(
    records: Sequence[PatchRecord],
    annotators: Sequence[int],
    sampling: Sampling,
    pairs_on: PairCache,
) -> HumanSection:
    """Table 5 in three columns, and the annotator pairs on every labelled patch."""
    columns: list[HumanColumn] = []
    computed: dict[frozenset[int], HumanColumn] = {}
    for name in COLUMNS:
        members = column_records(records, name)
        key = frozenset(record.patch_id for record in members)
        # Until a lead settles a dispute, B_full is B_clear: the same figures, once.
        if key not in computed:
            computed[key] = human_column(members, name, sampling)
        columns.append(dataclasses.replace(computed[key], name=name))
    return HumanSection(
        columns=columns,
        annotators=list(annotators),
        pairs=pairs_on(column_records(records, LABELLED)),
    )
