"""The model strategies: what each one asks (messages, data blocks, schema, inputs) and how it
reads the answer, with a recording ``ask``; then every one through the offline model."""

import dataclasses
import json
from typing import Any

import pytest

from judging.strategies import rubric as rubric_module
from judging.strategies import s2, s4, s5
from judging.strategies.base import NO_REFERENCE, Case, StrategyError
from judging.strategies.prompts import SCORE_SCHEMA, SYSTEM
from judging.strategies.registry import (
    EMPTY_TEAM,
    REPEATED_STRATEGY,
    STRATEGIES,
    get_strategy,
    parse_team,
)
from rubrics.rubric_text import rubric_markdown
from sejury_web.llm import OFFLINE_MARKER, LLMRequest, complete
from sejury_web.llm.answers import AnswerInvalid
from tests.judging.helpers import ANSWERS, CHECKED, SCORE, Recorder
from tests.rubrics.factories import make_diff

REFERENCE = make_diff(old="x = 1", new="x = 2")
CANDIDATE = make_diff(old="x = 1", new="x = 1 + 1")
RUBRIC = {
    "root_cause": "f() sets x to 1.",
    "requirements": [{"title": "Return 2", "detail": "`f()` must set `x = 2`."}],
    "acceptable": [],
    "unacceptable": ["changing the test"],
}
RUBRIC_CONTEXTS = ["golden", "draft", "free_form", "revision"]
CASE = Case(
    bug_key="BUG-7",
    bug_title="x is wrong",
    bug_description="f() returns 1 instead of 2.",
    candidate_diff=CANDIDATE,
    reference_diff=REFERENCE,
)


def case(**changes: Any) -> Case:
    return dataclasses.replace(CASE, **changes)


def user_text(request: LLMRequest) -> str:
    assert request.messages[-1].role == "user"
    return request.messages[-1].content


def assert_shows_bug_and_candidate(request: LLMRequest) -> None:
    assert request.messages[0].role == "system"
    assert request.messages[0].content == SYSTEM
    user = user_text(request)
    assert "Bug BUG-7: x is wrong" in user
    assert "<bug_description>\nf() returns 1 instead of 2.\n</bug_description>" in user
    assert f"<candidate_patch>\n{CANDIDATE}\n</candidate_patch>" in user
    assert request.inputs["bug"] == {
        "key": "BUG-7",
        "title": "x is wrong",
        "description": "f() returns 1 instead of 2.",
    }
    assert request.inputs["candidate_diff"] == CANDIDATE


def shows_reference(request: LLMRequest) -> bool:
    """Whether the prompt holds the reference; the inputs must say the same."""
    shown = f"<reference_patch>\n{REFERENCE}\n</reference_patch>" in user_text(request)
    assert (request.inputs.get("reference_diff") == REFERENCE) == shown
    if not shown:
        assert REFERENCE not in user_text(request)
        assert request.inputs.get("reference_diff") is None
    return shown


@pytest.mark.parametrize(
    ("name", "purpose", "with_reference"),
    [("s1a", "judge.s1a", False), ("s1b", "judge.s1b", True), ("s3", "judge.s3", True)],
)
def test_one_turn_strategies_ask_once_and_show_the_reference_only_with_it(
    name: str, purpose: str, with_reference: bool
) -> None:
    ask = Recorder()

    outcome = get_strategy(name).judge(case(), ask)

    [request] = ask.requests
    assert request.purpose == purpose
    assert request.schema == SCORE_SCHEMA
    assert_shows_bug_and_candidate(request)
    assert shows_reference(request) is with_reference
    assert '"score", an integer from 0 to 100' in user_text(request)
    assert (outcome.score, outcome.reasoning, outcome.verdict) == (70.0, SCORE["reasoning"], "")
    assert [step.name for step in outcome.steps] == ["assess"]


def test_s1a_judges_a_bug_without_a_reference() -> None:
    ask = Recorder()

    outcome = get_strategy("s1a").judge(case(reference_diff=""), ask)

    assert outcome.score == 70.0
    assert "reference_diff" not in ask.requests[0].inputs
    assert "<reference_patch>" not in user_text(ask.requests[0])


