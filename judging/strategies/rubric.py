"""The rubric-guided judge of paper 004 (§3.2): a thought, VALID/INVALID, a justification,
and a pass/fail per requirement of the rubric. Score 100 for VALID, 0 for INVALID.

What it is shown besides the bug and the candidate is the run's context: a rubric (golden,
draft, free-form, or one pinned revision), the reference fix only, or nothing (the ablations
of paper 004, Table 6).
"""

from functools import lru_cache
from typing import Any

from .base import Ask, Case, Outcome, Step, Strategy, StrategyError
from .prompts import bug_block, cache_group, candidate_block, reference_block
from .prompts import request as one_turn
from .registry import register

PROMPT_VERSION = "judge-rubric-v2"
PURPOSE = "judge.rubric"
REFERENCE_CONTEXT = "reference"  # judging.models.Context.REFERENCE
NONE_CONTEXT = "none"  # judging.models.Context.NONE
NO_RUBRIC = "the rubric judge needs the run's {context} rubric, and the case has none"

TASK = """\
Your task is to decide whether the candidate patch below is a VALID fix of the bug: it fixes
the root cause for every input the bug concerns, without breaking other behaviour. Otherwise
it is INVALID (it does not fix the bug, fixes only the symptom, fixes it only partly, breaks
something else, or changes only tests)."""

WITH_RUBRIC = """\
Judge it against the rubric below, written and reviewed by engineers for this bug. For each
numbered requirement of the rubric, say whether the patch meets it (index 1 is the first
requirement); a rubric without numbered requirements gives an empty list."""

WITH_REFERENCE = """\
The developers' reference fix is shown for comparison; a valid patch need not be identical to
it. Leave the list of requirements empty."""

WITH_NOTHING = "No rubric and no reference fix are given. Leave the list of requirements empty."

ANSWER = """\
Answer with a JSON object: "thought", your thinking step by step; "verdict", "VALID" or
"INVALID"; "justification", your reasoning in two or three sentences; and "requirements", a
list of objects with "index", "passed" (true or false) and "reason"."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string"},
        "verdict": {"type": "string", "enum": ["VALID", "INVALID"]},
        "justification": {"type": "string"},
        "requirements": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer", "minimum": 1},
                    "passed": {"type": "boolean"},
                    "reason": {"type": "string"},
                },
                "required": ["index", "passed", "reason"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["thought", "verdict", "justification", "requirements"],
    "additionalProperties": False,
}


def answer_schema(case: Case) -> dict[str, Any]:
    """The schema of the judge's answer to ``case``: its requirement checks bounded by what
    the prompt shows. A templated rubric's checks name its requirements, 1 to its count, at
    most one each; a free-form rubric's name those its Markdown numbers (``SCHEMA``); without
    a rubric there is none, as the prompt says. A check outside them does not match the
    schema (asked again once, then the member fails), never kept as a requirement unnamed."""
    if case.rubric is None:
        return _bounded(0)
    if "requirements" in case.rubric:
        return _bounded(len(case.rubric["requirements"] or []))
    return SCHEMA


@lru_cache(maxsize=64)
def _bounded(count: int) -> dict[str, Any]:
    # One object per count: the forecast keys its work on a schema's identity.
    checks = SCHEMA["properties"]["requirements"]
    item = checks["items"]
    index = dict(item["properties"]["index"])
    if count:  # without a requirement, the empty list alone (no range from 1 to 0)
        index["maximum"] = count
    return {
        **SCHEMA,
        "properties": {
            **SCHEMA["properties"],
            "requirements": {
                **checks,
                "maxItems": count,
                "items": {**item, "properties": {**item["properties"], "index": index}},
            },
        },
    }


def rubric_block(case: Case) -> str:
    return f"The rubric:\n<rubric>\n{case.rubric_text}\n</rubric>"


@register
class RubricJudge(Strategy):
    name = "rubric"
    label = "Rubric-guided judge"
    description = "VALID or INVALID against the run's context: a rubric, the reference, or nothing."
    prompt_version = PROMPT_VERSION
    uses_reference = False  # it sees the reference only in the "reference" context
    uses_rubric = True

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        if case.rubric_missing:
            raise StrategyError(case.rubric_missing)
        if case.rubric is None and case.context not in (REFERENCE_CONTEXT, NONE_CONTEXT):
            # Every other context is a rubric's: without it the judge would see nothing.
            raise StrategyError(NO_RUBRIC.format(context=case.context))
        shows_reference = case.rubric is None and case.context == REFERENCE_CONTEXT
        parts = [TASK]
        if case.rubric is not None:
            parts += [WITH_RUBRIC, "[Data]", bug_block(case), rubric_block(case)]
        elif shows_reference:
            parts += [WITH_REFERENCE, "[Data]", bug_block(case), reference_block(case)]
        else:
            parts += [WITH_NOTHING, "[Data]", bug_block(case)]
        # The candidate last: what comes before it is the same for every candidate of the bug.
        parts += [ANSWER, candidate_block(case)]
        inputs = {
            "bug": case.bug_inputs,
            "candidate_diff": case.candidate_diff,
            "reference_diff": case.reference_diff if shows_reference else None,
            "rubric": case.rubric,
        }
        user = "\n\n".join(parts)
        schema = answer_schema(case)
        response = ask(one_turn(PURPOSE, user, schema, inputs, group=cache_group(PURPOSE, case)))
        answer = response.answer
        valid = answer["verdict"] == "VALID"
        return Outcome(
            100.0 if valid else 0.0,
            answer["justification"],
            (Step("judge", response),),
            verdict=answer["verdict"],
        )
