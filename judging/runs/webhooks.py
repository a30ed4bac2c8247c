"""A run's webhook: one signed POST when the run ends, retried with backoff; what the
``judging.tasks.delivery_attempt_task`` calls. Imports no task (the tasks import this
module): ``JudgingConfig.ready()`` registers that task here (``webhook_task_register``), and
it is queued as every task is, with ``sejury_web.durable.enqueue_on_commit``.

A pipeline gives the URL when it starts the run (``"webhook"`` of ``POST /api/v1/runs``, or
the new-run form). When the run ends, finished (``run.finished``) or cancelled by someone
(``run.cancelled``), one ``WebhookDelivery`` is opened for the run's generation, exactly
once: the run is marked ended by a conditional UPDATE that only one worker wins, and the
delivery is unique per run and generation besides. A run resumed and ended again is called
again, with its new counts.

The call: ``POST`` of a JSON body (``delivery_body``) with

- ``X-SEJury-Signature: sha256=<hex>``, the HMAC-SHA256 under ``SEJURY_WEBHOOK_SECRET`` of
  ``f"{timestamp}.{body}"``: the timestamp is signed too, so a captured call cannot be
  replayed later (a receiver refuses timestamps more than a few minutes old);
- ``X-SEJury-Timestamp``, Unix seconds of this attempt;
- ``X-SEJury-Delivery``, the delivery's UUID, the same on every retry: a receiver keeps the
  ones it has seen and drops duplicates;
- ``X-SEJury-Event``, ``run.finished`` or ``run.cancelled``.

A 2xx answer delivers it. A connection error, a timeout, 408, 429 or a 5xx is retried after
``backoff_seconds`` (at least the answer's ``Retry-After``), up to ``MAX_ATTEMPTS`` POSTs in
all; any other answer (a redirect, which is not followed, or another 4xx) fails it at once.

Where it may point: any http or https URL, private addresses included. The product is
self-hosted, usually on the same internal network as the CI that receives the call, and only
leads can set a webhook; the answer's body is never read back nor shown, only its status.
"""

import dataclasses
import email.utils
import hashlib
import hmac
import json
import logging
import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from judging.models import JudgingRun, WebhookDelivery
from judging.runs.selectors import run_summary
from sejury_web.durable import enqueue_on_commit

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-SEJury-Signature"
TIMESTAMP_HEADER = "X-SEJury-Timestamp"
DELIVERY_HEADER = "X-SEJury-Delivery"
EVENT_HEADER = "X-SEJury-Event"
USER_AGENT = "SE-Jury-Webhook/1"
SCHEMES = ("http", "https")
URL_MAX = 2000
ERROR_MAX = 500
RETRIED_STATUSES = frozenset({408, 429})  # and every 5xx

NOT_HTTP = "the webhook must be an http or https URL, not {scheme!r}"
NO_HOST = "the webhook URL {url!r} names no host"
BAD_PORT = "the webhook URL {url!r} has an invalid port"
TOO_LONG = "the webhook URL is over {limit} characters"
CREDENTIALS = (
    "put no user name or password in the webhook URL: every call is signed instead "
    f"({SIGNATURE_HEADER})"
)
UNSIGNED = (
    "webhooks need SEJURY_WEBHOOK_SECRET set on the server, to sign their calls; ask whoever "
    "runs SE-Jury to set it"
)
HTTP_ERROR = "HTTP {code} {reason}"
REFUSED = "{answer}: the receiver refused the call, which is not retried"
REDIRECTED = "{answer}: webhooks do not follow redirects; give the final URL"
TIMED_OUT = "no answer within {seconds:g} s"
UNREACHABLE = "could not connect: {error}"
GAVE_UP = "gave up after {attempts} attempts; the last: {error}"


class WebhookError(ValueError):
    """A webhook URL that cannot be used; the message says why."""


def _config() -> dict[str, Any]:
    return dict(settings.SEJURY_WEBHOOK)


