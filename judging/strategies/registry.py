"""Strategies by name."""

from typing import TypeVar

from .base import Strategy

S = TypeVar("S", bound=type[Strategy])

STRATEGIES: dict[str, Strategy] = {}

UNKNOWN_STRATEGY = "unknown strategy {name!r}; the strategies are {known}"
EMPTY_TEAM = "a team needs at least one strategy"
REPEATED_STRATEGY = "strategy {name!r} appears twice in the team"


def register(cls: S) -> S:
    """Class decorator: make the strategy available under ``cls.name``."""
    if cls.name in STRATEGIES:
        raise ValueError(f"two strategies are named {cls.name!r}")
    STRATEGIES[cls.name] = cls()
    return cls


def get_strategy(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(UNKNOWN_STRATEGY.format(name=name, known=", ".join(STRATEGIES))) from None


def parse_team(text: str | list[str]) -> list[str]:
    """A team from "rubric,s1b,s3" (or a list): known names, each once, in order."""
    names = text if isinstance(text, list) else text.split(",")
    team = [name.strip() for name in names if name.strip()]
    if not team:
        raise ValueError(EMPTY_TEAM)
    for index, name in enumerate(team):
        get_strategy(name)
        if name in team[:index]:
            raise ValueError(REPEATED_STRATEGY.format(name=name))
    return team
