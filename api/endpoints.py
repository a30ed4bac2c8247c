"""The operations of ``/api/v1/`` (django-ninja): thin, each a role check, then one service
or selector of the apps below, as a page would call it.

Roles are those of the pages: datasets are listed for leads and reviewers; bundles, runs,
verdicts, uploads and reports are for leads. An annotator's token is refused everywhere.
``{name}`` in a path is a dataset's name or its slug (the one of its URL), as the import
command and page take it.
"""

import dataclasses
import hashlib
import logging
import tempfile
from typing import IO, Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from ninja import Field, NinjaAPI, Query, Schema
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError

from api.auth import ApiAuth, RateLimited, require_role
from api.idempotency import Answer, fingerprint, idempotent
from judging.models import JudgingRun, PatchJudgment
from judging.reports.export import report_dict
from judging.reports.selectors import (
    ReportError,
    agreement_report,
    report_campaign,
    report_runs,
)
from judging.runs import selectors as run_selectors
from judging.runs import services as run_services
from judging.runs.export import verdict_page
from judging.runs.webhooks import webhook_state
from rubrics import selectors as rubric_selectors
from rubrics.bundle.base import BundleImportError
from rubrics.bundle.services import bundle_import
from rubrics.bundle.uploads import (
    UNKNOWN_UPLOAD,
    bundle_upload_get,
    bundle_upload_queue,
    upload_errors,
    upload_progress,
    worker_bytes,
)
from rubrics.models import BundleUpload, Dataset
from rubrics.selectors import dataset_resolve
from sejury_web.roles import Role

log = logging.getLogger(__name__)

VERSION = "1"
PAGE_SIZE = 100
PAGE_SIZE_MAX = 1000
CHUNK = 1024 * 1024
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")

UNKNOWN_DATASET = "no dataset is called {name!r} (by name or URL name)"
UNKNOWN_RUN = "there is no judging run {run}"
UNKNOWN_PATCHES = "dataset {dataset!r} has no patches {keys}"
BAD_CURSOR = "the cursor {cursor!r} is not one this API gave for run {run}"
NO_FILE = "a multipart upload needs the bundle in a file field named 'file'"
WRONG_TYPE = (
    "send the bundle as the body (Content-Type: application/x-ndjson) or as a multipart "
    "upload (multipart/form-data, field 'file')"
)
TOO_LARGE = "the bundle is over the size limit of {limit:,} bytes"
BUNDLE_INVALID = "the bundle is invalid: nothing was imported"
# How to judge the ready patches of a run the service refused (``RunNotReady``), said after
# its message.
ONLY_READY = 'Send "only_ready": true to judge the other {ready}.'
INTERNAL = "the server failed to answer; nothing more is known here (see the server's log)"

LEADS = (Role.LEAD,)
BROWSERS = (Role.LEAD, Role.REVIEWER)

api = NinjaAPI(
    title="SE-Jury web API",
    version=VERSION,
    description=(
        "Submit bundles of bugs and patches, start judging runs, read their verdicts and the "
        "agreement report. Authenticate with `Authorization: Bearer TOKEN` (a token from the "
        "API tokens page or `manage.py api_token`). POSTs accept an `Idempotency-Key` header."
    ),
    urls_namespace="api-v1",
    auth=ApiAuth(),
    docs_url=None,
    openapi_url="/openapi.json",
)


# -- errors -------------------------------------------------------------------------------


def _http_error(request: HttpRequest, exc: Any) -> HttpResponse:
    assert isinstance(exc, HttpError)
    response = JsonResponse({"detail": exc.message}, status=exc.status_code)
    if isinstance(exc, AuthenticationError):
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    if isinstance(exc, RateLimited):
        response["Retry-After"] = str(exc.retry_after)
    return response


def _not_found(request: HttpRequest, exc: Any) -> HttpResponse:
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else "not found"
    return JsonResponse({"detail": message}, status=404)


def _invalid(request: HttpRequest, exc: Any) -> HttpResponse:
    assert isinstance(exc, NinjaValidationError)
    errors = [
        {
            "field": ".".join(str(part) for part in error.get("loc", ())[1:]) or None,
            "message": error.get("msg", ""),
        }
        for error in exc.errors
    ]
    return JsonResponse({"detail": "the request is invalid", "errors": errors}, status=422)


def _internal(request: HttpRequest, exc: Any) -> HttpResponse:
    log.exception("API error on %s %s", request.method, request.path, exc_info=exc)
    return JsonResponse({"detail": INTERNAL}, status=500)


