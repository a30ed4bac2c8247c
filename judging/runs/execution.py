"""What the Celery tasks of a run call: starting it, one bug's first steps, judging one
patch, and failing what a task could not finish. Imports no task, so that tasks import it.

Every model call goes through the run's ``ask``, which sends it to the run's provider and
model and first checks that the run is still going (not cancelled, not superseded by a
resume): a cancelled run stops before its next call, not after the patch. Each member's
result is written once (``StrategyResult`` is unique per judgment and strategy), so a
patch judged again after a killed worker repeats only the members it had not finished.
"""

import dataclasses
import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, transaction
from django.db.models import Min
from django.utils import timezone

from judging.models import BugStep, JudgingRun, PatchJudgment, StrategyResult, WebhookDelivery
from judging.runs.cases import case_and_rubric, case_for
from judging.runs.webhooks import delivery_open
from judging.strategies import Case, Outcome, Step, StrategyError, get_strategy
from judging.strategies.ensemble import combine
from rubrics.models import RubricRevision
from sejury_web.llm import LLMError, LLMRequest, LLMResponse, Provider, complete
from sejury_web.llm.models import LLMCall

log = logging.getLogger(__name__)

INTERNAL_ERROR = "internal error in {strategy}: {error!r} (see the worker's log)"
MEMBERS_FAILED = "{count} of {total} members failed: {errors}"
STEP_FAILED = "step 1 of {strategy} failed for bug {bug}: {error}"

TASK_FAILED = "the judging task failed unexpectedly: {error}"


class RunStopped(Exception):
    """The run was cancelled or resumed by another generation: stop before the next call."""


def run_is_current(run_id: int, generation: int) -> bool:
    """Whether the run still goes on under ``generation``: checked before every model call.

    One indexed SELECT by hand, as in the LLM layer's cache lookup: building the ORM query
    costs more CPU than running it, and a worker's threads share one interpreter.
    """
    table = connection.ops.quote_name(JudgingRun._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {table} WHERE id = %s AND generation = %s "  # noqa: S608
            "AND status IN (%s, %s)",
            [run_id, generation, JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING],
        )
        return cursor.fetchone() is not None


class Asker:
    """The ``ask`` a strategy gets: the run's provider and model; records every response."""

    def __init__(self, run: JudgingRun, generation: int) -> None:
        self.run = run
        self.generation = generation
        self.responses: list[LLMResponse] = []
        self.failed_call_ids: list[int] = []

    def __call__(self, request: LLMRequest) -> LLMResponse:
        if not run_is_current(self.run.pk, self.generation):
            raise RunStopped
        request = dataclasses.replace(
            request,
            provider=Provider(self.run.provider),
            model=self.run.model,
            reasoning=self.run.reasoning,
        )
        try:
            response = self.answer(request)
        except LLMError as error:
            if error.call_id:
                self.failed_call_ids.append(error.call_id)
            raise
        self.responses.append(response)
        return response

    def answer(self, request: LLMRequest) -> LLMResponse:
        """The answer to the run's request: a call (batch mode answers otherwise)."""
        return complete(request)

    def done(self) -> None:
        """The strategy returned: its outcome may be stored (batch mode may say not yet)."""


# How a member's ``ask`` is made: ``Asker``, or batch mode's (``judging.runs.batch``).
AskerFactory = Callable[[JudgingRun, int], Asker]


