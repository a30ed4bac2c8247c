"""A round of requests through a provider's batch API, from submission to ``LLMCall`` rows.

Who asks (a judging run) names itself as an ``owner`` and drives its rounds: it prepares
each request (``batch_prepare``: answered from the log when an identical request already
succeeded, exactly as ``complete`` would), submits the misses of a round
(``round_submit``), and advances its open jobs (``job_advance``) until they are stored.

Nothing is submitted twice and nothing is lost when a worker dies at any point:

- a job and its requests are written in one transaction, status ``submitting``, before the
  provider hears of them; the input file's id is saved once uploaded, the job's id once
  created; a job found ``submitting`` is first looked for at the provider by its ``tag``
  (OpenAI's ``metadata``, Gemini's display name) and only submitted if none is found;
- results are stored in chunks, each one transaction that writes the ``LLMCall`` rows and
  marks their requests; a job is ``stored`` once every request has its outcome, so storing
  again after a kill skips what is written.

A result becomes an ordinary ``LLMCall`` (``settings["batch"]`` says it was batched, its cost
is at the batch rate): the log, the cache and costs work unchanged. As ``complete`` does, an
answer that does not match its schema is asked once more with the correction (in the next
round), never guessed; an error line or a job that ended without answering (expired,
cancelled) is asked again in the next round until ``max_attempts``; a request larger than
the provider takes fails at once with the reason.
"""

import dataclasses
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from ..answers import correction
from ..client import request_hash
from ..config import LLMSettings, Target, llm_settings
from ..models import LLMBatch, LLMBatchRequest, LLMCall
from ..providers.base import ProviderError
from ..types import CachePolicy, LLMRequest, LLMResponse, Provider
from .base import BatchClient, BatchUnsupported
from .results import job_stored, job_target, request_fail, request_json, request_of, results_store

log = logging.getLogger(__name__)

TOO_LARGE = (
    "the request is {size:,} bytes, more than the {limit:,} a {provider} batch job takes: "
    "nothing was sent"
)
NO_BATCH_PROVIDER = "{provider} has no batch API: judge with ordinary calls"
ROUND_TAKEN = "round {round} of {owner} is written already"
WRITE_CHUNK = 500  # requests made and written at once
LINE_SLACK = 64  # bytes a line's custom id and separators may add to its body
OPEN = [LLMBatch.Status.SUBMITTING, LLMBatch.Status.SUBMITTED, LLMBatch.Status.ENDED]


class RoundTaken(Exception):
    """Another driver of the same owner wrote this round first: it submits it."""


def batch_client_for(target: Target) -> BatchClient:
    """The batch client of ``target``'s provider (the SDK is imported only when used)."""
    if target.provider == Provider.OPENAI:
        from .openai_batch import OpenAIBatchClient

        return OpenAIBatchClient(target)
    if target.provider == Provider.GEMINI:
        from .gemini_batch import GeminiBatchClient

        return GeminiBatchClient(target)
    raise BatchUnsupported(NO_BATCH_PROVIDER.format(provider=target.provider))


def batch_check(target: Target) -> None:
    """Raise ``BatchUnsupported`` (with what to do) if ``target``'s server has no batch API."""
    batch_client_for(target).check()


@dataclass(frozen=True)
class Prepared:
    """A request as ``complete`` would send it: its target, its cache key, and the answer the
    log already has (``cached``), if any."""

    request: LLMRequest
    target: Target
    key: str
    cached: LLMCall | None


def batch_prepare(
    request: LLMRequest, *, settings: LLMSettings | None = None, look_up: bool = True
) -> Prepared:
    """``request`` resolved as ``complete`` resolves it, and (``look_up``) its cached
    answer if any."""
    settings = settings or llm_settings()
    if request.max_output_tokens is None and settings.max_output_tokens:
        request = dataclasses.replace(request, max_output_tokens=settings.max_output_tokens)
    target = settings.target(request)
    key = request_hash(target, request)
    cached = cached_call(key) if look_up and request.cache == CachePolicy.USE else None
    return Prepared(request, target, key, cached)


def cached_call(key: str) -> LLMCall | None:
    """The log's newest successful call with this cache key (``complete``'s own lookup)."""
    from ..client import _cached_call

    return _cached_call(key)


# The fields a response is made of (``call_response``): an owner's answers are read at once
# with these only.
RESPONSE_FIELDS = (
    "answer", "raw_text", "provider", "model", "input_tokens", "output_tokens",
    "cached_tokens", "latency_s", "cost_usd", "request_hash",
)  # fmt: skip


def owner_answers(owner: str) -> dict[str, LLMCall]:
    """The successful calls ``owner``'s batches brought, by cache key, in one query."""
    done = LLMBatchRequest.objects.filter(owner=owner, status=LLMBatchRequest.Status.DONE)
    calls = LLMCall.objects.filter(pk__in=done.values("call_id")).only(*RESPONSE_FIELDS)
    return {call.request_hash: call for call in calls.iterator(chunk_size=2000)}


