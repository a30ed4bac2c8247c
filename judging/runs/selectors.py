"""Reads of judging runs: the run list, progress and totals (the run page, ``judge --wait``,
exports), and the pre-flight of a new run (which patches lack what its team and context need).

What a run spent counts the results that re-judging replaced, too.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Sum
from django.utils import timezone

from judging.models import (
    BugStep,
    Context,
    JudgingRun,
    PatchJudgment,
    ReplacedResult,
    StrategyResult,
)
from judging.strategies import get_strategy
from rubrics.models import Dataset, Rubric, RubricRevision
from sejury_web.audit import audit_events
from sejury_web.llm import Provider
from sejury_web.llm.prices import MILLION, price_for

# The audit action (sejury_web.audit) of a run's creation, whose record ``run_left_out`` reads.
RUN_CREATE = "run.create"
# The one wording of a run id that names no run, at every door (pages, API, commands).
UNKNOWN_RUN = "there is no judging run {run}"


RUNS_PER_PAGE = 50


@dataclass(frozen=True)
class RunRow:
    run: JudgingRun
    total: int
    finished: int  # done or failed

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 100


def runs_judged_counts(runs: list[JudgingRun]) -> dict[int, tuple[int, int]]:
    """Per run of ``runs``: how many patches it has, and how many are done or failed, in one
    grouped query over those runs only."""
    finished = [PatchJudgment.Status.DONE, PatchJudgment.Status.FAILED]
    return {
        row["run_id"]: (row["total"], row["finished"])
        for row in PatchJudgment.objects.filter(run__in=runs)
        .order_by()
        .values("run_id")
        .annotate(total=Count("id"), finished=Count("id", filter=Q(status__in=finished)))
    }


def runs_page(*, page: int | str = 1) -> Page:
    """Judging runs (not rubric previews), newest first, as ``RunRow``s: the page's runs, then
    their verdicts counted in one grouped query over those runs only (counting in the list's
    own query grouped every verdict of every run, for the page and again for its count)."""
    runs = (
        JudgingRun.objects.filter(kind=JudgingRun.Kind.RUN)
        .select_related("dataset", "created_by")
        .order_by("-created_at", "-id")
    )
    result = Paginator(runs, RUNS_PER_PAGE).get_page(page)
    shown = list(result.object_list)
    counts = runs_judged_counts(shown)
    rows: list[Any] = [RunRow(run, *counts.get(run.pk, (0, 0))) for run in shown]
    result.object_list = rows
    return result


def runs_before(
    *, dataset: Dataset | None, status: str, before: int | None, limit: int
) -> tuple[list[JudgingRun], int | None]:
    """Up to ``limit`` judging runs (not rubric previews), newest first, of ``dataset`` and
    with ``status`` when given, older than the run ``before`` when given; and the run to
    continue before (None at the end). A page costs the same anywhere in the list."""
    runs = JudgingRun.objects.filter(kind=JudgingRun.Kind.RUN).select_related("dataset")
    if dataset is not None:
        runs = runs.filter(dataset=dataset)
    if status:
        runs = runs.filter(status=status)
    if before is not None:
        runs = runs.filter(pk__lt=before)
    page = list(runs.order_by("-pk")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return page, (page[-1].pk if more else None)


@dataclass(frozen=True)
class RunProgress:
    total: int
    done: int
    failed: int
    pending: int
    valid: int
    invalid: int
    provider_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None  # None when a model's price is unknown
    wall_s: float | None  # from start to finish (or to now while running)
    # Of the input tokens, those the provider's prompt cache served, and what that saved: the
    # same tokens at the input rate less the cached rate (None when the price is unknown).
    cached_tokens: int = 0
    cache_saved_usd: Decimal | None = None
    # When the run last moved: its last result, bug step or finished patch, else its start.
    moved_at: datetime | None = None

    @property
    def finished(self) -> int:
        return self.done + self.failed

    @property
    def cached_share(self) -> float | None:
        """The share of the input tokens the provider read from its prompt cache."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else None

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 100


