"""Agreement statistics (papers 004 Tables 5–6, 000 RQ2): pure, no ORM; the plain
definitions. The agreement report computes the same figures, vectorized over its bootstrap,
in ``judging.reports.vectorized``, and its tests check them against these; calibration
ranks teams with κ, τ-b and ρ from here.

Every function takes plain lists (or arrays) and returns a ``float``, or ``None`` when the
figure is undefined: nothing to compare (empty input), a zero denominator, or a chance
agreement of 1 (everybody used one and the same category, so κ and α are 0/0 — scikit-learn,
statsmodels and scipy answer ``nan`` there; the reports show "—"). Malformed input (lists of
different lengths, unequal Fleiss row totals, an unknown weighting) raises ``ValueError``
naming the function at once.
"""

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import chain
from numbers import Real
from typing import Any, Literal

import numpy as np

SMALL_SAMPLE = 30  # fewer items than this: the report says its intervals are wide
WEIGHTS = (None, "linear", "quadratic")
LEVELS = ("nominal", "ordinal", "interval", "ratio")

LENGTHS_DIFFER = "{function}: the two lists differ in length ({first} vs {second})"
MISSING_LABEL = "{function}: a label is None; drop unlabelled items first"
BAD_WEIGHTS = "cohen_kappa: weights must be None, 'linear' or 'quadratic', not {weights!r}"
UNORDERED_LABELS = "cohen_kappa: weighted κ needs labels that sort, got {labels!r}"
NOT_A_TABLE = "fleiss_kappa: counts must be a table of items × categories"
BAD_COUNT = "fleiss_kappa: counts must be whole numbers ≥ 0, got {count!r}"
UNEQUAL_TOTALS = "fleiss_kappa: every item needs the same number of ratings, got {totals}"
TOO_FEW_RATINGS = "fleiss_kappa: every item needs at least two ratings, got {total}"
BAD_LEVEL = "krippendorff_alpha: level must be one of {levels}, not {level!r}"
RAGGED = "krippendorff_alpha: every rater needs one entry per item (None when missing)"
RAGGED_AC1 = "gwet_ac1: every rater needs one entry per item (None when missing)"
NOT_NUMERIC = "{function}: values must be numbers, got {value!r}"
NEGATIVE_RATIO = "krippendorff_alpha: ratio values must be ≥ 0, got {value!r}"
NOT_BINARY = (
    "binary_metrics: labels other than {positive!r} must be one negative label, got {labels}"
)
BAD_WEIGHT = "weighted_mean: weights must be finite and ≥ 0, got {weight!r}"

Label = Hashable


def _same_length(function: str, first: Sequence[Any], second: Sequence[Any]) -> None:
    if len(first) != len(second):
        raise ValueError(
            LENGTHS_DIFFER.format(function=function, first=len(first), second=len(second))
        )


def cohen_kappa(
    a: Sequence[Label],
    b: Sequence[Label],
    *,
    weights: Literal["linear", "quadratic"] | None = None,
) -> float | None:
    """κ = 1 − Σ wᵢⱼ·Oᵢⱼ / Σ wᵢⱼ·Eᵢⱼ, O observed and E chance proportions (Cohen 1960, 1968).

    Unweighted, w is 1 off the diagonal. Weighted, the categories are the sorted labels that
    occur in either list and wᵢⱼ = |i − j| (linear) or (i − j)² (quadratic) on their ranks,
    as scikit-learn's ``cohen_kappa_score`` does. ``None`` when the lists are empty or both
    raters used one and the same single category throughout.
    """
    _same_length("cohen_kappa", a, b)
    if weights not in WEIGHTS:
        raise ValueError(BAD_WEIGHTS.format(weights=weights))
    if any(label is None for label in chain(a, b)):
        raise ValueError(MISSING_LABEL.format(function="cohen_kappa"))
    if len(a) == 0:
        return None
    categories: list[Any] = list(dict.fromkeys(chain(a, b)))
    if weights is not None:
        try:
            categories.sort()
        except TypeError as error:
            raise ValueError(UNORDERED_LABELS.format(labels=categories)) from error
    index = {label: position for position, label in enumerate(categories)}
    size = len(categories)
    observed = np.zeros((size, size))
    np.add.at(observed, ([index[label] for label in a], [index[label] for label in b]), 1.0)
    observed /= len(a)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    ranks = np.arange(size)
    distance = np.abs(ranks[:, None] - ranks[None, :]).astype(float)
    if weights is None:
        distance = (distance > 0).astype(float)
    elif weights == "quadratic":
        distance **= 2
    chance_disagreement = float((distance * expected).sum())
    if chance_disagreement <= 0.0:
        return None
    return 1.0 - float((distance * observed).sum()) / chance_disagreement


