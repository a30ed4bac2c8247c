"""Rate limits of the API, as fixed-window counters in the database (``ApiThrottle``), so
that every web process counts the same hits.

- Requests per token: ``SEJURY_API["RATE"]`` per ``RATE_WINDOW`` seconds.
- Failed bearer authentications per client address: ``AUTH_FAILURES`` per
  ``AUTH_FAILURE_WINDOW`` seconds; past that, further failed tokens from the address get 429
  until the window ends, while a valid token from it still authenticates (``api.auth``). The
  address is the client's through ``SEJURY_TRUSTED_PROXIES`` (``sejury_web.client_address``).

Past a limit the API answers 429 with ``Retry-After``: the seconds until the window ends.
"""

import time
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.http import HttpRequest

from api.models import ApiThrottle
from sejury_web.client_address import client_address


def limits() -> dict[str, Any]:
    return dict(settings.SEJURY_API)


def _window(length: int) -> tuple[int, int]:
    now = int(time.time())
    start = now - now % length
    return start, start + length - now


def throttle_hit(key: str, *, window_seconds: int) -> tuple[int, int]:
    """Count a hit of ``key`` in the current window: (hits so far, seconds left in it)."""
    start, left = _window(window_seconds)
    for _ in range(3):
        with transaction.atomic():
            if ApiThrottle.objects.filter(key=key, window=start).update(count=F("count") + 1):
                return ApiThrottle.objects.get(key=key).count, left
            if ApiThrottle.objects.filter(key=key).update(window=start, count=1):
                return 1, left
        try:
            with transaction.atomic():
                ApiThrottle.objects.create(key=key, window=start, count=1)
            return 1, left
        except IntegrityError:  # another request created it first: count again
            continue
    return 1, left


def throttle_count(key: str, *, window_seconds: int) -> tuple[int, int]:
    """The hits of ``key`` in the current window, without counting one."""
    start, left = _window(window_seconds)
    row = ApiThrottle.objects.filter(key=key, window=start).values_list("count", flat=True)
    return (row[0] if row else 0), left


def auth_failures_over(request: HttpRequest) -> int | None:
    """Seconds the address must wait when it failed too often, else None."""
    conf = limits()
    key = f"auth-failure:{client_address(request)}"
    count, left = throttle_count(key, window_seconds=conf["AUTH_FAILURE_WINDOW"])
    return left if count >= conf["AUTH_FAILURES"] else None


def auth_failure_record(request: HttpRequest) -> None:
    conf = limits()
    key = f"auth-failure:{client_address(request)}"
    throttle_hit(key, window_seconds=conf["AUTH_FAILURE_WINDOW"])


def token_over_rate(token_id: int) -> int | None:
    """Count a request of the token; seconds to wait when it is over its rate, else None."""
    conf = limits()
    count, left = throttle_hit(f"token:{token_id}", window_seconds=conf["RATE_WINDOW"])
    return left if count > conf["RATE"] else None
