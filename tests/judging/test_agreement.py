"""The agreement statistics against scikit-learn, statsmodels, scipy, the ``krippendorff``
package and published worked examples. Pure: no database."""

import math
import re
import warnings
from collections.abc import Sequence
from fractions import Fraction
from itertools import permutations

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
)
from statsmodels.stats import inter_rater

from judging.agreement import (
    BAD_COUNT,
    BAD_LEVEL,
    BAD_WEIGHT,
    BAD_WEIGHTS,
    NEGATIVE_RATIO,
    NOT_A_TABLE,
    NOT_BINARY,
    NOT_NUMERIC,
    RAGGED,
    RAGGED_AC1,
    SMALL_SAMPLE,
    TOO_FEW_RATINGS,
    UNEQUAL_TOTALS,
    UNORDERED_LABELS,
    BinaryMetrics,
    binary_metrics,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    kendall_tau_b,
    krippendorff_alpha,
    spearman_rho,
    weighted_mean,
)

SEEDS = [0, 1, 2, 3, 4, 5, 6, 7]
LABELS = ["VALID", "INVALID"]

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", §C: 4 observers ×
# 12 units, None where an observer gave no value.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]

# Fleiss (1971) as worked on Wikipedia ("Fleiss' kappa", worked example): 10 subjects,
# 14 raters each, 5 categories.
FLEISS_WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


# R's irrCAC 1.0 (Gwet), cac.raw4raters (inst/extdata/cac.raw4raters.csv) transposed: 4
# raters × 12 subjects, None for NA. KRIPPENDORFF_2011 but for who gave subject 12 its rating.
CAC_RAW4RATERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, None],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 3],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]

# irrCAC's distrib.6raters (Fleiss 1971): 15 patients × 5 diagnoses, 6 psychiatrists each.
IRRCAC_DISTRIB_6RATERS = [
    [0, 0, 0, 6, 0],
    [0, 3, 0, 0, 3],
    [0, 1, 4, 0, 1],
    [0, 0, 0, 0, 6],
    [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0],
    [0, 0, 4, 0, 2],
    [2, 0, 3, 1, 0],
    [2, 0, 0, 4, 0],
    [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0],
    [1, 1, 0, 4, 0],
    [0, 3, 3, 0, 0],
    [1, 0, 0, 5, 0],
    [0, 2, 0, 3, 1],
]

# irrCAC's cac.dist4cat: 15 subjects × categories a, b, c, 4 raters each.
IRRCAC_DIST4CAT = [
    [3, 0, 1],
    [2, 1, 1],
    [2, 1, 1],
    [2, 0, 2],
    [3, 1, 0],
    [3, 1, 0],
    [0, 4, 0],
    [0, 3, 1],
    [0, 0, 4],
    [3, 1, 0],
    [0, 4, 0],
    [0, 3, 1],
    [0, 2, 2],
    [0, 0, 4],
    [3, 1, 0],
]

# irrCAC's cont3x3abstractors (Gwet 2014): 100 pregnancies, abstractor 1 (rows) × 2
# (columns) over ectopic, abnormal intra-uterine, normal intra-uterine.
IRRCAC_CONT3X3ABSTRACTORS = [
    [13, 0, 0],
    [0, 20, 7],
    [0, 4, 56],
]


def as_nan(rows: list[list[int | None]]) -> np.ndarray:
    return np.array([[np.nan if value is None else value for value in row] for row in rows])


def raters_from_counts(counts: list[list[int]]) -> list[list[int]]:
    """Raters × items from an items × categories table with equal row totals: rater j gives
    item i its j-th rating (AC1 depends on the counts only, not on who gave which)."""
    per_item = [[k for k, count in enumerate(row) for _ in range(count)] for row in counts]
    return [list(rater) for rater in zip(*per_item, strict=True)]


def raters_from_table(table: list[list[int]]) -> list[list[int]]:
    """Two raters × items from a contingency table, rater 1 on the rows."""
    pairs = [
        (a, b) for a, row in enumerate(table) for b, count in enumerate(row) for _ in range(count)
    ]
    return [[a for a, _ in pairs], [b for _, b in pairs]]


