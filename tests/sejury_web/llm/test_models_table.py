"""Models as they are: what each family is sent, and what a server's 400 teaches the layer.

Through the real ``openai`` and ``google-genai`` SDKs, against fake servers that refuse what
api.openai.com and the Gemini API refuse (``fake_servers._openai_model_refusal``,
``_gemini_thinking_refusal``), written apart from the app's table.
"""

from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from sejury_web.llm import LLMError, complete
from sejury_web.llm.client import request_hash
from sejury_web.llm.config import Target
from sejury_web.llm.models import LLMCall
from sejury_web.llm.models_table import (
    REASONING_ALLOWANCE,
    family_for,
    reasoning_allowance,
    reasoning_check,
    reasoning_parameter,
)
from sejury_web.llm.types import Provider

from .fake_servers import GeminiServer, OpenAIServer, error, ok
from .helpers import GOOD_ANSWER, point_at, score_request

TEMPERATURE_REFUSED = (
    "Unsupported value: 'temperature' does not support 0.0 with this model. Only the default "
    "(1) value is supported."
)


# -- the table ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "family", "temperature"),
    [
        ("gpt-5-mini", "gpt-5", False),
        ("gpt-5-nano-2025-08-07", "gpt-5", False),
        ("gpt-5.1", "gpt-5.1", False),
        ("gpt-5.4-mini", "gpt-5.2 and later", False),
        ("o4-mini", "o-series", False),
        ("o3", "o-series", False),
        ("gpt-4o-mini-2024-07-18", "gpt-4.1 / gpt-4o", True),
        ("gpt-4.1-nano", "gpt-4.1 / gpt-4o", True),
        ("qwen2.5-coder-1.5b-instruct-q4_k_m", "other OpenAI-compatible", True),
    ],
)
def test_openai_families(model: str, family: str, temperature: bool) -> None:
    found = family_for(Provider.OPENAI, model)
    assert (found.name, found.temperature) == (family, temperature)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-2.5-flash", "gemini-2.5-flash"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gemini-3-pro-preview", "gemini-3 pro"),
        ("gemini-3.1-pro-preview", "gemini-3.1 pro"),
        ("gemini-3-flash-preview", "gemini-3 flash"),
        ("gemini-3.5-flash", "gemini-3.5 and later"),
        ("models/gemini-2.0-flash", "gemini-2.0"),
    ],
)
def test_gemini_families(model: str, family: str) -> None:
    assert family_for(Provider.GEMINI, model).name == family


@pytest.mark.parametrize(
    ("provider", "model", "value", "refusal"),
    [
        ("openai", "gpt-4o-mini", "low", "gpt-4o-mini takes no reasoning setting"),
        ("openai", "gpt-5-mini", "none", "takes a reasoning effort of minimal, low, medium, high"),
        ("openai", "gpt-5-mini", "2048", "takes an effort word"),
        ("openai", "o3", "minimal", "takes a reasoning effort of low, medium, high"),
        ("gemini", "gemini-2.5-pro", "0", "takes a thinking budget of 128–32768 tokens"),
        ("gemini", "gemini-2.5-flash", "99999", "takes a thinking budget of 1–24576 tokens, 0"),
        ("gemini", "gemini-3-pro-preview", "medium", "takes a thinking level of low, high"),
        ("gemini", "gemini-3.5-flash", "1024", "takes a thinking level of minimal"),
        ("gemini", "gemini-2.0-flash", "low", "takes no reasoning setting"),
        ("openai", "gpt-5", "lots!", "a reasoning setting is a word"),
    ],
)
def test_a_setting_the_model_cannot_take_is_refused_saying_what_it_takes(
    provider: str, model: str, value: str, refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal):
        reasoning_check(provider, model, value)


