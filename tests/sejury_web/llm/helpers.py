"""Plain helpers for tests that talk to the LLM layer: a scoring request, and settings that
point the layer at a fake server."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_django.fixtures import Settings

from sejury_web.llm import LLMRequest, Message

from .fake_servers import FakeLLMServer

SCORE_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 100},
        "reasoning": {"type": "string"},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}
GOOD_ANSWER = '{"score": 80, "reasoning": "keeps the null check"}'


def score_request(text: str = "Is this patch correct?", **kw: Any) -> LLMRequest:
    return LLMRequest(
        purpose="judge.s1b",
        messages=(Message("system", "You judge patches."), Message("user", text)),
        schema=SCORE_SCHEMA,
        **kw,
    )


@dataclass
class Provided:
    """A local server of one protocol, with the layer's settings pointing at it."""

    name: str
    server: FakeLLMServer
    model: str


def point_at(settings: Settings, tmp_path: Path, **llm: Any) -> None:
    settings.SEJURY_LLM = {
        **settings.SEJURY_LLM,
        "BACKOFF_BASE": 0.01,
        "BACKOFF_MAX": 0.05,
        "MAX_ATTEMPTS": 3,
        "TIMEOUT": 5.0,
        "LOCK_DIR": tmp_path / "limits",
        # The fake servers listen on the loopback but stand for remote, priced services.
        "LOCAL_FREE": False,
        **llm,
    }
