"""The report's statistics as numpy formulas over count tables, one row per replicate.

Every function takes counts whose first axis is the replicate (row 0 the data itself, the
others bootstrap resamples: see ``resampling``) and returns one float per replicate, nan
where the figure is undefined. The counts are whole numbers, so every sum is exact and a
report is the same byte for byte whatever order numpy adds in; the plain definitions these
reproduce are in ``judging.agreement`` (and the tests check each against them).

Two tables carry everything:

- a *confusion table* ``(..., 4)``: the cells tp, fp, fn, tn of two raters' VALID/INVALID
  labels on the items both labelled (cell = 2·[first said INVALID] + [second said INVALID]);
- a *profile table* ``(R, M + 1, M + 1)``: how many patches had v VALID and u INVALID
  decisive labels, for every v, u ≤ M. Nominal α, Fleiss' κ and Gwet's AC1 over any number
  of raters with missing labels depend on nothing else.
"""

from typing import Any

import numpy as np

Array = np.ndarray[Any, np.dtype[np.float64]]
TP, FP, FN, TN = 0, 1, 2, 3


def ratio(numerator: Array, denominator: Array) -> Array:
    """numerator / denominator, nan where the denominator is 0 (broadcast as numpy does)."""
    denominator = np.asarray(denominator, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = np.asarray(numerator, float) / denominator
    return np.where(denominator != 0, quotient, np.nan)


def confusion_cell(first_invalid: np.ndarray, second_invalid: np.ndarray) -> np.ndarray:
    """The confusion cell (0 tp … 3 tn) of each pair of labels, VALID the positive class."""
    return 2 * np.asarray(first_invalid, np.int64) + np.asarray(second_invalid, np.int64)


def pairs_within_runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every two positions i < j of a sorted array that hold the same key, as two index arrays
    (the rows of two labels, or two ratings, of one patch; rows sorted by patch)."""
    empty = np.zeros(0, np.int64)
    if not len(keys):
        return empty, empty
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    lengths = np.diff(np.r_[starts, len(keys)])
    firsts, seconds = [empty], [empty]
    for length in np.unique(lengths):
        if length < 2:
            continue
        group = starts[lengths == length]
        upper = np.triu_indices(int(length), k=1)
        firsts.append((group[:, None] + upper[0]).ravel())
        seconds.append((group[:, None] + upper[1]).ravel())
    return np.concatenate(firsts), np.concatenate(seconds)


def cells(counts: Array) -> Array:
    """tp, fp, fn, tn of a confusion table ``(..., 4)``, each a contiguous array: the
    formulas below then read memory in order (a cell of the table itself is every fourth
    number, and a report of 37 annotators has 666 pairs × 1,001 replicates of them)."""
    return np.ascontiguousarray(np.moveaxis(np.asarray(counts, np.float64), -1, 0))


def binary(counts: Array) -> dict[str, Array]:
    """Every ``agreement.binary_metrics`` figure, and Gwet's AC1 and the share of the second
    rater's VALID labels (the prevalence when the second is the consensus), from a
    confusion table whose last axis is tp, fp, fn, tn."""
    tp, fp, fn, tn = cells(counts)
    n = tp + fp + fn + tn
    with np.errstate(invalid="ignore", over="ignore"):
        mcc_denominator = np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return {
        "accuracy": ratio(tp + tn, n),
        "kappa": _kappa(tp, fp, fn, tn),
        "mcc": ratio(tp * tn - fp * fn, mcc_denominator),
        "ac1": _ac1(tp, fp, fn, tn),
        "precision": ratio(tp, tp + fp),
        "recall": ratio(tp, tp + fn),
        "f1": ratio(2 * tp, 2 * tp + fp + fn),
        "npv": ratio(tn, tn + fn),
        "prevalence": ratio(tp + fn, n),
    }


def kappa(counts: Array) -> Array:
    """Cohen's κ in the 2 × 2 form of ``binary_metrics``:
    2(tp·tn − fn·fp) / ((tp + fp)(fp + tn) + (tp + fn)(fn + tn))."""
    return _kappa(*cells(counts))


def _kappa(tp: Array, fp: Array, fn: Array, tn: Array) -> Array:
    if np.ndim(tp) == 0:  # one table: as an array of one, for the steps in place
        return np.asarray(_kappa(*(np.atleast_1d(cell) for cell in (tp, fp, fn, tn)))[0])
    # The formula above, step by step in place: a report's pairs are 666 × 1,001 numbers, and
    # each fresh array of them costs more to allocate than to compute.
    denominator = tp + fp
    denominator *= fp + tn
    other = tp + fn
    other *= fn + tn
    denominator += other
    value = tp * tn
    np.multiply(fn, fp, out=other)
    value -= other
    value *= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        value /= denominator
    value[denominator == 0] = np.nan
    return value


def ac1_pair(counts: Array) -> Array:
    """Gwet's AC1 of two raters from their confusion table: pa = (tp + tn) / n,
    π = the share of VALID among all 2n labels, pe = 2π(1 − π); undefined when only one
    category occurs (``agreement.gwet_ac1`` on the two rows)."""
    return _ac1(*cells(counts))


def _ac1(tp: Array, fp: Array, fn: Array, tn: Array) -> Array:
    if np.ndim(tp) == 0:
        return np.asarray(_ac1(*(np.atleast_1d(cell) for cell in (tp, fp, fn, tn)))[0])
    # pa, π and pe as above, step by step in place (as ``_kappa``).
    n = tp + fp
    n += fn
    n += tn
    valid = 2 * tp
    valid += fp
    valid += fn
    invalid = 2 * tn
    invalid += fp
    invalid += fn
    both = valid > 0
    both &= invalid > 0
    # Both categories occurring means n > 0 and pe ≤ 1/2: no division below is by zero
    # where the result is kept.
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.divide(valid, 2 * n, out=valid)  # π
        chance = 2 * share
        chance *= np.subtract(1, share, out=share)  # pe = 2π(1 − π)
        value = tp + tn
        value /= n
        value -= chance
        value /= np.subtract(1, chance, out=chance)
    value[~both] = np.nan
    return value


def _grid(profiles: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    size = profiles.shape[-1]
    valid = np.arange(size)[:, None] * np.ones(size, np.int64)[None, :]
    invalid = valid.T
    return valid, invalid, valid + invalid


def _by_size(
    profiles: Array, weight: np.ndarray, sizes: np.ndarray, divide: Any, *, smallest: int
) -> Array:
    """Σ over label counts m ≥ smallest of (Σ over profiles with m labels of count · weight)
    / divide(m).

    Each inner sum is a whole number; the division comes after, so the result is exact up
    to the last few (fixed-order) additions."""
    total = np.zeros(profiles.shape[0])
    for m in np.unique(sizes[sizes >= smallest]):
        inner = (profiles * np.where(sizes == m, weight, 0)).sum(axis=(1, 2))
        total = total + inner / divide(int(m))
    return total


def alpha(profiles: Array) -> Array:
    """Krippendorff's nominal α over VALID/INVALID from a profile table.

    Each patch with m ≥ 2 decisive labels adds v·u / (m − 1) to each off-diagonal cell of the
    coincidence matrix; n_V and n_I are the pairable labels, so
    α = 1 − (n − 1) · o_VI / (n_V · n_I), undefined when n_V · n_I = 0.
    """
    valid, invalid, sizes = _grid(profiles)
    pairable = sizes >= 2
    cross = _by_size(profiles, valid * invalid, sizes, lambda m: m - 1, smallest=2)
    n_valid = (profiles * (valid * pairable)).sum(axis=(1, 2))
    n_invalid = (profiles * (invalid * pairable)).sum(axis=(1, 2))
    total = n_valid + n_invalid
    return 1.0 - ratio((total - 1) * cross, n_valid * n_invalid)


def fleiss(profiles: Array, labels: int | None) -> Array:
    """Fleiss' κ over the patches with exactly ``labels`` decisive labels (all nan without)."""
    if labels is None or labels < 2:
        return np.full(profiles.shape[0], np.nan)
    valid, invalid, sizes = _grid(profiles)
    chosen = sizes == labels
    items = (profiles * chosen).sum(axis=(1, 2))
    agreeing = (profiles * (chosen * (valid**2 + invalid**2 - labels))).sum(axis=(1, 2))
    mean_agreement = ratio(agreeing, labels * (labels - 1) * items)
    share = ratio((profiles * (chosen * valid)).sum(axis=(1, 2)), labels * items)
    chance = share**2 + (1 - share) ** 2
    return np.where(chance < 1, ratio(mean_agreement - chance, 1 - chance), np.nan)


def ac1(profiles: Array) -> Array:
    """Gwet's AC1 (the multi-rater form of irrCAC) over VALID/INVALID from a profile table.

    pa is the mean over patches with r ≥ 2 labels of Σₖ rₖ(rₖ − 1) / (r(r − 1)); π_V the mean
    over patches with a label of v / r; pe = Σₖ πₖ(1 − πₖ) / (q − 1) with q the categories
    that occur, here 2π_V(1 − π_V). Undefined when one category occurs or no patch has two.
    """
    valid, invalid, sizes = _grid(profiles)
    rated = (profiles * (sizes >= 1)).sum(axis=(1, 2))
    paired = (profiles * (sizes >= 2)).sum(axis=(1, 2))
    share = ratio(_by_size(profiles, valid, sizes, lambda m: m, smallest=1), rated)
    same = valid * (valid - 1) + invalid * (invalid - 1)
    observed = ratio(_by_size(profiles, same, sizes, lambda m: m * (m - 1), smallest=2), paired)
    chance = 2 * share * (1 - share)
    both = ((profiles * valid).sum(axis=(1, 2)) > 0) & ((profiles * invalid).sum(axis=(1, 2)) > 0)
    return np.where(both, ratio(observed - chance, 1 - chance), np.nan)


def share(counts: Array) -> Array:
    """The share of the second column of a (…, 2) table: [no, yes] counts."""
    return ratio(counts[..., 1], counts[..., 0] + counts[..., 1])


def weighted_mean(values: Array, weights: Array) -> Array:
    """Σ w·v / Σ w along the last axis over the defined values (``agreement.weighted_mean``)."""
    defined = np.isfinite(values) & (weights > 0)
    total = np.where(defined, weights, 0.0).sum(axis=-1)
    return ratio(np.where(defined, values * weights, 0.0).sum(axis=-1), total)


def mean_defined(values: Array, usable: np.ndarray) -> Array:
    """The mean along the last axis of the finite values where ``usable``; nan for none."""
    defined = np.isfinite(values) & usable
    return ratio(np.where(defined, values, 0.0).sum(axis=-1), defined.sum(axis=-1))
