"""Writes of the judging app: judging runs, from creation to resume and re-judging."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from judging.models import (
    BugStep,
    Context,
    JudgingRun,
    PatchJudgment,
    RejectionTheme,
    ReplacedResult,
    StrategyResult,
    WebhookDelivery,
)
from judging.runs.batch import batch_failures_forget, batch_problem, batch_runs_open
from judging.runs.execution import run_finish_if_done
from judging.runs.forecast import Forecast, run_forecast
from judging.runs.rejections import (
    PROMPT_VERSION,
    RUN_REJECTION_THEMES,
    is_sorted,
    justification_of,
    rejected_passing,
    with_members,
)
from judging.runs.selectors import RUN_CREATE, Preflight, run_preflight
from judging.runs.stale import can_go_stale, stale_results
from judging.runs.webhooks import delivery_open, webhook_host, webhook_url_check
from judging.strategies import parse_team
from judging.strategies.ensemble import check_scale
from judging.strategies.reducers import DEFAULT_REDUCER, get_reducer
from judging.tasks import batch_round_advance_task, run_rejections_sort_task, run_start_task
from rubrics.models import Dataset, Patch, RubricRevision
from sejury_web.audit import audit_record
from sejury_web.durable import enqueue_on_commit
from sejury_web.llm import LLMRequest, Provider
from sejury_web.llm.config import llm_settings
from sejury_web.llm.models_table import reasoning_check

NO_PATCHES = "there are no patches to judge"
# Why a run whose pre-flight found patches without what the team needs was not started: the
# one wording of the page, the API and the ``judge`` command, which each add only how to say
# "judge the ready ones" at their door (a button, ``"only_ready": true``, ``--only-ready``).
NOTHING_READY = (
    "no run was started: none of the {total} {noun} could be judged, since {lacks}. To judge "
    "them, {hints}."
)
SOME_NOT_READY = (
    "no run was started: {missing} of the {total} patches could not be judged, since {lacks}. "
    "To judge them, {hints}."
)
FOREIGN_PATCHES = "every patch of a run must belong to the run's dataset ({dataset})"
UNKNOWN_CONTEXT = "unknown context {context!r}; the contexts are {known}"
REVISION_CONTEXT = "the context 'revision' needs a rubric revision, and only it does"
# Why a run was not started in batch mode: the provider's answer, and the other choice.
BATCH_REFUSED = "no run was started in batch mode: {problem}"
OFFLINE_REASONING = (
    "the offline heuristic does not reason: a reasoning effort or thinking budget needs a model"
)
NOT_ACTIVE = "run {run} is {status}: only a queued or running run can be cancelled"
NOTHING_TO_RESUME = "run {run} has no pending patches{failed} to judge"
NOT_BATCH = "run {run} is not judged in batch mode"
NOT_GOLDEN = (
    "run {run} judged with the {context} context: only golden-rubric runs go stale, since only "
    "the golden rubric changes"
)
NOTHING_STALE = (
    "run {run} has no stale rubric verdicts: each was judged with its rubric's golden revision"
)
STILL_ACTIVE = "run {run} is {status}: re-judge its stale verdicts once it has ended"
NOT_ENDED = "run {run} is {status}: sort why its passing patches were rejected once it has ended"
NO_REJECTED_PASSING = "run {run} rejected no patch that passes its tests: there is nothing to sort"
ALL_SORTED = (
    "every test-passing patch that run {run} rejected is sorted already, with prompt {version}"
)

# Audit actions (sejury_web.audit) of a run's life; RUN_CREATE's record is read back by
# ``run_left_out``, so it lives with the selectors.
RUN_CANCEL = "run.cancel"
RUN_RESUME = "run.resume"
RUN_RETRY = "run.retry_failed"
RUN_BATCH_LEAVE = "run.batch_leave"
RUN_REJUDGE_STALE = "run.rejudge_stale"


class RunError(ValueError):
    """A run cannot be created or changed as asked; the message says why."""


class RunNotReady(RunError):
    """A new run was refused by its pre-flight: some patches (``preflight.ready`` of them
    have it) lack what the team needs in the context. When some are ready, a caller may
    ask again with ``only_ready``; the message says what is lacking and what to do."""

    def __init__(self, preflight: Preflight) -> None:
        self.preflight = preflight
        hints = "; ".join(dict.fromkeys(lack.hint for lack in preflight.lacks))
        if preflight.ready:
            message = SOME_NOT_READY.format(
                missing=preflight.missing,
                total=preflight.total,
                lacks=preflight.summary(),
                hints=hints,
            )
        else:
            noun = "patch" if preflight.total == 1 else "patches"
            message = NOTHING_READY.format(
                total=preflight.total, noun=noun, lacks=preflight.summary(), hints=hints
            )
        super().__init__(message)

    def __reduce__(self) -> tuple[type["RunNotReady"], tuple[Preflight]]:
        # Made again from its pre-flight, not its message, so that it survives pickling (a
        # Celery result, a worker process) with its message said once.
        return type(self), (self.preflight,)


class ReasoningRefused(RunError):
    """The run's reasoning setting is not one its model takes (the form's field says so)."""


class NothingToSort(RunError):
    """The run has no test-passing patch it rejected, or each is sorted already."""


def run_target(provider: str, model: str) -> tuple[str, str]:
    """The provider and model a run will use, resolved now so the run page can name them."""
    try:
        target = llm_settings().target(
            LLMRequest(
                purpose="judge",
                messages=(),
                schema={},
                provider=Provider(provider) if provider else None,
                model=model or None,
            )
        )
    except (ImproperlyConfigured, ValueError) as error:
        raise RunError(str(error)) from None
    return str(target.provider), target.model


def run_check(
    *,
    strategies: str | list[str],
    context: str,
    provider: str = "",
    model: str = "",
    threshold: float = 50.0,
    scale_lo: float = 0.0,
    scale_hi: float = 100.0,
    rubric_revision: RubricRevision | None = None,
    webhook_url: str = "",
    reducer: str = DEFAULT_REDUCER,
    reasoning: str = "",
) -> tuple[list[str], str, str]:
    """What ``run_validate`` checks of a new run's settings before it looks at any patch: the
    team, the scale, the context, the webhook, the provider; the team, provider and model it
    would use. Callers that show a run's pre-flight first call it, so that a wrong setting is
    said first."""
    try:
        team = parse_team(strategies)
        check_scale(scale_lo, scale_hi, threshold)
        get_reducer(reducer)
        if webhook_url:
            webhook_url_check(webhook_url)
    except ValueError as error:  # WebhookError too
        raise RunError(str(error)) from None
    if context not in Context.values:
        raise RunError(UNKNOWN_CONTEXT.format(context=context, known=", ".join(Context.values)))
    if (context == Context.REVISION) != (rubric_revision is not None):
        raise RunError(REVISION_CONTEXT)
    provider, model = run_target(provider, model)
    reasoning_of(provider, model, reasoning)
    return team, provider, model


def reasoning_of(provider: str, model: str, reasoning: str) -> str:
    """The run's reasoning setting, normalised; ``RunError`` saying what the model takes."""
    if not reasoning.strip():
        return ""
    if provider == Provider.OFFLINE:
        raise ReasoningRefused(OFFLINE_REASONING)
    try:
        return reasoning_check(provider, model, reasoning)
    except ValueError as error:
        raise ReasoningRefused(str(error)) from None


