"""``"batch": true`` in ``POST /api/v1/runs``: a batch-mode run, or why the server cannot."""

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from pytest_django.fixtures import Settings

from judging.models import JudgingRun
from rubrics.models import Dataset
from tests.api.helpers import NDJSON, TokenClient, bundle_bytes, token_for
from tests.sejury_web.llm.fake_batch import OpenAIBatchServer
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db
RUN = {
    "dataset": "api-demo",
    "team": "s1b,s3",
    "context": "none",
    "provider": "openai",
    "model": "gpt-4o-mini",
    "batch": True,
}


@pytest.fixture
def lead_api(lead: User) -> TokenClient:
    return TokenClient(token_for(lead))


@pytest.fixture
def demo(lead_api: TokenClient) -> Dataset:
    response = lead_api.post("/api/v1/datasets/API demo/bundle", bundle_bytes(), NDJSON)
    assert response.status_code == 201, response.content
    return Dataset.objects.get(name="API demo")


def test_a_run_asked_for_in_batch_mode_is_one(
    demo: Dataset, lead_api: TokenClient, settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer() as server:
        point_at(settings, tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.base_url)
        response = lead_api.post("/api/v1/runs", RUN)
    assert response.status_code == 201, response.content
    assert response.json()["batch"] is True
    assert JudgingRun.objects.get().batch
    read = lead_api.get(f"/api/v1/runs/{response.json()['id']}")
    assert read.json()["batch"] is True


def test_a_server_without_a_batch_api_is_a_422_that_says_so(
    demo: Dataset, lead_api: TokenClient, settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer(batch_api=False) as server:
        point_at(settings, tmp_path, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.base_url)
        response = lead_api.post("/api/v1/runs", RUN)
    assert response.status_code == 422
    assert "no batch API" in response.json()["detail"]
    assert "ordinary calls" in response.json()["detail"]
    assert not JudgingRun.objects.exists()
    ordinary = lead_api.post("/api/v1/runs", RUN | {"batch": False, "provider": "offline"})
    assert ordinary.status_code == 201
    assert ordinary.json()["batch"] is False
