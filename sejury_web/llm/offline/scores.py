"""The *reference score* every judging rule starts from, and the ready-made rule that answers
with it alone (``reference_similarity``).

The terms are defined in the package docstring; change a rule here and bump
``OFFLINE_MODEL``.
"""

from dataclasses import dataclass
from typing import Any

from sejury_web.similarity import chrf

from .patches import Patch, read_patch, say
from .rules import Inputs

TEXT_WEIGHT, FILE_WEIGHT = 0.8, 0.2  # of the reference score
UNDECIDED = 50  # non-test code changed, nothing to compare it with


@dataclass(frozen=True)
class Score:
    """A score on 0–100 and the reasoning behind it."""

    value: int
    reason: str


def scored_answer(score: Score) -> dict[str, Any]:
    """``{score, reasoning}``, the answer of a scoring prompt, the reasoning marked. The rules
    compute scores on 0–100; one outside would fail the request's schema like a model's."""
    return {"score": score.value, "reasoning": say(score.reason)}


def undecided(candidate: Patch) -> Score:
    """Without a reference: undecided (50) when the patch changes non-test code, else 0."""
    if candidate.error:
        only_tests = " (it changes only tests)" if candidate.test_files else ""
        return Score(0, f"Score 0: {candidate.error}{only_tests}.")
    return Score(
        UNDECIDED, "Score 50: the patch changes non-test code; undecided without a reference."
    )


def _jaccard(a: list[str], b: list[str]) -> float:
    union = set(a) | set(b)
    return len(set(a) & set(b)) / len(union) if union else 0.0


def reference_score(candidate: Patch, reference: Patch) -> Score:
    """The *reference score*: chrF of the changed lines blended with the files' overlap."""
    if candidate.error or reference.error:
        fallback = undecided(candidate)
        note = f" No usable reference: {reference.error}." if reference.error else ""
        return Score(fallback.value, fallback.reason + ("" if candidate.error else note))
    text = chrf("\n".join(candidate.lines), "\n".join(reference.lines))
    files = 100 * _jaccard(candidate.files, reference.files)
    value = round(min(100.0, max(0.0, TEXT_WEIGHT * text + FILE_WEIGHT * files)))
    return Score(
        value,
        f"Score {value} = {TEXT_WEIGHT} · chrF {text:.1f} of the changed non-test lines against "
        f"the reference's + {FILE_WEIGHT} · {files:.0f} (overlap of the files touched).",
    )


def inputs_reference_score(inputs: Inputs) -> Score:
    """The reference score of the inputs' ``candidate_diff`` against their ``reference_diff``
    (``None``: no reference)."""
    candidate = read_patch(inputs.require("candidate_diff", str))
    reference = read_patch(inputs.require("reference_diff", str, type(None)))
    return reference_score(candidate, reference)


def reference_similarity(inputs: Inputs) -> dict[str, Any]:
    """A ready-made rule: ``{score, reasoning}``, the reference score alone.

    It reads ``candidate_diff`` and ``reference_diff``; a judge whose offline answer is how
    much the patch resembles the reference registers it for its purpose.
    """
    return scored_answer(inputs_reference_score(inputs))
