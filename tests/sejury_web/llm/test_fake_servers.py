"""The fake servers speak the wire protocols well enough for the real OpenAI and Gemini SDKs."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import jsonschema
import openai
import pytest
from google import genai
from google.genai import errors, types

from judging.strategies.prompts import SCORE_SCHEMA
from judging.strategies.rubric import SCHEMA as RUBRIC_SCHEMA
from judging.strategies.s2 import REASONS_SCHEMA
from judging.strategies.s4 import PROPERTIES_SCHEMA
from judging.strategies.s5 import TESTS_SCHEMA
from tests.sejury_web.llm.fake_servers import (
    BENCH_TEXT,
    GeminiServer,
    OpenAIServer,
    Reply,
    error,
    hang,
    ok,
    request_schema,
    schema_answer,
    schema_reply,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer"}},
    "required": ["score"],
}
HANG_TIMEOUT = 0.5  # seconds; the client gives up long before a hang(5) answers


@pytest.fixture
def gemini_server() -> Iterator[GeminiServer]:
    with GeminiServer() as server:
        yield server


def openai_client(base_url: str, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", base_url=base_url, max_retries=0, timeout=timeout)


def ask_openai(client: openai.OpenAI, *, structured: bool = False) -> Any:
    extra: dict[str, Any] = {}
    if structured:
        extra["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": SCHEMA},
        }
    return client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
        **extra,
    )


def gemini_client(base_url: str, timeout_ms: int = 5000, **options: Any) -> genai.Client:
    return genai.Client(
        api_key="test",
        http_options=types.HttpOptions(base_url=base_url, timeout=timeout_ms, **options),
    )


def ask_gemini(client: genai.Client) -> types.GenerateContentResponse:
    return client.models.generate_content(
        model="gemini-2.5-pro",
        contents=[types.Content(role="user", parts=[types.Part(text="hi")])],
        config=types.GenerateContentConfig(
            system_instruction="sys",
            temperature=0,
            response_mime_type="application/json",
            response_json_schema=SCHEMA,
        ),
    )


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """A raw POST, for what the SDKs never send (unknown paths, missing keys)."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


# -- OpenAI ------------------------------------------------------------------------------------


def test_openai_structured_answer_and_usage(openai_server: OpenAIServer) -> None:
    openai_server.script(ok('{"score": 7}', input_tokens=120, output_tokens=8, cached_tokens=100))

    completion = ask_openai(openai_client(openai_server.base_url), structured=True)

    assert completion.model == "gpt-4o-mini"
    assert completion.choices[0].message.content == '{"score": 7}'
    assert completion.choices[0].finish_reason == "stop"
    usage = completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (120, 8, 128)
    assert usage.prompt_tokens_details.cached_tokens == 100
    [request] = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test"
    assert request.body["model"] == "gpt-4o-mini"
    assert request.body["messages"][1] == {"role": "user", "content": "hi"}
    assert request.body["response_format"]["json_schema"]["schema"] == SCHEMA


def test_openai_default_reply_when_the_script_is_empty(openai_server: OpenAIServer) -> None:
    completion = ask_openai(openai_client(openai_server.base_url))
    assert completion.choices[0].message.content == '{"ok": true}'


def test_openai_rate_limit_exposes_retry_after_and_is_not_retried(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(error(429, "slow down", retry_after="1"))

    with pytest.raises(openai.RateLimitError, match="slow down") as caught:
        ask_openai(openai_client(openai_server.base_url))

    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.code == "rate_limit_exceeded"
    assert openai_server.request_count == 1  # max_retries=0 means one attempt


def test_openai_server_error_is_not_retried(openai_server: OpenAIServer) -> None:
    openai_server.script(error(500))

    with pytest.raises(openai.InternalServerError):
        ask_openai(openai_client(openai_server.base_url))

    assert openai_server.request_count == 1


def test_openai_hang_times_out_and_the_server_keeps_serving(openai_server: OpenAIServer) -> None:
    openai_server.script(hang(5), ok("after the hang"))
    client = openai_client(openai_server.base_url, timeout=HANG_TIMEOUT)

    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        ask_openai(client)
    assert time.monotonic() - started < 3

    assert ask_openai(client).choices[0].message.content == "after the hang"


def test_openai_plain_server_refuses_response_format_without_consuming_the_script() -> None:
    with OpenAIServer(response_formats=()) as server:
        server.script(ok("plain answer"))
        client = openai_client(server.base_url)

        with pytest.raises(openai.BadRequestError, match="response_format") as caught:
            ask_openai(client, structured=True)
        assert caught.value.param == "response_format"

        assert ask_openai(client).choices[0].message.content == "plain answer"
        assert server.request_count == 2  # the refused request is recorded too


def test_openai_json_object_only_server() -> None:
    with OpenAIServer(response_formats=("json_object",)) as server:
        client = openai_client(server.base_url)
        with pytest.raises(openai.BadRequestError):
            ask_openai(client, structured=True)
        completion = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            response_format={"type": "json_object"},
        )
        assert completion.choices[0].message.content == '{"ok": true}'


