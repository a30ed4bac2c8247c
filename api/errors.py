"""Every error under ``/api/v1/`` is JSON, ``{"detail": message}``: the operations' own
(ninja's exception handlers, registered by ``api.endpoints``), and Django's answers before
or around them (no such path, a method not allowed, a server error), which
``JsonErrorsMiddleware`` turns from the product's HTML error pages into JSON."""

import json
import logging
from collections.abc import Callable
from http import HTTPStatus

from django.http import HttpRequest, HttpResponse, JsonResponse

API_PREFIX = "/api/v1/"
log = logging.getLogger(__name__)


def is_api_path(path: str) -> bool:
    return path.startswith(API_PREFIX)


def json_error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


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
