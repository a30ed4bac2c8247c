"""The operations of ``/api/v1/`` (django-ninja): thin, each a role check, then one service
or selector of the apps below, as a page would call it, and the error from it formatted.

One module per domain, each a ``Router`` mounted here without a prefix: ``datasets`` (the
list), ``bundles`` (an import, and a big one's upload the worker imports), ``reports`` (the
agreement report), ``runs`` (start, read, cancel, resume) and ``verdicts`` (a run's verdicts,
paged by cursor); their schemas are in ``api.schemas``, what they share in ``common``.

Roles are those of the pages: datasets are listed for leads and reviewers; bundles, runs,
verdicts, uploads and reports are for leads. An annotator's token is refused everywhere.
``{name}`` in a path is a dataset's name or its slug (the one of its URL), as the import
command and page take it.
"""

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.operation import Operation

from api.auth import ApiAuth, RateLimited
from api.document import document_errors
from api.endpoints import bundles, datasets, reports, runs, verdicts
from api.errors import INVALID, error_body
from api.schemas import NO_NUL
from sejury_web.nul import NUL_IN_VALUE

log = logging.getLogger(__name__)

VERSION = "1"
INTERNAL = "the server failed to answer; nothing more is known here (see the server's log)"
BODY_TOO_LARGE = "the body is over the size limit of {limit:,} bytes"
UNREADABLE = "the body cannot be read as its Content-Type says"


class SejuryApi(NinjaAPI):
    """The API, whose operation ids stay those of the one module it was written in at first
    (``api_endpoints_run_create``): pipelines may have generated clients from them."""

    def get_openapi_operation_id(self, operation: Operation) -> str:
        return f"api_endpoints_{operation.view_func.__name__}"

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        document = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        document_errors(document)
        return document


api = SejuryApi(
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
# In the order of the API's document and docs page.
for domain in (datasets, bundles, reports, runs, verdicts):
    api.add_router("", domain.router)


# -- errors -------------------------------------------------------------------------------


def _http_error(request: HttpRequest, exc: Any) -> HttpResponse:
    assert isinstance(exc, HttpError)
    status = exc.status_code
    response = JsonResponse(error_body(request, status, exc.message), status=status)
    if isinstance(exc, AuthenticationError):
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    if isinstance(exc, RateLimited):
        response["Retry-After"] = str(exc.retry_after)
    return response


def _not_found(request: HttpRequest, exc: Any) -> HttpResponse:
    message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else "not found"
    return JsonResponse(error_body(request, 404, message), status=404)


def _message(error: dict[str, Any]) -> str:
    """pydantic's message, but a NUL's in the words every door says it."""
    if error.get("ctx", {}).get("pattern") == NO_NUL:
        return NUL_IN_VALUE
    return str(error.get("msg", ""))


def _invalid(request: HttpRequest, exc: Any) -> HttpResponse:
    assert isinstance(exc, NinjaValidationError)
    errors = [
        {
            "line": None,
            "field": ".".join(str(part) for part in error.get("loc", ())[1:]) or None,
            "message": _message(error),
        }
        for error in exc.errors
    ]
    return JsonResponse(error_body(request, 422, INVALID, errors), status=422)


def _too_large(request: HttpRequest, exc: Any) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0
    detail = BODY_TOO_LARGE.format(limit=limit)
    return JsonResponse(error_body(request, 413, detail), status=413)


def _unreadable(request: HttpRequest, exc: Any) -> HttpResponse:
    """A multipart body that cannot be parsed, or one with too many fields or files."""
    return JsonResponse(error_body(request, 400, UNREADABLE), status=400)


def _internal(request: HttpRequest, exc: Any) -> HttpResponse:
    log.exception("API error on %s %s", request.method, request.path, exc_info=exc)
    return JsonResponse({"detail": INTERNAL}, status=500)


api.add_exception_handler(HttpError, _http_error)
api.add_exception_handler(Http404, _not_found)
api.add_exception_handler(NinjaValidationError, _invalid)
api.add_exception_handler(RequestDataTooBig, _too_large)
api.add_exception_handler(MultiPartParserError, _unreadable)
api.add_exception_handler(SuspiciousOperation, _unreadable)
api.add_exception_handler(Exception, _internal)
