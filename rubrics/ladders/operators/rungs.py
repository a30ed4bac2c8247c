"""What a ladder is made of: its levels, and for each a rung built or a level skipped."""

from dataclasses import dataclass

LEVELS: dict[int, str] = {
    0: "reference fix",
    1: "equivalent rewrite",
    2: "partial fix",
    3: "wrong fix",
    4: "no fix",
}


@dataclass(frozen=True)
class Rung:
    """A level that was built: its diff and the operators that made it from the reference."""

    level: int
    diff: str
    operators: tuple[str, ...]


@dataclass(frozen=True)
class Skipped:
    """A level that does not apply to this reference, with a sentence for the lead."""

    level: int
    reason: str
