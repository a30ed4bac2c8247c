"""The agreement report pages, for leads: the list of datasets, and one dataset's report
(paper 004 Tables 5–6, paper 000 RQ2) on its patches or one campaign's, for the runs the
lead picks; the same data as JSON or CSV (``?format=json|csv``). The page is a shell whose
four sections load on their own (``?section=…``), each with its charts.

The tables are shaped here (rows of cells the template loops over); every number comes
from ``reports.agreement_report``.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from judging.agreement import SMALL_SAMPLE
from judging.annotations.selectors import dataset_campaigns
from judging.reports import report_charts
from judging.reports.corrected_rate import YOUDEN_MIN
from judging.reports.export import HUMAN_ROWS, report_csv, report_dict
from judging.reports.figures import Figure, Sampling, count
from judging.reports.humans import B_FULL, PairAgreement
from judging.reports.judges import BASELINES, BENCHMARKS, METRICS, Breakdown
from judging.reports.routing_curve import KAPPA_TARGET
from judging.reports.selectors import (
    BREAKDOWN,
    HUMAN_JUDGE,
    HUMANS,
    JUDGES,
    SECTIONS,
    AgreementReport,
    ReportError,
    agreement_report,
    report_campaign,
    report_runs,
    report_shell,
    run_choices,
)
from judging.reports.valid_at_k import valid_at_k_chart
from judging.templatetags.report_figures import report_figure
from rubrics import selectors as rubric_selectors
from rubrics.models import Dataset
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role, role_required

FORMATS = ("json", "csv")
UNKNOWN_FORMAT = "unknown format {format!r}: use json or csv"
UNKNOWN_SECTION = "unknown section {section!r}: use humans, judges, human_judge or breakdowns"
BY_CONSTRUCTION = (
    "1 by construction while every consensus is unanimous: see each annotator's mean κ with"
    " the others below"
)
# The shell's links name its runs; this says they were the default ones, not the lead's pick.
BY_DEFAULT = "default_runs"
# The form sends this field, so that no run ticked means "no runs", not "the default runs".
RUNS_CHOSEN = "runs"


@dataclasses.dataclass(frozen=True)
class Row:
    """A table row: a figure's name and its cells as (column key, figure or None)."""

    key: str
    label: str
    cells: Sequence[tuple[str, Figure | None]]
    detail: str = ""


@require_GET
@role_required(Role.LEAD)
def report_index(request: AuthenticatedHtmxRequest) -> HttpResponse:
    datasets = rubric_selectors.dataset_list()
    return render(request, "judging/reports/report_index.html", {"datasets": datasets})


def _fleiss_detail(report: AgreementReport) -> str:
    """Which patches Fleiss' κ used in each column: it needs equal numbers of labels."""
    assert report.humans is not None
    parts = [
        f"{column.title}: {column.fleiss.n} with {column.fleiss_labels}"
        for column in report.humans.columns
        if column.fleiss_labels
    ]
    return f"on the patches with the most common number of decisive labels ({'; '.join(parts)})"


def _human_rows(report: AgreementReport) -> list[Row]:
    assert report.humans is not None
    columns = report.humans.columns
    details = {"fleiss": _fleiss_detail(report)}
    if report.humans.unanimous_only:
        details["weighted_kappa"] = BY_CONSTRUCTION
    rows = [
        Row(
            key,
            label,
            [(column.name, getattr(column, key)) for column in columns],
            detail=details.get(key, ""),
        )
        for key, label in HUMAN_ROWS
    ]
    for label in columns[0].labels:
        cells = [(column.name, column.labels[label]) for column in columns]
        rows.append(Row(f"labels_{label.lower()}", f"Labels: {label}", cells))
    return rows


def _annotator_rows(report: AgreementReport) -> list[dict[str, Any]]:
    assert report.humans is not None
    pairwise = report.humans.pairwise
    by_column = {
        column.name: {row.annotator_id: row for row in column.annotators}
        for column in report.humans.columns
    }
    return [
        {
            "name": name,
            "pairwise": pairwise.get(pk),
            **{column: rows.get(pk) for column, rows in by_column.items()},
        }
        for pk, name in report.annotators.items()
    ]


def _matrix(pairs: PairAgreement, names: dict[int, str]) -> list[tuple[str, SafeString]]:
    """The pairwise κ as an annotator × annotator matrix, the diagonal "self": per annotator,
    their name and their row's cells, formatted here in one pass, each pair once (37
    annotators are 1,369 cells: a template tag each was half of the section's time)."""
    cells = {
        pair: f'<td class="num">{report_figure(figure)}</td>'
        for pair, figure in pairs.kappas.items()
    }
    blank = f'<td class="num">{report_figure(None)}</td>'
    diagonal = f'<td class="num">{report_figure("self")}</td>'
    return [
        (
            name,
            mark_safe(  # noqa: S308 - report_figure's numbers only
                "".join(
                    diagonal if a == b else cells.get((a, b) if a < b else (b, a), blank)
                    for b in names
                )
            ),
        )
        for a, name in names.items()
    ]


