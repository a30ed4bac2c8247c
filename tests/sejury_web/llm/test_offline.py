"""The offline heuristic's mechanism over every rule the apps register: shapes, marker,
determinism, the refusals, and the registry (each rule is tested beside its app's tests)."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from django.conf import settings

from rubrics.review.prompts import DRAFT_PURPOSE, REVISE_PURPOSE
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.llm.offline import (
    BAD_INPUT,
    MISSING_INPUT,
    PREFIX,
    UNSUPPORTED_PURPOSE,
    Inputs,
    OfflineUnsupported,
    offline_answer,
    offline_purposes,
    offline_rule,
    offline_rule_register,
    reference_similarity,
)
from sejury_web.llm.offline import rules as offline_rules
from tests.offline_requests import every_request, texts


def test_every_answer_matches_its_schema_carries_the_marker_and_is_deterministic() -> None:
    assert f"[{OFFLINE_MARKER}] " == PREFIX
    asked = set()
    for purpose, inputs, schema in every_request():
        answer = offline_answer(purpose=purpose, inputs=inputs)
        jsonschema.Draft202012Validator(schema).validate(answer)
        if purpose == DRAFT_PURPOSE:  # a rubric the judge reads: its page says it, once
            assert not [text for text in texts(answer) if OFFLINE_MARKER in text], answer
        elif purpose == REVISE_PURPOSE:  # the draft's text kept, the suggestions marked
            assert answer["rationale"].startswith(PREFIX), answer
        else:
            assert all(text.startswith(PREFIX) for text in texts(answer)), (purpose, answer)
        again = offline_answer(purpose=purpose, inputs=json.loads(json.dumps(inputs)))
        assert json.dumps(again) == json.dumps(answer)
        asked.add(purpose)
    assert asked == set(offline_purposes())


ANSWER_SCRIPT = """
import json, sys
import django
django.setup()  # the apps register their rules
from sejury_web.llm.offline import offline_answer
requests = json.load(sys.stdin)
json.dump([offline_answer(purpose=p, inputs=i) for p, i in requests], sys.stdout)
"""


def test_answers_do_not_depend_on_hash_seeds() -> None:
    """Sets and dicts must not leak their order: an interpreter with another seed agrees with
    this one. (This one's seed is random, or PYTHONHASHSEED's: the other's differs.)"""
    requests = [(purpose, inputs) for purpose, inputs, _ in every_request()]
    other_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    done = subprocess.run(
        [sys.executable, "-c", ANSWER_SCRIPT],
        input=json.dumps(requests),
        capture_output=True,
        cwd=settings.BASE_DIR,
        env={**os.environ, "PYTHONHASHSEED": other_seed},
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [offline_answer(purpose=p, inputs=i) for p, i in requests]


def test_unsupported_purposes_and_missing_inputs_are_refused() -> None:
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(purpose="judge.s9", inputs={})
    supported = ", ".join(offline_purposes())
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


@pytest.fixture
def new_purpose() -> Iterator[str]:
    """A purpose no app answers, its rule dropped again after the test."""
    purpose = "test.similarity"
    yield purpose
    offline_rules._RULES.pop(purpose, None)


def test_a_rule_for_a_new_purpose_is_one_line(new_purpose: str) -> None:
    inputs = {"bug": {"key": "k"}, "candidate_diff": "", "reference_diff": None}
    with pytest.raises(OfflineUnsupported):
        offline_answer(purpose=new_purpose, inputs=inputs)

    offline_rule_register(new_purpose, reference_similarity)

    assert offline_purposes()[-1] == new_purpose
    answer = offline_answer(purpose=new_purpose, inputs=inputs)
    assert answer == {"score": 0, "reasoning": PREFIX + "Score 0: the patch is empty."}
    assert answer == offline_answer(purpose="judge.s1b", inputs=inputs)  # S1b's rule
    offline_rule_register(new_purpose, reference_similarity)  # again: nothing changes


def test_a_second_rule_for_a_purpose_is_refused(new_purpose: str) -> None:
    @offline_rule(new_purpose)
    def first(inputs: Inputs) -> dict[str, Any]:
        return {"value": inputs.require("value", int)}

    assert offline_answer(purpose=new_purpose, inputs={"bug": {}, "value": 3}) == {"value": 3}
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(purpose=new_purpose, inputs={"bug": {}, "value": "3"})
    assert str(error.value) == BAD_INPUT.format(purpose=new_purpose, key="value", expected="int")
    with pytest.raises(ValueError, match=r"two offline rules answer purpose 'test\.similarity'"):
        offline_rule_register(new_purpose, reference_similarity)
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(purpose=new_purpose, inputs={})
    assert str(error.value) == MISSING_INPUT.format(purpose=new_purpose, key="bug")
