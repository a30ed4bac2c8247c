"""A request to the API whose body is larger than any operation takes is refused (413) from
its ``Content-Length``, before anything reads the body, and without waiting for it.

The largest body an operation takes is a bundle (``SEJURY_BUNDLE_MAX_BYTES``); in a multipart
upload, that plus ``MULTIPART_ALLOWANCE`` for the parts' headers (the bundle operation then
refuses a file over the limit to the byte).

The answer has no ``Content-Length`` (it is streamed), so the development server closes the
connection after it and says ``Connection: close`` itself (WSGI lets no application set that
header: wsgiref refuses it, gunicorn drops it): the client learns at once that its upload
was refused and the server reads no more of it. Development server only, too: at the
end of a request ``runserver`` reads whatever the application left of the body into memory,
all of it at once (``django.core.servers.basehttp.ServerHandler.close``), 200 MB for a 200 MB
upload; the server's input stream is marked read to the end first. gunicorn, the server to
deploy with, closes a sync worker's connection after every request, reading nothing more.
"""

import json
from collections.abc import Callable

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse

from api.errors import is_api_path

MULTIPART_ALLOWANCE = 64 * 1024
TOO_LARGE_BODY = "the request body is over the size limit of {limit:,} bytes"


def body_ceiling(request: HttpRequest) -> int:
    """The largest body an API operation takes, in the request's content type."""
    limit = int(settings.SEJURY_BUNDLE_MAX_BYTES)
    return limit + MULTIPART_ALLOWANCE if request.content_type == "multipart/form-data" else limit


def declared_length(request: HttpRequest) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def refuse_unread(request: HttpRequest, status: int, message: str) -> StreamingHttpResponse:
    """A JSON error answered without reading the request's body, on a connection that closes."""
    stream = getattr(request, "environ", {}).get("wsgi.input")
    if isinstance(stream, LimitedStream):  # runserver's own: nothing left for it to drain
        stream.limit = 0
    body = json.dumps({"detail": message}).encode()
    return StreamingHttpResponse(iter([body]), status=status, content_type="application/json")


class BodyLimitMiddleware:
    """413 for an API request whose declared body is over :func:`body_ceiling`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        if not is_api_path(request.path):
            return self.get_response(request)
        if declared_length(request) > body_ceiling(request):
            limit = int(settings.SEJURY_BUNDLE_MAX_BYTES)
            return refuse_unread(request, 413, TOO_LARGE_BODY.format(limit=limit))
        return self.get_response(request)
