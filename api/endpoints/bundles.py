"""``POST /datasets/{name}/bundle`` and ``GET /uploads/{id}``: a JSONL bundle imported all or
nothing, as the Import page does; one over the worker threshold imported by the worker, its
upload followed by its status URL."""

import dataclasses
import hashlib
import tempfile
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404, HttpRequest, HttpResponse
from ninja import Query, Router
from ninja.errors import HttpError
from ninja.errors import ValidationError as NinjaValidationError

from api.auth import require_role
from api.endpoints.common import LEADS, Id, api_url
from api.errors import error_body
from api.idempotency import Answer, fingerprint, idempotent
from api.schemas import BundleErrors, BundleImported, Error, UploadOut
from rubrics.bundle.base import BundleImportConflict, BundleImportError
from rubrics.bundle.uploads import (
    UNKNOWN_UPLOAD,
    bundle_submit,
    bundle_upload_get,
    upload_errors,
    upload_progress,
)
from rubrics.models import BundleUpload

CHUNK = 1024 * 1024
NO_FILE = "a multipart upload needs the bundle in a file field named 'file'"
WRONG_TYPE = (
    "send the bundle as the body (Content-Type: application/x-ndjson) or as a multipart "
    "upload (multipart/form-data, field 'file')"
)
TOO_LARGE = "the bundle is over the size limit of {limit:,} bytes"
BUNDLE_INVALID = "the bundle is invalid: nothing was imported"
CONFLICT = (
    "another import changed this dataset at the same time: nothing was imported; send the "
    "bundle again"
)
CONFLICT_RETRY_S = 1
# The raw body's media types: JSON lines as they are, or any bytes (what clients generated
# from the document send for a binary body).
RAW_TYPES = ("application/x-ndjson", "application/octet-stream")

router = Router()


