"""The SWE-bench harness's results: which instances a model run resolved, which it did not
evaluate and why, the tests each run passed, and which model run a report is of.

Three reports are read (the format is recognised by its names):

- *experiments* ``results.json`` (SWE-bench/experiments' submissions), lists of instance
  ids. The detailed form (the first harness: ``generated``, ``with_logs``, ``install_fail``,
  ``reset_failed``, ``no_apply``, ``applied``, ``test_errored``, ``test_timeout``,
  ``resolved``) names every instance it evaluated: those in a list from ``with_logs`` on are
  evaluated. The compact form (``resolved``, ``no_generation``, ``no_logs`` and nothing
  else) lists only the resolved: every other prediction of its run was evaluated and not
  resolved, except those under ``no_generation`` or ``no_logs``.
- the *run report* of ``swebench.harness.run_evaluation`` (``make_run_report``, written as
  ``<model>.<run_id>.json``): ``resolved_ids``; ``unresolved_ids`` and ``error_ids`` (the
  evaluation failed, a patch that does not apply among them) are evaluated and not
  resolved, except what ``infra_failure_ids`` names (the harness found an environment fault
  in its logs: it is listed under ``unresolved_ids`` or ``error_ids`` too, but its tests
  say nothing of the patch) and ``incomplete_ids`` (never run): those are *not evaluated*,
  with the reason (``failure_reasons``) kept. ``ambiguous_failure_ids`` (an environment
  fault or the patch, the harness cannot tell) stay failing, with the reason kept.
  ``empty_patch_ids`` and ``submitted_ids`` alone say nothing.
- the *per-instance report* ``report.json`` that ``get_eval_report`` writes in
  ``logs/run_evaluation/<run_id>/<model>/<instance_id>/``: ``{instance_id: {"resolved":
  true|false, "tests_status": {...}, …}}``. ``infra_failure: true`` is *not evaluated*
  (with its ``infra_failure_reason``); ``patch_successfully_applied: false`` is evaluated
  and failing. Its ``tests_status`` (``FAIL_TO_PASS`` and ``PASS_TO_PASS``, each a
  ``success`` and a ``failure`` list of test names) is kept as the patch's test evidence.
  The file names no model: its folder does (the harness's name of the model, ``/`` as
  ``__``), and the folder above it the run; the per-instance reports of one folder are one
  report (:mod:`rubrics.swebench.logs`).

``tests_pass`` is then true for a resolved instance, false for one the report evaluated and
did not resolve, null when the report did not evaluate it (with the list that says so) or
does not mention it.
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
NOT_TESTS_STATUS = (
    "expected the harness's tests_status: an object of FAIL_TO_PASS and PASS_TO_PASS, each "
    "an object of 'success' and 'failure' arrays of test names"
)
REPORTED_TWICE = "instance {instance!r} is reported twice in one model run; the first is {first}"
DISAGREE = (
    "{run} says instance {instance!r} {run_says}, its per-instance report {file} says "
    "{file_says}: are they of the same run?"
)

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
# Not evaluated whatever else lists them.
EXPERIMENTS_NOT_EVALUATED = ("no_generation", "no_logs")
RUN_NOT_EVALUATED = ("infra_failure_ids", "incomplete_ids")
# Not evaluated unless another list says it was.
EXPERIMENTS_ONLY_LISTED = ("generated",)
RUN_ONLY_LISTED = ("empty_patch_ids", "submitted_ids")
RUN_EVALUATED = ("unresolved_ids", "error_ids", "completed_ids")
# Evaluated and failing, for a reason worth keeping beside the patch.
FAILED_WHY = {
    "error_ids": "the harness's evaluation failed (a patch that does not apply among them)",
    "ambiguous_failure_ids": "the harness cannot tell an environment fault from the patch's",
}
NOT_APPLIED = "patch_successfully_applied false: the patch did not apply, or its tests did not run"
TEST_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS")
TESTS_STATUS_PARTS = ("success", "failure")

TestsStatus = dict[str, dict[str, list[str]]]


@dataclass(frozen=True)
class Outcome:
    """What a report says of one instance: ``tests_pass``, the list (or field) that says
    it, and the note kept beside the patch (why not evaluated, why failing)."""

    tests_pass: bool | None
    said_by: str
    note: str = ""


@dataclass
class Report:
    """One results file (or the per-instance reports of one model run): what it says of
    each instance it names."""

    file: str
    form: str  # "experiments", "run", "per-instance", "run + per-instance"
    model: str | None = None  # the model the report's content names, if any
    model_dir: str | None = None  # the harness's folder of the model (per-instance)
    run_id: str | None = None  # the harness's folder of the run (per-instance)
    resolved: set[str] = field(default_factory=set)
    unresolved: set[str] = field(default_factory=set)  # evaluated, not resolved
    # Not evaluated, whatever else says: the list or field that says so and its reason.
    not_evaluated: dict[str, tuple[str, str]] = field(default_factory=dict)
    only_listed: dict[str, str] = field(default_factory=dict)  # in a list that says nothing
    failed_why: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The compact results.json: a prediction it does not name was evaluated, not resolved.
    others_unresolved: bool = False
    tests_status: dict[str, TestsStatus] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # per-instance: instance → file

    def outcome(self, instance_id: str) -> Outcome:
        if instance_id in self.not_evaluated:
            name, reason = self.not_evaluated[instance_id]
            note = f"not evaluated: {name} of {self.file_of(instance_id)}"
            return Outcome(None, name, note + (f" ({reason})" if reason else ""))
        if instance_id in self.resolved:
            return Outcome(True, "resolved")
        if instance_id in self.unresolved:
            name, reason = self.failed_why.get(instance_id, ("unresolved", ""))
            note = f"{name} of {self.file_of(instance_id)}: {reason}" if reason else ""
            return Outcome(False, name, note)
        if instance_id in self.only_listed:
            name = self.only_listed[instance_id]
            return Outcome(None, name, f"not evaluated: only in {name} of {self.file}")
        if self.others_unresolved:
            return Outcome(False, "unresolved")
        return Outcome(None, "absent", f"not in {self.file}")

    def tests_pass(self, instance_id: str) -> bool | None:
        return self.outcome(instance_id).tests_pass

    def file_of(self, instance_id: str) -> str:
        return self.files.get(instance_id, self.file)

    @property
    def instances(self) -> set[str]:
        return self.resolved | self.unresolved | self.not_evaluated.keys()


def _ids(value: Any, name: str, report: Report, errors: SourceErrors) -> list[str]:
    if not isinstance(value, list):
        message = NOT_A_LIST.format(type=json_type(value))
        errors.append(SourceError(None, name, message, file=report.file))
        return []
    found = []
    for number, item in enumerate(value):
        if not isinstance(item, str):
            message = NOT_AN_ID.format(type=json_type(item))
            errors.append(SourceError(None, f"{name}[{number}]", message, file=report.file))
            continue
        found.append(item)
    return found


def _lists(
    data: dict[str, Any],
    report: Report,
    errors: SourceErrors,
    *,
    resolved: str,
    evaluated: tuple[str, ...],
    not_evaluated: tuple[str, ...],
    only_listed: tuple[str, ...],
) -> None:
    report.resolved = set(_ids(data[resolved], resolved, report, errors))
    reasons = data.get("failure_reasons")
    reasons = reasons if isinstance(reasons, dict) else {}

    def reason(instance_id: str) -> str:
        value = reasons.get(instance_id)
        return shorten(value, 120) if isinstance(value, str) else ""

    for name in evaluated:
        if name in data:
            report.unresolved.update(_ids(data[name], name, report, errors))
    report.unresolved -= report.resolved
    for name, why in FAILED_WHY.items():
        for instance_id in _ids(data[name], name, report, errors) if name in data else []:
            if instance_id in report.unresolved:
                detail = f"{reason(instance_id)}, {why}" if reason(instance_id) else why
                report.failed_why[instance_id] = (name, detail)
    for name in not_evaluated:
        for instance_id in _ids(data[name], name, report, errors) if name in data else []:
            report.not_evaluated.setdefault(instance_id, (name, reason(instance_id)))
    for name in only_listed:
        for instance_id in _ids(data[name], name, report, errors) if name in data else []:
            report.only_listed.setdefault(instance_id, name)


def tests_status_read(value: Any) -> TestsStatus | None:
    """The harness's ``tests_status``, its FAIL_TO_PASS and PASS_TO_PASS lists only; None
    if it is not of that shape."""
    if not isinstance(value, dict):
        return None
    status: TestsStatus = {}
    for name in TEST_LISTS:
        lists = value.get(name, {"success": [], "failure": []})
        if not isinstance(lists, dict):
            return None
        status[name] = {}
        for part in TESTS_STATUS_PARTS:
            tests = lists.get(part, [])
            if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
                return None
            status[name][part] = tests
    return status


def _per_instance(data: dict[str, Any], report: Report, errors: SourceErrors) -> None:
    for instance_id, item in data.items():
        where = shorten(instance_id)
        value = item.get("resolved")
        if not isinstance(value, bool):
            message = NOT_A_BOOL.format(type=json_type(value))
            errors.append(SourceError(None, f"{where}.resolved", message, file=report.file))
            continue
        if "tests_status" in item:
            status = tests_status_read(item["tests_status"])
            if status is None:
                field_name = f"{where}.tests_status"
                errors.append(SourceError(None, field_name, NOT_TESTS_STATUS, file=report.file))
                continue
            report.tests_status[instance_id] = status
        if item.get("infra_failure") is True:
            reason = item.get("infra_failure_reason")
            detail = shorten(reason, 120) if isinstance(reason, str) else ""
            report.not_evaluated[instance_id] = ("infra_failure", detail)
        (report.resolved if value else report.unresolved).add(instance_id)
        if not value and item.get("patch_successfully_applied") is False:
            report.failed_why[instance_id] = ("patch_successfully_applied", NOT_APPLIED)


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
            only_listed=RUN_ONLY_LISTED,
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
            only_listed=EXPERIMENTS_ONLY_LISTED,
        )
        report.others_unresolved = not any(name in data for name in EXPERIMENTS_DETAILED)
    elif data and all(isinstance(v, dict) and "resolved" in v for v in data.values()):
        report = Report(file, "per-instance")
        _per_instance(data, report, errors)
    else:
        errors.append(SourceError(None, None, NOT_A_REPORT, file=file))
        return None
    return report


def per_instance_merge(reports: list[Report], file: str, errors: SourceErrors) -> Report:
    """The per-instance reports of one model run (one folder) as one report."""
    first = reports[0]
    merged = Report(file, "per-instance", model_dir=first.model_dir, run_id=first.run_id)
    for report in reports:
        for instance_id in sorted(report.instances):
            if instance_id in merged.files:
                message = REPORTED_TWICE.format(
                    instance=shorten(instance_id), first=merged.files[instance_id]
                )
                errors.append(SourceError(None, None, message, file=report.file))
                continue
            merged.files[instance_id] = report.file
        merged.resolved |= report.resolved
        merged.unresolved |= report.unresolved
        merged.not_evaluated |= report.not_evaluated
        merged.failed_why |= report.failed_why
        merged.tests_status |= report.tests_status
    return merged


def _says(outcome: Outcome) -> str:
    return {True: "resolved", False: "not resolved", None: "not evaluated"}[outcome.tests_pass]


def combined(run: Report, per_instance: Report, errors: SourceErrors) -> Report:
    """A run's report (what it evaluated) and its per-instance reports (the tests each
    passed) as one: they must agree on each instance both name."""
    for instance_id in sorted(run.instances & per_instance.instances):
        said, found = run.outcome(instance_id), per_instance.outcome(instance_id)
        if None not in (said.tests_pass, found.tests_pass) and said.tests_pass != found.tests_pass:
            message = DISAGREE.format(
                run=run.file,
                instance=shorten(instance_id),
                run_says=_says(said),
                file=per_instance.file_of(instance_id),
                file_says=_says(found),
            )
            errors.append(SourceError(None, None, message, file=run.file))
    merged = Report(
        f"{run.file} + {per_instance.file}",
        "run + per-instance",
        model=run.model,
        model_dir=per_instance.model_dir,
        run_id=per_instance.run_id,
        resolved=set(run.resolved),
        unresolved=set(run.unresolved),
        not_evaluated=per_instance.not_evaluated | run.not_evaluated,
        only_listed=dict(run.only_listed),
        failed_why=per_instance.failed_why | run.failed_why,
        others_unresolved=run.others_unresolved,
        tests_status=per_instance.tests_status,
        files=dict.fromkeys(run.instances, run.file),
    )
    for instance_id in per_instance.instances - run.instances:
        merged.files[instance_id] = per_instance.file_of(instance_id)
        if instance_id in per_instance.resolved:
            merged.resolved.add(instance_id)
        elif instance_id in per_instance.unresolved:
            merged.unresolved.add(instance_id)
    return merged


def harness_name(source: str) -> str:
    """How the harness names a model in file and folder names: ``/`` becomes ``__``."""
    return source.replace("/", "__")


def named_source(report: Report, sources: set[str]) -> str | None:
    """The patch source the report is of: the one its content names, else the one its
    folder names (per-instance reports), else the one its file name starts with
    (``<model>.<run_id>.json``, the longest such), else None."""
    if report.model is not None and report.model in sources:
        return report.model
    if report.model_dir is not None:
        return next((s for s in sorted(sources) if harness_name(s) == report.model_dir), None)
    name = PurePath(report.file).name
    matches = [s for s in sources if name.startswith(harness_name(s) + ".")]
    return max(matches, key=len) if matches else None
