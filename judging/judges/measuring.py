"""Measuring a judge test once its runs end (what ``judge_test_advance_task`` calls; imports
no task): the ladder run's ordering from the evaluator tester, and each labelled-patch run's
agreement with the humans' consensus from the agreement report. See ``testing`` for the whole.
"""

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from judging.models import JudgeTest, JudgeVersion, JudgingRun
from sejury_web.llm import Provider

if TYPE_CHECKING:
    from judging.refine.scores import Estimate
    from judging.reports.figures import Figure

LADDER, JUDGE, TEAM = "ladder", "judge", "team"
LABELLED_METRICS = {"accuracy": "Accuracy", "kappa": "Cohen's κ", "ac1": "Gwet's AC1", "mcc": "MCC"}
POLL_SECONDS = 3.0
RUN_GONE = "run {run} ({role}) was deleted before it was measured"
RUN_CANCELLED = "run {run} ({role}) was cancelled before it ended"

# Where the judge's κ interval lies against the current team's.
ABOVE, OVERLAPS, BELOW = "above", "overlaps", "below"


def _estimate(estimate: "Estimate") -> dict[str, float | None]:
    return {"value": estimate.value, "lo": estimate.lo, "hi": estimate.hi}


def _figure(figure: "Figure") -> dict[str, Any]:
    return {"value": figure.value, "lo": figure.ci_lo, "hi": figure.ci_hi, "n": figure.n}


def kappa_position(judge: dict[str, Any] | None, team: dict[str, Any] | None) -> str | None:
    """Whether the judge's κ interval lies above, overlaps or lies below the team's (None
    when either has no interval)."""
    if not judge or not team:
        return None
    if None in (judge.get("lo"), judge.get("hi"), team.get("lo"), team.get("hi")):
        return None
    if judge["lo"] > team["hi"]:
        return ABOVE
    if judge["hi"] < team["lo"]:
        return BELOW
    return OVERLAPS


def measure(test: JudgeTest, runs: dict[str, JudgingRun]) -> dict[str, Any]:
    """The test's figures from its ended runs: the ladder run's ordering, and every labelled
    run's agreement with the consensus on B_full, the report's baselines beside them."""
    # Here, not at the top: a worker imports this module at its start (its task), and the
    # report's numpy and scipy only when it measures (tests/sejury_web/test_worker.py).
    from judging.refine.selectors import refine_ranking
    from judging.reports.humans import B_FULL
    from judging.reports.judges import BASELINES
    from judging.reports.selectors import JUDGES, agreement_report

    ladder_run = runs[LADDER]
    (ranked,) = refine_ranking(ladder_run.dataset, runs=[ladder_run], members=False)
    ordering = ranked.ordering
    ladder = {
        "run": ladder_run.pk,
        "dataset": ladder_run.dataset.name,
        "bugs": ordering.n_bugs,
        "judged": ranked.evaluator.judged,
        "failed": ranked.evaluator.failed,
        "alignment": _estimate(ordering.alignment),
        "alignment_strict": _estimate(ordering.alignment_strict),
        "tau_b": _estimate(ordering.tau_b),
    }
    roles = [role for role in runs if role != LADDER]
    report = agreement_report(test.dataset, runs=[runs[role] for role in roles], sections=[JUDGES])
    assert report.judges is not None  # asked for
    columns: dict[str, Any] = {}
    baselines: dict[str, Any] = {}
    for role, column in zip(roles, report.judges, strict=True):
        full = column.benchmarks[B_FULL]
        columns[role] = {
            "run": column.run.run.pk,
            "team": list(column.run.run.strategies),
            "n": full.n,
            "left_out": column.without_verdict,
            **{key: _figure(full.metrics[key]) for key in LABELLED_METRICS},
        }
        if role == JUDGE:
            baselines = {
                name: {key: _figure(full.baselines[name][key]) for key in LABELLED_METRICS}
                for name in BASELINES
                if name in full.baselines
            }
    judge_kappa = columns.get(JUDGE, {}).get("kappa")
    team_kappa = columns.get(TEAM, {}).get("kappa")
    labelled = {
        "columns": columns,
        "baselines": baselines,
        "level": report.sampling.level,
        "kappa_vs_team": kappa_position(judge_kappa, team_kappa),
    }
    return {**test.figures, "ladder": ladder, "labelled": labelled, "offline": _offline(runs)}


def _offline(runs: dict[str, JudgingRun]) -> bool:
    return runs[JUDGE].provider == Provider.OFFLINE


def _fail(test_id: int, error: str) -> None:
    JudgeTest.objects.filter(pk=test_id, status=JudgeTest.Status.RUNNING).update(
        status=JudgeTest.Status.FAILED, error=error[:2000], measured_at=timezone.now()
    )


def judge_test_fail(*, test_id: int, error: str) -> None:
    """The test fails, saying why (what the task's failure function calls)."""
    _fail(test_id, error)


def judge_test_advance(*, test_id: int) -> float | None:
    """Measure the test if its runs have ended; else the seconds until looking again. A
    test no longer running (measured, failed) is left as it is."""
    test = JudgeTest.objects.select_related("version__judge", "dataset").filter(pk=test_id).first()
    if test is None or test.status != JudgeTest.Status.RUNNING:
        return None
    found = JudgingRun.objects.select_related("dataset").in_bulk(test.runs.values())
    runs: dict[str, JudgingRun] = {}
    for role, run_id in test.runs.items():  # a run that will never end fails the test now
        run = found.get(run_id)
        if run is None:
            _fail(test.pk, RUN_GONE.format(run=run_id, role=role))
            return None
        if run.status == JudgingRun.Status.CANCELLED:
            _fail(test.pk, RUN_CANCELLED.format(run=run_id, role=role))
            return None
        runs[role] = run
    if any(run.is_active for run in runs.values()):
        return POLL_SECONDS
    figures = measure(test, runs)
    with transaction.atomic():
        updated = JudgeTest.objects.filter(pk=test.pk, status=JudgeTest.Status.RUNNING).update(
            status=JudgeTest.Status.MEASURED, figures=figures, measured_at=timezone.now()
        )
        if updated:
            JudgeVersion.objects.filter(
                pk=test.version_id, status=JudgeVersion.Status.UNTESTED
            ).update(status=JudgeVersion.Status.TESTED)
    return None
