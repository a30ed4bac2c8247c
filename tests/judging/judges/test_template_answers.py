"""A written judge's template (checked with the block and place of an error, rendered by a
plain split) and its answer kinds (each one's schema with its bounds, the score it gives)."""

import json
from typing import Any

import pytest

from judging.judges.answers import (
    AnswerSpecError,
    Scored,
    answer_score,
    answer_spec,
)
from judging.judges.template import (
    NO_CANDIDATE,
    TemplateError,
    template_blocks,
    template_render,
)
from sejury_web.llm.answers import AnswerInvalid, answer_parse

NON_FUNCTIONAL = [
    {"name": "maintainability", "low": 1, "high": 5},
    {"name": "performance", "low": 1, "high": 5},
    {"name": "security", "low": 0, "high": 2},
]


def test_a_template_names_its_blocks_and_is_rendered_by_plain_substitution() -> None:
    text = "Bug:\n{{ bug }}\nPatch: {{candidate_patch}} {{  bug  }}"
    assert template_blocks(text) == ("bug", "candidate_patch")
    blocks = {"bug": "<b>{{ candidate_patch }}</b>", "candidate_patch": "{% load os %}"}
    # The data is put in as it is: a placeholder inside the data is not expanded again,
    # and nothing in either is executed.
    assert template_render(text, blocks) == (
        "Bug:\n<b>{{ candidate_patch }}</b>\nPatch: {% load os %} <b>{{ candidate_patch }}</b>"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the template is empty"),
        ("Judge {{ bug }} on its merits.", NO_CANDIDATE),
        (
            "ok\n  {{ bugs }} {{ candidate_patch }}",
            "unknown block 'bugs' at line 2, column 3; the blocks are bug, reference_fix, "
            "rubric, candidate_patch, test_evidence",
        ),
        ("{{ candidate_patch }}\n{{ bug", "a '{{' at line 2, column 1 is never closed by '}}'"),
        ("{{ bug {{ candidate_patch }}", "a '{{' at line 1, column 1 is never closed by '}}'"),
        ("{{ Bug }} {{ candidate_patch }}", "unknown block 'Bug' at line 1, column 1"),
        ("{{ bug.title }} {{ candidate_patch }}", "unknown block 'bug.title' at line 1"),
    ],
)
def test_a_bad_template_is_refused_naming_the_block_and_where(text: str, message: str) -> None:
    with pytest.raises(TemplateError) as raised:
        template_blocks(text)
    assert str(raised.value).startswith(message)


def test_each_kind_s_schema_bounds_its_answer_and_nothing_outside_is_taken() -> None:
    verdict = answer_spec("verdict")
    valid = answer_parse('{"verdict": "VALID", "justification": "j"}', verdict.schema)
    assert answer_score(verdict, valid) == Scored(100.0, "j", "VALID")
    with pytest.raises(AnswerInvalid, match="verdict"):
        answer_parse('{"verdict": "MAYBE", "justification": "j"}', verdict.schema)
    score = answer_spec("score")
    assert answer_score(score, {"score": 64, "reasoning": "r"}).score == 64
    for bad in ('{"score": 101, "reasoning": "r"}', '{"score": -1, "reasoning": "r"}',
                '{"score": 50.5, "reasoning": "r"}'):  # fmt: skip
        with pytest.raises(AnswerInvalid, match="score"):
            answer_parse(bad, score.schema)

    spec = answer_spec("dimensions", NON_FUNCTIONAL)
    answer: dict[str, Any] = {
        "dimensions": {
            "maintainability": {"rating": 5, "reason": "clear"},
            "performance": {"rating": 2, "reason": "a loop"},
            "security": {"rating": 1, "reason": "fine"},
        },
        "reasoning": "overall fine",
    }
    parsed = answer_parse(json.dumps(answer), spec.schema)
    # The mean of 100, 25 and 50.
    assert answer_score(spec, parsed).score == pytest.approx(175 / 3)
    performance = answer_spec("dimensions", NON_FUNCTIONAL, "performance")
    assert answer_score(performance, parsed).score == 25
    for path, value in [("security", 3), ("maintainability", 0), ("performance", 2.5)]:
        off = json.loads(json.dumps(answer))
        off["dimensions"][path]["rating"] = value
        with pytest.raises(AnswerInvalid, match=f"dimensions/{path}/rating"):
            answer_parse(json.dumps(off), spec.schema)
    missing = json.loads(json.dumps(answer))
    del missing["dimensions"]["security"]
    with pytest.raises(AnswerInvalid, match="security"):
        answer_parse(json.dumps(missing), spec.schema)
    extra = json.loads(json.dumps(answer))
    extra["dimensions"]["style"] = {"rating": 1, "reason": "x"}
    with pytest.raises(AnswerInvalid, match="style"):
        answer_parse(json.dumps(extra), spec.schema)


@pytest.mark.parametrize(
    ("kind", "dimensions", "overall", "message"),
    [
        ("stars", [], "", "unknown answer kind 'stars'"),
        ("dimensions", [], "", "needs at least one dimension"),
        ("score", NON_FUNCTIONAL, "", "only an answer of kind 'dimensions' has dimensions"),
        ("dimensions", [{"name": "x", "low": 5, "high": 1}], "", "dimension 1: the scale of x"),
        ("dimensions", [{"name": "x", "low": 1, "high": 500}], "", "dimension 1: the scale of x"),
        ("dimensions", [{"name": "x", "low": True, "high": 5}], "", "dimension 1: the scale of x"),
        ("dimensions", [{"name": "A b", "low": 1, "high": 5}], "", "dimension 1: “A b” is not"),
        ("dimensions", NON_FUNCTIONAL[:1] * 2, "", "dimension 2: maintainability is named twice"),
        ("dimensions", NON_FUNCTIONAL, "style", "names 'style', which is not a dimension"),
        ("dimensions", [{"name": "x", "low": 1, "high": 5, "weight": 2}], "", "unknown field"),
    ],
)
def test_a_bad_answer_kind_is_refused_with_why(
    kind: str, dimensions: list[dict[str, Any]], overall: str, message: str
) -> None:
    with pytest.raises(AnswerSpecError, match=message):
        answer_spec(kind, dimensions, overall)