@dataclass(frozen=True)
class RunPlan:
    """A new run as ``run_validate`` accepted it: the team, provider and model it will use,
    the patches asked for (None: every patch of the dataset) and its pre-flight."""

    team: tuple[str, ...]
    provider: str
    model: str
    patch_ids: tuple[int, ...] | None
    preflight: Preflight


def run_validate(
    *,
    dataset: Dataset,
    strategies: str | list[str],
    context: str,
    patches: Iterable[Patch] | None = None,
    provider: str = "",
    model: str = "",
    threshold: float = 50.0,
    scale_lo: float = 0.0,
    scale_hi: float = 100.0,
    rubric_revision: RubricRevision | None = None,
    only_ready: bool = False,
    expected_ready: int | None = None,
    webhook_url: str = "",
    reducer: str = DEFAULT_REDUCER,
    reasoning: str = "",
) -> RunPlan:
    """Whether a new run may start, decided once for every door: ``run_create`` calls it
    first, and so does refine, which checks every configuration before it starts any.

    Its settings are checked first (``run_check``), then the patches asked for, then its
    pre-flight (``run_preflight``). When some patches lack what the team needs in
    ``context``, ``RunNotReady`` (carrying the pre-flight) refuses the run, unless
    ``only_ready``: then the run will judge the others. ``expected_ready`` is the number of
    ready patches the caller showed and was told to judge; should the pre-flight count
    another (the form changed, a rubric was confirmed meanwhile), the run is refused again.
    A run none of whose patches could be judged is always refused."""
    team, provider, model = run_check(
        strategies=strategies,
        context=context,
        provider=provider,
        model=model,
        threshold=threshold,
        scale_lo=scale_lo,
        scale_hi=scale_hi,
        rubric_revision=rubric_revision,
        webhook_url=webhook_url,
        reducer=reducer,
        reasoning=reasoning,
    )
    chosen_ids: tuple[int, ...] | None = None
    if patches is not None:
        chosen = list(patches)  # any iterable, even one that can be read only once
        chosen_ids = tuple(sorted({p.pk for p in chosen if p.dataset_id == dataset.pk}))
        if len(chosen_ids) != len({p.pk for p in chosen}):
            raise RunError(FOREIGN_PATCHES.format(dataset=dataset.name))
        if not chosen_ids:
            raise RunError(NO_PATCHES)
    preflight = run_preflight(
        dataset=dataset,
        strategies=team,
        context=context,
        patch_ids=chosen_ids,
        rubric_revision=rubric_revision,
    )
    if not preflight.total:
        raise RunError(NO_PATCHES)
    if not preflight.ready:
        raise RunNotReady(preflight)
    agreed = only_ready and expected_ready in (None, preflight.ready)
    if preflight.missing and not agreed:
        raise RunNotReady(preflight)
    return RunPlan(tuple(team), provider, model, chosen_ids, preflight)


