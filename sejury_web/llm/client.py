"""``complete(request) -> response``: the one way the product talks to a model.

A call is answered from the log when an identical request already succeeded; otherwise it
goes to the provider through the machine-wide limits, is retried with exponential backoff and
jitter on rate limits, server errors, timeouts and lost connections (honouring
``Retry-After``), and is asked once more, with the validation error, when the answer does not
match the schema. Whatever happens ends in exactly one ``LLMCall`` row.

Do not call ``complete`` inside ``transaction.atomic``: the row is written when the call ends,
and on SQLite an open write transaction would hold the database while the model thinks.
"""

import dataclasses
import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db import connection

from .answers import AnswerInvalid, answer_parse, correction, schema_check
from .config import LLMSettings, Target, llm_settings
from .limits import ProviderLimiter
from .models import LLMCall
from .models_table import reasoning_check
from .offline import offline_answer
from .prices import call_cost
from .providers import adapter_for
from .providers.base import Completion, ProviderError
from .types import (
    CachePolicy,
    LLMError,
    LLMParseError,
    LLMRequest,
    LLMResponse,
    Message,
    Provider,
)

logger = logging.getLogger(__name__)

RATE_LIMITED = (
    "{error} — the server asks to wait {seconds:.0f} s, longer than SEJURY_LLM_RETRY_AFTER_MAX"
)
INTERRUPTED = "interrupted before an answer: {error!r}"
BAD_INPUTS = "LLMRequest.inputs must be JSON (no NaN, no Decimal, no sets): {error}"
GAVE_UP = "gave up after {attempts} attempts: {error}"
PARSE_FAILED = "the model's answer did not match the schema twice: {error}"
TRUNCATED = (
    "the answer was cut off at the output token limit ({tokens} tokens, finish reason "
    "'length') before it was complete: {error}. Nothing was guessed from it; raise the "
    "request's max_output_tokens or the server's context size"
)
_SQLITE_WRITES = threading.Lock()
COST_QUANTUM = Decimal("0.00000001")  # LLMCall.cost_usd's precision
OFFLINE_FAILED = "the offline heuristic cannot answer: {error}"


