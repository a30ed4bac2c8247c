"""A NUL character (``\\x00``) in a request's path or query is refused before any view reads
it.

No stored name, key or search text can hold one: forms refuse it (Django's
``ProhibitNullCharactersValidator``), bundles refuse it (``rubrics.bundle.read``) and
PostgreSQL cannot store it, so a query comparing with one fails there (``DataError``) where
SQLite only finds nothing. A path holding one names nothing: 404. A query parameter holding
one is refused, naming the parameter: a page answers 400; the API answers 422, as it does
any invalid parameter (``api.errors.ApiNulRefusalMiddleware``), and its bodies refuse it in
their schema (``api.schemas.RunIn``).
"""

from collections.abc import Callable
from typing import Any

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse

NUL = "\x00"
NUL_IN_PATH = "No address holds a NUL character (%00)."
NUL_IN_QUERY = "The parameter {name!r} holds a NUL character (%00), which no value can hold."
NUL_IN_VALUE = "holds a NUL character (%00), which no value can hold"


def nul_parameter(request: HttpRequest) -> str | None:
    """The name of the first query parameter whose name or a value holds a NUL, if any."""
    for name, values in request.GET.lists():
        if NUL in name or any(NUL in value for value in values):
            return name.replace(NUL, "\\x00")
    return None


class NulRefusalMiddleware:
    """404 for a path with a NUL in it, 400 for a query parameter with one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
    ) -> HttpResponse | None:
        # Once the URL has resolved, so that a refusal can be the resolved operation's.
        if NUL in request.path:
            raise Http404(NUL_IN_PATH)
        name = nul_parameter(request)
        return None if name is None else self.refuse_parameter(request, name)

    def refuse_parameter(self, request: HttpRequest, name: str) -> HttpResponse:
        raise BadRequest(NUL_IN_QUERY.format(name=name))
