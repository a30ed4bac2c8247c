"""The values that cross the LLM layer's one call: ``complete(request) -> response``."""

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]
JSONSchema = dict[str, Any]

OFFLINE_MARKER = "offline heuristic — not an LLM"


class Provider(StrEnum):
    GEMINI = "gemini"
    OPENAI = "openai"
    OFFLINE = "offline"


class CachePolicy(StrEnum):
    USE = "use"  # answer an identical earlier request from the log
    REFRESH = "refresh"  # call the provider; the new answer becomes the cached one


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class LLMRequest:
    """One question to a model.

    ``inputs`` are the structured values the messages were rendered from: the offline model
    answers from them, and they are logged with the call. ``provider``, ``model`` and the
    rest of the connection default to the environment (see ``config.py``).
    """

    purpose: str  # what the request is for: its log, and the offline rule that answers it
    messages: tuple[Message, ...]
    schema: JSONSchema
    inputs: dict[str, Any] = field(default_factory=dict)
    provider: Provider | None = None
    model: str | None = None
    temperature: float = 0.0
    max_output_tokens: int | None = None
    cache: CachePolicy = CachePolicy.USE
    # How hard a reasoning model thinks: an effort word ("minimal", "low", "medium", "high")
    # or a thinking budget in tokens ("2048"); "" for the model's default. Part of the
    # cache key. How each model takes it: ``sejury_web.llm.models_table``.
    reasoning: str = ""
    # Requests that share a long prefix (one bug's candidates, one purpose): OpenAI routes
    # them to the same cache as its ``prompt_cache_key``. Not part of the cache key: it
    # changes where a request is served, never its answer.
    cache_group: str = ""


@dataclass(frozen=True)
class LLMResponse:
    answer: dict[str, Any]  # parsed and valid against the request's schema
    raw_text: str
    provider: Provider
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    latency_s: float
    cost_usd: Decimal | None  # None: the model is not in the price table
    from_cache: bool
    call_id: int  # the LLMCall row that holds this answer

    @property
    def is_offline(self) -> bool:
        return self.provider == Provider.OFFLINE

    @property
    def marker(self) -> str:
        """What the UI and exports show next to this answer ('' for a real model)."""
        return OFFLINE_MARKER if self.is_offline else ""


class LLMError(Exception):
    """A call that produced no valid answer; the failure is stored in ``call_id``."""

    def __init__(self, message: str, *, call_id: int | None = None) -> None:
        super().__init__(message)
        self.call_id = call_id


class LLMParseError(LLMError):
    """The model answered twice, and neither answer matched the schema."""
