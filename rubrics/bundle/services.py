"""The JSONL bundle: import (all or nothing) and export of a dataset.

A bundle holds one JSON object per line; its ``kind`` names a *record kind*
(``rubrics.bundle.base.RecordKind``). Each app registers its kinds from its
``AppConfig.ready()``: ``bug``, ``patch`` and ``rubric`` by this app, ``label`` by the
judging app (which owns annotations; ``rubrics`` never imports ``judging``). Reading lines
and checking fields lives in ``rubrics.bundle.read``.

An import reads the file line by line and never holds it, nor its records, whole: a 60 MB
bundle of 935,000 labels must not take a gigabyte (``bench/bundle_import.py`` measures it).

1. *Scan*: every line is parsed and its fields checked; what is kept is small per line: the
   record's kind (a byte per line), an 8-byte hash of its identity (for duplicates), and
   the keys of bugs and patches (for references).
2. *Check and write*: kind by kind, in kind order, the file is read again; each record gets
   its kind's checks (references, diffs, histories) and is written in batches
   (``BATCH_RECORDS`` records or ``BATCH_BYTES`` of lines), all inside one transaction.
   Once any error is known nothing more is written, the remaining records are still checked,
   and the transaction is rolled back: every error (up to ``SEJURY_BUNDLE_MAX_ERRORS``, the
   first by line) is reported with its line and field, and nothing is written. A file whose
   scan found errors is checked outside any transaction.

Writes are upserts keyed by the record's identity, so re-importing a bundle changes nothing.
"""

import hashlib
import heapq
import json
import shutil
import tempfile
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import IO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from rubrics.bundle.base import (
    DUPLICATE_IN_FILE,
    EMPTY_FILE,
    FILE_TOO_LARGE,
    BundleImportConflict,
    BundleImportError,
    ImportContext,
    ImportSummary,
    KindCounts,
    RecordKind,
    registered_kinds,
    validate_shape,
)
from rubrics.bundle.read import (
    BundleError,
    Record,
    line_text,
    parse_text,
    read_lines,
    shorten,
)
from rubrics.models import BundleImport, Dataset
from rubrics.selectors import dataset_resolve

INVALID_DATASET_NAME = "a dataset name needs at least one ASCII letter or digit"
DATASET_NAME_TOO_LONG = "a dataset name may have at most 200 characters"
DATASET_SLUG_TAKEN = "the name {name!r} makes the URL name {slug!r}, which dataset {other!r} has"
CONCURRENT_IMPORT = "another import changed this dataset at the same time; import the file again"

# A batch is written when it holds this many records or this many bytes of lines.
BATCH_RECORDS = 2000
BATCH_BYTES = 4 * 1024 * 1024
# How the two passes share the progress figure (the scan is the cheaper).
SCAN_SHARE = 0.25

# ``progress(phase, fraction)``: where an import is, for a page that follows it.
Progress = Callable[[str, float], None]


def dataset_slug(name: str) -> str:
    return slugify(name)[:200]


def _dataset_name_errors(name: str) -> list[BundleError]:
    """What stops ``name`` from naming a new dataset."""
    slug = dataset_slug(name)
    if len(name) > 200:
        return [BundleError(None, "dataset", DATASET_NAME_TOO_LONG)]
    if not slug:
        return [BundleError(None, "dataset", INVALID_DATASET_NAME)]
    other = Dataset.objects.filter(slug=slug).first()
    if other is not None:
        message = DATASET_SLUG_TAKEN.format(name=shorten(name), slug=slug, other=other.name)
        return [BundleError(None, "dataset", message)]
    return []