def _counts(summary: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {
        kind: {name: int(value.get(name, 0)) for name in ("created", "updated", "unchanged")}
        for kind, value in summary.items()
        if isinstance(value, dict)
    }


def _upload_dict(request: HttpRequest, upload: BundleUpload) -> dict[str, Any]:
    progress = upload_progress(upload)
    errors = upload_errors(upload)
    record = upload.bundle_import
    return {
        "id": upload.pk,
        "status": upload.status,
        "dataset": upload.dataset_name,
        "size": upload.size,
        "phase": progress.phase,
        "percent": progress.percent,
        "last_progress_at": progress.moved_at.isoformat() if progress.moved_at else None,
        "status_url": api_url(request, "upload_get", upload.pk),
        "errors": [
            {"line": e.line, "field": e.field, "message": e.message}
            for e in (errors.errors if errors else [])
        ],
        "more_errors": errors.more if errors else 0,
        "import_id": record.pk if record else None,
        "counts": _counts(record.summary) if record else None,
    }


def _read_body(request: HttpRequest) -> tuple[IO[bytes], int, str, str]:
    """The bundle of the request, in a temporary file: (file, size, sha256, filename)."""
    limit = int(settings.SEJURY_BUNDLE_MAX_BYTES)
    content_type = request.content_type or ""
    if content_type == "multipart/form-data":
        upload = request.FILES.get("file")
        if upload is None:
            # As any invalid request: its field named in ``errors``.
            raise NinjaValidationError([{"loc": ("body", "file"), "msg": NO_FILE}])
        source: Any = upload
        filename = upload.name or ""
        if (upload.size or 0) > limit:
            raise HttpError(413, TOO_LARGE.format(limit=limit))
    elif content_type in ("application/x-www-form-urlencoded",):
        raise HttpError(415, WRONG_TYPE)
    else:
        if int(request.META.get("CONTENT_LENGTH") or 0) > limit:
            raise HttpError(413, TOO_LARGE.format(limit=limit))
        source, filename = request, "bundle.jsonl"
    copy = tempfile.TemporaryFile()  # noqa: SIM115 - the caller closes it
    digest = hashlib.sha256()
    size = 0
    try:
        while chunk := source.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise HttpError(413, TOO_LARGE.format(limit=limit))
            digest.update(chunk)
            copy.write(chunk)
    except BaseException:
        copy.close()
        raise
    copy.seek(0)
    return copy, size, digest.hexdigest(), filename


def _bundle_errors(exc: BundleImportError) -> dict[str, Any]:
    return {
        "detail": BUNDLE_INVALID,
        "errors": [{"line": e.line, "field": e.field, "message": e.message} for e in exc.errors],
        "more": exc.more,
        "grantable": list(exc.grantable),
    }


@router.post(
    "/datasets/{name}/bundle",
    response={
        200: BundleImported,
        201: BundleImported,
        202: UploadOut,
        403: Error,
        409: Error,
        413: Error,
        415: Error,
        422: BundleErrors,
    },
    url_name="dataset_bundle",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "The bundle: JSON lines as the body (`application/x-ndjson`, or "
            "`application/octet-stream` as generated clients send bytes), or a multipart "
            "upload's `file` part",
            "content": {
                **{kind: {"schema": {"type": "string", "format": "binary"}} for kind in RAW_TYPES},
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"file": {"type": "string", "format": "binary"}},
                        "required": ["file"],
                    }
                },
            },
        }
    },
)
def dataset_bundle(
    request: HttpRequest,
    name: str,
    grant_annotator_role: bool = Query(
        False,
        description="Give the annotator role (audited) to the existing users without any role"
        " whom the bundle's labels name, instead of refusing the bundle (422, `grantable` names"
        " them); never to a lead or a reviewer",
    ),
) -> HttpResponse:
    """Import a JSONL bundle into the dataset ``name`` (created if new), all or nothing, as
    the Import page does: 201 (new dataset) or 200 with what was imported, 422 with every
    error's line and field. A bundle over the worker threshold is imported by the worker:
    202 with the upload's ``status_url``. 409 with ``Retry-After`` when another import
    changed the dataset at the same time: nothing was imported, send it again."""
    user = require_role(request, "bundle import", *LEADS)
    stream, size, sha256, filename = _read_body(request)

    def run() -> Answer:
        file = UploadedFile(file=stream, name=filename, size=size)
        try:
            summary = bundle_submit(
                actor=user,
                file=file,
                dataset_name=name,
                grant_annotator_role=grant_annotator_role,
            )
        except BundleImportConflict:
            retry = {"Retry-After": str(CONFLICT_RETRY_S)}
            return 409, error_body(request, 409, CONFLICT), retry
        except BundleImportError as exc:
            return 422, _bundle_errors(exc), {}
        if isinstance(summary, BundleUpload):  # the worker imports it
            body = _upload_dict(request, summary)
            return 202, body, {"Location": body["status_url"]}
        return (
            201 if summary.dataset_created else 200,
            {
                "dataset": summary.dataset.name,
                "slug": summary.dataset.slug,
                "dataset_created": summary.dataset_created,
                "unchanged": summary.unchanged,
                "counts": {kind: dataclasses.asdict(c) for kind, c in summary.counts.items()},
                "notes": list(summary.notes),
                "import_id": summary.record.pk if summary.record else None,
            },
            {},
        )

    with stream:
        grant = "grant_annotator_role" if grant_annotator_role else ""
        return idempotent(request, user, fingerprint(request, name, sha256, grant), run)


@router.get(
    "/uploads/{upload_id}", response={200: UploadOut, 403: Error, 404: Error}, url_name="upload_get"
)
def upload_get(request: HttpRequest, upload_id: Id) -> dict[str, Any]:
    """A large bundle's import by the worker: ``queued``, ``running`` (with its progress),
    ``done`` (with its counts) or ``failed`` (with its errors' lines and fields)."""
    require_role(request, "bundle import", *LEADS)
    try:
        upload = bundle_upload_get(upload_id=upload_id)
    except BundleUpload.DoesNotExist:
        raise Http404(UNKNOWN_UPLOAD.format(upload=upload_id)) from None
    return _upload_dict(request, upload)
