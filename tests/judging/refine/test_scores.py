"""The evaluator tester's figures against hand-computed cases: ordering alignment (ties
half, and the paper's strict form), Kendall's τ-b with tied tiers and tied scores, the
pairs that count, the bootstrap over bugs, and the level filter."""

import math
import random
import statistics

import numpy as np
import pytest

from judging.refine.scores import TIER, bug_order, bug_orders, ordering


def test_a_perfect_judge_orders_every_pair() -> None:
    order = bug_order("B", {0: 90, 1: 90, 2: 60, 3: 30, 4: 10})
    assert order is not None
    # 10 pairs of levels, less (L0, L1), which share the top tier
    assert order.pairs == 9
    assert (order.alignment, order.alignment_strict) == (1.0, 1.0)
    # quality (0, 0, -1, -2, -3) against (90, 90, 60, 30, 10): 9 concordant pairs, the
    # (L0, L1) pair tied in both: τ-b = 9 / sqrt((10 - 1)(10 - 1)) = 1
    assert order.tau_b == pytest.approx(1.0)
    assert order.inversions == []


def test_an_equivalent_rewrite_scored_lower_costs_alignment_nothing_but_dents_tau() -> None:
    order = bug_order("B", {0: 90, 1: 80, 2: 60, 3: 30, 4: 10})
    assert order is not None
    assert order.alignment == 1.0
    # the (L0, L1) pair is tied in quality only: τ-b = 9 / sqrt((10 - 1)(10 - 0))
    assert order.tau_b == pytest.approx(9 / math.sqrt(90))


def test_ties_count_half_and_nothing_in_the_strict_form() -> None:
    order = bug_order("B", {0: 80, 2: 80, 3: 90, 4: 10})
    assert order is not None
    # (0,2) tie ½; (0,3) 80<90 → 0; (0,4) 1; (2,3) 0; (2,4) 1; (3,4) 1
    assert order.pairs == 6
    assert order.alignment == pytest.approx(3.5 / 6)
    assert order.alignment_strict == pytest.approx(3 / 6)
    # x = (0, -1, -2, -3), y = (80, 80, 90, 10): C = 3, D = 2, one pair tied in y only:
    # τ-b = (3 - 2) / sqrt((6 - 0)(6 - 1))
    assert order.tau_b == pytest.approx(1 / math.sqrt(30))
    assert order.inversions == [(0, 3), (2, 3)]


def test_a_constant_judge_gets_half_alignment_no_strict_credit_and_tau_zero() -> None:
    order = bug_order("B", dict.fromkeys(TIER, 50.0))
    assert order is not None
    assert (order.alignment, order.alignment_strict, order.tau_b) == (0.5, 0.0, 0.0)


def test_a_reversed_judge_scores_zero_and_a_negative_tau() -> None:
    order = bug_order("B", {0: 10, 1: 10, 2: 30, 3: 60, 4: 90})
    assert order is not None
    assert (order.alignment, order.alignment_strict) == (0.0, 0.0)
    assert order.tau_b == pytest.approx(-1.0)
    assert len(order.inversions) == 9


def test_a_bug_whose_levels_share_one_tier_has_no_pair() -> None:
    assert bug_order("B", {0: 50, 1: 90}) is None
    assert bug_order("B", {3: 50}) is None


def test_overall_figures_are_means_over_bugs_with_intervals_over_bugs() -> None:
    scores = {
        "good": {0: 90, 1: 90, 2: 60, 3: 30, 4: 10},  # alignment 1
        "bad": {0: 10, 2: 30, 3: 60, 4: 90},  # alignment 0
        "lonely": {0: 70},  # no pair: left out
    }
    result = ordering(scores)
    assert result.n_bugs == 2
    assert result.unpaired == 1
    assert result.alignment.value == pytest.approx(0.5)
    # resampling two bugs: some resamples draw "good" twice (1.0) and some "bad" twice (0.0)
    assert (result.alignment.lo, result.alignment.hi) == (0.0, 1.0)
    assert result.tau_b.value == pytest.approx((1.0 + -1.0) / 2)
    assert [bug.bug for bug in result.bugs] == ["bad", "good"]  # worst first
    assert [bug.bug for bug in result.worst()] == ["bad"]  # the perfect one is not "worst"
    # L1 exists for "good" only; its mean is that score, with no spread
    assert result.level_means[1].value == 90
    assert result.level_means[0].value == pytest.approx(50)
    assert ordering(scores).alignment == result.alignment  # the fixed seed repeats


