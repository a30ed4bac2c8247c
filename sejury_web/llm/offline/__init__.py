r"""The ``offline`` provider: a deterministic heuristic, no network, and NOT an LLM.

It answers a request from the request's structured ``inputs``, by the *rule* registered for
the request's purpose, so that the whole workflow runs without a model or a key. Its scores
and verdicts are not judgements of correctness. Every free-text field it writes starts with
``PREFIX``, ``[offline heuristic — not an LLM]`` (``say`` adds it), except where its rule
says otherwise: a rubric draft's text is the rubric the judge reads, so its revision's author
(``llm:offline/…``) carries the label, which the rubric's page shows once. Same inputs, same
answer: no randomness, no clock. ``OFFLINE_MODEL`` is part of the cache key: bump it when a
rule changes.

This package knows no purpose. Each rule lives beside the prompt it answers, in the app that
asks, described by its own docstring, and registers itself at import with
``@offline_rule(purpose)``; the app's ``AppConfig.ready()`` imports the module, so that every
process has the rules. ``grep -rn "offline_rule" --include=*.py`` lists them all. A purpose
answered as S1b is (the *reference score*) registers in one line::

    offline_rule_register("judge.mine", reference_similarity)

What the rules share: ``patches`` reads diffs (the terms below) and marks text; ``scores``
holds the reference score and the ready-made ``reference_similarity`` rule.

Terms (the helpers live in ``sejury_web.similarity``)
    *changes*: the changed lines (stripped, blank ones dropped) of each hunk of a diff,
    per *scope*, in files that are not test files (``is_test_path``: ``tests/``,
    ``test_*.py``, ``*_test.go``, ``*Test.java``, ``*.test.js``…). Test files never count.
    A patch is *empty*/*unreadable* when it is blank/not a unified diff, and *test-only*
    when it has no change outside test files.
    *scope*: the nearest function (written ``name()``) or class-like type defined above a
    changed line in its hunk, else the one in the hunk header (``@@ … @@ section``); a
    hunk spanning two functions gives two changes.
    *condition line*: one with ``if``/``elif``/``else if``/``while``/``for``/``switch``/
    ``case``/``return``, ``?:``, a comparison or a boolean operator (not a comment).
    *quote coverage* of code quotes Q over lines L: the mean over q in Q of the best
    ``chrf(l, q)`` for l among the first 500 of L (0 when L is empty); chrF is
    sacrebleu's sentence chrF, on 0–100.
    *reference score* (``scores.reference_score``): 0 for an empty, unreadable or
    test-only patch; else ``round(0.8 · chrF + 0.2 · 100 · Jaccard)``, where chrF compares
    the patch's changed lines with the reference's (each joined by newlines) and Jaccard is
    the overlap of the files they change. Identical changes score 100. Without a usable
    reference (none, unreadable, test-only): 50 when the patch changes non-test code
    ("undecided without a reference"), else 0 (``scores.undecided``).
"""

from .patches import PREFIX, say
from .rules import (
    BAD_INPUT,
    MISSING_INPUT,
    UNSUPPORTED_PURPOSE,
    Inputs,
    OfflineRule,
    OfflineUnsupported,
    offline_answer,
    offline_purposes,
    offline_rule,
    offline_rule_register,
)
from .scores import Score, reference_similarity, scored_answer

__all__ = [
    "BAD_INPUT",
    "MISSING_INPUT",
    "OFFLINE_MODEL",
    "PREFIX",
    "UNSUPPORTED_PURPOSE",
    "Inputs",
    "OfflineRule",
    "OfflineUnsupported",
    "Score",
    "offline_answer",
    "offline_purposes",
    "offline_rule",
    "offline_rule_register",
    "reference_similarity",
    "say",
    "scored_answer",
]

# Part of the cache key: bump it when a rule changes, wherever the rule lives.
OFFLINE_MODEL = "heuristic-v1"