class ErrorList:
    """An import's errors: every one counted, the first ``keep`` by line kept.

    A file of a million bad lines must not hold a million errors; the page shows the first.
    """

    def __init__(self, keep: int) -> None:
        self.keep = max(1, keep)
        self.count = 0
        self._heap: list[tuple[int, int, BundleError]] = []  # (-line, -order): max at the top

    def append(self, error: BundleError) -> None:
        self.count += 1
        item = (-(error.line or 0), -self.count, error)
        if len(self._heap) < self.keep:
            heapq.heappush(self._heap, item)
        elif item > self._heap[0]:
            heapq.heapreplace(self._heap, item)

    def __len__(self) -> int:
        return self.count

    def first(self) -> list[BundleError]:
        """The kept errors, by line (errors without a line first), in the order found."""
        return [error for _, _, error in sorted(self._heap, reverse=True)]

    def raise_if_any(self, *, grantable: tuple[str, ...] = ()) -> None:
        if self.count:
            kept = self.first()
            raise BundleImportError(kept, more=self.count - len(kept), grantable=grantable)


def _identity_hash(kind: str, what: str) -> int:
    digest = hashlib.blake2b(f"{kind}\0{what}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@dataclass
class _Scan:
    """What the first pass keeps of a file: a few bytes per line."""

    kinds: list[RecordKind]
    line_kinds: bytearray = field(default_factory=bytearray)  # kind index + 1, or 0: skip
    hashes: array = field(default_factory=lambda: array("Q"))  # identity hash per record
    hash_lines: array = field(default_factory=lambda: array("Q"))  # …and its line
    file_keys: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    invalid_keys: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    records: int = 0  # non-blank lines
    valid: int = 0  # records that passed the scan
    sha256: str = ""
    size: int = 0


def _scan(stream: IO[bytes], errors: ErrorList, size: int, progress: Progress | None) -> _Scan:
    """Pass 1: parse every line and check its fields; find duplicate identities."""
    scan = _Scan(kinds=registered_kinds())
    index = {kind.name: number for number, kind in enumerate(scan.kinds, start=1)}
    digest = hashlib.sha256()
    for number, _, raw in read_lines(stream):
        digest.update(raw)
        scan.size += len(raw)
        scan.line_kinds.append(0)
        if progress and number % 20000 == 0:
            progress("reading", SCAN_SHARE * scan.size / max(size, 1))
        # The bytes go once decoded: a huge line is held as its text and what it parsed
        # (2 × its size), not also as bytes (issue 27).
        text = line_text(number, raw, errors)
        del raw
        record = None if text is None else parse_text(number, text, errors)
        del text
        if record is None:
            continue
        scan.records += 1
        kind = validate_shape(record, errors)
        if kind is None:
            kind_name, key = record.data.get("kind"), record.data.get("key")
            if isinstance(kind_name, str) and isinstance(key, str):
                scan.invalid_keys[kind_name].setdefault(key, record.line)
            continue
        scan.line_kinds[number - 1] = index[kind.name]
        scan.hashes.append(_identity_hash(kind.name, kind.identity(record.data)[1]))
        scan.hash_lines.append(number)
        if "key" in kind.fields:
            scan.file_keys[kind.name].add(record.data["key"])
        scan.valid += 1
    scan.sha256 = digest.hexdigest()
    _mark_duplicates(stream, scan, errors)
    return scan


def _mark_duplicates(stream: IO[bytes], scan: _Scan, errors: ErrorList) -> None:
    """Report each record whose identity an earlier line already gave, and skip it.

    Equal hashes are only candidates: their lines are read again and compared exactly.
    """
    import numpy as np  # here: every process imports this module at start, few import bundles

    hashes = np.frombuffer(scan.hashes, dtype=np.uint64) if scan.hashes else np.empty(0)
    values, counts = np.unique(hashes, return_counts=True)
    repeated = values[counts > 1]
    if not len(repeated):
        return
    lines = np.frombuffer(scan.hash_lines, dtype=np.uint64)[np.isin(hashes, repeated)]
    wanted = {int(line) for line in lines}
    first_seen: dict[tuple[str, str], int] = {}
    stream.seek(0)
    for number, _, raw in read_lines(stream):
        if number not in wanted:
            continue
        text = line_text(number, raw, [])
        del raw  # as in _scan
        record = None if text is None else parse_text(number, text, [])
        del text
        assert record is not None
        kind = scan.kinds[scan.line_kinds[number - 1] - 1]
        blamed_field, what = kind.identity(record.data)
        seen = first_seen.setdefault((kind.name, what), number)
        if seen != number:
            message = DUPLICATE_IN_FILE.format(kind=kind.name, what=what, first=seen)
            errors.append(BundleError(number, blamed_field, message))
            scan.line_kinds[number - 1] = 0
            scan.valid -= 1


def _records_of(stream: IO[bytes], scan: _Scan, kind_index: int) -> Iterator[tuple[Record, int]]:
    """The records of one kind that passed the scan, with their size in bytes, in order."""
    stream.seek(0)
    for number, _, raw in read_lines(stream):
        if scan.line_kinds[number - 1] == kind_index:
            size = len(raw)
            text = line_text(number, raw, [])
            del raw  # as in _scan
            record = None if text is None else parse_text(number, text, [])
            del text
            assert record is not None  # the scan parsed the same bytes
            yield record, size


def _check_and_write(
    stream: IO[bytes],
    scan: _Scan,
    ctx: ImportContext,
    errors: ErrorList,
    *,
    writing: bool,
    progress: Progress | None,
) -> dict[str, KindCounts]:
    """Pass 2: check each record against the file and the dataset; write while valid."""
    counts: dict[str, KindCounts] = {}
    done = 0
    for kind_index, kind in enumerate(scan.kinds, start=1):
        total = counts[kind.name] = KindCounts()
        batch: list[Record] = []
        batch_bytes = 0

        def flush(kind: RecordKind = kind, total: KindCounts = total) -> None:
            nonlocal batch, batch_bytes
            if writing and not errors and not ctx.errors_pending and batch:
                written = kind.write(batch, ctx)
                total.created += written.created
                total.updated += written.updated
                total.unchanged += written.unchanged
            batch, batch_bytes = [], 0

        for record, size in _records_of(stream, scan, kind_index):
            kind.check(record, ctx)
            batch.append(record)
            batch_bytes += size
            done += 1
            if len(batch) >= BATCH_RECORDS or batch_bytes >= BATCH_BYTES:
                flush()
                if progress:
                    share = done / max(scan.valid, 1)
                    progress(
                        f"importing {kind.name} records", SCAN_SHARE + (1 - SCAN_SHARE) * share
                    )
        flush()
        kind.checked(ctx)
        if writing and not errors:
            kind.finish(ctx)
    return counts


@contextmanager
def _seekable(source: IO[bytes]) -> Iterator[IO[bytes]]:
    """``source`` itself if it can be read twice, else a temporary copy of it."""
    if source.seekable():
        yield source
        return
    with tempfile.TemporaryFile() as copy:
        limit = settings.SEJURY_BUNDLE_MAX_BYTES
        shutil.copyfileobj(_capped(source, limit + 1), copy)
        copy.seek(0)
        yield copy


def _capped(source: IO[bytes], limit: int) -> IO[bytes]:
    class Capped:
        left = limit

        def read(self, size: int = -1) -> bytes:
            size = self.left if size < 0 else min(size, self.left)
            data = source.read(size)
            self.left -= len(data)
            return data

    return Capped()  # type: ignore[return-value]


def bundle_import(
    *,
    source: IO[bytes],
    dataset_name: str,
    actor: User | None,
    filename: str = "",
    progress: Progress | None = None,
    written: Callable[[BundleImport], None] | None = None,
    grant_annotator_role: bool = False,
) -> ImportSummary:
    """Import a bundle into the dataset ``dataset_name`` (created if new), all or nothing.

    ``dataset_name`` names an existing dataset by its name or its slug, or a new one.
    ``source`` is read from where it stands, twice or more (a file that cannot seek is
    copied to a temporary file first); ``progress`` hears how far the import is.
    ``written`` is called with the import's record inside its transaction, once every line
    is written: what it writes commits with the import, and what it raises rolls it back.
    ``grant_annotator_role``: the existing users without any role whom the file's labels
    name get the annotator role (audited) instead of refusing the import; a lead or a
    reviewer never does.

    Raises :class:`BundleImportError` listing every problem (up to the configured cap);
    in that case nothing has been written.
    """
    dataset_name = dataset_name.strip()
    dataset = dataset_resolve(dataset_name)
    if dataset is None and (name_errors := _dataset_name_errors(dataset_name)):
        raise BundleImportError(name_errors)
    try:
        with _seekable(source) as stream:
            return _import(
                stream,
                dataset,
                dataset_name,
                actor,
                filename,
                progress,
                written,
                grant_annotator_role,
            )
    except IntegrityError as exc:  # a concurrent import created the same rows first
        raise BundleImportConflict([BundleError(None, None, CONCURRENT_IMPORT)]) from exc


class _Stream:
    """A view of ``source`` from where it stood: line offsets and seeks start there."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.start = source.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.source.seek(self.start + offset if whence == 0 else offset, whence)

    def readline(self, size: int = -1) -> bytes:
        return self.source.readline(size)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.source.readline, b"")


def _import(
    source: IO[bytes],
    dataset: Dataset | None,
    name: str,
    actor: User | None,
    filename: str,
    progress: Progress | None,
    written: Callable[[BundleImport], None] | None = None,
    grant_annotator_role: bool = False,
) -> ImportSummary:
    limit = settings.SEJURY_BUNDLE_MAX_BYTES
    stream: IO[bytes] = _Stream(source)  # type: ignore[assignment]
    size = source.seek(0, 2) - stream.start  # type: ignore[attr-defined]
    if size > limit:
        raise BundleImportError([BundleError(None, None, FILE_TOO_LARGE.format(limit=limit))])
    stream.seek(0)
    errors = ErrorList(settings.SEJURY_BUNDLE_MAX_ERRORS)
    scan = _scan(stream, errors, size, progress)
    if scan.records == 0 and not errors:
        errors.append(BundleError(None, None, EMPTY_FILE))
    writing = not errors
    ctx = ImportContext(
        dataset,
        file_keys=scan.file_keys,
        invalid_keys=scan.invalid_keys,
        grant_annotator_role=grant_annotator_role,
    )
    ctx.errors = errors
    ctx.actor = actor if actor and actor.pk else None
    with transaction.atomic() if writing else nullcontext():
        created = dataset is None
        if writing and dataset is None:
            ctx.dataset = dataset = Dataset.objects.create(name=name, slug=dataset_slug(name))
        counts = _check_and_write(stream, scan, ctx, errors, writing=writing, progress=progress)
        errors.raise_if_any(grantable=tuple(ctx.grantable))
        assert dataset is not None
        unchanged = not created and all(c.created == 0 and c.updated == 0 for c in counts.values())
        record = BundleImport.objects.create(
            dataset=dataset,
            imported_by=ctx.actor,
            filename=filename[:255],
            sha256=scan.sha256,
            size=scan.size,
            summary={kind: vars(c) for kind, c in counts.items()} | {"notes": ctx.notes},
        )
        if written:
            written(record)
    if progress:
        progress("done", 1.0)
    return ImportSummary(
        dataset=dataset,
        dataset_created=created,
        counts=counts,
        notes=ctx.notes,
        unchanged=unchanged,
        record=record,
    )


def bundle_export(*, dataset: Dataset) -> Iterator[str]:
    """The dataset as bundle lines (with their newline), in a stable order."""
    for kind in registered_kinds():
        for obj in kind.export(dataset):
            yield json.dumps({"kind": kind.name, **obj}, ensure_ascii=False) + "\n"
