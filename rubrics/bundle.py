"""The JSONL bundle: import (all or nothing) and export of a dataset.

A bundle holds one JSON object per line; its ``kind`` names a *record kind*. Each kind is a
:class:`RecordKind` registered here: ``bug``, ``patch`` and ``rubric`` by this app, ``label``
by the judging app (which owns annotations; ``rubrics`` never imports ``judging``). Reading
lines and checking fields lives in ``bundle_read``; its names are importable from here.

Import runs in two phases. Validation reads the whole file and collects every error (up to
``SEJURY_BUNDLE_MAX_ERRORS``) with its line number and field; if there is any, nothing is
written. Otherwise every kind writes its records in one transaction, in kind order, as
upserts keyed by the record's identity, so re-importing a bundle changes nothing.
"""

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from .bundle_read import (
    BAD_TEXT,
    EMPTY_VALUE,
    INVALID_JSON,
    KEY_FIELD,
    MISSING_FIELD,
    NOT_AN_OBJECT,
    NOT_FINITE,
    NOT_UTF8,
    TOO_DEEP,
    UNKNOWN_FIELD,
    WRONG_TYPE,
    BundleError,
    FieldSpec,
    Record,
    check_key,
    fields_errors,
    read_records,
    shorten,
)
from .models import Bug, BundleImport, Dataset, Patch

# The bundle's public API, with the names of bundle_read that it re-exports.
__all__ = [
    "BAD_TEXT",
    "CONCURRENT_IMPORT",
    "DATASET_NAME_TOO_LONG",
    "DATASET_SLUG_TAKEN",
    "DUPLICATE_IN_FILE",
    "EMPTY_FILE",
    "EMPTY_VALUE",
    "FILE_TOO_LARGE",
    "INVALID_DATASET_NAME",
    "INVALID_JSON",
    "INVALID_REFERENCE",
    "KEY_FIELD",
    "MISSING_FIELD",
    "MISSING_KIND",
    "MORE_ERRORS",
    "NOT_AN_OBJECT",
    "NOT_FINITE",
    "NOT_UTF8",
    "TOO_DEEP",
    "UNKNOWN_FIELD",
    "UNKNOWN_KIND",
    "UNKNOWN_REFERENCE",
    "WRONG_TYPE",
    "BundleError",
    "BundleImportError",
    "FieldSpec",
    "ImportContext",
    "ImportSummary",
    "KindCounts",
    "Record",
    "RecordKind",
    "bundle_export",
    "bundle_import",
    "bundle_validate",
    "check_key",
    "dataset_resolve",
    "dataset_slug",
    "kind_plural",
    "register_kind",
    "registered_kinds",
    "shorten",
    "summary_text",
]

FILE_TOO_LARGE = "the file is over the size limit of {limit:,} bytes"
MISSING_KIND = "missing field; every record needs a kind ({kinds})"
UNKNOWN_KIND = "unknown kind {kind!r}; expected one of: {kinds}"
DUPLICATE_IN_FILE = "duplicate {kind} {what} in the file: first given on line {first}"
EMPTY_FILE = "the file holds no records"
INVALID_DATASET_NAME = "a dataset name needs at least one ASCII letter or digit"
DATASET_NAME_TOO_LONG = "a dataset name may have at most 200 characters"
DATASET_SLUG_TAKEN = "the name {name!r} makes the URL name {slug!r}, which dataset {other!r} has"
INVALID_REFERENCE = "{kind} {key!r} is itself invalid (line {line})"
UNKNOWN_REFERENCE = "unknown {kind} {key!r}: neither in this file nor in the dataset"
CONCURRENT_IMPORT = "another import changed this dataset at the same time; import the file again"
MORE_ERRORS = "{count} more errors not shown (only the first {shown} are listed)"

T = TypeVar("T")

KIND_FIELD = frozenset({"kind"})


class BundleImportError(Exception):
    """The bundle is invalid; nothing was written. ``errors`` says what and where."""

    def __init__(self, errors: list[BundleError], *, more: int = 0) -> None:
        self.errors = errors
        self.more = more
        lines = [str(e) for e in errors]
        if more:
            lines.append(MORE_ERRORS.format(count=more, shown=len(errors)))
        super().__init__("\n".join(lines))


@dataclass
class KindCounts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass
class ImportSummary:
    dataset: Dataset
    dataset_created: bool
    counts: dict[str, KindCounts]
    notes: list[str]
    unchanged: bool  # True when the import wrote nothing new