def call_response(call: LLMCall, *, from_cache: bool) -> LLMResponse:
    """The response a successful call's row holds (``complete``'s own answer)."""
    from ..client import _response

    return _response(call, from_cache=from_cache)


# -- the requests of an owner --------------------------------------------------------------


def request_states(owner: str) -> dict[str, LLMBatchRequest]:
    """The newest try of each request ``owner`` has sent, by cache key."""
    rows = (
        LLMBatchRequest.objects.filter(owner=owner)
        .order_by("pk")
        .only("pk", "request_hash", "status", "call", "error", "batch")
    )
    return {row.request_hash: row for row in rows.iterator(chunk_size=2000)}


def _next_try(prepared: Prepared, owner: str, previous: LLMBatchRequest | None) -> LLMBatchRequest:
    """The row of ``prepared``'s next try: its first, or after a correction or an error."""
    row = LLMBatchRequest(
        owner=owner,
        request_hash=prepared.key,
        request=request_json(prepared.request),
        conversation=[],  # the request's own messages, until a correction is appended
        cost_usd=Decimal(0),
    )
    if previous is None:
        return row
    previous = LLMBatchRequest.objects.get(pk=previous.pk)  # every field, this once
    carried = (
        "conversation", "attempts", "failures", "attempt_log", "input_tokens",
        "output_tokens", "cached_tokens", "cost_usd", "raw_text", "output_mode",
    )  # fmt: skip
    for name in carried:
        setattr(row, name, getattr(previous, name))
    row.tries = previous.tries + 1
    if previous.status == LLMBatchRequest.Status.CORRECT:
        error = previous.attempt_log[-1]["error"] if previous.attempt_log else ""
        row.conversation = [
            *(previous.conversation or previous.request["messages"]),
            ["assistant", previous.raw_text],
            ["user", correction(error, prepared.request.schema)],
        ]
    return row


# -- submitting -----------------------------------------------------------------------------


def round_submit(
    *, owner: str, round: int, requests: Iterable[Prepared], settings: LLMSettings | None = None
) -> list[LLMBatch]:
    """Submit ``requests`` (cache misses, distinct keys) as the jobs of ``owner``'s round
    ``round``, within the provider's limits; return the jobs.

    A request too large for any job fails at once (its ``LLMCall`` says why), so that the
    owner's next pass sees the failure. Raises ``BatchUnsupported`` before writing anything
    if the server has no batch API, and ``RoundTaken`` if another driver of the owner wrote
    this round first.
    """
    settings = settings or llm_settings()
    states = request_states(owner)
    by_target: dict[Target, list[Prepared]] = {}
    for prepared in requests:
        by_target.setdefault(prepared.target, []).append(prepared)
    parts: list[tuple[Target, list[Prepared]]] = []
    for target, prepared_list in by_target.items():
        client = batch_client_for(target)
        client.check()
        chunks: list[list[Prepared]] = [[]]
        size = 0
        for prepared in prepared_list:
            row = _next_try(prepared, owner, states.get(prepared.key))
            line = client.line("req-0", request_of(row.request, row.conversation))
            line_size = len(json.dumps(line, ensure_ascii=False).encode()) + LINE_SLACK
            if line_size > client.limits.bytes:
                message = TOO_LARGE.format(
                    size=line_size, limit=client.limits.bytes, provider=target.provider
                )
                request_fail(row, target, message)
                continue
            chunk = chunks[-1]
            if len(chunk) >= client.limits.requests or size + line_size > client.limits.bytes:
                chunks.append([])
                chunk, size = chunks[-1], 0
            chunk.append(prepared)
            size += line_size
        parts += [(target, chunk) for chunk in chunks if chunk]
    try:
        jobs = _jobs_write(owner, round, parts, states)
    except IntegrityError:
        raise RoundTaken(ROUND_TAKEN.format(round=round, owner=owner)) from None
    for job in jobs:
        job_advance(job, settings=settings, fresh=True)
    return jobs


def _jobs_write(
    owner: str,
    round: int,
    parts: list[tuple[Target, list[Prepared]]],
    states: dict[str, LLMBatchRequest],
) -> list[LLMBatch]:
    """The round's jobs and their requests, in one transaction: a round is written whole
    or not at all, and only once (``one_batch_per_part``). Rows are made and written a
    chunk at a time, so that a round of 50,000 requests is not held in memory twice."""
    jobs = []
    with transaction.atomic():
        for part, (target, prepared_list) in enumerate(parts):
            job = LLMBatch.objects.create(
                owner=owner,
                round=round,
                part=part,
                provider=target.provider,
                model=target.model,
                base_url=target.base_url,
                request_count=len(prepared_list),
            )
            for start in range(0, len(prepared_list), WRITE_CHUNK):
                rows = [
                    _next_try(prepared, owner, states.get(prepared.key))
                    for prepared in prepared_list[start : start + WRITE_CHUNK]
                ]
                for row in rows:
                    row.batch = job
                LLMBatchRequest.objects.bulk_create(rows)
            jobs.append(job)
    return jobs


