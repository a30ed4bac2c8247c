"""S2, Direct Assess and Rethink (paper 000 §III, prompt skeleton of 001).

Turn 1 is S1b's prompt, asking for the score with its reasons as a list; turn 2 shows the
model its own answer and asks it to validate each reason and adjust the score. S2 makes its
own first turn (it does not reuse ``s1b``'s result), so it is an evaluator on its own, as in
the paper: a team with both costs four calls per patch for s1b and s2 together, not three.
"""

import json
from typing import Any

from sejury_web.llm import LLMRequest, Message

from .base import Ask, Case, Outcome, Step, Strategy, require_reference
from .prompts import SCORE_ANSWER, SCORE_FIELD, SCORE_SCHEMA, cache_group
from .prompts import request as one_turn
from .registry import register
from .s1 import s1_inputs, s1_user

PROMPT_VERSION = "s2-v2"
# Both turns: the rethink's prefix is the whole first turn of the same patch.
PURPOSE = "judge.s2"

REASONS_ANSWER = """\
Answer with a JSON object: "score", an integer from 0 to 100, and "reasons", the reasons for
the score as a list of short statements about the patch, each of which is true or false."""

REASONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": SCORE_FIELD,
        "reasons": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    "required": ["score", "reasons"],
    "additionalProperties": False,
}

RETHINK = """\
[Task Description]
Your task is to recheck whether the reasons and the score you gave above are proper.

[Evaluation Criteria]
1. If a reason against the patch is validated to be False, increase the score a bit.
2. If a reason in favour of the patch is validated to be False, decrease the score a bit.
3. If a reason is validated to be True, do not change the score for it.

[Evaluation Steps]
1. Only validate the previous score and reasons, one by one, against the bug and the patch.
2. Reply with your adjusted score.

[Data]
Predicted score: {score}
Reasons:
{reasons}

{answer}"""


def _first_turn(case: Case) -> LLMRequest:
    user = s1_user(case, with_reference=True, answer=REASONS_ANSWER)
    inputs = s1_inputs(case, with_reference=True)
    group = cache_group(PURPOSE, case)
    return one_turn(f"{PURPOSE}.assess", user, REASONS_SCHEMA, inputs, group=group)


def _rethink(case: Case, first: LLMRequest, answer: dict[str, Any]) -> LLMRequest:
    reasons = "\n".join(f"- {reason}" for reason in answer["reasons"])
    user = RETHINK.format(score=answer["score"], reasons=reasons, answer=SCORE_ANSWER)
    return LLMRequest(
        purpose=PURPOSE,
        messages=(
            *first.messages,
            Message("assistant", json.dumps(answer, ensure_ascii=False)),
            Message("user", user),
        ),
        schema=SCORE_SCHEMA,
        inputs={**s1_inputs(case, with_reference=True), "previous": answer},
        cache_group=first.cache_group,
    )


@register
class DirectAssessAndRethink(Strategy):
    name = "s2"
    label = "S2 Direct Assess and Rethink"
    description = "S1b, then a second turn that validates its reasons and adjusts its score."
    prompt_version = PROMPT_VERSION

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        require_reference(case)
        first_request = _first_turn(case)
        first = ask(first_request)
        second = ask(_rethink(case, first_request, first.answer))
        return Outcome(
            float(second.answer["score"]),
            second.answer["reasoning"],
            (Step("assess", first), Step("rethink", second)),
        )
