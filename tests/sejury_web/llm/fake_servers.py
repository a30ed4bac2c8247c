"""Local HTTP servers that speak the OpenAI and Gemini wire protocols, for driving the real SDKs.

Tests script the replies (``server.script(ok(...), error(429, retry_after="1"), hang(5))``) and
inspect what the SDK sent (``server.requests``). Benchmarks in another process use the CLI::

    python -m tests.sejury_web.llm.fake_servers openai --latency 0.2 [--port 0] [--prefix-cache]

which prints ``URL http://127.0.0.1:PORT``, serves until SIGTERM/SIGINT, then prints
``REQUESTS <count> PEAK <most requests in flight at once>`` (SIGUSR1 prints them so far and
serving goes on). It answers every
request with JSON valid against the request's schema (``schema_reply``, which tests can pass
as ``default=``), or with ``BENCH_TEXT`` when the request has none. ``--prefix-cache`` (the
``prefix_cache=True`` of ``OpenAIServer``) counts prompt and cached tokens as OpenAI's prompt
cache would (``PrefixCache``). Stdlib only, so it runs anywhere the tests run.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import math
import re
import signal
import socket
import socketserver
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import parse_qs, urlsplit

DEFAULT_TEXT = '{"ok": true}'

JsonObject = dict[str, Any]


@dataclass
class Reply:
    """One scripted answer; ``raw_body`` (if set) is sent verbatim and overrides everything."""

    status: int = 200
    text: str | None = None  # None: the model answered with no text at all
    input_tokens: int = 10
    output_tokens: int = 5
    cached_tokens: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    error_message: str = ""
    delay: float = 0.0
    raw_body: bytes | None = None
    finish_reason: str = "stop"  # "length": the output token limit cut the answer off


def ok(text: str, **kw: Any) -> Reply:
    """A successful answer whose text is ``text``."""
    return Reply(text=text, **kw)


def error(status: int, message: str = "", *, retry_after: str | None = None) -> Reply:
    """An error reply in the protocol's error format, optionally with a Retry-After header."""
    headers = {} if retry_after is None else {"Retry-After": retry_after}
    return Reply(status=status, error_message=message, headers=headers)


def hang(seconds: float) -> Reply:
    """A reply that arrives only after ``seconds`` (longer than the client's timeout: a hang)."""
    return Reply(text=DEFAULT_TEXT, delay=seconds)


