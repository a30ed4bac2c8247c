"""The agreement report's charts, drawn from the same figures as its tables and JSON.

Each function takes a section of an ``AgreementReport`` and returns SVG (``charts``), with
a title and a text alternative that states the numbers the chart shows.
"""

import dataclasses
import math
from collections.abc import Sequence

from django.utils.safestring import SafeString

from judging.reports.charts import (
    BinEstimate,
    CurvePoint,
    Estimate,
    Series,
    confusion_heatmap,
    curve_chart,
    interval_chart,
    reliability_diagram,
)
from judging.reports.figures import Figure
from judging.reports.humans import B_CLEAR, B_FULL, HumanSection
from judging.reports.judges import BENCHMARKS, Breakdown, HumanJudgeAgreement, JudgeColumn
from judging.reports.routing_curve import KAPPA_TARGET, RoutingCurve
from sejury_web.svg import MUTED

KAPPA_AXIS = (-0.2, 1.0)  # κ and AC1 below −0.2 are drawn at the edge, as arrowheads


def _estimate(label: str, figure: Figure, group: str = "") -> Estimate:
    return Estimate(label=label, value=figure.value, ci=figure.ci, n=figure.n, group=group)


def _spoken(estimate: Estimate, *, percent: bool = False) -> str:
    """An estimate in words for a text alternative: "name 0.41 (0.27 to 0.55, n = 120)"."""
    if estimate.value is None:
        return f"{estimate.label} undefined (n = {estimate.n})"

    def number(value: float) -> str:
        return f"{value:.1%}" if percent else f"{value:.2f}"

    interval = f"{number(estimate.ci[0])} to {number(estimate.ci[1])}, " if estimate.ci else ""
    return f"{estimate.label} {number(estimate.value)} ({interval}n = {estimate.n})"


def _described(prefix: str, estimates: Sequence[Estimate], *, percent: bool = False) -> str:
    return prefix + "; ".join(_spoken(e, percent=percent) for e in estimates) + "."


def rq2_chart(agreements: Sequence[HumanJudgeAgreement]) -> SafeString | None:
    """Paper 000 RQ2: each judge's mean κ and AC1 with the annotators, beside the annotator
    pairs' on the same patches (once when the runs judged the same patches)."""
    if not agreements:
        return None
    estimates = []
    for agreement in agreements:
        name = f"Run #{agreement.run.run.pk}"
        estimates.append(_estimate(f"{name}: κ", agreement.judge_mean, "judge"))
        estimates.append(_estimate(f"{name}: AC1", agreement.judge_mean_ac1, "judge"))
    # The annotator pairs on each run's patches: once when the runs judged the same ones.
    distinct = {(a.humans.mean, a.humans.mean_ac1): a for a in reversed(agreements)}
    for agreement in reversed(distinct.values()):
        where = "" if len(distinct) == 1 else f" (#{agreement.run.run.pk})"
        estimates.append(_estimate(f"Annotator pairs: κ{where}", agreement.humans.mean, "humans"))
        estimates.append(
            _estimate(f"Annotator pairs: AC1{where}", agreement.humans.mean_ac1, "humans")
        )
    return interval_chart(
        estimates,
        lo=KAPPA_AXIS[0],
        hi=KAPPA_AXIS[1],
        x_label="Mean agreement: a judge with each annotator, or two annotators",
        reference=0.0,
        title="The judge beside the annotators (paper 000, RQ2)",
        desc=_described(
            "Mean Cohen's κ and Gwet's AC1 of each judge with each annotator, and of each pair"
            " of annotators, with 95% intervals: ",
            estimates,
        ),
        chart_id="chart-rq2",
    )


def annotator_chart(humans: HumanSection, names: dict[int, str]) -> SafeString | None:
    """Each annotator's κ against the consensus on B_full, or, where consensus is unanimous
    by construction, their mean κ with the other annotators."""
    if humans.unanimous_only:
        estimates = [
            _estimate(names[pk], humans.pairwise[pk], "humans")
            for pk in humans.annotators
            if pk in humans.pairwise
        ]
        title = "Each annotator's mean κ with the other annotators"
        what = "Mean Cohen's κ of each annotator with every other annotator, with 95% intervals: "
    else:
        rows = {row.annotator_id: row for row in humans.column(B_FULL).annotators}
        estimates = [
            _estimate(names[pk], rows[pk].kappa, "humans") for pk in humans.annotators if pk in rows
        ]
        title = "Each annotator's κ against the consensus (B_full)"
        what = "Cohen's κ of each annotator against the consensus on B_full, with 95% intervals: "
    if not estimates:
        return None
    # Best first: a lead looks for the annotators at the bottom.
    estimates.sort(key=lambda e: (e.value is None, -(e.value or 0.0), e.label))
    return interval_chart(
        estimates,
        lo=KAPPA_AXIS[0],
        hi=KAPPA_AXIS[1],
        x_label="Cohen's κ",
        reference=0.0,
        title=title,
        desc=_described(what, estimates),
        chart_id="chart-annotators",
    )


