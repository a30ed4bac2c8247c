"""Test judge configurations on a ladder dataset: one judging run per configuration.

A configuration is written as the ``refine`` command and the page take it: a team
(``s1b`` or ``s1b,s2,s3``, a written judge as ``minimalism`` or ``minimalism@2``), optionally
``@context`` (``rubric@golden``, ``minimalism@2@golden``); several are separated by ``;``.
Without a context, a team with the rubric judge (or a written judge that shows the rubric)
reads the golden rubric and any other team the reference fix (the S strategies read it in
every context).

A configuration that already has a run on the ladder with the same team, context, provider
and model, not cancelled, started after the ladder's last patch was added, is not run
again: its run is reused (and the LLM cache would answer a repeat anyway).
"""

from dataclasses import dataclass

from django.contrib.auth.models import User

from judging.models import Context, JudgingRun
from judging.runs.services import UNKNOWN_CONTEXT, RunError, run_check, run_create, run_validate
from judging.strategies.registry import get_strategy
from rubrics.ladders.services import DERIVATION
from rubrics.models import Dataset

NOT_A_LADDER = "{name} is not a ladder dataset: build its ladders first"
NO_CONFIGURATIONS = "give at least one configuration, e.g. s1b;rubric@golden;s1b,s2,s3"
BAD_CONFIGURATION = "configuration {text!r}: {error}"
LEAD_CONTEXTS = [c for c in Context.values if c != Context.REVISION]


@dataclass(frozen=True)
class Configuration:
    """A judge configuration to test, as a lead writes it: a team and the context it reads."""

    team: tuple[str, ...]
    context: str

    @property
    def text(self) -> str:
        return f"{','.join(self.team)}@{self.context}"


def default_context(team: tuple[str, ...]) -> str:
    if any(get_strategy(name).uses_rubric for name in team):
        return Context.GOLDEN
    return Context.REFERENCE


def configurations_parse(text: str) -> list[Configuration]:
    """``"s1b;s3;rubric@golden;s1b,s2,s3"`` → configurations; a ``RunError`` names the bad one."""
    configurations: list[Configuration] = []
    for part in (p.strip() for p in text.replace("\n", ";").split(";")):
        if not part:
            continue
        team_text, _, context = (x.strip() for x in part.rpartition("@"))
        if not team_text or context.isdigit():  # no context, or a written judge's version
            team_text, context = part, ""
        try:
            team = tuple(run_check(strategies=team_text, context=Context.REFERENCE)[0])
        except RunError as error:
            raise RunError(BAD_CONFIGURATION.format(text=part, error=error)) from None
        context = context or default_context(team)
        if context not in LEAD_CONTEXTS:
            unknown = UNKNOWN_CONTEXT.format(context=context, known=", ".join(LEAD_CONTEXTS))
            raise RunError(BAD_CONFIGURATION.format(text=part, error=unknown))
        configuration = Configuration(team, context)
        if configuration not in configurations:
            configurations.append(configuration)
    if not configurations:
        raise RunError(NO_CONFIGURATIONS)
    return configurations


def _reusable(
    ladder: Dataset, configuration: Configuration, provider: str, model: str
) -> JudgingRun | None:
    candidates = ladder.judging_runs.filter(
        kind=JudgingRun.Kind.RUN,
        context=configuration.context,
        provider=provider,
        model=model,
    ).exclude(status=JudgingRun.Status.CANCELLED)
    for run in candidates.order_by("-created_at", "-pk"):
        if tuple(run.strategies) != configuration.team:
            continue
        if not ladder.patches.filter(created_at__gt=run.created_at).exists():
            return run
    return None


def refine_start(
    *,
    ladder: Dataset,
    configurations: list[Configuration],
    provider: str = "",
    model: str = "",
    actor: User | None,
) -> list[tuple[JudgingRun, bool]]:
    """A run per configuration, reused or created (with ``True``). Every configuration is
    checked first by ``run_validate``, as ``run_create`` checks a run: its settings and
    whether any ladder patch has what it needs (a golden rubric for ``rubric@golden``); the
    others are left out. One that cannot run starts none, and the error names it."""
    if ladder.derivation != DERIVATION:
        raise RunError(NOT_A_LADDER.format(name=ladder.name))
    if not configurations:
        raise RunError(NO_CONFIGURATIONS)
    targets = []
    for configuration in configurations:  # every configuration checked before any run starts
        try:
            plan = run_validate(
                dataset=ladder,
                strategies=list(configuration.team),
                context=configuration.context,
                provider=provider,
                model=model,
                only_ready=True,
            )
        except RunError as error:
            raise RunError(BAD_CONFIGURATION.format(text=configuration.text, error=error)) from None
        targets.append((configuration, plan.provider, plan.model))
    started: list[tuple[JudgingRun, bool]] = []
    for configuration, chosen_provider, chosen_model in targets:
        run = _reusable(ladder, configuration, chosen_provider, chosen_model)
        if run is not None:
            started.append((run, False))
            continue
        try:
            run = run_create(
                dataset=ladder,
                strategies=list(configuration.team),
                context=configuration.context,
                provider=provider,
                model=model,
                name=f"REFINE {configuration.text}",
                actor=actor,
                only_ready=True,
            )
        except RunError as error:
            raise RunError(BAD_CONFIGURATION.format(text=configuration.text, error=error)) from None
        started.append((run, True))
    return started
