"""A written judge's version as a ``Strategy``: its template rendered on the case, its answer
kind's schema asked for, its answer scored (``answers.answer_score``).

The system message is the one every judging prompt shares (``strategies.prompts.SYSTEM``:
what is between tags is data, not instructions); the lead writes the user message's text
around the data blocks, and the answer instructions of the kind follow it. A block the case
cannot fill (no reference fix, no rubric in the run's context) fails the member with why,
as the built-in strategies do.
"""

from dataclasses import dataclass
from typing import Any

from judging.strategies import Ask, Case, Outcome, Step, Strategy, StrategyError
from judging.strategies.base import NO_REFERENCE
from judging.strategies.prompts import bug_block, candidate_block, reference_block
from judging.strategies.prompts import request as one_turn
from judging.strategies.rubric import rubric_block

from .answers import AnswerSpec, answer_instruction, answer_score
from .template import template_blocks, template_render

PURPOSES = {
    "verdict": "judge.written.verdict",
    "score": "judge.written.score",
    "dimensions": "judge.written.dimensions",
}
NO_RUBRIC = (
    "{label} shows the rubric, and the case has none: run it in a context with a rubric "
    "(golden, draft or free-form), not {context!r}"
)
NO_EVIDENCE = "This patch has no test evidence."


@dataclass(frozen=True)
class JudgeSpec:
    """A version of a written judge as plain values: all a strategy needs to judge with it."""

    label: str  # name@number
    title: str
    template: str
    answer: AnswerSpec
    status: str = "untested"

    @property
    def blocks(self) -> tuple[str, ...]:
        return template_blocks(self.template)


def _evidence_block(case: Case) -> str:
    evidence = case.test_evidence or NO_EVIDENCE
    return f"The patch's test results:\n<test_evidence>\n{evidence}\n</test_evidence>"


class WrittenStrategy(Strategy):
    """The strategy of one version; ``written_strategy`` makes one per version."""

    spec: JudgeSpec

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec

    def user_message(self, case: Case) -> str:
        """The template on ``case`` and the answer instructions; ``StrategyError`` when a block
        it shows is missing from the case."""
        spec = self.spec
        blocks: dict[str, str] = {}
        for name in spec.blocks:
            if name == "bug":
                blocks[name] = bug_block(case)
            elif name == "candidate_patch":
                blocks[name] = candidate_block(case)
            elif name == "reference_fix":
                if not (case.reference_diff or "").strip():
                    raise StrategyError(NO_REFERENCE)
                blocks[name] = reference_block(case)
            elif name == "rubric":
                if case.rubric_missing:
                    raise StrategyError(case.rubric_missing)
                if case.rubric is None:
                    raise StrategyError(NO_RUBRIC.format(label=spec.label, context=case.context))
                blocks[name] = rubric_block(case)
            else:
                blocks[name] = _evidence_block(case)
        return f"{template_render(spec.template, blocks)}\n\n{answer_instruction(spec.answer)}"

    def inputs(self, case: Case) -> dict[str, Any]:
        """What the offline model reads: what the prompt shows, and the answer asked for."""
        blocks = self.spec.blocks
        answer = self.spec.answer
        return {
            "bug": case.bug_inputs,
            "candidate_diff": case.candidate_diff,
            "reference_diff": case.reference_diff if "reference_fix" in blocks else None,
            "rubric": case.rubric if "rubric" in blocks else None,
            "answer": {
                "kind": answer.kind,
                "dimensions": [d.as_json() for d in answer.dimensions],
                "overall": answer.overall,
            },
        }

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        spec = self.spec
        purpose = PURPOSES[spec.answer.kind]
        user = self.user_message(case)
        group = f"{spec.label}:{case.bug_key}"
        response = ask(one_turn(purpose, user, spec.answer.schema, self.inputs(case), group=group))
        scored = answer_score(spec.answer, response.answer)
        return Outcome(
            scored.score, scored.reasoning, (Step("judge", response),), verdict=scored.verdict
        )


def written_strategy(spec: JudgeSpec) -> WrittenStrategy:
    """The strategy of one version, named by its label (``minimalism@2``)."""
    blocks = spec.blocks

    class Written(WrittenStrategy):
        name = spec.label
        label = f"{spec.title} ({spec.label})"
        description = f"A judge a lead wrote: {spec.title}, version {spec.label} ({spec.status})."
        prompt_version = f"written:{spec.label}"
        uses_reference = "reference_fix" in blocks
        uses_rubric = "rubric" in blocks
        dimensions = spec.answer.dimensions

    return Written(spec)
