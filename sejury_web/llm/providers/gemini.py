"""Gemini ``generateContent`` through google-genai, with the schema as structured output.

What a request carries comes from the model table (``sejury_web.llm.models_table``):
Gemini 2.5 thinks within a ``thinking_budget``, Gemini 3 at a ``thinking_level``, and Gemini
3 is not sent a temperature (Google recommends its default). A thinking budget counts
against ``max_output_tokens``, so a request that sets both gets the budget added to its
limit: the answer keeps the room it asked for. A 400 that names the thinking setting or the
temperature as unsupported drops it, asks again at once, and is remembered per server and
model, as the OpenAI adapter does.
"""

import threading
from dataclasses import replace
from functools import lru_cache
from typing import Any

import httpx2
from google import genai
from google.genai import errors, types

from ..config import Target
from ..models_table import family_for, reasoning_parameter
from ..types import JSONSchema, Message, Provider
from .base import (
    TIMED_OUT,
    UNREACHABLE,
    Completion,
    ProviderError,
    http_error,
    retry_after_parse,
    tls_context,
    tls_context_certifi,
)

GEMINI_URL = "generativelanguage.googleapis.com"
MALFORMED = "{url} sent a response that is not a Gemini answer ({error})"
BLOCKED = "Gemini returned no text (finish reason {reason})"
# What a 400 may refuse and the call still make sense without.
DROPPABLE = {"thinking": ("thinking", "budget"), "temperature": ("temperature",)}
REFUSAL_WORDS = ("not supported", "unsupported", "invalid", "not allowed", "only works")

_dropped_lock = threading.Lock()
_dropped: dict[tuple[str, str], frozenset[str]] = {}  # (base_url, model) -> refused


def learned_forget() -> None:
    """Forget what every server refused (a fake server's port may be reused by another)."""
    with _dropped_lock:
        _dropped.clear()


def generate_config(
    target: Target,
    system: str | None,
    *,
    schema: JSONSchema,
    temperature: float,
    max_output_tokens: int | None,
    reasoning: str = "",
    dropped: frozenset[str] = frozenset(),
) -> types.GenerateContentConfig:
    """The request's ``GenerateContentConfig``: the synchronous call's and a batch's."""
    family = family_for(Provider.GEMINI, target.model)
    thinking = reasoning_parameter(Provider.GEMINI, target.model, reasoning)
    config = types.GenerateContentConfig(
        system_instruction=system,
        response_mime_type="application/json",
        response_json_schema=schema,
    )
    if family.temperature and "temperature" not in dropped:
        config.temperature = temperature
    limit = max_output_tokens
    if "thinking" not in dropped:
        if thinking.level:
            config.thinking_config = types.ThinkingConfig(
                thinking_level=types.ThinkingLevel(thinking.level.upper())
            )
        elif thinking.budget is not None:
            config.thinking_config = types.ThinkingConfig(thinking_budget=thinking.budget)
            if limit is not None and thinking.budget > 0:
                limit += thinking.budget
    config.max_output_tokens = limit
    return config


def refused_setting(error: errors.APIError) -> str:
    """What a 400 says the model does not take: "thinking", "temperature" or ""."""
    if int(error.code or 0) != 400:
        return ""
    message = str(error.message or "").lower()
    if not any(word in message for word in REFUSAL_WORDS):
        return ""
    for setting, words in DROPPABLE.items():
        if any(word in message for word in words):
            return setting
    return ""


@lru_cache(maxsize=32)
def _client(api_key: str, base_url: str, timeout: float) -> genai.Client:
    options = types.HttpOptions(
        base_url=base_url or None,
        timeout=int(timeout * 1000),  # milliseconds
        # Structured output (responseJsonSchema) is a v1beta field; the SDK defaults to v1.
        api_version="v1beta",
        retry_options=None,  # the layer retries, and records every attempt
        # The process's TLS contexts, which the SDK would otherwise build for each client:
        # httpx's (verify) and its websockets' (ssl, which it leaves out of httpx's).
        client_args={"verify": tls_context()},
        async_client_args={"verify": tls_context(), "ssl": tls_context_certifi()},
    )
    return genai.Client(api_key=api_key, http_options=options)