def run_plan(
    *,
    dataset: Dataset,
    context: str,
    rubric_revision: RubricRevision | None = None,
    **settings: Any,
) -> tuple[RunPlan, Forecast]:
    """What a new run would judge and cost, creating nothing and sending nothing: the
    pre-flight and forecast of the form, the API and ``judge --dry-run``. ``run_validate``
    with ``only_ready`` (so ``RunNotReady`` only when no patch is ready), then the forecast
    of the patches such a run judges; ``settings`` are ``run_validate``'s others."""
    plan = run_validate(
        dataset=dataset,
        context=context,
        rubric_revision=rubric_revision,
        **{**settings, "only_ready": True, "expected_ready": None},
    )
    return plan, _plan_forecast(
        plan, dataset, context, rubric_revision, settings.get("reasoning", "")
    )


def _plan_forecast(
    plan: RunPlan,
    dataset: Dataset,
    context: str,
    rubric_revision: RubricRevision | None,
    reasoning: str,
) -> Forecast:
    """The forecast of the patches ``plan`` judges: the form's, and the one a run keeps."""
    return run_forecast(
        dataset=dataset,
        team=plan.team,
        context=context,
        provider=plan.provider,
        model=plan.model,
        patch_ids=plan.patch_ids,
        preflight=plan.preflight,
        rubric_revision=rubric_revision,
        reasoning=reasoning,
    )