def _job_submit(job: LLMBatch, client: BatchClient, *, fresh: bool) -> None:
    """Send a ``submitting`` job, unless the provider has it already (a worker was killed
    between the provider's answer and our write: any job not ``fresh``ly written)."""
    found = "" if fresh else client.find(str(job.tag))
    if not found:
        rows = job.requests.order_by("pk").only("pk", "request", "conversation")

        def lines() -> Iterator[dict[str, Any]]:
            for row in rows.iterator(chunk_size=WRITE_CHUNK):
                yield client.line(row.custom_id, request_of(row.request, row.conversation))

        if not job.input_file_id:
            file_id = client.upload(lines())
            if file_id:
                LLMBatch.objects.filter(pk=job.pk).update(input_file_id=file_id)
                job.input_file_id = file_id
        inline = [] if job.input_file_id else list(lines())
        found = client.create(inline, file_id=job.input_file_id, tag=str(job.tag))
    job.provider_batch_id = found
    job.status = LLMBatch.Status.SUBMITTED
    job.submitted_at = timezone.now()
    job.save(update_fields=["provider_batch_id", "status", "submitted_at"])


# -- advancing ------------------------------------------------------------------------------


def jobs_open(owner: str) -> list[LLMBatch]:
    return list(LLMBatch.objects.filter(owner=owner, status__in=OPEN).order_by("pk"))


def job_advance(
    job: LLMBatch, *, settings: LLMSettings | None = None, fresh: bool = False
) -> LLMBatch:
    """Take ``job`` one step on: submit it, poll it, store its results, as far as it goes
    now. A provider that cannot be reached now is tried again at the next call; one that
    refuses the job fails its requests. ``fresh``: the job was written just now, so the
    provider cannot have it yet (a job found ``submitting`` later is looked for first)."""
    settings = settings or llm_settings()
    client = batch_client_for(job_target(job, settings))
    try:
        if job.status == LLMBatch.Status.SUBMITTING:
            _job_submit(job, client, fresh=fresh)
        if job.status == LLMBatch.Status.SUBMITTED:
            _job_poll(job, client)
        if job.status == LLMBatch.Status.ENDED:
            results_store(job, client, settings)
    except ProviderError as error:
        if error.retryable:
            log.warning("batch %s: %s; trying again at the next poll", job.pk, error)
            return job
        log.warning("batch %s refused: %s", job.pk, error)
        _job_refused(job, str(error), settings)
    return job


def job_cancel(job: LLMBatch, *, settings: LLMSettings | None = None) -> None:
    """Ask the provider to cancel ``job`` (once); what it answered before stopping is still
    read and stored when it ends."""
    if job.cancel_requested or job.status not in (
        LLMBatch.Status.SUBMITTING,
        LLMBatch.Status.SUBMITTED,
    ):
        return
    LLMBatch.objects.filter(pk=job.pk).update(cancel_requested=True)
    job.cancel_requested = True
    if job.status == LLMBatch.Status.SUBMITTING and not job.provider_batch_id:
        # Perhaps never sent: if it was, find it; if not, it never will be.
        client = batch_client_for(job_target(job, settings or llm_settings()))
        try:
            job.provider_batch_id = client.find(str(job.tag))
        except ProviderError:
            job.provider_batch_id = ""
        if not job.provider_batch_id:
            _job_ended(job, status="cancelled before submission")
            results_store(job, None, settings or llm_settings())
            return
        job.status = LLMBatch.Status.SUBMITTED
        job.save(update_fields=["provider_batch_id", "status"])
    client = batch_client_for(job_target(job, settings or llm_settings()))
    try:
        client.cancel(job.provider_batch_id)
    except ProviderError as error:
        log.warning("batch %s: cancel refused: %s", job.pk, error)


def _job_poll(job: LLMBatch, client: BatchClient) -> None:
    snapshot = client.poll(job.provider_batch_id)
    job.provider_status = snapshot.status[:40]
    job.completed_count = snapshot.completed
    job.failed_count = snapshot.failed
    job.last_polled_at = timezone.now()
    job.error = snapshot.error
    fields = ["provider_status", "completed_count", "failed_count", "last_polled_at", "error"]
    if snapshot.ended:
        job.status = LLMBatch.Status.ENDED
        job.ended_at = job.last_polled_at
        fields += ["status", "ended_at"]
    job.save(update_fields=fields)


def _job_ended(job: LLMBatch, *, status: str) -> None:
    job.status = LLMBatch.Status.ENDED
    job.provider_status = status[:40]
    job.ended_at = timezone.now()
    job.save(update_fields=["status", "provider_status", "ended_at"])


def _job_refused(job: LLMBatch, error: str, settings: LLMSettings) -> None:
    """The provider refused the job (a 4xx on submission): its requests fail with why."""
    job.error = error
    job.save(update_fields=["error"])
    if job.status != LLMBatch.Status.ENDED:
        _job_ended(job, status="refused")
    target = job_target(job, settings)
    for row in job.requests.filter(status=LLMBatchRequest.Status.PENDING):
        request_fail(row, target, error)
    job_stored(job)
