"""The SWE-bench harness's results: which instances a model run resolved, and which model
run a report is of.

Three reports are read (the format is recognised by its names):

- *experiments* ``results.json`` (SWE-bench/experiments' submissions), lists of instance
  ids. The detailed form (the first harness: ``generated``, ``with_logs``, ``install_fail``,
  ``reset_failed``, ``no_apply``, ``applied``, ``test_errored``, ``test_timeout``,
  ``resolved``) names every instance it evaluated: those in a list from ``with_logs`` on are
  evaluated. The compact form (``resolved``, ``no_generation``, ``no_logs`` and nothing
  else) lists only the resolved: every other prediction of its run was evaluated and not
  resolved, except those under ``no_generation`` or ``no_logs``.
- the *run report* of ``swebench.harness.run_evaluation`` (``<model>.<run_id>.json``):
  ``resolved_ids``; ``unresolved_ids``, ``error_ids`` (the evaluation failed, a patch that
  does not apply among them) and ``completed_ids`` are evaluated; ``incomplete_ids``,
  ``empty_patch_ids`` and ``submitted_ids`` alone are not.
- the *per-instance report* ``report.json`` of the harness's logs:
  ``{instance_id: {"resolved": true|false, …}}``.

``tests_pass`` is then true for a resolved instance, false for one the report evaluated and
did not resolve, null when the report does not mention it (or says it did not evaluate it).
"""

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from rubrics.bundle.read import json_type, shorten
from rubrics.swebench.read import SourceError, SourceErrors

NOT_A_REPORT = (
    "not a SWE-bench results report: expected lists of instance ids such as 'resolved' "
    "(results.json) or 'resolved_ids' (the harness's run report), or an object of "
    "per-instance reports with 'resolved'"
)
NOT_A_LIST = "expected an array of instance ids, got {type}"
NOT_AN_ID = "expected an instance id (a string), got {type}"
NOT_A_BOOL = "expected true or false, got {type}"

EXPERIMENTS_DETAILED = (
    "generated",
    "with_logs",
    "install_fail",
    "reset_failed",
    "no_apply",
    "applied",
    "test_errored",
    "test_timeout",
)
EXPERIMENTS_EVALUATED = EXPERIMENTS_DETAILED[1:]
EXPERIMENTS_NOT_EVALUATED = ("no_generation", "no_logs", "generated")
RUN_EVALUATED = ("unresolved_ids", "error_ids", "completed_ids")
RUN_NOT_EVALUATED = ("incomplete_ids", "empty_patch_ids", "submitted_ids")


@dataclass
class Report:
    """One results file: what it says of each instance it names."""

    file: str
    form: str  # "experiments", "run", "per-instance"
    model: str | None = None  # the model the report's content names, if any
    resolved: set[str] = field(default_factory=set)
    unresolved: set[str] = field(default_factory=set)  # evaluated, not resolved
    not_evaluated: set[str] = field(default_factory=set)
    # The compact results.json: a prediction it does not name was evaluated, not resolved.
    others_unresolved: bool = False

    def tests_pass(self, instance_id: str) -> bool | None:
        if instance_id in self.resolved:
            return True
        if instance_id in self.unresolved:
            return False
        if instance_id in self.not_evaluated:
            return None
        return False if self.others_unresolved else None


def _ids(value: Any, name: str, report: Report, errors: SourceErrors) -> set[str]:
    if not isinstance(value, list):
        message = NOT_A_LIST.format(type=json_type(value))
        errors.append(SourceError(None, name, message, file=report.file))
        return set()
    found = set()
    for number, item in enumerate(value):
        if not isinstance(item, str):
            message = NOT_AN_ID.format(type=json_type(item))
            errors.append(SourceError(None, f"{name}[{number}]", message, file=report.file))
            continue
        found.add(item)
    return found


def _lists(
    data: dict[str, Any],
    report: Report,
    errors: SourceErrors,
    *,
    resolved: str,
    evaluated: tuple[str, ...],
    not_evaluated: tuple[str, ...],
) -> None:
    report.resolved = _ids(data[resolved], resolved, report, errors)
    for name in evaluated:
        if name in data:
            report.unresolved |= _ids(data[name], name, report, errors)
    for name in not_evaluated:
        if name in data:
            report.not_evaluated |= _ids(data[name], name, report, errors)


def _per_instance(data: dict[str, Any], report: Report, errors: SourceErrors) -> None:
    for instance_id, item in data.items():
        value = item.get("resolved")
        if not isinstance(value, bool):
            message = NOT_A_BOOL.format(type=json_type(value))
            errors.append(
                SourceError(None, f"{shorten(instance_id)}.resolved", message, file=report.file)
            )
            continue
        (report.resolved if value else report.unresolved).add(instance_id)


def report_read(data: Any, file: str, errors: SourceErrors) -> Report | None:
    """The report in ``data`` (a parsed results file), or None with why in ``errors``."""
    if not isinstance(data, dict):
        errors.append(SourceError(None, None, NOT_A_REPORT, file=file))
        return None
    model = data.get("model_name_or_path")
    if "resolved_ids" in data:
        report = Report(file, "run", model=model if isinstance(model, str) else None)
        _lists(
            data,
            report,
            errors,
            resolved="resolved_ids",
            evaluated=RUN_EVALUATED,
            not_evaluated=RUN_NOT_EVALUATED,
        )
    elif isinstance(data.get("resolved"), list):
        report = Report(file, "experiments", model=model if isinstance(model, str) else None)
        _lists(
            data,
            report,
            errors,
            resolved="resolved",
            evaluated=EXPERIMENTS_EVALUATED,
            not_evaluated=EXPERIMENTS_NOT_EVALUATED,
        )
        report.others_unresolved = not any(name in data for name in EXPERIMENTS_DETAILED)
    elif data and all(isinstance(v, dict) and "resolved" in v for v in data.values()):
        report = Report(file, "per-instance")
        _per_instance(data, report, errors)
    else:
        errors.append(SourceError(None, None, NOT_A_REPORT, file=file))
        return None
    return report


def harness_name(source: str) -> str:
    """How the harness names a model in file names: ``/`` becomes ``__``."""
    return source.replace("/", "__")


def named_source(report: Report, sources: set[str]) -> str | None:
    """The patch source the report is of: the one its content names, else the one its file
    name starts with (``<model>.<run_id>.json``, the longest such), else None."""
    if report.model is not None and report.model in sources:
        return report.model
    name = PurePath(report.file).name
    matches = [s for s in sources if name.startswith(harness_name(s) + ".")]
    return max(matches, key=len) if matches else None
