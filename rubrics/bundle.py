"""The JSONL bundle: import (all or nothing) and export of a dataset.

A bundle holds one JSON object per line; its ``kind`` names a *record kind*. Each kind is a
:class:`RecordKind` registered here: ``bug`` and ``patch`` by this app, ``label`` by the
judging app (which owns annotations; ``rubrics`` never imports ``judging``).

Import runs in two phases. Validation reads the whole file and collects every error (up to
``SEJURY_BUNDLE_MAX_ERRORS``) with its line number and field; if there is any, nothing is
written. Otherwise every kind writes its records in one transaction, in kind order, as
upserts keyed by the record's identity, so re-importing a bundle changes nothing.
"""

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from .models import Bug, BundleImport, Dataset, Patch

FILE_TOO_LARGE = "the file is over the size limit of {limit:,} bytes"
NOT_UTF8 = "not valid UTF-8 (byte {byte} of the line)"
INVALID_JSON = "invalid JSON: {error}"
NOT_AN_OBJECT = "a record must be a JSON object, got {type}"
MISSING_KIND = "missing field; every record needs a kind ({kinds})"
UNKNOWN_KIND = "unknown kind {kind!r}; expected one of: {kinds}"
RUBRIC_NOT_SUPPORTED = (
    "rubric records are not supported yet: this version of SE-Jury web imports bug, "
    "patch and label records only; remove the rubric lines to import the rest"
)
MISSING_FIELD = "missing required field"
UNKNOWN_FIELD = "unknown field for a {kind} record (allowed: {allowed})"
WRONG_TYPE = "expected {expected}, got {got}"
EMPTY_VALUE = "must not be empty"
DUPLICATE_IN_FILE = "duplicate {kind} {what} in the file: first given on line {first}"
EMPTY_FILE = "the file holds no records"
INVALID_DATASET_NAME = "a dataset name needs at least one ASCII letter or digit"
DATASET_NAME_TOO_LONG = "a dataset name may have at most 200 characters"
DATASET_SLUG_TAKEN = "the name {name!r} makes the URL name {slug!r}, which dataset {other!r} has"
TOO_DEEP = "invalid JSON: nested too deeply"
NOT_FINITE = "invalid JSON: the number {value} is too large"
BAD_TEXT = "contains {what}, which cannot be stored"
INVALID_REFERENCE = "{kind} {key!r} is itself invalid (line {line})"
UNKNOWN_REFERENCE = "unknown {kind} {key!r}: neither in this file nor in the dataset"
CONCURRENT_IMPORT = "another import changed this dataset at the same time; import the file again"
MORE_ERRORS = "{count} more errors not shown (only the first {shown} are listed)"

T = TypeVar("T")

# Kinds known by name that this version cannot import, with the reason.
UNSUPPORTED_KINDS = {"rubric": RUBRIC_NOT_SUPPORTED}


@dataclass(frozen=True)
class BundleError:
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line is not None else []
        if self.field:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


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
class Record:
    line: int
    data: dict[str, Any]
    # What validation derived (a parsed diff's hash, a resolved reference), for the write.
    derived: dict[str, Any] = field(default_factory=dict)


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


@dataclass(frozen=True)
class FieldSpec:
    types: tuple[type, ...]
    required: bool = False
    nullable: bool = False
    non_empty: bool = False
    max_length: int | None = None
    check: Callable[[Any], str | None] | None = None  # returns an error message or None

    def validate(self, value: Any) -> str | None:
        if value is None:
            return (
                None if self.nullable else WRONG_TYPE.format(expected=self.describe(), got="null")
            )
        # bool is an int in Python; JSON keeps them apart, and so do we.
        if isinstance(value, bool) and bool not in self.types:
            return WRONG_TYPE.format(expected=self.describe(), got=_json_type(value))
        if not isinstance(value, self.types):
            return WRONG_TYPE.format(expected=self.describe(), got=_json_type(value))
        if self.non_empty and isinstance(value, str) and not value.strip():
            return EMPTY_VALUE
        if self.max_length is not None and isinstance(value, str) and len(value) > self.max_length:
            return f"longer than {self.max_length} characters"
        return self.check(value) if self.check else None

    def describe(self) -> str:
        names = [_TYPE_NAMES[t] for t in self.types]
        if self.nullable:
            names.append("null")
        return " or ".join(names)


