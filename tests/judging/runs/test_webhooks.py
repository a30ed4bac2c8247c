"""A run's webhook (judging/runs/webhooks.py): called once when the run ends, signed, retried
with backoff, its failures on the run page. The receiver is a real local HTTP server."""

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings

from judging.models import JudgingRun, WebhookDelivery
from judging.runs.execution import run_finish_if_done
from judging.runs.services import RunError, run_cancel, run_create
from judging.runs.webhooks import (
    CREDENTIALS,
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    UNSIGNED,
    WebhookError,
    backoff_schedule,
    backoff_seconds,
    deliveries_resume_unfinished,
    delivery_attempt,
    delivery_open,
    retry_after_seconds,
    signature,
    signature_verify,
    webhook_url_check,
)
from judging.tasks import delivery_attempt_task
from rubrics.models import Bug
from sejury_web.celery import app as celery_app
from tests.helpers import client_for
from tests.judging.factories import bug_with_patches
from tests.judging.helpers import Judge, Receiver, webhook_receiver

pytestmark = pytest.mark.django_db

SECRET = "whsec-test-0123456789"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as state:
        yield state


@pytest.fixture
def signed(settings: Settings) -> dict[str, Any]:
    settings.SEJURY_WEBHOOK = {
        **settings.SEJURY_WEBHOOK,
        "SECRET": SECRET,
        "BASE_URL": "https://sejury.example",
        "TIMEOUT": 5.0,
    }
    return settings.SEJURY_WEBHOOK


@pytest.fixture
def eager_retries(eager_tasks: None) -> Iterator[None]:
    """Eager tasks whose ``self.retry`` runs the next attempt at once (countdown ignored):
    Celery does so only when eager tasks do not propagate, else the ``Retry`` is raised."""
    celery_app.conf.task_eager_propagates = False
    yield
    celery_app.conf.task_eager_propagates = True


@pytest.fixture
def bug() -> Bug:
    return bug_with_patches(2)


def judged(judge_now: Judge, bug: Bug, url: str) -> JudgingRun:
    return judge_now(dataset=bug.dataset, strategies="s1b,s3", context="reference", webhook_url=url)


# -- pure functions -----------------------------------------------------------------------


def test_the_backoff_doubles_and_honours_retry_after() -> None:
    schedule = backoff_schedule(attempts=6, base=60.0)
    assert schedule == [60.0, 120.0, 240.0, 480.0, 960.0]
    assert 29 * 60 < sum(schedule) < 32 * 60  # six attempts over about half an hour
    assert backoff_seconds(2, base=60.0, retry_after=600.0, retry_after_max=3600.0) == 600.0
    assert backoff_seconds(2, base=60.0, retry_after=5.0, retry_after_max=3600.0) == 120.0
    assert backoff_seconds(1, base=60.0, retry_after=10**7, retry_after_max=3600.0) == 3600.0


def test_retry_after_in_seconds_or_as_a_date() -> None:
    now = time.time()
    assert retry_after_seconds("120") == 120.0
    when = format_datetime(datetime.fromtimestamp(now, UTC) + timedelta(seconds=90), usegmt=True)
    assert retry_after_seconds(when, now=now) == pytest.approx(90, abs=1)
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds(None) is None


