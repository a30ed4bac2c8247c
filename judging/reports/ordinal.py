"""Agreement on rated dimensions (pure): ordinal statistics per dimension, every replicate
at once (issue 29 item 5; the ordinal agreement paper 000 reports on its human-scored data).

A campaign may ask annotators to rate named dimensions on integer scales
(``judging.annotations.dimensions``), and a written judge of the ``dimensions`` kind rates
the same names (``judging.judges.answers``). Per dimension:

- human–human: Krippendorff's α with the ordinal metric (every rater, missing ratings left
  out: the coincidence matrix of the patches rated at least twice), and Cohen's weighted κ,
  linear and quadratic, of every annotator pair sharing at least ``MIN_SHARED`` rated
  patches, averaged over those pairs as the report averages the label κ;
- judge–human: the judge's rating against the humans' median (the lower median when their
  number is even, so that it is a rating on the scale): weighted κ, linear and quadratic,
  and Spearman's ρ (average ranks for ties).

Everything is computed from count tables, one per replicate of ``resampling`` (row 0 the
data): the coincidence matrix, each pair's and each judge's K × K table. Spearman's ρ of a
table is the Pearson correlation of its categories' midranks, which is what ``spearmanr``
computes on the table's rows written out. ``tests/judging/reports/test_ordinal.py`` checks
each against ``krippendorff``, scikit-learn's ``cohen_kappa_score`` and scipy's
``spearmanr``, on the data and on resamples.
"""

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import sparse

from judging.reports.figures import Figure
from judging.reports.resampling import FEW_ENTRIES, IntArray, Replicates
from judging.reports.vectorized import Array, pairs_within_runs, ratio

MIN_SHARED = 2  # rated patches two raters must share for their κ to count (as the labels')
# Annotator pairs whose κ are averaged at once (the order of the sums), and the memory the
# pairs' tables tallied at once may take (pairs × K² × R numbers).
PAIR_CHUNK = 64
PAIR_TALLY_BYTES = 32 * 2**20


@dataclasses.dataclass(frozen=True)
class Ratings:
    """One dimension's ratings in a report's scope: per rating its patch index, annotator id
    and value (sorted by patch, then annotator), and the scale ``low``…``high``."""

    name: str
    low: int
    high: int
    patch: IntArray
    annotator: IntArray
    value: IntArray

    @property
    def size(self) -> int:
        return self.high - self.low + 1


@dataclasses.dataclass(frozen=True)
class JudgeRatings:
    """A written judge's ratings of one dimension: per rated patch its index and value."""

    run_id: int
    run_label: str
    member: str  # name@N
    patch: IntArray
    value: IntArray
    offline: bool = False  # the run's model is the offline heuristic, not an LLM


@dataclasses.dataclass(frozen=True)
class JudgeDimension:
    run_id: int
    run_label: str
    member: str
    patches: int  # rated by the judge and by at least one human
    kappa_linear: Figure
    kappa_quadratic: Figure
    spearman: Figure
    offline: bool = False


@dataclasses.dataclass(frozen=True)
class GroupAgreement:
    """One dimension on one patch source's patches: the annotators' ordinal α, and each
    judge's quadratic weighted κ and ρ against their median (the pairs' κ is left to the
    whole dimension: few pairs share enough patches of one source)."""

    group: str
    patches: int  # rated by at least one human
    alpha: Figure
    judges: list[JudgeDimension]


@dataclasses.dataclass(frozen=True)
class DimensionAgreement:
    name: str
    low: int
    high: int
    ratings: int
    raters: int
    patches: int  # rated by at least one human
    alpha: Figure  # ordinal α over every rater, on the patches rated twice or more
    pairs: int  # annotator pairs sharing at least MIN_SHARED rated patches
    kappa_linear: Figure  # the mean over those pairs
    kappa_quadratic: Figure
    judges: list[JudgeDimension]
    by_source: list[GroupAgreement] = dataclasses.field(default_factory=list)


def weights(size: int, power: int) -> Array:
    """The disagreement weights of a K-point scale: |i − j|^power / (K − 1)^power."""
    index = np.arange(size, dtype=np.float64)
    distance = np.abs(index[:, None] - index[None, :])
    return (distance / max(size - 1, 1)) ** power


def weighted_kappa(tables: Array, power: int) -> Array:
    """Cohen's weighted κ of tables (..., K, K): 1 − Σ w·observed / Σ w·expected, the
    expected table the product of the margins over n (power 1 linear, 2 quadratic)."""
    tables = np.asarray(tables, np.float64)
    w = weights(tables.shape[-1], power)
    n = tables.sum(axis=(-2, -1))
    rows, columns = tables.sum(axis=-1), tables.sum(axis=-2)
    observed = np.einsum("...ij,ij->...", tables, w)
    # Σ_ij w_ij r_i c_j / n, as (r · W) · c.
    expected = ratio(np.einsum("...i,ij,...j->...", rows, w, columns), n)
    return np.where(n > 0, 1.0 - ratio(observed, expected), np.nan)


