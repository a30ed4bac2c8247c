"""``GET /runs``, ``POST /runs``, ``GET /runs/{id}``, ``POST /runs/{id}/cancel`` and
``/resume``: judging runs listed, and a run started, read, stopped and resumed through the
services the run pages call."""

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router

from api.auth import require_role
from api.endpoints.common import (
    CURSOR,
    LEADS,
    Id,
    api_url,
    dataset_or_404,
    next_page,
    run_or_404,
)
from api.errors import error_body
from api.idempotency import Answer, fingerprint, idempotent
from api.schemas import NO_NUL, Error, NotReady, PreflightOut, RunIn, RunOut, RunPage, RunStatus
from judging.models import JudgingRun
from judging.runs import selectors as run_selectors
from judging.runs import services as run_services
from judging.runs.selectors import Preflight
from judging.runs.webhooks import webhook_state
from rubrics import selectors as rubric_selectors
from rubrics.selectors import UNKNOWN_DATASET, UNKNOWN_PATCHES, dataset_resolve

# How to judge the ready patches of a run the service refused (``RunNotReady``), said after
# its message.
ONLY_READY = 'Send "only_ready": true to judge the other {ready}.'
RUNS_PAGE = 20
RUNS_PAGE_MAX = 100

router = Router()


def _run_dict(request: HttpRequest, run: JudgingRun) -> dict[str, Any]:
    """The run as ``RunOut`` says it: its summary, its URLs, its webhook's state."""
    return {
        **run_selectors.run_summary(run),
        "url": api_url(request, "run_get", run.pk),
        "verdicts": api_url(request, "run_verdicts", run.pk),
        "page": request.build_absolute_uri(run.get_absolute_url()),
        "webhook": state.as_dict() if (state := webhook_state(run)) else None,
        "forecast": run.forecast or None,
    }


def _run_settings(payload: RunIn) -> dict[str, Any]:
    """What the body says of a new run, as ``run_create`` and ``run_plan`` both take it."""
    return {
        "strategies": payload.team,
        "context": payload.context,
        "provider": payload.provider,
        "model": payload.model,
        "reasoning": payload.reasoning,
        "threshold": payload.threshold,
        "reducer": payload.reducer,
        "webhook_url": payload.webhook,
    }


@router.get("/runs", response={200: RunPage, 403: Error, 404: Error}, url_name="run_list")
def run_list(
    request: HttpRequest,
    dataset: str | None = Query(
        None, description="Only this dataset's (name or slug)", pattern=NO_NUL
    ),
    status: RunStatus | None = Query(None, description="Only runs in this status"),  # noqa: B008
    cursor: int | None = Query(None, **CURSOR),
    limit: int = Query(RUNS_PAGE, ge=1, le=RUNS_PAGE_MAX),
) -> dict[str, Any]:
    """The judging runs, newest first, as ``GET /runs/{id}`` says each: of one ``dataset``
    and in one ``status`` when given, ``limit`` at a time (at most 100). ``next`` is the
    next page's URL and ``next_cursor`` its ``cursor``, null on the last page."""
    require_role(request, "judging runs", *LEADS)
    chosen = dataset_or_404(dataset) if dataset is not None else None
    runs, last = run_selectors.runs_before(
        dataset=chosen, status=status or "", before=cursor, limit=limit
    )
    return {"results": [_run_dict(request, run) for run in runs], **next_page(request, last, limit)}


