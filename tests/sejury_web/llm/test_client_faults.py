"""Odd answers and long waits: every failure still ends in exactly one stored row."""

import re
from decimal import Decimal
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from sejury_web.llm import LLMError, LLMParseError, LLMRequest, Message, complete
from sejury_web.llm.client import BAD_INPUTS, RATE_LIMITED
from sejury_web.llm.models import LLMCall
from sejury_web.llm.prices import call_cost

from .fake_servers import OpenAIServer, Reply, error, ok
from .helpers import GOOD_ANSWER, Provided, point_at, score_request

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_numbers_a_score_can_be(provided: Provided, constant: str) -> None:
    bad = f'{{"score": {constant}, "reasoning": "x"}}'
    provided.server.script(ok(bad), ok(bad))

    with pytest.raises(LLMParseError, match="not a JSON number"):
        complete(score_request())


@pytest.mark.parametrize(
    "body",
    [b"<html><body>502 Bad Gateway</body></html>", b"[1, 2]", b'{"choices": [{"message": null}]}'],
)
def test_a_body_that_is_not_an_answer_is_retried_and_stored(
    openai_server: OpenAIServer, body: bytes
) -> None:
    openai_server.script(*[Reply(raw_body=body, headers={"Content-Type": "text/html"})] * 3)

    with pytest.raises(LLMError, match="gave up after 3 attempts") as info:
        complete(score_request())

    assert LLMCall.objects.get(pk=info.value.call_id).status == LLMCall.Status.ERROR


def test_a_retry_after_longer_than_the_backoff_limit_fails_at_once(provided: Provided) -> None:
    provided.server.script(error(429, "daily quota exhausted", retry_after="86400"))

    with pytest.raises(LLMError, match="asks to wait 86400 s") as info:
        complete(score_request())

    assert provided.server.request_count == 1
    assert RATE_LIMITED.split("{")[1].startswith("error}")
    assert LLMCall.objects.get(pk=info.value.call_id).status == LLMCall.Status.ERROR


def test_a_retry_after_http_date_is_honoured(provided: Provided) -> None:
    provided.server.script(error(429, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"), ok(GOOD_ANSWER))

    # A date in the past means "now".
    assert complete(score_request()).answer["score"] == 80


def test_inputs_that_are_not_json_are_refused_before_any_request(provided: Provided) -> None:
    request = LLMRequest(
        purpose="judge.s1b",
        messages=(Message("user", "q"),),
        schema={"type": "object"},
        inputs={"threshold": Decimal("0.5")},
    )

    with pytest.raises(ValueError, match=re.escape(BAD_INPUTS.split(":")[0])):
        complete(request)

    assert provided.server.request_count == 0


def test_each_request_of_a_corrected_call_is_priced_on_its_own(
    openai_server: OpenAIServer, settings: Settings, tmp_path: Path
) -> None:
    """Gemini Pro's long-prompt rate applies per request, not to the sum of two."""
    point_at(
        settings,
        tmp_path,
        MODEL="gemini-2.5-pro",  # an OpenAI-compatible proxy in front of Gemini
    )
    openai_server.script(
        ok("not json", input_tokens=120_000, output_tokens=100),
        ok(GOOD_ANSWER, input_tokens=120_000, output_tokens=100),
    )

    response = complete(score_request())

    one = call_cost("gemini-2.5-pro", input_tokens=120_000, output_tokens=100, cached_tokens=0)
    assert one is not None
    assert response.cost_usd == 2 * one  # 2 × (120,000 × $1.25/M + 100 × $10/M) = $0.302
    assert response.input_tokens == 240_000


def test_a_400_about_the_prompt_does_not_downgrade_structured_output(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(error(400, "This model's maximum context length is 128000 tokens."))

    with pytest.raises(LLMError, match="maximum context length"):
        complete(score_request())

    assert openai_server.request_count == 1
