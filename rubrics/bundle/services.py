"""The JSONL bundle: import (all or nothing) and export of a dataset.

A bundle holds one JSON object per line; its ``kind`` names a *record kind*
(``rubrics.bundle.base.RecordKind``). Each app registers its kinds from its
``AppConfig.ready()``: ``bug``, ``patch`` and ``rubric`` by this app, ``label`` by the
judging app (which owns annotations; ``rubrics`` never imports ``judging``). Reading lines
and checking fields lives in ``rubrics.bundle.read``.

Import runs in two phases. Validation reads the whole file and collects every error (up to
``SEJURY_BUNDLE_MAX_ERRORS``) with its line number and field; if there is any, nothing is
written. Otherwise every kind writes its records in one transaction, in kind order, as
upserts keyed by the record's identity, so re-importing a bundle changes nothing.
"""

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from typing import IO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from rubrics.bundle.base import (
    DUPLICATE_IN_FILE,
    EMPTY_FILE,
    FILE_TOO_LARGE,
    BundleImportError,
    ImportContext,
    ImportSummary,
    registered_kinds,
    validate_shape,
)
from rubrics.bundle.read import BundleError, Record, read_records, shorten
from rubrics.models import BundleImport, Dataset

INVALID_DATASET_NAME = "a dataset name needs at least one ASCII letter or digit"
DATASET_NAME_TOO_LONG = "a dataset name may have at most 200 characters"
DATASET_SLUG_TAKEN = "the name {name!r} makes the URL name {slug!r}, which dataset {other!r} has"
CONCURRENT_IMPORT = "another import changed this dataset at the same time; import the file again"


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
        kind = validate_shape(record, errors)
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
    actor: User | None,
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
            ctx, data=data, dataset=dataset, name=dataset_name, user=actor, filename=filename
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
    ctx.actor = user if user and user.pk else None
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