@router.post(
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
            return 404, error_body(request, 404, UNKNOWN_DATASET.format(name=payload.dataset)), {}
        patches = None
        if payload.patches is not None:
            patches, unknown = rubric_selectors.dataset_patches_named(dataset, payload.patches)
            if unknown:
                detail = UNKNOWN_PATCHES.format(keys=", ".join(unknown), dataset=dataset.name)
                return 422, error_body(request, 422, detail), {}
        try:
            created = run_services.run_create(
                dataset=dataset,
                patches=patches,
                **_run_settings(payload),
                name=payload.name,
                actor=user,
                only_ready=payload.only_ready,
                batch=payload.batch,
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
            return 422, error_body(request, 422, str(error)), {}
        body = _run_dict(request, run_or_404(created.pk))
        return 201, body, {"Location": body["url"]}

    return idempotent(request, user, fingerprint(request, request.body), run)


@router.post(
    "/runs/preflight",
    response={200: PreflightOut, 403: Error, 404: Error, 422: NotReady},
    url_name="run_preflight",
)
def run_preflight(request: HttpRequest, payload: RunIn) -> HttpResponse | dict[str, Any]:
    """What ``POST /runs`` with this body would judge and cost, starting nothing and sending
    nothing: the patches that lack what the team needs, and the cost forecast of the others
    (calls, input tokens, expected output tokens and dollars by strategy, ordinary and
    batch). 422 as ``POST /runs`` when the settings are wrong or no patch is ready."""
    require_role(request, "judging runs", *LEADS)
    dataset = dataset_or_404(payload.dataset)
    patches = None
    if payload.patches is not None:
        patches, unknown = rubric_selectors.dataset_patches_named(dataset, payload.patches)
        if unknown:
            detail = UNKNOWN_PATCHES.format(keys=", ".join(unknown), dataset=dataset.name)
            return _not_ready(detail)
    try:
        plan, forecast = run_services.run_plan(
            dataset=dataset, patches=patches, **_run_settings(payload)
        )
    except run_services.RunNotReady as error:
        return _not_ready(str(error), error.preflight)
    except run_services.RunError as error:
        return _not_ready(str(error))
    preflight = plan.preflight
    return {
        "total": preflight.total,
        "ready": preflight.ready,
        "missing": preflight.missing,
        "lacks": [sentence for _, sentence in preflight.sentences()],
        "forecast": forecast.as_dict(),
    }


def _not_ready(detail: str, preflight: Preflight | None = None) -> JsonResponse:
    """A 422 as ``NotReady`` says it: why, and the pre-flight's counts (0 without one)."""
    counts = {"total": 0, "ready": 0, "missing": 0}
    if preflight is not None:
        counts = {
            "total": preflight.total,
            "ready": preflight.ready,
            "missing": preflight.missing,
        }
    return JsonResponse({"detail": detail, **counts}, status=422)


@router.get("/runs/{run_id}", response={200: RunOut, 403: Error, 404: Error}, url_name="run_get")
def run_get(request: HttpRequest, run_id: Id) -> dict[str, Any]:
    """The run: its ``status`` (queued, running, finished, cancelled), counts and spend."""
    require_role(request, "judging runs", *LEADS)
    return _run_dict(request, run_or_404(run_id))


@router.post(
    "/runs/{run_id}/cancel",
    response={200: RunOut, 403: Error, 404: Error, 409: Error},
    url_name="run_cancel",
)
def run_cancel(request: HttpRequest, run_id: Id) -> HttpResponse:
    """Stop the run: no new model call starts; finished verdicts stay. 409 when it has
    ended already."""
    user = require_role(request, "judging runs", *LEADS)
    target = run_or_404(run_id)

    def run() -> Answer:
        try:
            run_services.run_cancel(run=target, actor=user)
        except run_services.RunError as error:
            return 409, error_body(request, 409, str(error)), {}
        return 200, _run_dict(request, run_or_404(run_id)), {}

    return idempotent(request, user, fingerprint(request), run)


@router.post(
    "/runs/{run_id}/resume",
    response={200: RunOut, 403: Error, 404: Error, 409: Error},
    url_name="run_resume",
)
def run_resume(request: HttpRequest, run_id: Id, retry_failed: bool = False) -> HttpResponse:
    """Judge the run's pending patches again (and its failed ones with ``retry_failed``).
    409 when there is none."""
    user = require_role(request, "judging runs", *LEADS)
    target = run_or_404(run_id)

    def run() -> Answer:
        try:
            run_services.run_resume(run=target, actor=user, retry_failed=retry_failed)
        except run_services.RunError as error:
            return 409, error_body(request, 409, str(error)), {}
        return 200, _run_dict(request, run_or_404(run_id)), {}

    return idempotent(request, user, fingerprint(request, str(retry_failed)), run)