def run_create(
    *,
    dataset: Dataset,
    strategies: str | list[str],
    context: str,
    patches: Iterable[Patch] | None = None,
    provider: str = "",
    model: str = "",
    threshold: float = 50.0,
    scale_lo: float = 0.0,
    scale_hi: float = 100.0,
    name: str = "",
    actor: User | None,
    kind: str = JudgingRun.Kind.RUN,
    rubric_revision: RubricRevision | None = None,
    only_ready: bool = False,
    expected_ready: int | None = None,
    webhook_url: str = "",
    webhook_origin: str = "",
    batch: bool = False,
    reducer: str = DEFAULT_REDUCER,
    reasoning: str = "",
) -> JudgingRun:
    """Create a run over ``patches`` (default: every patch of the dataset) and queue it.

    This is the one service that starts a run, for the page, the API and the ``judge`` command
    alike; whether it may start is ``run_validate``'s decision (``RunError``, or
    ``RunNotReady`` carrying the pre-flight, when not). With ``only_ready``, the patches
    that lack what the team needs are left out, and its audit record says so.

    ``webhook_url`` is called when the run ends (``judging.runs.webhooks``);
    ``webhook_origin``, the scheme and host the request came through, makes the links of
    its body absolute when ``SEJURY_BASE_URL`` is unset.

    ``batch``: the run is judged through the provider's batch API (``judging.runs.batch``),
    whose server is asked first whether it has one: ``RunError`` (``BATCH_REFUSED``) says
    why not, before anything is created or submitted."""
    plan = run_validate(
        dataset=dataset,
        strategies=strategies,
        context=context,
        patches=patches,
        provider=provider,
        model=model,
        threshold=threshold,
        scale_lo=scale_lo,
        scale_hi=scale_hi,
        rubric_revision=rubric_revision,
        only_ready=only_ready,
        expected_ready=expected_ready,
        webhook_url=webhook_url,
        reducer=reducer,
        reasoning=reasoning,
    )
    preflight = plan.preflight
    webhook_url = webhook_url.strip()
    if batch and (problem := batch_problem(provider=plan.provider, model=plan.model)):
        raise RunError(BATCH_REFUSED.format(problem=problem))
    to_judge = dataset.patches.all()
    if plan.patch_ids is not None:
        to_judge = to_judge.filter(pk__in=plan.patch_ids)
    if preflight.missing:  # run_validate let them be left out: only_ready
        to_judge = to_judge.filter(preflight.ready_filter)
    patch_ids = list(to_judge.order_by("pk").values_list("pk", flat=True))
    # What it is expected to cost, kept to be shown beside the bill once it ends.
    forecast = _plan_forecast(plan, dataset, context, rubric_revision, reasoning)
    with transaction.atomic():
        run = JudgingRun.objects.create(
            dataset=dataset,
            kind=kind,
            name=name,
            strategies=list(plan.team),
            context=context,
            rubric_revision=rubric_revision,
            provider=plan.provider,
            model=plan.model,
            scale_lo=scale_lo,
            scale_hi=scale_hi,
            threshold=threshold,
            reducer=reducer,
            reasoning=reasoning_of(plan.provider, plan.model, reasoning),
            created_by=actor,
            webhook_url=webhook_url,
            webhook_origin=webhook_origin[:300] if webhook_url else "",
            batch=batch,
            forecast=forecast.as_dict(),
        )
        PatchJudgment.objects.bulk_create(
            [PatchJudgment(run=run, patch_id=pk) for pk in patch_ids], batch_size=500
        )
        detail: dict[str, Any] = {"patches": len(patch_ids)}
        if len(patch_ids) < preflight.total:
            detail["left_out"] = preflight.total - len(patch_ids)
            detail["lacks"] = preflight.summary()
        if webhook_url:
            detail["webhook"] = webhook_host(webhook_url)
        if batch:
            detail["batch"] = True
        audit_record(actor=actor, action=RUN_CREATE, target=run, detail=detail)
        enqueue_on_commit(run_start_task, run.pk, run.generation)
    return run


def run_cancel(*, run: JudgingRun, actor: User | None) -> JudgingRun:
    """Stop the run: no new model call starts; finished results stay."""
    with transaction.atomic():
        updated = JudgingRun.objects.filter(
            pk=run.pk, status__in=[JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING]
        ).update(status=JudgingRun.Status.CANCELLED, finished_at=timezone.now())
        run.refresh_from_db()
        if not updated:
            status = run.get_status_display().lower()
            raise RunError(NOT_ACTIVE.format(run=run.pk, status=status))
        audit_record(actor=actor, action=RUN_CANCEL, target=run)
        delivery_open(run_id=run.pk, event=WebhookDelivery.Event.CANCELLED)
        if run.batch:  # its batch jobs are cancelled now, not at the next poll
            enqueue_on_commit(batch_round_advance_task, run.pk, run.generation)
    return run


def run_resume(*, run: JudgingRun, actor: User | None, retry_failed: bool = False) -> JudgingRun:
    """Queue the run's pending patches again (and, with ``retry_failed``, its failed ones).

    Completed members are kept: only what is missing is judged. The run's generation goes
    up, so tasks of the earlier generation still in the queue stop without judging.
    """

    with transaction.atomic():
        run = JudgingRun.objects.select_for_update().get(pk=run.pk)
        if retry_failed:
            failed = PatchJudgment.objects.filter(run=run, status=PatchJudgment.Status.FAILED)
            StrategyResult.objects.filter(
                judgment__in=failed, status=StrategyResult.Status.FAILED
            ).delete()
            BugStep.objects.filter(run=run).exclude(error="").delete()
            batch_failures_forget(run_id=run.pk)  # asked again in the next round
            failed.update(status=PatchJudgment.Status.PENDING, error="", finished_at=None)
        if not run.judgments.filter(status=PatchJudgment.Status.PENDING).exists():
            failed_text = " or failed" if retry_failed else ""
            raise RunError(NOTHING_TO_RESUME.format(run=run.pk, failed=failed_text))
        action = RUN_RETRY if retry_failed else RUN_RESUME
        run = _requeue(run, actor=actor, action=action)
    return run


