"""Bundles uploaded through the import page that the worker imports: queueing one, and
what its page shows (progress, errors).

A bundle over ``worker_bytes()`` (4 MiB, or the setting ``SEJURY_BUNDLE_WORKER_BYTES``) is not
imported by the request: it is saved under ``settings.VAR_DIR/bundle-uploads/``, a
:class:`~rubrics.models.BundleUpload` row records it, and ``bundle_upload_run_task``
imports it (``rubrics.bundle.upload_execution``) while the page shows its progress.
"""

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from rubrics.bundle.base import BundleImportError, ImportSummary
from rubrics.bundle.read import BundleError
from rubrics.bundle.services import bundle_import
from rubrics.bundle.upload_execution import progress_file
from rubrics.models import BundleUpload
from rubrics.tasks import bundle_upload_run_task
from sejury_web.durable import enqueue_on_commit

UPLOAD_DIR = "bundle-uploads"
UNKNOWN_UPLOAD = "there is no bundle upload {upload}"


def worker_bytes() -> int:
    """Uploads larger than this are imported by the worker."""
    return int(settings.SEJURY_BUNDLE_WORKER_BYTES)


def bundle_submit(
    *, actor: User, file: UploadedFile, dataset_name: str, grant_annotator_role: bool = False
) -> ImportSummary | BundleUpload:
    """Import a bundle sent through a door (the Import page, the API): here and now when it
    is small, all or nothing, raising ``BundleImportError`` with every error's line; by the
    worker when it is over ``worker_bytes()``: then the queued upload, whose page or status
    URL the door sends its caller to. ``grant_annotator_role``: as ``bundle_import``'s."""
    if (file.size or 0) > worker_bytes():
        return bundle_upload_queue(
            actor=actor,
            file=file,
            dataset_name=dataset_name,
            grant_annotator_role=grant_annotator_role,
        )
    return bundle_import(
        source=file,
        dataset_name=dataset_name,
        actor=actor,
        filename=file.name or "",
        grant_annotator_role=grant_annotator_role,
    )


def bundle_upload_queue(
    *, actor: User, file: UploadedFile, dataset_name: str, grant_annotator_role: bool = False
) -> BundleUpload:
    """Save ``file`` and queue its import into ``dataset_name`` by the worker."""
    relative = Path(UPLOAD_DIR) / f"{uuid.uuid4().hex}.jsonl"
    target = Path(settings.VAR_DIR) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    with target.open("wb") as out:
        for chunk in file.chunks():
            out.write(chunk)
            size += len(chunk)
    try:
        with transaction.atomic():
            upload = BundleUpload.objects.create(
                dataset_name=dataset_name.strip()[:200],
                filename=(file.name or "")[:255],
                path=str(relative),
                size=size,
                uploaded_by=actor if actor.pk else None,
                grant_annotator_role=grant_annotator_role,
            )
            enqueue_on_commit(bundle_upload_run_task, upload.pk, upload.attempt)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return upload


def bundle_uploads_resume_unfinished() -> list[int]:
    """Queue again, each as a new attempt, the uploads waiting for the worker or being
    imported: a worker starting calls this, so that an upload a killed worker held (its
    import rolled back, its message lost) is imported when a worker is back. Returns them."""
    unfinished = [BundleUpload.Status.QUEUED, BundleUpload.Status.RUNNING]
    resumed = []
    for upload_id in BundleUpload.objects.filter(status__in=unfinished).values_list(
        "pk", flat=True
    ):
        with transaction.atomic():
            upload = BundleUpload.objects.select_for_update().get(pk=upload_id)
            if upload.status not in unfinished:
                continue
            upload.attempt += 1
            upload.status = BundleUpload.Status.QUEUED
            upload.started_at = None
            upload.save(update_fields=["attempt", "status", "started_at"])
            enqueue_on_commit(bundle_upload_run_task, upload.pk, upload.attempt)
        resumed.append(upload_id)
    return resumed


def bundle_upload_get(*, upload_id: int) -> BundleUpload:
    """One upload with who sent it and what it imported (``BundleUpload.DoesNotExist``
    otherwise): its page and the API's ``/uploads/{id}`` read it."""
    return BundleUpload.objects.select_related(
        "uploaded_by", "bundle_import", "bundle_import__dataset"
    ).get(pk=upload_id)


@dataclass(frozen=True)
class UploadProgress:
    phase: str
    percent: int
    # When the import last moved: its progress file's last write (every half second while
    # the worker imports), else when it started or was queued.
    moved_at: datetime | None = None


def upload_progress(upload: BundleUpload) -> UploadProgress:
    """How far the worker is with ``upload`` (a queued upload is at 0), and when it last
    moved."""
    if upload.status == BundleUpload.Status.DONE:
        return UploadProgress("done", 100, upload.finished_at)
    path = progress_file(upload)
    try:
        written = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except OSError:
        written = None
    moved_at = max(t for t in (written, upload.started_at, upload.created_at) if t is not None)
    if upload.status == BundleUpload.Status.QUEUED:  # an earlier attempt's file is stale
        return UploadProgress("waiting for the worker", 0, moved_at)
    try:
        data = json.loads(path.read_text())
        return UploadProgress(str(data["phase"]), int(data["percent"]), moved_at)
    except (OSError, ValueError, KeyError, TypeError):
        return UploadProgress("waiting for the worker", 0, moved_at)


def upload_errors(upload: BundleUpload) -> BundleImportError | None:
    """A failed upload's errors, as the import page shows them."""
    if upload.status != BundleUpload.Status.FAILED:
        return None
    errors = [
        BundleError(e.get("line"), e.get("field"), str(e.get("message", "")))
        for e in upload.errors
        if isinstance(e, dict)
    ]
    return BundleImportError(errors, more=upload.more_errors)