@pytest.mark.parametrize("name", ["s1b", "s2", "s3", "s4", "s5"])
@pytest.mark.parametrize("reference", ["", " \n"])
def test_strategies_that_read_the_reference_refuse_a_bug_without_one(
    name: str, reference: str
) -> None:
    strategy = get_strategy(name)
    ask = Recorder()
    first_step = strategy.prepare if strategy.bug_step else strategy.judge

    with pytest.raises(StrategyError, match=NO_REFERENCE):
        first_step(case(reference_diff=reference), ask)

    assert ask.requests == []


@pytest.mark.parametrize("name", ["s1a", "s1b", "s3"])
def test_a_score_is_kept_as_answered_at_the_ends_of_0_100(name: str) -> None:
    for answered in (0, 55, 100):
        ask = Recorder({f"judge.{name}": {"score": answered, "reasoning": "r"}})

        assert get_strategy(name).judge(case(), ask).score == float(answered)


@pytest.mark.parametrize("answered", [150, 101, -7, -1, 55.5, "80"])
@pytest.mark.parametrize(
    "purpose", ["judge.s1a", "judge.s1b", "judge.s3", "judge.s2", "judge.s2.assess"]
)
def test_a_score_outside_0_100_or_not_an_integer_is_refused_never_clamped(
    purpose: str, answered: object
) -> None:
    # The Recorder checks each answer against its request's schema, as the LLM layer does:
    # an answer the schema refuses is asked again once, then fails the member.
    extra = {"reasons": ["r"]} if purpose == "judge.s2.assess" else {"reasoning": "r"}
    name = purpose.split(".")[1]
    ask = Recorder({purpose: {"score": answered, **extra}})

    with pytest.raises(AnswerInvalid, match="at score"):
        get_strategy(name).judge(case(), ask)


def test_s2_rethinks_with_its_first_answer_as_the_models_own_turn() -> None:
    ask = Recorder({"judge.s2": {"score": 55, "reasoning": "The first reason was false."}})

    outcome = get_strategy("s2").judge(case(), ask)

    first, second = ask.requests
    assert first.purpose == "judge.s2.assess"
    assert first.schema == s2.REASONS_SCHEMA
    assert_shows_bug_and_candidate(first)
    assert shows_reference(first)
    assessed = ANSWERS["judge.s2.assess"]
    assert second.purpose == "judge.s2"
    assert second.schema == SCORE_SCHEMA
    assert second.messages[:2] == first.messages
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
    assert json.loads(second.messages[2].content) == assessed
    rethink = user_text(second)
    assert "recheck whether the reasons and the score" in rethink
    assert "Predicted score: 40" in rethink
    assert "- It misses the null check.\n- It keeps f()." in rethink
    assert second.inputs["previous"] == assessed
    assert second.inputs["reference_diff"] == REFERENCE
    assert (outcome.score, outcome.reasoning) == (55.0, "The first reason was false.")
    assert [step.name for step in outcome.steps] == ["assess", "rethink"]
    assert outcome.steps[0].response.answer == assessed


def test_s2_refuses_a_first_turn_without_reasons() -> None:
    ask = Recorder({"judge.s2.assess": {"score": 40, "reasons": []}})

    with pytest.raises(AnswerInvalid, match="at reasons"):
        get_strategy("s2").judge(case(), ask)


