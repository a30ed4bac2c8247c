"""A campaign's rated dimensions: the scales a campaign allows, and its ratings' checks (pure).

Besides VALID/INVALID, a campaign may ask its annotators to rate named dimensions
(maintainability 1–5, …), as a written judge of the ``dimensions`` kind does: both are
``judging.dimensions``'s ``Dimension``, typed as the same lines, so the agreement report
pairs a campaign's dimension with a judge's of the same name. A campaign's scale is within
the digits (0–9), so a rating is one key on the labelling page.
"""

from collections.abc import Mapping
from typing import Any

from judging.dimensions import (
    MAX_DIMENSIONS,
    NAME,
    NAME_RULE,
    Bounds,
    Dimension,
    DimensionsError,
    dimensions_parse,
)

LOWEST, HIGHEST = 0, 9  # a rating is one digit
CAMPAIGN_SCALES = Bounds(LOWEST, HIGHEST, " (digits: a rating is one key)")
UNKNOWN_DIMENSION = "this campaign rates no dimension {name!r}"
OFF_SCALE = "{name} is rated {low}–{high}, not {value!r}"
RATINGS_TOO_MANY = f"at most {MAX_DIMENSIONS} ratings"
RATING_BAD_NAME = "{name!r} is not a dimension name: " + NAME_RULE
RATING_NOT_A_DIGIT = f"the rating of {{name}} must be a whole number from {LOWEST} to {HIGHEST}"


def campaign_dimensions_parse(text: str) -> list[Dimension]:
    """A campaign form's dimensions, one a line (``judging.dimensions``), on digit scales."""
    return dimensions_parse(text, CAMPAIGN_SCALES)


def ratings_problem(ratings: Mapping[str, Any]) -> str | None:
    """What is wrong with ratings read from a file ({name: rating}), which no campaign
    checks: each name by the dimensions' rule, each rating a digit; None when nothing is."""
    if len(ratings) > MAX_DIMENSIONS:
        return RATINGS_TOO_MANY
    for name, value in ratings.items():
        if not NAME.match(name):
            return RATING_BAD_NAME.format(name=name[:40])
        if isinstance(value, bool) or not isinstance(value, int) or not LOWEST <= value <= HIGHEST:
            return RATING_NOT_A_DIGIT.format(name=name)
    return None


def ratings_check(dimensions: list[Dimension], ratings: Mapping[str, Any]) -> dict[str, int]:
    """``ratings`` ({name: rating}) checked against the campaign's dimensions: each a known
    dimension, rated a whole number on its scale. A dimension may be left unrated."""
    by_name = {d.name: d for d in dimensions}
    result: dict[str, int] = {}
    for name, value in ratings.items():
        dimension = by_name.get(name)
        if dimension is None:
            raise DimensionsError(UNKNOWN_DIMENSION.format(name=str(name)[:40]))
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(str(value).strip())
            except ValueError:
                raise DimensionsError(
                    OFF_SCALE.format(
                        name=name, low=dimension.low, high=dimension.high, value=str(value)[:20]
                    )
                ) from None
        if not dimension.low <= value <= dimension.high:
            raise DimensionsError(
                OFF_SCALE.format(name=name, low=dimension.low, high=dimension.high, value=value)
            )
        result[name] = value
    # In the campaign's order, so equal ratings are equal JSON.
    return {d.name: result[d.name] for d in dimensions if d.name in result}