class ImportContext:
    """What validation and writing share: the target dataset and the keys seen so far."""

    def __init__(self, dataset: Dataset | None, records: dict[str, list[Record]]) -> None:
        self.dataset = dataset
        self.records = records
        self.acting_user: User | None = None  # set for the write: who imports
        self.errors: list[BundleError] = []
        self.notes: list[str] = []
        self.stats: dict[str, int] = {}
        self._existing: dict[str, set[str]] = {}
        self._file_keys: dict[str, set[str]] = {}
        self._cache: dict[str, Any] = {}
        # Keys of records that failed validation, with their line, so that references to
        # them are reported as such and not as unknown.
        self.invalid_keys: dict[str, dict[str, int]] = defaultdict(dict)

    def file_keys(self, kind: str) -> set[str]:
        """The keys of the ``kind`` records in the file (computed once)."""
        if kind not in self._file_keys:
            self._file_keys[kind] = {r.data["key"] for r in self.records.get(kind, [])}
        return self._file_keys[kind]

    def reference_error(self, kind: str, key: str) -> str | None:
        """Why a reference to the ``kind`` (bug or patch) ``key`` does not resolve, or None.

        A reference resolves to a valid record of the file or to a row of the dataset.
        """
        if key in self.file_keys(kind):
            return None
        if key in self.invalid_keys[kind]:
            return INVALID_REFERENCE.format(kind=kind, key=key, line=self.invalid_keys[kind][key])
        if kind not in self._existing:
            rows = {"bug": Bug.objects, "patch": Patch.objects}[kind].filter(dataset=self.dataset)
            found = rows.values_list("key", flat=True) if self.dataset else []
            self._existing[kind] = set(found)
        if key in self._existing[kind]:
            return None
        return UNKNOWN_REFERENCE.format(kind=kind, key=key)

    def cached(self, name: str, load: Callable[[], T]) -> T:
        """``load()``, computed once per import (for lookups that every record needs)."""
        if name not in self._cache:
            self._cache[name] = load()
        return self._cache[name]

    def error(self, record: Record, field_name: str | None, message: str) -> None:
        self.errors.append(BundleError(record.line, field_name, message))


class RecordKind:
    """One kind of bundle record: how to validate, write and export it."""

    name: str
    order: int  # kinds are written (and exported) in this order
    fields: dict[str, FieldSpec]

    def identity(self, data: dict[str, Any]) -> tuple[str, str]:
        """What must be unique within a file: the field to blame and a description.

        For example ``("key", "key 'Chart-1'")``.
        """
        raise NotImplementedError

    def check(self, record: Record, ctx: ImportContext) -> None:
        """Validate beyond field types (references, diffs); report through ``ctx.error``."""

    def write(self, records: list[Record], ctx: ImportContext) -> KindCounts:
        raise NotImplementedError

    def export(self, dataset: Dataset) -> Iterator[dict[str, Any]]:
        raise NotImplementedError


_KINDS: dict[str, RecordKind] = {}


def register_kind(kind: RecordKind) -> None:
    _KINDS[kind.name] = kind


def registered_kinds() -> list[RecordKind]:
    return sorted(_KINDS.values(), key=lambda kind: kind.order)


def register_core_kinds() -> None:
    from .bundle_kinds import BugKind, PatchKind
    from .bundle_rubrics import RubricKind

    register_kind(BugKind())
    register_kind(PatchKind())
    register_kind(RubricKind())


def _validate_shape(record: Record, errors: list[BundleError]) -> RecordKind | None:
    """The record's kind, if the record has a known kind and valid fields."""
    kinds = ", ".join(sorted(_KINDS))
    kind_name = record.data.get("kind")
    if kind_name is None:
        errors.append(BundleError(record.line, "kind", MISSING_KIND.format(kinds=kinds)))
        return None
    if not isinstance(kind_name, str) or kind_name not in _KINDS:
        unknown = UNKNOWN_KIND.format(kind=shorten(kind_name), kinds=kinds)
        errors.append(BundleError(record.line, "kind", unknown))
        return None
    kind = _KINDS[kind_name]
    unknown_field = UNKNOWN_FIELD.format(kind=kind.name, allowed=", ".join(kind.fields))
    found = fields_errors(record.data, kind.fields, unknown=unknown_field, ignore=KIND_FIELD)
    errors.extend(BundleError(record.line, name, message) for name, message in found)
    return None if found else kind


def kind_plural(kind: str, count: int = 2) -> str:
    """``patch`` → ``patches``, for messages that count records."""
    if count == 1:
        return kind
    return kind + ("es" if kind.endswith(("ch", "sh", "s", "x")) else "s")


def summary_text(counts: dict[str, KindCounts]) -> str:
    """``6 bugs, 24 patches created; 1 label updated`` (or ``nothing new``)."""
    parts = []
    for verb in ("created", "updated"):
        items = [
            f"{getattr(c, verb)} {kind_plural(kind, getattr(c, verb))}"
            for kind, c in counts.items()
            if getattr(c, verb)
        ]
        if items:
            parts.append(f"{', '.join(items)} {verb}")
    return "; ".join(parts) if parts else "nothing new (every record was already there)"


