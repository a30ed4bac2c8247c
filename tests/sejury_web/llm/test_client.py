"""The layer against local servers of both protocols, through the real SDKs."""

import json
import ssl
import time
from decimal import Decimal
from pathlib import Path

import certifi
import pytest
from pytest_django.fixtures import Settings

from sejury_web.llm import CachePolicy, LLMError, LLMParseError, complete
from sejury_web.llm.answers import SCHEMA_MISMATCH
from sejury_web.llm.batch.jobs import batch_client_for
from sejury_web.llm.config import Target
from sejury_web.llm.models import LLMCall
from sejury_web.llm.providers import adapter_for
from sejury_web.llm.providers.base import tls_context, tls_context_certifi
from sejury_web.llm.types import Provider

from .fake_servers import OpenAIServer, error, hang, ok
from .helpers import GOOD_ANSWER, SCORE_SCHEMA, Provided, point_at, score_request

pytestmark = pytest.mark.django_db


def _prompt_text(provided: Provided, index: int) -> str:
    """Everything the SDK sent in request ``index``, as one string to search in."""
    return json.dumps(provided.server.requests[index].body)


def test_success_carries_answer_tokens_latency_and_cost(provided: Provided) -> None:
    provided.server.script(ok(GOOD_ANSWER, input_tokens=1200, output_tokens=300))

    response = complete(score_request())

    assert response.answer == {"score": 80, "reasoning": "keeps the null check"}
    assert response.raw_text == GOOD_ANSWER
    assert (response.provider, response.model) == (provided.name, provided.model)
    assert (response.input_tokens, response.output_tokens) == (1200, 300)
    assert not response.from_cache
    assert response.marker == ""
    # gpt-4o-mini: 1200 × $0.15/M + 300 × $0.60/M = $0.00018 + $0.00018
    # gemini-2.5-pro: 1200 × $1.25/M + 300 × $10/M = $0.0015 + $0.003
    expected = {"openai": Decimal("0.00036"), "gemini": Decimal("0.0045")}[provided.name]
    assert response.cost_usd == expected
    row = LLMCall.objects.get(pk=response.call_id)
    assert row.status == LLMCall.Status.OK
    assert row.answer == response.answer
    assert row.purpose == "judge.s1b"
    assert row.messages[1] == {"role": "user", "content": "Is this patch correct?"}
    assert row.schema == SCORE_SCHEMA
    assert row.latency_s > 0
    assert row.settings["output_mode"] == "json_schema"
    sent = provided.server.requests[0].body
    if provided.name == "openai":
        assert sent["temperature"] == 0
        assert sent["response_format"]["json_schema"]["schema"] == SCORE_SCHEMA
        assert sent["response_format"]["json_schema"]["strict"] is True
    else:
        assert sent["generationConfig"]["temperature"] == 0
        assert sent["generationConfig"]["responseJsonSchema"] == SCORE_SCHEMA
        assert "You judge patches." in json.dumps(sent["systemInstruction"])


def test_cached_tokens_are_billed_at_the_cached_rate(provided: Provided) -> None:
    provided.server.script(ok(GOOD_ANSWER, input_tokens=1000, output_tokens=0, cached_tokens=800))

    response = complete(score_request())

    assert response.cached_tokens == 800
    # gpt-4o-mini: 200 × 0.15 + 800 × 0.075 = 90 µ$; gemini-2.5-pro: 200 × 1.25 + 800 × 0.125
    expected = {"openai": Decimal("0.00009"), "gemini": Decimal("0.00035")}[provided.name]
    assert response.cost_usd == expected


def test_rate_limit_is_retried_after_the_servers_retry_after(provided: Provided) -> None:
    provided.server.script(error(429, "slow down", retry_after="0.3"), ok(GOOD_ANSWER))

    started = time.monotonic()
    response = complete(score_request())

    assert time.monotonic() - started >= 0.3
    assert response.answer["score"] == 80
    assert provided.server.request_count == 2
    row = LLMCall.objects.get(pk=response.call_id)
    assert row.attempts == 2
    assert row.attempt_log[0]["status"] == 429
    assert row.attempt_log[0]["wait_s"] >= 0.3
    assert "slow down" in row.attempt_log[0]["error"]


def test_server_errors_are_retried_then_stored_as_a_clear_error(provided: Provided) -> None:
    provided.server.script(*[error(500, "backend exploded")] * 3)

    with pytest.raises(
        LLMError, match=r"gave up after 3 attempts: .*500.*backend exploded"
    ) as info:
        complete(score_request())

    assert provided.server.request_count == 3
    row = LLMCall.objects.get(pk=info.value.call_id)
    assert row.status == LLMCall.Status.ERROR
    assert row.answer is None
    assert [entry["status"] for entry in row.attempt_log] == [500, 500, 500]
    # A failure is not an answer: the same request afterwards goes to the provider again.
    provided.server.script(ok(GOOD_ANSWER))
    assert complete(score_request()).answer["score"] == 80
    assert provided.server.request_count == 4


def test_a_hanging_server_times_out_and_is_retried(provided: Provided, settings: Settings) -> None:
    settings.SEJURY_LLM = {**settings.SEJURY_LLM, "TIMEOUT": 0.5}
    provided.server.script(hang(5), ok(GOOD_ANSWER))

    response = complete(score_request())

    assert response.answer["score"] == 80
    row = LLMCall.objects.get(pk=response.call_id)
    assert "within 0.5 s" in row.attempt_log[0]["error"]


def test_client_errors_are_not_retried(provided: Provided) -> None:
    provided.server.script(error(403, "key revoked"))

    with pytest.raises(LLMError, match=r"403.*key revoked"):
        complete(score_request())

    assert provided.server.request_count == 1