@pytest.mark.parametrize(
    ("name", "schema", "tag", "listed"),
    [
        ("s4", s4.PROPERTIES_SCHEMA, "properties", "1. f() returns 2\n2. x is never 1"),
        ("s5", s5.TESTS_SCHEMA, "tests", "- test_f_returns_2: f() == 2"),
    ],
)
def test_two_step_strategies_show_step_2_what_step_1_found_not_the_reference(
    name: str, schema: dict[str, Any], tag: str, listed: str
) -> None:
    strategy = get_strategy(name)
    ask = Recorder({f"judge.{name}": {"score": 35, "reasoning": "It lacks property 2."}})

    step = strategy.prepare(case(), ask)
    outcome = strategy.judge(case(), ask, prepared=step.response.answer)

    first, second = ask.requests
    assert first.purpose == strategy.bug_step
    assert first.schema == schema
    assert shows_reference(first)
    assert CANDIDATE not in user_text(first)  # step 1 depends on the bug only
    assert "candidate_diff" not in first.inputs
    assert step.response.answer == ANSWERS[strategy.bug_step]
    assert second.purpose == f"judge.{name}"
    assert second.schema == SCORE_SCHEMA
    assert_shows_bug_and_candidate(second)
    assert not shows_reference(second)
    assert f"<{tag}>\n{listed}\n</{tag}>" in user_text(second)
    assert second.inputs[tag] == ANSWERS[strategy.bug_step][tag]
    assert (outcome.score, outcome.reasoning) == (35.0, "It lacks property 2.")


@pytest.mark.parametrize("name", ["s4", "s5"])
def test_step_2_without_step_1_is_refused(name: str) -> None:
    with pytest.raises(StrategyError, match="step 1"):
        get_strategy(name).judge(case(), Recorder(), prepared=None)


@pytest.mark.parametrize("context", RUBRIC_CONTEXTS)
def test_the_rubric_judge_reads_the_contexts_rubric_and_not_the_reference(context: str) -> None:
    ask = Recorder({"judge.rubric": CHECKED})
    # A free-form rubric is its Markdown alone: the judge reads the same text.
    rubric = {"text": rubric_markdown(RUBRIC)} if context == "free_form" else RUBRIC

    outcome = get_strategy("rubric").judge(
        case(context=context, rubric=rubric, rubric_text=rubric_markdown(RUBRIC)), ask
    )

    [request] = ask.requests
    assert request.purpose == "judge.rubric"
    checks = request.schema["properties"]["requirements"]
    if context == "free_form":
        assert "maxItems" not in checks
        assert checks["items"]["properties"]["index"] == {"type": "integer", "minimum": 1}
    else:  # one check at most per requirement of the rubric, which has one
        assert checks["maxItems"] == 1
        index = checks["items"]["properties"]["index"]
        assert index == {"type": "integer", "minimum": 1, "maximum": 1}
    assert_shows_bug_and_candidate(request)
    assert f"<rubric>\n{rubric_markdown(RUBRIC)}\n</rubric>" in user_text(request)
    assert "1. **Return 2:** `f()` must set `x = 2`." in user_text(request)
    assert request.inputs["rubric"] == rubric
    assert not shows_reference(request)
    assert (outcome.score, outcome.verdict) == (100.0, "VALID")
    assert outcome.reasoning == "It meets requirement 1."


def test_the_rubric_judge_in_the_reference_context_reads_only_the_reference() -> None:
    ask = Recorder()

    get_strategy("rubric").judge(case(context="reference"), ask)

    [request] = ask.requests
    assert shows_reference(request)
    assert "<rubric>" not in user_text(request)
    assert request.inputs["rubric"] is None
    assert rubric_module.WITH_REFERENCE in user_text(request)


def test_the_rubric_judge_in_the_none_context_reads_neither() -> None:
    ask = Recorder()

    get_strategy("rubric").judge(case(context="none"), ask)

    [request] = ask.requests
    assert_shows_bug_and_candidate(request)
    assert not shows_reference(request)
    assert "<rubric>" not in user_text(request)
    assert request.inputs["rubric"] is None
    assert rubric_module.WITH_NOTHING in user_text(request)


def test_an_invalid_verdict_scores_0() -> None:
    invalid = {**ANSWERS["judge.rubric"], "verdict": "INVALID", "justification": "No."}

    outcome = get_strategy("rubric").judge(
        case(context="none"), Recorder({"judge.rubric": invalid})
    )

    assert (outcome.score, outcome.verdict, outcome.reasoning) == (0.0, "INVALID", "No.")


