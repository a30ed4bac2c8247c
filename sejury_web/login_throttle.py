"""Login throttling (django-axes): failed logins are counted three ways, each with its own
limit, and reaching one locks that out for a cool-off that doubles with each lockout.

- per username and address (``AXES_FAILURE_LIMIT``, 5): someone mistyping their password;
- per username from anywhere (``SEJURY_LOGIN_USERNAME_FAILURE_LIMIT``, 20): one account
  guessed from many addresses;
- per address, every username together (``SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT``, 100): one
  address guessing many accounts. Far higher than the others, since many people may share an
  address (an office's NAT); behind a reverse proxy the address is the client's, read through
  ``SEJURY_TRUSTED_PROXIES`` (``sejury_web.client_address``), never the proxy's.

So one client's failures lock out its own (username, address) first; another user at the
same address is locked out only past the address's ceiling. A login clears the username's
counts (not the address's: logging in to one's own account must not reset a guesser's).

Axes records each failure (``AccessAttempt``, per username, address and user agent, kept for
the longest cool-off) and keeps a log of them (``AccessFailureLog``), attempts made while
locked out included. The cool-off is read off that log: with n failures counted one way in
the last ``BACKOFF_WINDOW``, ``BASE_COOL_OFF`` × 2^(⌊n / limit⌋ − 1), up to
``MAX_COOL_OFF``, the longest of the three ways: a minute at the first lockout, two at the
second, and every ``limit`` attempts made while locked out double the wait too. The locked
out see a page in the product's layout that says which count and how long to wait
(``registration/locked_out.html``, status 429).
"""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt, AccessFailureLog
from django.conf import settings
from django.db.models import Count, Q, QuerySet, Sum
from django.http import HttpRequest
from django.utils import timezone

from sejury_web.client_address import client_address

BASE_COOL_OFF = timedelta(minutes=1)
MAX_COOL_OFF = timedelta(hours=1)
BACKOFF_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class Lockout:
    """Which count reached its limit: ``pair`` (this username from this address),
    ``username`` (from anywhere) or ``address`` (every username)."""

    count: str
    limit: int


def _limits() -> dict[str, int]:
    return {
        "pair": int(settings.AXES_FAILURE_LIMIT),
        "username": int(settings.SEJURY_LOGIN_USERNAME_FAILURE_LIMIT),
        "address": int(settings.SEJURY_LOGIN_ADDRESS_FAILURE_LIMIT),
    }


def _who(request: HttpRequest, credentials: dict[str, Any] | None) -> tuple[str | None, str]:
    username = get_client_username(request, credentials)
    address = getattr(request, "axes_ip_address", None) or client_address(request)
    return username, address


def _counts(rows: QuerySet[Any], field: str, username: str | None, address: str) -> dict[str, int]:
    """The three counts over ``rows`` (summing ``field`` when given, else counting)."""
    pair = Q(username=username, ip_address=address)
    of_user = Q(username=username)
    at_address = Q(ip_address=address)
    rows = rows.filter(of_user | at_address)
    if field:
        sums = rows.aggregate(
            pair=Sum(field, filter=pair),
            username=Sum(field, filter=of_user),
            address=Sum(field, filter=at_address),
        )
    else:
        sums = rows.aggregate(
            pair=Count("pk", filter=pair),
            username=Count("pk", filter=of_user),
            address=Count("pk", filter=at_address),
        )
    return {name: int(value or 0) for name, value in sums.items()}


def lockout(request: HttpRequest, credentials: dict[str, Any] | None = None) -> Lockout | None:
    """The count that reached its limit for this login, if one did (within the cool-off)."""
    username, address = _who(request, credentials)
    recent = AccessAttempt.objects.filter(attempt_time__gte=get_cool_off_threshold(request))
    counts = _counts(recent, "failures_since_start", username, address)
    for name, limit in _limits().items():
        if counts[name] >= limit:
            return Lockout(name, limit)
    return None


class LoginThrottleHandler(AxesDatabaseHandler):
    """Axes' database handler, with a limit for each of the three counts.

    Axes compares one number, :meth:`get_failures`, with one limit, ``AXES_FAILURE_LIMIT``;
    here that number is the limit plus how far the count nearest to (or furthest past) its
    own limit is from it, so that axes locks out exactly when one count reaches its limit.
    """

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        username, address = _who(request, credentials)
        recent = AccessAttempt.objects.filter(attempt_time__gte=get_cool_off_threshold(request))
        counts = _counts(recent, "failures_since_start", username, address)
        limits = _limits()
        reached = [name for name, limit in limits.items() if counts[name] >= limit]
        request.login_lockout = (  # type: ignore[attr-defined]
            Lockout(reached[0], limits[reached[0]]) if reached else None
        )
        margin = max(counts[name] - limit for name, limit in limits.items())
        return limits["pair"] + margin

    def reset_user_attempts(
        self, request: HttpRequest, credentials: dict[str, Any] | None = None
    ) -> int:
        """After a login: the username's failures, from every address, and no one else's."""
        username = get_client_username(request, credentials)
        if not username:
            return 0
        count, _ = AccessAttempt.objects.filter(username=username).delete()
        return count

    def clean_expired_user_attempts(
        self, request: HttpRequest | None = None, credentials: dict[str, Any] | None = None
    ) -> int:
        """Forget failures older than the longest cool-off (axes' own would forget, at each
        login, whatever is older than that login's cool-off: other clients' lockouts too)."""
        count, _ = AccessAttempt.objects.filter(
            attempt_time__lte=timezone.now() - MAX_COOL_OFF
        ).delete()
        return count


def cool_off(request: HttpRequest | None = None) -> timedelta:
    """The cool-off of a lockout (``AXES_COOLOFF_TIME``): doubled for every ``limit`` earlier
    failures counted one way in the last day, the longest of the three ways, capped."""
    if request is None:
        return BASE_COOL_OFF
    username, address = _who(request, None)
    since = timezone.now() - BACKOFF_WINDOW
    log = AccessFailureLog.objects.filter(attempt_time__gte=since)
    counts = _counts(log, "", username, address)
    doublings = max(
        max(counts[name] // limit - 1, 0) for name, limit in _limits().items() if limit > 0
    )
    return min(BASE_COOL_OFF * 2 ** min(doublings, 16), MAX_COOL_OFF)