# -- Cohen's κ ----------------------------------------------------------------------------


def test_cohen_kappa_published_example() -> None:
    # Wikipedia, "Cohen's kappa", first example: 50 proposals, yes/yes 20, yes/no 5,
    # no/yes 10, no/no 15. pₒ = 35/50 = 0.7; pₑ = 0.5·0.6 + 0.5·0.4 = 0.5; κ = 0.2/0.5 = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", SEEDS)
def test_cohen_kappa_matches_sklearn(seed: int, weights: str | None) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 6, size=40)
    # b agrees with a more often than chance, so κ is away from 0.
    b = np.where(rng.random(40) < 0.6, a, rng.integers(1, 6, size=40))
    expected = cohen_kappa_score(a, b, weights=weights)
    assert cohen_kappa(a.tolist(), b.tolist(), weights=weights) == pytest.approx(expected)
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_cohen_kappa_string_labels_match_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.choice(["VALID", "INVALID", "UNSURE"], size=30).tolist()
    b = rng.choice(["VALID", "INVALID", "UNSURE"], size=30).tolist()
    for weights in (None, "linear", "quadratic"):
        expected = cohen_kappa_score(a, b, weights=weights)
        assert cohen_kappa(a, b, weights=weights) == pytest.approx(expected)


def test_cohen_kappa_is_symmetric_and_one_on_perfect_agreement() -> None:
    a = ["VALID", "INVALID", "VALID", "VALID"]
    b = ["VALID", "INVALID", "INVALID", "VALID"]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa(b, a))
    assert cohen_kappa(a, a) == pytest.approx(1.0)


def test_cohen_kappa_undefined_cases() -> None:
    assert cohen_kappa([], []) is None
    # One category for both raters: chance agreement 1, κ = 0/0 (sklearn says nan).
    assert cohen_kappa(["VALID"] * 5, ["VALID"] * 5) is None
    assert cohen_kappa([3, 3, 3], [3, 3, 3], weights="quadratic") is None
    # Each rater constant but on different categories: defined, no agreement at all.
    assert cohen_kappa(["VALID"] * 3, ["INVALID"] * 3) == pytest.approx(0.0)


def test_cohen_kappa_rejects_malformed_input() -> None:
    with pytest.raises(ValueError, match="cohen_kappa: the two lists differ"):
        cohen_kappa(["VALID"], [])
    with pytest.raises(ValueError, match=re.escape(BAD_WEIGHTS.format(weights="cubic"))):
        cohen_kappa([1], [1], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cohen_kappa: a label is None"):
        cohen_kappa(["VALID", None], ["VALID", "VALID"])
    with pytest.raises(ValueError, match=re.escape(UNORDERED_LABELS.split("{")[0])):
        cohen_kappa([1, "a"], [1, 1], weights="linear")


# -- Fleiss' κ ----------------------------------------------------------------------------


def test_fleiss_kappa_published_example() -> None:
    # Wikipedia's working: P̄ = 0.378, P̄ₑ = 0.213, κ = (0.378 − 0.213) / (1 − 0.213) = 0.210.
    assert fleiss_kappa(FLEISS_WIKIPEDIA) == pytest.approx(0.210, abs=5e-4)


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=25)
    # 4 raters per item, each right with probability 0.7.
    ratings = np.where(rng.random((25, 4)) < 0.7, truth[:, None], rng.integers(0, 3, (25, 4)))
    counts, _ = inter_rater.aggregate_raters(ratings)
    assert fleiss_kappa(counts) == pytest.approx(inter_rater.fleiss_kappa(counts))
    assert fleiss_kappa(counts.tolist()) == pytest.approx(inter_rater.fleiss_kappa(counts))


