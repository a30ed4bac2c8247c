"""The team's verdict: the mean of 0–100 member scores, mapped to the run's scale, against the
threshold, with the spread as the members' disagreement. Worked values in the comments."""

import math
import re

import pytest

from judging.strategies.ensemble import (
    BAD_SCALE,
    BAD_SCORE,
    BAD_THRESHOLD,
    NO_SCORES,
    TeamVerdict,
    check_scale,
    combine,
    to_scale,
)


def test_on_0_100_the_score_is_the_mean() -> None:
    # mean (80 + 60 + 40) / 3 = 60 ≥ 50; spread 80 − 40 = 40
    assert combine([80, 60, 40]) == TeamVerdict(score=60.0, verdict="VALID", spread=40.0, mean=60.0)


def test_on_0_4_the_mean_is_mapped_linearly() -> None:
    # CoNaLa's 0–4: mean (100 + 50 + 75) / 3 = 75 → 0 + 4 · 75/100 = 3 ≥ 2; spread 100 − 50
    team = combine([100, 50, 75], lo=0, hi=4, threshold=2)

    assert team == TeamVerdict(score=3.0, verdict="VALID", spread=50.0, mean=75.0)


def test_on_1_5_the_mean_is_mapped_linearly() -> None:
    # Summary-Assess's 1–5: mean (20 + 40) / 2 = 30 → 1 + 4 · 30/100 = 2.2 < 3; spread 20
    team = combine([20, 40], lo=1, hi=5, threshold=3)

    assert team.score == pytest.approx(2.2)
    assert (team.verdict, team.spread, team.mean) == ("INVALID", 20.0, 30.0)


@pytest.mark.parametrize(
    ("scores", "lo", "hi", "threshold"),
    [
        ([50, 50], 0, 100, 50),  # mean 50 on 0–100
        ([0, 100], 0, 4, 2),  # mean 50 → 0 + 4 · 0.5 = 2
        ([25, 75], 1, 5, 3),  # mean 50 → 1 + 4 · 0.5 = 3
        # mean 9 → 1 + 4 · 0.09 = 1.36 exactly, but 1.3599999999999999 in floating point
        ([0, 18], 1, 5, 1.36),
    ],
)
def test_a_threshold_reached_exactly_is_valid(
    scores: list[float], lo: float, hi: float, threshold: float
) -> None:
    assert combine(scores, lo=lo, hi=hi, threshold=threshold).verdict == "VALID"


def test_just_below_the_threshold_is_invalid() -> None:
    # mean 49.5 on 0–100 against 50
    assert combine([49, 50]).verdict == "INVALID"
    # mean 49 → 1 + 4 · 0.49 = 2.96 < 3
    assert combine([49], lo=1, hi=5, threshold=3).verdict == "INVALID"


def test_the_spread_is_on_0_100_whatever_the_scale() -> None:
    assert combine([0, 100], lo=1, hi=5, threshold=3).spread == 100.0
    assert combine([30, 70, 50], lo=0, hi=1, threshold=0.5).spread == 40.0
    assert combine([42]).spread == 0.0  # one member agrees with itself


def test_to_scale_maps_the_ends_onto_the_ends() -> None:
    assert (to_scale(0, 1, 5), to_scale(100, 1, 5), to_scale(25, 0, 4)) == (1.0, 5.0, 1.0)


def test_an_empty_team_has_no_verdict() -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(NO_SCORES)}$"):
        combine([])


@pytest.mark.parametrize(("lo", "hi"), [(5, 5), (5, 1), (math.nan, 5)])
def test_the_scale_must_run_upwards(lo: float, hi: float) -> None:
    message = re.escape(BAD_SCALE.format(lo=lo, hi=hi))

    with pytest.raises(ValueError, match=f"^{message}$"):
        combine([50], lo=lo, hi=hi, threshold=5)
    with pytest.raises(ValueError, match=f"^{message}$"):
        check_scale(lo, hi, 5)


@pytest.mark.parametrize("threshold", [0.5, 5.5, math.nan])
def test_the_threshold_must_lie_on_the_scale(threshold: float) -> None:
    message = re.escape(BAD_THRESHOLD.format(threshold=threshold, lo=1, hi=5))

    with pytest.raises(ValueError, match=f"^{message}$"):
        combine([50], lo=1, hi=5, threshold=threshold)


def test_the_scales_ends_are_valid_thresholds() -> None:
    assert combine([0], lo=1, hi=5, threshold=1).verdict == "VALID"
    assert combine([100], lo=1, hi=5, threshold=5).verdict == "VALID"


@pytest.mark.parametrize("score", [-0.5, 100.5, math.nan, math.inf])
def test_member_scores_must_be_on_0_100(score: float) -> None:
    message = re.escape(BAD_SCORE.format(score=score))

    with pytest.raises(ValueError, match=f"^{message}$"):
        combine([50, score], lo=1, hi=5, threshold=3)
