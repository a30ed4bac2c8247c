"""Login throttling (django-axes): failed logins are counted per username and per address,
and either reaching the limit locks it out for a cool-off that doubles with each lockout.

Axes records each failure (``AccessAttempt``, cleared once the cool-off is over or the user
logs in) and keeps a log of them (``AccessFailureLog``), attempts made while locked out
included. The cool-off is read off that log: with n failures of the username or address in
the last ``BACKOFF_WINDOW``, ``BASE_COOL_OFF`` × 2^(⌊n / limit⌋ − 1), up to ``MAX_COOL_OFF``:
a minute at the first lockout, two at the second, and every ``limit`` attempts made while
locked out double the wait too. The locked out see a page in the product's layout that says
how long to wait (``registration/locked_out.html``, status 429).
"""

from datetime import timedelta

from axes.models import AccessFailureLog
from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest
from django.utils import timezone

BASE_COOL_OFF = timedelta(minutes=1)
MAX_COOL_OFF = timedelta(hours=1)
BACKOFF_WINDOW = timedelta(hours=24)


def _failures(request: HttpRequest) -> int:
    """The failed logins of this username or from this address in the window."""
    field = getattr(settings, "AXES_USERNAME_FORM_FIELD", "username")
    username = request.POST.get(field, "") if request.POST else ""
    address = getattr(request, "axes_ip_address", None) or request.META.get("REMOTE_ADDR", "")
    who = Q(ip_address=address)
    if username:
        who |= Q(username=username)
    since = timezone.now() - BACKOFF_WINDOW
    return AccessFailureLog.objects.filter(who, attempt_time__gte=since).count()


def cool_off(request: HttpRequest | None = None) -> timedelta:
    """The cool-off of a lockout (``AXES_COOLOFF_TIME``): doubled for every ``limit`` earlier
    failures of the username or address in the last day, capped."""
    if request is None:
        return BASE_COOL_OFF
    doublings = max(_failures(request) // settings.AXES_FAILURE_LIMIT - 1, 0)
    return min(BASE_COOL_OFF * 2 ** min(doublings, 16), MAX_COOL_OFF)
