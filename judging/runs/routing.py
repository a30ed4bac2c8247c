"""Sending the verdicts a run is least sure of to humans (paper 004 §8).

``routing_plan`` picks, from a finished run, the verdicts its ``uncertainty`` ordering puts
first, up to a budget (a number of patches or a share of the run's verdicts), leaving out
the patches humans have already settled (they have a consensus under the dataset's rule);
it says how long the labels should take, from this dataset's earlier labels. ``route``
makes the plan an ordinary campaign (blind, as every campaign is) linked to the run.
"""

import dataclasses
import math
import statistics
from collections.abc import Sequence

from django.contrib.auth.models import User
from django.db import transaction

from judging.annotations.services import campaign_create
from judging.consensus.rules import dataset_consensus
from judging.models import Annotation, Campaign, JudgingRun
from judging.runs.uncertainty import (
    DEFAULT_SIGNAL,
    Uncertainty,
    run_uncertainties,
    uncertainty_order,
)

# Without enough timed labels on the dataset, a label is assumed to take this long.
DEFAULT_SECONDS_PER_LABEL = 120.0
# The timed labels a median needs to replace the default: two quick clicks are no estimate.
MIN_TIMED_LABELS = 10

NOT_FINISHED = "run {run} is {status}: only a finished run's verdicts can be routed"
BAD_BUDGET = "give a budget of at least one patch, or a share above 0% and at most 100%"
NOTHING_TO_ROUTE = "run {run} has no verdict left to route: every judged patch has a consensus"
# The name of a routed campaign when the lead gives none, at every door.
ROUTED_NAME = "Uncertain verdicts of run {run}"


class RoutingError(ValueError):
    """The verdicts cannot be routed as asked; the message says why."""


@dataclasses.dataclass(frozen=True)
class RoutingPlan:
    run: JudgingRun
    signal: str
    patches: list[Uncertainty]  # most uncertain first
    candidates: int  # verdicts without a consensus, routable
    settled: int  # verdicts left out: humans already have a consensus on them
    overlap: int
    seconds_per_label: float
    seconds_from_labels: int  # the timed labels the estimate comes from (0: the default)
    timed_labels: int = 0  # the timed labels on the dataset (fewer than MIN: the default)
    min_timed_labels: int = MIN_TIMED_LABELS

    @property
    def labels(self) -> int:
        return len(self.patches) * self.overlap

    @property
    def expected_seconds(self) -> float:
        return self.labels * self.seconds_per_label

    @property
    def expected_minutes(self) -> int:
        """The expected time in whole minutes (0: under half a minute)."""
        return round(self.expected_seconds / 60)


def seconds_per_label(run: JudgingRun) -> tuple[float, int, int]:
    """The median time of a label given in the app on the run's dataset, how many labels it
    rests on, and how many are timed; with fewer than ``MIN_TIMED_LABELS`` timed, the
    default (resting on 0 labels)."""
    timed = list(
        Annotation.objects.filter(patch__dataset_id=run.dataset_id, seconds_spent__gt=0)
        .order_by()  # a median: not the default order, which sorts them by dataset and patch
        .values_list("seconds_spent", flat=True)
    )
    if len(timed) < MIN_TIMED_LABELS:
        return DEFAULT_SECONDS_PER_LABEL, 0, len(timed)
    return float(statistics.median(timed)), len(timed), len(timed)


def routing_plan(
    *,
    run: JudgingRun,
    budget: int | None = None,
    share: float | None = None,
    signal: str = DEFAULT_SIGNAL,
    overlap: int = 2,
) -> RoutingPlan:
    """The ``budget`` most uncertain verdicts of ``run`` (or that ``share`` of its
    routable ones, rounded up) that humans have not settled yet."""
    if run.status != JudgingRun.Status.FINISHED:
        raise RoutingError(NOT_FINISHED.format(run=run.pk, status=run.get_status_display().lower()))
    if (budget is None) == (share is None):
        raise RoutingError(BAD_BUDGET)
    if (budget is not None and budget < 1) or (share is not None and not 0 < share <= 1):
        raise RoutingError(BAD_BUDGET)
    try:
        ordered = uncertainty_order(run_uncertainties(run), signal)
    except ValueError as error:
        raise RoutingError(str(error)) from None
    settled = {
        patch_id
        for patch_id, state in dataset_consensus(
            run.dataset, patch_ids=[item.patch_id for item in ordered]
        ).items()
        if state.consensus
    }
    open_ = [item for item in ordered if item.patch_id not in settled]
    if not open_:
        raise RoutingError(NOTHING_TO_ROUTE.format(run=run.pk))
    count = budget if budget is not None else math.ceil((share or 0) * len(open_))
    seconds, used, timed = seconds_per_label(run)
    return RoutingPlan(
        run=run,
        signal=signal,
        patches=open_[:count],
        candidates=len(open_),
        settled=len(ordered) - len(open_),
        overlap=overlap,
        seconds_per_label=seconds,
        seconds_from_labels=used,
        timed_labels=timed,
    )


@transaction.atomic
def route(
    *, plan: RoutingPlan, annotators: Sequence[User], name: str, actor: User | None
) -> Campaign:
    """A campaign of the plan's patches for ``annotators``, linked to the run; named
    ``ROUTED_NAME`` when ``name`` is blank."""
    return campaign_create(
        dataset=plan.run.dataset,
        name=name.strip() or ROUTED_NAME.format(run=plan.run.pk),
        purpose=Campaign.Purpose.BENCHMARK,
        selection=Campaign.Selection.FILTER,
        filters={"patches": [item.patch_key for item in plan.patches]},
        annotators=annotators,
        overlap=plan.overlap,
        show_rubric=True,
        routed_from=plan.run,
        actor=actor,
    )
