from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request as HtmxMiddleware leaves it, for type checking views."""

    htmx: HtmxDetails


class AuthenticatedHtmxRequest(HtmxHttpRequest):
    """A request of a logged-in user: what every view behind ``role_required`` gets."""

    user: User
