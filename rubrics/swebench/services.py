"""Importing SWE-bench: instances, predictions and results as bugs and patches, all or nothing.

The three files are turned into bundle records (a ``bug`` per instance, a ``patch`` per
prediction) written to a temporary JSONL file, which the bundle's own import
(:func:`rubrics.bundle.services.bundle_import`) checks and writes in one transaction: the
same checks (diffs, references, sizes), the same upserts, the same record of the import. Each
bundle line remembers the file and line it came from, so that every error names the
SWE-bench file, its line and its field (``model_patch``, not ``diff``): a line of the
temporary bundle means nothing to whoever wrote the predictions.

Mapping
-------
- An *instance* is a bug: ``instance_id`` → key, ``problem_statement`` → description (its
  first non-blank line, cut to 500 characters, → title), ``patch`` → reference fix, language
  ``python``; every other field (``repo``, ``base_commit``, ``version``, ``created_at``,
  ``environment_setup_commit``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``test_patch``,
  ``hints_text``, …) is kept as given in the metadata. Metadata is never shown to a judge
  (``hints_text`` can leak the fix); only the bug and patch pages show it. The BM25
  retrieval datasets' ``text`` (the prompt a model was given: the problem statement and
  whole files of the repository, some 60 KB an instance, nothing the other fields do not
  say) is always left out. Metadata over the bundle's limit (100,000 characters as JSON)
  loses its largest of ``PASS_TO_PASS``, ``test_patch``, ``FAIL_TO_PASS``, ``hints_text``
  until it fits; ``left_out`` names what was left out and a note says so. Instances may be
  JSON Lines, a JSON array or Parquet (the hub's files, :mod:`rubrics.swebench.parquet`).
- A *prediction* is a patch: ``instance_id`` → its bug, ``model_name_or_path`` → source,
  ``model_patch`` → diff, as given (a leading blank line, a patch that does not apply: the
  diff parser accepts what ``git apply --recount`` would read; a text that is no diff at all
  is refused, as in a bundle). Its key is ``<instance_id>@<source>``, the source in safe
  characters (``[A-Za-z0-9._-]``; if it had others, they become ``-`` and 8 hex digits of
  its hash follow), so the same predictions imported twice change nothing. An empty or null
  ``model_patch`` is no patch: counted and reported, not imported. Other fields of a
  prediction (``full_output``, costs) are not kept.
- A *results* report sets ``tests_pass`` (``rubrics.swebench.results``): true, false, or
  null when the run did not evaluate the instance (``infra_failure_ids``,
  ``incomplete_ids``, a per-instance report's ``infra_failure``), the reason kept as the
  patch's ``tests_note``; a per-instance ``report.json``'s ``tests_status`` is kept as the
  patch's ``tests_status`` (the test evidence; over 100,000 characters, its longest lists
  of passing tests give way to their length, in ``left_out``). The per-instance reports of
  a folder or a zip are one report per model run (:mod:`rubrics.swebench.logs`); with the
  run's report of the same model they are one report, which must agree with them. Which
  source a report is of: :mod:`rubrics.swebench.reports`. A source without a
  report gets ``tests_pass`` null, as does every patch of a source its report does not
  mention. An import states what its files say: re-importing predictions without their
  results sets their ``tests_pass`` back to null.
"""

import hashlib
import json
import re
import tempfile
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from rubrics.bundle.base import BundleImportError, ImportSummary, registered_kinds, summary_text
from rubrics.bundle.bugs import MAX_TESTS_NOTE
from rubrics.bundle.read import MAX_METADATA, BundleError, json_type, shorten
from rubrics.bundle.services import Progress, bundle_import
from rubrics.swebench.parquet import is_parquet, parquet_items
from rubrics.swebench.read import Item, NamedFile, SourceError, SourceErrors, read_items
from rubrics.swebench.reports import reports_by_source, results_read, tests_status_fitted
from rubrics.swebench.results import Outcome, Report