def _judge_rows(report: AgreementReport) -> list[Row]:
    assert report.judges is not None
    return [
        Row(
            f"{metric}-{benchmark}",
            label,
            [
                (str(column.run.run.pk), column.benchmarks[benchmark].metrics[metric])
                for column in report.judges
            ],
            detail=title,
        )
        for metric, label in METRICS.items()
        for benchmark, title in BENCHMARKS.items()
    ]


def _human_judge_rows(report: AgreementReport) -> list[Row]:
    assert report.human_judge is not None
    rows = []
    for pk, name in report.annotators.items():
        cells = [
            (str(agreement.run.run.pk), agreement.judge_pairs.get(pk))
            for agreement in report.human_judge
        ]
        if any(figure for _, figure in cells):
            rows.append(Row(f"annotator-{pk}", name, cells))
    return rows


def _breakdown_tables(report: AgreementReport) -> list[tuple[Breakdown, list[Any]]]:
    """Each breakdown with one table per run: a row per group, the run's B_full figures."""
    assert report.breakdowns is not None
    tables = []
    for breakdown in report.breakdowns:
        run_tables = []
        for run in report.runs:
            rows = []
            for row in breakdown.rows:
                result = row.judges[run.run.pk]
                cells = [("patches", count(result.n))]
                cells += [(key, result.metrics[key]) for key in METRICS]
                rows.append(Row(row.group, row.group, cells))
            run_tables.append((run, rows))
        tables.append((breakdown, run_tables))
    return tables


def _named_pairs(pairs: PairAgreement, names: dict[int, str]) -> list[tuple[str, str, Figure]]:
    return [(names[a], names[b], figure) for (a, b), figure in pairs.kappas.items()]


def _pinned_query(
    request: AuthenticatedHtmxRequest, runs: list[int], by_default: bool, **replace: str
) -> str:
    """The page's own query with its runs named (the default ones too, so that a run
    finishing meanwhile cannot change what a section or an export shows) and
    ``replace``'s parameters set: each section and export is the same report."""
    params = [
        (key, value)
        for key, values in request.GET.lists()
        if key not in replace and key not in ("format", "section", "run", RUNS_CHOSEN, BY_DEFAULT)
        for value in values
    ]
    pinned = [(RUNS_CHOSEN, "1"), *(("run", str(pk)) for pk in runs)]
    if by_default:
        pinned.append((BY_DEFAULT, "1"))
    return "?" + urlencode([*params, *pinned, *replace.items()])


def _column_headings(report: AgreementReport) -> list[dict[str, Any]]:
    return (
        [
            {"column": column, "small": (column.patches.value or 0) < SMALL_SAMPLE}
            for column in report.humans.columns
        ]
        if report.humans
        else []
    )


def _humans_context(report: AgreementReport) -> dict[str, Any]:
    assert report.humans is not None
    return {
        "human_rows": _human_rows(report),
        "human_columns": _column_headings(report),
        "annotator_rows": _annotator_rows(report),
        "matrix": _matrix(report.humans.pairs, report.annotators),
        "annotator_chart": report_charts.annotator_chart(report.humans, report.annotators),
    }


def _baseline_groups(report: AgreementReport) -> list[tuple[str, list[Row]]]:
    """Each baseline with a row per metric: its expected value per run on B_full."""
    assert report.judges is not None
    return [
        (
            title,
            [
                Row(
                    f"{baseline}-{metric}",
                    label,
                    [
                        (
                            str(column.run.run.pk),
                            column.benchmarks[B_FULL].baselines.get(baseline, {}).get(metric),
                        )
                        for column in report.judges
                    ],
                )
                for metric, label in METRICS.items()
            ],
        )
        for baseline, title in BASELINES.items()
    ]


def _judges_context(report: AgreementReport) -> dict[str, Any]:
    assert report.judges is not None
    return {
        "judge_rows": _judge_rows(report),
        "judge_columns": [
            {"column": column, "small": column.benchmarks[B_FULL].n < SMALL_SAMPLE}
            for column in report.judges
        ],
        "prevalence_cells": [
            (str(column.run.run.pk), column.benchmarks[B_FULL].prevalence)
            for column in report.judges
        ],
        "baseline_groups": _baseline_groups(report),
        "routing": [
            (
                curve,
                report_charts.routing_chart(curve),
                [point for point in curve.points if round(point.share * 100) % 10 == 0],
                curve.share_reaching(),
            )
            for curve in report.routing or []
        ],
        "kappa_target": KAPPA_TARGET,
        "judge_charts": [
            (
                column,
                report_charts.confusion_charts(column),
                report_charts.reliability_chart(column),
            )
            for column in report.judges
        ],
    }


def _human_judge_context(report: AgreementReport) -> dict[str, Any]:
    assert report.human_judge is not None
    return {
        "human_judge_rows": _human_judge_rows(report),
        "human_judge_pairs": [
            (
                agreement,
                []
                if agreement.every_labelled_patch
                else _named_pairs(agreement.humans, report.annotators),
            )
            for agreement in report.human_judge
        ],
        "rq2_chart": report_charts.rq2_chart(report.human_judge),
    }


