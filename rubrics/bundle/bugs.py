"""The ``bug`` and ``patch`` record kinds of the bundle, and the upsert they share."""

import json
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, TypeVar

from django.db import models
from django.db.models import F
from django.utils import timezone

from rubrics.bundle.base import ImportContext, KindCounts, RecordKind
from rubrics.bundle.read import (
    KEY_FIELD,
    MAX_DESCRIPTION,
    MAX_DIFF,
    MAX_METADATA,
    METADATA_FIELD,
    METADATA_TOO_LONG,
    FieldSpec,
    Record,
)
from rubrics.models import Bug, Dataset, Patch
from sejury_web.diffs import DiffError, parse_diff
from sejury_web.diffs import normalized_diff_hash as diff_hash

PATCH_MOVED = (
    "patch {key!r} belongs to bug {old!r} in the dataset; a bundle cannot move it to bug "
    "{new!r} (its labels would follow): give the patch a new key"
)
RECOUNTED_NOTE = (
    "{recounted} of {total} diffs have hunk headers whose line counts disagree with their "
    "bodies; they were recounted (as git apply --recount does) and stored as given"
)
DUPLICATES_NOTE = (
    "{count} patches repeat another patch of the same bug (same normalized diff): {pairs}"
)

TESTS_STATUS_LISTS = ("FAIL_TO_PASS", "PASS_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_FAIL")
TESTS_STATUS_PARTS = ("success", "failure")
TESTS_STATUS_SHAPE = (
    "expected the harness's tests_status: {lists}, each an object of 'success' and "
    "'failure' arrays of test names (and 'left_out', the length of each list left out)"
)
MAX_TESTS_STATUS = MAX_METADATA
MAX_TESTS_NOTE = 500

M = TypeVar("M", bound=models.Model)
K = TypeVar("K", bound=Hashable)


def upsert(
    *,
    model: type[M],
    existing: Mapping[K, M],
    wanted: Mapping[K, dict[str, Any]],
    build: Callable[[K, dict[str, Any]], M],
    on_update: dict[str, Any] | None = None,
) -> KindCounts:
    """Create the rows of ``wanted`` that are missing, update those that differ.

    ``on_update`` holds values set only on rows that change (e.g. where they came from).
    """
    counts = KindCounts()
    to_create: list[M] = []
    to_update: list[M] = []
    changed: set[str] = set()
    for ident, values in wanted.items():
        obj = existing.get(ident)
        if obj is None:
            to_create.append(build(ident, values))
            counts.created += 1
            continue
        differing = {name: value for name, value in values.items() if getattr(obj, name) != value}
        if not differing:
            counts.unchanged += 1
            continue
        differing |= on_update or {}
        for name, value in differing.items():
            setattr(obj, name, value)
        changed |= differing.keys()
        to_update.append(obj)
        counts.updated += 1
    model._default_manager.bulk_create(to_create, batch_size=500)
    if to_update:
        if any(f.name == "updated_at" for f in model._meta.get_fields()):
            now = timezone.now()
            for obj in to_update:
                obj.updated_at = now  # type: ignore[attr-defined]
            changed.add("updated_at")
        model._default_manager.bulk_update(to_update, sorted(changed), batch_size=500)
    return counts


def _by_key(queryset: models.QuerySet[M], keys: list[str]) -> dict[str, M]:
    """The rows of ``queryset`` with these keys, fetched in batches of query parameters."""
    found: dict[str, M] = {}
    for start in range(0, len(keys), 500):
        for obj in queryset.filter(key__in=keys[start : start + 500]):
            found[obj.key] = obj  # type: ignore[attr-defined]
    return found


def dataset_bug_ids(ctx: ImportContext) -> dict[str, int]:
    """The ids of the dataset's bugs by key, once the import has written its bugs."""
    dataset = ctx.dataset
    assert dataset is not None
    return ctx.cached("bug_ids", lambda: dict(dataset.bugs.values_list("key", "id")))


def _check_diff(record: Record, field_name: str, ctx: ImportContext) -> None:
    try:
        parsed = parse_diff(record.data[field_name])
    except DiffError as exc:
        ctx.error(record, field_name, str(exc))
        return
    record.derived["diff_hash"] = diff_hash(parsed)
    stats = ctx.stats
    stats["diffs"] = stats.get("diffs", 0) + 1
    if parsed.recounted_hunks:
        stats["recounted"] = stats.get("recounted", 0) + 1