def test_openai_connection_refused() -> None:
    with OpenAIServer() as server:
        base_url = server.base_url
    with pytest.raises(openai.APIConnectionError) as caught:
        ask_openai(openai_client(base_url))
    assert not isinstance(caught.value, openai.APITimeoutError)


def test_openai_broken_body_surfaces_as_json_decode_error(openai_server: OpenAIServer) -> None:
    # Neither SDK wraps a 200 with a broken body in its own error class.
    openai_server.script(Reply(raw_body=b'{"choices": ['))
    with pytest.raises(json.JSONDecodeError):
        ask_openai(openai_client(openai_server.base_url))


# Alone: sixteen requests timed against the clock, which a busy machine can make late.
@pytest.mark.alone
def test_concurrent_requests_overlap_their_latency() -> None:
    with OpenAIServer(latency=0.3) as server:
        client = openai_client(server.base_url)
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(lambda _: ask_openai(client), range(16)))
        elapsed = time.monotonic() - started

    assert len(answers) == 16
    assert server.request_count == 16
    assert elapsed < 16 * 0.3 / 2  # serialized handling would take 4.8 s
    # The benchmarks check the limiter with this peak: it sees requests that overlap.
    assert 2 <= server.peak_in_flight <= 16
    assert server.in_flight == 0


def test_exit_returns_promptly_while_a_handler_hangs() -> None:
    server = OpenAIServer()
    with server:
        server.script(hang(30))
        client = openai_client(server.base_url, timeout=0.2)
        with pytest.raises(openai.APITimeoutError):
            ask_openai(client)
        started = time.monotonic()
    assert time.monotonic() - started < 2


def test_openai_unknown_path_is_a_json_404(openai_server: OpenAIServer) -> None:
    status, body = post(f"{openai_server.url}/v1/completions", b"{}")
    assert status == 404
    assert body["error"]["code"] == "unknown_url"


# -- Gemini ------------------------------------------------------------------------------------


def test_gemini_structured_answer_usage_and_wire_format(gemini_server: GeminiServer) -> None:
    gemini_server.script(ok('{"score": 7}', input_tokens=120, output_tokens=8, cached_tokens=100))

    response = ask_gemini(gemini_client(gemini_server.url))

    assert response.text == '{"score": 7}'
    usage = response.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count) == (120, 8)
    assert usage.cached_content_token_count == 100
    assert response.model_version == "gemini-2.5-pro"
    [request] = gemini_server.requests
    # google-genai 3.x defaults to the v1 API for Google AI (older SDKs sent v1beta).
    assert request.path == "/v1/models/gemini-2.5-pro:generateContent"
    assert request.headers["x-goog-api-key"] == "test"
    assert request.body == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "sys"}]},
        "generationConfig": {
            "temperature": 0.0,
            "responseMimeType": "application/json",
            "responseJsonSchema": SCHEMA,
        },
    }


def test_gemini_v1beta_and_uncached_usage(gemini_server: GeminiServer) -> None:
    response = ask_gemini(gemini_client(gemini_server.url, api_version="v1beta"))

    assert response.text == '{"ok": true}'
    assert response.usage_metadata is not None
    assert response.usage_metadata.cached_content_token_count is None
    assert gemini_server.requests[0].path == "/v1beta/models/gemini-2.5-pro:generateContent"


