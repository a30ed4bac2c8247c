"""The harness's logs: one ``report.json`` per instance, given as a folder, a zip or files.

``swebench.harness.run_evaluation`` writes each instance's report to
``logs/run_evaluation/<run_id>/<model>/<instance_id>/report.json`` (the model's name with
``/`` as ``__``), beside its logs. The file names no model; its path does. So a folder (the
command) or a zip (the Import page: a browser sends a file's name without its folder) is
read for its ``report.json`` files, every other file ignored, and each file keeps its path
as its name. :func:`per_instance_grouped` then reads the model and the run from each path
(when the folder above the file is named after the instance the file reports, as the
harness names it) and makes the reports of one model run one report. Loose ``report.json``
files, whose paths are lost, are one report of an unnamed model: with predictions of one
model, that model's.

What is read is bounded: at most ``SEJURY_BUNDLE_MAX_BYTES`` of reports from one folder or
zip, counted as they are read (a zip's stated sizes are not trusted).
"""

import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings

from rubrics.swebench.read import SourceError, SourceErrors
from rubrics.swebench.results import Report, per_instance_merge

REPORT_NAME = "report.json"
ZIP_MAGIC = b"PK\x03\x04"
NO_REPORTS = (
    "no report.json in this {what}: the harness writes one per instance, in "
    "logs/run_evaluation/<run_id>/<model>/<instance_id>/report.json"
)
NOT_A_ZIP = "not a readable zip file: {error}"
TOO_LARGE = (
    "its report.json files are over the import's size limit of {limit:,} bytes "
    "(SEJURY_BUNDLE_MAX_BYTES): give the reports of fewer model runs at a time"
)
LOOSE = "{count} report.json files"
# What reading a damaged zip raises (a mangled archive, found by fuzzing: zlib's error for a
# bad deflate stream, EOFError and ValueError for cut or inconsistent headers).
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    OSError,
    EOFError,
    ValueError,
    zlib.error,
)


@dataclass(frozen=True)
class Place:
    """Where the harness wrote a per-instance report: its run, its model, its instance."""

    run_id: str | None
    model_dir: str
    instance_id: str

    @property
    def folder(self) -> str:
        return f"{self.run_id}/{self.model_dir}" if self.run_id else self.model_dir


def place(name: str) -> Place | None:
    """The run, model and instance a ``report.json``'s path names, if it has them (in a
    zip, its path in the zip: the zip's own name is no model)."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    zips = [n for n, part in enumerate(parts[:-1]) if part.lower().endswith(".zip")]
    parts = parts[zips[-1] + 1 :] if zips else parts
    if len(parts) < 3 or parts[-1] != REPORT_NAME:
        return None
    run_id = parts[-4] if len(parts) >= 4 and parts[-4] not in ("/", "") else None
    return Place(run_id, parts[-3], parts[-2])


def is_zip(stream: IO[bytes]) -> bool:
    stream.seek(0)
    head = stream.read(4)
    stream.seek(0)
    return head == ZIP_MAGIC


def zip_reports(stream: IO[bytes], name: str, errors: SourceErrors) -> list[tuple[str, bytes]]:
    """The ``report.json`` files of a zip, each named ``<zip>/<path in the zip>``."""
    limit = settings.SEJURY_BUNDLE_MAX_BYTES
    found: list[tuple[str, bytes]] = []
    total = 0
    try:
        with zipfile.ZipFile(stream) as archive:
            for member in archive.infolist():
                if member.is_dir() or PurePosixPath(member.filename).name != REPORT_NAME:
                    continue
                with archive.open(member) as opened:
                    data = opened.read(limit - total + 1)
                total += len(data)
                if total > limit:
                    errors.append(SourceError(None, None, TOO_LARGE.format(limit=limit), file=name))
                    return []
                found.append((f"{name}/{member.filename}", data))
    except ZIP_ERRORS as exc:
        errors.append(SourceError(None, None, NOT_A_ZIP.format(error=exc), file=name))
        return []
    if not found:
        errors.append(SourceError(None, None, NO_REPORTS.format(what="zip"), file=name))
    return found


def folder_reports(folder: Path) -> Iterator[Path]:
    """The ``report.json`` files under ``folder``, in the order of their paths."""
    return iter(sorted(folder.rglob(REPORT_NAME)))


def folder_read(folder: Path, errors: SourceErrors) -> list[tuple[str, bytes]]:
    """The ``report.json`` files under ``folder``, read, each named by its path."""
    limit = settings.SEJURY_BUNDLE_MAX_BYTES
    found: list[tuple[str, bytes]] = []
    total = 0
    for path in folder_reports(folder):
        if not path.is_file():
            continue
        with path.open("rb") as opened:
            data = opened.read(limit - total + 1)
        total += len(data)
        if total > limit:
            errors.append(SourceError(None, None, TOO_LARGE.format(limit=limit), file=str(folder)))
            return []
        found.append((str(path), data))
    if not found:
        errors.append(SourceError(None, None, NO_REPORTS.format(what="folder"), file=str(folder)))
    return found


def per_instance_grouped(reports: list[Report], errors: SourceErrors) -> list[Report]:
    """The reports with the per-instance ones of each model run merged into one, the model
    and run read from their paths; the others as they were."""
    others: list[Report] = []
    groups: dict[tuple[str | None, str | None], list[Report]] = defaultdict(list)
    folders: dict[tuple[str | None, str | None], str] = {}
    for report in reports:
        if report.form != "per-instance":
            others.append(report)
            continue
        where = place(report.file)
        if where is not None and report.instances == {where.instance_id}:
            report.model_dir, report.run_id = where.model_dir, where.run_id
            key: tuple[str | None, str | None] = (where.run_id, where.model_dir)
            folder = report.file.replace("\\", "/").rsplit("/", 2)[0] + "/"
            folders.setdefault(key, folder)
        else:
            key = (None, None)
        groups[key].append(report)
    for key, group in groups.items():
        if len(group) == 1 and key == (None, None):
            others.append(group[0])
            continue
        name = folders.get(key) or LOOSE.format(count=len(group))
        others.append(per_instance_merge(group, name, errors))
    return others
