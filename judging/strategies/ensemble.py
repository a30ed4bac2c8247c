"""A team's verdict from its members' scores (paper 000 §III-C): pure arithmetic, no ORM.

The run's reducer (``reducers``: the mean by default, as in the paper) turns the members'
scores on 0–100 into the patch's score, mapped linearly to the target scale
``lo + (hi − lo) · s / 100``; the verdict is VALID when the mapped score reaches the
threshold. The spread (highest minus lowest member score, on 0–100) is kept as the verdict's
confidence signal: 0 when the members agree.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from .reducers import DEFAULT_REDUCER, TOLERANCE, get_reducer

NO_SCORES = "a team verdict needs at least one member score"
BAD_SCALE = "the scale's low end ({lo}) must be below its high end ({hi})"
BAD_THRESHOLD = "the threshold ({threshold}) must lie on the scale {lo}–{hi}"
BAD_SCORE = "member scores are on 0–100, got {score}"


@dataclass(frozen=True)
class TeamVerdict:
    score: float  # on the target scale
    verdict: str  # "VALID" or "INVALID"
    spread: float  # on 0–100
    mean: float  # the members' mean on 0–100, whatever the reducer


def check_scale(lo: float, hi: float, threshold: float) -> None:
    """Raise ``ValueError`` unless lo < hi and lo ≤ threshold ≤ hi."""
    if not lo < hi:
        raise ValueError(BAD_SCALE.format(lo=lo, hi=hi))
    if not lo <= threshold <= hi:
        raise ValueError(BAD_THRESHOLD.format(threshold=threshold, lo=lo, hi=hi))


def to_scale(score: float, lo: float, hi: float) -> float:
    """A 0–100 score on the scale lo–hi."""
    return lo + (hi - lo) * score / 100.0


def combine(
    scores: Sequence[float],
    *,
    lo: float = 0.0,
    hi: float = 100.0,
    threshold: float = 50.0,
    reducer: str = DEFAULT_REDUCER,
) -> TeamVerdict:
    """The team's verdict from its members' 0–100 scores, reduced by the named ``reducer``."""
    if not scores:
        raise ValueError(NO_SCORES)
    check_scale(lo, hi, threshold)
    reduce = get_reducer(reducer)
    for score in scores:
        if not 0.0 <= score <= 100.0:
            raise ValueError(BAD_SCORE.format(score=score))
    mean = sum(scores) / len(scores)
    member_threshold = 100.0 * (threshold - lo) / (hi - lo)
    mapped = to_scale(reduce(scores, member_threshold), lo, hi)
    return TeamVerdict(
        score=mapped,
        # TOLERANCE: so that a mean of exactly 50 maps onto a threshold of 3 on 1–5.
        verdict="VALID" if mapped >= threshold - TOLERANCE else "INVALID",
        spread=max(scores) - min(scores),
        mean=mean,
    )