def fleiss_kappa(counts: Sequence[Sequence[float]] | np.ndarray) -> float | None:
    """κ = (P̄ − P̄ₑ) / (1 − P̄ₑ) over an items × categories table of rating counts (Fleiss 1971).

    Every item needs the same number n ≥ 2 of ratings. ``None`` when there are no items or
    every rating fell in one category (P̄ₑ = 1).
    """
    if len(counts) == 0:
        return None
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[1] == 0:
        raise ValueError(NOT_A_TABLE)
    for count in table.flat:
        if not (math.isfinite(count) and count >= 0 and count == int(count)):
            raise ValueError(BAD_COUNT.format(count=count))
    totals = table.sum(axis=1)
    if not np.all(totals == totals[0]):
        raise ValueError(UNEQUAL_TOTALS.format(totals=sorted({int(total) for total in totals})))
    raters = float(totals[0])
    if raters < 2:
        raise ValueError(TOO_FEW_RATINGS.format(total=int(raters)))
    shares = table.sum(axis=0) / table.sum()
    chance = float((shares**2).sum())
    if chance >= 1.0:
        return None
    per_item = ((table**2).sum(axis=1) - raters) / (raters * (raters - 1))
    return (float(per_item.mean()) - chance) / (1.0 - chance)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def krippendorff_alpha(
    reliability_data: Sequence[Sequence[Any]],
    *,
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal",
) -> float | None:
    """α = 1 − Dₒ / Dₑ over raters × items, ``None`` (or nan) where a rater gave no value.

    Computed by the ``krippendorff`` package. Nominal values may be any hashable labels
    (strings are coded as numbers here); the other levels need numbers (ratio: ≥ 0). ``None``
    when no item has two values, or every pairable value is the same (Dₑ = 0).
    """
    if level not in LEVELS:
        raise ValueError(BAD_LEVEL.format(levels=", ".join(LEVELS), level=level))
    rows = [list(row) for row in reliability_data]
    if not rows or not rows[0]:
        return None
    if any(len(row) != len(rows[0]) for row in rows):
        raise ValueError(RAGGED)
    matrix = np.full((len(rows), len(rows[0])), np.nan)
    codes: dict[Hashable, int] = {}
    for rater, row in enumerate(rows):
        for item, value in enumerate(row):
            if _is_missing(value):
                continue
            if level == "nominal":
                matrix[rater, item] = codes.setdefault(value, len(codes))
                continue
            if not isinstance(value, Real):
                raise ValueError(NOT_NUMERIC.format(function="krippendorff_alpha", value=value))
            if level == "ratio" and value < 0:
                raise ValueError(NEGATIVE_RATIO.format(value=value))
            matrix[rater, item] = float(value)
    pairable = matrix[:, (~np.isnan(matrix)).sum(axis=0) >= 2]
    if np.unique(pairable[~np.isnan(pairable)]).size < 2:
        return None
    import krippendorff  # here, not at the top: see kendall_tau_b

    alpha = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))
    return alpha if math.isfinite(alpha) else None


def gwet_ac1(reliability_data: Sequence[Sequence[Any]]) -> float | None:
    """AC1 = (pₐ − pₑ) / (1 − pₑ) over raters × items, as ``krippendorff_alpha`` takes them.

    Gwet (2014), *Handbook of Inter-Rater Reliability*, 4th ed., the multi-rater form with
    missing ratings that R's irrCAC computes in ``gwet.ac1.raw`` (identity weights). Items
    nobody rated are dropped; of the n left, item i has rᵢ ratings, rᵢₖ of them in category
    k, and the q categories are the labels that occur anywhere in the data. Then

        pₐ = (1/n₂) Σ_{i: rᵢ ≥ 2} Σₖ rᵢₖ(rᵢₖ − 1) / (rᵢ(rᵢ − 1)), n₂ items with rᵢ ≥ 2,
        πₖ = (1/n) Σᵢ rᵢₖ / rᵢ,   pₑ = Σₖ πₖ(1 − πₖ) / (q − 1).

    Labels may be any hashables (compared as given; irrCAC upper-cases and trims strings).
    ``None`` when no item has two ratings or only one category occurs.
    """
    rows = [list(row) for row in reliability_data]
    if any(len(row) != len(rows[0]) for row in rows):
        raise ValueError(RAGGED_AC1)
    codes: dict[Hashable, int] = {}
    cells = [
        (item, codes.setdefault(value, len(codes)))
        for row in rows
        for item, value in enumerate(row)
        if not _is_missing(value)
    ]
    # Undefined figures, checked against irrCAC 1.0 (R) and its Python port 0.4.4: with no
    # item rated twice irrCAC's pₐ is 0/0 (NaN), here None. With one category pₑ is 0/0;
    # irrCAC substitutes pₑ = 1 − 10⁻¹⁵ and so reports AC1 = 1 (pₐ is then 1), here None
    # like κ and α on one category. With q ≥ 2, Σₖ πₖ(1 − πₖ) ≤ 1 − 1/q makes pₑ ≤ 1/q ≤ 1/2,
    # so 1 − pₑ never vanishes and needs no test.
    if not cells or len(codes) < 2:
        return None
    counts = np.zeros((len(rows[0]), len(codes)))
    items, categories = zip(*cells, strict=True)
    np.add.at(counts, (list(items), list(categories)), 1.0)
    totals = counts.sum(axis=1)
    counts, totals = counts[totals > 0], totals[totals > 0]
    paired = totals >= 2
    if not paired.any():
        return None
    pairs = totals[paired] * (totals[paired] - 1)
    agreement = float(((counts[paired] * (counts[paired] - 1)).sum(axis=1) / pairs).mean())
    shares = (counts / totals[:, None]).mean(axis=0)
    chance = float((shares * (1.0 - shares)).sum()) / (len(codes) - 1)
    return (agreement - chance) / (1.0 - chance)


