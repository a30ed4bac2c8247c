"""Every error under ``/api/v1/`` is JSON, ``{"detail": message}`` (the document's
``Error``): the operations' own (ninja's exception handlers, registered by
``api.endpoints``), and Django's answers before or around them (no such path, a method not
allowed, a server error), which ``JsonErrorsMiddleware`` turns from the product's HTML error
pages into JSON.

A status has one body per operation, the one its document names: ``error_body`` adds what
an operation's own error schema holds beyond ``Error`` (``NotReady``'s counts on the run
operations' 422, ``BundleErrors``' list on a bundle's), whoever refuses the request.
"""

import json
import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from sejury_web.nul import NUL_IN_VALUE, NulRefusalMiddleware

API_PREFIX = "/api/v1/"
INVALID = "the request is invalid"
log = logging.getLogger(__name__)


def is_api_path(path: str) -> bool:
    return path.startswith(API_PREFIX)


def json_error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


# What an operation's error body holds beyond ``Error``, by status and operation (its method
# and its route under ``API_PREFIX``, as Django resolved it: operations of one path share
# their URL name): the fields its schema requires, as they are when nothing fills them.
NOT_READY_COUNTS = {"total": 0, "ready": 0, "missing": 0}
ERROR_FIELDS: dict[int, dict[tuple[str, str], dict[str, Any]]] = {
    422: {
        ("POST", "runs"): NOT_READY_COUNTS,
        ("POST", "runs/preflight"): NOT_READY_COUNTS,
        ("POST", "datasets/<name>/bundle"): {"errors": [], "more": 0},
    },
}


def error_body(
    request: HttpRequest, status: int, detail: str, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The body of an error ``status`` of the operation ``request`` called, as its document
    says it: ``detail``, ``errors`` when given, and the fields of the operation's own schema."""
    match = getattr(request, "resolver_match", None)
    route = str(match.route if match is not None else "").removeprefix(API_PREFIX.lstrip("/"))
    body: dict[str, Any] = {"detail": detail}
    body |= ERROR_FIELDS.get(status, {}).get((request.method or "", route), {})
    if errors is not None:
        body["errors"] = errors
    return body


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return "error"


def _is_json(response: HttpResponse) -> bool:
    return str(response.get("Content-Type", "")).startswith("application/json")


class JsonErrorsMiddleware:
    """An error answer under ``/api/v1/`` that is not JSON becomes ``{"detail": …}``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api_path(request.path) or response.status_code < 400 or _is_json(response):
            return response
        status = response.status_code
        message = _phrase(status)
        if status == 405 and response.get("Allow"):
            message = f"method {request.method} not allowed; allowed: {response['Allow']}"
        replaced = json_error(status, message)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if response.get(header):
                replaced[header] = response[header]
        return replaced


def detail_of(response: HttpResponse) -> str:
    """The message of a JSON error (for tests and logs)."""
    return str(json.loads(response.content).get("detail", ""))


class ApiNulRefusalMiddleware(NulRefusalMiddleware):
    """``sejury_web.nul``'s refusal, with the API's 422 for a query parameter holding a NUL:
    the operation's error body, the parameter in ``errors``."""

    def refuse_parameter(self, request: HttpRequest, name: str) -> HttpResponse:
        if not is_api_path(request.path):
            return super().refuse_parameter(request, name)
        errors = [{"line": None, "field": name, "message": f"{name} {NUL_IN_VALUE}"}]
        return JsonResponse(error_body(request, 422, INVALID, errors), status=422)