NOTHING_GIVEN = "give an instances file, a predictions file, or both"
MISSING = "missing required field"
WRONG_TYPE = "expected {expected}, got {type}"
NAME_DIFFERS = "the prediction is given under {name!r} but names instance {instance!r}"
TOO_LARGE = (
    "the records made from these files are over the import's size limit of {limit:,} bytes "
    "(SEJURY_BUNDLE_MAX_BYTES): import the instances, then the predictions, in several parts"
)
EMPTY_NOTE = "{count} prediction{s} had no patch (an empty model_patch) and {were} not imported{by}"
LEFT_OUT_NOTE = (
    "{count} instance{s} had metadata over {limit:,} characters: {fields} left out of it "
    "(listed in its metadata.left_out): {keys}"
)
REPORT_NOTE = (
    "{file} ({form} report) of {source}: tests pass for {passed}, fail for {failed}{why_failed}, "
    "not evaluated for {not_evaluated}{why_not}, not in the report for {absent}"
)
RETRIEVAL_NOTE = (
    "{count} instance{s} had a 'text' field (the BM25 retrieval prompt: the problem "
    "statement and whole files): left out of the metadata (named in its metadata.left_out)"
)
NO_REPORT_NOTE = "no results report for {sources}: tests_pass is unknown (null) for its patches"

TITLE_MAX = 500
LANGUAGE = "python"
# Left out of an instance's metadata, largest first, when it is over the bundle's limit.
BULKY_FIELDS = ("PASS_TO_PASS", "test_patch", "FAIL_TO_PASS", "hints_text")
# Always left out: the BM25 retrieval datasets' prompt (problem statement and files).
RETRIEVAL_FIELDS = ("text",)
INSTANCE_MAIN = {"instance_id", "problem_statement", "patch"}

# Bundle field → the SWE-bench field it was made from, by record kind.
FIELDS = {
    "bug": {
        "key": "instance_id",
        "title": "problem_statement",
        "description": "problem_statement",
        "reference_patch": "patch",
        "language": "language",
    },
    "patch": {
        "key": "instance_id",
        "bug": "instance_id",
        "diff": "model_patch",
        "source": "model_name_or_path",
    },
}
# Words of bundle messages that mean something else here.
MESSAGE_WORDS = (
    (re.compile(r" in the file: first given"), ": first given"),
    (re.compile(r"neither in this file nor"), "neither in the instances file nor"),
    (re.compile(r"\bbug\b"), "instance"),
)
# Bundle messages that name another bundle line.
LINE_REFERENCES = (
    re.compile(r"(first given on )line (\d+)$"),
    re.compile(r"(is itself invalid \()line (\d+)(\))$"),
)


@dataclass
class SwebenchSummary:
    bundle: ImportSummary
    notes: list[str]  # the SWE-bench notes, then the bundle's
    empty_patches: int = 0

    @property
    def counts_text(self) -> str:
        return summary_text(self.bundle.counts)


class SwebenchImportError(BundleImportError):
    """Nothing was imported; ``errors`` (:class:`SourceError`) say which file, where, what."""

    def __init__(self, errors: list[SourceError], *, more: int = 0) -> None:
        super().__init__(list[BundleError](errors), more=more)