def test_fleiss_kappa_undefined_and_malformed() -> None:
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # every rating VALID: P̄ₑ = 1
    with pytest.raises(ValueError, match=re.escape(UNEQUAL_TOTALS.split("{")[0])):
        fleiss_kappa([[2, 1], [1, 1]])
    with pytest.raises(ValueError, match=re.escape(TOO_FEW_RATINGS.format(total=1))):
        fleiss_kappa([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match=re.escape(BAD_COUNT.split("{")[0])):
        fleiss_kappa([[1.5, 0.5], [1, 1]])
    with pytest.raises(ValueError, match=re.escape(BAD_COUNT.split("{")[0])):
        fleiss_kappa([[-1, 3], [1, 1]])
    with pytest.raises(ValueError, match=re.escape(NOT_A_TABLE)):
        fleiss_kappa([1, 2, 3])


# -- Krippendorff's α ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_krippendorff_alpha_published_example(level: str, published: float) -> None:
    # Krippendorff (2011) §C. Nominal working: 40 pairable values, nᵥ = 9, 13, 10, 5, 3 for
    # the values 1–5, 8 disagreeing coincidences; α = 1 − (40 − 1)·8 / (40² − Σnᵥ²)
    # = 1 − 312 / 1216 = 0.743. The other levels are the paper's figures.
    alpha = krippendorff_alpha(KRIPPENDORFF_2011, level=level)  # type: ignore[arg-type]
    assert alpha == pytest.approx(published, abs=5e-4)


def test_krippendorff_alpha_nominal_strings_are_coded() -> None:
    names = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    as_strings = [[None if v is None else names[v] for v in row] for row in KRIPPENDORFF_2011]
    assert krippendorff_alpha(as_strings) == pytest.approx(0.743421052631579)
    assert krippendorff_alpha(as_nan(KRIPPENDORFF_2011).tolist()) == pytest.approx(
        0.743421052631579
    )


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", SEEDS)
def test_krippendorff_alpha_matches_package(seed: int, level: str) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 5, size=30)
    ratings = np.where(rng.random((3, 30)) < 0.7, truth, rng.integers(1, 5, size=(3, 30)))
    data: list[list[int | None]] = [
        [None if rng.random() < 0.2 else int(value) for value in row] for row in ratings
    ]
    expected = krippendorff.alpha(reliability_data=as_nan(data), level_of_measurement=level)
    assert krippendorff_alpha(data, level=level) == pytest.approx(expected)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", SEEDS)
def test_krippendorff_alpha_equals_fleiss_style_labels(seed: int) -> None:
    """VALID/INVALID labels give the same α as the package on their 1/0 codes."""
    rng = np.random.default_rng(seed)
    labels = rng.choice(LABELS, size=(4, 20)).tolist()
    codes = [[LABELS.index(label) for label in row] for row in labels]
    expected = krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal")
    assert krippendorff_alpha(labels) == pytest.approx(expected)


def test_krippendorff_alpha_undefined_cases() -> None:
    assert krippendorff_alpha([]) is None
    assert krippendorff_alpha([[], []]) is None
    assert krippendorff_alpha([["VALID", "VALID"], ["VALID", "VALID"]]) is None
    # No item has two values: nothing is pairable.
    assert krippendorff_alpha([["VALID", None], [None, "INVALID"]]) is None
    # The pairable values all agree; the lone INVALID pairs with nobody (the package: nan).
    assert krippendorff_alpha([["VALID", "VALID", None], ["VALID", "VALID", "INVALID"]]) is None


def test_krippendorff_alpha_rejects_malformed_input() -> None:
    with pytest.raises(ValueError, match=re.escape(BAD_LEVEL.split("{")[0])):
        krippendorff_alpha([[1, 2]], level="ordinl")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=re.escape(RAGGED)):
        krippendorff_alpha([[1, 2], [1]])
    with pytest.raises(ValueError, match="krippendorff_alpha: values must be numbers"):
        krippendorff_alpha([["low", "high"], ["low", "low"]], level="ordinal")
    with pytest.raises(ValueError, match=re.escape(NEGATIVE_RATIO.format(value=-1))):
        krippendorff_alpha([[-1, 2], [1, 2]], level="ratio")


# -- Gwet's AC1 --------------------------------------------------------------------------


