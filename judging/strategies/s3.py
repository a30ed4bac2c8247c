"""S3, Equivalence Assess (paper 000 §III, prompt skeleton of 001): is the candidate
semantically equivalent to the reference fix?"""

from typing import Any

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
from .s1 import s1_inputs

PROMPT_VERSION = "s3-v2"
PURPOSE = "judge.s3"

TASK = """\
[Task Description]
Given two code diffs that each try to fix the bug below, your task is to assess whether they
are semantically equivalent: whether the candidate patch changes the program's behaviour in
the way the reference fix does.

[Evaluation Criteria]
Semantic Equivalence (0-100): to what extent the two patched programs produce the same
behaviour and output, on the input of the bug report and on every other input. Differences in
names, formatting, comments or tests do not matter.

[Evaluation Steps]
1. Read and analyze both diffs carefully. Read the problem description too.
2. Compare their functionality, structure and logic to determine whether they yield the same
   output and behaviour.
3. Assign a semantic equivalence score on a scale of 0 to 100."""


@register
class EquivalenceAssess(Strategy):
    name = "s3"
    label = "S3 Equivalence Assess"
    description = "How far the candidate behaves like the reference fix."
    prompt_version = PROMPT_VERSION

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        require_reference(case)
        # The candidate last: what comes before it is the same for every candidate of the bug.
        user = "\n\n".join(
            [
                TASK,
                "[Data]",
                bug_block(case),
                reference_block(case),
                SCORE_ANSWER,
                candidate_block(case),
            ]
        )
        inputs = s1_inputs(case, with_reference=True)
        group = cache_group(PURPOSE, case)
        response = ask(one_turn(PURPOSE, user, SCORE_SCHEMA, inputs, group=group))
        return scored(response)