def patch_key(instance_id: str, source: str) -> str:
    """The key of ``source``'s patch for ``instance_id``: deterministic, no ``/``."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", source).strip("-.")[:80]
    if safe != source:
        digest = hashlib.blake2b(source.encode(), digest_size=4).hexdigest()
        safe = f"{safe}-{digest}" if safe else digest
    return f"{instance_id}@{safe}"


_LINE = re.compile("\\S[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]*")


def problem_title(statement: object) -> str:
    """The first non-blank line of a problem statement, cut to ``TITLE_MAX`` characters
    (found without splitting the whole statement into lines)."""
    if not isinstance(statement, str):
        return ""
    match = _LINE.search(statement)
    if match is None:
        return ""
    line = statement[match.start() : min(match.end(), match.start() + TITLE_MAX + 1)].rstrip()
    return line if len(line) <= TITLE_MAX else line[: TITLE_MAX - 1] + "…"


def _cut_to_limits(record: dict[str, Any]) -> None:
    """Each text of ``record`` over its field's limit cut to one character past it: the
    bundle import refuses it just as it would the whole (same line, field and message),
    and a 60 MB value is not written out and read back again (issue 27: 3 × the file's
    size at most, in memory)."""
    kind = next((kind for kind in registered_kinds() if kind.name == record.get("kind")), None)
    for name, value in record.items():
        spec = kind.fields.get(name) if kind else None
        limit = spec.max_length if spec else None
        if limit is not None and isinstance(value, str) and len(value) > limit:
            record[name] = value[: limit + 1]


@dataclass
class _Bundle:
    """The temporary bundle and where each of its lines came from."""

    out: IO[bytes]
    files: list[str] = field(default_factory=list)
    origin_file: array = field(default_factory=lambda: array("H"))
    origin_line: array = field(default_factory=lambda: array("L"))
    kinds: bytearray = field(default_factory=bytearray)  # 0 bug, 1 patch
    tables: set[int] = field(default_factory=set)  # files numbered by rows (Parquet)
    size: int = 0

    def file_add(self, named: NamedFile) -> int:
        """Index of ``named`` among the files, marked as a table if it is Parquet."""
        self.files.append(named.name)
        if is_parquet(named.stream):
            self.tables.add(len(self.files) - 1)
        return len(self.files) - 1

    def add(self, record: dict[str, Any], file_index: int, line: int) -> None:
        _cut_to_limits(record)
        data = json.dumps(record).encode()
        self.out.write(data)
        self.out.write(b"\n")
        self.size += len(data) + 1
        self.origin_file.append(file_index)
        self.origin_line.append(line)
        self.kinds.append(0 if record["kind"] == "bug" else 1)

    def origin(self, line: int) -> tuple[str, int, str]:
        """The file, line (or row) and kind a bundle line came from."""
        index = line - 1
        kind = "bug" if self.kinds[index] == 0 else "patch"
        return self.files[self.origin_file[index]], self.origin_line[index], kind

    def is_table(self, line: int) -> bool:
        return self.origin_file[line - 1] in self.tables

    def source_error(self, error: BundleError) -> SourceError:
        """A bundle error as the SWE-bench file, line and field it is about."""
        if error.line is None or not 0 < error.line <= len(self.kinds):
            return SourceError(None, error.field, error.message)
        file, line, kind = self.origin(error.line)
        message = error.message
        for bundle_words, words in MESSAGE_WORDS:
            message = bundle_words.sub(words, message)
        for pattern in LINE_REFERENCES:
            if match := pattern.search(message):
                other = int(match.group(2))
                other_file, other_line, _ = self.origin(other)
                unit = "row" if self.is_table(other) else "line"
                where = f"{other_file} {unit} {other_line}"
                tail = match.group(3) if pattern.groups > 2 else ""
                message = message[: match.start()] + match.group(1) + where + tail
        name = FIELDS[kind].get(error.field or "", error.field)
        return SourceError(line, name, message, file=file, row=self.is_table(error.line))


def _bug_record(data: dict[str, Any], left_out: list[str]) -> dict[str, Any]:
    metadata = {name: value for name, value in data.items() if name not in INSTANCE_MAIN}
    for name in RETRIEVAL_FIELDS:
        if name in metadata:
            del metadata[name]
            left_out.append(name)
    language = metadata.get("language")
    record: dict[str, Any] = {
        "kind": "bug",
        "key": data.get("instance_id"),
        "title": problem_title(data.get("problem_statement")),
        "description": data.get("problem_statement"),
        "language": language if isinstance(language, str) else LANGUAGE,
        "reference_patch": data.get("patch"),
        "metadata": _fitted(metadata, left_out),
    }
    return {name: value for name, value in record.items() if value is not None}


def _fitted(metadata: dict[str, Any], left_out: list[str]) -> dict[str, Any]:
    """``metadata`` within the bundle's limit: its bulkiest SWE-bench fields left out."""

    def size(value: dict[str, Any]) -> int:
        return len(json.dumps(value, ensure_ascii=False))

    if size(metadata | ({"left_out": left_out} if left_out else {})) <= MAX_METADATA:
        return metadata | {"left_out": list(left_out)} if left_out else metadata
    bulky = sorted(
        (name for name in BULKY_FIELDS if name in metadata),
        key=lambda name: -len(json.dumps(metadata[name], ensure_ascii=False)),
    )
    fitted = dict(metadata)
    for name in bulky:
        del fitted[name]
        left_out.append(name)
        if size(fitted | {"left_out": left_out}) <= MAX_METADATA:
            break
    return fitted | {"left_out": list(left_out)}


@dataclass
class _Tally:
    empty: Counter[str] = field(default_factory=Counter)  # empty patches by source
    # By source: how many patches each list (or field) of its report sets tests_pass by.
    tests: dict[str, Counter[tuple[bool | None, str]]] = field(
        default_factory=lambda: defaultdict(Counter)
    )
    left_out: list[str] = field(default_factory=list)  # instance ids
    left_out_fields: set[str] = field(default_factory=set)
    retrieval: int = 0  # instances whose retrieval prompt (``text``) was left out