def ac1_by_pairs(reliability_data: Sequence[Sequence[object]]) -> Fraction | None:
    """Gwet's AC1 the long way, in exact fractions: pₐ as the share of ordered pairs of an
    item's ratings that agree, averaged over the items rated at least twice; πₖ as the
    share of an item's ratings in k, averaged over the items rated at all."""
    columns = [[row[item] for row in reliability_data] for item in range(len(reliability_data[0]))]
    items = [[label for label in column if label is not None] for column in columns]
    items = [ratings for ratings in items if ratings]
    categories = {label for ratings in items for label in ratings}
    paired = [ratings for ratings in items if len(ratings) >= 2]
    if not paired or len(categories) < 2:
        return None
    pa = sum(
        Fraction(
            sum(a == b for a, b in permutations(ratings, 2)), len(ratings) * (len(ratings) - 1)
        )
        for ratings in paired
    ) / len(paired)
    shares = [sum(Fraction(r.count(k), len(r)) for r in items) / len(items) for k in categories]
    pe = sum(share * (1 - share) for share in shares) / (len(categories) - 1)
    return (pa - pe) / (1 - pe)


def test_gwet_ac1_published_example_with_missing_ratings() -> None:
    # irrCAC (R, 1.0) vignette "Calculating Chance-corrected Agreement Coefficients", and the
    # docstring of the Python port's irrCAC.raw: gwet.ac1.raw(cac.raw4raters) gives
    # pa 0.8181818, pe 0.1903212, AC1 0.77544. Working: 12 subjects, 11 rated twice or more;
    # per-subject agreement 1, ½ (2 2 3 2), 1, 1, 1, 0 (1 2 3 4), 1, ½ (1 1 2 1), 1, 1, 1, so
    # pa = 9/11. Σᵢ rᵢₖ/rᵢ = 3, 3.25, 3.5, 1.25, 1 for the categories 1–5, πₖ = that / 12;
    # pe = (1 − Σπₖ²) / 4 = (1 − 34.375/144) / 4 = 877/4608; AC1 = 31825/41041.
    ac1 = gwet_ac1(CAC_RAW4RATERS)
    assert ac1 == pytest.approx(31825 / 41041)
    assert ac1 == pytest.approx(0.77544, abs=5e-6)
    assert ac1_by_pairs(CAC_RAW4RATERS) == Fraction(31825, 41041)


@pytest.mark.parametrize(
    ("data", "published"),
    [
        # gwet.ac1.dist(distrib.6raters): pa 0.5511111, pe 0.1914815, AC1 0.4448007.
        (raters_from_counts(IRRCAC_DISTRIB_6RATERS), 0.4448007),
        # gwet.ac1.dist(cac.dist4cat[, 2:4]): AC1 0.3518903.
        (raters_from_counts(IRRCAC_DIST4CAT), 0.3518903),
        # gwet.ac1.table(cont3x3abstractors): pa 0.89, pe 0.269925, AC1 0.8493305.
        (raters_from_table(IRRCAC_CONT3X3ABSTRACTORS), 0.8493305),
    ],
    ids=["distrib.6raters", "cac.dist4cat", "cont3x3abstractors"],
)
def test_gwet_ac1_published_examples_without_missing_ratings(
    data: list[list[int]], published: float
) -> None:
    # The figures the irrCAC (R, 1.0) vignette "Calculating Chance-corrected Agreement
    # Coefficients" prints (7 digits), on its datasets turned into raw ratings. The Python
    # port irrCAC 0.4.4 (run under its own pins, outside this venv) gives the same figures
    # from the same raw ratings.
    assert gwet_ac1(data) == pytest.approx(published, abs=5e-8)


@pytest.mark.parametrize("seed", range(50))
def test_gwet_ac1_matches_pairwise_reference(seed: int) -> None:
    # irrCAC cannot sit in requirements.txt (every release pins scipy==1.12.0 and
    # pandas<3), so the independent implementation is ac1_by_pairs above.
    rng = np.random.default_rng(seed)
    raters, items = int(rng.integers(2, 7)), int(rng.integers(5, 30))
    names = ["VALID", "INVALID", "UNSURE", "SKIP"][: int(rng.integers(2, 5))]
    truth = rng.integers(0, len(names), size=items)
    codes = np.where(
        rng.random((raters, items)) < 0.6, truth, rng.integers(0, len(names), (raters, items))
    )
    data: list[list[str | None]] = [
        [None if rng.random() < 0.3 else names[code] for code in row] for row in codes
    ]
    expected = ac1_by_pairs(data)
    assert expected is not None
    assert gwet_ac1(data) == pytest.approx(float(expected))


