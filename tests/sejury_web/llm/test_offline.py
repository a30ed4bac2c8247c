"""The offline heuristic against the demo bundle: shapes, marker, determinism, rules."""

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from typing import Any

import jsonschema
import pytest
from django.conf import settings

from sejury_web.llm import OFFLINE_MARKER
from sejury_web.llm.offline import (
    BAD_INPUT,
    MISSING_INPUT,
    PREFIX,
    SCORE_PURPOSES,
    SUPPORTED_PURPOSES,
    UNSUPPORTED_PURPOSE,
    OfflineUnsupported,
    offline_answer,
)
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

EMPTY = ""
GARBAGE = "this is not a diff at all\n"
NOT_PROSE_HEADINGS = ("Root cause", "Root Cause", "Requirements", "Acceptable", "Unacceptable")


@cache
def _bundle() -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    records = [json.loads(line) for line in DEMO_BUNDLE.read_text(encoding="utf-8").splitlines()]
    bugs = {r["key"]: r for r in records if r["kind"] == "bug"}
    return bugs, [r for r in records if r["kind"] == "patch"]


def _bug(bug: dict[str, Any]) -> dict[str, str]:
    return {"key": bug["key"], "description": bug["description"]}


@cache
def _analysis(bug_key: str) -> tuple[list[str], list[dict[str, str]], list[dict[str, str]]]:
    """The properties, tests and draft requirements the offline model derives for a bug."""
    bug = _bundle()[0][bug_key]
    inputs = {"bug": _bug(bug), "reference_diff": bug["reference_patch"]}
    properties = offline_answer(purpose="judge.s4.analyze", inputs=inputs)["properties"]
    tests = offline_answer(purpose="judge.s5.tests", inputs=inputs)["tests"]
    draft = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "templated"})
    return properties, tests, draft["requirements"]


def _judge_inputs(
    purpose: str, bug: dict[str, Any], candidate: str, *, reference: str | None = None
) -> dict[str, Any]:
    """Inputs for a judge purpose, with the analysis and rubric the pipeline would pass."""
    inputs: dict[str, Any] = {
        "bug": _bug(bug),
        "candidate_diff": candidate,
        "reference_diff": bug["reference_patch"] if reference is None else reference,
    }
    properties, tests, requirements = _analysis(bug["key"])
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


def _every_request() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(purpose, inputs, schema) for every purpose over the whole demo bundle."""
    bugs, patches = _bundle()
    for bug in bugs.values():
        for reference in (bug["reference_patch"], EMPTY, GARBAGE):
            base = {"bug": _bug(bug), "reference_diff": reference}
            yield "judge.s4.analyze", base, PROPERTIES_SCHEMA
            yield "judge.s5.tests", base, TESTS_SCHEMA
            templated = {**base, "variant": "templated"}
            yield "rubric.draft", templated, DRAFT_TEMPLATED_SCHEMA
            yield "rubric.draft", {**base, "variant": "free_form"}, DRAFT_FREE_FORM_SCHEMA
            yield from _revise_requests(base)
        candidates = [p["diff"] for p in patches if p["bug"] == bug["key"]]
        for candidate in [*candidates, bug["reference_patch"], EMPTY, GARBAGE]:
            for purpose in SCORE_PURPOSES:
                yield purpose, _judge_inputs(purpose, bug, candidate), SCORE_SCHEMA
            for purpose in ("judge.s4", "judge.s5"):  # step 2 of paper 000's S4/S5
                unseen = {**_judge_inputs(purpose, bug, candidate), "reference_diff": None}
                yield purpose, unseen, SCORE_SCHEMA
            first_turn = _judge_inputs("judge.s1b", bug, candidate)
            yield "judge.s2.assess", first_turn, REASONS_SCHEMA
            inputs = _judge_inputs("judge.rubric", bug, candidate)
            yield "judge.rubric", inputs, JUDGE_RUBRIC_SCHEMA
            yield "judge.rubric", {**inputs, "rubric": None}, JUDGE_RUBRIC_SCHEMA
            yield from _rejection_requests(bug, candidate)


REVISE_TEMPLATED_SCHEMA = _object(**DRAFT_TEMPLATED_SCHEMA["properties"], rationale=TEXT)
REVISE_FREE_FORM_SCHEMA = _object(rubric=TEXT, rationale=TEXT)


def _revise_requests(
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


def _rejection_requests(
    bug: dict[str, Any], candidate: str
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``judge.rejection_theme`` of the offline rubric judge's own justification of the
    candidate, with and without the requirements it failed."""
    judged = offline_answer(
        purpose="judge.rubric", inputs=_judge_inputs("judge.rubric", bug, candidate)
    )
    failed = [
        {"index": item["index"], "title": "", "reason": item["reason"]}
        for item in judged["requirements"]
        if not item["passed"]
    ]
    base = {
        "bug": _bug(bug),
        "candidate_diff": candidate,
        "justification": judged["justification"],
        "strategy": "rubric",
    }
    yield "judge.rejection_theme", {**base, "failed_requirements": failed}, REJECTION_THEME_SCHEMA
    yield "judge.rejection_theme", {**base, "failed_requirements": []}, REJECTION_THEME_SCHEMA