api.add_exception_handler(HttpError, _http_error)
api.add_exception_handler(Http404, _not_found)
api.add_exception_handler(NinjaValidationError, _invalid)
api.add_exception_handler(Exception, _internal)


# -- schemas ------------------------------------------------------------------------------


class Error(Schema):
    detail: str


class LineError(Schema):
    line: int | None
    field: str | None
    message: str


class BundleErrors(Schema):
    detail: str
    errors: list[LineError]
    more: int = 0


class DatasetOut(Schema):
    name: str
    slug: str
    bugs: int
    patches: int
    url: str
    report: str


class KindCountsOut(Schema):
    created: int
    updated: int
    unchanged: int


class BundleImported(Schema):
    dataset: str
    slug: str
    dataset_created: bool
    unchanged: bool
    counts: dict[str, KindCountsOut]
    notes: list[str]
    import_id: int | None


class UploadOut(Schema):
    id: int
    status: str
    dataset: str
    size: int
    phase: str
    percent: int
    status_url: str
    errors: list[LineError]
    more_errors: int
    import_id: int | None
    counts: dict[str, KindCountsOut] | None


class RunIn(Schema):
    dataset: str
    team: str | list[str]
    context: str
    provider: str = ""
    model: str = ""
    threshold: float = 50.0
    reducer: str = Field(
        "mean",
        description="How the members' scores become the team's: `mean` (the default), `median`, "
        "`majority` (of the members' verdicts; a tie is INVALID) or `min`.",
    )
    patches: list[str] | None = None
    only_ready: bool = False
    name: str = ""
    webhook: str = Field(
        "",
        description="An http or https URL called once with a signed POST when the run ends "
        "(`run.finished`, or `run.cancelled`); see the README's *From a pipeline*.",
    )


class Counts(Schema):
    total: int
    done: int
    failed: int
    pending: int
    valid: int
    invalid: int


class Spend(Schema):
    provider_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    wall_s: float | None


class WebhookOut(Schema):
    url: str
    status: str = Field(
        description="`waiting` (the run has not ended), `pending`, `retrying`, `delivered` "
        "or `failed`"
    )
    event: str | None
    delivery_id: str | None
    attempts: int
    max_attempts: int
    last_status_code: int | None
    last_error: str
    delivered_at: str | None
    next_attempt_at: str | None


class RunOut(Schema):
    id: int
    name: str
    dataset: str
    status: str
    team: list[str]
    context: str
    provider: str
    model: str
    offline: bool
    threshold: float
    reducer: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    counts: Counts
    spend: Spend
    url: str
    verdicts: str
    page: str
    webhook: WebhookOut | None


class NotReady(Schema):
    detail: str
    total: int
    ready: int
    missing: int


class VerdictPage(Schema):
    results: list[dict[str, Any]]
    next: str | None


# -- helpers ------------------------------------------------------------------------------


def _url(request: HttpRequest, name: str, *args: Any) -> str:
    return request.build_absolute_uri(reverse(f"api-v1:{name}", args=args))


def _dataset(name: str) -> Dataset:
    dataset = dataset_resolve(name)
    if dataset is None:
        raise Http404(UNKNOWN_DATASET.format(name=name))
    return dataset


def _run(run_id: int) -> JudgingRun:
    try:
        return run_selectors.run_get(run_id=run_id)
    except JudgingRun.DoesNotExist:
        raise Http404(UNKNOWN_RUN.format(run=run_id)) from None


def _run_dict(request: HttpRequest, run: JudgingRun) -> dict[str, Any]:
    return {
        **run_selectors.run_summary(run),
        "url": _url(request, "run_get", run.pk),
        "verdicts": _url(request, "run_verdicts", run.pk),
        "page": request.build_absolute_uri(run.get_absolute_url()),
        "webhook": state.as_dict() if (state := webhook_state(run)) else None,
    }


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
        "status_url": _url(request, "upload_get", upload.pk),
        "errors": [
            {"line": e.line, "field": e.field, "message": e.message}
            for e in (errors.errors if errors else [])
        ],
        "more_errors": errors.more if errors else 0,
        "import_id": record.pk if record else None,
        "counts": _counts(record.summary) if record else None,
    }


# -- datasets -----------------------------------------------------------------------------


@api.get("/datasets", response={200: list[DatasetOut], 403: Error}, url_name="dataset_list")
def dataset_list(request: HttpRequest) -> list[dict[str, Any]]:
    """The datasets, with their counts of bugs and patches (leads and reviewers)."""
    require_role(request, "dataset list", *BROWSERS)
    return [
        {
            "name": dataset.name,
            "slug": dataset.slug,
            "bugs": dataset.bug_count,  # type: ignore[attr-defined]
            "patches": dataset.patch_count,  # type: ignore[attr-defined]
            "url": request.build_absolute_uri(dataset.get_absolute_url()),
            "report": _url(request, "dataset_report", dataset.slug),
        }
        for dataset in rubric_selectors.dataset_list()
    ]


