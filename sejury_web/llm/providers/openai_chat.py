"""OpenAI chat completions, and every server that speaks them (vLLM, Ollama, llama.cpp).

What a request carries comes from the model table (``sejury_web.llm.models_table``): a
reasoning model gets no temperature and its reasoning effort, OpenAI itself gets the newer
``max_completion_tokens`` and a ``prompt_cache_key``. Two things are learned from the server
and remembered per server and model, so that later calls start right:

- Structured output is asked for in the strongest form the server accepts: a JSON schema,
  else JSON mode, else the schema spelled out in the prompt. A server that refuses a form
  with 400 or 422 is asked again at once in the next one.
- A 400 or 422 naming a parameter as unsupported (``'temperature' does not support 0 with
  this model``, ``Unrecognized request argument supplied: reasoning_effort``) drops that
  parameter and asks again at once; a refused ``max_tokens`` is sent under its other name.
  The completion lists what was dropped, and the call's log row records it.
"""

import re
import threading
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import httpx2
import openai
from openai._base_client import SyncHttpxClientWrapper

from ..answers import schema_instruction, strict_compatible
from ..config import Target
from ..models_table import UNKNOWN_OPENAI, family_for, reasoning_parameter
from ..types import JSONSchema, Message, Provider
from .base import (
    TIMED_OUT,
    UNREACHABLE,
    Completion,
    ProviderError,
    http_error,
    retry_after_parse,
    tls_context,
)

MODES = ("json_schema", "json_object", "prompt")
REFUSED_FORMAT_STATUS = frozenset({400, 422})
# The parameters a server may refuse and the call still make sense without. The output
# limit is never dropped, only renamed: an answer without its limit could cost anything.
DROPPABLE = ("temperature", "reasoning_effort", "prompt_cache_key")
OUTPUT_LIMITS = ("max_completion_tokens", "max_tokens")
REFUSAL_CODES = frozenset({"unsupported_parameter", "unsupported_value", "unknown_parameter"})
REFUSAL_WORDS = (
    "unsupported",
    "not supported",
    "unrecognized",
    "unknown",
    "extra inputs are not permitted",
    "not permitted",
    "not allowed",
)

MALFORMED = "{url} sent a response that is not a chat completion ({error})"
REFUSAL = "the model refused to answer: {refusal}"
NO_CHOICE = "the server returned no choices"


def openai_client(
    *, api_key: str, base_url: str, timeout: float, max_retries: int
) -> openai.OpenAI:
    """An SDK client as the SDK makes it for itself (its HTTP client closes its connections
    when dropped), on the process's one TLS context."""
    http_client = SyncHttpxClientWrapper(timeout=timeout, verify=tls_context())
    return openai.OpenAI(
        api_key=api_key,
        base_url=base_url or None,
        timeout=timeout,
        max_retries=max_retries,
        http_client=http_client,
    )


@lru_cache(maxsize=32)
def _client(api_key: str, base_url: str, timeout: float) -> openai.OpenAI:
    # One client per server: it is thread-safe and keeps its connections alive.
    return openai_client(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)


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


@dataclass(frozen=True)
class Learned:
    """What a server refused of a model's requests: where its next request starts."""

    mode_index: int = 0  # into MODES
    dropped: frozenset[str] = field(default_factory=frozenset)
    output_limit: str = ""  # the output-token parameter's name; "" for the table's


_learned_lock = threading.Lock()
_learned: dict[tuple[str, str], Learned] = {}  # (base_url, model) -> what was learned


def learned_for(target: Target) -> Learned:
    with _learned_lock:
        return _learned.get((target.base_url, target.model), Learned())


def _remember(target: Target, learned: Learned) -> None:
    with _learned_lock:
        _learned[(target.base_url, target.model)] = learned


def learned_set(target: Target, learned: Learned) -> None:
    """Start ``target``'s next requests from ``learned`` (a test that knows its server)."""
    _remember(target, learned)


def learned_forget() -> None:
    """Forget every server (a fake server's port may be reused by another)."""
    with _learned_lock:
        _learned.clear()