_TYPE_NAMES: dict[type, str] = {str: "a string", dict: "an object", bool: "true or false"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    return "an object"


def check_key(value: str) -> str | None:
    if "/" in value or value != value.strip():
        return "a key must not contain '/' or start or end with whitespace"
    return None


KEY_FIELD = FieldSpec((str,), required=True, non_empty=True, max_length=200, check=check_key)


class ImportContext:
    """What validation and writing share: the target dataset and the keys seen so far."""

    def __init__(self, dataset: Dataset | None, records: dict[str, list[Record]]) -> None:
        self.dataset = dataset
        self.records = records
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

    register_kind(BugKind())
    register_kind(PatchKind())


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(NOT_FINITE.format(value=shorten(text)))
    return value


def shorten(value: object, limit: int = 80) -> str:
    """``value`` as text, cut to ``limit`` characters, for echoing user input in errors."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bad_text(value: Any) -> str | None:
    """What makes a JSON value unstorable: a NUL or an unpaired surrogate in any string."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return "a NUL character (\\u0000)"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "an unpaired surrogate (\\ud800–\\udfff), which is not Unicode"
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _read_records(data: bytes, errors: list[BundleError]) -> Iterator[Record]:
    """Yield each non-blank line's object; report undecodable lines to ``errors``."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        raw = raw.removesuffix(b"\r")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(BundleError(number, None, NOT_UTF8.format(byte=exc.start + 1)))
            continue
        if not text.strip():
            continue
        try:
            obj = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        except RecursionError:
            errors.append(BundleError(number, None, TOO_DEEP))
            continue
        except ValueError as exc:
            message = (
                str(exc) if str(exc).startswith("invalid JSON") else INVALID_JSON.format(error=exc)
            )
            errors.append(BundleError(number, None, message))
            continue
        if not isinstance(obj, dict):
            errors.append(BundleError(number, None, NOT_AN_OBJECT.format(type=_json_type(obj))))
            continue
        bad = [(name, what) for name, value in obj.items() if (what := _bad_text([name, value]))]
        for name, what in bad:
            errors.append(BundleError(number, shorten(name), BAD_TEXT.format(what=what)))
        if not bad:
            yield Record(line=number, data=obj)


def _validate_shape(record: Record, errors: list[BundleError]) -> RecordKind | None:
    kinds = ", ".join(sorted(_KINDS))
    kind_name = record.data.get("kind")
    if kind_name is None:
        errors.append(BundleError(record.line, "kind", MISSING_KIND.format(kinds=kinds)))
        return None
    if not isinstance(kind_name, str) or kind_name not in _KINDS:
        message = UNSUPPORTED_KINDS.get(kind_name) if isinstance(kind_name, str) else None
        unknown = UNKNOWN_KIND.format(kind=shorten(kind_name), kinds=kinds)
        errors.append(BundleError(record.line, "kind", message or unknown))
        return None
    kind = _KINDS[kind_name]
    ok = True
    for name in record.data:
        if name != "kind" and name not in kind.fields:
            allowed = ", ".join(kind.fields)
            errors.append(
                BundleError(
                    record.line,
                    shorten(name),
                    UNKNOWN_FIELD.format(kind=kind.name, allowed=allowed),
                )
            )
            ok = False
    for name, spec in kind.fields.items():
        if name not in record.data:
            if spec.required:
                errors.append(BundleError(record.line, name, MISSING_FIELD))
                ok = False
            continue
        message = spec.validate(record.data[name])
        if message:
            errors.append(BundleError(record.line, name, message))
            ok = False
    return kind if ok else None


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
    for record in _read_records(data, errors):
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