def _recount_note(ctx: ImportContext) -> None:
    """Once every diff (bugs' and patches') is checked: how many hunks were recounted."""
    recounted = ctx.stats.get("recounted", 0)
    note = RECOUNTED_NOTE.format(recounted=recounted, total=ctx.stats.get("diffs", 0))
    if recounted and note not in ctx.notes:
        ctx.notes.append(note)


def _tests_pass(data: dict[str, Any]) -> bool | None:
    """The record's ``tests_pass``; failing that, a boolean ``metadata.tests_pass``.

    Some published datasets (defects4j-le2019 among them) keep the test outcome in the
    metadata; the field is what the pages and the judges read.
    """
    if "tests_pass" in data:
        value: bool | None = data["tests_pass"]
        return value
    fallback = data.get("metadata", {}).get("tests_pass")
    return fallback if isinstance(fallback, bool) else None


def _test_names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


def check_tests_status(value: dict[str, Any]) -> str | None:
    """A patch's ``tests_status``: the harness's lists of test names, within the metadata's
    size limit."""
    shape = TESTS_STATUS_SHAPE.format(lists=", ".join(TESTS_STATUS_LISTS))
    for name, item in value.items():
        if name == "left_out":
            counts = isinstance(item, dict) and all(
                isinstance(n, int) and not isinstance(n, bool) for n in item.values()
            )
            if not counts:
                return shape
        elif not (
            name in TESTS_STATUS_LISTS
            and isinstance(item, dict)
            and set(item) <= set(TESTS_STATUS_PARTS)
            and all(map(_test_names, item.values()))
        ):
            return shape
    if len(json.dumps(value, ensure_ascii=False)) > MAX_TESTS_STATUS:
        return METADATA_TOO_LONG.format(limit=MAX_TESTS_STATUS)
    return None


class BugKind(RecordKind):
    name = "bug"
    order = 10
    fields = {
        "key": KEY_FIELD,
        "title": FieldSpec((str,), max_length=500),
        "description": FieldSpec((str,), required=True, non_empty=True, max_length=MAX_DESCRIPTION),
        "language": FieldSpec((str,), max_length=50),
        "bug_type": FieldSpec((str,), max_length=100),
        "reference_patch": FieldSpec((str,), required=True, non_empty=True, max_length=MAX_DIFF),
        "metadata": METADATA_FIELD,
    }

    def identity(self, data: dict[str, Any]) -> tuple[str, str]:
        return "key", f"key {data['key']!r}"

    def check(self, record: Record, ctx: ImportContext) -> None:
        _check_diff(record, "reference_patch", ctx)

    def write(self, records: list[Record], ctx: ImportContext) -> KindCounts:
        dataset = ctx.dataset
        assert dataset is not None
        wanted = {
            r.data["key"]: {
                "title": r.data.get("title", ""),
                "description": r.data["description"],
                "language": r.data.get("language", ""),
                "bug_type": r.data.get("bug_type") or metadata_bug_type(r.data.get("metadata")),
                "reference_patch": r.data["reference_patch"],
                "metadata": r.data.get("metadata", {}),
            }
            for r in records
        }
        return upsert(
            model=Bug,
            existing=_by_key(dataset.bugs.all(), list(wanted)),
            wanted=wanted,
            build=lambda key, values: Bug(dataset=dataset, key=key, **values),
        )

    def export(self, dataset: Dataset) -> Iterator[dict[str, Any]]:
        for bug in dataset.bugs.order_by("sort_key").iterator(chunk_size=500):
            yield {
                "key": bug.key,
                "title": bug.title,
                "description": bug.description,
                "language": bug.language,
                "bug_type": bug.bug_type,
                "reference_patch": bug.reference_patch,
                "metadata": bug.metadata,
            }


# Where a bundle without ``bug_type`` keeps a bug's type in its metadata, first found wins.
METADATA_BUG_TYPE_KEYS = ("bug_type", "type", "category", "bug_category", "defect_type")
BUG_TYPE_MAX = 100  # Bug.bug_type's length