def _texts(answer: Any, key: str = "") -> Iterator[str]:
    """Every free-text string of an answer (the verdict is an enum, not text)."""
    if isinstance(answer, dict):
        for name, value in answer.items():
            yield from _texts(value, name)
    elif isinstance(answer, list):
        for item in answer:
            yield from _texts(item, key)
    elif isinstance(answer, str) and key not in ("verdict", "theme"):
        yield answer


def test_every_answer_matches_its_schema_carries_the_marker_and_is_deterministic() -> None:
    assert f"[{OFFLINE_MARKER}] " == PREFIX
    asked = set()
    for purpose, inputs, schema in _every_request():
        answer = offline_answer(purpose=purpose, inputs=inputs)
        jsonschema.Draft202012Validator(schema).validate(answer)
        assert all(text.startswith(PREFIX) for text in _texts(answer)), (purpose, answer)
        again = offline_answer(purpose=purpose, inputs=json.loads(json.dumps(inputs)))
        assert json.dumps(again) == json.dumps(answer)
        asked.add(purpose)
    assert asked == set(SUPPORTED_PURPOSES)


ANSWER_SCRIPT = """
import json, sys
from sejury_web.llm.offline import offline_answer
requests = json.load(sys.stdin)
json.dump([offline_answer(purpose=p, inputs=i) for p, i in requests], sys.stdout)
"""


