"""A model run's results: every results file read, the per-instance reports of one run
merged, and each report matched to the patch source it is of.

A report is of one model run. When the predictions have one source, every report is of it;
when they have several, a report is of the source its content names (``model_name_or_path``)
or its file name starts with, as the harness names its run report ``<model>.<run_id>.json``
(``/`` in the model's name as ``__``), or, for per-instance reports, the folder they are in
(a folder of a model with no predictions here is not read, and a note says so); a report
that names none of them is refused, since another model's results would be wrong, and so
are two reports of one source, except a run's report and its per-instance reports, which
are one (:func:`rubrics.swebench.results.combined`).
"""

import io
import json
from typing import Any

from rubrics.bundle.bugs import MAX_TESTS_STATUS
from rubrics.bundle.read import shorten
from rubrics.swebench.logs import is_zip, per_instance_grouped, zip_reports
from rubrics.swebench.parquet import is_parquet
from rubrics.swebench.read import NamedFile, SourceError, SourceErrors, read_json
from rubrics.swebench.results import Report, TestsStatus, combined, named_source, report_read

NO_SOURCE = (
    "the predictions have {count} sources ({sources}) and this report does not say which "
    "one it is of: name the file <model>.<run_id>.json as the harness does (the model's "
    "'/' as '__'), give report.json files in their folders (a zip of "
    "logs/run_evaluation/<run_id>), or import each model's predictions with its own report"
)
TWO_REPORTS = "a second results report of {source!r}; the first is {first}"
PARQUET_RESULTS = "a Parquet file is not a results report: give the harness's JSON reports"
OTHER_MODEL_NOTE = (
    "{folder}: per-instance reports of {model}, which no prediction here is of, were not read"
)

# Of a tests_status over its limit, left out first: passing tests before failing ones.
TESTS_STATUS_BULKY = (
    ("PASS_TO_PASS", "success"),
    ("FAIL_TO_PASS", "success"),
    ("PASS_TO_PASS", "failure"),
    ("FAIL_TO_PASS", "failure"),
)


def results_read(results: list[NamedFile], errors: SourceErrors) -> list[Report]:
    """Every results file's report, a zip's ``report.json`` files each one, the
    per-instance reports of each model run merged."""
    reports = []
    for named in results:
        if is_parquet(named.stream):
            errors.append(SourceError(None, None, PARQUET_RESULTS, file=named.name))
            continue
        if is_zip(named.stream):
            members = [
                NamedFile(name, io.BytesIO(data))
                for name, data in zip_reports(named.stream, named.name, errors)
            ]
        else:
            members = [named]
        for member in members:
            data = read_json(member.stream, member.name, errors)
            if data is not None and (report := report_read(data, member.name, errors)):
                reports.append(report)
    return per_instance_grouped(reports, errors)


RUN_LEVEL = ("run", "experiments")
# A run's report and its per-instance reports are one report.
PAIRED = ({"run", "per-instance"}, {"experiments", "per-instance"})


def reports_by_source(
    reports: list[Report], sources: set[str], errors: SourceErrors
) -> tuple[dict[str, Report], list[str]]:
    """Each source's report, and notes of the per-instance reports of other models."""
    by_source: dict[str, Report] = {}
    notes = []
    for report in reports:
        source = named_source(report, sources)
        if source is None and report.model_dir is not None and sources:
            # A folder of the harness's logs names its model: not one of these.
            notes.append(OTHER_MODEL_NOTE.format(folder=report.file, model=report.model_dir))
            continue
        if source is None and len(sources) == 1:
            source = next(iter(sources))
        if source is None:
            if sources:
                shown = ", ".join(sorted(shorten(s, 40) for s in sources)[:5])
                message = NO_SOURCE.format(count=len(sources), sources=shown)
                errors.append(SourceError(None, None, message, file=report.file))
            continue
        first = by_source.get(source)
        if first is None:
            by_source[source] = report
        elif {first.form, report.form} in PAIRED:
            run, per_instance = (first, report) if first.form in RUN_LEVEL else (report, first)
            by_source[source] = combined(run, per_instance, errors)
        else:
            message = TWO_REPORTS.format(source=source, first=first.file)
            errors.append(SourceError(None, None, message, file=report.file))
    return by_source, notes


def tests_status_fitted(status: TestsStatus | None) -> dict[str, Any] | None:
    """``status`` within its limit: its longest lists of passing tests, then of failing
    ones, replaced by their length (in ``left_out``) until it fits."""
    if status is None:
        return None

    def size(value: dict[str, Any]) -> int:
        return len(json.dumps(value, ensure_ascii=False))

    fitted: dict[str, Any] = {name: dict(lists) for name, lists in status.items()}
    if size(fitted) <= MAX_TESTS_STATUS:
        return fitted
    left_out: dict[str, int] = {}
    fitted["left_out"] = left_out
    for name, part in TESTS_STATUS_BULKY:
        tests = fitted.get(name, {}).get(part)
        if tests:
            left_out[f"{name}.{part}"] = len(tests)
            fitted[name][part] = []
            if size(fitted) <= MAX_TESTS_STATUS:
                break
    return fitted