def run_batch_leave(*, run: JudgingRun, actor: User | None) -> JudgingRun:
    """Judge the rest of a batch-mode run with ordinary calls (the lead's choice when a
    round waits too long, expired, or keeps failing): its open batch jobs are cancelled
    (what they answered is still stored, and billed), and its pending patches are queued
    again under a new generation, which finds the answers its batches brought in the log."""
    with transaction.atomic():
        run = JudgingRun.objects.select_for_update().get(pk=run.pk)
        if not run.batch:
            raise RunError(NOT_BATCH.format(run=run.pk))
        if not run.judgments.filter(status=PatchJudgment.Status.PENDING).exists():
            raise RunError(NOTHING_TO_RESUME.format(run=run.pk, failed=""))
        run.batch = False
        run.save(update_fields=["batch"])
        run = _requeue(run, actor=actor, action=RUN_BATCH_LEAVE)
        # Cancels the batch jobs still open, and stores what they answered.
        enqueue_on_commit(batch_round_advance_task, run.pk, run.generation)
    return run


def _requeue(
    run: JudgingRun, *, actor: User | None, action: str, detail: dict[str, Any] | None = None
) -> JudgingRun:
    """Queue the run's pending patches under the next generation and record ``action``; in
    the caller's transaction, with the run locked."""
    run.generation = F("generation") + 1
    run.status = JudgingRun.Status.QUEUED
    run.finished_at = None
    run.save(update_fields=["generation", "status", "finished_at"])
    run.refresh_from_db()
    audit_record(
        actor=actor,
        action=action,
        target=run,
        detail={"generation": run.generation, **(detail or {})},
    )
    enqueue_on_commit(run_start_task, run.pk, run.generation)
    return run


# What a replaced result keeps of the member's result, field for field.
REPLACED_FIELDS = (
    "strategy",
    "status",
    "score",
    "verdict",
    "reasoning",
    "answers",
    "prompt_version",
    "call_ids",
    "cached_call_ids",
    "provider_calls",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "cost_usd",
    "is_offline",
    "error",
    "rubric_revision_id",
)


def _replaced(result: StrategyResult, *, generation: int, reason: str) -> ReplacedResult:
    """``result`` as history, with the team's verdict of the time (``result.judgment``)."""
    judgment = result.judgment
    return ReplacedResult(
        judgment=judgment,
        reason=reason,
        generation=generation,
        **{field: getattr(result, field) for field in REPLACED_FIELDS},
        judged_at=result.created_at,
        team_status=judgment.status,
        team_score=judgment.score,
        team_verdict=judgment.verdict,
        team_spread=judgment.spread,
    )


def run_rejudge_stale(*, run: JudgingRun, actor: User | None) -> JudgingRun:
    """Judge again the rubric member of every patch whose rubric verdict is stale (judged
    with an older revision than its rubric's golden one), under a new generation.

    Each stale result moves to ``ReplacedResult`` with the team's verdict of the time, and
    its patch is pending again: ``patch_judge`` then judges only the missing member, with
    today's golden rubric; the other members' results (and the bug steps of s4 and s5) are
    kept, so no call is repeated for them. A cancelled run's other pending patches are
    queued too, as a resume would.
    """
    with transaction.atomic():
        run = JudgingRun.objects.select_for_update().get(pk=run.pk)
        if not can_go_stale(run):
            raise RunError(NOT_GOLDEN.format(run=run.pk, context=run.get_context_display()))
        if run.is_active:
            status = run.get_status_display().lower()
            raise RunError(STILL_ACTIVE.format(run=run.pk, status=status))
        stale = list(stale_results(run).select_related("judgment").order_by("pk"))
        if not stale:
            raise RunError(NOTHING_STALE.format(run=run.pk))
        reason = ReplacedResult.Reason.RUBRIC_CHANGED
        ReplacedResult.objects.bulk_create(
            [_replaced(result, generation=run.generation + 1, reason=reason) for result in stale],
            batch_size=500,
        )
        StrategyResult.objects.filter(pk__in=[result.pk for result in stale]).delete()
        judgment_ids = {result.judgment_id for result in stale}
        PatchJudgment.objects.filter(pk__in=judgment_ids).update(
            status=PatchJudgment.Status.PENDING,
            score=None,
            verdict="",
            spread=None,
            error="",
            finished_at=None,
        )
        members = sorted({result.strategy for result in stale})
        run = _requeue(
            run,
            actor=actor,
            action=RUN_REJUDGE_STALE,
            detail={"patches": len(judgment_ids), "members": members, "reason": str(reason)},
        )
    return run


