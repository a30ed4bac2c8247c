"""The rated dimensions' ordinal statistics against independent implementations, on random
ratings with missing ones: ordinal Krippendorff's α against ``krippendorff``, weighted κ
(linear, quadratic) against scikit-learn's ``cohen_kappa_score``, Spearman's ρ against
scipy's ``spearmanr``; on the data (row 0) and on bootstrap resamples (a patch drawn twice
counts twice), so the intervals rest on the same arithmetic."""

import dataclasses
import itertools
import statistics
import warnings

import krippendorff
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from judging.reports import ordinal
from judging.reports.figures import Sampling
from judging.reports.ordinal import (
    MIN_SHARED,
    JudgeRatings,
    Ratings,
    coincidences,
    dimension_agreement,
    human_medians,
    judge_dimension,
    ordinal_alpha,
    pair_kappas,
    spearman,
    weighted_kappa,
)
from judging.reports.resampling import Replicates

LOW, HIGH = 1, 5
SCALE = list(range(LOW, HIGH + 1))


def random_ratings(seed: int, patches: int = 60, annotators: int = 5) -> np.ndarray:
    """(annotators, patches): a rating on 1–5 or nan (missing, about a third), raters who
    lean the same way so that the statistics are far from 0."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(LOW, HIGH + 1, patches)
    noisy = np.clip(truth + rng.integers(-1, 2, (annotators, patches)), LOW, HIGH).astype(float)
    noisy[rng.random((annotators, patches)) < 0.35] = np.nan
    return noisy


def as_ratings(matrix: np.ndarray) -> Ratings:
    annotator, patch = np.nonzero(~np.isnan(matrix))
    order = np.lexsort((annotator, patch))
    return Ratings(
        "maintainability", LOW, HIGH,
        patch=patch[order].astype(np.int64), annotator=annotator[order].astype(np.int64) + 10,
        value=matrix[annotator, patch][order].astype(np.int64),
    )  # fmt: skip


def expanded(matrix: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The matrix of a resample: each patch (column) as many times as it was drawn."""
    return np.repeat(matrix, counts.astype(int), axis=1)


def reference_alpha(matrix: np.ndarray) -> float:
    return float(
        krippendorff.alpha(
            reliability_data=matrix, level_of_measurement="ordinal", value_domain=SCALE
        )
    )


def reference_pair_kappas(matrix: np.ndarray, weights: str) -> float:
    values = []
    for a, b in itertools.combinations(range(len(matrix)), 2):
        shared = ~np.isnan(matrix[a]) & ~np.isnan(matrix[b])
        if shared.sum() < MIN_SHARED:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kappa = cohen_kappa_score(
                matrix[a][shared].astype(int), matrix[b][shared].astype(int),
                labels=SCALE, weights=weights,
            )  # fmt: skip
        if np.isfinite(kappa):
            values.append(kappa)
    return float(np.mean(values))


