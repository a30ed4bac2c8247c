"""The named reducers: how a team's 0–100 member scores become the team's score, each one's
worked values in the comments; the majority's tie rule; the mean as the default, so that a
run that names no reducer scores as before."""

import pytest

from judging.strategies.ensemble import TeamVerdict, combine
from judging.strategies.reducers import (
    DEFAULT_REDUCER,
    REDUCERS,
    UNKNOWN_REDUCER,
    get_reducer,
    reducer_choices,
)

SCORES = [80.0, 60.0, 40.0, 10.0]


def test_the_reducers_are_named_as_a_run_records_them() -> None:
    assert list(REDUCERS) == ["mean", "median", "majority", "min"]
    assert DEFAULT_REDUCER == "mean"
    assert [name for name, _ in reducer_choices()] == list(REDUCERS)
    assert all(reducer.label and reducer.description for reducer in REDUCERS.values())


def test_mean() -> None:
    # (80 + 60 + 40 + 10) / 4 = 47.5
    assert get_reducer("mean")(SCORES, 50.0) == 47.5


def test_median() -> None:
    # an even count: the mean of the middle two, (60 + 40) / 2 = 50; odd: the middle one
    assert get_reducer("median")(SCORES, 50.0) == 50.0
    assert get_reducer("median")([90.0, 10.0, 30.0], 50.0) == 30.0


def test_min() -> None:
    assert get_reducer("min")(SCORES, 50.0) == 10.0


def test_majority_is_the_mean_of_the_majoritys_scores() -> None:
    # against 50: 80 and 60 accept, 40 and 10 reject, a tie (below); against 35: three
    # accept, (80 + 60 + 40) / 3 = 60; against 70: three reject, (60 + 40 + 10) / 3 = 36.67
    assert get_reducer("majority")(SCORES, 35.0) == 60.0
    assert get_reducer("majority")(SCORES, 70.0) == pytest.approx(110 / 3)
    # a score on the threshold accepts: (50 + 50) / 2 = 50 against one 0
    assert get_reducer("majority")([50.0, 50.0, 0.0], 50.0) == 50.0


def test_a_majority_tie_is_invalid() -> None:
    # two accept, two reject: the patch does not pass, its score the rejecters' (40 + 10) / 2
    assert get_reducer("majority")(SCORES, 50.0) == 25.0
    assert combine(SCORES, reducer="majority").verdict == "INVALID"
    assert combine([100.0, 0.0], reducer="majority") == TeamVerdict(
        score=0.0, verdict="INVALID", spread=100.0, mean=50.0
    )


@pytest.mark.parametrize(
    ("reducer", "score", "verdict"),
    [
        ("mean", 47.5, "INVALID"),
        ("median", 50.0, "VALID"),
        ("majority", 25.0, "INVALID"),
        ("min", 10.0, "INVALID"),
    ],
)
def test_combine_maps_the_reduced_score_and_keeps_spread_and_mean(
    reducer: str, score: float, verdict: str
) -> None:
    assert combine(SCORES, reducer=reducer) == TeamVerdict(
        score=score, verdict=verdict, spread=70.0, mean=47.5
    )


def test_majority_counts_each_members_verdict_on_the_runs_scale() -> None:
    # 1–5, VALID from 3: the threshold is 50 on 0–100; 60 and 55 accept, 20 rejects:
    # (60 + 55) / 2 = 57.5 → 1 + 4 · 0.575 = 3.3
    team = combine([60.0, 20.0, 55.0], lo=1, hi=5, threshold=3, reducer="majority")
    assert (team.score, team.verdict) == (pytest.approx(3.3), "VALID")


@pytest.mark.parametrize(
    "scores", [[80, 60, 40], [50, 50], [0, 18], [100], [49, 50], [33.3, 66.7, 12.5, 99.9]]
)
@pytest.mark.parametrize(("lo", "hi", "threshold"), [(0, 100, 50), (1, 5, 3), (0, 4, 2)])
def test_the_default_is_the_mean_as_before(
    scores: list[float], lo: float, hi: float, threshold: float
) -> None:
    # the team's score before reducers: lo + (hi − lo) · mean / 100
    mean = sum(scores) / len(scores)
    before = lo + (hi - lo) * mean / 100.0
    team = combine(scores, lo=lo, hi=hi, threshold=threshold)
    assert team == combine(scores, lo=lo, hi=hi, threshold=threshold, reducer="mean")
    assert team.score == before  # exactly: the same arithmetic
    assert team.mean == mean


def test_an_unknown_reducer_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown reducer") as error:
        combine(SCORES, reducer="mode")
    assert str(error.value) == UNKNOWN_REDUCER.format(
        name="mode", known="mean, median, majority, min"
    )
