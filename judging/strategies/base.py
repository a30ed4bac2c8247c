"""What every strategy is: a case in, an outcome out, through one ``ask`` per model call.

A *case* is what one strategy sees of one patch: the bug, the candidate diff, and the
context the run chose (a rubric, the reference fix, or nothing). Strategies never talk to
the LLM layer directly: the runner hands them ``ask``, which sends the request to the run's
provider and model and stops the patch when the run is cancelled. That keeps strategies pure
prompt-and-parse code, testable with any ``ask``.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from judging.dimensions import Dimension
from sejury_web.llm import LLMRequest, LLMResponse

Ask = Callable[[LLMRequest], LLMResponse]


@dataclass(frozen=True)
class Case:
    """One patch as a strategy sees it."""

    bug_key: str
    bug_title: str
    bug_description: str
    candidate_diff: str
    reference_diff: str  # the bug's fix ("" when the bug has none)
    # The run's context (``judging.models.Context``): what the rubric judge sees besides the
    # bug and the candidate. The S strategies read the reference whatever the context.
    context: str = "reference"
    rubric: dict[str, Any] | None = None  # a rubric structure (see rubrics.rubric_text)
    rubric_text: str = ""  # the same rubric as the Markdown a model reads
    rubric_missing: str = ""  # why the context's rubric is missing, if it is
    # The patch's test results as text ("" when it has none): only a written judge whose
    # template names the ``test_evidence`` block shows them (judging.judges).
    test_evidence: str = ""

    @property
    def bug_inputs(self) -> dict[str, Any]:
        """The bug as the ``inputs`` of a request (the offline model reads these)."""
        return {"key": self.bug_key, "title": self.bug_title, "description": self.bug_description}


@dataclass(frozen=True)
class Step:
    """One model call of a strategy: its name within the strategy, and the response."""

    name: str
    response: LLMResponse


@dataclass(frozen=True)
class Outcome:
    """A strategy's result on one patch: a score on 0–100 and why."""

    score: float
    reasoning: str
    steps: tuple[Step, ...] = ()
    verdict: str = ""  # the rubric judge's VALID/INVALID; "" for scoring strategies
    extra: dict[str, Any] = field(default_factory=dict)  # non-LLM details (baselines)


NO_REFERENCE = "the bug has no reference fix to compare with"


class StrategyError(Exception):
    """The strategy cannot judge this case (for example: the context it needs is missing)."""


def require_reference(case: Case) -> None:
    """Raise ``StrategyError`` unless the bug has a reference fix to compare with."""
    if not (case.reference_diff or "").strip():
        raise StrategyError(NO_REFERENCE)


class Strategy:
    """Base of every strategy; subclasses register with ``@register``.

    ``bug_step`` names a first step that depends only on the bug (s4, s5; see ``two_step``):
    the runner calls ``prepare`` once per bug and passes its answer to ``judge`` for every
    patch of the bug. ``personas`` names, as (step name, label) in call order, the steps of a
    strategy whose every step gives its own score and reasoning (the ``roles`` strategy's
    personas): the verdict page tables them. ``dimensions`` are those a written judge of the
    ``dimensions`` kind rates, each on its scale: the verdict page shows a rating on it.
    """

    name: ClassVar[str]
    label: ClassVar[str]
    description: ClassVar[str]
    prompt_version: ClassVar[str]
    uses_llm: ClassVar[bool] = True
    uses_reference: ClassVar[bool] = True  # reads the bug's reference fix
    uses_rubric: ClassVar[bool] = False  # reads the case's rubric (its result records which)
    bug_step: ClassVar[str] = ""
    personas: ClassVar[tuple[tuple[str, str], ...]] = ()
    dimensions: ClassVar[tuple[Dimension, ...]] = ()

    def prepare(self, case: Case, ask: Ask) -> Step:
        raise NotImplementedError(f"{self.name} has no bug-level step")

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        raise NotImplementedError


def scored(response: LLMResponse, *, step: str = "assess") -> Outcome:
    """The outcome of a one-step answer ``{score, reasoning}``: the score as the model gave it
    (its schema bounds it to 0–100, so an answer outside never reaches here)."""
    answer = response.answer
    return Outcome(float(answer["score"]), answer["reasoning"], (Step(step, response),))
