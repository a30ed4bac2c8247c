"""``Idempotency-Key``: a POST retried with the same key gets the first answer again.

The key is the user's (two users may use the same key). The first request *reserves* the key
(a row without an answer, committed at once; the unique constraint on user and key lets only
one request win), runs, and stores its answer. A retry with the same key and the same request
(its ``fingerprint``: method, path and body) gets that answer, status and body, and nothing is
done twice; a retry while the first still runs waits for its answer (``WAIT_SECONDS``, then
409 with ``Retry-After``). The same key with another request is refused (409, without:
that request will never be answered under this key). An answer of 5xx is not kept: the
reservation is dropped so that a retry runs again. Answers are kept ``KEEP_HOURS``.

The operation and the storing of its answer are one transaction: a process killed between
them leaves a reservation without an answer and nothing of the operation committed, so a
reservation still unanswered after ``ABANDONED_MINUTES`` is dropped and the retry runs.
"""

import hashlib
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from api.errors import error_body
from api.models import IdempotentRequest

HEADER = "Idempotency-Key"
KEY_MAX = 255
KEEP_HOURS = 24
WAIT_SECONDS = 15.0
ABANDONED_MINUTES = 30  # far longer than any request (big bundles go to the worker)
POLL_SECONDS = 0.1
KEY_TOO_LONG = f"the Idempotency-Key may have at most {KEY_MAX} characters"
KEY_REUSED = (
    "this Idempotency-Key was used for a different request (another path or body); use a new "
    "key for a new request"
)
STILL_RUNNING = "a request with this Idempotency-Key is still being answered; retry later"
REPLAYED_HEADER = "Idempotent-Replayed"

# What an operation answers: status, JSON body, extra headers.
Answer = tuple[int, dict[str, Any], dict[str, str]]


def fingerprint(request: HttpRequest, *parts: bytes | str) -> str:
    digest = hashlib.sha256(f"{request.method} {request.path}".encode())
    for part in parts:
        digest.update(b"\0")
        digest.update(part.encode() if isinstance(part, str) else part)
    return digest.hexdigest()


def _response(status: int, body: Any, headers: dict[str, str]) -> HttpResponse:
    response = JsonResponse(body, status=status, safe=False)
    for name, value in headers.items():
        response[name] = value
    return response


def _replay(record: IdempotentRequest) -> HttpResponse:
    response = _response(record.status_code or 500, record.body, dict(record.headers))
    response[REPLAYED_HEADER] = "true"
    return response


def _error(request: HttpRequest, status: int, message: str, **headers: str) -> HttpResponse:
    return _response(status, error_body(request, status, message), headers)


def idempotent(
    request: HttpRequest, user: User, print_: str, run: Callable[[], Answer]
) -> HttpResponse:
    """Answer ``run()`` once per ``Idempotency-Key`` of ``user`` (every time without one)."""
    key = request.headers.get(HEADER, "").strip()
    if not key:
        return _response(*run())
    if len(key) > KEY_MAX:
        return _error(request, 422, KEY_TOO_LONG)
    now = timezone.now()
    IdempotentRequest.objects.filter(created_at__lt=now - timedelta(hours=KEEP_HOURS)).delete()
    IdempotentRequest.objects.filter(
        user=user,
        key=key,
        status_code__isnull=True,
        created_at__lt=now - timedelta(minutes=ABANDONED_MINUTES),
    ).delete()
    try:
        with transaction.atomic():
            record = IdempotentRequest.objects.create(user=user, key=key, fingerprint=print_)
    except IntegrityError:
        return _earlier(request, user, key, print_)
    try:
        with transaction.atomic():
            status, body, headers = run()
            if status < 500:
                IdempotentRequest.objects.filter(pk=record.pk).update(
                    status_code=status, body=body, headers=headers
                )
    except BaseException:
        IdempotentRequest.objects.filter(pk=record.pk).delete()
        raise
    if status >= 500:
        IdempotentRequest.objects.filter(pk=record.pk).delete()
    return _response(status, body, headers)


def _earlier(request: HttpRequest, user: User, key: str, print_: str) -> HttpResponse:
    """The answer to an earlier request with the same key, once it has one."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        record = IdempotentRequest.objects.filter(user=user, key=key).first()
        if record is None:  # the first failed with a 5xx and let go of the key
            return _error(request, 409, STILL_RUNNING, **{"Retry-After": "1"})
        if record.fingerprint != print_:
            return _error(request, 409, KEY_REUSED)
        if record.status_code is not None:
            return _replay(record)
        if time.monotonic() > deadline:
            return _error(request, 409, STILL_RUNNING, **{"Retry-After": "1"})
        time.sleep(POLL_SECONDS)