def test_one_bug_has_an_interval_of_one_point() -> None:
    result = ordering({"B": {0: 80, 2: 80, 3: 90, 4: 10}})
    assert result.alignment.lo == result.alignment.hi == pytest.approx(3.5 / 6)


def test_levels_restrict_the_pairs() -> None:
    scores = {"B": {0: 80, 2: 80, 3: 90, 4: 10}}
    result = ordering(scores, levels=[0, 4])
    assert result.alignment.value == 1.0
    assert sorted(result.level_means) == [0, 4]


def test_no_bug_gives_undefined_figures() -> None:
    result = ordering({}, levels=[0, 2])
    assert result.alignment.value is None
    assert result.tau_b.value is None
    assert result.level_means[0].value is None


def test_the_bootstrap_is_the_plain_resampling_of_bugs() -> None:
    """The intervals come from one weight matrix; recomputed by resampling the bugs one
    resample at a time with the same weights, they are the same."""
    rng = random.Random(3)  # noqa: S311 (seeded)
    scores = {
        f"B{n}": {lv: float(rng.randint(0, 100)) for lv in sorted(TIER) if rng.random() < 0.8}
        for n in range(40)
    }
    result = ordering(scores, resamples=200, seed=11)
    bugs = result.bugs
    picks = np.random.default_rng(11).integers(0, len(bugs), size=(200, len(bugs)))
    weights = [np.bincount(row, minlength=len(bugs)) for row in picks]
    means, level_two = [], []
    for row in weights:
        drawn = [bug for bug, times in zip(bugs, row, strict=True) for _ in range(times)]
        means.append(statistics.fmean(bug.alignment for bug in drawn))
        with_two = [bug.scores[2] for bug in drawn if 2 in bug.scores]
        if with_two:
            level_two.append(statistics.fmean(with_two))
    assert result.alignment.lo == pytest.approx(float(np.percentile(means, 2.5)))
    assert result.alignment.hi == pytest.approx(float(np.percentile(means, 97.5)))
    assert result.level_means[2].lo == pytest.approx(float(np.percentile(level_two, 2.5)))
    assert result.alignment.value == pytest.approx(statistics.fmean(b.alignment for b in bugs))


def test_every_bug_at_once_gives_each_bugs_own_figures() -> None:
    """``ordering`` computes the bugs' figures together (``bug_orders``); they are
    ``bug_order``'s, bug by bug, with missing levels, ties and constant scores."""
    rng = random.Random(5)  # noqa: S311 (seeded)
    scores = {
        f"B{n}": {
            lv: float(rng.choice([10, 50, 50, 90])) for lv in sorted(TIER) if rng.random() < 0.7
        }
        for n in range(300)
    }
    for levels in ([0, 1, 2, 3, 4], [0, 2, 4], [1, 3]):
        together = {order.bug: order for order in bug_orders(scores, levels)}
        one_by_one = {}
        for bug, by_level in scores.items():
            order = bug_order(bug, {lv: s for lv, s in by_level.items() if lv in levels})
            if order is not None:
                one_by_one[bug] = order
        assert together.keys() == one_by_one.keys()
        for bug, order in one_by_one.items():
            other = together[bug]
            assert (other.scores, other.pairs) == (order.scores, order.pairs)
            assert other.alignment == pytest.approx(order.alignment)
            assert other.alignment_strict == pytest.approx(order.alignment_strict)
            assert other.tau_b == pytest.approx(order.tau_b, abs=1e-12)