def test_gemini_rate_limit_exposes_retry_after_and_is_not_retried(
    gemini_server: GeminiServer,
) -> None:
    gemini_server.script(error(429, "quota", retry_after="1"))

    with pytest.raises(errors.ClientError) as caught:
        ask_gemini(gemini_client(gemini_server.url))

    assert caught.value.code == 429
    assert caught.value.status == "RESOURCE_EXHAUSTED"
    assert caught.value.message == "quota"
    # APIError.response is the raw httpx2.Response; its headers are case-insensitive.
    assert isinstance(caught.value.response, httpx2.Response)
    assert caught.value.response.headers["retry-after"] == "1"
    assert gemini_server.request_count == 1  # no retry_options: a single attempt


def test_gemini_server_error_is_not_retried(gemini_server: GeminiServer) -> None:
    gemini_server.script(error(500))

    with pytest.raises(errors.ServerError) as caught:
        ask_gemini(gemini_client(gemini_server.url))

    assert caught.value.code == 500
    assert caught.value.status == "INTERNAL"
    assert gemini_server.request_count == 1


def test_gemini_hang_raises_the_transport_timeout(gemini_server: GeminiServer) -> None:
    gemini_server.script(hang(5), ok("after the hang"))
    client = gemini_client(gemini_server.url, timeout_ms=int(HANG_TIMEOUT * 1000))

    started = time.monotonic()
    # The SDK does not wrap transport errors: httpx2.ReadTimeout escapes as is.
    with pytest.raises(httpx2.ReadTimeout):
        ask_gemini(client)
    assert time.monotonic() - started < 3

    assert ask_gemini(client).text == "after the hang"


def test_gemini_connection_refused() -> None:
    with GeminiServer() as server:
        url = server.url
    with pytest.raises(httpx2.ConnectError):
        ask_gemini(gemini_client(url))


def test_gemini_requires_an_api_key(gemini_server: GeminiServer) -> None:
    path = "/v1beta/models/gemini-2.5-pro:generateContent"
    status, body = post(f"{gemini_server.url}{path}", b'{"contents": []}')
    assert status == 403
    assert body["error"]["status"] == "PERMISSION_DENIED"

    status, body = post(f"{gemini_server.url}{path}?key=test", b'{"contents": []}')
    assert status == 200


def test_gemini_unknown_path_is_a_json_404(gemini_server: GeminiServer) -> None:
    status, body = post(f"{gemini_server.url}/v1/models/x:streamGenerateContent", b"{}")
    assert status == 404
    assert body["error"]["status"] == "NOT_FOUND"


# -- CLI ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["openai", "gemini"])
def test_cli_serves_until_sigterm_and_counts_requests(protocol: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.sejury_web.llm.fake_servers", protocol, "--latency", "0.05"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        # select() so that a server that never starts fails the test instead of blocking it.
        readable, _, _ = select.select([proc.stdout], [], [], 10)
        assert readable, "the server printed no URL line"
        kind, url = proc.stdout.readline().split()
        assert kind == "URL"
        assert url.startswith("http://127.0.0.1:")

        if protocol == "openai":
            client = openai_client(f"{url}/v1")
            answers = [
                ask_openai(client).choices[0].message.content,  # no schema: the fixed text
                ask_openai(client, structured=True).choices[0].message.content,
            ]
            assert answers == [BENCH_TEXT, '{"score": 50}']
        else:
            assert ask_gemini(gemini_client(url)).text == '{"score": 50}'

        # One request at a time: the peak in flight is 1.
        expected = f"REQUESTS {2 if protocol == 'openai' else 1} PEAK 1"
        proc.send_signal(signal.SIGUSR1)  # the count so far; the server goes on serving
        readable, _, _ = select.select([proc.stdout], [], [], 10)
        assert readable, "SIGUSR1 printed nothing"
        assert proc.stdout.readline().strip() == expected

        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    assert out.splitlines() == [expected]
    assert err == ""


# -- answers valid against the request's schema -------------------------------------------------

JUDGING_SCHEMAS = {
    "s1b/s3/rethink": SCORE_SCHEMA,
    "s2.assess": REASONS_SCHEMA,
    "s4.analyze": PROPERTIES_SCHEMA,
    "s5.tests": TESTS_SCHEMA,
    "rubric": RUBRIC_SCHEMA,
}
OTHER_SCHEMAS: dict[str, dict[str, Any]] = {
    "bounded integer": {"type": "integer", "minimum": 1, "maximum": 10},
    "integer below 50": {"type": "integer", "maximum": 7},
    "exclusive bounds": {"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 9},
    "number": {"type": "number", "minimum": 0.5},
    "string lengths": {"type": "string", "minLength": 10},
    "short string": {"type": "string", "maxLength": 2},
    "enum": {"type": "string", "enum": ["VALID", "INVALID"]},
    "const": {"const": "x"},
    "nullable": {"type": ["null", "string"]},
    "array bounds": {"type": "array", "items": {"type": "integer"}, "minItems": 3},
    "empty array": {"type": "array", "items": {"type": "integer"}, "maxItems": 0},
    "unique items": {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
    "anyOf": {"anyOf": [{"type": "null"}, {"type": "object", "required": ["a"]}]},
    "allOf": {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "boolean"}}, "required": ["b"]},
        ]
    },
    "$defs": {
        "type": "object",
        "properties": {"item": {"$ref": "#/$defs/Item"}},
        "required": ["item"],
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "tags": {"type": "array"}},
                "required": ["id", "tags"],
                "additionalProperties": False,
            }
        },
    },
    "optional property left out": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string", "minLength": 99}},
        "required": ["a"],
    },
}


