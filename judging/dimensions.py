"""Named dimensions, each on its own integer ordinal scale (pure): what a written judge of
the ``dimensions`` kind rates (``judging.judges.answers``) and what a campaign asks its
annotators to rate (``judging.annotations.dimensions``). One value type, one name rule and one
line syntax for both, so that a campaign's dimension and a judge's of the same name meet in
the agreement report.

A form takes them one a line, ``name low..high`` and what it measures, if anything::

    maintainability 1..5 Is the patch easy to read and change?
    security 1-5

(the scale as ``1..5``, ``1-5`` or ``1–5``). Each user of this module sets its scale's
bounds: a judge's within 0–100, a campaign's within the digits (a rating is one key).
"""

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

# Every name a judge or a campaign ever stored matches it: the union of the two rules the
# apps had before they shared this one (judges: "_", 32; campaigns: "_" or "-", 24).
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
NAME_RULE = 'lowercase letters, digits, "_" or "-", starting with a letter, at most 32'
MAX_DIMENSIONS = 8
SCALE_MIN, SCALE_MAX = 0, 100
EXAMPLE = "security 1..5 Does the patch open a hole?"
LINE = re.compile(
    r"^\s*(?P<name>\S+)\s+(?P<low>\d+)\s*(?:\.\.|–|-)\s*(?P<high>\d+)"
    r"(?:\s+(?P<description>\S.*?))?\s*$"
)
FIELDS = ("name", "low", "high", "description")

BAD_LINE = (
    "“{text}” is not a dimension: write its name, its scale and what it measures, as “"
    + EXAMPLE
    + "” (the description may be left out)"
)
BAD_NAME = "“{name}” is not a dimension name: " + NAME_RULE
BAD_SCALE = (
    "the scale of {name} must run from a whole number to a higher one, "
    "both within {lowest}–{highest}{why}"
)
BAD_DESCRIPTION = "the description of {name} must be text"
NOT_AN_OBJECT = "a dimension is an object with " + ", ".join(FIELDS)
UNKNOWN_FIELD = "unknown field {field!r}; a dimension has " + ", ".join(FIELDS)
REPEATED = "{name} is named twice"
TOO_MANY = f"at most {MAX_DIMENSIONS} dimensions"


class DimensionsError(ValueError):
    """Dimensions that cannot be kept; the message says which (its line or its place) and why."""


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One dimension: its name, its ordinal scale ``low``…``high`` and what it measures."""

    name: str
    low: int
    high: int
    description: str = ""

    @property
    def scale(self) -> list[int]:
        return list(range(self.low, self.high + 1))

    def to_0_100(self, rating: int) -> float:
        return 100.0 * (rating - self.low) / (self.high - self.low)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "low": self.low,
            "high": self.high,
            "description": self.description,
        }

    @property
    def line(self) -> str:
        """The dimension as the forms' line (what ``dimensions_parse`` reads back)."""
        description = " ".join(self.description.split())  # one line, whatever was stored
        return f"{self.name} {self.low}..{self.high} {description}".rstrip()


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The scales a user of dimensions allows, and why (said when a scale is refused)."""

    lowest: int = SCALE_MIN
    highest: int = SCALE_MAX
    why: str = ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def dimension_check(name: Any, low: Any, high: Any, description: Any, bounds: Bounds) -> Dimension:
    """One dimension, its name and scale checked (``DimensionsError`` saying why)."""
    if not isinstance(name, str) or not NAME.match(name):
        raise DimensionsError(BAD_NAME.format(name=str(name)[:40]))
    if not (_is_int(low) and _is_int(high) and bounds.lowest <= low < high <= bounds.highest):
        raise DimensionsError(
            BAD_SCALE.format(
                name=name, lowest=bounds.lowest, highest=bounds.highest, why=bounds.why
            )
        )
    if not isinstance(description, str):
        raise DimensionsError(BAD_DESCRIPTION.format(name=name))
    return Dimension(name, low, high, " ".join(description.split()))


def _checked_all(found: Iterable[tuple[str, Dimension]]) -> list[Dimension]:
    result: list[Dimension] = []
    for where, dimension in found:
        if any(d.name == dimension.name for d in result):
            raise DimensionsError(f"{where}: {REPEATED.format(name=dimension.name)}")
        result.append(dimension)
    if len(result) > MAX_DIMENSIONS:
        raise DimensionsError(TOO_MANY)
    return result


def dimensions_parse(text: str, bounds: Bounds) -> list[Dimension]:
    """A form's lines as dimensions, one a line ``name low..high description`` (blank lines
    skipped); ``DimensionsError`` naming the first bad line."""

    def lines() -> Iterable[tuple[str, Dimension]]:
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            where = f"line {number}"
            match = LINE.match(raw)
            if not match:
                error = BAD_LINE.format(text=raw.strip()[:80])
                raise DimensionsError(f"{where}: {error}")
            try:
                yield (
                    where,
                    dimension_check(
                        match["name"],
                        int(match["low"]),
                        int(match["high"]),
                        match["description"] or "",
                        bounds,
                    ),
                )
            except DimensionsError as error:
                raise DimensionsError(f"{where}: {error}") from None

    return _checked_all(lines())


def dimensions_from_json(given: Any, bounds: Bounds) -> list[Dimension]:
    """Dimensions given as JSON objects (``name``, ``low``, ``high``, optional
    ``description``), checked as the lines are; ``DimensionsError`` naming the first bad one
    by its place (``dimension 2: …``)."""
    if not isinstance(given, list):
        raise DimensionsError(NOT_AN_OBJECT)

    def objects() -> Iterable[tuple[str, Dimension]]:
        for index, item in enumerate(given, start=1):
            where = f"dimension {index}"
            try:
                if not isinstance(item, dict):
                    raise DimensionsError(NOT_AN_OBJECT)
                for key in item:
                    if key not in FIELDS:
                        raise DimensionsError(UNKNOWN_FIELD.format(field=key))
                yield (
                    where,
                    dimension_check(
                        item.get("name"),
                        item.get("low"),
                        item.get("high"),
                        item.get("description", ""),
                        bounds,
                    ),
                )
            except DimensionsError as error:
                raise DimensionsError(f"{where}: {error}") from None

    return _checked_all(objects())


def dimensions_text(dimensions: Iterable[Dimension]) -> str:
    """Dimensions as a form's lines."""
    return "\n".join(d.line for d in dimensions)


def dimensions_of(stored: Any) -> list[Dimension]:
    """Stored dimensions (a list of ``{name, low, high[, description]}``, as every campaign
    and judge version keeps them) as ``Dimension``s; stored data was checked when written."""
    return [
        Dimension(str(d["name"]), int(d["low"]), int(d["high"]), str(d.get("description") or ""))
        for d in stored or ()
    ]
