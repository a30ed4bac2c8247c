"""What a batch job's results make of its requests: an answer, a correction or a retry for
the next round, or a failure, and the one ``LLMCall`` an answer or a failure is written as
(``call_row``: the row ``client.call_row`` builds for a synchronous call, and
``settings["batch"]``, its cost at the batch price).

``results_store`` writes an ended job's results in chunks, each one transaction that claims
its requests with a conditional UPDATE before writing their calls: a worker killed mid-way
leaves the written chunks written, and storing again (after a kill, or by a twin of the
task) writes no request twice.
"""

import dataclasses
from collections.abc import Iterator
from typing import Any, cast

from django.conf import settings as django_settings
from django.db import transaction
from django.utils import timezone

from ..answers import AnswerInvalid, answer_parse
from ..client import GAVE_UP, PARSE_FAILED, TRUNCATED
from ..client import call_row as client_call_row
from ..config import LLMSettings, Target
from ..models import LLMBatch, LLMBatchRequest, LLMCall
from ..prices import call_cost
from ..types import LLMRequest, Message, Provider, Role
from .base import BatchClient, LineResult

NOT_ANSWERED = "the batch ended {status} before answering this request"
JOB_FAILED = "the provider failed the batch: {error}"
STORE_CHUNK = 500  # results stored per transaction (SEJURY_LLM_BATCH_STORE_CHUNK)
# What a result changes of its request (not the request itself, which may be large).
OUTCOME_FIELDS = [
    "status", "call", "attempts", "failures", "attempt_log", "input_tokens", "output_tokens",
    "cached_tokens", "cost_usd", "raw_text", "output_mode", "error",
]  # fmt: skip


def request_json(request: LLMRequest) -> dict[str, Any]:
    return {
        "purpose": request.purpose,
        "messages": [[m.role, m.content] for m in request.messages],
        "schema": request.schema,
        "inputs": request.inputs,
        "provider": str(request.provider or ""),
        "model": request.model or "",
        "temperature": request.temperature,
        "max_output_tokens": request.max_output_tokens,
        "reasoning": request.reasoning,
        "cache_group": request.cache_group,
    }


def request_of(data: dict[str, Any], conversation: list[list[str]] | None = None) -> LLMRequest:
    return LLMRequest(
        purpose=data["purpose"],
        messages=tuple(
            Message(cast(Role, role), content) for role, content in conversation or data["messages"]
        ),
        schema=data["schema"],
        inputs=data["inputs"],
        provider=Provider(data["provider"]) if data["provider"] else None,
        model=data["model"] or None,
        temperature=data["temperature"],
        max_output_tokens=data["max_output_tokens"],
        reasoning=data.get("reasoning", ""),
        cache_group=data.get("cache_group", ""),
    )


def job_target(job: LLMBatch, settings: LLMSettings) -> Target:
    request = LLMRequest(
        purpose="batch", messages=(), schema={}, provider=Provider(job.provider), model=job.model
    )
    return settings.target(request)


def request_fail(row: LLMBatchRequest, target: Target, message: str) -> None:
    request = request_of(row.request)
    with transaction.atomic():
        row.status = LLMBatchRequest.Status.FAILED
        row.error = message
        row.call = call_row(row, request, target, status=LLMCall.Status.ERROR, error=message)
        row.call.save()
        row.save()


def results_store(job: LLMBatch, client: BatchClient | None, settings: LLMSettings) -> None:
    """Every request of the ended job gets its outcome, in chunks of one transaction each;
    a chunk's requests are read when it is written, so the job is never held whole."""
    target = job_target(job, settings)
    pending = {
        f"req-{pk}": pk
        for pk in job.requests.filter(status=LLMBatchRequest.Status.PENDING).values_list(
            "pk", flat=True
        )
    }
    results: Iterator[LineResult] = (
        iter(()) if client is None else client.results(job.provider_batch_id)
    )
    chunk: list[tuple[int, LineResult]] = []
    for result in results:
        pk = pending.pop(result.custom_id, None)
        if pk is None:
            continue  # stored before a kill, or not ours
        chunk.append((pk, result))
        if len(chunk) >= _store_chunk():
            _outcomes_write(job, chunk, target, settings)
            chunk = []
    status = job.provider_status or "without an answer"
    if job.error:
        status = f"{status} ({JOB_FAILED.format(error=job.error)})"
    unanswered = LineResult("", error=NOT_ANSWERED.format(status=status), retryable=True)
    chunk += [(pk, dataclasses.replace(unanswered, custom_id=key)) for key, pk in pending.items()]
    for start in range(0, len(chunk), _store_chunk()):
        _outcomes_write(job, chunk[start : start + _store_chunk()], target, settings)
    job_stored(job)


def job_stored(job: LLMBatch) -> None:
    job.status = LLMBatch.Status.STORED
    job.stored_at = timezone.now()
    job.save(update_fields=["status", "stored_at"])


