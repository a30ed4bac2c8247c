"""The role-player strategy (paper 003's CODERPE, for patches): one S1b call per role, each
under its own persona with the same data blocks and schema; the mean of the roles' scores;
each role a step; a failed role call stops the strategy."""

import dataclasses

import pytest

from judging.strategies import STRATEGIES, get_strategy
from judging.strategies import roles as roles_module
from judging.strategies.base import NO_REFERENCE, StrategyError
from judging.strategies.prompts import SCORE_SCHEMA, SYSTEM
from judging.strategies.roles import PERSONAS, PURPOSE
from judging.strategies.s1 import s1_request
from sejury_web.llm import LLMError, LLMRequest, LLMResponse
from sejury_web.llm.answers import AnswerInvalid
from tests.judging.helpers import Recorder
from tests.judging.strategies.test_strategies import CASE, REFERENCE, case, user_text

NAMES = ["reviewer", "developer", "maintainer", "qa_analyst"]


class ByRole(Recorder):
    """A recording ``ask`` whose answer depends on the request's role; ``fail_at`` makes
    the call of that role raise as the LLM layer does when it gives up."""

    def __init__(self, scores: dict[str, int], fail_at: str = "") -> None:
        super().__init__()
        self.scores = scores
        self.fail_at = fail_at

    def __call__(self, request: LLMRequest) -> LLMResponse:
        role = request.inputs["role"]
        if role == self.fail_at:
            self.requests.append(request)
            raise LLMError("gave up after 2 attempts: 500", call_id=99)
        score = self.scores[role]
        self.answers[PURPOSE] = {"score": score, "reasoning": f"As the {role}: {score}."}
        return super().__call__(request)


SCORES = {"reviewer": 20, "developer": 40, "maintainer": 60, "qa_analyst": 90}


def test_roles_is_registered_after_s5_and_reads_the_reference() -> None:
    strategy = get_strategy("roles")
    assert list(STRATEGIES).index("roles") == list(STRATEGIES).index("s5") + 1
    assert (strategy.prompt_version, strategy.uses_llm) == ("roles-v2", True)
    assert strategy.uses_reference
    assert not strategy.uses_rubric
    assert strategy.bug_step == ""
    assert [name for name, _ in strategy.personas] == NAMES


def test_one_call_per_role_each_with_its_own_persona_and_s1bs_data() -> None:
    ask = ByRole(SCORES)

    get_strategy("roles").judge(case(), ask)

    assert len(ask.requests) == 4
    s1b = s1_request(CASE, with_reference=True)
    personas = [persona.text for persona in PERSONAS]
    assert len(set(personas)) == 4
    for request, role in zip(ask.requests, PERSONAS, strict=True):
        assert request.purpose == PURPOSE == "judge.roles"
        assert request.schema == SCORE_SCHEMA
        assert [m.role for m in request.messages] == ["system", "user"]
        assert request.messages[0].content == SYSTEM  # tagged text is data, for every role
        user = user_text(request)
        # S1b's prompt word for word, the persona put just before the candidate: what the
        # personas of a patch and its siblings share comes first.
        candidate = user_text(s1b).index("The candidate patch, as a unified diff:")
        header = f"[Role]\n{role.text} {roles_module.AS_PERSONA}\n\n"
        assert user == user_text(s1b)[:candidate] + header + user_text(s1b)[candidate:]
        assert request.cache_group == f"judge.roles:{CASE.bug_key}"
        assert f"<reference_patch>\n{REFERENCE}\n</reference_patch>" in user
        assert [p for p in personas if p in user] == [role.text]
        assert request.inputs == {**s1b.inputs, "role": role.name}
    assert [r.inputs["role"] for r in ask.requests] == NAMES


def test_the_score_is_the_mean_of_the_roles_and_each_role_is_a_step() -> None:
    outcome = get_strategy("roles").judge(case(), ByRole(SCORES))

    assert outcome.score == (20 + 40 + 60 + 90) / 4 == 52.5
    assert outcome.verdict == ""
    assert [step.name for step in outcome.steps] == NAMES
    assert [step.response.answer["score"] for step in outcome.steps] == [20, 40, 60, 90]
    lines = outcome.reasoning.splitlines()
    assert lines[0] == (
        "The mean of the 4 roles' scores is 52.5: Code reviewer 20, Original developer 40, "
        "Maintainer 60, QA/system analyst 90."
    )
    assert lines[1:] == [
        "Code reviewer: As the reviewer: 20.",
        "Original developer: As the developer: 40.",
        "Maintainer: As the maintainer: 60.",
        "QA/system analyst: As the qa_analyst: 90.",
    ]


@pytest.mark.parametrize("answered", [150, -30])
def test_a_role_score_outside_0_100_is_refused_never_clamped_into_the_mean(
    answered: int,
) -> None:
    ask = ByRole({**SCORES, "maintainer": answered})

    with pytest.raises(AnswerInvalid, match="at score"):
        get_strategy("roles").judge(case(), ask)

    assert len(ask.requests) == 2  # the roles before it; no mean is made


def test_the_same_reasoning_from_every_role_is_said_once() -> None:
    outcome = get_strategy("roles").judge(case(), Recorder())  # 70, the same words each

    assert outcome.score == 70.0
    assert outcome.reasoning == (
        "The mean of the 4 roles' scores is 70: Code reviewer 70, Original developer 70, "
        "Maintainer 70, QA/system analyst 70.\n"
        "Every role gave the same reasoning: It returns 2 as the bug asks."
    )


@pytest.mark.parametrize("reference", ["", " \n"])
def test_a_bug_without_a_reference_is_refused_before_any_call(reference: str) -> None:
    ask = ByRole(SCORES)

    with pytest.raises(StrategyError, match=NO_REFERENCE):
        get_strategy("roles").judge(dataclasses.replace(CASE, reference_diff=reference), ask)

    assert ask.requests == []


def test_a_failed_role_call_stops_the_strategy_like_s2s_turns() -> None:
    ask = ByRole(SCORES, fail_at="maintainer")

    # The error goes up to the runner, which fails the member and so the patch (as for S2
    # and the two-step strategies); the roles after it are not asked.
    with pytest.raises(LLMError, match="gave up"):
        get_strategy("roles").judge(case(), ask)

    assert [r.inputs["role"] for r in ask.requests] == ["reviewer", "developer", "maintainer"]