def chat_body(
    target: Target,
    messages: list[Message],
    *,
    schema: JSONSchema,
    temperature: float,
    max_output_tokens: int | None,
    reasoning: str = "",
    cache_group: str = "",
    learned: Learned | None = None,
) -> dict[str, Any]:
    """The body of a chat completion request, as sent to ``/v1/chat/completions``.

    The synchronous call and a batch file's line are built here, so they are the same.
    """
    learned = learned or Learned()
    family = family_for(Provider.OPENAI, target.model)
    mode = MODES[learned.mode_index]
    chat: list[dict[str, str]] = [{"role": m.role, "content": m.content} for m in messages]
    if mode != "json_schema":
        chat.insert(0, {"role": "system", "content": schema_instruction(schema)})
    body: dict[str, Any] = {"model": target.model, "messages": chat}
    if family.temperature and "temperature" not in learned.dropped:
        body["temperature"] = temperature
    effort = reasoning_parameter(Provider.OPENAI, target.model, reasoning).effort
    if effort and "reasoning_effort" not in learned.dropped:
        body["reasoning_effort"] = effort
    # OpenAI's own models (on its API, or a proxy to it) route a request to the cache its
    # key names; a server we know nothing of is not sent a field it never asked for.
    if cache_group and family is not UNKNOWN_OPENAI and "prompt_cache_key" not in learned.dropped:
        body["prompt_cache_key"] = cache_group[:64]
    response_format = _response_format(mode, schema)
    if response_format is not None:
        body["response_format"] = response_format
    if max_output_tokens is not None:
        # OpenAI itself wants the newer name; compatible servers all know the older one (a
        # proxy to a reasoning model that refuses it gets the newer one on its next try).
        default = "max_tokens" if target.base_url else family.output_limit
        body[learned.output_limit or default] = max_output_tokens
    return body


def refused_parameter(error: openai.APIStatusError) -> str:
    """The parameter a 400/422 says the server or model does not take; "" if none."""
    if error.status_code not in REFUSED_FORMAT_STATUS:
        return ""
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error", body)
    inner = inner if isinstance(inner, dict) else {}
    message = _error_message(error)
    lowered = message.lower()
    if inner.get("code") not in REFUSAL_CODES and not any(w in lowered for w in REFUSAL_WORDS):
        return ""
    names = DROPPABLE + OUTPUT_LIMITS
    param = inner.get("param")
    if param in names:
        return str(param)
    for name in names:
        if re.search(rf"(?<![\w.]){name}(?![\w.])", message):
            return name
    return ""


def _after_refusal(learned: Learned, body: dict[str, Any], param: str) -> Learned | None:
    """What to send next after ``param`` of ``body`` was refused; None: nothing helps."""
    if param not in body:
        return None  # refused something we did not send: not ours to fix
    if param in OUTPUT_LIMITS:
        if learned.output_limit:
            return None  # both names refused
        other = OUTPUT_LIMITS[1 - OUTPUT_LIMITS.index(param)]
        return replace(learned, output_limit=other)
    return replace(learned, dropped=learned.dropped | {param})


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
        reasoning: str = "",
        cache_group: str = "",
    ) -> Completion:
        learned = learned_for(self.target)
        while True:
            body = chat_body(
                self.target,
                messages,
                schema=schema,
                temperature=temperature,
                max_output_tokens=max_output_tokens,
                reasoning=reasoning,
                cache_group=cache_group,
                learned=learned,
            )
            try:
                completion = self._send(body, MODES[learned.mode_index])
            except openai.APIStatusError as error:
                param = refused_parameter(error)
                after = _after_refusal(learned, body, param) if param else None
                if after is not None:
                    learned = after
                    continue
                if _refuses_format(error) and learned.mode_index + 1 < len(MODES):
                    learned = replace(learned, mode_index=learned.mode_index + 1)
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
            # Remembered only once a request worked: a 400 for another reason (a prompt too
            # long, say) must not downgrade the server for good.
            _remember(self.target, learned)
            return replace(completion, dropped=tuple(sorted(learned.dropped)))

    def _send(self, body: dict[str, Any], mode: str) -> Completion:
        response = self.client.chat.completions.create(**body)
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
