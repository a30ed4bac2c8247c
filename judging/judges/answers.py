"""A written judge's answer kinds: the JSON schema each one's answer must match (derived from
the kind, with its bounds and closed sets), the instructions that ask for it, and the score
on 0–100 an answer gives.

- ``verdict``: VALID or INVALID with a justification; 100 or 0, like the rubric judge.
- ``score``: an integer on 0–100 with the reasoning, like S1.
- ``dimensions``: named dimensions, each rated on its own ordinal scale (``low``…``high``,
  integers) with a reason, and a reasoning; the overall score is the mean of the dimensions'
  ratings mapped to 0–100 (``(rating − low) / (high − low) · 100``), or one named dimension's.

An answer outside its schema (a rating off its scale, a dimension missing or unknown) never
reaches ``answer_score``: the LLM layer refuses it, asks once more, and then fails the call
with the reason (``sejury_web.llm.answers``); nothing is clamped.
"""

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from judging.dimensions import (
    SCALE_MAX,
    SCALE_MIN,
    Bounds,
    Dimension,
    DimensionsError,
    dimensions_from_json,
)

VERDICT, SCORE, DIMENSIONS = "verdict", "score", "dimensions"
KINDS = (VERDICT, SCORE, DIMENSIONS)
MEAN = ""  # ``overall``: the mean of every dimension
JUDGE_SCALES = Bounds(SCALE_MIN, SCALE_MAX)

UNKNOWN_KIND = "unknown answer kind {kind!r}; the kinds are " + ", ".join(KINDS)
NO_DIMENSIONS = "an answer of kind 'dimensions' needs at least one dimension"
DIMENSIONS_UNASKED = "only an answer of kind 'dimensions' has dimensions"
OVERALL_UNASKED = "only an answer of kind 'dimensions' has an overall dimension"
UNKNOWN_OVERALL = (
    "the overall score names {name!r}, which is not a dimension; the dimensions are {known}"
)


class AnswerSpecError(ValueError):
    """The answer kind, its dimensions or its overall score are not usable."""


@dataclass(frozen=True)
class AnswerSpec:
    """What a judge answers: its kind, and for ``dimensions`` which and how they combine."""

    kind: str
    dimensions: tuple[Dimension, ...] = ()
    overall: str = MEAN  # a dimension's name, or MEAN

    @property
    def schema(self) -> dict[str, Any]:
        return _schema(self)


def answer_spec(kind: Any, dimensions: Any = (), overall: Any = MEAN) -> AnswerSpec:
    """The answer spec of a kind, its dimensions (objects with ``name``, ``low``, ``high``,
    ``description``) and its overall score (a dimension's name, or "" for the mean);
    ``AnswerSpecError`` naming the first problem."""
    if kind not in KINDS:
        raise AnswerSpecError(UNKNOWN_KIND.format(kind=kind))
    dimensions = list(dimensions or [])
    overall = overall or MEAN
    if kind != DIMENSIONS:
        if dimensions:
            raise AnswerSpecError(DIMENSIONS_UNASKED)
        if overall:
            raise AnswerSpecError(OVERALL_UNASKED)
        return AnswerSpec(kind)
    if not dimensions:
        raise AnswerSpecError(NO_DIMENSIONS)
    try:
        checked = dimensions_from_json(dimensions, JUDGE_SCALES)
    except DimensionsError as error:
        raise AnswerSpecError(str(error)) from None
    if overall and overall not in [d.name for d in checked]:
        known = ", ".join(d.name for d in checked)
        raise AnswerSpecError(UNKNOWN_OVERALL.format(name=overall, known=known))
    return AnswerSpec(kind, tuple(checked), overall)


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@lru_cache(maxsize=256)
def _schema(spec: AnswerSpec) -> dict[str, Any]:
    # One object per spec: the forecast keys its work on a schema's identity.
    if spec.kind == VERDICT:
        return _closed(
            {
                "verdict": {"type": "string", "enum": ["VALID", "INVALID"]},
                "justification": {"type": "string"},
            }
        )
    if spec.kind == SCORE:
        return _closed(
            {
                "score": {"type": "integer", "minimum": 0, "maximum": 100},
                "reasoning": {"type": "string"},
            }
        )
    ratings = {
        d.name: _closed(
            {
                "rating": {"type": "integer", "minimum": d.low, "maximum": d.high},
                "reason": {"type": "string"},
            }
        )
        for d in spec.dimensions
    }
    return _closed({"dimensions": _closed(ratings), "reasoning": {"type": "string"}})


def answer_instruction(spec: AnswerSpec) -> str:
    """What the prompt says of the answer, after the lead's template."""
    if spec.kind == VERDICT:
        return (
            'Answer with a JSON object: "verdict", "VALID" or "INVALID"; and "justification", '
            "your reasoning in two or three sentences."
        )
    if spec.kind == SCORE:
        return (
            'Answer with a JSON object: "score", an integer from 0 to 100, and "reasoning", '
            "the reasons for the score in one or two sentences."
        )
    lines = [
        'Answer with a JSON object: "dimensions", an object with one entry per dimension '
        'below, each an object with "rating" (an integer on the dimension\'s scale) and '
        '"reason" (one or two sentences); and "reasoning", your overall reasons.',
        "The dimensions:",
    ]
    for d in spec.dimensions:
        about = f": {d.description}" if d.description else ""
        lines.append(f"- {d.name} (an integer from {d.low} to {d.high}){about}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Scored:
    """What an answer gives: a score on 0–100, its reasoning, and a verdict for ``verdict``."""

    score: float
    reasoning: str
    verdict: str = ""


def answer_score(spec: AnswerSpec, answer: dict[str, Any]) -> Scored:
    """The score of ``answer``, which matched ``spec.schema`` (the LLM layer checked it)."""
    if spec.kind == VERDICT:
        verdict = answer["verdict"]
        return Scored(100.0 if verdict == "VALID" else 0.0, answer["justification"], verdict)
    if spec.kind == SCORE:
        return Scored(float(answer["score"]), answer["reasoning"])
    ratings = answer["dimensions"]
    counted = [d for d in spec.dimensions if not spec.overall or d.name == spec.overall]
    values = [d.to_0_100(ratings[d.name]["rating"]) for d in counted]
    return Scored(sum(values) / len(values), answer["reasoning"])


def spec_json(spec: AnswerSpec) -> str:
    """The spec as canonical JSON (what a version's content compares by)."""
    return json.dumps(
        {
            "kind": spec.kind,
            "dimensions": [d.as_json() for d in spec.dimensions],
            "overall": spec.overall,
        },
        sort_keys=True,
    )