def _items(named: NamedFile, errors: SourceErrors, *, keyed: bool) -> Iterator[Item]:
    """The records of a SWE-bench file: Parquet, JSON Lines or a JSON document."""
    if is_parquet(named.stream):
        return parquet_items(named.stream, named.name, errors, skip=RETRIEVAL_FIELDS)
    return read_items(named.stream, named.name, errors, keyed=keyed)


def _string(
    data: dict[str, Any], name: str, item_line: int, file: str, errors: SourceErrors
) -> str | None:
    value = data.get(name)
    if name not in data or value is None:
        errors.append(SourceError(item_line, name, MISSING, file=file))
        return None
    if not isinstance(value, str) or not value.strip():
        got = json_type(value) if not isinstance(value, str) else "an empty string"
        message = WRONG_TYPE.format(expected="a non-empty string", type=got)
        errors.append(SourceError(item_line, name, message, file=file))
        return None
    return value


def _sources(predictions: list[NamedFile]) -> set[str]:
    """Every ``model_name_or_path`` the predictions name (errors come in the second read)."""
    found: set[str] = set()
    for named in predictions:
        for item in _items(named, SourceErrors(1), keyed=True):
            source = item.data.get("model_name_or_path")
            if isinstance(source, str) and source.strip():
                found.add(source)
    return found


def _predictions(
    predictions: list[NamedFile],
    bundle: _Bundle,
    reports: dict[str, Report],
    tally: _Tally,
    errors: SourceErrors,
) -> None:
    for named in predictions:
        file_index = bundle.file_add(named)
        for item in _items(named, errors, keyed=True):
            data = item.data
            if item.name is not None and "instance_id" not in data:
                data = {"instance_id": item.name} | data
            instance_id = _string(data, "instance_id", item.line, named.name, errors)
            if item.name is not None and instance_id is not None and instance_id != item.name:
                message = NAME_DIFFERS.format(
                    name=shorten(item.name), instance=shorten(instance_id)
                )
                errors.append(SourceError(item.line, "instance_id", message, file=named.name))
            source = _string(data, "model_name_or_path", item.line, named.name, errors)
            diff = data.get("model_patch")
            if diff is None or (isinstance(diff, str) and not diff.strip()):
                tally.empty[source or ""] += 1
                continue
            if not isinstance(diff, str):
                message = WRONG_TYPE.format(expected="a string", type=json_type(diff))
                errors.append(SourceError(item.line, "model_patch", message, file=named.name))
                continue
            if instance_id is None or source is None:
                continue
            report = reports.get(source)
            outcome = report.outcome(instance_id) if report else Outcome(None, "no report")
            tally.tests[source][outcome.tests_pass, outcome.said_by] += 1
            record = {
                "kind": "patch",
                "key": patch_key(instance_id, source),
                "bug": instance_id,
                "diff": diff,
                "source": source,
                "tests_pass": outcome.tests_pass,
                "tests_status": tests_status_fitted(
                    report.tests_status.get(instance_id) if report else None
                ),
                "tests_note": shorten(outcome.note, MAX_TESTS_NOTE),
                "metadata": {"instance_id": instance_id, "model_name_or_path": source},
            }
            bundle.add(record, file_index, item.line)


def _instances(named: NamedFile, bundle: _Bundle, tally: _Tally, errors: SourceErrors) -> None:
    file_index = bundle.file_add(named)
    for item in _items(named, errors, keyed=False):
        left_out: list[str] = []
        record = _bug_record(item.data, left_out)
        bulky = [name for name in left_out if name not in RETRIEVAL_FIELDS]
        tally.retrieval += len(bulky) != len(left_out)
        if bulky:
            tally.left_out.append(str(record.get("key")))
            tally.left_out_fields.update(bulky)
        bundle.add(record, file_index, item.line)


def _counted(counts: Counter[tuple[bool | None, str]], tests_pass: bool | None) -> str:
    """`` (infra_failure_ids 1, incomplete_ids 2)``: the lists that set so many patches to
    ``tests_pass``, where a list other than the plain ones does."""
    named = sorted(
        (said_by, n)
        for (value, said_by), n in counts.items()
        if value is tests_pass and said_by not in ("resolved", "unresolved", "absent")
    )
    return " (" + ", ".join(f"{said_by} {n}" for said_by, n in named) + ")" if named else ""