def test_the_signature_covers_the_timestamp_and_the_body() -> None:
    body = b'{"event":"run.finished"}'
    now = int(time.time())
    header = signature(SECRET, now, body)
    assert header.startswith("sha256=")
    check = {"secret": SECRET, "timestamp": str(now), "signature_header": header}
    assert signature_verify(body=body, **check)
    assert not signature_verify(body=body + b" ", **check)
    assert not signature_verify(body=body, **(check | {"secret": "other"}))
    assert not signature_verify(body=body, **(check | {"timestamp": str(now + 1)}))
    assert not signature_verify(body=body, now=now + 3600, **check)  # a replay, an hour later


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://ci.example/hook", "must be an http or https URL, not 'ftp'"),
        ("file:///etc/passwd", "not 'file'"),
        ("javascript:alert(1)", "not 'javascript'"),
        ("ci.example/hook", "must be an http or https URL"),
        ("http:///hook", "names no host"),
        ("https://ci.example:99999/hook", "invalid port"),
        ("https://bot:hunter2@ci.example/hook", CREDENTIALS),
    ],
)
def test_a_webhook_must_be_http_or_https(signed: dict[str, Any], url: str, message: str) -> None:
    with pytest.raises(WebhookError) as raised:
        webhook_url_check(url)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    "url",
    ["https://ci.example/hooks/sejury?x=1", "http://10.0.0.7:8080/hook", "http://localhost/h"],
)
def test_internal_addresses_are_allowed(signed: dict[str, Any], url: str) -> None:
    assert webhook_url_check(f"  {url} ") == url


def test_no_secret_no_webhook(bug: Bug, settings: Settings) -> None:
    settings.SEJURY_WEBHOOK = {**settings.SEJURY_WEBHOOK, "SECRET": ""}
    with pytest.raises(RunError, match="SEJURY_WEBHOOK_SECRET"):
        run_create(
            dataset=bug.dataset,
            strategies="s1b",
            context="reference",
            webhook_url="https://ci.example/hook",
            actor=None,
        )
    assert not JudgingRun.objects.exists()


# -- delivery -----------------------------------------------------------------------------


def test_a_finished_run_calls_its_webhook_once_signed(
    judge_now: Judge, bug: Bug, receiver: Receiver, signed: dict[str, Any]
) -> None:
    run = judged(judge_now, bug, receiver.url)
    assert run.status == JudgingRun.Status.FINISHED
    assert len(receiver.calls) == 1
    call = receiver.calls[0]
    assert signature_verify(
        secret=SECRET,
        body=call.body,
        timestamp=call.headers[TIMESTAMP_HEADER],
        signature_header=call.headers[SIGNATURE_HEADER],
    )
    assert call.headers["Content-Type"] == "application/json"
    assert call.headers[EVENT_HEADER] == "run.finished"
    body = json.loads(call.body)
    delivery = WebhookDelivery.objects.get(run=run)
    assert call.headers[DELIVERY_HEADER] == body["delivery"] == str(delivery.delivery_id)
    assert body["event"] == "run.finished"
    assert body["run"]["id"] == run.pk
    assert body["run"]["status"] == "finished"
    assert body["run"]["dataset"] == bug.dataset.name
    assert body["run"]["counts"] | {"total": 2, "pending": 0} == body["run"]["counts"]
    assert body["run"]["counts"]["done"] + body["run"]["counts"]["failed"] == 2
    assert body["verdicts_url"] == f"https://sejury.example/api/v1/runs/{run.pk}/verdicts"
    assert body["run"]["page"] == "https://sejury.example" + run.get_absolute_url()
    assert delivery.status == WebhookDelivery.Status.DELIVERED
    assert (delivery.attempts, delivery.last_status_code) == (1, 200)
    assert delivery.delivered_at is not None

    # The run ending again, a redelivered task: nothing more is sent.
    assert run_finish_if_done(run.pk)
    assert delivery_open(run_id=run.pk, event=WebhookDelivery.Event.FINISHED) is None
    delivery_attempt_task.delay(delivery.pk, 1)
    delivery_attempt_task.delay(delivery.pk, 2)
    assert len(receiver.calls) == 1
    assert WebhookDelivery.objects.count() == 1


def test_a_run_without_a_webhook_calls_nothing(judge_now: Judge, bug: Bug) -> None:
    judge_now(dataset=bug.dataset, strategies="s1b", context="reference")
    assert not WebhookDelivery.objects.exists()


