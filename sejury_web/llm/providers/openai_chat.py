"""OpenAI chat completions, and every server that speaks them (vLLM, Ollama, llama.cpp).

Structured output is asked for in the strongest form the server accepts: a JSON schema, else
JSON mode, else the schema spelled out in the prompt. A server that refuses a form with 400
or 422 is asked again at once in the next one, and remembered, so later calls start there.
"""

import threading
from functools import lru_cache
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletionMessageParam

from ..answers import schema_instruction, strict_compatible
from ..config import Target
from ..types import JSONSchema, Message
from .base import (
    TIMED_OUT,
    UNREACHABLE,
    Completion,
    ProviderError,
    http_error,
    retry_after_parse,
)

MODES = ("json_schema", "json_object", "prompt")
REFUSED_FORMAT_STATUS = frozenset({400, 422})

MALFORMED = "{url} sent a response that is not a chat completion ({error})"
REFUSAL = "the model refused to answer: {refusal}"
NO_CHOICE = "the server returned no choices"

_mode_lock = threading.Lock()
_modes: dict[tuple[str, str], int] = {}  # (base_url, model) -> index into MODES


@lru_cache(maxsize=32)
def _client(api_key: str, base_url: str, timeout: float) -> openai.OpenAI:
    # One client per server: it is thread-safe and keeps its connections alive.
    return openai.OpenAI(api_key=api_key, base_url=base_url or None, timeout=timeout, max_retries=0)


def _response_format(mode: str, schema: JSONSchema) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "schema": schema,
                "strict": strict_compatible(schema),
            },
        }
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _refuses_format(error: openai.APIStatusError) -> bool:
    """A 400/422 about structured output, not about the prompt (its length, say)."""
    if error.status_code not in REFUSED_FORMAT_STATUS:
        return False
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error", body)
    if isinstance(inner, dict) and inner.get("param") == "response_format":
        return True
    text = _error_message(error).lower()
    return any(word in text for word in ("response_format", "json_schema", "json mode", "json"))


def _error_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return error.message


class OpenAIChatAdapter:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.client = _client(target.api_key, target.base_url, target.timeout)
        self.url = target.base_url or "api.openai.com"

    def send(
        self,
        messages: list[Message],
        *,
        schema: JSONSchema,
        temperature: float,
        max_output_tokens: int | None,
    ) -> Completion:
        server = (self.target.base_url, self.target.model)
        with _mode_lock:
            mode_index = _modes.get(server, 0)
        while True:
            mode = MODES[mode_index]
            try:
                completion = self._send(messages, schema, temperature, max_output_tokens, mode)
            except openai.APIStatusError as error:
                if _refuses_format(error) and mode_index + 1 < len(MODES):
                    mode_index += 1
                    continue
                raise self._provider_error(error) from error
            except openai.APITimeoutError as error:
                message = TIMED_OUT.format(url=self.url, timeout=self.target.timeout)
                raise ProviderError(message, retryable=True) from error
            except openai.APIConnectionError as error:
                cause = error.__cause__ or error
                message = UNREACHABLE.format(url=self.url, error=cause)
                raise ProviderError(message, retryable=True) from error
            except (ValueError, TypeError, AttributeError, IndexError) as error:
                # A 200 whose body is not a chat completion (HTML from a proxy, a list, no
                # message): the SDK does not validate, so its shape errors surface here.
                message = MALFORMED.format(url=self.url, error=error)
                raise ProviderError(message, retryable=True) from error
            # Remembered only once a form worked: a 400 for another reason (a prompt too
            # long, say) must not downgrade the server for good.
            with _mode_lock:
                _modes[server] = mode_index
            return completion

    def _send(
        self,
        messages: list[Message],
        schema: JSONSchema,
        temperature: float,
        max_output_tokens: int | None,
        mode: str,
    ) -> Completion:
        chat: list[ChatCompletionMessageParam] = [
            {"role": m.role, "content": m.content}  # type: ignore[misc]
            for m in messages
        ]
        if mode != "json_schema":
            chat.insert(0, {"role": "system", "content": schema_instruction(schema)})
        extra: dict[str, Any] = {}
        response_format = _response_format(mode, schema)
        if response_format is not None:
            extra["response_format"] = response_format
        if max_output_tokens is not None:
            # OpenAI itself wants the newer name; compatible servers know only the older one.
            name = "max_tokens" if self.target.base_url else "max_completion_tokens"
            extra[name] = max_output_tokens
        response = self.client.chat.completions.create(
            model=self.target.model, messages=chat, temperature=temperature, **extra
        )
        if not response.choices:
            raise ProviderError(NO_CHOICE, retryable=True)
        choice = response.choices[0]
        message = choice.message
        if getattr(message, "refusal", None):
            raise ProviderError(REFUSAL.format(refusal=message.refusal), retryable=False)
        usage = response.usage
        details = usage.prompt_tokens_details if usage else None
        return Completion(
            text=message.content or "",
            input_tokens=int(usage.prompt_tokens or 0) if usage else 0,
            output_tokens=int(usage.completion_tokens or 0) if usage else 0,
            cached_tokens=int(details.cached_tokens or 0) if details else 0,
            output_mode=mode,
            finish_reason=str(choice.finish_reason or ""),
        )

    def _provider_error(self, error: openai.APIStatusError) -> ProviderError:
        headers: httpx2.Headers = error.response.headers
        return http_error(
            url=self.url,
            status=error.status_code,
            message=_error_message(error),
            retry_after=retry_after_parse(headers.get("retry-after")),
        )