def _midranks(counts: Array) -> Array:
    """Each category's average rank among ``counts`` (..., K) observations."""
    before = np.cumsum(counts, axis=-1) - counts
    return before + (counts + 1.0) / 2.0


def spearman(tables: Array) -> Array:
    """Spearman's ρ of the pairs a table (..., K, K) counts (rows: the first rating)."""
    tables = np.asarray(tables, np.float64)
    n = tables.sum(axis=(-2, -1))
    rows, columns = tables.sum(axis=-1), tables.sum(axis=-2)
    x, y = _midranks(rows), _midranks(columns)
    mean_x = ratio((rows * x).sum(axis=-1), n)
    mean_y = ratio((columns * y).sum(axis=-1), n)
    dx, dy = x - mean_x[..., None], y - mean_y[..., None]
    covariance = np.einsum("...ij,...i,...j->...", tables, dx, dy)
    spread = np.sqrt((rows * dx**2).sum(axis=-1) * (columns * dy**2).sum(axis=-1))
    return ratio(covariance, spread)


def ordinal_alpha(coincidences: Array) -> Array:
    """Krippendorff's α, ordinal metric, of coincidence matrices (..., K, K): δ²_ck is
    (Σ_{g=c..k} n_g − (n_c + n_k)/2)², i.e. the squared distance of the categories' midpoints
    on the cumulative marginal."""
    o = np.asarray(coincidences, np.float64)
    marginal = o.sum(axis=-1)
    n = marginal.sum(axis=-1)
    middle = np.cumsum(marginal, axis=-1) - marginal / 2.0
    delta = (middle[..., :, None] - middle[..., None, :]) ** 2
    observed = (o * delta).sum(axis=(-2, -1))
    expected = ratio(
        np.einsum("...c,...k,...ck->...", marginal, marginal, delta), np.asarray(n) - 1.0
    )
    return 1.0 - ratio(observed, expected)


def coincidences(replicates: Replicates, ratings: Ratings) -> tuple[Array, int]:
    """(R + 1, K, K): each patch rated m ≥ 2 times adds n_c·n_k − [c = k]·n_c over m − 1 to
    cell (c, k); and how many patches that is."""
    sums, pairable = _coincidence_sums(replicates, ratings, np.zeros(replicates.patches, int), 1)
    return _coincidence_table(replicates, sums, None, ratings.size), int(pairable[0])


def _coincidence_sums(
    replicates: Replicates, ratings: Ratings, group: IntArray, groups: int
) -> tuple[list[tuple[int, Array]], IntArray]:
    """The coincidences' numerators per group of patches (``group``: each patch's, of
    ``groups``), before their division: per number m ≥ 2 of ratings a patch has (ascending),
    (R + 1, groups, K·K) summed over that group's patches rated m times; and per group how
    many patches were rated twice or more.

    Each sum is of whole numbers, exact in float32, by one sparse product with the
    replicates' draws per m (as ``tally``): summed over the groups, it is the whole scope's,
    to the bit."""
    size, patches = ratings.size, replicates.patches
    counts = np.bincount(
        ratings.patch * size + (ratings.value - ratings.low), minlength=patches * size
    ).reshape(patches, size)
    m = counts.sum(axis=1)
    sums = []
    pairable = np.zeros(groups, np.int64)
    for times in np.unique(m[m >= 2]).tolist():
        chosen = np.flatnonzero(m == times)
        pairable += np.bincount(group[chosen], minlength=groups)
        c = counts[chosen]
        numerators = c[:, :, None] * c[:, None, :]
        numerators[:, np.arange(size), np.arange(size)] -= c
        rows, cells = np.nonzero(numerators.reshape(len(chosen), size * size))
        matrix = sparse.csc_array(  # by patch, as ``Replicates.tally``'s
            (
                numerators.reshape(len(chosen), -1)[rows, cells].astype(np.float32),
                (group[chosen[rows]] * size * size + cells, chosen[rows]),
            ),
            shape=(groups * size * size, patches),
        )
        tallied = np.asarray(matrix @ replicates.by_patch, np.float64).T
        sums.append((times, tallied.reshape(-1, groups, size * size)))
    return sums, pairable


def _coincidence_table(
    replicates: Replicates, sums: list[tuple[int, Array]], group: int | None, size: int
) -> Array:
    """(R + 1, K, K): the coincidence matrices of one group's patches (None: all of them)
    from ``_coincidence_sums``, each m's numerators divided by m − 1, added in order of m."""
    table = np.zeros((replicates.resamples + 1, size * size))
    for times, tallied in sums:
        table += (tallied.sum(axis=1) if group is None else tallied[:, group]) / (times - 1)
    return table.reshape(-1, size, size)