def test_invalid_json_is_corrected_once_with_the_error_in_the_conversation(
    provided: Provided,
) -> None:
    provided.server.script(ok("The patch looks fine to me."), ok(GOOD_ANSWER))

    response = complete(score_request())

    assert response.answer["score"] == 80
    second = _prompt_text(provided, 1)
    assert "The patch looks fine to me." in second  # the model sees its own answer
    assert "not JSON" in second
    row = LLMCall.objects.get(pk=response.call_id)
    assert row.attempts == 2
    assert row.attempt_log[0]["raw_text"] == "The patch looks fine to me."


def test_a_schema_mismatch_twice_is_a_parse_failure_never_a_guess(provided: Provided) -> None:
    provided.server.script(
        ok('{"score": "high", "reasoning": "x"}', input_tokens=7, output_tokens=3),
        ok('{"score": 150, "reasoning": "x"}', input_tokens=9, output_tokens=3),
    )

    with pytest.raises(LLMParseError, match="at score") as info:
        complete(score_request())

    row = LLMCall.objects.get(pk=info.value.call_id)
    assert row.status == LLMCall.Status.PARSE_FAILURE
    assert row.answer is None
    assert row.raw_text == '{"score": 150, "reasoning": "x"}'
    assert row.input_tokens == 16  # both attempts were paid for
    assert SCHEMA_MISMATCH.split("{")[0] in _prompt_text(provided, 1)


def test_an_identical_request_is_answered_from_the_log(provided: Provided) -> None:
    provided.server.script(
        ok(GOOD_ANSWER), ok(GOOD_ANSWER), ok('{"score": 10, "reasoning": "fresh"}')
    )

    first = complete(score_request())
    second = complete(score_request())

    assert provided.server.request_count == 1
    assert second.from_cache
    assert second.answer == first.answer
    assert second.call_id == first.call_id
    assert LLMCall.objects.count() == 1

    other = complete(score_request("Another question"))
    assert not other.from_cache
    assert provided.server.request_count == 2

    fresh = complete(score_request(cache=CachePolicy.REFRESH))
    assert not fresh.from_cache
    assert fresh.answer["reasoning"] == "fresh"
    assert fresh.call_id != first.call_id
    # The fresh answer is the one the cache gives from now on.
    assert complete(score_request()).call_id == fresh.call_id


def test_settings_are_part_of_the_cache_key(provided: Provided) -> None:
    provided.server.script(ok(GOOD_ANSWER), ok(GOOD_ANSWER))

    complete(score_request())
    again = complete(score_request(temperature=0.7))

    assert not again.from_cache
    assert provided.server.request_count == 2


def test_unreachable_server_is_retried_and_reported(settings: Settings, tmp_path: Path) -> None:
    with OpenAIServer() as server:
        url = server.base_url  # the port is free again once the server stops
    point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=url)

    with pytest.raises(LLMError, match="gave up after 3 attempts: cannot reach"):
        complete(score_request())


def test_a_plain_chat_server_gets_the_schema_in_the_prompt(
    settings: Settings, tmp_path: Path
) -> None:
    """llama.cpp, Ollama and older vLLM refuse response_format; the layer still gets JSON."""
    with OpenAIServer(response_formats=()) as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        server.script(ok("```json\n" + GOOD_ANSWER + "\n```"), ok(GOOD_ANSWER))

        first = complete(score_request("one"))
        second = complete(score_request("two"))

        bodies = [request.body for request in server.requests]
    assert first.answer["score"] == 80
    assert second.answer["score"] == 80
    # json_schema refused, json_object refused, then the schema in the prompt; the server
    # is remembered, so the second call goes straight to the form that works.
    assert [body.get("response_format", {}).get("type") for body in bodies] == [
        "json_schema",
        "json_object",
        None,
        None,
    ]
    assert '"reasoning"' in bodies[2]["messages"][0]["content"]
    assert LLMCall.objects.get(pk=first.call_id).settings["output_mode"] == "prompt"
    assert first.model == "gpt-4o-mini"


def test_a_json_mode_server_keeps_json_mode(settings: Settings, tmp_path: Path) -> None:
    with OpenAIServer(response_formats=("json_object",)) as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        server.script(ok(GOOD_ANSWER))

        response = complete(score_request())

    assert LLMCall.objects.get(pk=response.call_id).settings["output_mode"] == "json_object"


def test_an_unknown_model_costs_unknown_not_zero(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    point_at(settings, tmp_path, MODEL="qwen2.5-coder:32b")
    openai_server.script(ok(GOOD_ANSWER))

    response = complete(score_request())

    assert response.model == "qwen2.5-coder:32b"
    assert response.cost_usd is None
    assert LLMCall.objects.get(pk=response.call_id).cost_usd is None


def test_a_client_for_a_new_server_does_not_read_the_trust_store_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every SDK client verifies TLS with the process's contexts (``tls_context``): reading the
    trust store costs about 25 ms of CPU, which each new server, timeout or batch client paid."""
    tls_context(), tls_context_certifi()  # read at most once a process: here, if not before
    reads: list[object] = []
    read = ssl.SSLContext.load_verify_locations

    def counted(context: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        reads.append(args)
        read(context, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    ssl.create_default_context(cafile=certifi.where())  # how the SDKs read it: counted
    assert len(reads) == 1
    reads.clear()
    for port in (9, 10):
        url = f"http://127.0.0.1:{port}"
        for provider, model in ((Provider.OPENAI, "gpt-4o-mini"), (Provider.GEMINI, "gemini")):
            target = Target(provider, model, api_key="key", base_url=url, timeout=float(port))
            adapter_for(target)
            batch_client_for(target)
    assert reads == []