def webhook_url_check(url: str) -> str:
    """The URL, stripped, if a run may call it: http or https, with a host and no
    credentials, and a secret to sign with. Private and loopback addresses are allowed (see
    the module's note)."""
    url = url.strip()
    if len(url) > URL_MAX:
        raise WebhookError(TOO_LONG.format(limit=URL_MAX))
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES:
        raise WebhookError(NOT_HTTP.format(scheme=parts.scheme or url))
    if not parts.hostname:
        raise WebhookError(NO_HOST.format(url=url))
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when asked
    except ValueError:
        raise WebhookError(BAD_PORT.format(url=url)) from None
    if parts.username or parts.password:
        raise WebhookError(CREDENTIALS)
    if not _config()["SECRET"]:
        raise WebhookError(UNSIGNED)
    return url


def webhook_host(url: str) -> str:
    """What the run page shows of a webhook: its host (and port)."""
    return urlsplit(url).netloc


# -- signing ------------------------------------------------------------------------------


def signature(secret: str, timestamp: int | str, body: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256 of ``f"{timestamp}.{body}"`` under ``secret``."""
    message = f"{timestamp}.".encode() + body
    return "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_verify(
    *,
    secret: str,
    body: bytes,
    timestamp: str,
    signature_header: str,
    tolerance: float = 300.0,
    now: float | None = None,
) -> bool:
    """What a receiver checks: the signature matches, and the timestamp is recent."""
    try:
        sent = int(timestamp)
    except ValueError:
        return False
    if abs((time.time() if now is None else now) - sent) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, sent, body), signature_header)


# -- retries ------------------------------------------------------------------------------


def backoff_seconds(
    attempt: int, *, base: float, retry_after: float | None = None, retry_after_max: float
) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1 for the first) before the next:
    ``base`` doubled each time, and never less than the receiver's ``Retry-After`` (itself
    at most ``retry_after_max``)."""
    delay = base * 2 ** (attempt - 1)
    if retry_after is not None:
        delay = max(delay, min(max(retry_after, 0.0), retry_after_max))
    return delay


def backoff_schedule(*, attempts: int, base: float) -> list[float]:
    """The waits between ``attempts`` POSTs when no answer says Retry-After."""
    return [backoff_seconds(k, base=base, retry_after_max=0.0) for k in range(1, attempts)]


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """A Retry-After header's seconds: a number of them, or an HTTP date; None otherwise."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - (time.time() if now is None else now), 0.0)


def is_retried(status_code: int) -> bool:
    return status_code in RETRIED_STATUSES or 500 <= status_code <= 599


# -- opening a delivery -------------------------------------------------------------------

# ``judging.tasks.delivery_attempt_task(delivery_id, attempt)``, a Celery task.
_task: Any = None


def webhook_task_register(task: Any) -> None:
    """Called from ``JudgingConfig.ready()`` with the task that makes a delivery's attempt."""
    global _task
    _task = task


def _send(delivery_id: int, attempt: int, countdown: float = 0.0) -> None:
    """Queue the attempt once the caller's transaction commits, after ``countdown`` seconds."""
    if _task is None:
        log.error("no webhook task registered; delivery %s waits for a worker", delivery_id)
        return
    enqueue_on_commit(_task, delivery_id, attempt, countdown=countdown)


def delivery_open(*, run_id: int, event: str) -> WebhookDelivery | None:
    """The run just ended (``event``): open its webhook's delivery for the run's current
    generation, and queue it once the caller's transaction commits. None when the run has
    no webhook, or when this generation's delivery was opened already."""
    run = JudgingRun.objects.filter(pk=run_id).values("webhook_url", "generation").first()
    if run is None or not run["webhook_url"]:
        return None
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(
                run_id=run_id, generation=run["generation"], event=event, url=run["webhook_url"]
            )
    except IntegrityError:  # another worker ended this generation first
        return None
    _send(delivery.pk, 1)
    return delivery


def deliveries_resume_unfinished() -> list[int]:
    """Queue again every delivery still to be made: a worker starting calls this, so that a
    retry a killed worker was holding is made when a worker is back. A message that survived
    as well carries the same attempt number, and only one of the two makes it."""
    now = timezone.now()
    resumed = []
    for delivery in WebhookDelivery.objects.filter(
        status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING]
    ).order_by("pk"):
        wait = (delivery.next_attempt_at - now).total_seconds() if delivery.next_attempt_at else 0
        _send(delivery.pk, delivery.attempts + 1, max(wait, 0.0))
        resumed.append(delivery.pk)
    return resumed