def _store_chunk() -> int:
    chunk = cast(int, django_settings.SEJURY_LLM.get("BATCH_STORE_CHUNK", STORE_CHUNK))
    return max(1, int(chunk))


def _outcomes_write(
    job: LLMBatch,
    chunk: list[tuple[int, LineResult]],
    target: Target,
    settings: LLMSettings,
) -> None:
    rows = LLMBatchRequest.objects.in_bulk([pk for pk, _result in chunk])
    with transaction.atomic():
        stored: list[LLMBatchRequest] = []
        for pk, result in chunk:
            row = rows[pk]
            _outcome(job, row, result, target, settings)
            # Claimed by a conditional UPDATE: a twin storing the same job at once (a message
            # delivered twice) writes no second LLMCall.
            fields = {name: getattr(row, name) for name in OUTCOME_FIELDS if name != "call"}
            pending = LLMBatchRequest.objects.filter(
                pk=row.pk, status=LLMBatchRequest.Status.PENDING
            )
            if pending.update(**fields) and row.call is not None:
                stored.append(row)
        LLMCall.objects.bulk_create([row.call for row in stored if row.call is not None])
        for row in stored:
            row.call_id = row.call.pk if row.call is not None else None
        LLMBatchRequest.objects.bulk_update(stored, ["call"])


def _outcome(
    job: LLMBatch,
    row: LLMBatchRequest,
    result: LineResult,
    target: Target,
    settings: LLMSettings,
) -> None:
    """What one result makes of its request: an answer, a correction or a retry to ask in the
    next round, or a failure; an ``LLMCall`` for the first and the last."""
    request = request_of(row.request)
    row.attempts += 1
    entry: dict[str, Any] = {"attempt": row.attempts, "batch": job.pk}
    completion = result.completion
    if completion is None:
        row.failures += 1
        entry["error"] = result.error
        if result.status is not None:
            entry["status"] = result.status
        row.attempt_log = [*row.attempt_log, entry]
        if result.retryable and row.failures < settings.max_attempts:
            row.status = LLMBatchRequest.Status.RETRY
            row.error = result.error
            return
        message = (
            GAVE_UP.format(attempts=row.failures, error=result.error)
            if result.retryable
            else result.error
        )
        row.status = LLMBatchRequest.Status.FAILED
        row.error = message
        row.call = call_row(
            row, request, target, status=LLMCall.Status.ERROR, error=message, job=job
        )
        return
    cost = call_cost(
        target.model,
        input_tokens=completion.input_tokens,
        output_tokens=completion.output_tokens,
        cached_tokens=completion.cached_tokens,
        local=target.local,
        batch=True,
    )
    row.cost_usd = None if cost is None or row.cost_usd is None else row.cost_usd + cost
    row.input_tokens += completion.input_tokens
    row.output_tokens += completion.output_tokens
    row.cached_tokens += completion.cached_tokens
    row.raw_text = completion.text
    row.output_mode = completion.output_mode
    try:
        answer = answer_parse(completion.text, request.schema)
    except AnswerInvalid as error:
        entry.update(error=str(error), raw_text=completion.text)
        row.attempt_log = [*row.attempt_log, entry]
        truncated = completion.finish_reason == "length"
        corrected = len(row.conversation) > len(request.messages)
        if not (corrected or truncated):
            row.status = LLMBatchRequest.Status.CORRECT
            return
        message = (
            TRUNCATED.format(tokens=completion.output_tokens, error=error)
            if truncated
            else PARSE_FAILED.format(error=error)
        )
        row.status = LLMBatchRequest.Status.FAILED
        row.error = message
        row.call = call_row(
            row, request, target, status=LLMCall.Status.PARSE_FAILURE, error=message, job=job
        )
        return
    row.status = LLMBatchRequest.Status.DONE
    row.error = ""
    row.call = call_row(row, request, target, status=LLMCall.Status.OK, answer=answer, job=job)


def call_row(
    row: LLMBatchRequest,
    request: LLMRequest,
    target: Target,
    *,
    status: str,
    answer: dict[str, Any] | None = None,
    error: str = "",
    job: LLMBatch | None = None,
) -> LLMCall:
    """The request's one ``LLMCall`` (not saved yet), built as a synchronous call's is
    (``client.call_row``), with ``settings["batch"]``; its latency is the job's wait (from
    submission to its end), since a batch line has no time of its own."""
    waited = 0.0
    if job is not None and job.submitted_at and job.ended_at:
        waited = (job.ended_at - job.submitted_at).total_seconds()
    return client_call_row(
        request,
        target,
        row.request_hash,
        status=status,
        answer=answer,
        error=error,
        output_mode=row.output_mode,
        batch=True,
        raw_text=row.raw_text,
        attempts=row.attempts,
        attempt_log=row.attempt_log,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_tokens=row.cached_tokens,
        latency_s=waited,
        cost_usd=row.cost_usd,
    )
