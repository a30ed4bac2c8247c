"""Batch mode at the page's doors: the new-run form's choice, and the run page's rounds."""

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from pytest_django.fixtures import Settings

from judging.models import JudgingRun
from judging.runs import views as run_views
from judging.runs.batch import run_owner
from judging.runs.services import NOT_BATCH
from sejury_web.llm.models import LLMBatch
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory
from tests.sejury_web.llm.fake_batch import OpenAIBatchServer
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db


def _form(**changes: str) -> dict[str, object]:
    dataset = DatasetFactory(name="Batch demo", slug="batch-demo")
    PatchFactory(bug=BugFactory(dataset=dataset))
    data: dict[str, object] = {
        "dataset": "batch-demo",
        "strategies": ["s1b"],
        "context": "reference",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "threshold": "50",
        "scale_lo": "0",
        "scale_hi": "100",
        "patch_keys": "",
        "name": "",
    }
    return data | changes


def test_the_form_starts_a_batch_run_where_the_server_has_a_batch_api(
    lead_client: Client, settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer() as server:
        point_at(settings, tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.base_url)
        response = lead_client.post(reverse("judging:run_new"), _form(batch="on"))
    run = JudgingRun.objects.get()
    assert response.status_code == 302
    assert run.batch


def test_the_form_says_why_a_server_without_a_batch_api_cannot(
    lead_client: Client, settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer(batch_api=False) as server:
        point_at(settings, tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.base_url)
        response = lead_client.post(reverse("judging:run_new"), _form(batch="on"))
    assert response.status_code == 400
    html = response.content.decode()
    assert "no batch API" in html
    assert "ordinary calls" in html
    assert not JudgingRun.objects.exists()


def test_the_run_page_shows_each_round(lead_client: Client) -> None:
    bug = BugFactory()
    PatchFactory(bug=bug)
    run = JudgingRun.objects.create(
        dataset=bug.dataset,
        strategies=["s2"],
        context="reference",
        provider="openai",
        model="gpt-4o-mini",
        status=JudgingRun.Status.RUNNING,
        batch=True,
    )
    now = timezone.now()
    owner = run_owner(run.pk)
    LLMBatch.objects.create(
        owner=owner, round=1, provider="openai", model="m", status="stored",
        request_count=12, completed_count=11, failed_count=1, provider_status="completed",
        submitted_at=now - timedelta(hours=3), ended_at=now - timedelta(hours=1),
    )  # fmt: skip
    LLMBatch.objects.create(
        owner=owner, round=2, provider="openai", model="m", status="submitted",
        request_count=11, provider_status="in_progress", submitted_at=now - timedelta(minutes=50),
    )  # fmt: skip

    html = lead_client.get(run.get_absolute_url()).content.decode()
    # A batch run waiting on its provider is not a worker that fails to move.
    assert "patches finish when the round that answers them comes back" in html
    assert "If nothing moves, is a worker running?" not in html
    card = html[html.index('id="run-batch"') :]
    assert 'data-round="1" data-status="answered"' in card
    assert "answered in 2\xa0hours" in card
    assert 'data-round="2" data-status="in_progress"' in card
    assert "waiting since 50\xa0minutes" in card
    partial = lead_client.get(
        run.get_absolute_url(), headers={"HX-Request": "true", "HX-Target": run_views.BATCH_TARGET}
    ).content.decode()
    assert partial.lstrip().startswith('<section id="run-batch"')
    assert 'data-round="2"' in partial


def test_an_ordinary_run_has_no_rounds_card(lead_client: Client) -> None:
    bug = BugFactory()
    run = JudgingRun.objects.create(
        dataset=bug.dataset, strategies=["s2"], context="reference", provider="offline", model="x"
    )
    html = lead_client.get(run.get_absolute_url()).content.decode()
    assert 'id="run-batch"' not in html
    assert "If nothing moves, is a worker running?" in html


def test_a_lead_goes_on_with_ordinary_calls_from_the_rounds_card(
    lead_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    bug = BugFactory()
    PatchFactory(bug=bug)
    run = JudgingRun.objects.create(
        dataset=bug.dataset, strategies=["s1b"], context="none", provider="offline",
        model="x", status=JudgingRun.Status.RUNNING, batch=True,
    )  # fmt: skip
    run.judgments.create(patch=bug.patches.get())
    leave = reverse("judging:run_batch_leave", args=[run.pk])
    assert f'action="{leave}"' in lead_client.get(run.get_absolute_url()).content.decode()
    with django_capture_on_commit_callbacks():
        response = lead_client.post(leave)
    assert response.status_code == 302
    run.refresh_from_db()
    assert not run.batch
    assert run.generation == 1
    again = lead_client.post(leave, follow=True).content.decode()
    assert NOT_BATCH.format(run=run.pk) in again