def _notes(tally: _Tally, reports: dict[str, Report], sources: set[str]) -> list[str]:
    notes = []
    if empty := sum(tally.empty.values()):
        by = ""
        if len(tally.empty) > 1:
            by = ": " + ", ".join(
                f"{source or '?'} {n}" for source, n in sorted(tally.empty.items())
            )
        notes.append(
            EMPTY_NOTE.format(
                count=empty,
                s="" if empty == 1 else "s",
                were="was" if empty == 1 else "were",
                by=by,
            )
        )
    if tally.retrieval:
        notes.append(
            RETRIEVAL_NOTE.format(count=tally.retrieval, s="" if tally.retrieval == 1 else "s")
        )
    if tally.left_out:
        keys = ", ".join(tally.left_out[:10]) + (" …" if len(tally.left_out) > 10 else "")
        notes.append(
            LEFT_OUT_NOTE.format(
                count=len(tally.left_out),
                s="" if len(tally.left_out) == 1 else "s",
                limit=MAX_METADATA,
                fields="/".join(sorted(tally.left_out_fields)),
                keys=keys,
            )
        )
    for source, report in sorted(reports.items()):
        counts = tally.tests.get(source, Counter())

        def total(value: bool | None, counts: Counter[tuple[bool | None, str]] = counts) -> int:
            return sum(n for (v, by), n in counts.items() if v is value and by != "absent")

        notes.append(
            REPORT_NOTE.format(
                file=report.file,
                form=report.form,
                source=source,
                passed=total(True),
                failed=total(False),
                why_failed=_counted(counts, False),
                not_evaluated=total(None),
                why_not=_counted(counts, None),
                absent=counts[None, "absent"],
            )
        )
    if reports and (without := sorted(sources - reports.keys())):
        notes.append(NO_REPORT_NOTE.format(sources=", ".join(without)))
    return notes


def swebench_import(
    *,
    instances: NamedFile | None,
    predictions: list[NamedFile],
    results: list[NamedFile],
    dataset_name: str,
    actor: User | None,
    progress: Progress | None = None,
) -> SwebenchSummary:
    """Import SWE-bench instances, predictions and results into ``dataset_name`` (created
    if new), all or nothing.

    Files must be seekable (each is read up to twice). Results may be zips of the harness's
    per-instance reports. Raises :class:`SwebenchImportError` listing every problem (up to
    the configured cap) by file, line and field; then nothing has been written.
    """
    errors = SourceErrors(settings.SEJURY_BUNDLE_MAX_ERRORS)
    if instances is None and not predictions:
        raise SwebenchImportError([SourceError(None, None, NOTHING_GIVEN)])
    reports = results_read(results, errors)
    sources = _sources(predictions)
    by_source, other_models = reports_by_source(reports, sources, errors)
    tally = _Tally()
    with tempfile.TemporaryFile() as out:
        bundle = _Bundle(out)
        if instances is not None:
            _instances(instances, bundle, tally, errors)
        _predictions(predictions, bundle, by_source, tally, errors)
        limit = settings.SEJURY_BUNDLE_MAX_BYTES
        if bundle.size > limit:
            errors.append(SourceError(None, None, TOO_LARGE.format(limit=limit)))
        if errors:
            raise SwebenchImportError(errors.kept, more=errors.more)
        out.seek(0)
        names = [n.name for n in ([instances] if instances else []) + predictions + results]
        notes = _notes(tally, by_source, sources) + other_models
        try:
            with transaction.atomic():
                summary = bundle_import(
                    source=out,
                    dataset_name=dataset_name,
                    actor=actor,
                    filename=("swebench: " + ", ".join(names))[:255],
                    progress=progress,
                )
                if summary.record is not None and notes:
                    record = summary.record
                    record.summary["notes"] = notes + list(record.summary.get("notes", []))
                    record.save(update_fields=["summary"])
        except BundleImportError as exc:
            mapped = [bundle.source_error(error) for error in exc.errors]
            raise SwebenchImportError(mapped, more=exc.more) from exc
    summary.notes[:0] = notes
    return SwebenchSummary(
        bundle=summary, notes=summary.notes, empty_patches=sum(tally.empty.values())
    )
