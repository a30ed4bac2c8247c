"""The report's bootstrap (``Replicates``): deterministic for a seed, undefined resamples
left out, and percentile intervals that behave as intervals should (coverage, width)."""

import numpy as np

from judging.agreement import SMALL_SAMPLE
from judging.reports import vectorized
from judging.reports.figures import Sampling
from judging.reports.resampling import Replicates, percentiles

LABELS = ("VALID", "INVALID")


def mean_interval(
    sample: list[float], *, level: float = 0.95, resamples: int = 400, seed: int = 0
) -> tuple[float, float] | None:
    """The percentile interval of the sample's mean, by ``Replicates``."""
    replicates = Replicates.draw(len(sample), Sampling(resamples, level, seed))
    values = np.array(sample)
    means = (replicates.by_patch.T @ values) / replicates.by_patch.sum(axis=0)
    return replicates.figure(means, len(sample)).ci


def judged_cells(count: int, seed: int = 0) -> np.ndarray:
    """Confusion cells of a judge right 80% of the time (plus chance) on ``count`` items."""
    rng = np.random.default_rng(seed)
    actual = rng.random(count) < 0.5
    right = rng.random(count) < 0.8
    guess = np.where(right, actual, rng.random(count) < 0.5)
    return vectorized.confusion_cell(~guess, ~actual)


def f1_figure(cells: np.ndarray, seed: int):  # type: ignore[no-untyped-def]
    replicates = Replicates.draw(len(cells), Sampling(seed=seed))
    counts = replicates.tally(np.arange(len(cells)), cells, 4)
    return replicates.figure(vectorized.binary(counts)["f1"], len(cells))


def test_intervals_are_deterministic_for_a_seed_and_contain_the_estimate() -> None:
    cells = judged_cells(150)
    figure = f1_figure(cells, seed=7)
    assert figure.ci == f1_figure(cells, seed=7).ci
    assert figure.ci != f1_figure(cells, seed=8).ci
    assert figure.ci is not None
    assert figure.value is not None
    low, high = figure.ci
    assert low < figure.value < high
    assert high - low < 0.3


def test_undefined_cases() -> None:
    replicates = Replicates.draw(3, Sampling(resamples=50))
    # Under two items, no interval; an undefined value, no figure at all.
    assert replicates.figure(np.full(51, 0.5), 1).ci is None
    assert replicates.figure(np.full(51, np.nan), 3).value is None
    # Defined only in row 0: no resample to take an interval from.
    only_point = np.r_[0.5, np.full(50, np.nan)]
    assert replicates.figure(only_point, 3).ci is None
    # Identical items: every resample gives the same figure.
    assert mean_interval([0.5, 0.5, 0.5]) == (0.5, 0.5)


def test_undefined_resamples_are_left_out() -> None:
    # κ on 6 items: resamples holding a single category on both sides are undefined.
    cells = np.array([0] * 5 + [3])
    replicates = Replicates.draw(6, Sampling(resamples=200))
    counts = replicates.tally(np.arange(6), cells, 4)
    kappas = vectorized.kappa(counts)
    assert np.isnan(kappas[1:]).any()
    assert replicates.figure(kappas, 6).ci == (1.0, 1.0)


def test_percentiles_are_numpys_over_the_defined_values() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(size=(97, 40))
    values[rng.random(values.shape) < 0.2] = np.nan
    values[:, 0] = np.nan  # a column with nothing defined
    got = percentiles(values, (2.5, 97.5))
    assert np.isnan(got[:, 0]).all()
    for column in range(1, 40):
        defined = values[:, column][np.isfinite(values[:, column])]
        expected = np.percentile(defined, [2.5, 97.5])
        np.testing.assert_allclose(got[:, column], expected, rtol=1e-12)


def test_coverage_is_sane() -> None:
    """A 90% interval of a normal sample's mean covers the true mean about 90% of the time."""
    rng = np.random.default_rng(0)
    trials = 200
    covered = 0
    for trial in range(trials):
        sample = rng.normal(10.0, 2.0, size=40).tolist()
        interval = mean_interval(sample, level=0.9, resamples=300, seed=trial)
        assert interval is not None
        covered += interval[0] <= 10.0 <= interval[1]
    # Percentile intervals run a little narrow at n = 40; binomial noise is ±4 points.
    assert 0.78 <= covered / trials <= 0.97


def test_wider_at_higher_level_and_smaller_samples() -> None:
    sample = np.random.default_rng(1).normal(0.0, 1.0, size=100).tolist()
    narrow = mean_interval(sample, level=0.8)
    wide = mean_interval(sample, level=0.99)
    small = mean_interval(sample[: SMALL_SAMPLE - 10], level=0.8)
    assert narrow is not None
    assert wide is not None
    assert small is not None
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    assert small[1] - small[0] > narrow[1] - narrow[0]


def test_counts_summed_otherwise_are_laid_out_as_a_tally_of_theirs() -> None:
    """``as_tallied`` gives counts the values and the memory layout ``tally`` gives them, for
    a few entries (summed from rows) and many (a sparse product): what is computed from them
    then adds in the same order."""
    replicates = Replicates.draw(700, Sampling(resamples=30, seed=3))
    rng = np.random.default_rng(3)
    for entries in (40, 2000):
        patches = rng.integers(0, 700, entries)
        cells, group = rng.integers(0, 9, entries), rng.integers(0, 4, entries)
        tallied = replicates.tally(patches, cells, 9)
        by_group = replicates.tally(patches, group * 9 + cells, 36).reshape(-1, 4, 9)
        summed = replicates.as_tallied(by_group.sum(axis=1), entries)
        assert np.array_equal(summed, tallied)
        assert (summed.strides, summed.dtype) == (tallied.strides, tallied.dtype)