def _read_body(request: HttpRequest) -> tuple[IO[bytes], int, str, str]:
    """The bundle of the request, in a temporary file: (file, size, sha256, filename)."""
    limit = int(settings.SEJURY_BUNDLE_MAX_BYTES)
    content_type = request.content_type or ""
    if content_type == "multipart/form-data":
        upload = request.FILES.get("file")
        if upload is None:
            raise HttpError(422, NO_FILE)
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
    }


@api.post(
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
            "content": {
                "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}},
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
def dataset_bundle(request: HttpRequest, name: str) -> HttpResponse:
    """Import a JSONL bundle into the dataset ``name`` (created if new), all or nothing, as
    the Import page does: 201 (new dataset) or 200 with what was imported, 422 with every
    error's line and field. A bundle over the worker threshold is imported by the worker:
    202 with the upload's ``status_url``."""
    user = require_role(request, "bundle import", *LEADS)
    stream, size, sha256, filename = _read_body(request)

    def run() -> Answer:
        if size > worker_bytes():
            file = UploadedFile(file=stream, name=filename, size=size)
            upload = bundle_upload_queue(actor=user, file=file, dataset_name=name)
            body = _upload_dict(request, upload)
            return 202, body, {"Location": body["status_url"]}
        try:
            summary = bundle_import(source=stream, dataset_name=name, actor=user, filename=filename)
        except BundleImportError as exc:
            return 422, _bundle_errors(exc), {}
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
        return idempotent(request, user, fingerprint(request, name, sha256), run)


@api.get(
    "/uploads/{upload_id}", response={200: UploadOut, 403: Error, 404: Error}, url_name="upload_get"
)
def upload_get(request: HttpRequest, upload_id: int) -> dict[str, Any]:
    """A large bundle's import by the worker: ``queued``, ``running`` (with its progress),
    ``done`` (with its counts) or ``failed`` (with its errors' lines and fields)."""
    require_role(request, "bundle import", *LEADS)
    try:
        upload = bundle_upload_get(upload_id=upload_id)
    except BundleUpload.DoesNotExist:
        raise Http404(UNKNOWN_UPLOAD.format(upload=upload_id)) from None
    return _upload_dict(request, upload)


@api.get(
    "/datasets/{name}/report",
    response={200: dict[str, Any], 400: Error, 403: Error, 404: Error},
    url_name="dataset_report",
)
def dataset_report(
    request: HttpRequest,
    name: str,
    campaign: int | None = None,
    run: list[int] = Query([]),  # noqa: B008 - ninja's way to declare a repeated query parameter
) -> HttpResponse:
    """The agreement report of the dataset as JSON, as the report page's JSON download: of
    one ``campaign``'s patches if given, and of the runs ``run`` (repeat it; by default the
    newest finished run of each context)."""
    require_role(request, "agreement report", *LEADS)
    dataset = _dataset(name)
    try:
        chosen_campaign = report_campaign(dataset=dataset, campaign_id=campaign)
        runs = report_runs(dataset=dataset, run_ids=run or [])
    except ReportError as error:
        raise HttpError(400, str(error)) from None
    chosen = runs if run else None
    data = agreement_report(dataset, campaign=chosen_campaign, runs=chosen)
    data = dataclasses.replace(data, runs_by_default=chosen is None)
    return JsonResponse(report_dict(data), json_dumps_params={"allow_nan": False})


# -- runs ---------------------------------------------------------------------------------


@api.post(
    "/runs",
    response={201: RunOut, 403: Error, 404: Error, 409: Error, 422: NotReady},
    url_name="run_create",
)
def run_create(request: HttpRequest, payload: RunIn) -> HttpResponse:
    """Start a judging run of the dataset's patches (or of ``patches``, by key) by the team
    (``"s1b,s3"`` or a list) in ``context``. When some patches lack what the team needs in
    that context, the run starts only with ``only_ready`` (the others are left out); when
    none has it, no run starts."""
    user = require_role(request, "judging runs", *LEADS)

    def run() -> Answer:
        dataset = dataset_resolve(payload.dataset)
        if dataset is None:
            return 404, {"detail": UNKNOWN_DATASET.format(name=payload.dataset)}, {}
        patches = None
        if payload.patches is not None:
            patches, unknown = rubric_selectors.dataset_patches_named(dataset, payload.patches)
            if unknown:
                detail = UNKNOWN_PATCHES.format(dataset=dataset.name, keys=", ".join(unknown))
                return 422, {"detail": detail}, {}
        try:
            created = run_services.run_create(
                dataset=dataset,
                strategies=payload.team,
                context=payload.context,
                patches=patches,
                provider=payload.provider,
                model=payload.model,
                threshold=payload.threshold,
                reducer=payload.reducer,
                name=payload.name,
                actor=user,
                only_ready=payload.only_ready,
                webhook_url=payload.webhook,
                webhook_origin=request.build_absolute_uri("/").rstrip("/"),
            )
        except run_services.RunNotReady as error:
            preflight = error.preflight
            detail = str(error)
            if preflight.ready:
                detail += " " + ONLY_READY.format(ready=preflight.ready)
            counts = {"total": preflight.total, "ready": preflight.ready}
            return 422, {"detail": detail, **counts, "missing": preflight.missing}, {}
        except run_services.RunError as error:
            return 422, {"detail": str(error), "total": 0, "ready": 0, "missing": 0}, {}
        body = _run_dict(request, _run(created.pk))
        return 201, body, {"Location": body["url"]}

    return idempotent(request, user, fingerprint(request, request.body), run)


@api.get("/runs/{run_id}", response={200: RunOut, 403: Error, 404: Error}, url_name="run_get")
def run_get(request: HttpRequest, run_id: int) -> dict[str, Any]:
    """The run: its ``status`` (queued, running, finished, cancelled), counts and spend."""
    require_role(request, "judging runs", *LEADS)
    return _run_dict(request, _run(run_id))


@api.post(
    "/runs/{run_id}/cancel",
    response={200: RunOut, 403: Error, 404: Error, 409: Error},
    url_name="run_cancel",
)
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    """Stop the run: no new model call starts; finished verdicts stay. 409 when it has
    ended already."""
    user = require_role(request, "judging runs", *LEADS)
    target = _run(run_id)

    def run() -> Answer:
        try:
            run_services.run_cancel(run=target, actor=user)
        except run_services.RunError as error:
            return 409, {"detail": str(error)}, {}
        return 200, _run_dict(request, _run(run_id)), {}

    return idempotent(request, user, fingerprint(request), run)


@api.post(
    "/runs/{run_id}/resume",
    response={200: RunOut, 403: Error, 404: Error, 409: Error},
    url_name="run_resume",
)
def run_resume(request: HttpRequest, run_id: int, retry_failed: bool = False) -> HttpResponse:
    """Judge the run's pending patches again (and its failed ones with ``retry_failed``).
    409 when there is none."""
    user = require_role(request, "judging runs", *LEADS)
    target = _run(run_id)

    def run() -> Answer:
        try:
            run_services.run_resume(run=target, actor=user, retry_failed=retry_failed)
        except run_services.RunError as error:
            return 409, {"detail": str(error)}, {}
        return 200, _run_dict(request, _run(run_id)), {}

    return idempotent(request, user, fingerprint(request, str(retry_failed)), run)


@api.get(
    "/runs/{run_id}/verdicts",
    response={200: VerdictPage, 400: Error, 403: Error, 404: Error},
    url_name="run_verdicts",
)
def run_verdicts(
    request: HttpRequest,
    run_id: int,
    cursor: str = "",
    limit: int = PAGE_SIZE,
    final: bool = False,
) -> dict[str, Any]:
    """The run's verdict records, the fields of ``export_verdicts`` (with ``final``, the
    final label too), by bug and patch key, ``limit`` at a time (at most 1000); ``next`` is
    the next page's URL, null on the last page."""
    require_role(request, "judging runs", *LEADS)
    run = _run(run_id)
    limit = max(1, min(limit, PAGE_SIZE_MAX))
    after = None
    if cursor:
        if not cursor.isdigit():
            raise HttpError(400, BAD_CURSOR.format(cursor=cursor, run=run_id))
        after = int(cursor)
    try:
        records, last = verdict_page(run, after=after, limit=limit, final=final)
    except PatchJudgment.DoesNotExist:
        raise HttpError(400, BAD_CURSOR.format(cursor=cursor, run=run_id)) from None
    following = None
    if last is not None:
        query = request.GET.copy()
        query["cursor"] = str(last)
        query["limit"] = str(limit)
        following = f"{_url(request, 'run_verdicts', run.pk)}?{query.urlencode()}"
    return {"results": records, "next": following}
