"""Every request the offline model answers, over the demo bundle, and the shapes the apps
expect of its answers: the corpus the offline tests of each app share."""

import json
from collections.abc import Iterator
from functools import cache
from typing import Any

from judging.dimensions import Dimension
from judging.judges.answers import DIMENSIONS, SCORE, VERDICT, AnswerSpec
from judging.judges.strategy import PURPOSES as WRITTEN_PURPOSES
from judging.strategies.offline import SCORE_PURPOSES
from sejury_web.llm.offline import offline_answer
from tests.helpers import DEMO_BUNDLE

TEXT = {"type": "string", "minLength": 1}


def _object(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


# The output shapes the rubric and judging apps expect (their schemas live with them).
DRAFT_TEMPLATED_SCHEMA = _object(
    root_cause=TEXT,
    requirements={"type": "array", "minItems": 1, "items": _object(title=TEXT, detail=TEXT)},
    acceptable_solutions={"type": "array", "items": TEXT},
    unacceptable_solutions={"type": "array", "items": TEXT},
)
DRAFT_FREE_FORM_SCHEMA = _object(rubric=TEXT)
JUDGE_RUBRIC_SCHEMA = _object(
    thought=TEXT,
    verdict={"enum": ["VALID", "INVALID"]},
    justification=TEXT,
    requirements={
        "type": "array",
        "items": _object(
            index={"type": "integer", "minimum": 1}, passed={"type": "boolean"}, reason=TEXT
        ),
    },
)
SCORE_SCHEMA = _object(score={"type": "integer", "minimum": 0, "maximum": 100}, reasoning=TEXT)
REASONS_SCHEMA = _object(
    score={"type": "integer", "minimum": 0, "maximum": 100},
    reasons={"type": "array", "minItems": 1, "items": TEXT},
)
PROPERTIES_SCHEMA = _object(properties={"type": "array", "minItems": 1, "items": TEXT})
TESTS_SCHEMA = _object(
    tests={"type": "array", "minItems": 1, "items": _object(name=TEXT, description=TEXT)}
)

# A written judge of each answer kind (their schemas are derived from the kind, in the app).
WRITTEN_ANSWERS = (
    AnswerSpec(VERDICT),
    AnswerSpec(SCORE),
    AnswerSpec(DIMENSIONS, (Dimension("maintainability", 1, 5), Dimension("security", 0, 3))),
)

EMPTY = ""
GARBAGE = "this is not a diff at all\n"
NOT_PROSE_HEADINGS = ("Root cause", "Root Cause", "Requirements", "Acceptable", "Unacceptable")


@cache
def demo_bundle() -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    records = [json.loads(line) for line in DEMO_BUNDLE.read_text(encoding="utf-8").splitlines()]
    bugs = {r["key"]: r for r in records if r["kind"] == "bug"}
    return bugs, [r for r in records if r["kind"] == "patch"]


def bug_inputs(bug: dict[str, Any]) -> dict[str, str]:
    return {"key": bug["key"], "description": bug["description"]}


@cache
def analysis(bug_key: str) -> tuple[list[str], list[dict[str, str]], list[dict[str, str]]]:
    """The properties, tests and draft requirements the offline model derives for a bug."""
    bug = demo_bundle()[0][bug_key]
    inputs = {"bug": bug_inputs(bug), "reference_diff": bug["reference_patch"]}
    properties = offline_answer(purpose="judge.s4.analyze", inputs=inputs)["properties"]
    tests = offline_answer(purpose="judge.s5.tests", inputs=inputs)["tests"]
    draft = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "templated"})
    return properties, tests, draft["requirements"]


def judge_inputs(
    purpose: str, bug: dict[str, Any], candidate: str, *, reference: str | None = None
) -> dict[str, Any]:
    """Inputs for a judge purpose, with the analysis and rubric the pipeline would pass."""
    inputs: dict[str, Any] = {
        "bug": bug_inputs(bug),
        "candidate_diff": candidate,
        "reference_diff": bug["reference_patch"] if reference is None else reference,
    }
    properties, tests, requirements = analysis(bug["key"])
    if purpose == "judge.s1a":
        del inputs["reference_diff"]
    elif purpose == "judge.s2":
        inputs["previous"] = {"score": 70, "reasoning": "an earlier answer"}
    elif purpose == "judge.s4":
        inputs["properties"] = properties
    elif purpose == "judge.s5":
        inputs["tests"] = tests
    elif purpose == "judge.rubric":
        inputs["rubric"] = {"requirements": requirements, "markdown": ""}
    return inputs


