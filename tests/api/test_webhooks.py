"""A run's webhook through the API: given with ``POST /api/v1/runs``, validated, called when
the run ends, and shown by ``GET /api/v1/runs/{id}``."""

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings

from judging.models import JudgingRun
from judging.runs.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, signature_verify
from rubrics.models import Dataset
from tests.api.helpers import NDJSON, TokenClient, bundle_bytes, token_for
from tests.judging.helpers import Receiver, webhook_receiver

pytestmark = pytest.mark.django_db

SECRET = "api-webhook-secret"
RUN = {"dataset": "api-demo", "team": "s1b,s3", "context": "none"}


@pytest.fixture
def lead_api(lead: User) -> TokenClient:
    return TokenClient(token_for(lead))


@pytest.fixture
def demo(lead_api: TokenClient) -> Dataset:
    response = lead_api.post("/api/v1/datasets/API demo/bundle", bundle_bytes(1, 2), NDJSON)
    assert response.status_code == 201, response.content
    return Dataset.objects.get(name="API demo")


@pytest.fixture
def signed(settings: Settings) -> None:
    settings.SEJURY_WEBHOOK = {**settings.SEJURY_WEBHOOK, "SECRET": SECRET, "BASE_URL": ""}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as state:
        yield state


@pytest.mark.parametrize(
    ("webhook", "message"),
    [
        ("ftp://ci.example/hook", "must be an http or https URL, not 'ftp'"),
        ("file:///etc/passwd", "not 'file'"),
        ("gopher://ci.example/", "not 'gopher'"),
        ("ci.example/hook", "must be an http or https URL"),
        ("https://bot:pw@ci.example/hook", "no user name or password"),
    ],
)
def test_a_webhook_that_is_not_http_is_refused(
    demo: Dataset, lead_api: TokenClient, signed: None, webhook: str, message: str
) -> None:
    response = lead_api.post("/api/v1/runs", RUN | {"webhook": webhook})
    assert response.status_code == 422
    assert message in response.json()["detail"]
    assert not JudgingRun.objects.exists()


def test_a_webhook_needs_the_servers_secret(
    demo: Dataset, lead_api: TokenClient, settings: Settings
) -> None:
    settings.SEJURY_WEBHOOK = {**settings.SEJURY_WEBHOOK, "SECRET": ""}
    response = lead_api.post("/api/v1/runs", RUN | {"webhook": "https://ci.example/hook"})
    assert response.status_code == 422
    assert "SEJURY_WEBHOOK_SECRET" in response.json()["detail"]
    assert lead_api.post("/api/v1/runs", RUN).status_code == 201  # without one, fine


def test_a_run_without_a_webhook_shows_none(demo: Dataset, lead_api: TokenClient) -> None:
    created = lead_api.post("/api/v1/runs", RUN).json()
    assert created["webhook"] is None


def test_the_webhook_is_called_when_the_run_finishes_and_shown(
    demo: Dataset,
    lead_api: TokenClient,
    signed: None,
    receiver: Receiver,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # judged to the end at once
        response = lead_api.post("/api/v1/runs", RUN | {"webhook": f"  {receiver.url}"})
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["webhook"]["url"] == receiver.url
    run = lead_api.get(f"/api/v1/runs/{created['id']}").json()
    assert run["status"] == "finished"
    webhook = run["webhook"]
    assert webhook["status"] == "delivered"
    assert (webhook["attempts"], webhook["max_attempts"]) == (1, 6)
    assert webhook["last_status_code"] == 200
    assert webhook["event"] == "run.finished"
    assert webhook["delivered_at"]
    assert len(receiver.calls) == 1
    call = receiver.calls[0]
    assert signature_verify(
        secret=SECRET,
        body=call.body,
        timestamp=call.headers[TIMESTAMP_HEADER],
        signature_header=call.headers[SIGNATURE_HEADER],
    )
    body = json.loads(call.body)
    assert body["delivery"] == webhook["delivery_id"]
    # No SEJURY_BASE_URL: the links use the origin the run was created through, and they
    # are the API's own.
    assert body["verdicts_url"] == run["verdicts"]
    assert body["run"]["url"] == run["url"]
    assert body["run"]["counts"] == run["counts"]
    verdicts = lead_api.get(body["verdicts_url"].removeprefix("http://testserver")).json()
    assert len(verdicts["results"]) == 2


def test_the_same_idempotency_key_with_a_webhook_creates_one_run(
    demo: Dataset, lead_api: TokenClient, signed: None
) -> None:
    key = {"Idempotency-Key": "hooked-1"}
    body = RUN | {"webhook": "https://ci.example/hook"}
    first = lead_api.post("/api/v1/runs", body, headers=key).json()
    second = lead_api.post("/api/v1/runs", body, headers=key).json()
    assert first["id"] == second["id"]
    assert second["webhook"]["status"] == "waiting"
    assert JudgingRun.objects.get().webhook_url == "https://ci.example/hook"
