"""S1, Direct Assess (paper 000 §III, prompt skeleton of 001): a correctness score at once.

``s1a`` sees the bug and the candidate; ``s1b`` also sees the reference fix.
"""

from typing import Any

from sejury_web.llm import LLMRequest

from .base import Ask, Case, Outcome, Strategy, require_reference, scored
from .prompts import (
    SCORE_ANSWER,
    SCORE_SCHEMA,
    bug_block,
    cache_group,
    candidate_block,
    reference_block,
)
from .prompts import request as one_turn
from .registry import register

PROMPT_VERSION = "s1-v2"

TASK = """\
[Task Description]
Your task is to rate the candidate patch below: does it correctly fix the bug?

[Evaluation Criteria]
Functional Correctness (0-100): whether, with the patch applied, the program behaves
correctly for the problem in the bug description and keeps behaving correctly elsewhere.
0 means the patch does not fix the bug or breaks the program; 100 means it is a correct fix.

[Evaluation Steps]
1. Read the bug description carefully.
2. Read the candidate patch and compare it to the problem{and_reference}.
3. Assign a score for functional correctness on a scale of 0 to 100."""

DATA = "[Data]"


def s1_user(case: Case, *, with_reference: bool, answer: str, persona: str = "") -> str:
    """The S1 prompt: task, criteria, steps, the data (the reference for S1b), ``answer``
    (the answer instructions), ``persona`` if any (the ``roles`` strategy), and the
    candidate last: everything before it is the same for every candidate of the bug."""
    parts = [
        TASK.format(and_reference=" and to the reference fix" if with_reference else ""),
        DATA,
        bug_block(case),
    ]
    if with_reference:
        parts.append(reference_block(case))
    parts.append(answer)
    if persona:
        parts.append(persona)
    parts.append(candidate_block(case))
    return "\n\n".join(parts)


def s1_inputs(case: Case, *, with_reference: bool) -> dict[str, Any]:
    inputs: dict[str, Any] = {"bug": case.bug_inputs, "candidate_diff": case.candidate_diff}
    if with_reference:
        inputs["reference_diff"] = case.reference_diff
    return inputs


def s1_request(case: Case, *, with_reference: bool) -> LLMRequest:
    purpose = "judge.s1b" if with_reference else "judge.s1a"
    user = s1_user(case, with_reference=with_reference, answer=SCORE_ANSWER)
    inputs = s1_inputs(case, with_reference=with_reference)
    return one_turn(purpose, user, SCORE_SCHEMA, inputs, group=cache_group(purpose, case))


@register
class DirectAssess(Strategy):
    name = "s1a"
    label = "S1a Direct Assess"
    description = "A correctness score from the bug and the candidate, without the reference."
    prompt_version = PROMPT_VERSION
    uses_reference = False

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        response = ask(s1_request(case, with_reference=False))
        return scored(response)


@register
class DirectAssessWithReference(Strategy):
    name = "s1b"
    label = "S1b Direct Assess with reference"
    description = "A correctness score from the bug, the candidate and the reference fix."
    prompt_version = PROMPT_VERSION

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        require_reference(case)
        response = ask(s1_request(case, with_reference=True))
        return scored(response)