def _spent(queryset: QuerySet, written: str = "created_at") -> dict[str, Any]:
    return queryset.aggregate(
        written=Max(written),
        calls=Sum("provider_calls"),
        input_tokens=Sum("input_tokens"),
        cached_tokens=Sum("cached_tokens"),
        output_tokens=Sum("output_tokens"),
        cost=Sum("cost_usd"),
        unpriced=Count("pk", filter=Q(cost_usd__isnull=True, provider_calls__gt=0)),
    )


def run_progress(run: JudgingRun) -> RunProgress:
    """How far the run is, and what it has spent so far (calls the cache answered are free)."""
    counts = PatchJudgment.objects.filter(run=run).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=PatchJudgment.Status.DONE)),
        failed=Count("pk", filter=Q(status=PatchJudgment.Status.FAILED)),
        valid=Count("pk", filter=Q(verdict="VALID")),
        invalid=Count("pk", filter=Q(verdict="INVALID")),
        finished_at=Max("finished_at"),
    )
    spent = [
        _spent(StrategyResult.objects.filter(judgment__run=run)),
        _spent(BugStep.objects.filter(run=run)),
    ]
    if run.generation:  # re-judged results were spent too; a run never resumed has none
        spent.append(_spent(ReplacedResult.objects.filter(judgment__run=run), "replaced_at"))
    unpriced = any(part["unpriced"] for part in spent)
    cost = None if unpriced else sum((part["cost"] or Decimal(0) for part in spent), Decimal(0))
    cached = sum(int(part["cached_tokens"] or 0) for part in spent)
    wall = None
    if run.started_at:
        end = run.finished_at or timezone.now()
        wall = max(0.0, (end - run.started_at).total_seconds())
    return RunProgress(
        total=counts["total"],
        done=counts["done"],
        failed=counts["failed"],
        pending=counts["total"] - counts["done"] - counts["failed"],
        valid=counts["valid"],
        invalid=counts["invalid"],
        provider_calls=sum(int(part["calls"] or 0) for part in spent),
        input_tokens=sum(int(part["input_tokens"] or 0) for part in spent),
        output_tokens=sum(int(part["output_tokens"] or 0) for part in spent),
        cost_usd=cost,
        wall_s=wall,
        cached_tokens=cached,
        cache_saved_usd=cache_saving(run, cached),
        moved_at=_latest(
            run.started_at, run.created_at, counts["finished_at"], *(p["written"] for p in spent)
        ),
    )


def _latest(*moments: datetime | None) -> datetime | None:
    return max((m for m in moments if m is not None), default=None)


def cache_saving(run: JudgingRun, cached_tokens: int) -> Decimal | None:
    """What the provider's prompt cache saved the run: its cached tokens at the model's input
    rate less its cached-input rate (batch rates for a batch run); None if the price is
    unknown. A prompt in a long-prompt tier (Gemini Pro, 200,000+ tokens) is counted at the
    standard tier's rates: judging prompts are far shorter."""
    price = price_for(run.model)
    if price is None:
        return None
    rates = price.batch if run.batch else price.standard
    return cached_tokens * (rates.input - rates.cached_input) / MILLION


def _time(value: Any) -> str | None:
    return value.isoformat() if value else None


def run_summary(run: JudgingRun) -> dict[str, Any]:
    """The run as plain JSON values, its counts and spend included: what the API's
    ``GET /api/v1/runs/{id}`` and a run's webhook call both say of it."""
    progress = run_progress(run)
    cost = progress.cost_usd
    return {
        "id": run.pk,
        "name": run.name,
        "dataset": run.dataset.name,
        "status": run.status,
        "team": list(run.strategies),
        "context": run.context,
        "provider": run.provider,
        "model": run.model,
        "reasoning": run.reasoning,
        "offline": run.provider == Provider.OFFLINE,
        "threshold": run.threshold,
        "reducer": run.reducer,
        "batch": run.batch,
        "created_at": _time(run.created_at),
        "started_at": _time(run.started_at),
        "finished_at": _time(run.finished_at),
        # When the run last moved (a result, a patch finished): a client polling a run that
        # says "running" sees whether anything is happening.
        "last_progress_at": _time(progress.moved_at),
        "counts": {
            "total": progress.total,
            "done": progress.done,
            "failed": progress.failed,
            "pending": progress.pending,
            "valid": progress.valid,
            "invalid": progress.invalid,
        },
        "spend": {
            "provider_calls": progress.provider_calls,
            "input_tokens": progress.input_tokens,
            "output_tokens": progress.output_tokens,
            "cost_usd": float(cost) if isinstance(cost, Decimal) else None,
            "wall_s": progress.wall_s,
        },
    }


