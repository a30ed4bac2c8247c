"""The *Test this judge* card's reads (a written judge's page, leads): a version's newest test
(running, failed or measured) with what it measured as report figures, the datasets it may be
tested on, and whether the version may be trusted now (``services.judge_version_status_set``
decides; the card only offers what it would accept)."""

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from judging.models import JudgeTest, JudgeVersion, JudgingRun
from judging.reports.figures import Figure
from rubrics.ladders.services import DERIVATION
from rubrics.models import Dataset

from .measuring import ABOVE, BELOW, JUDGE, LABELLED_METRICS, OVERLAPS, TEAM
from .testing import BASELINE_NAMES

KAPPA_SENTENCE = {
    ABOVE: "Its κ interval lies above the current team’s.",
    OVERLAPS: (
        "Its κ interval overlaps the current team’s: no better or worse, as far as these"
        " patches tell."
    ),
    BELOW: "Its κ interval lies below the current team’s.",
}
BASELINE_TITLES = {
    "bleu": "BLEU baseline",
    "chrf": "ChrF baseline",
    "edit": "Edit-similarity baseline",
    "majority": "Always the majority label",
    "random": "Random at the VALID rate",
}
RECENT = 5


@dataclass(frozen=True)
class FigureRow:
    """A row of the labelled-patch table: who judged, and each metric as a report figure."""

    key: str
    title: str
    team: str
    figures: list[Figure]
    n: int | None = None
    left_out: int = 0


@dataclass(frozen=True)
class TestCard:
    version: JudgeVersion
    test: JudgeTest | None
    runs_total: int = 0
    runs_ended: int = 0
    ladder: dict[str, Any] = field(default_factory=dict)
    ladder_figures: list[tuple[str, Figure]] = field(default_factory=list)
    rows: list[FigureRow] = field(default_factory=list)
    kappa_sentence: str = ""
    team_source: str = ""  # where the current team came from: a calibration, a run, the default
    datasets: list[Dataset] = field(default_factory=list)
    earlier: list[JudgeTest] = field(default_factory=list)
    can_trust: bool = False
    metrics: list[str] = field(default_factory=lambda: list(LABELLED_METRICS.values()))

    @property
    def running(self) -> bool:
        return self.test is not None and self.test.status == JudgeTest.Status.RUNNING


def _figure(data: dict[str, Any] | None, *, estimated: bool = True) -> Figure:
    data = data or {}
    lo, hi = data.get("lo"), data.get("hi")
    ci = (lo, hi) if lo is not None and hi is not None else None
    return Figure(data.get("value"), int(data.get("n") or 0), ci, estimated=estimated)


def _row(key: str, title: str, column: dict[str, Any]) -> FigureRow:
    return FigureRow(
        key=key,
        title=title,
        team=",".join(column.get("team", [])),
        figures=[_figure(column.get(metric)) for metric in LABELLED_METRICS],
        n=column.get("n"),
        left_out=sum((column.get("left_out") or {}).values()),
    )


def testable_datasets() -> QuerySet[Dataset]:
    """The datasets a judge may be tested on (not ladders themselves), each with
    ``has_ladders``; those with ladders first."""
    ladders = Dataset.objects.filter(derived_from=OuterRef("pk"), derivation=DERIVATION)
    return (
        Dataset.objects.filter(derived_from__isnull=True)
        .annotate(has_ladders=Exists(ladders))
        .order_by("-has_ladders", "name")
    )


def testable_dataset(slug: str) -> Dataset | None:
    """The dataset of that slug, if a judge may be tested on it."""
    return testable_datasets().filter(slug=slug).first()


def test_card(version: JudgeVersion) -> TestCard:
    """The card of ``version``: its newest test and what it measured, the datasets to test it
    on, its earlier tests, and whether a lead may trust it now."""
    tests = list(version.tests.select_related("dataset", "created_by")[: RECENT + 1])
    newest = tests[0] if tests else None
    measured = version.tests.filter(status=JudgeTest.Status.MEASURED).exists()
    common: dict[str, Any] = {
        "version": version,
        "test": newest,
        "datasets": list(testable_datasets()),
        "earlier": tests[1:],
        "can_trust": measured and version.status == JudgeVersion.Status.TESTED,
    }
    if newest is None:
        return TestCard(**common)
    if newest.status == JudgeTest.Status.RUNNING:
        statuses = JudgingRun.objects.filter(pk__in=newest.runs.values()).values_list(
            "status", flat=True
        )
        active = (JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING)
        ended = sum(1 for status in statuses if status not in active)
        return TestCard(**common, runs_total=len(newest.runs), runs_ended=ended)
    if newest.status != JudgeTest.Status.MEASURED:
        return TestCard(**common)
    figures = newest.figures
    ladder = figures.get("ladder", {})
    ladder_figures = [
        ("Ordering alignment (a tie counts half)", _figure(ladder.get("alignment"))),
        ("Ordering alignment (strict)", _figure(ladder.get("alignment_strict"))),
        ("Kendall’s τ-b", _figure(ladder.get("tau_b"))),
    ]
    ladder_figures = [
        (title, Figure(f.value, int(ladder.get("bugs") or 0), f.ci)) for title, f in ladder_figures
    ]
    labelled = figures.get("labelled", {})
    columns = labelled.get("columns", {})
    rows = []
    if JUDGE in columns:
        rows.append(_row(JUDGE, version.label, columns[JUDGE]))
    if TEAM in columns:
        rows.append(_row(TEAM, "Current team", columns[TEAM]))
    for name in BASELINE_NAMES:
        if name in columns:
            rows.append(_row(name, BASELINE_TITLES[name], columns[name]))
    for name, values in labelled.get("baselines", {}).items():
        expected = {metric: {**values.get(metric, {}), "lo": None, "hi": None} for metric in values}
        rows.append(
            FigureRow(
                key=name,
                title=BASELINE_TITLES.get(name, name),
                team="expected, no judge",
                figures=[
                    _figure(expected.get(metric), estimated=True) for metric in LABELLED_METRICS
                ],
            )
        )
    return TestCard(
        **common,
        ladder=ladder,
        ladder_figures=ladder_figures,
        rows=rows,
        kappa_sentence=KAPPA_SENTENCE.get(labelled.get("kappa_vs_team") or "", ""),
        team_source=figures.get("team_source", ""),
    )