def test_two_workers_ending_the_run_at_once_open_one_delivery(
    bug: Bug, signed: dict[str, Any], django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    with django_capture_on_commit_callbacks() as queued:
        run = run_create(
            dataset=bug.dataset,
            strategies="s1b",
            context="reference",
            webhook_url="https://ci.example/hook",
            actor=None,
        )
    run.judgments.update(status="done")
    with django_capture_on_commit_callbacks() as queued:
        assert run_finish_if_done(run.pk)
        assert run_finish_if_done(run.pk)  # the second worker sees it finished already
    # Only the worker whose UPDATE finished the run opens one; the unique constraint backs it.
    assert WebhookDelivery.objects.filter(run=run).count() == 1
    assert len(queued) == 1
    assert delivery_open(run_id=run.pk, event=WebhookDelivery.Event.FINISHED) is None


def test_a_500_is_retried_then_delivered(
    judge_now: Judge, bug: Bug, receiver: Receiver, signed: dict[str, Any], eager_retries: None
) -> None:
    receiver.script = [(500, {}), (503, {"Retry-After": "1"})]
    run = judged(judge_now, bug, receiver.url)  # eager: Celery's retry runs at once
    delivery = WebhookDelivery.objects.get(run=run)
    assert delivery.status == WebhookDelivery.Status.DELIVERED
    assert delivery.attempts == 3
    assert len(receiver.calls) == 3
    # The same delivery and the same bytes each time; a fresh timestamp and signature.
    assert len({c.headers[DELIVERY_HEADER] for c in receiver.calls}) == 1
    assert len({c.body for c in receiver.calls}) == 1
    for call in receiver.calls:
        assert signature_verify(
            secret=SECRET,
            body=call.body,
            timestamp=call.headers[TIMESTAMP_HEADER],
            signature_header=call.headers[SIGNATURE_HEADER],
        )


def test_a_retry_waits_for_the_backoff_and_the_page_says_so(
    bug: Bug,
    receiver: Receiver,
    signed: dict[str, Any],
    lead: User,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    receiver.script = [(429, {"Retry-After": "300"})]
    with django_capture_on_commit_callbacks():
        run = run_create(
            dataset=bug.dataset,
            strategies="s1b",
            context="reference",
            webhook_url=receiver.url,
            actor=lead,
        )
    run.judgments.update(status="done")
    with django_capture_on_commit_callbacks():  # the task not queued: one attempt by hand
        run_finish_if_done(run.pk)
    delivery = WebhookDelivery.objects.get(run=run)
    outcome = delivery_attempt(delivery_id=delivery.pk, attempt=1)
    assert (outcome.status, outcome.retry_in) == ("retrying", 300.0)  # Retry-After, not 60 s
    delivery.refresh_from_db()
    assert delivery.last_status_code == 429
    assert delivery.next_attempt_at is not None
    # A second message of attempt 1 (a redelivery) sends nothing.
    assert delivery_attempt(delivery_id=delivery.pk, attempt=1).status == "retrying"
    assert len(receiver.calls) == 1
    page = client_for(lead).get(run.get_absolute_url()).content.decode()
    assert "127.0.0.1:" in page
    assert "sejury?team=a" not in page  # the host only
    assert "attempt 1 of 6 failed" in page
    assert "HTTP 429 Too Many Requests" in page
    # A worker starting queues the next attempt, with the wait that is left.
    sent: list[tuple[int, int, float]] = []

    def enqueue(task: Any, delivery_id: int, attempt: int, *, countdown: float) -> None:
        sent.append((delivery_id, attempt, countdown))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("judging.runs.webhooks.enqueue_on_commit", enqueue)
        assert deliveries_resume_unfinished() == [delivery.pk]
    assert sent[0][:2] == (delivery.pk, 2)
    assert 250 < sent[0][2] <= 300


def test_a_404_is_permanent_and_shown_on_the_run_page(
    judge_now: Judge, bug: Bug, receiver: Receiver, signed: dict[str, Any], lead: User
) -> None:
    receiver.script = [(404, {})]
    run = judged(judge_now, bug, receiver.url)
    delivery = WebhookDelivery.objects.get(run=run)
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert (delivery.attempts, delivery.last_status_code) == (1, 404)
    assert len(receiver.calls) == 1
    page = client_for(lead).get(run.get_absolute_url()).content.decode()
    assert 'data-status="failed"' in page
    assert "HTTP 404 Not Found: the receiver refused the call, which is not retried" in page


def test_the_webhook_card_alone_for_htmx(
    judge_now: Judge, bug: Bug, receiver: Receiver, signed: dict[str, Any], lead: User
) -> None:
    run = judged(judge_now, bug, receiver.url)
    headers = {"HX-Request": "true", "HX-Target": "run-webhook"}
    response = client_for(lead).get(run.get_absolute_url(), headers=headers)
    text = response.content.decode()
    assert text.lstrip().startswith('<section id="run-webhook"') or "run-webhook" in text
    assert "<html" not in text
    assert 'data-status="delivered"' in text
    assert "hx-trigger" not in text  # a delivered call stops reloading


def test_gives_up_after_the_last_attempt(
    judge_now: Judge,
    bug: Bug,
    receiver: Receiver,
    signed: dict[str, Any],
    settings: Settings,
    eager_retries: None,
) -> None:
    settings.SEJURY_WEBHOOK = {**signed, "MAX_ATTEMPTS": 3}
    receiver.script = [(502, {})] * 5
    run = judged(judge_now, bug, receiver.url)
    delivery = WebhookDelivery.objects.get(run=run)
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert len(receiver.calls) == delivery.attempts == 3
    assert delivery.last_error == "gave up after 3 attempts; the last: HTTP 502 Bad Gateway"


def test_an_unreachable_receiver_is_retried(
    judge_now: Judge, bug: Bug, signed: dict[str, Any], settings: Settings, eager_retries: None
) -> None:
    settings.SEJURY_WEBHOOK = {**signed, "MAX_ATTEMPTS": 2}
    run = judged(judge_now, bug, "http://127.0.0.1:9/nothing-listens")
    delivery = WebhookDelivery.objects.get(run=run)
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert delivery.attempts == 2
    assert delivery.last_status_code is None
    assert delivery.last_error.startswith("gave up after 2 attempts; the last: could not connect")


def test_a_secret_gone_from_the_worker_fails_the_delivery(
    bug: Bug,
    receiver: Receiver,
    signed: dict[str, Any],
    settings: Settings,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    with django_capture_on_commit_callbacks():  # created where the secret is set
        run = run_create(
            dataset=bug.dataset,
            strategies="s1b",
            context="reference",
            webhook_url=receiver.url,
            actor=None,
        )
    run.judgments.update(status="done")
    settings.SEJURY_WEBHOOK = {**signed, "SECRET": ""}  # a worker whose environment lacks it
    with django_capture_on_commit_callbacks(execute=True):
        run_finish_if_done(run.pk)
    delivery = WebhookDelivery.objects.get(run=run)
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert delivery.last_error == UNSIGNED
    assert not receiver.calls


def test_a_cancelled_run_calls_with_run_cancelled(
    bug: Bug,
    receiver: Receiver,
    signed: dict[str, Any],
    lead: User,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    with django_capture_on_commit_callbacks():  # created, not started
        run = run_create(
            dataset=bug.dataset,
            strategies="s1b",
            context="reference",
            webhook_url=receiver.url,
            actor=lead,
        )
    with django_capture_on_commit_callbacks(execute=True):
        run_cancel(run=run, actor=lead)
    assert len(receiver.calls) == 1
    body = json.loads(receiver.calls[0].body)
    assert body["event"] == "run.cancelled"
    assert body["run"]["status"] == "cancelled"
    assert body["run"]["counts"]["pending"] == 2
    assert receiver.calls[0].headers[EVENT_HEADER] == "run.cancelled"