def confusion_charts(column: JudgeColumn) -> list[tuple[str, SafeString]]:
    """B_full and B_clear as 2 × 2 heatmaps (one when they are the same patches)."""
    charts = []
    full, clear = column.benchmarks[B_FULL], column.benchmarks[B_CLEAR]
    same = dataclasses.replace(clear, name=B_FULL) == full
    for name, result in [(B_FULL, full)] if same else [(B_FULL, full), (B_CLEAR, clear)]:
        c = result.confusion
        title = f"Run #{column.run.run.pk} on {BENCHMARKS[name]}"
        desc = (
            f"Confusion matrix of run #{column.run.run.pk} against the consensus on"
            f" {BENCHMARKS[name]} ({result.n} patches): the judge said VALID where the"
            f" consensus is VALID {c['tp']} times and INVALID {c['fp']} times; it said INVALID"
            f" where the consensus is VALID {c['fn']} times and INVALID {c['tn']} times."
        )
        chart_id = f"chart-confusion-{column.run.run.pk}-{name}"
        charts.append(
            (
                BENCHMARKS[name],
                confusion_heatmap(
                    c["tp"], c["fp"], c["fn"], c["tn"], title=title, desc=desc, chart_id=chart_id
                ),
            )
        )
    return charts


def reliability_chart(column: JudgeColumn) -> SafeString | None:
    """The run's team score (binned) against the share of its patches humans found VALID."""
    if not column.reliability.bins:
        return None
    run = column.run.run
    bins = [
        BinEstimate(
            lo=b.lo,
            hi=b.hi,
            n=b.n,
            valid_share=b.valid_share.value,
            ci=b.valid_share.ci,
            mean_score=b.mean_score,
        )
        for b in column.reliability.bins
    ]
    spoken = [
        f"{b.lo:g}–{b.hi:g}: {b.n} patches"
        + (f", {b.valid_share.value:.0%} VALID" if b.valid_share.value is not None else "")
        for b in column.reliability.bins
        if b.n
    ]
    return reliability_diagram(
        bins,
        scale_lo=run.scale_lo,
        scale_hi=run.scale_hi,
        threshold=run.threshold,
        title=f"Run #{run.pk}: team score against the consensus",
        desc=(
            f"Reliability diagram of run #{run.pk} on B_full: its team scores in"
            f" {len(bins)} equal bins (threshold {run.threshold:g}), each against the share of"
            f" its patches the consensus calls VALID. " + "; ".join(spoken) + "."
        ),
        chart_id=f"chart-reliability-{run.pk}",
    )


def valid_rate_chart(breakdown: Breakdown) -> SafeString | None:
    """The consensus' VALID rate per group (patch source), with intervals."""
    if not breakdown.rows:
        return None
    estimates = [_estimate(row.group, row.valid_rate) for row in breakdown.rows]
    return interval_chart(
        estimates,
        lo=0.0,
        hi=1.0,
        x_label="Share of patches the consensus calls VALID",
        percent=True,
        title=f"VALID rate by {breakdown.title.lower()}",
        desc=_described(
            f"The consensus' VALID rate per {breakdown.title.lower()}, with 95% intervals: ",
            estimates,
            percent=True,
        ),
        chart_id=f"chart-valid-rate-{breakdown.key}",
    )


def routing_chart(curve: RoutingCurve) -> SafeString | None:
    """κ of the hybrid labels against the share routed to humans: by uncertainty (with its
    interval) and at random (expected)."""
    if not curve.patches:
        return None
    by_uncertainty = [CurvePoint(p.share, p.kappa.value, p.kappa.ci) for p in curve.points]
    at_random = [CurvePoint(p.share, p.random_kappa) for p in curve.points]
    values = [p.y for p in (*by_uncertainty, *at_random) if p.y is not None]
    lowest = min([0.0, *values, *(p.ci[0] for p in by_uncertainty if p.ci)])
    run = curve.run.run.pk
    reached, random_reached = curve.share_reaching()

    def share(value: float | None) -> str:
        return "never" if value is None else f"at {value:.0%}"

    return curve_chart(
        [
            Series("Least certain first", by_uncertainty),
            Series("At random (expected)", at_random, dashed=True, colour=MUTED),
        ],
        lo=math.floor(lowest * 5) / 5,
        hi=1.0,
        x_label="Share of the run's verdicts sent to humans",
        y_label="Cohen's κ against the consensus",
        title=f"Run #{run}: what routing to humans buys",
        desc=(
            f"Cohen's κ of run #{run}'s verdicts with the least certain ones replaced by the"
            f" human consensus, on its {curve.patches} judged patches with a consensus, from"
            f" 0% to 100% routed. κ reaches {KAPPA_TARGET} {share(reached)} routing the least"
            f" certain first, {share(random_reached)} routing at random."
        ),
        chart_id=f"chart-routing-{run}",
    )
