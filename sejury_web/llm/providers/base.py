"""What every provider adapter shares: the completion, the error, HTTP error wording.

An adapter sends one request and either returns a ``Completion`` or raises a
``ProviderError`` that says whether trying again could help. Retrying, waiting, limits,
parsing and logging belong to ``sejury_web.llm.client``, the same for every provider; the
SDKs' own retries are switched off so that every attempt is seen and recorded.
"""

import email.utils
import os
import ssl
import time
from dataclasses import dataclass
from functools import cache
from typing import Protocol

from ..types import JSONSchema, Message

TIMED_OUT = "no answer from {url} within {timeout:g} s"
UNREACHABLE = "cannot reach {url}: {error}"
HTTP_ERROR = "{url} answered {status}: {message}"


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    output_mode: str  # how the schema was asked for: json_schema, json_object, prompt
    # Why the model stopped, in OpenAI's words: "stop", or "length" when the output token
    # limit cut the answer off (a truncated object must fail, never be guessed at).
    finish_reason: str = ""
    # Parameters this server refused with a 400 (now or on an earlier call) and that were
    # therefore not sent, such as "temperature"; the log and the run page say so.
    dropped: tuple[str, ...] = ()


class ProviderError(Exception):
    """A request that failed; ``retryable`` for rate limits, 5xx, timeouts, lost connections."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class Adapter(Protocol):
    def send(
        self,
        messages: list[Message],
        *,
        schema: JSONSchema,
        temperature: float,
        max_output_tokens: int | None,
        reasoning: str = "",
        cache_group: str = "",
    ) -> Completion: ...


# 408 request timeout, 409 conflict (OpenAI's "try again"), 429 rate limit, and any 5xx.
RETRYABLE_STATUS = frozenset({408, 409, 429})


def status_retryable(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def http_error(
    *, url: str, status: int, message: object, retry_after: float | None
) -> ProviderError:
    """The error of a request the server answered with ``status``."""
    return ProviderError(
        HTTP_ERROR.format(url=url, status=status, message=message),
        retryable=status_retryable(status),
        status=status,
        retry_after=retry_after,
    )


def retry_after_parse(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@cache
def tls_context() -> ssl.SSLContext:
    """The TLS context every SDK client of this process verifies servers with: the one httpx
    builds when told nothing (the trust store ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names,
    else the system's), built once. A client made its own, reading the whole trust store
    again, about 25 ms of CPU each time: every new server, timeout or batch client."""
    import httpx2

    return httpx2.create_ssl_context()


@cache
def tls_context_certifi() -> ssl.SSLContext:
    """The context the Gemini SDK builds for its websockets when told nothing (certifi's
    trust store unless ``SSL_CERT_FILE`` names one), built once, as ``tls_context``."""
    import certifi

    return ssl.create_default_context(
        cafile=os.environ.get("SSL_CERT_FILE", certifi.where()),
        capath=os.environ.get("SSL_CERT_DIR"),
    )