class RunNotFound(JudgingRun.DoesNotExist):
    """No judging run has the id asked for; the message says which (``UNKNOWN_RUN``). A
    ``JudgingRun.DoesNotExist``, so code that catches that catches this."""

    def __init__(self, run_id: object) -> None:
        self.run_id = run_id
        super().__init__(UNKNOWN_RUN.format(run=run_id))

    def __reduce__(self) -> tuple[type["RunNotFound"], tuple[object]]:
        # Made again from its id, not its message, so that a pickled copy says it once.
        return type(self), (self.run_id,)


def run_get(*, run_id: int) -> JudgingRun:
    """The run, with its dataset, creator and rubric revision; ``RunNotFound`` if none."""
    try:
        return JudgingRun.objects.select_related("dataset", "created_by", "rubric_revision").get(
            pk=run_id
        )
    except JudgingRun.DoesNotExist:
        raise RunNotFound(run_id) from None


@dataclass(frozen=True)
class LeftOut:
    """The patches a run's creation left out (``only_ready``): how many, of how many, and
    what they lacked, as its pre-flight said."""

    count: int
    total: int
    lacks: str


def run_left_out(run: JudgingRun) -> LeftOut | None:
    """What the run's creation left out, from its creation's audit record; None when it
    judges every patch it was asked to. One query."""
    created = audit_events(run).filter(action=RUN_CREATE).first()
    detail = created.detail if created else {}
    count = int(detail.get("left_out", 0))
    if not count:
        return None
    return LeftOut(count, count + int(detail.get("patches", 0)), str(detail.get("lacks", "")))


# Pre-flight of a new run: what each patch needs, by context, for the rubric judge (the
# strategies that read a rubric), and the reference fix for those that compare with it.
EXAMPLES_SHOWN = 5
# What patches lack, as (one patch, several patches).
LACKS_RUBRIC = {
    Context.GOLDEN: ("has no golden rubric", "have no golden rubric"),
    Context.DRAFT: ("has no draft rubric", "have no draft rubric"),
    Context.FREE_FORM: ("has no free-form draft rubric", "have no free-form draft rubric"),
    Context.REVISION: (
        "is of another bug than the rubric revision",
        "are of another bug than the rubric revision",
    ),
}
LACKS_REFERENCE = ("has no reference fix", "have no reference fix")
LACK_HINTS = {
    Context.GOLDEN: "confirm their rubrics in the review queue, or pick another context",
    Context.DRAFT: "draft their rubrics from the dataset's page, or pick another context",
    Context.FREE_FORM: "draft their rubrics from the dataset's page, or pick another context",
    Context.REVISION: "a rubric revision judges its own bug's patches only",
    Context.REFERENCE: "leave out the members that need it, or pick another context",
}


@dataclass(frozen=True)
class Lack:
    """Patches without one thing the run needs: a rubric of the context, or a reference fix."""

    what: tuple[str, str]  # ("has no golden rubric", "have no golden rubric")
    count: int
    members: list[str]  # the strategies that need it
    examples: list[str]  # a few patch keys, in key order
    hint: str  # what a lead can do about it

    def sentence(self, total: int) -> str:
        """ "19 of 24 patches have no golden rubric (needed by rubric)"."""
        what = self.what[0] if self.count == 1 else self.what[1]
        noun = "patch" if total == 1 else "patches"
        if self.count == total:  # "all 24 patches have …", "the patch has …"
            share = "the patch" if total == 1 else f"all {total} patches"
        else:
            share = f"{self.count} of {total} {noun}"
        return f"{share} {what} (needed by {', '.join(self.members)})"