@dataclasses.dataclass
class Spent:
    """What the provider was actually asked for: calls not answered by the cache."""

    provider_calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0  # of the input tokens, those the provider's prompt cache served
    output_tokens: int = 0
    cost_usd: Decimal | None = Decimal(0)

    def add(self, call: LLMResponse | LLMCall) -> None:
        """Count one provider call (an answer, or a failed call's row)."""
        self.provider_calls += 1
        self.input_tokens += call.input_tokens
        self.cached_tokens += call.cached_tokens
        self.output_tokens += call.output_tokens
        cost = call.cost_usd
        self.cost_usd = None if self.cost_usd is None or cost is None else self.cost_usd + cost

    @classmethod
    def of(cls, asker: Asker) -> "Spent":
        spent = cls()
        for response in asker.responses:
            if not response.from_cache:
                spent.add(response)
        if asker.failed_call_ids:  # rare: no query at all otherwise
            for call in LLMCall.objects.filter(pk__in=asker.failed_call_ids):
                spent.add(call)
        return spent

    def fields(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _attempt(
    run: JudgingRun, generation: int, name: str, action: Any, asker_type: AskerFactory = Asker
) -> tuple[Any, Asker, str]:
    """Run ``action(asker)``; return its value (None on failure), the asker, and the error."""
    asker = asker_type(run, generation)
    try:
        value = action(asker)
        asker.done()
        return value, asker, ""
    except RunStopped:
        raise
    except (StrategyError, LLMError, ImproperlyConfigured) as error:
        # ImproperlyConfigured: this worker lacks the provider's key or URL; say so plainly.
        return None, asker, str(error)
    except Exception as error:  # a bug of ours: fail this member, never leave the patch hanging
        log.exception("strategy %s failed on run %s", name, run.pk)
        return None, asker, INTERNAL_ERROR.format(strategy=name, error=error)


def bug_step_ensure(
    run: JudgingRun,
    generation: int,
    case: Case,
    bug_id: int,
    name: str,
    asker_type: AskerFactory = Asker,
) -> BugStep:
    """The strategy's bug-level first step for this run, computed if it is not stored yet."""
    existing = BugStep.objects.filter(run=run, bug_id=bug_id, strategy=name).first()
    if existing is not None:
        return existing
    strategy = get_strategy(name)
    step, asker, error = _attempt(
        run, generation, name, lambda ask: strategy.prepare(case, ask), asker_type
    )
    call_ids = [r.call_id for r in asker.responses] + asker.failed_call_ids
    row = BugStep(
        run=run,
        bug_id=bug_id,
        strategy=name,
        answer=step.response.answer if step else None,
        error=error,
        prompt_version=strategy.prompt_version,
        call_id=call_ids[-1] if call_ids else None,
        from_cache=bool(asker.responses) and all(r.from_cache for r in asker.responses),
        **Spent.of(asker).fields(),
    )
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:  # another delivery of this task wrote it first
        return BugStep.objects.get(run=run, bug_id=bug_id, strategy=name)
    return row


def _result(
    judgment: PatchJudgment,
    name: str,
    outcome: Outcome | None,
    asker: Asker,
    error: str,
    revision: RubricRevision | None = None,
) -> StrategyResult:
    """The member's result; ``revision``, the rubric the case showed, is kept by a member
    that reads it (the rubric judge), so that its verdict can go stale."""
    strategy = get_strategy(name)
    steps: tuple[Step, ...] = outcome.steps if outcome else ()
    answers = {step.name: step.response.answer for step in steps}
    if outcome and outcome.extra:
        answers["extra"] = outcome.extra
    return StrategyResult(
        judgment=judgment,
        strategy=name,
        status=StrategyResult.Status.FAILED if error else StrategyResult.Status.DONE,
        score=outcome.score if outcome else None,
        verdict=outcome.verdict if outcome else "",
        reasoning=outcome.reasoning if outcome else "",
        answers=answers,
        prompt_version=strategy.prompt_version,
        call_ids=[r.call_id for r in asker.responses] + asker.failed_call_ids,
        cached_call_ids=[r.call_id for r in asker.responses if r.from_cache],
        is_offline=any(r.is_offline for r in asker.responses)
        or (strategy.uses_llm and judgment.run.provider == Provider.OFFLINE),
        error=error,
        rubric_revision=revision if strategy.uses_rubric else None,
        **Spent.of(asker).fields(),
    )


def member_judge(
    judgment: PatchJudgment,
    generation: int,
    case: Case,
    name: str,
    revision: RubricRevision | None = None,
    asker_type: AskerFactory = Asker,
) -> None:
    """Judge one member of the team on the patch and store its result (or its failure)."""
    run = judgment.run
    strategy = get_strategy(name)
    prepared: dict[str, Any] | None = None
    if strategy.bug_step:
        step = bug_step_ensure(run, generation, case, judgment.patch.bug_id, name, asker_type)
        if step.error:
            error = STEP_FAILED.format(strategy=name, bug=case.bug_key, error=step.error)
            _save(_result(judgment, name, None, Asker(run, generation), error))
            return
        prepared = step.answer
    outcome, asker, error = _attempt(
        run,
        generation,
        name,
        lambda ask: strategy.judge(case, ask, prepared=prepared),
        asker_type,
    )
    _save(_result(judgment, name, outcome, asker, error, revision))


def _save(result: StrategyResult) -> None:
    try:
        with transaction.atomic():
            result.save()
    except IntegrityError:
        pass  # another delivery of this task wrote it first: keep that one


def patch_judge(judgment_id: int, generation: int) -> str:
    """Judge one patch with the run's team; return the judgment's status.

    Members already stored are not judged again. Stops quietly (leaving the judgment
    pending) when the run was cancelled or resumed under a newer generation.
    """
    judgment = PatchJudgment.objects.select_related("run", "patch__bug").get(pk=judgment_id)
    run = judgment.run
    if judgment.status != PatchJudgment.Status.PENDING or not run_is_current(run.pk, generation):
        return judgment.status
    case, revision = case_and_rubric(run, judgment.patch)
    try:
        stored = set(judgment.results.order_by().values_list("strategy", flat=True))
        for name in run.strategies:
            if name not in stored:
                member_judge(judgment, generation, case, name, revision)
    except RunStopped:
        return judgment.status
    judgment_conclude(judgment)
    run_finish_if_done(run.pk)
    return judgment.status


def judgment_conclude(judgment: PatchJudgment) -> None:
    """Combine the members' results into the team's verdict, or say which members failed."""
    run = judgment.run
    # Read by name, in no order: the model's default order joins the run, patch and dataset.
    results = {r.strategy: r for r in judgment.results.order_by()}
    failed = [
        results[name]
        for name in run.strategies
        if results[name].status == StrategyResult.Status.FAILED
    ]
    judgment.finished_at = timezone.now()
    if failed:
        judgment.status = PatchJudgment.Status.FAILED
        errors = "; ".join(f"{r.strategy}: {r.error}" for r in failed)
        judgment.error = MEMBERS_FAILED.format(
            count=len(failed), total=len(run.strategies), errors=errors
        )
    else:
        team = combine(
            [results[name].score for name in run.strategies],  # type: ignore[misc]
            lo=run.scale_lo,
            hi=run.scale_hi,
            threshold=run.threshold,
            reducer=run.reducer,
        )
        judgment.status = PatchJudgment.Status.DONE
        judgment.score, judgment.verdict, judgment.spread = team.score, team.verdict, team.spread
        judgment.error = ""
    judgment.save(update_fields=["status", "score", "verdict", "spread", "error", "finished_at"])


def judgments_fail(*, judgment_ids: list[int], error: str) -> int:
    """Fail the judgments still pending with ``error`` (what a task hit that nothing caught),
    then finish their runs if nothing else is pending; return how many were failed.

    Called by the tasks' failure hook, so that no judgment stays pending for ever. Members
    already stored are kept: *Retry failed* judges only what is missing.
    """
    pending = PatchJudgment.objects.filter(pk__in=judgment_ids, status=PatchJudgment.Status.PENDING)
    run_ids = set(pending.values_list("run_id", flat=True))
    failed = pending.update(
        status=PatchJudgment.Status.FAILED,
        error=TASK_FAILED.format(error=error)[:2000],
        finished_at=timezone.now(),
    )
    for run_id in run_ids:
        run_finish_if_done(run_id)
    return failed


def run_pending_judgment_ids(*, run_id: int, bug_id: int | None = None) -> list[int]:
    """The run's pending judgments (of one bug's patches, given ``bug_id``)."""
    pending = PatchJudgment.objects.filter(run_id=run_id, status=PatchJudgment.Status.PENDING)
    if bug_id is not None:
        pending = pending.filter(patch__bug_id=bug_id)
    return list(pending.values_list("pk", flat=True))


def run_finish_if_done(run_id: int) -> bool:
    """Mark the run finished once no judgment is pending; True if it is (now) finished.

    The conditional UPDATE changes the row for one caller only, however many workers end
    their patches at once: that one opens the run's webhook delivery, if it has a webhook.
    """
    if PatchJudgment.objects.filter(run_id=run_id, status=PatchJudgment.Status.PENDING).exists():
        return False
    # One transaction: a worker killed between the two writes leaves the run unfinished
    # (resumed later), never finished without its webhook's delivery.
    with transaction.atomic():
        finished = JudgingRun.objects.filter(
            pk=run_id, status__in=[JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING]
        ).update(status=JudgingRun.Status.FINISHED, finished_at=timezone.now())
        if finished:
            delivery_open(run_id=run_id, event=WebhookDelivery.Event.FINISHED)
    return True


def run_start(*, run_id: int, generation: int) -> list[tuple[str, Any]]:
    """Mark the run running and return the tasks that judge it, as (task name, argument):
    one ``("bug", bug_id)`` per bug with a pending judgment, in the order its patches were
    imported (see ``bug_prepare``).
    """
    updated = JudgingRun.objects.filter(
        pk=run_id,
        generation=generation,
        status__in=[JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING],
    ).update(status=JudgingRun.Status.RUNNING)
    if not updated:
        return []
    JudgingRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=timezone.now())
    run = JudgingRun.objects.get(pk=run_id)
    pending = run.judgments.filter(status=PatchJudgment.Status.PENDING)
    if not pending.exists():
        run_finish_if_done(run_id)
        return []
    bugs = pending.values("patch__bug_id").annotate(first=Min("pk")).order_by("first")
    return [("bug", bug["patch__bug_id"]) for bug in bugs]