@dataclass(frozen=True)
class RecordedRequest:
    """What a client sent: headers have lower-cased keys; body is the parsed JSON (None if not)."""

    method: str
    path: str  # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Without this, server_close() joins every handler thread, i.e. waits for hangs and for
    # idle keep-alive connections that the client has not closed yet.
    block_on_close = False
    request_queue_size = 128  # benchmarks open many connections at once

    def __init__(self, address: tuple[str, int], fake: FakeLLMServer) -> None:
        self.fake = fake
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind() calls socket.getfqdn(), a reverse DNS lookup that can
        # stall for seconds on a machine without network.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout) is normal here; anything else is a bug worth a trace.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects

    @property
    def fake(self) -> FakeLLMServer:
        return cast(_HTTPServer, self.server).fake

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in two writes; without TCP_NODELAY, Nagle's algorithm and
        # the client's delayed ACK hold the body back ~40 ms, which real servers don't do.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fake._track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.fake._untrack(self.connection)

    def handle(self) -> None:
        # A client that went away mid-request (its timeout) needs no answer.
        with contextlib.suppress(ConnectionError):
            super().handle()

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        url = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=url.path,
            query=parse_qs(url.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        status, headers, payload = self.fake._respond(request)
        if status is None:  # the server is stopping: drop the connection unanswered
            self.close_connection = True
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


class FakeLLMServer:
    """Base of the protocol servers: scripting, recording, threading; a context manager."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        default: Callable[[JsonObject], Reply] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.latency = latency
        self.default = default
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.peak_in_flight = 0  # the most requests ever being answered at once
        self._address = (host, port)
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Bind (port 0 picks a free port) and serve in a background thread."""
        self._httpd = _HTTPServer(self._address, self)
        # A short poll interval makes shutdown() return quickly.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}-{self.url}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop promptly, even while handlers sleep in a hang or wait on idle keep-alives."""
        if self._httpd is None:
            return
        self._stopping.set()  # wakes every sleeping handler
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            # Unblocks a handler waiting for the next request; OSError: its handler closed it.
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @contextlib.contextmanager
    def answered_by(self, fake: Self) -> Iterator[Self]:
        """For the body of a ``with``, ``fake`` (a server of the same class, not started)
        answers every request to this running server's port, and ``fake.url`` is that port:
        a fresh server for each test, on a port that a process started once names (a
        module's Celery worker, whose environment is fixed when it starts). At the end, what
        ``fake`` still holds (a hang, a trickle, a stall) is cut short, as ``stop()`` would."""
        httpd = self._httpd
        if httpd is None:
            raise RuntimeError("the server is not started; use it as a context manager")
        if type(fake) is not type(self) or fake._httpd is not None:
            raise ValueError("answered_by() takes a server of the same class, not started")
        fake._httpd = httpd
        httpd.fake = fake
        try:
            yield fake
        finally:
            httpd.fake = self
            fake._stopping.set()
            with fake._lock:  # open keep-alive connections: this server's to close at its stop
                connections, fake._connections = fake._connections, set()
            with self._lock:
                self._connections |= connections
            fake._httpd = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        if self._httpd is None:
            raise RuntimeError("the server is not started; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- scripting ----------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies, consumed first in first out, one per request."""
        with self._lock:
            self._script.extend(replies)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def counts_line(self) -> str:
        """``REQUESTS <count> PEAK <most in flight at once>``: what the CLI prints."""
        with self._lock:
            return f"REQUESTS {len(self.requests)} PEAK {self.peak_in_flight}"

    # -- request handling (called from handler threads) ---------------------------------------

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _untrack(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.discard(conn)

    def _respond(self, request: RecordedRequest) -> tuple[int | None, dict[str, str], bytes]:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: RecordedRequest) -> tuple[int | None, dict[str, str], bytes]:
        reply = self._refusal(request)
        if reply is None:
            reply = self._next_reply(request.body)
        # Event.wait() rather than time.sleep(): stop() cuts every pending sleep short.
        if self._stopping.wait(self.latency + reply.delay):
            return None, {}, b""
        if reply.raw_body is not None:
            return reply.status, reply.headers, reply.raw_body
        if reply.status == 200:
            document = self._success_body(reply, request)
        else:
            message = reply.error_message or _phrase(reply.status)
            document = self._error_body(reply.status, message)
        return reply.status, reply.headers, json.dumps(document).encode()

    def _next_reply(self, body: Any) -> Reply:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self.default is not None:
            return self.default(body if isinstance(body, dict) else {})
        return ok(DEFAULT_TEXT)

    # -- protocol hooks -----------------------------------------------------------------------

    def _refusal(self, request: RecordedRequest) -> Reply | None:
        """A reply the protocol forces before any scripted one (wrong path, refused field)."""
        return None

    def _success_body(self, reply: Reply, request: RecordedRequest) -> JsonObject:
        raise NotImplementedError

    def _error_body(self, status: int, message: str) -> JsonObject:
        raise NotImplementedError


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


class OpenAIServer(FakeLLMServer):
    """``POST /v1/chat/completions``; point the client at ``base_url``.

    ``response_formats`` lists the accepted ``response_format.type`` values; ``()`` emulates a
    server with plain chat completions only (llama.cpp, Ollama, older vLLM), which answers 400.
    """

    PATH = "/v1/chat/completions"
    _ids = itertools.count(1)

    def __init__(
        self,
        *,
        response_formats: Collection[str] = ("json_schema", "json_object"),
        model_rules: bool = True,
        prefix_cache: bool = False,
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        self.response_formats = frozenset(response_formats)
        # Refuse what api.openai.com refuses of the model the body names (a reasoning
        # model's temperature, say); False: a compatible server that takes everything.
        self.model_rules = model_rules
        # True: count prompt and cached tokens as OpenAI's prompt cache would (``PrefixCache``)
        # instead of the scripted reply's.
        self.prefix_cache = PrefixCache() if prefix_cache else None

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _refusal(self, request: RecordedRequest) -> Reply | None:
        if request.method != "POST" or request.path != self.PATH:
            return error(404, f"Unknown request URL: {request.method} {request.path}")
        if not isinstance(request.body, dict):
            return error(400, "We could not parse the JSON body of your request.")
        refused = _openai_model_refusal(request.body) if self.model_rules else None
        if refused is not None:
            return refused
        response_format = request.body.get("response_format")
        if response_format is None:
            return None
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in self.response_formats:
            return error(400, f"response_format type {kind!r} is not supported by this server")
        return None

    def _success_body(self, reply: Reply, request: RecordedRequest) -> JsonObject:
        if self.prefix_cache is not None:
            key = str(request.body.get("prompt_cache_key") or "")
            prompt, cached = self.prefix_cache.serve(key, openai_prompt(request.body))
            reply = replace(reply, input_tokens=prompt, cached_tokens=cached)
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": reply.input_tokens,
                "completion_tokens": reply.output_tokens,
                "total_tokens": reply.input_tokens + reply.output_tokens,
                "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
            },
        }

    def _error_body(self, status: int, message: str) -> JsonObject:
        kind, code = _OPENAI_ERRORS.get(status, ("server_error" if status >= 500 else "", None))
        # Clients read `param` to tell a refused response_format from other 400s.
        param = "response_format" if "response_format" in message else None
        refused = re.match(r"Unsupported (value|parameter): '(\w+)'", message)
        if refused:  # as OpenAI names a parameter a model does not take
            param = refused[2]
            code = "unsupported_value" if refused[1] == "value" else "unsupported_parameter"
        return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# What api.openai.com's models refuse, written from its error bodies as users report them
# (e.g. github.com/QwenLM/qwen-code/issues/921 for gpt-5-mini's temperature) and the
# reasoning guide, independently of the app's own table (sejury_web/llm/models_table.py):
# a table checked against itself would pass whatever it says.
_REASONING_MODEL = re.compile(r"(gpt-5(\.\d+)?(-(mini|nano|pro|codex))?|o[1-9](-mini|-pro)?)(-.*)?")
_CHAT_VARIANT = re.compile(r"gpt-5(\.\d+)?-chat.*")
_EFFORTS = {
    "gpt-5": ("minimal", "low", "medium", "high"),
    "gpt-5.1": ("none", "low", "medium", "high"),
    "o": ("low", "medium", "high"),
}


def _efforts(model: str) -> tuple[str, ...]:
    if model.startswith("o"):
        return _EFFORTS["o"]
    if re.match(r"gpt-5\.1\b", model):
        return _EFFORTS["gpt-5.1"]
    if re.match(r"gpt-5\.\d", model):
        return ("none", "low", "medium", "high", "xhigh")
    return _EFFORTS["gpt-5"]


def _openai_model_refusal(body: JsonObject) -> Reply | None:
    model = str(body.get("model", ""))
    reasoning = bool(_REASONING_MODEL.fullmatch(model)) and not _CHAT_VARIANT.fullmatch(model)
    temperature = body.get("temperature")
    effort = body.get("reasoning_effort")
    if reasoning and temperature is not None and temperature != 1:
        return error(
            400,
            f"Unsupported value: 'temperature' does not support {json.dumps(temperature)} with "
            "this model. Only the default (1) value is supported.",
        )
    if reasoning and "max_tokens" in body:
        return error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
        )
    if effort is not None and not reasoning:
        return error(
            400, "Unsupported parameter: 'reasoning_effort' is not supported with this model."
        )
    if effort is not None and effort not in _efforts(model):
        values = [f"'{value}'" for value in _efforts(model)]
        listed = ", ".join(values[:-1]) + f", and {values[-1]}"
        return error(
            400,
            f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this "
            f"model. Supported values are: {listed}.",
        )
    return None