def request_hash(target: Target, request: LLMRequest) -> str:
    """The cache key: provider, server, model, sampling, reasoning, messages and schema.

    The offline heuristic answers from ``inputs``, not from the messages, so for it the
    inputs are part of the key too (and its model name carries the rules' version).
    """
    key: dict[str, Any] = {
        "provider": str(target.provider),
        "base_url": target.base_url,
        "model": target.model,
        "temperature": float(request.temperature),  # 0 and 0.0 are the same request
        "max_output_tokens": request.max_output_tokens,
        "messages": [[m.role, m.content] for m in request.messages],
        "schema": request.schema,
    }
    if request.reasoning:  # only when set: the keys of earlier calls stay as they were
        key["reasoning"] = request.reasoning
    if target.provider == Provider.OFFLINE:
        key["inputs"] = request.inputs
    canonical = json.dumps(key, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass
class _Attempts:
    """What the attempts of one call added up to."""

    started: float = field(default_factory=time.monotonic)
    count: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    raw_text: str = ""
    output_mode: str = ""
    dropped: tuple[str, ...] = ()  # parameters the server refused, so not sent
    # Dollars, summed per completion (a price tier depends on one request's size); None
    # as soon as one completion's price is unknown.
    cost_usd: Decimal | None = Decimal(0)

    def add(self, completion: Completion, target: Target) -> None:
        cost = call_cost(
            target.model,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cached_tokens=completion.cached_tokens,
            local=target.local,
        )
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        self.cached_tokens += completion.cached_tokens
        self.raw_text = completion.text
        self.output_mode = completion.output_mode
        self.dropped = completion.dropped


def _backoff(settings: LLMSettings, attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        # The server said when; a little jitter keeps many workers from returning at once.
        return retry_after + random.uniform(0, min(1.0, 0.1 * retry_after + 0.01))  # noqa: S311
    ceiling = min(settings.backoff_max, settings.backoff_base * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - "equal jitter"


def complete(request: LLMRequest, *, settings: LLMSettings | None = None) -> LLMResponse:
    """Answer ``request``: from the cache, the offline heuristic or the provider.

    Raises ``LLMError`` (``LLMParseError`` for answers that never matched the schema) after
    storing the failure; the exception's ``call_id`` names the row.
    """
    try:
        json.dumps(request.inputs, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(BAD_INPUTS.format(error=error)) from None
    settings = settings or llm_settings()
    if request.max_output_tokens is None and settings.max_output_tokens:
        # Before the cache key: a limit changes what the model may answer.
        request = dataclasses.replace(request, max_output_tokens=settings.max_output_tokens)
    target = settings.target(request)
    if request.reasoning and target.provider != Provider.OFFLINE:
        # A setting the model cannot take is the caller's error, said before any call.
        reasoning_check(target.provider, target.model, request.reasoning)
    key = request_hash(target, request)
    if request.cache == CachePolicy.USE:
        cached = _cached_call(key)
        if cached is not None:
            return _response(cached, from_cache=True)
    if target.provider == Provider.OFFLINE:
        return _complete_offline(request, target, key)
    return _complete_remote(request, target, key, settings)


def _cached_call(key: str) -> LLMCall | None:
    """The newest successful call with this key.

    Most lookups miss, so the miss is one indexed SELECT by hand: building the ORM query
    costs more CPU than running it, and a worker thread's CPU is what throughput is made of.
    """
    table = connection.ops.quote_name(LLMCall._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {table} WHERE request_hash = %s AND status = %s "  # noqa: S608
            "ORDER BY id DESC LIMIT 1",
            [key, LLMCall.Status.OK],
        )
        found = cursor.fetchone()
    return LLMCall.objects.get(pk=found[0]) if found else None


def _complete_offline(request: LLMRequest, target: Target, key: str) -> LLMResponse:
    attempts = _Attempts(count=1)
    try:
        answer = offline_answer(purpose=request.purpose, inputs=request.inputs)
        schema_check(answer, request.schema)
    except (ValueError, AnswerInvalid) as error:
        message = OFFLINE_FAILED.format(error=error)
        row = _store(request, target, key, attempts, status=LLMCall.Status.ERROR, error=message)
        raise LLMError(message, call_id=row.pk) from error
    attempts.raw_text = json.dumps(answer, ensure_ascii=False, indent=1)
    row = _store(request, target, key, attempts, status=LLMCall.Status.OK, answer=answer)
    return _response(row, from_cache=False)


def _complete_remote(
    request: LLMRequest, target: Target, key: str, settings: LLMSettings
) -> LLMResponse:
    adapter = adapter_for(target)
    limiter = ProviderLimiter(
        key=target.limit_key,
        max_concurrency=settings.max_concurrency,
        rpm=settings.rpm,
        lock_dir=settings.lock_dir,
    )
    conversation = list(request.messages)
    attempts = _Attempts()
    corrected = False
    failures = 0  # transport failures; a schema correction is not one
    try:
        while True:
            attempts.count += 1
            try:
                with limiter.slot():
                    completion = adapter.send(
                        conversation,
                        schema=request.schema,
                        temperature=request.temperature,
                        max_output_tokens=request.max_output_tokens,
                        reasoning=request.reasoning,
                        cache_group=request.cache_group,
                    )
            except ProviderError as error:
                failures += 1
                entry: dict[str, Any] = {"attempt": attempts.count, "error": str(error)}
                if error.status is not None:
                    entry["status"] = error.status
                if error.retry_after is not None and error.retry_after > settings.retry_after_max:
                    # A daily quota says "come back in hours": a clear error now beats a worker
                    # asleep until then.
                    error = ProviderError(
                        RATE_LIMITED.format(error=error, seconds=error.retry_after),
                        retryable=False,
                        status=error.status,
                    )
                if not error.retryable or failures >= settings.max_attempts:
                    attempts.log.append(entry)
                    message = (
                        GAVE_UP.format(attempts=failures, error=error)
                        if error.retryable
                        else str(error)
                    )
                    row = _store(
                        request, target, key, attempts, status=LLMCall.Status.ERROR, error=message
                    )
                    raise LLMError(message, call_id=row.pk) from error
                wait = _backoff(settings, failures, error.retry_after)
                entry["wait_s"] = round(wait, 3)
                attempts.log.append(entry)
                logger.info("%s: attempt %d failed (%s); retrying in %.2fs", request.purpose,
                            attempts.count, error, wait)  # fmt: skip
                time.sleep(wait)
                continue
            attempts.add(completion, target)
            try:
                answer = answer_parse(completion.text, request.schema)
            except AnswerInvalid as error:
                attempts.log.append(
                    {"attempt": attempts.count, "error": str(error), "raw_text": completion.text}
                )
                truncated = completion.finish_reason == "length"
                if corrected or truncated:
                    # Asking again under the same limit would be cut off again: a clear
                    # failure at once, never a half object completed by guesswork.
                    message = (
                        TRUNCATED.format(tokens=completion.output_tokens, error=error)
                        if truncated
                        else PARSE_FAILED.format(error=error)
                    )
                    row = _store(
                        request,
                        target,
                        key,
                        attempts,
                        status=LLMCall.Status.PARSE_FAILURE,
                        error=message,
                    )
                    raise LLMParseError(message, call_id=row.pk) from error
                corrected = True
                conversation += [
                    Message("assistant", completion.text),
                    Message("user", correction(str(error), request.schema)),
                ]
                continue
            row = _store(request, target, key, attempts, status=LLMCall.Status.OK, answer=answer)
            return _response(row, from_cache=False)
    except LLMError:
        raise
    except BaseException as error:
        # A Celery time limit, a shutdown, a response the SDK could not even represent:
        # the call still ends in a row, then the exception goes on.
        with suppress(Exception):
            message = INTERRUPTED.format(error=error)
            _store(request, target, key, attempts, status=LLMCall.Status.ERROR, error=message)
        raise


def _store(
    request: LLMRequest,
    target: Target,
    key: str,
    attempts: _Attempts,
    *,
    status: str,
    answer: dict[str, Any] | None = None,
    error: str = "",
) -> LLMCall:
    row = call_row(
        request,
        target,
        key,
        status=status,
        answer=answer,
        error=error,
        output_mode=attempts.output_mode,
        dropped=attempts.dropped,
        raw_text=attempts.raw_text,
        attempts=attempts.count,
        attempt_log=attempts.log,
        input_tokens=attempts.input_tokens,
        output_tokens=attempts.output_tokens,
        cached_tokens=attempts.cached_tokens,
        latency_s=time.monotonic() - attempts.started,
        cost_usd=attempts.cost_usd,
    )
    # One INSERT in autocommit: the shortest write transaction there is. On SQLite, threads
    # of one process queue on a lock here instead of in SQLite's busy handler, which sleeps
    # in steps of up to 100 ms when it finds the database locked.
    with _SQLITE_WRITES if connection.vendor == "sqlite" else nullcontext():
        row.save(force_insert=True)
    return row


def call_row(
    request: LLMRequest,
    target: Target,
    key: str,
    *,
    status: str,
    answer: dict[str, Any] | None = None,
    error: str = "",
    output_mode: str = "",
    dropped: Sequence[str] = (),
    batch: bool = False,
    raw_text: str = "",
    attempts: int = 1,
    attempt_log: list[dict[str, Any]] | None = None,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cached_tokens: int = 0,
    latency_s: float = 0.0,
    cost_usd: Decimal | None = None,
) -> LLMCall:
    """A call's one log row, not saved yet: a synchronous call's (``_store``) and a batch
    line's (``sejury_web.llm.batch.results``) alike. ``settings`` records what the call asked
    for besides its messages: sampling, the output form the server took, the reasoning
    setting, the parameters the server refused (``dropped``), and ``batch``."""
    settings: dict[str, Any] = {
        "temperature": request.temperature,
        "max_output_tokens": request.max_output_tokens,
        "output_mode": output_mode,
    }
    if request.reasoning:
        settings["reasoning"] = request.reasoning
    if dropped:
        settings["dropped"] = list(dropped)
    if batch:
        settings["batch"] = True
    return LLMCall(
        purpose=request.purpose,
        provider=target.provider,
        model=target.model,
        base_url=target.base_url,
        request_hash=key,
        settings=settings,
        messages=[{"role": m.role, "content": m.content} for m in request.messages],
        schema=request.schema,
        inputs=request.inputs,
        status=status,
        raw_text=raw_text,
        answer=answer,
        error=error,
        attempts=max(1, attempts),
        attempt_log=attempt_log or [],
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        latency_s=latency_s,
        cost_usd=cost_usd.quantize(COST_QUANTUM) if cost_usd is not None else None,
    )


def _response(row: LLMCall, *, from_cache: bool) -> LLMResponse:
    assert row.answer is not None
    return LLMResponse(
        answer=row.answer,
        raw_text=row.raw_text,
        provider=Provider(row.provider),
        model=row.model,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_tokens=row.cached_tokens,
        latency_s=row.latency_s,
        cost_usd=row.cost_usd,
        from_cache=from_cache,
        call_id=row.pk,
    )
