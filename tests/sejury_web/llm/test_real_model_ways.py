"""What a real model does that a well-behaved server does not, met by the layer.

A small model on llama.cpp wraps JSON in code fences and prose when it is not constrained, runs
out of output tokens in the middle of an object, takes tens of seconds for a call, counts its
tokens its own way, and costs nothing: each of those, against the fake servers.
"""

import time
from decimal import Decimal
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from sejury_web.llm import LLMParseError, Provider, complete
from sejury_web.llm.config import llm_settings, loopback
from sejury_web.llm.models import LLMCall
from sejury_web.llm.prices import call_cost
from sejury_web.llm.usage import model_profile

from .fake_servers import OpenAIServer, Reply, ok
from .helpers import GOOD_ANSWER, Provided, point_at, score_request

pytestmark = pytest.mark.django_db

LOCAL_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
CUT_OFF = '{"score": 80, "reasoning": "keeps the null check but the loop'


# -- code fences --------------------------------------------------------------------------------


def test_an_answer_in_a_fence_after_a_sentence_is_read(settings: Settings, tmp_path: Path) -> None:
    """What Qwen2.5-Coder-1.5B answers when the schema is only in the prompt."""
    with OpenAIServer(response_formats=()) as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        server.script(ok(f"Here is the JSON object:\n```json\n{GOOD_ANSWER}\n```\nDone."))

        response = complete(score_request())

    assert response.answer == {"score": 80, "reasoning": "keeps the null check"}
    assert LLMCall.objects.get(pk=response.call_id).settings["output_mode"] == "prompt"


def test_two_fenced_objects_are_not_chosen_between(openai_server: OpenAIServer) -> None:
    two = f"```json\n{GOOD_ANSWER}\n```\nor\n```json\n{GOOD_ANSWER.replace('80', '20')}\n```"
    openai_server.script(ok(two), ok(two))

    with pytest.raises(LLMParseError, match="did not match the schema twice"):
        complete(score_request())

    assert openai_server.request_count == 2  # asked once more, then failed: no guess


# -- the output token limit ---------------------------------------------------------------------


def test_an_object_cut_off_at_the_token_limit_fails_at_once_and_clearly(
    provided: Provided,
) -> None:
    provided.server.script(ok(CUT_OFF, output_tokens=256, finish_reason="length"))

    with pytest.raises(LLMParseError, match="cut off at the output token limit") as info:
        complete(score_request(max_output_tokens=256))

    # Asking again under the same limit would be cut off again: one request, no guess.
    assert provided.server.request_count == 1
    row = LLMCall.objects.get(pk=info.value.call_id)
    assert row.status == LLMCall.Status.PARSE_FAILURE
    assert row.answer is None
    assert row.raw_text == CUT_OFF
    assert "256 tokens" in row.error
    assert "Nothing was guessed" in row.error


def test_a_whole_object_that_just_reached_the_limit_is_an_answer(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(ok(GOOD_ANSWER, finish_reason="length"))

    assert complete(score_request()).answer["score"] == 80


# -- slow answers --------------------------------------------------------------------------------


def test_a_slow_first_answer_within_the_timeout_is_waited_for(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    """A CPU model loads and reads the prompt before it answers; the timeout is a setting
    (SEJURY_LLM_TIMEOUT; ``make llm-local`` exports 600 s)."""
    point_at(settings, tmp_path, TIMEOUT=5.0)
    openai_server.script(Reply(text=GOOD_ANSWER, delay=1.2))
    started = time.monotonic()

    response = complete(score_request())

    assert time.monotonic() - started >= 1.2
    assert openai_server.request_count == 1  # waited, not retried
    assert LLMCall.objects.get(pk=response.call_id).latency_s >= 1.2


def test_an_answer_slower_than_the_timeout_is_retried_and_said(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    point_at(settings, tmp_path, TIMEOUT=0.4)
    openai_server.script(Reply(text=GOOD_ANSWER, delay=2.0), ok(GOOD_ANSWER))

    response = complete(score_request())

    row = LLMCall.objects.get(pk=response.call_id)
    assert row.attempts == 2
    assert "within 0.4 s" in row.attempt_log[0]["error"]


# -- token counts -------------------------------------------------------------------------------


def test_the_servers_token_counts_are_logged_as_it_gave_them(provided: Provided) -> None:
    provided.server.script(ok(GOOD_ANSWER, input_tokens=1432, output_tokens=57))

    response = complete(score_request())

    row = LLMCall.objects.get(pk=response.call_id)
    assert (row.input_tokens, row.output_tokens) == (1432, 57)
    assert (response.input_tokens, response.output_tokens) == (1432, 57)


# -- price --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://127.0.0.1:8091/v1", True),
        ("http://127.8.9.10/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://[::1]:8000/v1", True),
        ("127.0.0.1:8091", True),
        ("", False),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),
        ("http://127.0.0.1.example.org/v1", False),
        ("http://[::1", False),
    ],
)
def test_loopback_is_this_machine_only(url: str, local: bool) -> None:
    assert loopback(url) is local


