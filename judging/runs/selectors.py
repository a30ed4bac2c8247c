"""Reads of judging runs: progress and totals (the run page, ``judge --wait``, exports).

What a run spent counts the results that re-judging replaced, too.
"""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from judging.models import BugStep, JudgingRun, PatchJudgment, ReplacedResult, StrategyResult


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

    @property
    def finished(self) -> int:
        return self.done + self.failed

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 100


def _spent(queryset: QuerySet) -> dict[str, Any]:
    return queryset.aggregate(
        calls=Sum("provider_calls"),
        input_tokens=Sum("input_tokens"),
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
    )
    spent = [
        _spent(StrategyResult.objects.filter(judgment__run=run)),
        _spent(BugStep.objects.filter(run=run)),
    ]
    if run.generation:  # re-judged results were spent too; a run never resumed has none
        spent.append(_spent(ReplacedResult.objects.filter(judgment__run=run)))
    unpriced = any(part["unpriced"] for part in spent)
    cost = None if unpriced else sum((part["cost"] or Decimal(0) for part in spent), Decimal(0))
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
    )


def run_get(*, run_id: int) -> JudgingRun:
    return JudgingRun.objects.select_related("dataset", "created_by", "rubric_revision").get(
        pk=run_id
    )