def every_request() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(purpose, inputs, schema) for every purpose over the whole demo bundle."""
    bugs, patches = demo_bundle()
    for bug in bugs.values():
        for reference in (bug["reference_patch"], EMPTY, GARBAGE):
            base = {"bug": bug_inputs(bug), "reference_diff": reference}
            yield "judge.s4.analyze", base, PROPERTIES_SCHEMA
            yield "judge.s5.tests", base, TESTS_SCHEMA
            templated = {**base, "variant": "templated"}
            yield "rubric.draft", templated, DRAFT_TEMPLATED_SCHEMA
            yield "rubric.draft", {**base, "variant": "free_form"}, DRAFT_FREE_FORM_SCHEMA
            yield from revise_requests(base)
        candidates = [p["diff"] for p in patches if p["bug"] == bug["key"]]
        for candidate in [*candidates, bug["reference_patch"], EMPTY, GARBAGE]:
            for purpose in SCORE_PURPOSES:
                yield purpose, judge_inputs(purpose, bug, candidate), SCORE_SCHEMA
            for purpose in ("judge.s4", "judge.s5"):  # step 2 of paper 000's S4/S5
                unseen = {**judge_inputs(purpose, bug, candidate), "reference_diff": None}
                yield purpose, unseen, SCORE_SCHEMA
            first_turn = judge_inputs("judge.s1b", bug, candidate)
            yield "judge.s2.assess", first_turn, REASONS_SCHEMA
            inputs = judge_inputs("judge.rubric", bug, candidate)
            yield "judge.rubric", inputs, JUDGE_RUBRIC_SCHEMA
            yield "judge.rubric", {**inputs, "rubric": None}, JUDGE_RUBRIC_SCHEMA
            yield from rejection_requests(bug, candidate)
            yield from written_requests(bug, candidate)


def written_requests(
    bug: dict[str, Any], candidate: str
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """A written judge of each kind whose template shows the reference fix, the rubric, both
    or neither (what it does not show reaches the offline model as None)."""
    rubric = judge_inputs("judge.rubric", bug, candidate)["rubric"]
    for spec in WRITTEN_ANSWERS:
        answer = {
            "kind": spec.kind,
            "dimensions": [dimension.as_json() for dimension in spec.dimensions],
            "overall": spec.overall,
        }
        for reference, shown_rubric in (
            (bug["reference_patch"], None),
            (None, None),
            (bug["reference_patch"], rubric),
            (None, rubric),
        ):
            inputs = {
                "bug": bug_inputs(bug),
                "candidate_diff": candidate,
                "reference_diff": reference,
                "rubric": shown_rubric,
                "answer": answer,
            }
            yield WRITTEN_PURPOSES[spec.kind], inputs, spec.schema


REVISE_TEMPLATED_SCHEMA = _object(**DRAFT_TEMPLATED_SCHEMA["properties"], rationale=TEXT)
REVISE_FREE_FORM_SCHEMA = _object(rubric=TEXT, rationale=TEXT)


def revise_requests(
    base: dict[str, Any],
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``rubric.revise`` of the offline draft, in both variants, from one disagreement each
    way: humans VALID where the judge failed requirement 1, and humans INVALID where it
    passed the patch."""
    disagreements = [
        {
            "patch_key": key,
            "diff": base["reference_diff"],
            "diff_cut": "",
            "judge_verdict": judge,
            "human_label": human,
            "justification": "The judge's reasons.",
            "requirements": [{"index": 1, "passed": judge == "VALID", "reason": "why"}],
            "notes": ["An annotator's note."],
            "themes": ["Rubric ambiguity"],
        }
        for key, human, judge in (("p-valid", "VALID", "INVALID"), ("p-bad", "INVALID", "VALID"))
    ]
    for variant, schema in (
        ("templated", REVISE_TEMPLATED_SCHEMA),
        ("free_form", REVISE_FREE_FORM_SCHEMA),
    ):
        draft = offline_answer(purpose="rubric.draft", inputs={**base, "variant": variant})
        rubric = (
            {"text": draft["rubric"]}
            if variant == "free_form"
            else {
                "root_cause": draft["root_cause"],
                "requirements": draft["requirements"],
                "acceptable": draft["acceptable_solutions"],
                "unacceptable": draft["unacceptable_solutions"],
            }
        )
        inputs = {
            **base,
            "variant": variant,
            "rubric": rubric,
            "disagreements": disagreements,
            "left_out": 0,
        }
        yield "rubric.revise", inputs, schema


REJECTION_THEME_SCHEMA = _object(
    theme={"enum": ["violates_requirement", "root_cause", "incomplete", "new_issues", "other"]},
    rationale=TEXT,
)


def rejection_requests(
    bug: dict[str, Any], candidate: str
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``judge.rejection_theme`` of the offline rubric judge's own justification of the
    candidate, with and without the requirements it failed."""
    judged = offline_answer(
        purpose="judge.rubric", inputs=judge_inputs("judge.rubric", bug, candidate)
    )
    failed = [
        {"index": item["index"], "title": "", "reason": item["reason"]}
        for item in judged["requirements"]
        if not item["passed"]
    ]
    base = {
        "bug": bug_inputs(bug),
        "candidate_diff": candidate,
        "justification": judged["justification"],
        "strategy": "rubric",
    }
    yield "judge.rejection_theme", {**base, "failed_requirements": failed}, REJECTION_THEME_SCHEMA
    yield "judge.rejection_theme", {**base, "failed_requirements": []}, REJECTION_THEME_SCHEMA


def texts(answer: Any, key: str = "") -> Iterator[str]:
    """Every free-text string of an answer (the verdict is an enum, not text)."""
    if isinstance(answer, dict):
        for name, value in answer.items():
            yield from texts(value, name)
    elif isinstance(answer, list):
        for item in answer:
            yield from texts(item, key)
    elif isinstance(answer, str) and key not in ("verdict", "theme"):
        yield answer