# (type, code) as api.openai.com sends them.
_OPENAI_ERRORS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "unknown_url"),
    429: ("requests", "rate_limit_exceeded"),
}


class GeminiServer(FakeLLMServer):
    """``POST /{version}/models/{model}:generateContent`` of the Gemini API (API-key mode).

    The key must come as the ``x-goog-api-key`` header (or ``?key=``), as Google requires.
    """

    PATH = re.compile(r"/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):generateContent")
    _ids = itertools.count(1)

    def _refusal(self, request: RecordedRequest) -> Reply | None:
        if request.method != "POST" or not self.PATH.fullmatch(request.path):
            return error(404, f"The requested URL {request.path} was not found on this server.")
        if not request.headers.get("x-goog-api-key") and not request.query.get("key"):
            return error(
                403,
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity.",
            )
        if not isinstance(request.body, dict):
            return error(400, "Invalid JSON payload received.")
        match = self.PATH.fullmatch(request.path)
        assert match is not None
        return _gemini_thinking_refusal(match["model"], request.body)

    def _success_body(self, reply: Reply, request: RecordedRequest) -> JsonObject:
        match = self.PATH.fullmatch(request.path)
        assert match is not None  # _refusal() let only matching paths through
        content: JsonObject = {"role": "model"}
        if reply.text is not None:
            content["parts"] = [{"text": reply.text}]
        usage: JsonObject = {
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": reply.output_tokens,
            "totalTokenCount": reply.input_tokens + reply.output_tokens,
        }
        if reply.cached_tokens:  # Google omits the field when nothing was cached
            usage["cachedContentTokenCount"] = reply.cached_tokens
        finish = "MAX_TOKENS" if reply.finish_reason == "length" else "STOP"
        return {
            "candidates": [{"content": content, "finishReason": finish, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": match["model"],
            "responseId": f"fake-{next(self._ids)}",
        }

    def _error_body(self, status: int, message: str) -> JsonObject:
        fallback = "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"
        return {
            "error": {
                "code": status,
                "message": message,
                "status": _GOOGLE_STATUSES.get(status, fallback),
            }
        }


def _gemini_thinking_refusal(model: str, body: JsonObject) -> Reply | None:
    """What the Gemini API refuses of a thinking configuration.

    "Budget 0 is invalid. This model only works in thinking mode." is Gemini 2.5 Pro's answer
    as users report it; the other wordings paraphrase ai.google.dev/gemini-api/docs/thinking
    (2.x takes no level, a request takes a level or a budget, not both; 2.0 does not think).
    """
    config = body.get("generationConfig")
    thinking = config.get("thinkingConfig") if isinstance(config, dict) else None
    if not isinstance(thinking, dict):
        return None
    # Protobuf's JSON takes a field's lowerCamel name or its own; google-genai sends the latter.
    budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
    level = thinking.get("thinkingLevel", thinking.get("thinking_level"))
    if budget is not None and level is not None:
        return error(400, "You cannot use both thinking_level and the legacy thinking_budget "
                          "parameter in the same request.")  # fmt: skip
    if model.startswith("gemini-2.0"):
        return error(400, "Thinking is not supported for this model.")
    if model.startswith("gemini-2.5") and level is not None:
        return error(400, "Thinking level is not supported for this model.")
    if model.startswith("gemini-2.5-pro") and budget == 0:
        return error(400, "Budget 0 is invalid. This model only works in thinking mode.")
    return None


# google.rpc.Code names by HTTP status, as Google APIs map them.
_GOOGLE_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

SERVERS: dict[str, type[FakeLLMServer]] = {"openai": OpenAIServer, "gemini": GeminiServer}

# OpenAI's prompt caching (platform.openai.com/docs/guides/prompt-caching): a prompt of 1,024
# tokens or more is read from the cache for the longest prefix an earlier request left there,
# in steps of 128 tokens from 1,024; requests are routed to a cache by their
# ``prompt_cache_key`` (here each key is its own cache; requests without one share one). No
# eviction: a prefix stays for the server's life (OpenAI keeps one 5 minutes to an hour idle).
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128
# Tokens are counted as every 4 characters one: a deterministic stand-in for a tokenizer
# (English text and code average about 4 characters a token in OpenAI's tokenizers).
CHARS_PER_TOKEN = 4


def token_count(text: str) -> int:
    """``text``'s tokens by the fake's rule: 4 characters each, the last one partial."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def openai_prompt(body: JsonObject) -> str:
    """What OpenAI's cache sees of a chat request, in order: the output schema (it comes
    before the system message), then each message's role and content."""
    parts = []
    if body.get("response_format"):
        parts.append(json.dumps(body["response_format"], sort_keys=True))
    for message in body.get("messages") or []:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
        parts.append(f"{message.get('role')}\n{text}")
    return "\n".join(parts)


class PrefixCache:
    """OpenAI's prompt cache as documented (see ``CACHE_MIN_TOKENS``), thread-safe."""

    def __init__(self) -> None:
        self._seen: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def serve(self, key: str, prompt: str) -> tuple[int, int]:
        """``prompt``'s tokens and those the cache under ``key`` serves; the cache then
        holds every prefix of ``prompt`` it may serve later."""
        total = token_count(prompt)
        step = CACHE_STEP_TOKENS * CHARS_PER_TOKEN
        start = CACHE_MIN_TOKENS * CHARS_PER_TOKEN
        digest = hashlib.sha256(prompt[:start].encode())
        prefixes: list[tuple[int, str]] = []
        for end in range(start, total * CHARS_PER_TOKEN + 1, step):
            if end > start:
                digest.update(prompt[end - step : end].encode())
            prefixes.append((end // CHARS_PER_TOKEN, digest.copy().hexdigest()))
        with self._lock:
            seen = self._seen.setdefault(key, set())
            cached = 0
            for tokens, prefix in prefixes:
                if prefix not in seen:
                    break
                cached = tokens
            seen.update(prefix for _, prefix in prefixes)
        return total, cached


BENCH_TEXT = '{"score": 50, "reasoning": "fake"}'  # the answer to a request without a schema

# -- answers that match the request's schema ------------------------------------------------

FAKE_INTEGER = 50
FAKE_STRING = "fake"


def request_schema(body: Any) -> JsonObject | None:
    """The JSON schema a request asks the answer to follow, or None.

    OpenAI: ``response_format.json_schema.schema`` (JSON mode and plain prompts carry no
    machine-readable schema). Gemini: ``generationConfig.responseJsonSchema`` (what
    google-genai sends for ``response_json_schema``), else the OpenAPI-style
    ``responseSchema``.
    """
    if not isinstance(body, dict):
        return None
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    config = body.get("generationConfig")
    if isinstance(config, dict):
        for name in ("responseJsonSchema", "responseSchema"):
            schema = config.get(name)
            if isinstance(schema, dict):
                return schema
    return None


def schema_answer(schema: JsonObject) -> Any:
    """A deterministic value valid against ``schema``.

    Integers 50 (raised to a minimum, lowered to a maximum), numbers likewise,
    strings "fake" (padded or cut to minLength/maxLength), booleans true, null None, enums and
    consts their (first) value, arrays of minItems items (at least one, unless maxItems is
    0), objects with their required properties. ``anyOf``/``oneOf`` take the first branch,
    ``allOf`` is merged, local ``$ref`` (``#/$defs/...``) is followed. Gemini's OpenAPI-style
    upper-case types (``"OBJECT"``) are understood too.
    """
    return _answer(schema, schema, depth=0)


def _answer(schema: Any, root: JsonObject, depth: int) -> Any:
    if depth > 32:
        raise ValueError("the schema nests too deeply (a recursive $ref?)")
    if not isinstance(schema, dict):  # True, {} or junk: anything goes
        return FAKE_STRING
    if "$ref" in schema:
        return _answer(_resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf"):
        if schema.get(combinator):
            branches = [b for b in schema[combinator] if _type_of(b) != "null"]
            return _answer((branches or schema[combinator])[0], root, depth + 1)
    if schema.get("allOf"):
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = _resolve(part["$ref"], root) if "$ref" in part else part
            properties = {**merged.get("properties", {}), **part.get("properties", {})}
            required = [*merged.get("required", []), *part.get("required", [])]
            merged = {**merged, **part, "properties": properties, "required": required}
        return _answer(merged, root, depth + 1)
    kind = _type_of(schema)
    if kind == "object":
        properties = schema.get("properties") or {}
        return {
            name: _answer(properties.get(name, {}), root, depth + 1)
            for name in schema.get("required", [])
        }
    if kind == "array":
        count = max(int(schema.get("minItems", 0)), 1)
        if "maxItems" in schema:
            count = min(count, int(schema["maxItems"]))
        prefix = schema.get("prefixItems") or []
        return [
            _answer(prefix[i] if i < len(prefix) else schema.get("items", {}), root, depth + 1)
            for i in range(count)
        ]
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    text = FAKE_STRING
    low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
    text = text.ljust(low, "e")
    return text if high is None else text[: int(high)]


def _type_of(schema: Any) -> str:
    """The schema's type, lower-cased; the first non-null one of a list; guessed if absent."""
    if not isinstance(schema, dict):
        return ""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [str(k).lower() for k in kind]
        return next((k for k in kinds if k != "null"), kinds[0] if kinds else "")
    if isinstance(kind, str):
        return kind.lower()
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return "string"


def _number(schema: JsonObject, *, integer: bool) -> int | float:
    def bound(name: str) -> float | None:
        value = schema.get(name)
        # draft 4 spelled exclusive bounds as booleans beside minimum/maximum
        return None if isinstance(value, bool) or value is None else value

    # 50, raised to the lowest value the schema allows and lowered to the highest.
    value: float = FAKE_INTEGER
    if (low := bound("minimum")) is not None:
        least = math.ceil(low) if integer else low
        if schema.get("exclusiveMinimum") is True and least == low:
            least += 1
        value = max(value, least)
    elif (low := bound("exclusiveMinimum")) is not None:
        value = max(value, math.floor(low) + 1)
    if (high := bound("maximum")) is not None:
        most = math.floor(high) if integer else high
        if schema.get("exclusiveMaximum") is True and most == high:
            most -= 1
        value = min(value, most)
    elif (high := bound("exclusiveMaximum")) is not None:
        value = min(value, math.ceil(high) - 1)
    return int(value) if integer else value


def _resolve(reference: str, root: JsonObject) -> Any:
    if not reference.startswith("#"):
        raise ValueError(f"only local $ref are supported, not {reference!r}")
    node: Any = root
    for part in reference.lstrip("#").strip("/").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def schema_text(body: Any) -> str:
    """The text of an answer to ``body``: JSON valid against its schema, else ``BENCH_TEXT``."""
    schema = request_schema(body)
    return BENCH_TEXT if schema is None else json.dumps(schema_answer(schema))


def schema_reply(body: JsonObject) -> Reply:
    """A default reply factory (``default=schema_reply``): answers match the request's schema."""
    return ok(schema_text(body))


def main(argv: list[str] | None = None) -> int:
    """Serve one fake until SIGTERM/SIGINT; for benchmarks that run the server in a subprocess."""
    parser = argparse.ArgumentParser(prog="python -m tests.sejury_web.llm.fake_servers")
    parser.add_argument("protocol", choices=sorted(SERVERS))
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--prefix-cache",
        action="store_true",
        help="openai: count prompt and cached tokens as OpenAI's prompt cache would",
    )
    args = parser.parse_args(argv)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    options: dict[str, Any] = {"prefix_cache": True} if args.prefix_cache else {}
    server = SERVERS[args.protocol](
        latency=args.latency, port=args.port, default=schema_reply, **options
    )
    # SIGUSR1: print the count so far, so that a benchmark can count the requests of a phase.
    signal.signal(signal.SIGUSR1, lambda *_: print(server.counts_line(), flush=True))
    with server:
        print(f"URL {server.url}", flush=True)
        stop.wait()
    print(server.counts_line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
