"""The human section of an agreement report (paper 004 Table 5): how far annotators agree
with each other and with the consensus. Pure: computed from a ``Scope``.

Three columns: every labelled patch, B_full (the patches with a consensus) and B_clear (the
unanimous ones). While disputes wait for a lead, B_full is smaller than the labelled
patches; the paper's B_full is both, after every dispute was settled. UNSURE is a missing
label everywhere, as in the papers.
"""

import dataclasses
from statistics import median

import numpy as np
from scipy import sparse

from judging.models import Label
from judging.reports import vectorized
from judging.reports.figures import Figure, count
from judging.reports.scope import Mask, Scope
from judging.reports.vectorized import Array

LABELLED, B_FULL, B_CLEAR = "labelled", "b_full", "b_clear"
COLUMNS = {LABELLED: "All labelled", B_FULL: "B_full", B_CLEAR: "B_clear"}
MIN_SHARED = 2  # patches two raters must share for their κ (and a mean to count it)

Pair = tuple[int, int]  # two annotator ids, the smaller first


def column_mask(scope: Scope, column: str) -> Mask:
    """The patches of one column: labelled, with a consensus (B_full), unanimous (B_clear)."""
    if column == LABELLED:
        return scope.labelled
    if column == B_FULL:
        return scope.with_consensus
    return scope.unanimous


def fleiss_labels(scope: Scope, mask: Mask) -> int | None:
    """The number of decisive labels Fleiss' κ uses: the most common one among the patches
    with at least two (the larger on a tie); None when no patch has two."""
    sizes = (scope.valid + scope.invalid)[mask]
    counts = np.bincount(sizes[sizes >= 2])
    if not counts.any():
        return None
    return int(len(counts) - 1 - np.argmax(counts[::-1]))


def median_or_none(values: list[float]) -> float | None:
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
    ac1: Figure  # Gwet's AC1 over every decisive label (robust to skewed labels)
    weighted_kappa: Figure  # κ against the consensus, weighted average over annotators
    consensus_valid: Figure
    consensus_invalid: Figure
    awaiting: Figure  # labelled patches without a consensus yet
    annotators: list[AnnotatorRow]

    @property
    def title(self) -> str:
        return COLUMNS[self.name]


def consensus_kappas(scope: Scope, mask: Mask) -> tuple[Array, Array]:
    """Each annotator's labels against the consensus on the mask's patches
    (``Scope.annotator_consensus_cells``) and their κ, per replicate: tallied once for a
    column's weighted κ and its annotator rows."""

    def compute() -> tuple[Array, Array]:
        cells = scope.annotator_consensus_cells(mask)
        return cells, vectorized.kappa(cells)

    return scope.memo("consensus_kappas", mask, compute)


def weighted_consensus_kappa(scope: Scope, mask: Mask) -> Figure:
    """Annotators' κ against the consensus, averaged with weights = patches each labelled."""
    cells, kappas = consensus_kappas(scope, mask)
    values = vectorized.weighted_mean(kappas, cells.sum(axis=-1))
    return scope.figure(values, int((mask & scope.with_consensus).sum()))


def annotator_rows(scope: Scope, mask: Mask) -> list[AnnotatorRow]:
    """Each annotator with a label on the mask's patches, by id, with their κ against the
    consensus and their weight."""
    cells, kappas = consensus_kappas(scope, mask)
    shared = cells[0].sum(axis=-1).astype(int)
    given, unsure = scope.annotator_label_counts(mask)
    present = np.flatnonzero(shared)
    figures = dict(
        zip(
            present.tolist(),
            scope.figures(kappas[:, present], shared[present].tolist()),
            strict=True,
        )
    )
    weights = {p: int(shared[p]) for p, figure in figures.items() if figure.value is not None}
    total = sum(weights.values())
    return [
        AnnotatorRow(
            annotator_id=int(scope.annotators[position]),
            labels=int(given[position]),
            unsure=int(unsure[position]),
            kappa=figures.get(position, Figure(None, 0)),
            weight=weights[position] / total if position in weights else None,
        )
        for position in np.flatnonzero(given).tolist()
    ]


def human_column(scope: Scope, mask: Mask, name: str) -> HumanColumn:
    """One column of Table 5 over the patches of ``mask``."""
    patches = int(mask.sum())
    labels = scope.label_counts(mask)
    profiles = scope.profiles(mask)
    k = fleiss_labels(scope, mask)
    fleiss_items = int((mask & (scope.valid + scope.invalid == k)).sum()) if k else 0
    consensus = scope.consensus[mask & scope.with_consensus]
    with_consensus = len(consensus)
    unanimous = scope.flag_counts(mask, scope.unanimous)
    bugs = np.unique(scope.bug_ids[mask])
    return HumanColumn(
        name=name,
        bugs=count(len(bugs)),
        patches=count(patches),
        labels={label: count(labels[label]) for label in Label.values},
        unanimous=scope.figure(vectorized.share(unanimous), patches),
        unanimous_count=int(unanimous[0, 1]),
        alpha=scope.figure(vectorized.alpha(profiles), patches),
        fleiss=scope.figure(vectorized.fleiss(profiles, k), fleiss_items),
        fleiss_labels=k,
        ac1=scope.figure(vectorized.ac1(profiles), patches),
        weighted_kappa=weighted_consensus_kappa(scope, mask),
        consensus_valid=count(int((consensus == 1).sum())),
        consensus_invalid=count(int((consensus == 0).sum())),
        awaiting=count(patches - with_consensus),
        annotators=annotator_rows(scope, mask),
    )


