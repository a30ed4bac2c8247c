from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request as HtmxMiddleware leaves it, for type checking views."""

    htmx: HtmxDetails
