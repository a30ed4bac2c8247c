"""Strategies by name: the built-in ones registered with ``@register``, and those a
``StrategySource`` finds (the judges leads write, ``judging.judges``, registered from the
app's ``ready()``: a name not built in is asked of it)."""

import re
from typing import Protocol, TypeVar

from .base import Strategy

S = TypeVar("S", bound=type[Strategy])

STRATEGIES: dict[str, Strategy] = {}
# A written judge's version as a team names it and a run records it: ``name@N``.
VERSIONED = re.compile(r"^(?P<name>[^@\s]+)@(?P<number>\d{1,9})$")

UNKNOWN_STRATEGY = "unknown strategy {name!r}; the strategies are {known}"
EMPTY_TEAM = "a team needs at least one strategy"
REPEATED_STRATEGY = "strategy {name!r} appears twice in the team"


class StrategySource(Protocol):
    """Strategies that are data rather than code: found by name when a team names them."""

    def strategy(self, name: str) -> Strategy | None:
        """The strategy ``name`` stands for, under the name a run records (one fixed
        version: ``judge@3``); None when the source has none of that name; ``ValueError``
        when it has, but ``name`` cannot be used (no such version, none trusted)."""
        ...

    def names(self) -> list[str]:
        """The names it knows, for the message that lists every strategy."""
        ...


_SOURCES: list[StrategySource] = []


def strategy_source_register(source: StrategySource) -> None:
    """Ask ``source`` for the names no built-in strategy has (once per type of source)."""
    if not any(type(known) is type(source) for known in _SOURCES):
        _SOURCES.append(source)


def register(cls: S) -> S:
    """Class decorator: make the strategy available under ``cls.name``."""
    if cls.name in STRATEGIES:
        raise ValueError(f"two strategies are named {cls.name!r}")
    STRATEGIES[cls.name] = cls()
    return cls


def get_strategy(name: str) -> Strategy:
    """The strategy of ``name``: a built-in one, or one a source finds (whose ``name`` is
    then the one a run records, e.g. ``judge@3`` for ``judge``)."""
    strategy = STRATEGIES.get(name)
    if strategy is not None:
        return strategy
    for source in _SOURCES:
        found = source.strategy(name)
        if found is not None:
            return found
    known = list(STRATEGIES) + [n for source in _SOURCES for n in source.names()]
    raise ValueError(UNKNOWN_STRATEGY.format(name=name, known=", ".join(known)))


def parse_team(text: str | list[str]) -> list[str]:
    """A team from "rubric,s1b,s3" (or a list): known names, each once, in order, each as a
    run records it (a written judge's name resolved to one version, ``minimalism@3``)."""
    names = text if isinstance(text, list) else text.split(",")
    given = [name.strip() for name in names if name.strip()]
    if not given:
        raise ValueError(EMPTY_TEAM)
    team: list[str] = []
    for name in given:
        resolved = get_strategy(name).name
        if resolved in team:
            raise ValueError(REPEATED_STRATEGY.format(name=name))
        team.append(resolved)
    return team
