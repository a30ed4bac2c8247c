"""Plain helpers for the judging tests: fixed model answers, a recording ``ask``, and fake
server replies that carry those answers; a webhook receiver."""

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from judging.models import JudgingRun
from sejury_web.llm import LLMRequest, LLMResponse, Provider
from sejury_web.llm.answers import schema_check
from tests.sejury_web.llm.fake_servers import Reply, ok

# ``judge_now`` and ``resume_now`` (tests/judging/conftest.py): a service, run to the end.
Judge = Callable[..., JudgingRun]

SCORE = {"score": 70, "reasoning": "It returns 2 as the bug asks."}
ANSWERS: dict[str, dict[str, Any]] = {
    # No requirement checked: what the reference and none contexts allow (a rubric's one
    # requirement is checked in ``CHECKED``).
    "judge.rubric": {
        "thought": "The bug asks for 2; the patch returns 2.",
        "verdict": "VALID",
        "justification": "It returns 2.",
        "requirements": [],
    },
    "judge.s2.assess": {"score": 40, "reasons": ["It misses the null check.", "It keeps f()."]},
    "judge.s4.analyze": {"properties": ["f() returns 2", "x is never 1"]},
    "judge.s5.tests": {"tests": [{"name": "test_f_returns_2", "description": "f() == 2"}]},
}

CHECKED = {
    "thought": "Requirement 1 asks for 2; the patch returns 2.",
    "verdict": "VALID",
    "justification": "It meets requirement 1.",
    "requirements": [{"index": 1, "passed": True, "reason": "returns 2"}],
}


class Recorder:
    """An ``ask`` that records each request and answers its purpose with a fixed answer.

    Every answer is checked against the request's schema first: a strategy whose schema
    refuses the answer its prompt asks for fails here, as it would with a real model.
    """

    def __init__(self, answers: dict[str, dict[str, Any]] | None = None) -> None:
        self.answers = {**ANSWERS, **(answers or {})}
        self.requests: list[LLMRequest] = []

    def __call__(self, request: LLMRequest) -> LLMResponse:
        answer = self.answers.get(request.purpose, SCORE)
        schema_check(answer, request.schema)
        self.requests.append(request)
        return LLMResponse(
            answer=answer,
            raw_text=json.dumps(answer),
            provider=Provider.OPENAI,
            model="gpt-4o-mini",
            input_tokens=0,
            output_tokens=0,
            cached_tokens=0,
            latency_s=0.0,
            cost_usd=Decimal(0),
            from_cache=False,
            call_id=len(self.requests),
        )


def reply(answer: dict[str, Any], **usage: Any) -> Reply:
    """A fake server's reply whose text is ``answer`` as JSON."""
    return ok(json.dumps(answer), **usage)


def scored(score: int, **usage: Any) -> Reply:
    return reply({"score": score, "reasoning": f"Scored {score}."}, **usage)


@dataclass
class Call:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook's receiver: every POST it got, and what it answers next, as (status,
    headers) in turn (then 200)."""

    url: str = ""
    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)


@contextlib.contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    """A real local HTTP server in a thread, receiving a run's webhook calls."""
    state = Receiver()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                state.calls.append(Call(dict(self.headers.items()), body))
                status, headers = state.script.pop(0) if state.script else (200, {})
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/sejury?team=a"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