@dataclasses.dataclass(frozen=True)
class PairAgreement:
    """Annotator pairs on a set of patches: each pair's κ, and their mean and median."""

    kappas: dict[Pair, Figure]  # every pair sharing a decisive patch (value None: under 2)
    mean: Figure  # over the pairs with a defined κ; its interval resamples the patches
    median: float | None
    mean_ac1: Figure  # Gwet's AC1 of each pair, averaged the same way

    def pair(self, a: int, b: int) -> Figure | None:
        return self.kappas.get((a, b) if a < b else (b, a))


def pair_kappas(scope: Scope, mask: Mask) -> tuple[list[Pair], Array, Array, np.ndarray]:
    """The annotator pairs on the mask's patches: the pairs, their confusion tables, their
    κ and whether they share at least ``MIN_SHARED`` patches, per replicate."""

    def compute() -> tuple[list[Pair], Array, Array, np.ndarray]:
        pairs, cells = scope.pair_cells(mask)
        return pairs, cells, vectorized.kappa(cells), cells.sum(axis=-1) >= MIN_SHARED

    return scope.memo("pair_kappas", mask, compute)


def pair_agreement(scope: Scope, mask: Mask) -> PairAgreement:
    """Every annotator pair's κ on the mask's patches, and the mean over the pairs that
    share at least ``MIN_SHARED`` of them (in each replicate)."""
    return scope.memo("pair_agreement", mask, lambda: _pair_agreement(scope, mask))


def _pair_agreement(scope: Scope, mask: Mask) -> PairAgreement:
    pairs, cells, kappas, usable = pair_kappas(scope, mask)
    shared = cells.sum(axis=-1)
    counts = shared[0].astype(int).tolist()
    figures = {
        pair: figure if n >= MIN_SHARED else Figure(None, n)
        for pair, n, figure in zip(pairs, counts, scope.figures(kappas, counts), strict=True)
    }
    defined = [figure.value for figure in figures.values() if figure.value is not None]
    patches = int(mask.sum())
    return PairAgreement(
        kappas=figures,
        mean=scope.figure(vectorized.mean_defined(kappas, usable), patches),
        median=median_or_none(defined),
        mean_ac1=scope.figure(vectorized.mean_defined(vectorized.ac1_pair(cells), usable), patches),
    )


def pairwise_means(scope: Scope, mask: Mask) -> dict[int, Figure]:
    """Each annotator's mean κ with every other annotator they share at least
    ``MIN_SHARED`` decisive patches of the mask with: what says how well one annotator
    agrees when the consensus is unanimous by construction."""
    pairs, _, kappas, usable = pair_kappas(scope, mask)
    if not pairs:
        return {}
    # member[a, p]: annotator a is one of pair p (two of each column), a sparse matrix.
    positions = np.searchsorted(scope.annotators, np.asarray(pairs)).ravel()
    columns = np.repeat(np.arange(len(pairs)), 2)
    member = sparse.csr_array(
        (np.ones(len(positions)), (positions, columns)),
        shape=(len(scope.annotators), len(pairs)),
    )
    defined = np.isfinite(kappas) & usable
    sums = (member @ np.where(defined, kappas, 0.0).T).T
    means = vectorized.ratio(sums, (member @ defined.T.astype(np.float64)).T)
    labelled = np.bincount(
        scope.decisive_annotator[mask[scope.decisive_patch]], minlength=len(scope.annotators)
    )
    figures = scope.figures(means, labelled.tolist())
    return {int(annotator): figures[p] for p, annotator in enumerate(scope.annotators)}


@dataclasses.dataclass(frozen=True)
class HumanSection:
    columns: list[HumanColumn]
    annotators: list[int]  # ids of everyone with a label in scope, in name order
    pairs: PairAgreement  # on every labelled patch
    pairwise: dict[int, Figure]  # annotator id → mean κ with the others; n = their labels
    # No patch has a consensus but a unanimous one (no adjudication, no majority): every
    # annotator's κ against the consensus is 1 by construction, so read ``pairwise``.
    unanimous_only: bool

    def column(self, name: str) -> HumanColumn:
        return next(column for column in self.columns if column.name == name)


def human_section(scope: Scope, annotators: list[int]) -> HumanSection:
    """Table 5 in three columns, and the annotator pairs on every labelled patch."""
    columns: list[HumanColumn] = []
    computed: dict[bytes, HumanColumn] = {}
    for name in COLUMNS:
        mask = column_mask(scope, name)
        key = np.packbits(mask).tobytes()
        # Until a consensus exists beyond the unanimous patches (a lead's, or a
        # majority's), B_full is B_clear: the same figures, once.
        if key not in computed:
            computed[key] = human_column(scope, mask, name)
        columns.append(dataclasses.replace(computed[key], name=name))
    return HumanSection(
        columns=columns,
        annotators=list(annotators),
        pairs=pair_agreement(scope, scope.labelled),
        pairwise=pairwise_means(scope, scope.labelled),
        unanimous_only=bool(
            scope.with_consensus.any() and np.array_equal(scope.with_consensus, scope.unanimous)
        ),
    )
