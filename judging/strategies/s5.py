"""S5, Generate Tests and Assess (paper 000 §III; S4 in paper 001's numbering).

Step 1, once per bug: tests written from the bug and the reference fix. Step 2, per patch:
would the candidate pass them? Step 2 shows the model the tests, not the reference.
"""

from typing import Any

from .registry import register
from .two_step import TwoStepStrategy

PROMPT_VERSION = "s5-v2"
NOT_PREPARED = "s5 needs the generated tests (step 1) first"

GENERATE = """\
[Task Description]
Your task is to write test cases for the bug below: tests that fail on the buggy program and
pass on a correctly fixed one. The reference fix shows what correct behaviour is; test that
behaviour, not the fix's exact code, so that any correct fix passes.

[Evaluation Steps]
1. Read the bug description and the reference fix.
2. Write the tests: for each, a name and a description of its input and the expected result.

[Data]"""

GENERATE_ANSWER = (
    'Answer with a JSON object: "tests", a list of objects with a "name" and a "description".'
)

TESTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tests": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "description": {"type": "string"}},
                "required": ["name", "description"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["tests"],
    "additionalProperties": False,
}

ASSESS = """\
[Task Description]
Your task is to evaluate whether the program with the candidate patch below would pass all of
the test cases, and to rate its correctness.

[Evaluation Steps]
1. Read the bug description and the tests.
2. For each test, work out whether the patched program passes it.
3. Assign a correctness score on a scale of 0 to 100: 100 when it passes every test, lower
   for each test it fails.

[Data]"""


@register
class GenerateTestsAndAssess(TwoStepStrategy):
    name = "s5"
    label = "S5 Generate Tests and Assess"
    description = (
        "Tests from the bug and the reference (once per bug), then whether the candidate "
        "passes them."
    )
    prompt_version = PROMPT_VERSION
    bug_step = "judge.s5.tests"
    step_name = "tests"
    step_task = GENERATE
    step_answer = GENERATE_ANSWER
    step_schema = TESTS_SCHEMA
    assess_task = ASSESS
    not_prepared = NOT_PREPARED

    def findings(self, prepared: dict[str, Any]) -> tuple[str, Any, str]:
        tests = [
            {"name": str(t.get("name", "")), "description": str(t.get("description", ""))}
            for t in prepared["tests"]
        ]
        listed = "\n".join(f"- {t['name']}: {t['description']}" for t in tests)
        return "tests", tests, f"The tests:\n<tests>\n{listed}\n</tests>"
