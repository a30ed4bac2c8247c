"""A campaign's rated dimensions (pure): named, each on an integer ordinal scale.

Besides VALID/INVALID, a campaign may ask its annotators to rate named dimensions
(maintainability 1–5, …), as a written judge of the ``dimensions`` kind does
(``judging.judges.answers``): the agreement report then compares the two per dimension.
A scale's ratings are digits (0–9), so a rating is one key on the labelling page.
"""

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

MAX_DIMENSIONS = 8
LOWEST, HIGHEST = 0, 9  # a rating is one digit
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,23}$")
LINE = re.compile(r"^\s*(?P<name>\S+)\s+(?P<low>-?\d+)\s*(?:\.\.|–|-)\s*(?P<high>-?\d+)\s*$")

BAD_LINE = (
    'line {line}: "{text}" is not a dimension: write its name and scale, as "maintainability 1..5"'
)
BAD_NAME = (
    'line {line}: "{name}" is not a dimension name: lowercase letters, digits, "-" or "_",'
    " starting with a letter, at most 24"
)
BAD_SCALE = (
    "line {line}: the scale of {name} must run from a low rating to a higher one, "
    f"both digits ({LOWEST}–{HIGHEST}): a rating is one key"
)
REPEATED = "line {line}: {name} is named twice"
TOO_MANY = f"at most {MAX_DIMENSIONS} dimensions"
UNKNOWN_DIMENSION = "this campaign rates no dimension {name!r}"
OFF_SCALE = "{name} is rated {low}–{high}, not {value!r}"


class DimensionsError(ValueError):
    """Dimensions or ratings that cannot be kept; the message says which and why."""


@dataclasses.dataclass(frozen=True)
class Dimension:
    name: str
    low: int
    high: int

    @property
    def scale(self) -> list[int]:
        return list(range(self.low, self.high + 1))

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "low": self.low, "high": self.high}


def dimensions_parse(text: str) -> list[Dimension]:
    """The dimensions of a form's text: one a line, "name low..high" (blank lines skipped)."""
    result: list[Dimension] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        match = LINE.match(raw)
        if not match:
            raise DimensionsError(BAD_LINE.format(line=number, text=raw.strip()[:60]))
        name = match["name"]
        if not NAME.match(name):
            raise DimensionsError(BAD_NAME.format(line=number, name=name[:40]))
        low, high = int(match["low"]), int(match["high"])
        if not LOWEST <= low < high <= HIGHEST:
            raise DimensionsError(BAD_SCALE.format(line=number, name=name))
        if any(dimension.name == name for dimension in result):
            raise DimensionsError(REPEATED.format(line=number, name=name))
        result.append(Dimension(name, low, high))
    if len(result) > MAX_DIMENSIONS:
        raise DimensionsError(TOO_MANY)
    return result


def dimensions_text(dimensions: list[Dimension]) -> str:
    return "\n".join(f"{d.name} {d.low}..{d.high}" for d in dimensions)


def dimensions_of(stored: Any) -> list[Dimension]:
    """A campaign's stored ``dimensions`` (a list of {name, low, high}) as ``Dimension``s."""
    return [Dimension(str(d["name"]), int(d["low"]), int(d["high"])) for d in stored or ()]


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
