"""A run judged by a model on this machine says so: local, $0, and its measured speed."""

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from judging.runs.selectors import run_progress
from tests.judging.factories import bug_with_patches
from tests.judging.helpers import Judge, scored
from tests.sejury_web.llm.fake_servers import OpenAIServer
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db

LOCAL_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def test_the_run_page_shows_a_local_model_free_and_its_speed(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    judge_now: Judge,
    lead_client: Client,
) -> None:
    bug = bug_with_patches(2)
    point_at(settings, tmp_path, MODEL=LOCAL_MODEL, LOCAL_FREE=True)
    openai_server.script(
        scored(80, input_tokens=700, output_tokens=70),
        scored(30, input_tokens=800, output_tokens=50),
    )

    run = judge_now(dataset=bug.dataset, strategies="s1b", context="reference")

    progress = run_progress(run)
    assert (progress.provider_calls, progress.output_tokens) == (2, 120)
    assert progress.cost_usd == 0  # a price, not "unknown"
    page = lead_client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
    assert f"openai / {LOCAL_MODEL}" in page
    assert '<span class="tag">local</span>' in page
    assert "local model, on this machine (127.0.0.1:" in page
    assert "$0 (runs on this machine)" in page
    assert "output tokens/s (mean of 2 calls)" in page
    assert "unknown price" not in page


def test_the_run_page_of_a_remote_unpriced_model_says_unknown_price(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    judge_now: Judge,
    lead_client: Client,
) -> None:
    bug = bug_with_patches(1)
    point_at(settings, tmp_path, MODEL="some-hosted-model")
    openai_server.script(scored(80))

    run = judge_now(dataset=bug.dataset, strategies="s1b", context="reference")

    page = lead_client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
    assert "unknown price" in page
    assert '<span class="tag">local</span>' not in page
