"""The offline rules of the strategies (``judging/strategies/offline.py``) against the demo
bundle: the reference score, S1a…S5, S2's turns, S4's and S5's checks, the rubric judge."""

import statistics

from judging.strategies.offline import SCORE_PURPOSES
from sejury_web.llm.offline import offline_answer
from tests.offline_requests import (
    EMPTY,
    GARBAGE,
    analysis,
    demo_bundle,
    judge_inputs,
)


def test_the_reference_itself_scores_100_and_is_valid() -> None:
    bugs, _ = demo_bundle()
    for bug in bugs.values():
        reference = bug["reference_patch"]
        for purpose in ("judge.s1b", "judge.s2", "judge.s3", "judge.s4", "judge.s5"):
            answer = offline_answer(purpose=purpose, inputs=judge_inputs(purpose, bug, reference))
            assert answer["score"] == 100, (bug["key"], purpose, answer)
        verdict = offline_answer(
            purpose="judge.rubric", inputs=judge_inputs("judge.rubric", bug, reference)
        )
        assert verdict["verdict"] == "VALID", verdict
        assert all(r["passed"] for r in verdict["requirements"])
        assert len(verdict["requirements"]) == len(analysis(bug["key"])[2])


def test_test_only_empty_and_unreadable_candidates_score_0_and_are_invalid() -> None:
    bugs, patches = demo_bundle()
    test_only = [
        (bugs[p["bug"]], p["diff"]) for p in patches if p["metadata"]["demo_case"] == "test_only"
    ]
    assert len(test_only) == 5
    unusable = [(bug, diff) for bug in bugs.values() for diff in (EMPTY, GARBAGE)]
    for bug, candidate in test_only + unusable:
        for purpose in SCORE_PURPOSES:
            answer = offline_answer(purpose=purpose, inputs=judge_inputs(purpose, bug, candidate))
            assert answer["score"] == 0, (purpose, answer)
        verdict = offline_answer(
            purpose="judge.rubric", inputs=judge_inputs("judge.rubric", bug, candidate)
        )
        assert verdict["verdict"] == "INVALID"
    some_bug = next(iter(bugs.values()))
    reasons = {
        candidate: offline_answer(
            purpose="judge.s3", inputs=judge_inputs("judge.s3", some_bug, candidate)
        )["reasoning"]
        for candidate in (EMPTY, GARBAGE, test_only[0][1])
    }
    assert "empty" in reasons[EMPTY]
    assert "not a readable unified diff" in reasons[GARBAGE]
    assert "only tests" in reasons[test_only[0][1]]


def test_s1a_never_exceeds_50() -> None:
    bugs, patches = demo_bundle()
    scores = [
        offline_answer(
            purpose="judge.s1a", inputs=judge_inputs("judge.s1a", bugs[p["bug"]], p["diff"])
        )["score"]
        for p in patches
    ]
    assert set(scores) == {0, 50}


def _demo_scores() -> dict[str, dict[str, list[float]]]:
    """Per purpose, the scores of the demo patches humans expect VALID and INVALID."""
    bugs, patches = demo_bundle()
    scores: dict[str, dict[str, list[float]]] = {}
    for purpose in (*SCORE_PURPOSES, "judge.rubric"):
        by_label: dict[str, list[float]] = {"VALID": [], "INVALID": []}
        for patch in patches:
            inputs = judge_inputs(purpose, bugs[patch["bug"]], patch["diff"])
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
    bugs, patches = demo_bundle()
    (patch,) = [p for p in patches if p["key"] == "go-cache-1-p1"]  # locks Get, not Len
    answer = offline_answer(
        purpose="judge.rubric",
        inputs=judge_inputs("judge.rubric", bugs["go-cache-1"], patch["diff"]),
    )
    assert [r["passed"] for r in answer["requirements"]] == [True, False]
    assert "nothing in `Len()`" in answer["requirements"][1]["reason"]
    assert answer["verdict"] == "INVALID"


def test_rubric_judge_without_a_rubric_falls_back_to_the_reference_score() -> None:
    bugs, patches = demo_bundle()
    bug = bugs["java-paginate-1"]
    for patch in (p for p in patches if p["bug"] == bug["key"]):
        inputs = {**judge_inputs("judge.rubric", bug, patch["diff"]), "rubric": None}
        verdict = offline_answer(purpose="judge.rubric", inputs=inputs)
        score = offline_answer(
            purpose="judge.s3", inputs=judge_inputs("judge.s3", bug, patch["diff"])
        )["score"]
        assert verdict["requirements"] == []
        assert verdict["verdict"] == ("VALID" if score >= 50 else "INVALID"), (score, verdict)
    no_reference = {**inputs, "reference_diff": None}
    assert offline_answer(purpose="judge.rubric", inputs=no_reference)["verdict"] == "INVALID"


def test_hand_written_requirements() -> None:
    bug = demo_bundle()[0]["go-cache-1"]
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
    inputs = {**judge_inputs("judge.rubric", bug, candidate), "rubric": rubric}
    answer = offline_answer(purpose="judge.rubric", inputs=inputs)
    assert [r["passed"] for r in answer["requirements"]] == [True, True, False, False, True]
    assert [r["index"] for r in answer["requirements"]] == [1, 2, 3, 4, 5]
    assert answer["verdict"] == "INVALID"
    without_reference = offline_answer(
        purpose="judge.rubric", inputs={**inputs, "reference_diff": None}
    )
    assert without_reference["requirements"][4]["passed"] is False  # nothing to fall back on


def test_s4_and_s5_without_the_reference_count_the_checks_met_alone() -> None:
    bugs, _patches = demo_bundle()
    bug = bugs["go-cache-1"]
    for purpose in ("judge.s4", "judge.s5"):
        shown = judge_inputs(purpose, bug, bug["reference_patch"])
        unseen = {**shown, "reference_diff": None}
        # The reference itself meets every check: 100 alone, and blended with its own
        # reference score (100) also 100.
        assert offline_answer(purpose=purpose, inputs=unseen)["score"] == 100
        assert offline_answer(purpose=purpose, inputs=shown)["score"] == 100
        empty = {**unseen, "candidate_diff": ""}
        assert offline_answer(purpose=purpose, inputs=empty)["score"] == 0


def test_s2_first_turn_gives_the_reference_score_and_its_reason() -> None:
    bugs, _patches = demo_bundle()
    bug = bugs["go-cache-1"]
    inputs = judge_inputs("judge.s1b", bug, bug["reference_patch"])
    first = offline_answer(purpose="judge.s2.assess", inputs=inputs)
    s1b = offline_answer(purpose="judge.s1b", inputs=inputs)
    assert first == {"score": s1b["score"], "reasons": [s1b["reasoning"]]}


def test_s2_agrees_or_revises() -> None:
    bug = demo_bundle()[0]["go-cache-1"]
    inputs = judge_inputs("judge.s2", bug, bug["reference_patch"])
    agree = offline_answer(
        purpose="judge.s2", inputs={**inputs, "previous": {"score": 95, "reasoning": ""}}
    )
    revise = offline_answer(
        purpose="judge.s2", inputs={**inputs, "previous": {"score": 20, "reasoning": ""}}
    )
    assert agree["score"] == revise["score"] == 100
    assert "I agree with 95" in agree["reasoning"]
    assert "I revise 20 to 100" in revise["reasoning"]
