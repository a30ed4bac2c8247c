"""A run on today's reasoning models: no temperature they refuse, the effort it was given,
and what a server refused, said on the run page."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from judging.models import JudgingRun
from judging.runs.selectors import run_progress
from judging.runs.services import ReasoningRefused, run_create
from rubrics.review.services import RubricActionError, rubric_draft_request
from sejury_web.llm.models import LLMCall
from tests.api.helpers import TokenClient, token_for
from tests.judging.factories import bug_with_patches
from tests.judging.helpers import Judge, scored
from tests.sejury_web.llm.fake_servers import OpenAIServer, error, schema_reply
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db

TEMPERATURE_REFUSED = (
    "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default "
    "(1) value is supported."
)


def test_a_run_on_gpt5_mini_sends_no_temperature_and_names_its_effort(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    judge_now: Judge,
    lead_client: Client,
) -> None:
    """The fake refuses temperature on gpt-5-mini as api.openai.com does: none is sent."""
    bug = bug_with_patches(3)
    point_at(settings, tmp_path, MODEL="gpt-5-mini", OPENAI_API_KEY="sk-test")
    openai_server.default = schema_reply

    run = judge_now(dataset=bug.dataset, strategies="s1b,s3", context="reference", reasoning="Low")

    progress = run_progress(run)
    assert (progress.done, progress.failed) == (3, 0)
    assert run.reasoning == "low"
    assert openai_server.requests  # every call went to the server, none was refused
    for sent in openai_server.requests:
        assert "temperature" not in sent.body
        assert sent.body["reasoning_effort"] == "low"
    calls = LLMCall.objects.all()
    assert {c.settings["reasoning"] for c in calls} == {"low"}
    page = lead_client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
    assert "<dt>Reasoning</dt><dd><code>low</code>" in page
    assert "no temperature (the model takes only its default)" in page


def test_a_parameter_a_server_refuses_is_dropped_and_the_run_page_says_so(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    judge_now: Judge,
    lead_client: Client,
) -> None:
    """A model the table does not know (behind a proxy) refuses temperature: the run loses
    nothing, and its page says what was not sent."""
    bug = bug_with_patches(2)
    point_at(settings, tmp_path, MODEL="acme-reasoner-2")
    openai_server.script(error(400, TEMPERATURE_REFUSED), scored(70), scored(20))

    run = judge_now(dataset=bug.dataset, strategies="s1b", context="reference")

    progress = run_progress(run)
    assert (progress.done, progress.failed) == (2, 0)
    assert ["temperature" in r.body for r in openai_server.requests] == [True, False, False]
    page = lead_client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
    assert "refused <code>temperature</code>: not sent since" in page


@pytest.mark.parametrize(
    ("model", "reasoning", "refusal"),
    [
        ("gpt-4o-mini", "low", "gpt-4o-mini takes no reasoning setting"),
        ("gpt-5-mini", "xhigh", "gpt-5-mini takes a reasoning effort of minimal, low"),
    ],
)
def test_a_setting_the_model_does_not_take_is_refused_at_every_door(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    lead: User,
    lead_client: Client,
    model: str,
    reasoning: str,
    refusal: str,
) -> None:
    bug = bug_with_patches(1)
    point_at(settings, tmp_path, MODEL=model)
    settings_ = {"strategies": "s1b", "context": "reference", "reasoning": reasoning}

    with pytest.raises(ReasoningRefused, match=refusal):
        run_create(dataset=bug.dataset, actor=lead, **settings_)

    form = {
        "dataset": bug.dataset.slug,
        "strategies": ["s1b"],
        "context": "reference",
        "provider": "openai",
        "model": model,
        "reasoning": reasoning,
        "threshold": 50,
        "scale_lo": 0,
        "scale_hi": 100,
    }
    page = lead_client.post(reverse("judging:run_new"), form)
    assert page.status_code == 400
    assert refusal in page.context["form"].errors["reasoning"][0]

    api = TokenClient(token_for(lead))
    body = {"dataset": bug.dataset.slug, "team": "s1b", "context": "reference",
            "model": model, "reasoning": reasoning}  # fmt: skip
    for path in ("/api/v1/runs", "/api/v1/runs/preflight"):
        answer = api.post(path, body)
        assert answer.status_code == 422
        assert refusal in answer.json()["detail"]

    with pytest.raises(CommandError, match=refusal):
        call_command(
            "judge", dataset=bug.dataset.slug, team="s1b", context="reference",
            model=model, reasoning=reasoning,
        )  # fmt: skip
    assert not JudgingRun.objects.exists()
    assert not openai_server.requests


def test_the_offline_heuristic_takes_no_reasoning(lead: User) -> None:
    bug = bug_with_patches(1)
    with pytest.raises(ReasoningRefused, match="offline heuristic does not reason"):
        run_create(
            dataset=bug.dataset,
            strategies="s1b",
            context="reference",
            provider="offline",
            reasoning="low",
            actor=lead,
        )
    with pytest.raises(RubricActionError, match="offline heuristic does not reason"):
        rubric_draft_request(bugs=[bug], variant="free_form", actor=lead, reasoning="high")


def test_drafts_carry_the_reasoning_they_were_asked_with(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    bug = bug_with_patches(1)
    point_at(settings, tmp_path, MODEL="o4-mini")
    with pytest.raises(RubricActionError, match="o4-mini takes a reasoning effort of low"):
        rubric_draft_request(bugs=[bug], variant="free_form", actor=None, reasoning="minimal")

    openai_server.default = schema_reply
    with django_capture_on_commit_callbacks(execute=True):
        batch = rubric_draft_request(bugs=[bug], variant="free_form", actor=None, reasoning="high")

    assert batch.reasoning == "high"
    [sent] = openai_server.requests
    assert sent.body["reasoning_effort"] == "high"
    assert "temperature" not in sent.body