@pytest.mark.parametrize(
    ("context", "checks", "where"),
    [
        ("golden", [{"index": 2, "passed": False, "reason": "r"}], "requirements/0/index"),
        ("golden", [{"index": 0, "passed": True, "reason": "r"}], "requirements/0/index"),
        ("golden", [{"index": 1, "passed": True, "reason": "r"}] * 2, "requirements"),
        ("reference", [{"index": 1, "passed": True, "reason": "r"}], "requirements"),
        ("none", [{"index": 1, "passed": True, "reason": "r"}], "requirements"),
    ],
)
def test_a_requirement_check_the_prompt_did_not_ask_for_is_refused(
    context: str, checks: list[dict[str, Any]], where: str
) -> None:
    # RUBRIC has one requirement; the reference and none contexts show no rubric at all.
    rubric = RUBRIC if context == "golden" else None
    answer = {**ANSWERS["judge.rubric"], "verdict": "INVALID", "requirements": checks}

    with pytest.raises(AnswerInvalid, match=f"at {where}:"):
        get_strategy("rubric").judge(
            case(context=context, rubric=rubric, rubric_text=rubric_markdown(RUBRIC)),
            Recorder({"judge.rubric": answer}),
        )


def test_the_rubric_judge_refuses_a_verdict_outside_valid_and_invalid() -> None:
    answer = {**ANSWERS["judge.rubric"], "verdict": "PARTIAL"}

    with pytest.raises(AnswerInvalid, match="at verdict:"):
        get_strategy("rubric").judge(case(context="none"), Recorder({"judge.rubric": answer}))


def test_the_rubric_judge_refuses_a_case_whose_rubric_is_missing() -> None:
    ask = Recorder()
    missing = case(context="golden", rubric_missing="bug BUG-7 has no golden rubric yet")

    with pytest.raises(StrategyError, match="has no golden rubric"):
        get_strategy("rubric").judge(missing, ask)

    assert ask.requests == []


@pytest.mark.parametrize("context", RUBRIC_CONTEXTS)
def test_the_rubric_judge_never_judges_a_rubric_context_without_a_rubric(context: str) -> None:
    ask = Recorder()

    with pytest.raises(StrategyError, match=f"needs the run.s {context} rubric"):
        get_strategy("rubric").judge(case(context=context), ask)

    assert ask.requests == []


@pytest.mark.django_db  # a name not built in is looked up among the written judges
def test_teams_are_known_names_each_once() -> None:
    assert parse_team(" rubric, s1b ,,s3") == ["rubric", "s1b", "s3"]
    assert parse_team(["s4", "bleu"]) == ["s4", "bleu"]
    with pytest.raises(
        ValueError,
        match=(
            r"unknown strategy 's9'; the strategies are "
            r"rubric, s1a, s1b, s2, s3, s4, s5, roles, bleu, chrf, edit$"
        ),
    ):
        parse_team("s1b,s9")
    with pytest.raises(ValueError, match=REPEATED_STRATEGY.format(name="s3")):
        parse_team("s3,s1b,s3")
    with pytest.raises(ValueError, match=EMPTY_TEAM):
        parse_team(" , ")


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, s in STRATEGIES.items() if s.uses_llm])
@pytest.mark.parametrize("context", ["reference", "none"])
def test_every_model_strategy_runs_on_the_offline_model(name: str, context: str) -> None:
    strategy = get_strategy(name)
    identical = case(candidate_diff=REFERENCE, context=context)

    prepared = strategy.prepare(identical, complete).response.answer if strategy.bug_step else None
    outcome = strategy.judge(identical, complete, prepared=prepared)

    assert 0.0 <= outcome.score <= 100.0
    assert outcome.reasoning.startswith(f"[{OFFLINE_MARKER}] ")
    assert outcome.steps
    assert all(step.response.is_offline for step in outcome.steps)
    # The offline rules: the reference's own changes score 100 wherever the reference is
    # shown; s1a and the blind rubric judge cannot tell without it. Step 2 of s4/s5 is not
    # shown the reference and counts the checks met alone: all of them, 100.
    expected = {
        "s1a": 50.0,
        "rubric": 100.0 if context == "reference" else 0.0,
    }
    assert outcome.score == expected.get(name, 100.0)