@dataclass(frozen=True)
class Preflight:
    """What a run would judge: how many patches, how many have all it needs, what the others
    lack. ``ready_filter`` is the condition a ready patch meets."""

    total: int
    ready: int
    lacks: list[Lack]
    ready_filter: Q = field(default_factory=Q, repr=False)

    @property
    def missing(self) -> int:
        return self.total - self.ready

    def sentences(self) -> list[tuple[Lack, str]]:
        """Each lack with its sentence ("19 of 24 patches have no golden rubric (…)")."""
        return [(lack, lack.sentence(self.total)) for lack in self.lacks]

    def summary(self) -> str:
        """Every lack, one sentence each, joined."""
        return "; ".join(sentence for _, sentence in self.sentences())


def _rubric_condition(context: str, revision: RubricRevision | None) -> Q | None:
    """What a patch meets when the context's rubric exists for it (None: it needs none)."""
    if context == Context.GOLDEN:
        golden = Rubric.objects.filter(bug=OuterRef("bug"), golden_revision__isnull=False)
        return Q(Exists(golden))
    if context in (Context.DRAFT, Context.FREE_FORM):
        variant = Rubric.Variant.TEMPLATED if context == Context.DRAFT else Rubric.Variant.FREE_FORM
        drafts = RubricRevision.objects.filter(
            rubric__bug=OuterRef("bug"), rubric__variant=variant, number=0
        )
        return Q(Exists(drafts))
    if context == Context.REVISION and revision is not None:
        return Q(bug_id=revision.rubric.bug_id)
    return None


def run_preflight(
    *,
    dataset: Dataset,
    strategies: Iterable[str],
    context: str,
    patch_ids: Iterable[int] | None = None,
    rubric_revision: RubricRevision | None = None,
) -> Preflight:
    """How many of the patches (default: every patch of ``dataset``) have what the team needs
    in ``context``: the context's rubric for the members that read one (golden, draft,
    free-form; the reference fix in the reference context), the reference fix for those that
    compare with it. One query for the counts, and one per lack for a few examples."""
    team = [get_strategy(name) for name in strategies]
    patches = dataset.patches.all()
    if patch_ids is not None:
        patches = patches.filter(pk__in=list(patch_ids))
    readers = [strategy.name for strategy in team if strategy.uses_rubric]
    comparers = [strategy.name for strategy in team if strategy.uses_reference]
    has_reference = ~Q(bug__reference_patch="")
    needs: list[tuple[tuple[str, str], Q, list[str], str]] = []
    rubric = _rubric_condition(context, rubric_revision) if readers else None
    if rubric is not None:
        kind = Context(context)
        needs.append((LACKS_RUBRIC[kind], rubric, readers, LACK_HINTS[kind]))
    reference_members = comparers + (readers if context == Context.REFERENCE else [])
    if reference_members:
        hint = LACK_HINTS[Context.REFERENCE]
        needs.append((LACKS_REFERENCE, has_reference, reference_members, hint))
    ready = Q()
    for _, condition, _, _ in needs:
        ready &= condition
    counts = patches.aggregate(
        total=Count("pk"),
        ready=Count("pk", filter=ready) if needs else Count("pk"),
        **{f"lack_{n}": Count("pk", filter=~need[1]) for n, need in enumerate(needs)},
    )
    lacks = []
    for n, (what, condition, members, hint) in enumerate(needs):
        count = counts[f"lack_{n}"]
        if count:
            examples = patches.filter(~condition).order_by("sort_key").values_list("key", flat=True)
            lacks.append(Lack(what, count, members, list(examples[:EXAMPLES_SHOWN]), hint))
    return Preflight(counts["total"], counts["ready"], lacks, ready)
