"""The bundle's record kinds: the base class every kind implements, and their registry.

Imports no concrete kind. Each app registers its kinds from its ``AppConfig.ready()``
(``rubrics``: bug, patch, rubric; ``judging``: label), so that the import and export
services (``rubrics.bundle.services``) run every kind without knowing which app owns it.
"""

from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import User

from rubrics.bundle.read import (
    UNKNOWN_FIELD,
    BundleError,
    ErrorSink,
    FieldSpec,
    Record,
    fields_errors,
    shorten,
)
from rubrics.models import Bug, BundleImport, Dataset, Patch

FILE_TOO_LARGE = "the file is over the size limit of {limit:,} bytes"
MISSING_KIND = "missing field; every record needs a kind ({kinds})"
UNKNOWN_KIND = "unknown kind {kind!r}; expected one of: {kinds}"
DUPLICATE_IN_FILE = "duplicate {kind} {what} in the file: first given on line {first}"
EMPTY_FILE = "the file holds no records"
INVALID_REFERENCE = "{kind} {key!r} is itself invalid (line {line})"
UNKNOWN_REFERENCE = "unknown {kind} {key!r}: neither in this file nor in the dataset"
MORE_ERRORS = "{count} more errors not shown (only the first {shown} are listed)"

KIND_FIELD = frozenset({"kind"})
T = TypeVar("T")


class BundleImportError(Exception):
    """The bundle is invalid; nothing was written. ``errors`` says what and where."""

    def __init__(
        self, errors: list[BundleError], *, more: int = 0, grantable: tuple[str, ...] = ()
    ) -> None:
        self.errors = errors
        self.more = more
        # Existing users without any role that the file names as annotators: each has one
        # error, which the import's option ``grant_annotator_role`` would remove.
        self.grantable = grantable
        lines = [str(e) for e in errors]
        if more:
            lines.append(MORE_ERRORS.format(count=more, shown=len(errors)))
        super().__init__("\n".join(lines))

    @property
    def only_grantable(self) -> bool:
        """The annotator role is all that stops the import: every error is a user's whom
        ``grant_annotator_role`` would give it."""
        return bool(self.grantable) and len(self.grantable) == len(self.errors) + self.more


class BundleImportConflict(BundleImportError):
    """Another import changed the dataset at the same time; nothing was written, and the
    same file imported again may well succeed."""


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
    record: BundleImport | None = None  # the import's stored record


class ImportContext:
    """What checking and writing share: the target dataset, the keys of the file's records,
    lookups made once, the notes and statistics of the import."""

    def __init__(
        self,
        dataset: Dataset | None,
        *,
        file_keys: dict[str, set[str]] | None = None,
        invalid_keys: dict[str, dict[str, int]] | None = None,
        grant_annotator_role: bool = False,
    ) -> None:
        self.dataset = dataset
        # The lead's option: give the annotator role to the existing users without any role
        # whom the file names as annotators (the ``label`` kind), instead of refusing.
        self.grant_annotator_role = grant_annotator_role
        self.grantable: list[str] = []  # …those users, when the option is not given
        # Set by a kind whose errors it reports only once its records are all checked
        # (``RecordKind.checked``): nothing is written meanwhile.
        self.errors_pending = False
        self.actor: User | None = None  # set for the write: who imports
        self.errors: ErrorSink = []
        self.notes: list[str] = []
        self.stats: dict[str, int] = {}
        self._existing: dict[str, set[str]] = {}
        # The keys of the valid records of each kind in the file (bugs, patches).
        self._file_keys: dict[str, set[str]] = dict(file_keys or {})
        self._cache: dict[str, Any] = {}
        # Keys of records that failed validation, with their line, so that references to
        # them are reported as such and not as unknown.
        self.invalid_keys: dict[str, dict[str, int]] = defaultdict(dict, invalid_keys or {})

    def file_keys(self, kind: str) -> set[str]:
        """The keys of the ``kind`` records in the file."""
        return self._file_keys.get(kind, set())

    def reference_error(self, kind: str, key: str) -> str | None:
        """Why a reference to the ``kind`` (bug or patch) ``key`` does not resolve, or None.

        A reference resolves to a valid record of the file or to a row of the dataset.
        """
        if key in self.file_keys(kind):
            return None
        if key in self.invalid_keys[kind]:
            return INVALID_REFERENCE.format(kind=kind, key=key, line=self.invalid_keys[kind][key])
        if kind not in self._existing:
            found: set[str] = set()
            if self.dataset and kind == "bug":
                found = set(Bug.objects.filter(dataset=self.dataset).values_list("key", flat=True))
            elif self.dataset:
                patches = Patch.objects.filter(dataset=self.dataset)
                found = set(patches.values_list("key", flat=True))
            self._existing[kind] = found
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
    """One kind of bundle record: how to validate, write and export it.

    An import reads a file's records of one kind at a time, in ``order``, and never holds
    them all: ``write`` gets a batch (it may be called many times per import, and must look
    up only what its batch needs), then ``finish`` once, for what needs every record written
    (notes about the whole import). Statistics for those notes accumulate in ``ctx.stats``.
    """

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
        """Write one batch of checked records."""
        raise NotImplementedError

    def checked(self, ctx: ImportContext) -> None:
        """After every record of the kind is checked, written or not: for errors said once
        for many records (set ``ctx.errors_pending`` when the first is seen)."""

    def finish(self, ctx: ImportContext) -> None:
        """After every batch is written (also when the file holds no record of the kind)."""

    def export(self, dataset: Dataset) -> Iterator[dict[str, Any]]:
        raise NotImplementedError


_KINDS: dict[str, RecordKind] = {}


def register_kind(kind: RecordKind) -> None:
    _KINDS[kind.name] = kind


def registered_kinds() -> list[RecordKind]:
    return sorted(_KINDS.values(), key=lambda kind: kind.order)


def validate_shape(record: Record, errors: ErrorSink) -> RecordKind | None:
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
    for name, message in found:
        errors.append(BundleError(record.line, name, message))
    return None if found else kind


def kind_plural(kind: str, count: int = 2) -> str:
    """``patch`` → ``patches``, for messages that count records."""
    if count == 1:
        return kind
    return kind + ("es" if kind.endswith(("ch", "sh", "s", "x")) else "s")


def import_counts_text(bundle_import: BundleImport) -> str:
    """What a stored import did, e.g. ``6 bugs, 24 patches created``, kinds in their import
    order (PostgreSQL's jsonb keeps a summary's keys in its own order, not the written one)."""
    stored = bundle_import.summary
    order = [kind.name for kind in registered_kinds()]
    names = sorted(
        (name for name, value in stored.items() if name != "notes" and isinstance(value, dict)),
        key=lambda name: (order.index(name) if name in order else len(order), name),
    )
    return summary_text({name: KindCounts(**stored[name]) for name in names})


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
