"""The agreement report pages, for leads: the list of datasets, and one dataset's report
(paper 004 Tables 5–6, paper 000 RQ2) on its patches or one campaign's, for the runs the
lead picks; the same data as JSON or CSV (``?format=json|csv``).

The tables are shaped here (rows of cells the template loops over); every number comes
from ``reports.agreement_report``.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from judging.agreement import SMALL_SAMPLE
from judging.models import Campaign
from judging.reports.export import HUMAN_ROWS, report_csv, report_dict
from judging.reports.figures import Figure, count
from judging.reports.humans import PairAgreement
from judging.reports.judges import BENCHMARKS, METRICS, Breakdown
from judging.reports.selectors import (
    AgreementReport,
    ReportError,
    agreement_report,
    report_campaign,
    report_runs,
    run_choices,
)
from rubrics import selectors as rubric_selectors
from rubrics.models import Dataset
from sejury_web.htmx import AuthenticatedHtmxRequest
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.roles import Role, role_required

FORMATS = ("json", "csv")
UNKNOWN_FORMAT = "unknown format {format!r}: use json or csv"
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
    parts = [
        f"{column.title}: {column.fleiss.n} with {column.fleiss_labels}"
        for column in report.humans.columns
        if column.fleiss_labels
    ]
    return f"on the patches with the most common number of decisive labels ({'; '.join(parts)})"


def _human_rows(report: AgreementReport) -> list[Row]:
    columns = report.humans.columns
    rows = [
        Row(
            key,
            label,
            [(column.name, getattr(column, key)) for column in columns],
            detail=_fleiss_detail(report) if key == "fleiss" else "",
        )
        for key, label in HUMAN_ROWS
    ]
    for label in columns[0].labels:
        cells = [(column.name, column.labels[label]) for column in columns]
        rows.append(Row(f"labels_{label.lower()}", f"Labels: {label}", cells))
    return rows


def _annotator_rows(report: AgreementReport) -> list[dict[str, Any]]:
    by_column = {
        column.name: {row.annotator_id: row for row in column.annotators}
        for column in report.humans.columns
    }
    return [
        {"name": name, **{column: rows.get(pk) for column, rows in by_column.items()}}
        for pk, name in report.annotators.items()
    ]


def _matrix(pairs: PairAgreement, names: dict[int, str]) -> list[tuple[str, list[Any]]]:
    """The pairwise κ as an annotator × annotator matrix; the diagonal is "self"."""
    return [
        (name, ["self" if a == b else pairs.pair(a, b) for b in names]) for a, name in names.items()
    ]


def _judge_rows(report: AgreementReport) -> list[Row]:
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


def _export_query(request: AuthenticatedHtmxRequest, export_format: str) -> str:
    """The page's own query, asking for ``export_format``: the export is the same report."""
    params = [
        (key, value) for key, values in request.GET.lists() if key != "format" for value in values
    ]
    return "?" + urlencode([*params, ("format", export_format)])


def _page_context(request: AuthenticatedHtmxRequest, report: AgreementReport) -> dict[str, Any]:
    chosen = {run.run.pk for run in report.runs}
    return {
        "dataset": report.dataset,
        "report": report,
        "campaigns": Campaign.objects.filter(dataset=report.dataset),
        "run_choices": [(run, run.pk in chosen) for run in run_choices(report.dataset)],
        "runs_chosen_field": RUNS_CHOSEN,
        "human_rows": _human_rows(report),
        "annotator_rows": _annotator_rows(report),
        "matrix": _matrix(report.humans.pairs, report.annotators),
        "judge_rows": _judge_rows(report),
        "human_judge_rows": _human_judge_rows(report),
        "human_judge_pairs": [
            (agreement, _named_pairs(agreement.humans, report.annotators))
            for agreement in report.human_judge
        ],
        "breakdown_tables": _breakdown_tables(report),
        "metric_labels": list(METRICS.values()),
        "json_query": _export_query(request, "json"),
        "csv_query": _export_query(request, "csv"),
        "small_sample": SMALL_SAMPLE,
        "offline_marker": OFFLINE_MARKER,
    }


@require_GET
@role_required(Role.LEAD)
def report(request: AuthenticatedHtmxRequest, slug: str) -> HttpResponse:
    dataset = rubric_selectors.dataset_get(slug=slug)
    export_format = request.GET.get("format", "")
    if export_format and export_format not in FORMATS:
        message = UNKNOWN_FORMAT.format(format=export_format)
        return _bad_request(request, dataset, message)
    try:
        campaign = report_campaign(dataset=dataset, campaign_id=request.GET.get("campaign"))
        asked = request.GET.getlist("run")
        runs = report_runs(dataset=dataset, run_ids=asked)
    except ReportError as error:
        return _bad_request(request, dataset, str(error))
    chosen = runs if asked or RUNS_CHOSEN in request.GET else None
    data = agreement_report(dataset, campaign=campaign, runs=chosen)
    filename = f"{dataset.slug}-agreement-report"
    if export_format == "json":
        response: HttpResponse = JsonResponse(report_dict(data), json_dumps_params={"indent": 2})
        response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
        return response
    if export_format == "csv":
        response = HttpResponse(report_csv(data), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
        return response
    return render(request, "judging/reports/report.html", _page_context(request, data))


def _bad_request(request: AuthenticatedHtmxRequest, dataset: Dataset, message: str) -> HttpResponse:
    return render(
        request,
        "judging/reports/report_error.html",
        {"dataset": dataset, "error": message},
        status=400,
    )