def _contents(messages: list[Message]) -> tuple[str | None, list[types.Content]]:
    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    contents = [
        types.Content(
            role="model" if m.role == "assistant" else "user", parts=[types.Part(text=m.content)]
        )
        for m in messages
        if m.role != "system"
    ]
    return system, contents


def _retry_delay(details: Any) -> float | None:
    """Gemini's ``RetryInfo.retryDelay`` ("17s") from an error body, if it sent one."""
    error = details.get("error", details) if isinstance(details, dict) else None
    for detail in (error or {}).get("details", []) if isinstance(error, dict) else []:
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None


def finish_name(response: types.GenerateContentResponse) -> str:
    """Why the first candidate stopped, in Gemini's words ("STOP", "MAX_TOKENS"); "" if none."""
    first = response.candidates[0] if response.candidates else None
    return str(getattr(first.finish_reason, "name", "") or "") if first else ""


def completion_of(response: types.GenerateContentResponse, text: str) -> Completion:
    """The completion of a response whose text is ``text``: a call's or a batch line's."""
    usage = response.usage_metadata
    stopped = finish_name(response)
    return Completion(
        text=text,
        input_tokens=(usage.prompt_token_count or 0) if usage else 0,
        # Gemini 2.5 thinks before it answers; its thoughts are billed as output.
        output_tokens=((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0))
        if usage
        else 0,
        cached_tokens=(usage.cached_content_token_count or 0) if usage else 0,
        output_mode="json_schema",
        finish_reason="length" if stopped == "MAX_TOKENS" else stopped.lower(),
    )


class GeminiAdapter:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.client = _client(target.api_key, target.base_url, target.timeout)
        self.url = target.base_url or GEMINI_URL

    def send(
        self,
        messages: list[Message],
        *,
        schema: JSONSchema,
        temperature: float,
        max_output_tokens: int | None,
        reasoning: str = "",
        cache_group: str = "",  # Gemini caches implicit prefixes with no key to name
    ) -> Completion:
        system, contents = _contents(messages)
        server = (self.target.base_url, self.target.model)
        with _dropped_lock:
            dropped = _dropped.get(server, frozenset())
        while True:
            config = generate_config(
                self.target,
                system,
                schema=schema,
                temperature=temperature,
                max_output_tokens=max_output_tokens,
                reasoning=reasoning,
                dropped=dropped,
            )
            try:
                response = self.client.models.generate_content(
                    model=self.target.model,
                    contents=contents,
                    config=config,
                )
            except errors.APIError as error:
                setting = refused_setting(error)
                sent = config.thinking_config if setting == "thinking" else config.temperature
                if setting and setting not in dropped and sent is not None:
                    dropped = dropped | {setting}
                    continue
                raise self._provider_error(error) from error
            except httpx2.TimeoutException as error:
                message = TIMED_OUT.format(url=self.url, timeout=self.target.timeout)
                raise ProviderError(message, retryable=True) from error
            except httpx2.TransportError as error:
                raise ProviderError(
                    UNREACHABLE.format(url=self.url, error=error), retryable=True
                ) from error
            except (ValueError, TypeError, AttributeError, IndexError) as error:
                # A 200 whose body is not a generateContent response (HTML from a proxy, say).
                message = MALFORMED.format(url=self.url, error=error)
                raise ProviderError(message, retryable=True) from error
            with _dropped_lock:
                _dropped[server] = dropped
            completion = self._completion(response)
            return replace(completion, dropped=tuple(sorted(dropped)))

    def _completion(self, response: types.GenerateContentResponse) -> Completion:
        text = response.text
        if text is None:
            reason = finish_name(response) or "none"
            raise ProviderError(BLOCKED.format(reason=reason), retryable=False)
        return completion_of(response, text)

    def _provider_error(self, error: errors.APIError) -> ProviderError:
        status = int(error.code or 0)
        headers = getattr(error.response, "headers", None) or {}
        retry_after = retry_after_parse(headers.get("retry-after"))
        if retry_after is None:
            retry_after = _retry_delay(error.details)
        return http_error(
            url=self.url, status=status, message=error.message or error, retry_after=retry_after
        )