@pytest.mark.parametrize(
    "schema", [*JUDGING_SCHEMAS.values(), *OTHER_SCHEMAS.values()],
    ids=[*JUDGING_SCHEMAS, *OTHER_SCHEMAS],
)  # fmt: skip
def test_schema_answer_is_valid_against_the_schema(schema: dict[str, Any]) -> None:
    answer = schema_answer(schema)
    jsonschema.validate(answer, schema, cls=jsonschema.Draft202012Validator)
    assert schema_answer(schema) == answer  # deterministic


def test_schema_answer_values() -> None:
    assert schema_answer(SCORE_SCHEMA) == {"score": 50, "reasoning": "fake"}
    assert json.dumps(schema_answer(SCORE_SCHEMA)) == BENCH_TEXT
    assert schema_answer(REASONS_SCHEMA) == {"score": 50, "reasons": ["fake"]}
    assert schema_answer(TESTS_SCHEMA) == {"tests": [{"name": "fake", "description": "fake"}]}
    assert schema_answer(RUBRIC_SCHEMA) == {
        "thought": "fake",
        "verdict": "VALID",
        "justification": "fake",
        "requirements": [{"index": 50, "passed": True, "reason": "fake"}],
    }
    assert schema_answer(OTHER_SCHEMAS["bounded integer"]) == 10  # 50 lowered to the maximum
    assert schema_answer({"type": "integer", "minimum": 60}) == 60
    assert schema_answer(OTHER_SCHEMAS["array bounds"]) == [50, 50, 50]
    assert schema_answer({"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}},
                          "required": ["n"]}) == {"n": 50}  # fmt: skip


def test_request_schema_finds_the_schema_where_each_protocol_sends_it() -> None:
    openai_body = {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}}
    assert request_schema(openai_body) == SCHEMA
    assert request_schema({"response_format": {"type": "json_object"}}) is None
    assert request_schema({"generationConfig": {"responseJsonSchema": SCHEMA}}) == SCHEMA
    assert request_schema({"generationConfig": {"responseSchema": SCHEMA}}) == SCHEMA
    assert request_schema({"messages": []}) is None
    assert request_schema(None) is None
    assert schema_reply({}).text == BENCH_TEXT


@pytest.mark.parametrize(("name", "schema"), list(JUDGING_SCHEMAS.items()))
def test_schema_reply_through_both_sdks(name: str, schema: dict[str, Any]) -> None:
    with (
        OpenAIServer(default=schema_reply) as openai_fake,
        GeminiServer(default=schema_reply) as gemini_fake,
    ):
        completion = openai_client(openai_fake.base_url).chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": name}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True},
            },
        )
        gemini = gemini_client(gemini_fake.url)  # kept: a dropped client closes its transport
        response = gemini.models.generate_content(
            model="gemini-2.5-pro",
            contents=name,
            config=types.GenerateContentConfig(
                response_mime_type="application/json", response_json_schema=schema
            ),
        )
    for text in (completion.choices[0].message.content, response.text):
        assert text is not None
        jsonschema.validate(json.loads(text), schema)