def _pair_rows(ratings: Ratings) -> tuple[IntArray, IntArray]:
    """The rows of every two ratings of a patch by different annotators (first < second)."""
    return pairs_within_runs(ratings.patch)


def pair_kappas(replicates: Replicates, ratings: Ratings) -> tuple[Array, Array, int]:
    """The mean over annotator pairs sharing at least ``MIN_SHARED`` rated patches of their
    linear and quadratic weighted κ, per replicate; and the number of such pairs (in the
    data). Pairs are averaged ``PAIR_CHUNK`` at a time."""
    first, second = _pair_rows(ratings)
    size = ratings.size
    codes = (
        ratings.annotator[first] * (int(ratings.annotator.max(initial=0)) + 1)
        + (ratings.annotator[second])
    )
    used, pair_index = np.unique(codes, return_inverse=True)
    cells = (ratings.value[first] - ratings.low) * size + (ratings.value[second] - ratings.low)
    rows = replicates.resamples + 1
    sums = {1: np.zeros(rows), 2: np.zeros(rows)}
    usable_counts = np.zeros(rows)
    pairs = 0
    order = np.argsort(pair_index, kind="stable")
    bounds = np.searchsorted(pair_index[order], np.arange(0, len(used) + PAIR_CHUNK, PAIR_CHUNK))
    # Several chunks' tables from one tally (one pass over the replicates' draws), as many as
    # fit in PAIR_TALLY_BYTES; each chunk's κ then as if tallied alone.
    per_block = max(1, PAIR_TALLY_BYTES // (PAIR_CHUNK * size * size * rows * 8))
    chunks = len(bounds) - 1
    for first_chunk in range(0, chunks, per_block):
        last_chunk = min(first_chunk + per_block, chunks)
        chosen = order[bounds[first_chunk] : bounds[last_chunk]]
        local = pair_index[chosen] - first_chunk * PAIR_CHUNK
        width = min(PAIR_CHUNK * per_block, len(used) - first_chunk * PAIR_CHUNK)
        block = replicates.tally(
            ratings.patch[first[chosen]], local * size * size + cells[chosen], width * size * size
        ).reshape(rows, width, size, size)
        for chunk in range(first_chunk, last_chunk):
            start = (chunk - first_chunk) * PAIR_CHUNK
            tables = block[:, start : start + PAIR_CHUNK]
            if bounds[chunk + 1] - bounds[chunk] <= FEW_ENTRIES:
                tables = np.ascontiguousarray(tables)  # as ``tally`` gives a few entries'
            usable = tables.sum(axis=(-2, -1)) >= MIN_SHARED
            pairs += int(usable[0].sum())
            for power in (1, 2):  # both undefined together (every rating in one category)
                kappas = weighted_kappa(tables, power)
                defined = np.isfinite(kappas) & usable
                sums[power] += np.where(defined, kappas, 0.0).sum(axis=-1)
            usable_counts += defined.sum(axis=-1)
    return ratio(sums[1], usable_counts), ratio(sums[2], usable_counts), pairs


def human_medians(ratings: Ratings) -> tuple[IntArray, IntArray]:
    """Per patch rated by a human: its index and the humans' lower median rating."""
    if not len(ratings.patch):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort((ratings.value, ratings.patch))
    patch, value = ratings.patch[order], ratings.value[order]
    starts = np.flatnonzero(np.r_[True, patch[1:] != patch[:-1]])
    lengths = np.diff(np.r_[starts, len(patch)])
    return patch[starts], value[starts + (lengths - 1) // 2]


def judge_dimension(
    replicates: Replicates,
    ratings: Ratings,
    judge: JudgeRatings,
    medians: tuple[IntArray, IntArray],
) -> JudgeDimension:
    """The judge's ratings against the humans' median on the patches both rated."""
    everywhere = np.zeros(replicates.patches, np.int64)
    return _judge_by_group(replicates, ratings, judge, medians, everywhere, 0)[0]


def _judge_by_group(
    replicates: Replicates,
    ratings: Ratings,
    judge: JudgeRatings,
    medians: tuple[IntArray, IntArray],
    group: IntArray,
    groups: int,
) -> tuple[JudgeDimension, list[JudgeDimension]]:
    """``judge_dimension`` on every patch, and on each of ``groups`` groups' patches
    (``group``: each patch's), the groups' tables from one tally.

    Each table is on the scale spanning the humans' and the judge's ratings of its patches,
    as if those were all there was: a group's is cut out of the scale of every patch's."""
    human_patch, human_value = medians
    low = min(ratings.low, int(judge.value.min(initial=ratings.low)))
    high = max(ratings.high, int(judge.value.max(initial=ratings.high)))
    size = high - low + 1
    median_of = np.full(replicates.patches, -1, np.int64)
    median_of[human_patch] = human_value
    both = median_of[judge.patch] >= 0
    patch = judge.patch[both]
    cells = (judge.value[both] - low) * size + (median_of[patch] - low)
    if not groups:
        tables = replicates.tally(patch, cells, size * size).reshape(-1, size, size)
        return _judge_figures(replicates, judge, tables, len(patch)), []
    cells += group[patch] * size * size
    by_cell = replicates.tally(patch, cells, groups * size * size).reshape(-1, groups, size, size)
    # Every patch's table is the sum of its groups' (whole numbers: exact), laid out as a tally
    # of its own would be: one tally, not two.
    summed = by_cell.sum(axis=1).reshape(-1, size * size)
    tables = replicates.as_tallied(summed, len(patch)).reshape(-1, size, size)
    whole = _judge_figures(replicates, judge, tables, len(patch))
    counts = np.bincount(group[patch], minlength=groups).tolist()
    by_group = []
    judge_group = group[judge.patch]
    for number, n in enumerate(counts):
        mine = judge.value[judge_group == number]
        start = min(ratings.low, int(mine.min(initial=ratings.low))) - low
        stop = max(ratings.high, int(mine.max(initial=ratings.high))) - low + 1
        cut = by_cell[:, number, start:stop, start:stop]
        by_group.append(_judge_figures(replicates, judge, cut, n))
    return whole, by_group


def _judge_figures(
    replicates: Replicates, judge: JudgeRatings, tables: Array, n: int
) -> JudgeDimension:
    values = np.stack([weighted_kappa(tables, 1), weighted_kappa(tables, 2), spearman(tables)], 1)
    linear, quadratic, rho = replicates.figures(values, [n, n, n])
    return JudgeDimension(
        judge.run_id, judge.run_label, judge.member, n, linear, quadratic, rho, judge.offline
    )


def dimension_agreement(
    replicates: Replicates,
    ratings: Ratings,
    judges: Sequence[JudgeRatings],
    sources: Sequence[str] | None = None,
) -> DimensionAgreement:
    """One dimension's section: the humans among themselves, then each judge against them;
    with each patch's ``sources`` (scope order), by patch source too, from the same tallies
    (a source's figures are those of its patches alone)."""
    groups = sorted(set(sources)) if sources is not None else []
    number = {name: index for index, name in enumerate(groups)}
    group = (
        np.fromiter((number[source] for source in sources), np.int64, len(sources))
        if sources is not None
        else np.zeros(replicates.patches, np.int64)
    )
    sums, pairable = _coincidence_sums(replicates, ratings, group, max(len(groups), 1))
    linear, quadratic, pairs = pair_kappas(replicates, ratings)
    alpha = ordinal_alpha(_coincidence_table(replicates, sums, None, ratings.size))
    rated = len(np.unique(ratings.patch))
    figures = replicates.figures(
        np.stack([alpha, linear, quadratic], axis=1), [int(pairable.sum()), rated, rated]
    )
    medians = human_medians(ratings)
    judged = [
        _judge_by_group(replicates, ratings, judge, medians, group, len(groups)) for judge in judges
    ]
    rated_in = np.bincount(group[medians[0]], minlength=len(groups)).tolist()
    by_source = [
        GroupAgreement(
            group=name,
            patches=rated_in[index],
            alpha=replicates.figure(
                ordinal_alpha(_coincidence_table(replicates, sums, index, ratings.size)),
                int(pairable[index]),
            ),
            judges=[by_group[index] for _, by_group in judged],
        )
        for index, name in enumerate(groups)
        if rated_in[index]
    ]
    return DimensionAgreement(
        name=ratings.name,
        low=ratings.low,
        high=ratings.high,
        ratings=len(ratings.value),
        raters=len(np.unique(ratings.annotator)),
        patches=rated,
        alpha=figures[0],
        pairs=pairs,
        kappa_linear=figures[1],
        kappa_quadratic=figures[2],
        judges=[whole for whole, _ in judged],
        by_source=by_source,
    )


def dimensions_agreement(
    replicates: Replicates,
    ratings: Sequence[Ratings],
    judges: Mapping[str, Sequence[JudgeRatings]],
    sources: Sequence[str] | None = None,
) -> list[DimensionAgreement]:
    """A section per rated dimension, in the order given; with each patch's ``sources``
    (scope order), the dimension by patch source too."""
    return [dimension_agreement(replicates, r, judges.get(r.name, ()), sources) for r in ratings]