def reference_judge(matrix: np.ndarray, judge: np.ndarray) -> tuple[float, float, float]:
    pairs = [
        (int(judge[i]), statistics.median_low(matrix[:, i][~np.isnan(matrix[:, i])]))
        for i in range(matrix.shape[1])
        if not np.isnan(judge[i]) and (~np.isnan(matrix[:, i])).any()
    ]
    first, second = [p[0] for p in pairs], [int(p[1]) for p in pairs]
    return (
        cohen_kappa_score(first, second, labels=SCALE, weights="linear"),
        cohen_kappa_score(first, second, labels=SCALE, weights="quadratic"),
        float(spearmanr(first, second).statistic),
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ordinal_figures_match_the_independent_implementations_on_data_and_resamples(
    seed: int,
) -> None:
    matrix = random_ratings(seed)
    patches = matrix.shape[1]
    ratings = as_ratings(matrix)
    replicates = Replicates.draw(patches, Sampling(resamples=6, seed=seed))
    rng = np.random.default_rng(seed + 100)
    column_means = np.nansum(matrix, axis=0) / np.maximum((~np.isnan(matrix)).sum(axis=0), 1)
    judge = np.clip(np.round(column_means) + rng.integers(-1, 2, patches), LOW, HIGH)
    judge[rng.random(patches) < 0.2] = np.nan  # the judge failed on some patches
    rated = np.flatnonzero(~np.isnan(judge))
    judge_ratings = JudgeRatings(7, "Run 7", "nonfunctional@1", rated, judge[rated].astype(int))

    alpha = ordinal_alpha(coincidences(replicates, ratings)[0])
    linear, quadratic, pairs = pair_kappas(replicates, ratings)
    medians = human_medians(ratings)
    section = dimension_agreement(replicates, ratings, [judge_ratings])
    [judged] = section.judges
    assert judged == judge_dimension(replicates, ratings, judge_ratings, medians)
    assert pairs == 10  # 5 raters, every pair sharing patches
    for replicate in range(replicates.resamples + 1):
        counts = replicates.by_patch[:, replicate]
        drawn = expanded(matrix, counts)
        assert alpha[replicate] == pytest.approx(reference_alpha(drawn), abs=1e-9)
        assert linear[replicate] == pytest.approx(reference_pair_kappas(drawn, "linear"), abs=1e-9)
        assert quadratic[replicate] == pytest.approx(
            reference_pair_kappas(drawn, "quadratic"), abs=1e-9
        )
    # The judge against the humans' median, on the data; the intervals from the resamples.
    expected = reference_judge(matrix, judge)
    figures = (judged.kappa_linear, judged.kappa_quadratic, judged.spearman)
    for figure, value in zip(figures, expected, strict=True):
        assert figure.value == pytest.approx(value, abs=1e-9)
        assert figure.ci is not None
        assert figure.ci[0] <= figure.ci[1]
    assert section.alpha.value == pytest.approx(reference_alpha(matrix), abs=1e-9)
    assert judged.patches == sum(
        1 for i in rated if (~np.isnan(matrix[:, i])).any()
    )  # rated by both
    first_resample = expanded(matrix, replicates.by_patch[:, 1])
    judge_resample = np.repeat(judge, replicates.by_patch[:, 1].astype(int))
    # Resample 1 of the judge's figures, computed from its table, as the packages say.
    size = HIGH - LOW + 1
    median_of = np.full(patches, -1)
    median_of[medians[0]] = medians[1]
    both = rated[median_of[rated] >= 0]
    cells = (judge[both].astype(int) - LOW) * size + (median_of[both] - LOW)
    table = replicates.tally(both, cells, size * size)[1].reshape(size, size)
    kl, kq, rho = reference_judge(first_resample, judge_resample)
    assert weighted_kappa(table, 1) == pytest.approx(kl, abs=1e-9)
    assert weighted_kappa(table, 2) == pytest.approx(kq, abs=1e-9)
    assert spearman(table) == pytest.approx(rho, abs=1e-9)


def test_undefined_where_there_is_nothing_to_compare() -> None:
    replicates = Replicates.draw(3, Sampling(resamples=2))
    one_each = Ratings(
        "security", 1, 3, patch=np.array([0, 1, 2]), annotator=np.array([1, 1, 1]),
        value=np.array([1, 2, 3]),
    )  # fmt: skip
    section = dimension_agreement(replicates, one_each, [])
    assert section.alpha.value is None  # no patch rated twice
    assert section.kappa_linear.value is None
    assert section.pairs == 0
    assert section.raters == 1


def test_a_sources_figures_are_those_of_its_patches_alone() -> None:
    """By patch source, from the whole dimension's tallies: each source's α and judge as if
    its patches were all there was (the judge rates 0, off the humans' 1–5, on source b
    only), and the whole dimension as without sources."""
    matrix = random_ratings(4, patches=80)
    patches = matrix.shape[1]
    ratings = as_ratings(matrix)
    sources = ["b" if index % 3 == 0 else "a" for index in range(patches)]
    replicates = Replicates.draw(patches, Sampling(resamples=8, seed=4))
    column_means = np.nansum(matrix, axis=0) / np.maximum((~np.isnan(matrix)).sum(axis=0), 1)
    judge = np.round(column_means).astype(int)
    judge[::6] = 0  # patches 0, 6, 12…: all of source b
    rated = np.arange(patches)
    judge_ratings = JudgeRatings(7, "Run 7", "nonfunctional@1", rated, judge)

    section = dimension_agreement(replicates, ratings, [judge_ratings], sources)
    assert [group.group for group in section.by_source] == ["a", "b"]
    for group in section.by_source:
        members = np.array([source == group.group for source in sources])
        kept = members[ratings.patch]
        alone = Ratings(
            ratings.name, LOW, HIGH, ratings.patch[kept], ratings.annotator[kept],
            ratings.value[kept],
        )  # fmt: skip
        table, pairable = coincidences(replicates, alone)
        assert group.alpha == replicates.figure(ordinal_alpha(table), pairable)
        assert group.alpha.value == pytest.approx(reference_alpha(matrix[:, members]), abs=1e-9)
        on = members[rated]
        judge_alone = dataclasses.replace(judge_ratings, patch=rated[on], value=judge[on])
        medians = human_medians(alone)
        assert group.judges == [judge_dimension(replicates, alone, judge_alone, medians)]
        assert group.patches == len(medians[0])
    without = dimension_agreement(replicates, ratings, [judge_ratings])
    assert dataclasses.replace(section, by_source=[]) == without


def test_the_pairs_tallied_together_or_chunk_by_chunk_give_the_same_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """91 pairs (two chunks of κ sums): tallied in one pass over the draws, or a chunk at a
    time, the means are the same to the bit."""
    ratings = as_ratings(random_ratings(5, patches=400, annotators=14))
    replicates = Replicates.draw(400, Sampling(resamples=20, seed=5))
    together = pair_kappas(replicates, ratings)
    monkeypatch.setattr(ordinal, "PAIR_TALLY_BYTES", 1)
    alone = pair_kappas(replicates, ratings)
    assert together[2] == alone[2] == 91
    assert np.array_equal(together[0], alone[0])
    assert np.array_equal(together[1], alone[1])