def test_answers_do_not_depend_on_hash_seeds() -> None:
    """Sets and dicts must not leak their order: interpreters with other seeds agree."""
    requests = json.dumps([(purpose, inputs) for purpose, inputs, _ in _every_request()])
    outputs = []
    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-c", ANSWER_SCRIPT],
            input=requests,
            cwd=settings.BASE_DIR,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.append(json.loads(result.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0] == [offline_answer(purpose=p, inputs=i) for p, i, _ in _every_request()]


def test_the_reference_itself_scores_100_and_is_valid() -> None:
    bugs, _ = _bundle()
    for bug in bugs.values():
        reference = bug["reference_patch"]
        for purpose in ("judge.s1b", "judge.s2", "judge.s3", "judge.s4", "judge.s5"):
            answer = offline_answer(purpose=purpose, inputs=_judge_inputs(purpose, bug, reference))
            assert answer["score"] == 100, (bug["key"], purpose, answer)
        verdict = offline_answer(
            purpose="judge.rubric", inputs=_judge_inputs("judge.rubric", bug, reference)
        )
        assert verdict["verdict"] == "VALID", verdict
        assert all(r["passed"] for r in verdict["requirements"])
        assert len(verdict["requirements"]) == len(_analysis(bug["key"])[2])


def test_test_only_empty_and_unreadable_candidates_score_0_and_are_invalid() -> None:
    bugs, patches = _bundle()
    test_only = [
        (bugs[p["bug"]], p["diff"]) for p in patches if p["metadata"]["demo_case"] == "test_only"
    ]
    assert len(test_only) == 5
    unusable = [(bug, diff) for bug in bugs.values() for diff in (EMPTY, GARBAGE)]
    for bug, candidate in test_only + unusable:
        for purpose in SCORE_PURPOSES:
            answer = offline_answer(purpose=purpose, inputs=_judge_inputs(purpose, bug, candidate))
            assert answer["score"] == 0, (purpose, answer)
        verdict = offline_answer(
            purpose="judge.rubric", inputs=_judge_inputs("judge.rubric", bug, candidate)
        )
        assert verdict["verdict"] == "INVALID"
    some_bug = next(iter(bugs.values()))
    reasons = {
        candidate: offline_answer(
            purpose="judge.s3", inputs=_judge_inputs("judge.s3", some_bug, candidate)
        )["reasoning"]
        for candidate in (EMPTY, GARBAGE, test_only[0][1])
    }
    assert "empty" in reasons[EMPTY]
    assert "not a readable unified diff" in reasons[GARBAGE]
    assert "only tests" in reasons[test_only[0][1]]


def test_s1a_never_exceeds_50() -> None:
    bugs, patches = _bundle()
    scores = [
        offline_answer(
            purpose="judge.s1a", inputs=_judge_inputs("judge.s1a", bugs[p["bug"]], p["diff"])
        )["score"]
        for p in patches
    ]
    assert set(scores) == {0, 50}


def _demo_scores() -> dict[str, dict[str, list[float]]]:
    """Per purpose, the scores of the demo patches humans expect VALID and INVALID."""
    bugs, patches = _bundle()
    scores: dict[str, dict[str, list[float]]] = {}
    for purpose in (*SCORE_PURPOSES, "judge.rubric"):
        by_label: dict[str, list[float]] = {"VALID": [], "INVALID": []}
        for patch in patches:
            inputs = _judge_inputs(purpose, bugs[patch["bug"]], patch["diff"])
            answer = offline_answer(purpose=purpose, inputs=inputs)
            value = answer["score"] if "score" in answer else 100 * (answer["verdict"] == "VALID")
            by_label[patch["metadata"]["expected"]].append(value)
        scores[purpose] = by_label
    return scores


def test_demo_patches_expected_valid_score_higher_than_invalid_ones() -> None:
    # A heuristic, so only the direction is asserted. The means when this was written over
    # 11 VALID / 13 INVALID patches (judge.rubric as % judged VALID): s1a 50 / 30.8,
    # s1b s2 s3 74.5 / 28.6, s4 69.2 / 20.1, s5 66.9 / 20.1, judge.rubric 54.5 / 0.
    for purpose, by_label in _demo_scores().items():
        valid, invalid = statistics.mean(by_label["VALID"]), statistics.mean(by_label["INVALID"])
        assert valid > invalid, (purpose, valid, invalid)


def test_an_incomplete_fix_fails_the_requirement_of_the_function_it_left_out() -> None:
    bugs, patches = _bundle()
    (patch,) = [p for p in patches if p["key"] == "go-cache-1-p1"]  # locks Get, not Len
    answer = offline_answer(
        purpose="judge.rubric",
        inputs=_judge_inputs("judge.rubric", bugs["go-cache-1"], patch["diff"]),
    )
    assert [r["passed"] for r in answer["requirements"]] == [True, False]
    assert "nothing in `Len()`" in answer["requirements"][1]["reason"]
    assert answer["verdict"] == "INVALID"


def test_draft_names_files_functions_and_conditions() -> None:
    bug = _bundle()[0]["java-paginate-1"]
    inputs = {"bug": _bug(bug), "reference_diff": bug["reference_patch"], "variant": "templated"}
    draft = offline_answer(purpose="rubric.draft", inputs=inputs)
    assert "`src/main/java/org/acme/paging/Paginator.java`" in draft["root_cause"]
    assert "`pageCount()`" in draft["root_cause"]
    assert "`return (items.size() + pageSize - 1) / pageSize;`" in draft["root_cause"]
    first = draft["requirements"][0]
    assert first["title"] == PREFIX + "Change `pageCount()` near line 21"
    assert "replace `return items.size() / pageSize;` with" in first["detail"]
    assert any("Suppressing the error" in s for s in draft["unacceptable_solutions"])
    assert any("only tests" in s for s in draft["unacceptable_solutions"])


def test_free_form_draft_has_the_content_without_the_template_headings() -> None:
    bug = _bundle()[0]["c-conf-1"]
    inputs = {"bug": _bug(bug), "reference_diff": bug["reference_patch"]}
    templated = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "templated"})
    free = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "free_form"})
    text = free["rubric"]
    for line in text.splitlines():
        assert not line.startswith(("#", *NOT_PROSE_HEADINGS)), line
    for requirement in templated["requirements"]:
        assert requirement["detail"].removeprefix(PREFIX) in text


