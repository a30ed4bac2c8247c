"""S4, Analyze Reference and Assess (paper 000 §III; S5 in paper 001's numbering).

Step 1, once per bug: the properties that make the reference fix correct. Step 2, per patch:
does the candidate keep them? Step 2 shows the model the properties, not the reference.
"""

from typing import Any

from .registry import register
from .two_step import TwoStepStrategy

PROMPT_VERSION = "s4-v2"
NOT_PREPARED = "s4 needs the properties of the reference fix (step 1) first"

ANALYZE = """\
[Task Description]
Your task is to identify the critical properties of the reference fix below: what it makes
the program do, or stop doing, that makes it a correct solution to the bug. State behaviour,
not the fix's exact code, so that a different correct fix also has these properties.

[Evaluation Steps]
1. Read the bug description carefully.
2. Read the reference fix and work out how it removes the bug.
3. List the properties any correct fix must have, one short statement each.

[Data]"""

ANALYZE_ANSWER = 'Answer with a JSON object: "properties", a list of statements.'

PROPERTIES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"properties": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    "required": ["properties"],
    "additionalProperties": False,
}

ASSESS = """\
[Task Description]
Your task is to check whether the candidate patch below keeps the critical properties of a
correct fix of the bug, and to rate its correctness.

[Evaluation Steps]
1. Read the bug description and the properties.
2. For each property, decide whether the program with the candidate patch has it.
3. Assign a correctness score on a scale of 0 to 100: 100 when the patch has every property,
   lower for each property it lacks.

[Data]"""


@register
class AnalyzeReferenceAndAssess(TwoStepStrategy):
    name = "s4"
    label = "S4 Analyze Reference and Assess"
    description = (
        "The properties that make the reference correct (once per bug), then whether the "
        "candidate keeps them."
    )
    prompt_version = PROMPT_VERSION
    bug_step = "judge.s4.analyze"
    step_name = "analyze"
    step_task = ANALYZE
    step_answer = ANALYZE_ANSWER
    step_schema = PROPERTIES_SCHEMA
    assess_task = ASSESS
    not_prepared = NOT_PREPARED

    def findings(self, prepared: dict[str, Any]) -> tuple[str, Any, str]:
        properties = [str(p) for p in prepared["properties"]]
        listed = "\n".join(f"{n}. {p}" for n, p in enumerate(properties, start=1))
        block = f"The critical properties of a correct fix:\n<properties>\n{listed}\n</properties>"
        return "properties", properties, block
