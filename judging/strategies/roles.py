"""Role players (CODERPE, paper 003, adapted from code summaries to patches).

The same patch is judged once per role: a code reviewer of the project, the developer who
wrote the code being fixed, its long-term maintainer, and a QA/system analyst. Each call is
S1b's prompt (the same task, criteria, data blocks and score schema) under a short persona
that says who is judging and what that role looks at first; the shared system message, which
says tagged text is data, is kept. The strategy's score is the mean of the roles' scores, and
every role is one step named after it, so that the verdict page shows each role's score and
reasoning.

Paper 003 pairs each role with one quality dimension of a summary; a patch has one question,
whether it fixes the bug, so every role rates functional correctness from its own standpoint
and the scores stay comparable enough to average.
"""

from dataclasses import dataclass
from typing import Any

from sejury_web.llm import OFFLINE_MARKER, LLMRequest

from .base import Ask, Case, Outcome, Step, Strategy, require_reference
from .prompts import SCORE_ANSWER, SCORE_SCHEMA, cache_group
from .prompts import request as one_turn
from .registry import register
from .s1 import s1_inputs, s1_user

# The personas are part of the prompt: change one and bump the version.
PROMPT_VERSION = "roles-v2"
PURPOSE = "judge.roles"


@dataclass(frozen=True)
class Persona:
    """One persona the strategy plays (paper 003 calls them roles): who is judging, said
    in S1b's prompt after the bug's data and before the candidate. In code, a user's role in
    the product is ``sejury_web.roles.Role`` and a persona is a ``Persona``; the prompt's
    ``[Role]`` header and the request's ``inputs["role"]`` keep the paper's word."""

    name: str  # the step's name in the results, and the request's ``inputs["role"]``
    label: str  # what the verdict page and the reasoning call it
    text: str  # the persona, put before the candidate


REVIEWER = """\
You are a code reviewer of this project. Before a patch is merged you read the change line
by line: whether its logic is right, whether it handles the edge cases the bug involves, and
whether it could break any other caller of the code it touches."""

DEVELOPER = """\
You are the developer who originally wrote the code this patch changes. You know what that
code is meant to do and the assumptions it relies on: you judge whether the patch restores
the intended behaviour for the case in the bug without breaking those assumptions."""

MAINTAINER = """\
You maintain this project for the long term. You judge whether the patch fixes the cause of
the bug rather than masking a symptom, so that the bug does not come back in another form,
and whether it leaves the code sound to build on."""

QA_ANALYST = """\
You are the project's QA and system analyst. You think in terms of the system's observable
behaviour: the scenario in the bug report, its variations, and the behaviour users rely on
elsewhere. You judge whether the system behaves correctly in all of them with the patch."""

PERSONAS: tuple[Persona, ...] = (
    Persona("reviewer", "Code reviewer", REVIEWER),
    Persona("developer", "Original developer", DEVELOPER),
    Persona("maintainer", "Maintainer", MAINTAINER),
    Persona("qa_analyst", "QA/system analyst", QA_ANALYST),
)

PERSONA_HEADER = "[Role]"
AS_PERSONA = "Rate the patch as this role would."


def persona_request(case: Case, persona: Persona) -> LLMRequest:
    """S1b's request under ``persona``: S1b's prompt with the persona after the bug's data
    and the answer instructions, just before the candidate, so that the four personas of a
    patch and of its siblings share everything before it (one cache group per bug)."""
    header = f"{PERSONA_HEADER}\n{persona.text} {AS_PERSONA}"
    user = s1_user(case, with_reference=True, answer=SCORE_ANSWER, persona=header)
    inputs: dict[str, Any] = {**s1_inputs(case, with_reference=True), "role": persona.name}
    return one_turn(PURPOSE, user, SCORE_SCHEMA, inputs, group=cache_group(PURPOSE, case))


def _number(score: float) -> str:
    return f"{score:.2f}".rstrip("0").rstrip(".")


def summary(scores: list[float], reasons: list[str], *, offline: bool) -> str:
    """The strategy's reasoning: the mean, each role's score, and the roles' reasons (once,
    when every role gave the same)."""
    mean = sum(scores) / len(scores)
    each = ", ".join(
        f"{persona.label} {_number(score)}" for persona, score in zip(PERSONAS, scores, strict=True)
    )
    head = f"The mean of the {len(PERSONAS)} roles' scores is {_number(mean)}: {each}."
    if offline:
        head = f"[{OFFLINE_MARKER}] {head}"
    if len(set(reasons)) == 1:
        return f"{head}\nEvery role gave the same reasoning: {reasons[0]}"
    lines = [
        f"{persona.label}: {reason}" for persona, reason in zip(PERSONAS, reasons, strict=True)
    ]
    return "\n".join([head, *lines])


@register
class RolePlayers(Strategy):
    name = "roles"
    label = "Role players"
    description = (
        "S1b asked once per role (code reviewer, original developer, maintainer, QA/system "
        "analyst), each under its own persona; the mean of the roles' scores (paper 003)."
    )
    prompt_version = PROMPT_VERSION
    personas = tuple((persona.name, persona.label) for persona in PERSONAS)

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        require_reference(case)
        # One persona after the other, as S2's turns: a failed call fails the member (and the
        # patch); the roles already answered stay in the log and the cache.
        steps = [Step(p.name, ask(persona_request(case, p))) for p in PERSONAS]
        scores = [float(step.response.answer["score"]) for step in steps]
        reasons = [str(step.response.answer["reasoning"]) for step in steps]
        offline = any(step.response.is_offline for step in steps)
        return Outcome(
            sum(scores) / len(scores), summary(scores, reasons, offline=offline), tuple(steps)
        )