def test_draft_of_an_unreadable_reference_says_so() -> None:
    bug = _bundle()[0]["py-slugify-1"]
    inputs = {"bug": _bug(bug), "reference_diff": GARBAGE, "variant": "templated"}
    draft = offline_answer(purpose="rubric.draft", inputs=inputs)
    (requirement,) = draft["requirements"]
    assert "could not be read" in requirement["title"]
    assert "not a readable unified diff" in requirement["detail"]


def test_draft_of_a_test_only_reference_mentions_the_tests() -> None:
    _, patches = _bundle()
    (patch,) = [p for p in patches if p["key"] == "py-slugify-1-p3"]
    inputs = {"bug": {"key": "k", "description": ""}, "reference_diff": patch["diff"]}
    draft = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "templated"})
    assert "changes no non-test code" in draft["requirements"][0]["title"]
    assert "`tests/test_slugify.py`" in draft["root_cause"]
    tests = offline_answer(purpose="judge.s5.tests", inputs=inputs)["tests"]
    assert [t["name"] for t in tests] == [PREFIX + "tests/test_slugify.py"]


def test_rubric_judge_without_a_rubric_falls_back_to_the_reference_score() -> None:
    bugs, patches = _bundle()
    bug = bugs["java-paginate-1"]
    for patch in (p for p in patches if p["bug"] == bug["key"]):
        inputs = {**_judge_inputs("judge.rubric", bug, patch["diff"]), "rubric": None}
        verdict = offline_answer(purpose="judge.rubric", inputs=inputs)
        score = offline_answer(
            purpose="judge.s3", inputs=_judge_inputs("judge.s3", bug, patch["diff"])
        )["score"]
        assert verdict["requirements"] == []
        assert verdict["verdict"] == ("VALID" if score >= 50 else "INVALID"), (score, verdict)
    no_reference = {**inputs, "reference_diff": None}
    assert offline_answer(purpose="judge.rubric", inputs=no_reference)["verdict"] == "INVALID"


def test_hand_written_requirements() -> None:
    bug = _bundle()[0]["go-cache-1"]
    candidate = bug["reference_patch"]
    rubric = {
        "markdown": "",
        "requirements": [
            {"title": "Lock the reads", "detail": "Take ``c.mu.RLock()`` before reading."},
            {"title": "Right file", "detail": "The change is in `cache/cache.go`."},
            {"title": "Wrong file", "detail": "The change is in `cache/other.go`."},
            {"title": "Not in `Set()`", "detail": "Set is fine already."},
            {"title": "Be correct", "detail": "No code quoted: nothing to check offline."},
        ],
    }
    inputs = {**_judge_inputs("judge.rubric", bug, candidate), "rubric": rubric}
    answer = offline_answer(purpose="judge.rubric", inputs=inputs)
    assert [r["passed"] for r in answer["requirements"]] == [True, True, False, False, True]
    assert [r["index"] for r in answer["requirements"]] == [1, 2, 3, 4, 5]
    assert answer["verdict"] == "INVALID"
    without_reference = offline_answer(
        purpose="judge.rubric", inputs={**inputs, "reference_diff": None}
    )
    assert without_reference["requirements"][4]["passed"] is False  # nothing to fall back on