def run_rejection_themes_request(*, run: JudgingRun, actor: User | None) -> int:
    """Ask a worker to sort why the run rejected patches that pass their tests (paper 004 §7):
    each such patch's justification gets a theme from ``judging.runs.rejections``' prompt.

    Rows already sorted with today's prompt version from the same justification are skipped;
    the others (never sorted, failed, left pending by a killed worker, sorted with an older
    prompt, or whose member was judged again since) become pending and are queued. Returns
    how many were queued. The run must have ended: its verdicts are still moving otherwise.
    """
    with transaction.atomic():
        run = JudgingRun.objects.select_for_update().get(pk=run.pk)
        if run.is_active:
            status = run.get_status_display().lower()
            raise RunError(NOT_ENDED.format(run=run.pk, status=status))
        judgments = list(with_members(rejected_passing(run).select_related("rejection_theme")))
        if not judgments:
            raise NothingToSort(NO_REJECTED_PASSING.format(run=run.pk))
        existing, new = [], []
        for judgment in judgments:
            row = getattr(judgment, "rejection_theme", None)
            if is_sorted(row, justification_of(run.strategies, judgment.results.all())):
                continue
            if row is None:
                new.append(RejectionTheme(judgment=judgment, prompt_version=PROMPT_VERSION))
            else:
                existing.append(row.pk)
        if not existing and not new:
            raise NothingToSort(ALL_SORTED.format(run=run.pk, version=PROMPT_VERSION))
        RejectionTheme.objects.filter(pk__in=existing).update(
            status=RejectionTheme.Status.PENDING,
            theme="",
            rationale="",
            error="",
            prompt_version=PROMPT_VERSION,
            llm_call_id=None,
            sorted_at=None,
        )
        RejectionTheme.objects.bulk_create(new, batch_size=500)
        queued = len(existing) + len(new)
        audit_record(
            actor=actor,
            action=RUN_REJECTION_THEMES,
            target=run,
            detail={"patches": queued, "prompt_version": PROMPT_VERSION},
        )
        enqueue_on_commit(run_rejections_sort_task, run.pk)
    return queued


def rejections_resume_unfinished() -> list[int]:
    """Queue again every run with rows waiting to be sorted: a worker starting calls this,
    so that what a killed worker left is sorted when a worker is back."""
    run_ids = sorted(
        set(
            RejectionTheme.objects.filter(status=RejectionTheme.Status.PENDING).values_list(
                "judgment__run_id", flat=True
            )
        )
    )
    for run_id in run_ids:
        enqueue_on_commit(run_rejections_sort_task, run_id)
    return run_ids


def batch_runs_resume_cancelled() -> list[int]:
    """Poll on the batch jobs of cancelled runs (and of runs gone on with ordinary calls)
    until what they answered is stored (active batch runs are resumed with the others): a
    worker starting calls this. Returns the runs."""
    runs = batch_runs_open()
    for run_id, generation in runs:
        enqueue_on_commit(batch_round_advance_task, run_id, generation)
    return [run_id for run_id, _generation in runs]


def runs_resume_unfinished() -> list[int]:
    """Resume every queued or running run: a worker starting calls this, so a run whose
    worker was killed finishes when a worker is back. Returns the runs resumed."""
    resumed = []
    for run in JudgingRun.objects.filter(
        status__in=[JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING]
    ):
        try:
            run_resume(run=run, actor=None)  # the system's doing: a worker started
        except RunError:
            run_finish_if_done(run.pk)
            continue
        resumed.append(run.pk)
    return resumed