def dataset_slug(name: str) -> str:
    return slugify(name)[:200]


def dataset_resolve(name: str) -> Dataset | None:
    """The dataset called ``name``, or whose slug is ``name``."""
    name = name.strip()
    return Dataset.objects.filter(name=name).first() or Dataset.objects.filter(slug=name).first()


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


def bundle_validate(*, data: bytes, dataset: Dataset | None) -> ImportContext:
    """Read and check a whole bundle; the context's ``errors`` lists what is wrong."""
    errors: list[BundleError] = []
    records: dict[str, list[Record]] = defaultdict(list)
    invalid_keys: dict[str, dict[str, int]] = defaultdict(dict)
    first_seen: dict[tuple[str, str], int] = {}
    count = 0
    for record in read_records(data, errors):
        count += 1
        kind = _validate_shape(record, errors)
        if kind is None:
            kind_name, key = record.data.get("kind"), record.data.get("key")
            if isinstance(kind_name, str) and isinstance(key, str):
                invalid_keys[kind_name].setdefault(key, record.line)
            continue
        blamed_field, what = kind.identity(record.data)
        seen = first_seen.setdefault((kind.name, what), record.line)
        if seen != record.line:
            message = DUPLICATE_IN_FILE.format(kind=kind.name, what=what, first=seen)
            errors.append(BundleError(record.line, blamed_field, message))
            continue
        records[kind.name].append(record)
    if count == 0 and not errors:
        errors.append(BundleError(None, None, EMPTY_FILE))
    ctx = ImportContext(dataset, records)
    ctx.errors = errors
    ctx.invalid_keys = invalid_keys
    for kind in registered_kinds():
        for record in records.get(kind.name, []):
            kind.check(record, ctx)
    ctx.errors.sort(key=lambda e: e.line or 0)
    return ctx


def bundle_import(
    *,
    source: IO[bytes],
    dataset_name: str,
    acting_user: User | None,
    filename: str = "",
) -> ImportSummary:
    """Import a bundle into the dataset ``dataset_name`` (created if new), all or nothing.

    ``dataset_name`` names an existing dataset by its name or its slug, or a new one.

    Raises :class:`BundleImportError` listing every problem (up to the configured cap);
    in that case nothing has been written.
    """
    limit = settings.SEJURY_BUNDLE_MAX_BYTES
    data = source.read(limit + 1)
    if len(data) > limit:
        raise BundleImportError([BundleError(None, None, FILE_TOO_LARGE.format(limit=limit))])
    dataset_name = dataset_name.strip()
    dataset = dataset_resolve(dataset_name)
    if dataset is None and (name_errors := _dataset_name_errors(dataset_name)):
        raise BundleImportError(name_errors)

    ctx = bundle_validate(data=data, dataset=dataset)
    if ctx.errors:
        cap = settings.SEJURY_BUNDLE_MAX_ERRORS
        raise BundleImportError(ctx.errors[:cap], more=max(0, len(ctx.errors) - cap))

    try:
        return _write(
            ctx, data=data, dataset=dataset, name=dataset_name, user=acting_user, filename=filename
        )
    except IntegrityError as exc:  # a concurrent import created the same rows first
        raise BundleImportError([BundleError(None, None, CONCURRENT_IMPORT)]) from exc


@transaction.atomic
def _write(
    ctx: ImportContext,
    *,
    data: bytes,
    dataset: Dataset | None,
    name: str,
    user: User | None,
    filename: str,
) -> ImportSummary:
    created = dataset is None
    if dataset is None:
        dataset = Dataset.objects.create(name=name, slug=dataset_slug(name))
    ctx.dataset = dataset
    ctx.acting_user = user if user and user.pk else None
    counts = {
        kind.name: kind.write(ctx.records.get(kind.name, []), ctx) for kind in registered_kinds()
    }
    unchanged = not created and all(c.created == 0 and c.updated == 0 for c in counts.values())
    BundleImport.objects.create(
        dataset=dataset,
        imported_by=user if user and user.pk else None,
        filename=filename[:255],
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        summary={kind: vars(c) for kind, c in counts.items()} | {"notes": ctx.notes},
    )
    return ImportSummary(
        dataset=dataset,
        dataset_created=created,
        counts=counts,
        notes=ctx.notes,
        unchanged=unchanged,
    )


def bundle_export(*, dataset: Dataset) -> Iterator[str]:
    """The dataset as bundle lines (with their newline), in a stable order."""
    for kind in registered_kinds():
        for obj in kind.export(dataset):
            yield json.dumps({"kind": kind.name, **obj}, ensure_ascii=False) + "\n"