# -- the body -----------------------------------------------------------------------------


def _base(run: JudgingRun) -> str:
    return str(_config()["BASE_URL"] or run.webhook_origin).rstrip("/")


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def delivery_body(delivery: WebhookDelivery) -> str:
    """The JSON the receiver gets: the event, the run as ``GET /api/v1/runs/{id}`` has it
    (its status the one the event says), and where to read its verdicts. Links are absolute
    given ``SEJURY_BASE_URL`` or the origin the run was created through, else paths.
    The API's URLs are reversed by name: ``api`` sits above this app and is not imported."""
    run = JudgingRun.objects.select_related("dataset").get(pk=delivery.run_id)
    base = _base(run)
    status = (
        JudgingRun.Status.CANCELLED
        if delivery.event == WebhookDelivery.Event.CANCELLED
        else JudgingRun.Status.FINISHED
    )
    verdicts_url = base + reverse("api-v1:run_verdicts", args=[run.pk])
    body = {
        "event": delivery.event,
        "delivery": str(delivery.delivery_id),
        "run": {
            **run_summary(run),
            "status": str(status),
            "generation": delivery.generation,
            "url": base + reverse("api-v1:run_get", args=[run.pk]),
            "page": base + run.get_absolute_url(),
        },
        "verdicts_url": verdicts_url,
    }
    return json.dumps(body, separators=(",", ":"), allow_nan=False)


# -- one attempt --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Attempt:
    """What one run of the task came to: the delivery's status, and the seconds until the
    next attempt when it is to be retried."""

    status: str
    retry_in: float | None = None


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str, float | None]:
    """POST once: (status code or None, error or "", Retry-After seconds or None)."""
    # Imported here: requests is 80 ms of every process's start (the judging app's ready()
    # imports this module), and only a worker delivering a webhook needs it.
    import requests

    timeout = float(_config()["TIMEOUT"])
    try:
        response = requests.post(
            url, data=body, headers=headers, timeout=timeout, allow_redirects=False, stream=True
        )
    except requests.Timeout:
        return None, TIMED_OUT.format(seconds=timeout), None
    except requests.RequestException as error:
        return None, UNREACHABLE.format(error=error)[:ERROR_MAX], None
    with response:  # the answer's body is never read
        code = response.status_code
        answer = HTTP_ERROR.format(code=code, reason=response.reason or "").strip()
        if 200 <= code <= 299:
            return code, "", None
        if is_retried(code):
            return code, answer, retry_after_seconds(response.headers.get("Retry-After"))
        if 300 <= code <= 399:
            return code, REDIRECTED.format(answer=answer), None
        return code, REFUSED.format(answer=answer), None


