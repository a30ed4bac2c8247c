"""How a team reduces its members' scores to one: named, registered reducers, as Inspect AI
names its score reducers (``mean``, ``median``, ``mode``…). A run records its reducer by name
(``JudgingRun.reducer``); the default is the mean, paper 000's team.

A reducer takes the members' scores on 0–100 and the run's threshold on the same scale, and
returns the team's score on 0–100; ``ensemble.combine`` maps it onto the run's scale and
gives the verdict (VALID from the threshold). Pure arithmetic, no ORM.
"""

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

DEFAULT_REDUCER = "mean"
UNKNOWN_REDUCER = "unknown reducer {name!r}; the reducers are {known}"
TOLERANCE = 1e-9  # a score within this of the threshold reaches it (members and teams)

ReduceFunction = Callable[[Sequence[float], float], float]


@dataclass(frozen=True)
class Reducer:
    """A registered reducer: its name (what a run records), label, and what it does."""

    name: str
    label: str
    description: str
    reduce: ReduceFunction
    do_not_call_in_templates: ClassVar[bool] = True  # a template reads its label

    def __call__(self, scores: Sequence[float], threshold: float) -> float:
        return self.reduce(scores, threshold)


REDUCERS: dict[str, Reducer] = {}


def reducer(name: str, label: str) -> Callable[[ReduceFunction], ReduceFunction]:
    """Decorator: register the function below as the reducer ``name``; its docstring is the
    reducer's description."""

    def register(reduce: ReduceFunction) -> ReduceFunction:
        if name in REDUCERS:
            raise ValueError(f"two reducers are named {name!r}")
        description = " ".join((reduce.__doc__ or "").split())
        REDUCERS[name] = Reducer(name, label, description, reduce)
        return reduce

    return register


def get_reducer(name: str) -> Reducer:
    """The reducer ``name``; ``ValueError`` naming the known ones otherwise."""
    try:
        return REDUCERS[name]
    except KeyError:
        known = ", ".join(REDUCERS)
        raise ValueError(UNKNOWN_REDUCER.format(name=name, known=known)) from None


def reducer_choices() -> list[tuple[str, str]]:
    """(name, label) of every reducer, for forms and the API's schema."""
    return [(r.name, r.label) for r in REDUCERS.values()]


def is_valid(score: float, threshold: float) -> bool:
    """Whether a score on 0–100 reaches the threshold on 0–100."""
    return score >= threshold - TOLERANCE


@reducer("mean", "Mean of the members' scores")
def mean(scores: Sequence[float], threshold: float) -> float:
    """The mean of the members' scores (paper 000's team; the default)."""
    return sum(scores) / len(scores)


@reducer("median", "Median of the members' scores")
def median(scores: Sequence[float], threshold: float) -> float:
    """The median of the members' scores: with an even number of members, the mean of the
    two middle ones. One member far off moves it less than the mean."""
    return float(statistics.median(scores))


@reducer("majority", "Majority of the members' verdicts")
def majority(scores: Sequence[float], threshold: float) -> float:
    """The majority of the members' verdicts, each member VALID when its own score reaches the
    threshold: the score is the mean of the majority's scores, so that the team's verdict is
    the majority's. A tie is INVALID: a patch passes only when more members accept it than
    reject it, so the tie's score is the mean of the rejecting members'."""
    valid = [score for score in scores if is_valid(score, threshold)]
    invalid = [score for score in scores if not is_valid(score, threshold)]
    side = valid if len(valid) > len(invalid) else invalid
    return sum(side) / len(side)


@reducer("min", "Lowest member score")
def minimum(scores: Sequence[float], threshold: float) -> float:
    """The lowest member score: the strictest member decides, so the team says VALID only
    when every member does."""
    return min(scores)