@pytest.mark.parametrize("seed", SEEDS)
def test_gwet_ac1_two_raters_binary(seed: int) -> None:
    """Two raters, two categories: AC1 = (pₐ − pₑ) / (1 − pₑ) with pₑ = 2π(1 − π), π the mean
    of the two raters' VALID shares (Gwet 2008)."""
    rng = np.random.default_rng(seed)
    a = rng.choice(LABELS, size=40).tolist()
    b = [label if rng.random() < 0.7 else rng.choice(LABELS) for label in a]
    pa = sum(x == y for x, y in zip(a, b, strict=True)) / 40
    share = (a.count("VALID") + b.count("VALID")) / 80
    pe = 2 * share * (1 - share)
    assert gwet_ac1([a, b]) == pytest.approx((pa - pe) / (1 - pe))


def test_gwet_ac1_hand_computed_two_raters() -> None:
    # The Cohen's κ example above: yes/yes 20, yes/no 5, no/yes 10, no/no 15. pa = 0.7;
    # π_yes = (25 + 30) / 100 = 0.55, pe = 2·0.55·0.45 = 0.495; AC1 = 0.205 / 0.505 = 41/101
    # (κ is 0.4 on the same table).
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert gwet_ac1([a, b]) == pytest.approx(41 / 101)


def test_gwet_ac1_labels_strings_ints_and_nan() -> None:
    names = {1: "very low", 2: "low", 3: "mid", 4: "high", 5: "very high"}
    as_strings = [[None if v is None else names[v] for v in row] for row in CAC_RAW4RATERS]
    expected = 31825 / 41041
    assert gwet_ac1(as_strings) == pytest.approx(expected)
    assert gwet_ac1(as_nan(CAC_RAW4RATERS).tolist()) == pytest.approx(expected)
    assert gwet_ac1(as_nan(CAC_RAW4RATERS)) == pytest.approx(expected)
    # Labels are compared as given: 1 and "1" are two categories.
    assert gwet_ac1([[1, "1"], [1, "1"]]) == pytest.approx(1.0)


def test_gwet_ac1_counts_items_rated_once_and_drops_unrated() -> None:
    # The lone INVALID pairs with nobody but still counts in q and πₖ, as in irrCAC:
    # pa = 1, π = 2/3 and 1/3, pe = 4/9, AC1 = 1 (α is undefined on these data).
    assert gwet_ac1([["VALID", "VALID", "INVALID"], ["VALID", "VALID", None]]) == 1.0
    # An item nobody rated changes nothing.
    with_unrated = [[*row, None] for row in CAC_RAW4RATERS]
    assert gwet_ac1(with_unrated) == pytest.approx(31825 / 41041)


def test_gwet_ac1_undefined_cases() -> None:
    assert gwet_ac1([]) is None
    assert gwet_ac1([[], []]) is None
    assert gwet_ac1([[None, None], [None, math.nan]]) is None
    # One category: pe is 0/0 (irrCAC reports 1 by taking pe = 1 − 10⁻¹⁵).
    assert gwet_ac1([["VALID", "VALID"], ["VALID", "VALID"]]) is None
    assert gwet_ac1([["VALID", None, "VALID"], ["VALID", "VALID", None]]) is None
    # No item has two ratings: pa is 0/0 (irrCAC: NaN).
    assert gwet_ac1([["VALID", None], [None, "INVALID"]]) is None
    assert gwet_ac1([["VALID", "INVALID"]]) is None


def test_gwet_ac1_rejects_ragged_rows() -> None:
    with pytest.raises(ValueError, match=re.escape(RAGGED_AC1)):
        gwet_ac1([["VALID", "INVALID"], ["VALID"]])
    with pytest.raises(ValueError, match=re.escape(RAGGED_AC1)):
        gwet_ac1([[], ["VALID"]])


