"""The judging strategies, registered by name (papers 000/001 §III, 004 §3.2).

``rubric`` is the rubric-guided judge of paper 004; ``s1a``…``s5`` are SE-Jury's strategies
with paper 000's numbering (S4 analyzes the reference, S5 generates tests); ``bleu``,
``chrf`` and ``edit`` are the match-based baselines of paper 000 Table I, without a model;
``roles`` is paper 003's role players (CODERPE) adapted to patches.
"""

from .base import Ask, Case, Outcome, Step, Strategy, StrategyError
from .registry import (
    STRATEGIES,
    UNKNOWN_STRATEGY,
    VERSIONED,
    StrategySource,
    get_strategy,
    parse_team,
    register,
    strategy_source_register,
)

# Importing the modules registers their strategies, in this order: the registry's order is
# the order of the new-run form.
# isort: off
from . import rubric, s1, s2, s3, s4, s5, roles, baselines  # noqa: F401

# isort: on
from . import offline  # noqa: F401 - registers what the offline model answers to each prompt

__all__ = [
    "STRATEGIES",
    "UNKNOWN_STRATEGY",
    "VERSIONED",
    "Ask",
    "Case",
    "Outcome",
    "Step",
    "Strategy",
    "StrategyError",
    "StrategySource",
    "get_strategy",
    "parse_team",
    "register",
    "strategy_source_register",
]