def test_s4_and_s5_without_the_reference_count_the_checks_met_alone() -> None:
    bugs, _patches = _bundle()
    bug = bugs["go-cache-1"]
    for purpose in ("judge.s4", "judge.s5"):
        shown = _judge_inputs(purpose, bug, bug["reference_patch"])
        unseen = {**shown, "reference_diff": None}
        # The reference itself meets every check: 100 alone, and blended with its own
        # reference score (100) also 100.
        assert offline_answer(purpose=purpose, inputs=unseen)["score"] == 100
        assert offline_answer(purpose=purpose, inputs=shown)["score"] == 100
        empty = {**unseen, "candidate_diff": ""}
        assert offline_answer(purpose=purpose, inputs=empty)["score"] == 0


def test_s2_first_turn_gives_the_reference_score_and_its_reason() -> None:
    bugs, _patches = _bundle()
    bug = bugs["go-cache-1"]
    inputs = _judge_inputs("judge.s1b", bug, bug["reference_patch"])
    first = offline_answer(purpose="judge.s2.assess", inputs=inputs)
    s1b = offline_answer(purpose="judge.s1b", inputs=inputs)
    assert first == {"score": s1b["score"], "reasons": [s1b["reasoning"]]}


def test_s2_agrees_or_revises() -> None:
    bug = _bundle()[0]["go-cache-1"]
    inputs = _judge_inputs("judge.s2", bug, bug["reference_patch"])
    agree = offline_answer(
        purpose="judge.s2", inputs={**inputs, "previous": {"score": 95, "reasoning": ""}}
    )
    revise = offline_answer(
        purpose="judge.s2", inputs={**inputs, "previous": {"score": 20, "reasoning": ""}}
    )
    assert agree["score"] == revise["score"] == 100
    assert "I agree with 95" in agree["reasoning"]
    assert "I revise 20 to 100" in revise["reasoning"]


def test_unsupported_purposes_and_missing_inputs_are_refused() -> None:
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(purpose="judge.s9", inputs={})
    supported = ", ".join(SUPPORTED_PURPOSES)
    assert str(error.value) == UNSUPPORTED_PURPOSE.format(purpose="judge.s9", supported=supported)
    assert "judge.s5.tests" in str(error.value)

    bug = {"key": "k", "description": ""}
    cases = [
        ("judge.s3", {"bug": bug, "reference_diff": None}, "candidate_diff"),
        ("judge.s3", {"bug": bug, "candidate_diff": ""}, "reference_diff"),
        ("judge.s2", {"bug": bug, "candidate_diff": "", "reference_diff": None}, "previous"),
        ("judge.rubric", {"bug": bug, "candidate_diff": "", "reference_diff": None}, "rubric"),
        ("rubric.draft", {"bug": bug, "reference_diff": ""}, "variant"),
        ("judge.s4.analyze", {"reference_diff": ""}, "bug"),
    ]
    for purpose, inputs, key in cases:
        with pytest.raises(OfflineUnsupported) as error:
            offline_answer(purpose=purpose, inputs=inputs)
        assert str(error.value) == MISSING_INPUT.format(purpose=purpose, key=key)

    with pytest.raises(OfflineUnsupported, match="'variant' must be"):
        offline_answer(
            purpose="rubric.draft", inputs={"bug": bug, "reference_diff": "", "variant": "poem"}
        )
    previous = {"bug": bug, "candidate_diff": "", "reference_diff": None, "previous": {}}
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(purpose="judge.s2", inputs=previous)
    assert str(error.value) == BAD_INPUT.format(
        purpose="judge.s2", key="previous.score", expected="an int"
    )
    assert isinstance(error.value, ValueError)  # what the LLM client catches

    rubric = {"requirements": ["a bare string"], "markdown": ""}
    judged = {"bug": bug, "candidate_diff": "", "reference_diff": None, "rubric": rubric}
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(purpose="judge.rubric", inputs=judged)
    assert str(error.value) == BAD_INPUT.format(
        purpose="judge.rubric", key="rubric.requirements", expected="objects"
    )
