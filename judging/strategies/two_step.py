"""Strategies in two steps (S4, S5): one call per bug reads the reference fix and writes down
what a correct fix must do; one call per patch judges the candidate against that, without
seeing the reference.
"""

from typing import Any, ClassVar

from .base import Ask, Case, Outcome, Step, Strategy, StrategyError, require_reference, scored
from .prompts import (
    SCORE_ANSWER,
    SCORE_SCHEMA,
    bug_block,
    cache_group,
    candidate_block,
    reference_block,
)
from .prompts import request as one_turn


class TwoStepStrategy(Strategy):
    """Subclasses give the two prompts, the first step's schema, and how its answer is shown."""

    step_name: ClassVar[str]  # the first step's name in the results ("analyze", "tests")
    step_task: ClassVar[str]  # the first step's prompt, before the data
    step_answer: ClassVar[str]
    step_schema: ClassVar[dict[str, Any]]
    assess_task: ClassVar[str]  # the second step's prompt, before the data
    not_prepared: ClassVar[str]  # the error when ``judge`` gets no first-step answer

    def prepare(self, case: Case, ask: Ask) -> Step:
        require_reference(case)
        user = "\n\n".join(
            [self.step_task, bug_block(case), reference_block(case), self.step_answer]
        )
        inputs = {"bug": case.bug_inputs, "reference_diff": case.reference_diff}
        request = one_turn(
            self.bug_step, user, self.step_schema, inputs, group=cache_group(self.bug_step, case)
        )
        return Step(self.step_name, ask(request))

    def findings(self, prepared: dict[str, Any]) -> tuple[str, Any, str]:
        """The first step's answer as (name in the request's inputs, value, prompt block)."""
        raise NotImplementedError

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        if not prepared:
            raise StrategyError(self.not_prepared)
        name, value, block = self.findings(prepared)
        # The candidate last: what comes before it is the same for every candidate of the bug.
        user = "\n\n".join(
            [self.assess_task, bug_block(case), block, SCORE_ANSWER, candidate_block(case)]
        )
        inputs = {
            "bug": case.bug_inputs,
            "candidate_diff": case.candidate_diff,
            "reference_diff": None,
            name: value,
        }
        purpose = f"judge.{self.name}"
        group = cache_group(purpose, case)
        response = ask(one_turn(purpose, user, SCORE_SCHEMA, inputs, group=group))
        return scored(response)
