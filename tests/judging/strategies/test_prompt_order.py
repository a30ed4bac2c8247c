"""Every model strategy's prompt puts what a bug's candidates share first and the candidate
last, so that a provider's prefix cache serves a judged patch's siblings all but their own
diff; and every request names its cache group, one per purpose and bug.

Each strategy is judged with a recording ``ask`` on two candidates of one bug whose texts
are distinctive; the requests actually sent are compared."""

import dataclasses
from typing import Any

import pytest

from judging.strategies import STRATEGIES, get_strategy
from judging.strategies.base import Case
from judging.strategies.prompts import SYSTEM, bug_block
from judging.strategies.roles import PERSONA_HEADER, PERSONAS
from rubrics.rubric_text import rubric_markdown
from sejury_web.llm import LLMRequest
from tests.judging.helpers import Recorder
from tests.rubrics.factories import make_diff

CANDIDATE_HEADING = "The candidate patch, as a unified diff:"
RUBRIC = {
    "root_cause": "RUBRIC-ROOT-CAUSE: f() sets x to 1.",
    "requirements": [{"title": "RUBRIC-REQUIREMENT", "detail": "`f()` must set `x = 2`."}],
    "acceptable": [],
    "unacceptable": ["changing the test"],
}
SHARED = Case(
    bug_key="Chart-19",
    bug_title="Chart-19: failing test BUG-TITLE-MARK",
    bug_description="BUG-DESCRIPTION-MARK: f() returns 1 instead of 2.",
    candidate_diff=make_diff(old="x = 1", new="x = 'CANDIDATE-ONE'"),
    reference_diff=make_diff(old="x = 1", new="x = 'REFERENCE-MARK'"),
)
SIBLING = make_diff(old="x = 1", new="x = 'CANDIDATE-TWO'")
# Shared marks every per-patch prompt must show before the candidate, when it shows them.
MARKS = ["BUG-TITLE-MARK", "BUG-DESCRIPTION-MARK", "REFERENCE-MARK", "RUBRIC-REQUIREMENT"]
ANSWER_MARK = "Answer with a JSON object"
LLM_STRATEGIES = [name for name, strategy in STRATEGIES.items() if strategy.uses_llm]
CONTEXTS = ["reference", "none", "golden"]


def the_case(context: str, **changes: Any) -> Case:
    rubric = RUBRIC if context == "golden" else None
    text = rubric_markdown(RUBRIC) if rubric else ""
    return dataclasses.replace(SHARED, context=context, rubric=rubric, rubric_text=text, **changes)


def sent(name: str, case: Case) -> list[LLMRequest]:
    """The per-patch requests the strategy sends for ``case`` (after its bug step, if any)."""
    strategy = get_strategy(name)
    ask = Recorder()
    prepared = strategy.prepare(case, ask).response.answer if strategy.bug_step else None
    before = len(ask.requests)
    strategy.judge(case, ask, prepared=prepared)
    return ask.requests[before:]


def flat(request: LLMRequest) -> str:
    """The request's messages as one text, in the order the provider reads them."""
    return "\n".join(f"<{m.role}>\n{m.content}" for m in request.messages)


def first_turn(request: LLMRequest) -> str:
    """The request up to the message that holds the candidate (S2's rethink adds a turn)."""
    for index, message in enumerate(request.messages):
        if CANDIDATE_HEADING in message.content:
            return flat(dataclasses.replace(request, messages=request.messages[: index + 1]))
    raise AssertionError(f"{request.purpose} shows no candidate")


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("name", LLM_STRATEGIES)
def test_the_candidate_comes_after_every_shared_block(name: str, context: str) -> None:
    requests = sent(name, the_case(context))

    assert requests
    for request in requests:
        text = first_turn(request)
        candidate = text.index(CANDIDATE_HEADING)
        # The candidate block ends the message that holds it: nothing shared after it.
        assert text.endswith(f"<candidate_patch>\n{SHARED.candidate_diff}\n</candidate_patch>")
        assert text.index(SYSTEM) < candidate
        assert text.index(bug_block(SHARED)) < candidate
        assert -1 < text.find(ANSWER_MARK) < candidate
        for mark in MARKS:
            assert text.find(mark) < candidate, f"{mark} after the candidate in {name}"


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("name", LLM_STRATEGIES)
def test_two_candidates_of_a_bug_share_everything_before_the_candidate(
    name: str, context: str
) -> None:
    one = sent(name, the_case(context))
    two = sent(name, the_case(context, candidate_diff=SIBLING))

    assert [r.purpose for r in one] == [r.purpose for r in two]
    for first, second in zip(one, two, strict=True):
        text, other = first_turn(first), first_turn(second)
        cut = text.index(CANDIDATE_HEADING)
        assert text[:cut] == other[:cut]
        assert "CANDIDATE-ONE" in text[cut:]
        assert "CANDIDATE-TWO" in other[cut:]


@pytest.mark.parametrize("name", LLM_STRATEGIES)
def test_every_request_names_its_bug_s_cache_group_the_same_for_siblings(name: str) -> None:
    one = sent(name, the_case("golden"))
    two = sent(name, the_case("golden", candidate_diff=SIBLING))
    other_bug = sent(name, the_case("golden", bug_key="Lang-7", bug_title="t"))

    for first, second, third in zip(one, two, other_bug, strict=True):
        assert first.cache_group.endswith(":Chart-19")
        assert first.cache_group.startswith(f"judge.{name}")
        assert first.cache_group == second.cache_group
        assert third.cache_group == first.cache_group.replace("Chart-19", "Lang-7")


@pytest.mark.parametrize("name", ["s4", "s5"])
def test_a_bug_step_has_its_own_cache_group(name: str) -> None:
    strategy = get_strategy(name)
    ask = Recorder()

    strategy.prepare(the_case("reference"), ask)

    [request] = ask.requests
    assert request.cache_group == f"{strategy.bug_step}:Chart-19"


def test_the_personas_of_a_patch_share_everything_before_the_persona() -> None:
    requests = sent("roles", the_case("reference"))

    texts = [first_turn(request) for request in requests]
    personas = [text.index(PERSONA_HEADER) for text in texts]
    assert len(set(personas)) == 1  # every persona starts at the same place
    cut = personas[0]
    assert len({text[:cut] for text in texts}) == 1
    for text, persona in zip(texts, PERSONAS, strict=True):
        assert text.index(persona.text) < text.index(CANDIDATE_HEADING)
        for mark in [*MARKS[:3], ANSWER_MARK]:
            assert text.index(mark) < cut
    assert len({request.cache_group for request in requests}) == 1


def test_the_bug_s_key_is_said_once_when_its_title_starts_with_it() -> None:
    [request] = sent("s1b", the_case("reference"))

    text = flat(request)
    assert "Bug Chart-19: failing test BUG-TITLE-MARK\n<bug_description>" in text
    assert text.count("Chart-19") == 1