def delivery_attempt(*, delivery_id: int, attempt: int) -> Attempt:
    """Make attempt ``attempt`` (1 for the first) of the delivery, unless it is delivered or
    failed already, or another message made this attempt (a redelivered task, a worker's
    resume): then nothing is sent. Records the outcome; says whether to retry, and when."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None:
        return Attempt(WebhookDelivery.Status.FAILED)
    ongoing = (WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING)
    if delivery.status not in ongoing or attempt != delivery.attempts + 1:
        return Attempt(delivery.status)
    config = _config()
    secret = str(config["SECRET"])
    if not secret:
        delivery_fail(delivery_id=delivery.pk, error=UNSIGNED)
        return Attempt(WebhookDelivery.Status.FAILED)
    body = delivery.body or delivery_body(delivery)
    claimed = WebhookDelivery.objects.filter(
        pk=delivery.pk, attempts=attempt - 1, status__in=ongoing
    ).update(attempts=attempt, body=body, last_attempt_at=timezone.now())
    if not claimed:  # another message took this attempt a moment ago
        return Attempt(delivery.status)
    raw = body.encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SIGNATURE_HEADER: signature(secret, timestamp, raw),
        TIMESTAMP_HEADER: str(timestamp),
        DELIVERY_HEADER: str(delivery.delivery_id),
        EVENT_HEADER: delivery.event,
    }
    code, error, retry_after = _post(delivery.url, raw, headers)
    now = timezone.now()
    fields: dict[str, Any] = {"last_status_code": code, "last_error": error}
    retry_in = None
    if not error:
        fields.update(status=WebhookDelivery.Status.DELIVERED, delivered_at=now)
        fields["next_attempt_at"] = None
    elif (code is None or is_retried(code)) and attempt < int(config["MAX_ATTEMPTS"]):
        retry_in = backoff_seconds(
            attempt,
            base=float(config["BACKOFF_BASE"]),
            retry_after=retry_after,
            retry_after_max=float(config["RETRY_AFTER_MAX"]),
        )
        fields["status"] = WebhookDelivery.Status.RETRYING
        fields["next_attempt_at"] = now + timedelta(seconds=retry_in)
    else:
        if code is None or is_retried(code):
            fields["last_error"] = GAVE_UP.format(attempts=attempt, error=error)[:ERROR_MAX]
        fields.update(status=WebhookDelivery.Status.FAILED, next_attempt_at=None)
    WebhookDelivery.objects.filter(pk=delivery.pk, attempts=attempt).update(**fields)
    if fields["status"] == WebhookDelivery.Status.FAILED:
        log.warning("webhook of run %s failed: %s", delivery.run_id, fields["last_error"])
    return Attempt(fields["status"], retry_in)


def delivery_fail(*, delivery_id: int, error: str) -> int:
    """Fail the delivery if it is still to be made (what the task hit that nothing caught)."""
    return WebhookDelivery.objects.filter(
        pk=delivery_id,
        status__in=[WebhookDelivery.Status.PENDING, WebhookDelivery.Status.RETRYING],
    ).update(
        status=WebhookDelivery.Status.FAILED, last_error=error[:ERROR_MAX], next_attempt_at=None
    )


# -- what the run page and the API show ---------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WebhookState:
    """A run's webhook as leads see it: ``status`` is ``waiting`` until the run ends (again,
    after a resume), then the latest delivery's; ``delivery`` is that latest delivery."""

    url: str
    host: str
    status: str
    delivery: WebhookDelivery | None
    earlier: int  # deliveries of earlier generations
    max_attempts: int

    def as_dict(self) -> dict[str, Any]:
        delivery = self.delivery
        return {
            "url": self.url,
            "status": self.status,
            "event": delivery.event if delivery else None,
            "delivery_id": str(delivery.delivery_id) if delivery else None,
            "attempts": delivery.attempts if delivery else 0,
            "max_attempts": self.max_attempts,
            "last_status_code": delivery.last_status_code if delivery else None,
            "last_error": delivery.last_error if delivery else "",
            "delivered_at": _iso(delivery.delivered_at) if delivery else None,
            "next_attempt_at": _iso(delivery.next_attempt_at) if delivery else None,
        }


WAITING = "waiting"


def webhook_state(run: JudgingRun) -> WebhookState | None:
    """The run's webhook and its latest delivery (one query: a run has a delivery per time it
    ended, a handful at most); None without a webhook."""
    if not run.webhook_url:
        return None
    deliveries = list(WebhookDelivery.objects.filter(run=run).order_by("-generation"))
    latest = deliveries[0] if deliveries else None
    current = latest is not None and latest.generation == run.generation
    status = latest.status if latest is not None and (current or not run.is_active) else WAITING
    return WebhookState(
        url=run.webhook_url,
        host=webhook_host(run.webhook_url),
        status=status,
        delivery=latest,
        earlier=len(deliveries) - 1 if deliveries else 0,
        max_attempts=int(_config()["MAX_ATTEMPTS"]),
    )