def test_settings_go_on_the_wire_in_each_familys_words() -> None:
    assert reasoning_parameter("openai", "gpt-5-mini", "Minimal").effort == "minimal"
    assert reasoning_parameter("openai", "my-local-model", "high").effort == "high"
    assert reasoning_parameter("gemini", "gemini-2.5-flash", "0").budget == 0  # off
    assert reasoning_parameter("gemini", "gemini-2.5-flash", "-1").budget == -1  # dynamic
    # Effort words on a budget model, as Google maps them; 2.5 Pro cannot stop thinking.
    assert reasoning_parameter("gemini", "gemini-2.5-flash", "medium").budget == 8192
    assert reasoning_parameter("gemini", "gemini-2.5-pro", "none").budget == 128
    assert reasoning_parameter("gemini", "gemini-3-flash-preview", "minimal").level == "minimal"
    assert reasoning_parameter("gemini", "gemini-3-pro-preview", "4096").budget == 4096
    assert reasoning_check("openai", "gpt-5", "  ") == ""


def test_reasoning_is_part_of_the_cache_key_and_absent_leaves_old_keys_alone() -> None:
    target = Target(Provider.OPENAI, "gpt-5-mini")
    plain = request_hash(target, score_request())
    assert request_hash(target, score_request(reasoning="low")) != plain
    assert request_hash(target, score_request(reasoning="low")) != request_hash(
        target, score_request(reasoning="high")
    )
    # Where a request is served from is not what it asks.
    assert request_hash(target, score_request(cache_group="judge.s1b:Chart-1")) == plain


# -- OpenAI, through the SDK ----------------------------------------------------------------------


