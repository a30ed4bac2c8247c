"""The registry of offline rules, and the dispatch of a request to the rule of its purpose.

A rule is a function of the request's ``Inputs`` that returns the answer, marked with ``say``
wherever it writes free text. It registers for its purpose from the app that asks.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

UNSUPPORTED_PURPOSE = "the offline model cannot answer purpose {purpose!r}; it answers {supported}"
MISSING_INPUT = "offline answer to {purpose!r}: missing input {key!r}"
BAD_INPUT = "offline answer to {purpose!r}: input {key!r} must be {expected}"
TWO_RULES = "two offline rules answer purpose {purpose!r}: {first} and {second}"


class OfflineUnsupported(ValueError):
    """The offline model cannot answer this purpose, or its inputs are incomplete."""


@dataclass(frozen=True)
class Inputs:
    """A request's ``inputs`` as a rule reads them: each value checked for its type, the
    error naming the purpose and the key (what the LLM client logs)."""

    purpose: str
    values: dict[str, Any]

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def require(self, key: str, *expected: type) -> Any:
        """The value of ``key``, which must be there and of one of the ``expected`` types."""
        if key not in self.values:
            raise OfflineUnsupported(MISSING_INPUT.format(purpose=self.purpose, key=key))
        if not isinstance(self.values[key], expected):
            kinds = " or ".join(
                "None" if kind is type(None) else kind.__name__ for kind in expected
            )
            raise self.bad(key, kinds)
        return self.values[key]

    def objects(self, key: str, items: Any) -> list[dict[str, Any]]:
        """``items`` (the value of ``key``, or a part of one) as a list of JSON objects."""
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise self.bad(key, "objects")
        return items

    def bad(self, key: str, expected: str) -> OfflineUnsupported:
        """The error for a value of ``key`` that is not ``expected``."""
        return OfflineUnsupported(
            BAD_INPUT.format(purpose=self.purpose, key=key, expected=expected)
        )


OfflineRule = Callable[[Inputs], dict[str, Any]]
R = TypeVar("R", bound=OfflineRule)

_RULES: dict[str, OfflineRule] = {}


def offline_rule_register(purpose: str, rule: OfflineRule) -> None:
    """Answer requests for ``purpose`` offline with ``rule``; registering it again is a no-op.

    Raises ``ValueError`` when another rule already answers ``purpose``.
    """
    known = _RULES.get(purpose)
    if known is not None and known is not rule:
        raise ValueError(
            TWO_RULES.format(purpose=purpose, first=known.__qualname__, second=rule.__qualname__)
        )
    _RULES[purpose] = rule


def offline_rule(purpose: str) -> Callable[[R], R]:
    """Decorator: ``@offline_rule("judge.mine")`` registers the function below it."""

    def decorate(rule: R) -> R:
        offline_rule_register(purpose, rule)
        return rule

    return decorate


def offline_purposes() -> tuple[str, ...]:
    """Every purpose the offline model answers, in the order the rules were registered."""
    return tuple(_RULES)


def offline_answer(*, purpose: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The offline model's answer to ``purpose``, computed from ``inputs`` by its rule.

    Every request's inputs carry the ``bug`` it is about. Raises ``OfflineUnsupported`` for
    a purpose no rule answers, or a missing or mistyped input.
    """
    rule = _RULES.get(purpose)
    if rule is None:
        supported = ", ".join(_RULES)
        raise OfflineUnsupported(UNSUPPORTED_PURPOSE.format(purpose=purpose, supported=supported))
    checked = Inputs(purpose, inputs)
    checked.require("bug", dict)
    return rule(checked)