def _breakdowns_context(report: AgreementReport) -> dict[str, Any]:
    assert report.breakdowns is not None
    return {
        "breakdown_tables": _breakdown_tables(report),
        "valid_rate_charts": {
            breakdown.key: report_charts.valid_rate_chart(breakdown)
            for breakdown in report.breakdowns
        },
        "metric_labels": list(METRICS.values()),
        "valid_at_k": report.valid_at_k or [],
        "valid_at_k_chart": valid_at_k_chart(report.valid_at_k or []),
        "valid_at_k_run": report.valid_at_k_run,
        "corrected_valid_rate": report.corrected_valid_rate or [],
        "corrected_shared": next(iter(report.corrected_valid_rate or []), None),
        "youden_min": YOUDEN_MIN,
        "rejection_themes": report.rejection_themes,
    }


SECTION_CONTEXTS = {
    HUMANS: _humans_context,
    JUDGES: _judges_context,
    HUMAN_JUDGE: _human_judge_context,
    BREAKDOWN: _breakdowns_context,
}
SECTION_TITLES = {
    HUMANS: "Humans: agreement among annotators",
    JUDGES: "Judges against the consensus",
    HUMAN_JUDGE: "The judge beside the annotators",
    BREAKDOWN: "Breakdowns",
}


@require_GET
@role_required(Role.LEAD)
def report(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    """The report's page: a shell that renders at once (the scope form and the run picker)
    whose sections each load through htmx (``?section=…``); ``?format=json|csv`` is the
    whole report as a download."""
    dataset = rubric_selectors.dataset_get(slug=slug, counts=False)  # the page shows none
    export_format = request.GET.get("format", "")
    section = request.GET.get("section", "")
    if export_format and export_format not in FORMATS:
        return _bad_request(request, dataset, UNKNOWN_FORMAT.format(format=export_format))
    if section and section not in SECTIONS:
        return _bad_request(request, dataset, UNKNOWN_SECTION.format(section=section))
    try:
        campaign = report_campaign(dataset=dataset, campaign_id=request.GET.get("campaign"))
        asked = request.GET.getlist("run")
        runs = report_runs(dataset=dataset, run_ids=asked)
    except ReportError as error:
        return _bad_request(request, dataset, str(error))
    chosen = runs if asked or RUNS_CHOSEN in request.GET else None
    # The shell's default runs, pinned in the links it makes, are still the default ones.
    by_default = chosen is None or request.GET.get(BY_DEFAULT) == "1"
    filename = f"{dataset.slug}-agreement-report"
    if export_format == "json":
        data = agreement_report(dataset, campaign=campaign, runs=chosen)
        data = dataclasses.replace(data, runs_by_default=by_default)
        response: HttpResponse = JsonResponse(
            report_dict(data), json_dumps_params={"indent": 2, "allow_nan": False}
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
        return response
    if export_format == "csv":
        data = agreement_report(dataset, campaign=campaign, runs=chosen)
        data = dataclasses.replace(data, runs_by_default=by_default)
        response = HttpResponse(report_csv(data), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
        return response
    if section:
        data = agreement_report(dataset, campaign=campaign, runs=chosen, sections=[section])
        context = {
            "report": data,
            "dataset": dataset,
            "section": section,
            "section_title": SECTION_TITLES[section],
            "small_sample": SMALL_SAMPLE,
            "offline_marker": OFFLINE_MARKER,
            **SECTION_CONTEXTS[section](data),
        }
        return render(request, f"judging/reports/_section_{section}.html", context)
    shell = report_shell(dataset, campaign=campaign, runs=chosen)
    pinned = [run.pk for run in shell.runs]
    in_report = set(pinned)
    return render(
        request,
        "judging/reports/report.html",
        {
            "dataset": dataset,
            "shell": shell,
            "campaigns": dataset_campaigns(dataset),
            "run_choices": [(run, run.pk in in_report) for run in run_choices(dataset)],
            "runs_chosen_field": RUNS_CHOSEN,
            "sections": [
                (
                    name.replace("_", "-"),
                    SECTION_TITLES[name],
                    _pinned_query(request, pinned, shell.runs_by_default, section=name),
                )
                for name in SECTIONS
                if name != HUMAN_JUDGE or shell.runs
            ],
            "json_query": _pinned_query(request, pinned, shell.runs_by_default, format="json"),
            "csv_query": _pinned_query(request, pinned, shell.runs_by_default, format="csv"),
            "sampling": Sampling(),
            "small_sample": SMALL_SAMPLE,
            "offline_marker": OFFLINE_MARKER,
        },
    )


def _bad_request(request: AuthenticatedHtmxRequest, dataset: Dataset, message: str) -> HttpResponse:
    return render(
        request,
        "judging/reports/report_error.html",
        {"dataset": dataset, "error": message},
        status=400,
    )
