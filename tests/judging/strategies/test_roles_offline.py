"""``judge.roles`` on the offline model, which is NOT an LLM: it plays no role. Every role
gets S1b's heuristic score and reasoning, marked as the heuristic's, with a sentence saying
that it does not play roles; the ``roles`` strategy's summary is marked too."""

import pytest

from judging.strategies import get_strategy
from judging.strategies.offline import SCORE_PURPOSES
from judging.strategies.roles import PERSONAS
from judging.strategies.s1 import s1_inputs
from sejury_web.llm import OFFLINE_MARKER, complete
from sejury_web.llm.offline import PREFIX, offline_answer, offline_purposes
from tests.judging.strategies.test_strategies import CASE, REFERENCE, case

NO_ROLES = "The offline heuristic does not play roles"


def test_every_role_gets_s1bs_heuristic_score_and_is_told_so() -> None:
    assert "judge.roles" in SCORE_PURPOSES
    assert "judge.roles" in offline_purposes()
    inputs = s1_inputs(CASE, with_reference=True)
    s1b = offline_answer(purpose="judge.s1b", inputs=inputs)

    answers = [
        offline_answer(purpose="judge.roles", inputs={**inputs, "role": role.name})
        for role in PERSONAS
    ]

    assert all(answer == answers[0] for answer in answers)  # no role plays any differently
    answer = answers[0]
    assert answer["score"] == s1b["score"]
    assert answer["reasoning"].startswith(PREFIX)  # not an LLM
    assert answer["reasoning"].startswith(s1b["reasoning"])
    assert NO_ROLES in answer["reasoning"]
    assert "same S1b heuristic score" in answer["reasoning"]


@pytest.mark.django_db
def test_the_roles_strategy_on_the_offline_model_is_marked_and_honest() -> None:
    outcome = get_strategy("roles").judge(case(), complete)

    assert len(outcome.steps) == 4
    assert all(step.response.is_offline for step in outcome.steps)
    assert all(step.response.marker == OFFLINE_MARKER for step in outcome.steps)
    scores = {step.response.answer["score"] for step in outcome.steps}
    assert len(scores) == 1
    assert outcome.score == scores.pop()
    assert outcome.reasoning.startswith(f"[{OFFLINE_MARKER}] The mean of the 4 roles' scores")
    # The same words from every role are said once, and they say why.
    assert "Every role gave the same reasoning: " + PREFIX in outcome.reasoning
    assert outcome.reasoning.count(NO_ROLES) == 1


@pytest.mark.django_db
def test_the_reference_itself_scores_100_for_every_role() -> None:
    outcome = get_strategy("roles").judge(case(candidate_diff=REFERENCE), complete)

    assert [step.response.answer["score"] for step in outcome.steps] == [100] * 4
    assert outcome.score == 100.0
