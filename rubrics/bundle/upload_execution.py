"""What the worker does with an uploaded bundle (``bundle_upload_run``, which
``rubrics.tasks.bundle_upload_run_task`` calls); imports no task.

The import is all or nothing (``rubrics.bundle.services.bundle_import``): it writes in one
transaction, which no other connection sees before it ends, so its live progress is not a
database row but a small JSON file beside the upload (``<upload>.progress``), replaced
atomically at most every ``PROGRESS_EVERY`` seconds. The upload's row says the rest: queued,
running, done (with the import's record) or failed (with the first errors, line and field).

Running it again is harmless: a finished upload is left as it is, and one found running
(a worker lost mid-import, its transaction rolled back) is imported again.
"""

import json
import os
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from rubrics.bundle.base import BundleImportError
from rubrics.bundle.read import BundleError
from rubrics.bundle.services import bundle_import
from rubrics.models import BundleUpload

PROGRESS_EVERY = 0.5  # seconds
TASK_FAILED = "the import stopped ({error}); nothing was imported: upload the file again"
FILE_MISSING = "the uploaded file is gone from the server; nothing was imported: upload it again"


def upload_file(upload: BundleUpload) -> Path:
    return Path(settings.VAR_DIR) / upload.path


def progress_file(upload: BundleUpload) -> Path:
    return upload_file(upload).with_suffix(".progress")


class _ProgressWriter:
    def __init__(self, upload: BundleUpload) -> None:
        self.path = progress_file(upload)
        self.last = 0.0

    def __call__(self, phase: str, fraction: float) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY and fraction < 1:
            return
        self.last = now
        partial = self.path.with_suffix(".progress-partial")
        partial.write_text(json.dumps({"phase": phase, "percent": int(fraction * 100)}))
        os.replace(partial, self.path)


def _clean(upload: BundleUpload) -> None:
    for path in (upload_file(upload), progress_file(upload)):
        path.unlink(missing_ok=True)


def _finish(upload_id: int, **values: object) -> BundleUpload:
    with transaction.atomic():
        upload = BundleUpload.objects.select_for_update().get(pk=upload_id)
        if upload.status in (BundleUpload.Status.DONE, BundleUpload.Status.FAILED):
            return upload
        for name, value in values.items():
            setattr(upload, name, value)
        upload.finished_at = timezone.now()
        upload.save()
    _clean(upload)
    return upload


def _errors_json(errors: list[BundleError]) -> list[dict[str, object]]:
    return [{"line": e.line, "field": e.field, "message": e.message} for e in errors]


def bundle_upload_run(*, upload_id: int) -> BundleUpload:
    """Import the uploaded bundle ``upload_id`` (the task's body); idempotent."""
    upload = BundleUpload.objects.select_related("uploaded_by").get(pk=upload_id)
    if upload.status in (BundleUpload.Status.DONE, BundleUpload.Status.FAILED):
        return upload
    BundleUpload.objects.filter(pk=upload_id).update(status=BundleUpload.Status.RUNNING)
    path = upload_file(upload)
    if not path.is_file():
        return bundle_upload_fail(upload_id=upload_id, message=FILE_MISSING)
    try:
        with path.open("rb") as source:
            summary = bundle_import(
                source=source,
                dataset_name=upload.dataset_name,
                actor=upload.uploaded_by,
                filename=upload.filename,
                progress=_ProgressWriter(upload),
            )
    except BundleImportError as exc:
        return _finish(
            upload_id,
            status=BundleUpload.Status.FAILED,
            errors=_errors_json(exc.errors),
            more_errors=exc.more,
        )
    return _finish(upload_id, status=BundleUpload.Status.DONE, bundle_import=summary.record)


def bundle_upload_fail(*, upload_id: int, message: str) -> BundleUpload:
    """Mark the upload failed with ``message`` (unless it finished first)."""
    error = {"line": None, "field": None, "message": message}
    return _finish(upload_id, status=BundleUpload.Status.FAILED, errors=[error], more_errors=0)
