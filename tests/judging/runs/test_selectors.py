"""A run's progress and what it spent: provider calls only, the cache's answers are free;
the share of input tokens the provider's prompt cache served, and what it saved."""

from decimal import Decimal
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from judging.models import PatchJudgment
from judging.runs.selectors import run_progress
from judging.runs.services import run_create
from tests.judging.factories import bug_with_patches
from tests.judging.helpers import ANSWERS, Judge, reply, scored
from tests.rubrics.factories import PatchFactory
from tests.sejury_web.llm.fake_servers import OpenAIServer
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db


def test_progress_counts_the_providers_calls_and_not_the_caches(
    openai_server: OpenAIServer, judge_now: Judge
) -> None:
    bug = bug_with_patches(1)
    PatchFactory(bug=bug, key=f"{bug.key}-1", diff=bug.patches.get().diff)  # a duplicate
    openai_server.script(
        reply(ANSWERS["judge.s4.analyze"], input_tokens=1000, output_tokens=100),
        scored(80, input_tokens=2000, output_tokens=200),
        scored(40, input_tokens=3000, output_tokens=300),
    )

    run = judge_now(dataset=bug.dataset, strategies="s1b,s4", context="reference")
    again = judge_now(dataset=bug.dataset, strategies="s1b,s4", context="reference")

    # Step 1 once, s1b and s4 once each: the duplicate patch's requests are the same.
    assert openai_server.request_count == 3
    progress = run_progress(run)
    assert (progress.total, progress.done, progress.failed, progress.pending) == (2, 2, 0, 0)
    assert progress.percent == 100
    assert progress.wall_s is not None
    assert progress.wall_s >= 0
    assert (progress.provider_calls, progress.input_tokens, progress.output_tokens) == (
        3,
        6000,
        600,
    )
    # gpt-4o-mini: 6000 input tokens × $0.15/M + 600 output tokens × $0.60/M = $0.0009 + $0.00036
    assert progress.cost_usd == Decimal("0.00126")
    repeated = run_progress(again)
    assert (repeated.done, repeated.provider_calls, repeated.input_tokens) == (2, 0, 0)
    assert (repeated.output_tokens, repeated.cost_usd) == (0, Decimal(0))


def test_an_unknown_price_makes_the_cost_unknown_not_zero(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path, judge_now: Judge
) -> None:
    bug = bug_with_patches(1)
    point_at(settings, tmp_path, MODEL="qwen2.5-coder:32b")
    openai_server.script(scored(80, input_tokens=700, output_tokens=70))

    run = judge_now(dataset=bug.dataset, strategies="s1b", context="reference")

    progress = run_progress(run)
    assert (progress.provider_calls, progress.input_tokens, progress.output_tokens) == (1, 700, 70)
    assert progress.cost_usd is None


def test_a_run_not_started_has_spent_nothing() -> None:
    bug = bug_with_patches(3)
    run = run_create(actor=None, dataset=bug.dataset, strategies="s1b", context="reference")
    PatchJudgment.objects.filter(pk=run.judgments.first().pk).update(  # type: ignore[union-attr]
        status=PatchJudgment.Status.FAILED
    )

    progress = run_progress(run)

    assert (progress.total, progress.finished, progress.pending, progress.percent) == (3, 1, 2, 33)
    assert (progress.provider_calls, progress.cost_usd, progress.wall_s) == (0, Decimal(0), None)


def test_the_run_page_shows_the_cached_share_of_input_tokens_and_what_caching_saved(
    openai_server: OpenAIServer, judge_now: Judge, lead_client: Client
) -> None:
    bug = bug_with_patches(2)
    openai_server.script(
        scored(80, input_tokens=2000, output_tokens=100),
        scored(40, input_tokens=2000, output_tokens=100, cached_tokens=1536),
    )

    run = judge_now(dataset=bug.dataset, strategies="s1b", context="reference")

    progress = run_progress(run)
    assert (progress.input_tokens, progress.cached_tokens) == (4000, 1536)
    assert progress.cached_share == 1536 / 4000 == 0.384
    # gpt-4o-mini: 1536 cached tokens at $0.15/M rather than $0.075/M: 1536 × $0.075/M
    assert progress.cache_saved_usd == Decimal("0.0001152")
    # The bill: 2464 fresh × $0.15/M + 1536 cached × $0.075/M + 200 out × $0.60/M
    assert progress.cost_usd == Decimal("0.0003696") + Decimal("0.0001152") + Decimal("0.00012")
    page = lead_client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
    assert "38.4% of input tokens cached, saving $0.0001" in page


def test_an_unknown_price_saves_an_unknown_amount(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path, judge_now: Judge
) -> None:
    bug = bug_with_patches(1)
    point_at(settings, tmp_path, MODEL="qwen2.5-coder:32b")
    openai_server.script(scored(80, input_tokens=2000, output_tokens=70, cached_tokens=1024))

    progress = run_progress(judge_now(dataset=bug.dataset, strategies="s1b", context="reference"))

    assert (progress.cached_share, progress.cache_saved_usd) == (0.512, None)