@pytest.fixture
def openai_at(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    def point(server: OpenAIServer, model: str) -> None:
        point_at(
            settings,
            tmp_path,
            PROVIDER="openai",
            MODEL=model,
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-test",
        )

    return point


@pytest.mark.django_db
def test_gpt5_mini_is_sent_no_temperature_and_its_reasoning_effort(openai_at) -> None:  # type: ignore[no-untyped-def]
    with OpenAIServer() as server:
        openai_at(server, "gpt-5-mini")
        server.script(ok(GOOD_ANSWER))
        response = complete(score_request(reasoning="low", cache_group="judge.s1b:Chart-1"))

    [sent] = server.requests
    assert "temperature" not in sent.body
    assert sent.body["reasoning_effort"] == "low"
    assert sent.body["prompt_cache_key"] == "judge.s1b:Chart-1"
    row = LLMCall.objects.get(pk=response.call_id)
    assert row.settings["reasoning"] == "low"
    assert "dropped" not in row.settings


@pytest.mark.django_db
def test_the_fake_refuses_temperature_as_openai_does(openai_at) -> None:  # type: ignore[no-untyped-def]
    """The fake's own refusal, seen by a client that sends what older code sent."""
    import openai

    with OpenAIServer() as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(
                model="gpt-5-mini", messages=[{"role": "user", "content": "hi"}], temperature=0
            )
    assert refused.value.body == {
        "message": "Unsupported value: 'temperature' does not support 0 with this model. Only "
        "the default (1) value is supported.",
        "type": "invalid_request_error",
        "param": "temperature",
        "code": "unsupported_value",
    }


@pytest.mark.django_db
def test_a_refused_parameter_is_dropped_repeated_at_once_and_remembered(openai_at) -> None:  # type: ignore[no-untyped-def]
    """A proxy's model the table does not know refuses temperature like a reasoning model."""
    with OpenAIServer() as server:
        openai_at(server, "company-proxy/reasoner")
        server.script(error(400, TEMPERATURE_REFUSED), ok(GOOD_ANSWER), ok(GOOD_ANSWER))
        first = complete(score_request())
        second = complete(score_request("Another patch?"))

    assert ["temperature" in r.body for r in server.requests] == [True, False, False]
    for response in (first, second):
        row = LLMCall.objects.get(pk=response.call_id)
        assert row.status == LLMCall.Status.OK
        assert row.settings["dropped"] == ["temperature"]
    # One call, one attempt in the log's sense: the repeat is the adapter's, not a retry.
    assert LLMCall.objects.get(pk=first.call_id).attempts == 1


@pytest.mark.django_db
def test_a_refused_output_limit_is_sent_under_its_other_name(openai_at) -> None:  # type: ignore[no-untyped-def]
    with OpenAIServer() as server:
        openai_at(server, "gpt-5-mini")  # on a compatible server: max_tokens first
        server.script(ok(GOOD_ANSWER))
        complete(score_request(max_output_tokens=300))

    assert [sorted(k for k in r.body if k.startswith("max")) for r in server.requests] == [
        ["max_tokens"],
        ["max_completion_tokens"],
    ]
    assert server.requests[-1].body["max_completion_tokens"] == 300


@pytest.mark.django_db
def test_a_400_about_something_else_is_not_mistaken_for_a_parameter(openai_at) -> None:  # type: ignore[no-untyped-def]
    with OpenAIServer() as server:
        openai_at(server, "gpt-4o-mini")
        server.script(
            error(
                400,
                "This model's maximum context length is 128000 tokens. However, you "
                "requested 130000 tokens (temperature and all).",
            )
        )
        with pytest.raises(LLMError, match="maximum context length"):
            complete(score_request())
    assert len(server.requests) == 1


# -- Gemini, through the SDK ----------------------------------------------------------------------


@pytest.fixture
def gemini_at(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    def point(server: GeminiServer, model: str) -> None:
        point_at(
            settings,
            tmp_path,
            PROVIDER="gemini",
            MODEL=model,
            GEMINI_API_KEY="test-key",
            GEMINI_BASE_URL=server.url,
        )

    return point


@pytest.mark.django_db
def test_gemini_25_gets_a_budget_on_top_of_its_output_limit(gemini_at) -> None:  # type: ignore[no-untyped-def]
    with GeminiServer() as server:
        gemini_at(server, "gemini-2.5-flash")
        server.script(ok(GOOD_ANSWER))
        complete(score_request(reasoning="2048", max_output_tokens=500))

    config = server.requests[0].body["generationConfig"]
    assert config["thinkingConfig"] == {"thinking_budget": 2048}  # as google-genai spells it
    assert config["maxOutputTokens"] == 2548  # the answer keeps its 500
    assert config["temperature"] == 0


@pytest.mark.django_db
def test_gemini_3_gets_a_level_and_no_temperature(gemini_at) -> None:  # type: ignore[no-untyped-def]
    with GeminiServer() as server:
        gemini_at(server, "gemini-3-flash-preview")
        server.script(ok(GOOD_ANSWER))
        complete(score_request(reasoning="low"))

    config = server.requests[0].body["generationConfig"]
    assert config["thinkingConfig"] == {"thinking_level": "LOW"}
    assert "temperature" not in config


@pytest.mark.django_db
def test_a_gemini_model_that_refuses_its_thinking_setting_is_asked_without_it(gemini_at) -> None:  # type: ignore[no-untyped-def]
    """A model the table does not know gets a level; the fake, seeing a 2.5, refuses it."""
    with GeminiServer() as server:
        gemini_at(server, "gemini-2.5-flash-exp-0827")
        server.script(ok(GOOD_ANSWER), ok(GOOD_ANSWER))
        first = complete(score_request(reasoning="low"))
        complete(score_request("Another patch?", reasoning="low"))

    configs = [r.body["generationConfig"] for r in server.requests]
    assert ["thinkingConfig" in c for c in configs] == [True, False, False]
    assert LLMCall.objects.get(pk=first.call_id).settings["dropped"] == ["thinking"]


@pytest.mark.parametrize(
    ("provider", "model", "reasoning", "expected"),
    [
        ("openai", "gpt-5-mini", "", (REASONING_ALLOWANCE["medium"], "medium")),
        ("openai", "gpt-5-mini", "minimal", (REASONING_ALLOWANCE["minimal"], "minimal")),
        ("openai", "gpt-5.4-mini", "", (0, "none")),  # 5.1 and later reason only when told
        ("openai", "gpt-4o-mini", "", (0, "")),
        ("openai", "local-qwen", "high", (0, "")),  # unknown: nothing assumed
        ("gemini", "gemini-2.5-flash", "2048", (2048, "a thinking budget of 2048")),
        ("gemini", "gemini-2.5-flash", "-1", (REASONING_ALLOWANCE["dynamic"], "dynamic")),
        ("gemini", "gemini-2.5-flash", "0", (0, "a thinking budget of 0")),
        ("gemini", "gemini-3-pro-preview", "", (REASONING_ALLOWANCE["high"], "high")),
    ],
)
def test_the_hidden_reasoning_a_forecast_assumes(
    provider: str, model: str, reasoning: str, expected: tuple[int, str]
) -> None:
    assert reasoning_allowance(provider, model, reasoning) == expected
