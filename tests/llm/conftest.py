from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from sejury_web.llm.providers import openai_chat
from sejury_web.llm.types import LLMRequest, Message

from .fake_servers import FakeLLMServer, GeminiServer, OpenAIServer

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
        **llm,
    }


@pytest.fixture(autouse=True)
def _forget_output_modes() -> Iterator[None]:
    yield
    openai_chat._modes.clear()


@pytest.fixture(params=["openai", "gemini"])
def provided(
    request: pytest.FixtureRequest, settings: Settings, tmp_path: Path
) -> Iterator[Provided]:
    if request.param == "openai":
        with OpenAIServer() as server:
            point_at(
                settings,
                tmp_path,
                PROVIDER="openai",
                OPENAI_API_KEY="sk-test",
                OPENAI_BASE_URL=server.base_url,
            )
            yield Provided("openai", server, "gpt-4o-mini")
    else:
        with GeminiServer() as gemini:
            point_at(
                settings,
                tmp_path,
                PROVIDER="gemini",
                GEMINI_API_KEY="test-key",
                GEMINI_BASE_URL=gemini.url,
            )
            yield Provided("gemini", gemini, "gemini-2.5-pro")
