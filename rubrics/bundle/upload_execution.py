"""What the worker does with an uploaded bundle (``bundle_upload_run``, which
``rubrics.tasks.bundle_upload_run_task`` calls); imports no task.

The import is all or nothing (``rubrics.bundle.services.bundle_import``): it writes in one
transaction, which no other connection sees before it ends, so its live progress is not a
database row but a small JSON file beside the upload (``<upload>.progress``), replaced
atomically at most every ``PROGRESS_EVERY`` seconds. The upload's row says the rest: queued,
running, done (with the import's record) or failed (with the first errors, line and field).

Running it again is harmless: a finished upload is left as it is, and one left running by
a killed worker (its transaction rolled back) is imported again when a worker starts
(``bundle_uploads_resume_unfinished`` in ``rubrics.bundle.uploads``), under a new
``attempt``. Only the upload's current attempt may end it: the import marks the upload
imported inside its own transaction, after checking the attempt, so an older attempt still
at work (a worker that was slow, not dead) rolls back instead of importing the bundle twice.
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
from rubrics.models import BundleImport, BundleUpload

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


class _Superseded(Exception):
    """A newer attempt holds the upload: this one's import must not commit."""


def _finish(upload_id: int, attempt: int | None = None, **values: object) -> BundleUpload:
    """Set ``values`` on the upload and end it, unless it ended already or (given
    ``attempt``) a newer attempt holds it."""
    with transaction.atomic():
        upload = BundleUpload.objects.select_for_update().get(pk=upload_id)
        if upload.status in (BundleUpload.Status.DONE, BundleUpload.Status.FAILED):
            return upload
        if attempt is not None and upload.attempt != attempt:
            return upload
        for name, value in values.items():
            setattr(upload, name, value)
        upload.finished_at = timezone.now()
        upload.save()
    _clean(upload)
    return upload


def _errors_json(errors: list[BundleError]) -> list[dict[str, object]]:
    return [{"line": e.line, "field": e.field, "message": e.message} for e in errors]


def bundle_upload_run(*, upload_id: int, attempt: int = 0) -> BundleUpload:
    """Import the uploaded bundle ``upload_id`` (the task's body) as its ``attempt``;
    idempotent: an upload that ended, or that a newer attempt holds, is left as it is."""
    upload = BundleUpload.objects.select_related("uploaded_by").get(pk=upload_id)
    if upload.status in (BundleUpload.Status.DONE, BundleUpload.Status.FAILED):
        return upload
    if upload.attempt != attempt:
        return upload  # a starting worker queued it again: that message imports it
    BundleUpload.objects.filter(pk=upload_id, attempt=attempt).update(
        status=BundleUpload.Status.RUNNING, started_at=timezone.now()
    )
    path = upload_file(upload)
    if not path.is_file():
        return bundle_upload_fail(upload_id=upload_id, message=FILE_MISSING, attempt=attempt)

    def imported(record: BundleImport) -> None:
        """The upload ends with the import's transaction, if this attempt still holds it."""
        updated = BundleUpload.objects.filter(
            pk=upload_id, attempt=attempt, status=BundleUpload.Status.RUNNING
        ).update(status=BundleUpload.Status.DONE, bundle_import=record, finished_at=timezone.now())
        if not updated:
            raise _Superseded

    try:
        with path.open("rb") as source:
            bundle_import(
                source=source,
                dataset_name=upload.dataset_name,
                actor=upload.uploaded_by,
                filename=upload.filename,
                progress=_ProgressWriter(upload),
                written=imported,
                grant_annotator_role=upload.grant_annotator_role,
            )
    except _Superseded:
        return BundleUpload.objects.get(pk=upload_id)
    except BundleImportError as exc:
        return _finish(
            upload_id,
            attempt,
            status=BundleUpload.Status.FAILED,
            errors=_errors_json(exc.errors),
            more_errors=exc.more,
        )
    _clean(upload)
    return BundleUpload.objects.get(pk=upload_id)


def bundle_upload_fail(*, upload_id: int, message: str, attempt: int | None = None) -> BundleUpload:
    """Mark the upload failed with ``message`` (unless it finished first, or a newer attempt
    than ``attempt`` holds it)."""
    error = {"line": None, "field": None, "message": message}
    return _finish(
        upload_id, attempt, status=BundleUpload.Status.FAILED, errors=[error], more_errors=0
    )