def test_a_model_without_a_price_on_this_machine_costs_nothing(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    point_at(settings, tmp_path, MODEL=LOCAL_MODEL, LOCAL_FREE=True)
    openai_server.script(ok(GOOD_ANSWER, input_tokens=900, output_tokens=90))

    response = complete(score_request())

    assert response.cost_usd == Decimal(0)
    assert LLMCall.objects.get(pk=response.call_id).cost_usd == Decimal(0)


def test_a_loopback_that_is_a_tunnel_to_a_paid_service_is_not_free(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    point_at(settings, tmp_path, MODEL=LOCAL_MODEL, LOCAL_FREE=False)  # SEJURY_LLM_LOCAL_FREE=0
    openai_server.script(ok(GOOD_ANSWER))

    assert complete(score_request()).cost_usd is None


def test_a_priced_model_keeps_its_price_behind_a_local_proxy() -> None:
    priced = call_cost("gpt-4o-mini", input_tokens=1000, output_tokens=0, cached_tokens=0)
    local = call_cost(
        "gpt-4o-mini", input_tokens=1000, output_tokens=0, cached_tokens=0, local=True
    )
    assert priced == local == Decimal("0.00015")
    assert call_cost(LOCAL_MODEL, input_tokens=1, output_tokens=1, cached_tokens=0) is None


def test_the_local_setting_reaches_the_target(settings: Settings, tmp_path: Path) -> None:
    point_at(
        settings,
        tmp_path,
        PROVIDER="openai",
        OPENAI_BASE_URL="http://127.0.0.1:8091/v1",
        LOCAL_FREE=True,
    )
    assert llm_settings().target(score_request()).local is True
    remote = llm_settings(openai_base_url="https://llm.example.org/v1")
    assert remote.target(score_request()).local is False


# -- what the pages say of the model ------------------------------------------------------------


def test_the_profile_says_local_free_and_measured_speed(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    point_at(settings, tmp_path, MODEL=LOCAL_MODEL, LOCAL_FREE=True)
    openai_server.script(
        Reply(text=GOOD_ANSWER, output_tokens=40, delay=0.2),
        Reply(text=GOOD_ANSWER, output_tokens=60, delay=0.2),
    )
    complete(score_request("first"))
    complete(score_request("second"))
    complete(score_request("second"))  # from the cache: not a call, not measured

    profile = model_profile(Provider.OPENAI, LOCAL_MODEL)

    assert profile.local
    assert profile.base_url == openai_server.base_url
    assert profile.where.startswith("local model, on this machine (127.0.0.1:")
    assert profile.cost_note == "$0 (runs on this machine)"
    assert profile.calls == 2
    assert profile.output_tokens == 100
    per_call = profile.seconds_per_call
    assert per_call is not None
    assert per_call >= 0.2
    assert profile.output_tokens_per_s == pytest.approx(100 / profile.seconds)
    assert profile.speed_note.startswith("measured: ")
    assert profile.speed_note.endswith("output tokens/s (mean of 2 calls)")


def test_a_remote_unpriced_model_is_said_to_be_unknown_price() -> None:
    LLMCall.objects.create(
        purpose="judge.s1b",
        provider="openai",
        model="some-model",
        base_url="https://llm.example.org/v1",
        request_hash="x",
        status=LLMCall.Status.OK,
        output_tokens=10,
        latency_s=2.0,
    )
    profile = model_profile("openai", "some-model")
    assert not profile.local
    assert profile.where == "served by llm.example.org"
    assert profile.cost_note == "unknown price"
    assert profile.speed_note == "measured: 2.0 s a call, 5.0 output tokens/s (mean of 1 call)"
    assert model_profile("openai", "never-called").speed_note == "no call measured yet"


def test_a_request_without_an_output_limit_gets_the_configured_one(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    """SEJURY_LLM_MAX_OUTPUT_TOKENS (``make llm-local`` exports 1024): a small model looping
    inside a JSON string stops there, with a clear error, instead of filling its context."""
    point_at(settings, tmp_path, MAX_OUTPUT_TOKENS=321)
    openai_server.script(ok(GOOD_ANSWER), ok(GOOD_ANSWER))

    unlimited = complete(score_request())
    limited = complete(score_request(max_output_tokens=50))

    assert [r.body["max_tokens"] for r in openai_server.requests] == [321, 50]
    assert LLMCall.objects.get(pk=unlimited.call_id).settings["max_output_tokens"] == 321
    assert LLMCall.objects.get(pk=limited.call_id).settings["max_output_tokens"] == 50