def metadata_bug_type(metadata: Any) -> str:
    """The bug's type read from its metadata (a short text under one of
    ``METADATA_BUG_TYPE_KEYS``), or ''."""
    if not isinstance(metadata, dict):
        return ""
    for name in METADATA_BUG_TYPE_KEYS:
        value = metadata.get(name)
        if isinstance(value, str) and value.strip() and len(value.strip()) <= BUG_TYPE_MAX:
            return value.strip()
    return ""


class PatchKind(RecordKind):
    name = "patch"
    order = 20
    fields = {
        "key": KEY_FIELD,
        "bug": KEY_FIELD,
        "diff": FieldSpec((str,), required=True, non_empty=True, max_length=MAX_DIFF),
        "source": FieldSpec((str,), max_length=200),
        "tests_pass": FieldSpec((bool,), nullable=True),
        "tests_status": FieldSpec((dict,), nullable=True, check=check_tests_status),
        "tests_note": FieldSpec((str,), max_length=MAX_TESTS_NOTE),
        "metadata": METADATA_FIELD,
    }

    def identity(self, data: dict[str, Any]) -> tuple[str, str]:
        return "key", f"key {data['key']!r}"

    def check(self, record: Record, ctx: ImportContext) -> None:
        if message := ctx.reference_error("bug", record.data["bug"]):
            ctx.error(record, "bug", message)
        existing_bugs = ctx.cached(
            "patch_bugs",
            lambda: dict(ctx.dataset.patches.values_list("key", "bug__key")) if ctx.dataset else {},
        )
        old = existing_bugs.get(record.data["key"])
        if old is not None and old != record.data["bug"]:
            message = PATCH_MOVED.format(key=record.data["key"], old=old, new=record.data["bug"])
            ctx.error(record, "bug", message)
        _check_diff(record, "diff", ctx)

    def write(self, records: list[Record], ctx: ImportContext) -> KindCounts:
        dataset = ctx.dataset
        assert dataset is not None
        bug_ids = dataset_bug_ids(ctx)
        wanted = {
            r.data["key"]: {
                "bug_id": bug_ids[r.data["bug"]],
                "diff": r.data["diff"],
                "diff_hash": r.derived["diff_hash"],
                "source": r.data.get("source", ""),
                "tests_pass": _tests_pass(r.data),
                "tests_status": r.data.get("tests_status"),
                "tests_note": r.data.get("tests_note", ""),
                "metadata": r.data.get("metadata", {}),
            }
            for r in records
        }
        return upsert(
            model=Patch,
            existing=_by_key(dataset.patches.all(), list(wanted)),
            wanted=wanted,
            build=lambda key, values: Patch(dataset=dataset, key=key, **values),
        )

    def finish(self, ctx: ImportContext) -> None:
        assert ctx.dataset is not None
        _recount_note(ctx)
        self._note_duplicates(ctx.dataset, ctx)

    @staticmethod
    def _note_duplicates(dataset: Dataset, ctx: ImportContext) -> None:
        first: dict[tuple[int, str], str] = {}
        pairs: list[str] = []
        for key, bug_id, digest in dataset.patches.order_by("key").values_list(
            "key", "bug_id", "diff_hash"
        ):
            original = first.setdefault((bug_id, digest), key)
            if original != key:
                pairs.append(f"{key} = {original}")
        if pairs:
            shown = ", ".join(pairs[:10]) + (" …" if len(pairs) > 10 else "")
            ctx.notes.append(DUPLICATES_NOTE.format(count=len(pairs), pairs=shown))

    def export(self, dataset: Dataset) -> Iterator[dict[str, Any]]:
        patches = dataset.patches.annotate(bug_key=F("bug__key")).order_by("key")
        for patch in patches.iterator(chunk_size=500):
            record = {
                "key": patch.key,
                "bug": patch.bug_key,
                "diff": patch.diff,
                "source": patch.source,
                "tests_pass": patch.tests_pass,
            }
            # The test evidence only where there is some: most bundles have none.
            if patch.tests_status is not None:
                record["tests_status"] = patch.tests_status
            if patch.tests_note:
                record["tests_note"] = patch.tests_note
            yield record | {"metadata": patch.metadata}
