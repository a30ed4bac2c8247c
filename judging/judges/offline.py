"""What the offline model (not an LLM) answers to a written judge, by its answer kind.

It reads what the prompt showed (``strategy.WrittenStrategy.inputs``): the candidate, the
reference fix when the template shows it (else ``None``), the rubric when it shows one, and
the answer asked for. It never reads the lead's prompt text: whatever the judge's criteria,
its answer is the similarity rule of the built-in judge of the same kind.

- ``verdict``: the rubric judge's rule (``judging.strategies.offline.rubric_verdict``): each
  rubric requirement checked when a rubric is shown; without one, VALID when the reference
  score reaches 50, INVALID without a usable reference.
- ``score``: the reference score (S1b's rule); without a reference shown, S1a's (50 when the
  patch changes non-test code, else 0).
- ``dimensions``: that same score mapped onto each dimension's scale,
  ``low + round(score / 100 · (high − low))``: every dimension rated alike.
"""

from typing import Any

from judging.strategies.offline import rubric_verdict
from sejury_web.llm.offline import Inputs, offline_rule, reference_similarity, say
from sejury_web.llm.offline.scores import inputs_reference_score

from .strategy import PURPOSES


@offline_rule(PURPOSES["verdict"])
def written_verdict(inputs: Inputs) -> dict[str, Any]:
    """A verdict: the rubric judge's offline rule, its justification as the answer's."""
    answer = rubric_verdict(inputs)
    return {"verdict": answer["verdict"], "justification": answer["justification"]}


@offline_rule(PURPOSES["score"])
def written_score(inputs: Inputs) -> dict[str, Any]:
    """A score: the reference score (undecided, 50 or 0, without a reference shown)."""
    return reference_similarity(inputs)


@offline_rule(PURPOSES["dimensions"])
def written_dimensions(inputs: Inputs) -> dict[str, Any]:
    """Dimensions: the reference score mapped onto each dimension's scale."""
    base = inputs_reference_score(inputs)
    asked = inputs.require("answer", dict)
    dimensions = inputs.objects("answer.dimensions", asked.get("dimensions"))
    ratings = {}
    for dimension in dimensions:
        low, high = dimension.get("low"), dimension.get("high")
        if not isinstance(low, int) or not isinstance(high, int) or low >= high:
            raise inputs.bad("answer.dimensions", "dimensions with integer scales low < high")
        rating = low + round(base.value / 100 * (high - low))
        ratings[str(dimension.get("name"))] = {
            "rating": rating,
            "reason": say(
                f"Rating {rating} on {low}–{high}: the reference score {base.value} on that "
                "scale; the offline heuristic rates every dimension alike."
            ),
        }
    return {"dimensions": ratings, "reasoning": say(base.reason)}