def _numbers(function: str, values: Sequence[Any]) -> list[float]:
    numbers = []
    for value in values:
        if not isinstance(value, Real) or not math.isfinite(value):
            raise ValueError(NOT_NUMERIC.format(function=function, value=value))
        numbers.append(float(value))
    return numbers


def _correlation_inputs(
    function: str, x: Sequence[float], y: Sequence[float]
) -> tuple[list[float], list[float]] | None:
    """Both lists as floats, or ``None`` when a rank correlation is undefined on them."""
    _same_length(function, x, y)
    xs, ys = _numbers(function, x), _numbers(function, y)
    if len(xs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    return xs, ys


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b (ties corrected) by scipy; ``None`` under two pairs or a constant list."""
    inputs = _correlation_inputs("kendall_tau_b", x, y)
    if inputs is None:
        return None
    # Imported here: scipy.stats takes a second to import, and the report page, its command
    # and every web process import this module for its definitions without calling these.
    from scipy import stats

    tau = float(stats.kendalltau(*inputs, variant="b").statistic)
    return tau if math.isfinite(tau) else None


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's ρ (Pearson's r on average ranks) by scipy; ``None`` as for τ-b."""
    inputs = _correlation_inputs("spearman_rho", x, y)
    if inputs is None:
        return None
    from scipy import stats  # see kendall_tau_b

    rho = float(stats.spearmanr(*inputs).statistic)
    return rho if math.isfinite(rho) else None


@dataclass(frozen=True)
class BinaryMetrics:
    """A judge's verdicts against the consensus, ``positive`` (VALID) as the positive class."""

    n: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    npv: float | None
    kappa: float | None
    mcc: float | None
    confusion: dict[str, int]  # tp, fp, fn, tn


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def binary_metrics(
    predicted: Sequence[Label], actual: Sequence[Label], *, positive: Label = "VALID"
) -> BinaryMetrics:
    """Accuracy, precision, recall, F1 = 2tp / (2tp + fp + fn), NPV, Cohen's κ and MCC.

    ``predicted`` is the judge's verdicts, ``actual`` the consensus. Every label other than
    ``positive`` must be the same negative label (an UNSURE slipping in is an error, not a
    negative). Each figure is ``None`` when its denominator is 0; κ uses the 2 × 2 form
    2(tp·tn − fn·fp) / ((tp + fp)(fp + tn) + (tp + fn)(fn + tn)), equal to ``cohen_kappa``.
    Matthews' correlation is MCC = (tp·tn − fp·fn) / √((tp + fp)(tp + fn)(tn + fp)(tn + fn)),
    ``None`` when a margin is empty (scikit-learn's ``matthews_corrcoef`` answers 0.0 there).
    """
    _same_length("binary_metrics", predicted, actual)
    tp = fp = fn = tn = 0
    negatives = set()
    for guess, truth in zip(predicted, actual, strict=True):
        if guess == positive:
            if truth == positive:
                tp += 1
            else:
                fp += 1
                negatives.add(truth)
        else:
            negatives.add(guess)
            if truth == positive:
                fn += 1
            else:
                tn += 1
                negatives.add(truth)
    if len(negatives) > 1 or None in negatives:
        raise ValueError(NOT_BINARY.format(positive=positive, labels=sorted(map(str, negatives))))
    n = tp + fp + fn + tn
    kappa = _ratio(2 * (tp * tn - fn * fp), (tp + fp) * (fp + tn) + (tp + fn) * (fn + tn))
    margins = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    mcc = (tp * tn - fp * fn) / math.sqrt(margins) if margins else None
    return BinaryMetrics(
        n=n,
        accuracy=_ratio(tp + tn, n),
        precision=_ratio(tp, tp + fp),
        recall=_ratio(tp, tp + fn),
        f1=_ratio(2 * tp, 2 * tp + fp + fn),
        npv=_ratio(tn, tn + fn),
        kappa=kappa,
        mcc=mcc,
        confusion={"tp": tp, "fp": fp, "fn": fn, "tn": tn},
    )


def weighted_mean(values: Sequence[float | None], weights: Sequence[float]) -> float | None:
    """Σ wᵢ·vᵢ / Σ wᵢ over the defined values (a ``None`` value and its weight are left out).

    ``None`` when no defined value has a positive weight.
    """
    _same_length("weighted_mean", values, weights)
    for weight in weights:
        if not isinstance(weight, Real) or not math.isfinite(weight) or weight < 0:
            raise ValueError(BAD_WEIGHT.format(weight=weight))
    pairs = [
        (value, weight) for value, weight in zip(values, weights, strict=True) if value is not None
    ]
    total = sum(weight for _, weight in pairs)
    if total <= 0:
        return None
    return sum(value * weight for value, weight in pairs) / total