# -- Kendall's τ-b and Spearman's ρ -------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_rank_correlations_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=30)  # a human label: many ties
    scores = np.round(labels * 30 + rng.normal(50, 20, size=30))  # a team score
    assert kendall_tau_b(scores.tolist(), labels.tolist()) == pytest.approx(
        stats.kendalltau(scores, labels, variant="b").statistic
    )
    assert spearman_rho(scores.tolist(), labels.tolist()) == pytest.approx(
        stats.spearmanr(scores, labels).statistic
    )


def test_rank_correlations_hand_computed() -> None:
    # x = 1, 2, 3 against y = 1, 3, 2: one discordant pair of three; no ties, so τ-b = τ-a
    # = (2 − 1) / 3; ρ = 1 − 6·Σd² / (n(n² − 1)) = 1 − 6·2 / 24 = 0.5.
    assert kendall_tau_b([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert spearman_rho([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)


@pytest.mark.parametrize("correlation", [kendall_tau_b, spearman_rho])
def test_rank_correlations_undefined_and_malformed(correlation) -> None:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConstantInputWarning leaks from scipy
        assert correlation([], []) is None
        assert correlation([1.0], [2.0]) is None
        assert correlation([1, 1, 1], [1, 2, 3]) is None
        assert correlation([1, 2, 3], [0, 0, 0]) is None
    name = correlation.__name__
    with pytest.raises(ValueError, match=f"{name}: the two lists differ"):
        correlation([1, 2], [1])
    with pytest.raises(ValueError, match=f"{name}: values must be numbers"):
        correlation([1, "VALID"], [1, 2])
    with pytest.raises(ValueError, match=f"{name}: values must be numbers"):
        correlation([1, math.nan], [1, 2])


# -- Binary metrics -----------------------------------------------------------------------


def test_binary_metrics_hand_computed() -> None:
    # tp 3, fp 1, fn 2, tn 4. Accuracy 7/10; precision 3/4; recall 3/5; F1 6/9; NPV 4/6;
    # κ: pₒ = 0.7, pₑ = 0.4·0.5 + 0.6·0.5 = 0.5, κ = 0.2 / 0.5 = 0.4;
    # MCC = (3·4 − 1·2) / √(4·5·5·6) = 10 / √600.
    predicted = ["VALID"] * 3 + ["VALID"] + ["INVALID"] * 2 + ["INVALID"] * 4
    actual = ["VALID"] * 3 + ["INVALID"] + ["VALID"] * 2 + ["INVALID"] * 4
    assert binary_metrics(predicted, actual) == BinaryMetrics(
        n=10,
        accuracy=pytest.approx(0.7),
        precision=pytest.approx(0.75),
        recall=pytest.approx(0.6),
        f1=pytest.approx(2 / 3),
        npv=pytest.approx(2 / 3),
        kappa=pytest.approx(0.4),
        mcc=pytest.approx(10 / math.sqrt(600)),
        confusion={"tp": 3, "fp": 1, "fn": 2, "tn": 4},
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_binary_metrics_match_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    actual = rng.choice(LABELS, size=50).tolist()
    predicted = [a if rng.random() < 0.75 else rng.choice(LABELS) for a in actual]
    metrics = binary_metrics(predicted, actual)
    [[tn, fp], [fn, tp]] = confusion_matrix(actual, predicted, labels=["INVALID", "VALID"])
    assert metrics.confusion == {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    assert metrics.n == 50
    assert metrics.accuracy == pytest.approx(accuracy_score(actual, predicted))
    assert metrics.precision == pytest.approx(precision_score(actual, predicted, pos_label="VALID"))
    assert metrics.recall == pytest.approx(recall_score(actual, predicted, pos_label="VALID"))
    assert metrics.f1 == pytest.approx(f1_score(actual, predicted, pos_label="VALID"))
    assert metrics.npv == pytest.approx(precision_score(actual, predicted, pos_label="INVALID"))
    assert metrics.kappa == pytest.approx(cohen_kappa_score(actual, predicted))
    assert metrics.kappa == pytest.approx(cohen_kappa(predicted, actual))
    assert metrics.mcc == pytest.approx(matthews_corrcoef(actual, predicted))


@pytest.mark.parametrize("seed", range(50))
def test_binary_metrics_mcc_matches_sklearn_where_defined(seed: int) -> None:
    # Short lists, so that some have an empty margin (a rater or the truth constant).
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 7))
    actual = rng.choice(LABELS, size=size).tolist()
    predicted = rng.choice(LABELS, size=size).tolist()
    metrics = binary_metrics(predicted, actual)
    tp, fp, fn, tn = (metrics.confusion[key] for key in ("tp", "fp", "fn", "tn"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "a single label was found"
        expected = matthews_corrcoef(actual, predicted)
    if (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn) == 0:
        assert metrics.mcc is None
        assert expected == 0.0  # scikit-learn's convention
    else:
        assert metrics.mcc == pytest.approx(expected)


def test_binary_metrics_other_positive_label() -> None:
    metrics = binary_metrics([1, 0, 1, 1], [1, 0, 0, 1], positive=1)
    assert metrics.confusion == {"tp": 2, "fp": 1, "fn": 0, "tn": 1}
    assert metrics.precision == pytest.approx(2 / 3)


def test_binary_metrics_zero_denominators() -> None:
    empty = binary_metrics([], [])
    assert empty.n == 0
    assert empty.confusion == {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    assert {empty.accuracy, empty.precision, empty.recall, empty.f1, empty.npv} == {None}
    assert empty.kappa is None
    assert empty.mcc is None
    # The judge says INVALID throughout, on patches that are all INVALID.
    all_invalid = binary_metrics(["INVALID"] * 4, ["INVALID"] * 4)
    assert all_invalid.accuracy == 1.0
    assert all_invalid.npv == 1.0
    assert all_invalid.precision is None  # never predicted VALID
    assert all_invalid.recall is None  # nothing VALID to find
    assert all_invalid.f1 is None
    assert all_invalid.kappa is None  # one category: chance agreement 1
    assert all_invalid.mcc is None  # empty margins (scikit-learn: 0.0)
    # The judge says VALID throughout, on patches that are all INVALID: κ defined, 0.
    wrong = binary_metrics(["VALID"] * 4, ["INVALID"] * 4)
    assert (wrong.precision, wrong.recall, wrong.f1, wrong.npv) == (0.0, None, 0.0, None)
    assert wrong.kappa == 0.0
    assert wrong.mcc is None  # nothing VALID in the truth, nothing INVALID predicted


def test_binary_metrics_rejects_more_than_two_labels() -> None:
    with pytest.raises(ValueError, match=re.escape(NOT_BINARY.split("{")[0])):
        binary_metrics(["VALID", "UNSURE"], ["VALID", "INVALID"])
    with pytest.raises(ValueError, match="binary_metrics: the two lists differ"):
        binary_metrics(["VALID"], [])


# -- Bootstrap ----------------------------------------------------------------------------


# -- Weighted mean ------------------------------------------------------------------------


def test_weighted_mean() -> None:
    # Three annotators' κ against the consensus, weighted by their share of patches.
    assert weighted_mean([0.8, 0.5, 0.2], [0.5, 0.3, 0.2]) == pytest.approx(0.59)
    assert weighted_mean([0.8, None], [0.25, 0.75]) == pytest.approx(0.8)
    assert weighted_mean([None, None], [1, 1]) is None
    assert weighted_mean([], []) is None
    assert weighted_mean([0.5], [0]) is None
    with pytest.raises(ValueError, match=re.escape(BAD_WEIGHT.format(weight=-1))):
        weighted_mean([0.5], [-1])
    with pytest.raises(ValueError, match="weighted_mean: the two lists differ"):
        weighted_mean([0.5], [])


def test_small_sample_threshold() -> None:
    assert SMALL_SAMPLE == 30


def test_messages_name_the_function() -> None:
    assert NOT_NUMERIC.format(function="f", value="x") == "f: values must be numbers, got 'x'"