def bug_prepare(*, run_id: int, bug_id: int, generation: int) -> list[int]:
    """Start one bug: the team's bug-level steps, then its first pending patch, judged here;
    return the bug's other pending judgments, for the caller to queue.

    A bug's candidates share their prompts up to the candidate (``judging.strategies.
    prompts``): judging one of them before its siblings fan out lets the provider cache that
    prefix first, so the siblings pay the cached rate for it. A redelivered task judges only
    what is still pending; what this patch's judging raises that nothing caught fails this
    patch alone, as its own task's failure function would, never its siblings.
    """
    run = JudgingRun.objects.get(pk=run_id)
    if not run_is_current(run_id, generation):
        return []
    pending = list(
        run.judgments.filter(patch__bug_id=bug_id, status=PatchJudgment.Status.PENDING)
        .select_related("patch__bug")
        .order_by("pk")
    )
    if not pending:
        return []
    case = case_for(run, pending[0].patch)
    try:
        for name in run.strategies:
            if get_strategy(name).bug_step:
                bug_step_ensure(run, generation, case, bug_id, name)
    except RunStopped:
        return []
    first, *siblings = pending
    try:
        patch_judge(first.pk, generation)
    except Exception as error:
        log.exception("judging patch %s of run %s failed", first.patch_id, run_id)
        judgments_fail(judgment_ids=[first.pk], error=f"{type(error).__name__}: {error}")
    if not run_is_current(run_id, generation):
        return []
    return [judgment.pk for judgment in siblings]
