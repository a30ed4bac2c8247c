"""Batch mode: a run judged through its provider's batch API, in rounds, at half the price
and with answers within 24 hours (``JudgingRun.batch``).

The strategies do not change. A *pass* judges every pending patch with an ``ask`` that
answers from the log what the log has, and *collects* what it has not: the request joins the
round, and the member waits (``Deferred``), its patch pending. A collected call returns a
placeholder whose answer defers the member as soon as it is read, so one member's
independent calls (the four personas of ``roles``) are collected together and only what
depends on an answer waits a round: a team of s2 and s4 asks s4's bug step and s2's first
turn in round 1, s4's judgment and s2's rethink in round 2, and an answer that did not match
its schema is asked again with the correction in the round after. The round's requests go
as batch jobs (``sejury_web.llm.batch``), whose results become ordinary ``LLMCall`` rows: the
next pass finds them in the log and moves each member on, and the log, the cache, costs and
every page work as for ordinary calls.

One task drives a run, ``judging.batch_round`` (``batch_round_advance``): it advances the
run's open jobs and, once none is open, makes the next pass and submits its round; while
jobs are open it is queued again after ``poll_seconds()``. Jobs and their requests are rows,
so a worker killed at any point resumes (a starting worker resumes unfinished runs, whose
start queues this task again) without submitting anything twice. Cancelling the run, or
going on with ordinary calls (``run_batch_leave``), queues the task at once, which cancels
the open jobs; what they answered before is still stored, and billed.
"""

import dataclasses
import logging
from collections import defaultdict
from datetime import datetime
from functools import partial
from typing import Any, NoReturn, cast

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.cases import case_and_rubric
from judging.runs.execution import (
    Asker,
    RunStopped,
    judgment_conclude,
    judgments_fail,
    member_judge,
    run_finish_if_done,
    run_is_current,
    run_pending_judgment_ids,
)
from sejury_web.llm import (
    CachePolicy,
    LLMError,
    LLMParseError,
    LLMRequest,
    LLMResponse,
    Provider,
)
from sejury_web.llm.batch.base import BatchUnsupported
from sejury_web.llm.batch.jobs import (
    Prepared,
    RoundTaken,
    batch_check,
    batch_prepare,
    cached_call,
    call_response,
    job_advance,
    job_cancel,
    jobs_open,
    owner_answers,
    request_states,
    round_submit,
)
from sejury_web.llm.config import llm_settings
from sejury_web.llm.models import LLMBatch, LLMBatchRequest, LLMCall
from sejury_web.llm.providers.base import ProviderError

log = logging.getLogger(__name__)

OWNER = "judging.run:{run}"
DEFAULT_POLL_SECONDS = 60.0
PASS_CHUNK = 100  # pending judgments read, and written in one transaction, at once
BATCH_UNAVAILABLE = "batch mode cannot go on: {error}"
NO_BATCH_OFFLINE = (
    "batch mode needs a model provider: the offline heuristic has no batch API (and answers "
    "at once)"
)
BATCH_UNREACHABLE = "the provider's batch API could not be asked whether it takes jobs: {error}"


def run_owner(run_id: int) -> str:
    """How the LLM layer's batch jobs name the run they are for."""
    return OWNER.format(run=run_id)


def poll_seconds() -> float:
    """Seconds between two looks at a run's open batch jobs
    (``SEJURY_LLM_BATCH_POLL_SECONDS``)."""
    return float(cast(float, settings.SEJURY_LLM.get("BATCH_POLL_SECONDS", DEFAULT_POLL_SECONDS)))


def run_is_batch(*, run_id: int) -> bool:
    return JudgingRun.objects.filter(pk=run_id, batch=True).exists()


def batch_problem(*, provider: str, model: str) -> str:
    """Why a run on ``provider``/``model`` cannot be judged in batch mode ("" if it can):
    asked of the server before the run is created, so that a server without a batch API is
    found out before anything is submitted, while ordinary calls are still a choice."""
    if Provider(provider) == Provider.OFFLINE:
        return NO_BATCH_OFFLINE
    try:
        target = llm_settings().target(
            LLMRequest(
                purpose="batch", messages=(), schema={}, provider=Provider(provider), model=model
            )
        )
        batch_check(target)
    except (BatchUnsupported, ImproperlyConfigured) as error:
        return str(error)
    except ProviderError as error:
        return BATCH_UNREACHABLE.format(error=error)
    return ""


class Deferred(RunStopped):
    """A member waits for an answer its batch round will bring; its patch stays pending."""


def _waiting(*_: object, **__: object) -> NoReturn:
    raise Deferred


class _Waiting(dict[str, Any]):
    """The answer of a collected call: reading it defers the member."""

    __getitem__ = get = keys = items = values = __iter__ = __len__ = __contains__ = _waiting


class Collector:
    """What one pass gathers: the requests the log lacks, by cache key."""

    def __init__(self, run_id: int) -> None:
        self.owner = run_owner(run_id)
        self.states = request_states(self.owner)
        # Answers this run's batches brought are its own calls, not the cache's: they count
        # in its calls, tokens and cost, as a synchronous call would. Read at once: a pass
        # asks for each of them again.
        self.answers = owner_answers(self.owner)
        self.wanted: dict[str, Prepared] = {}


class BatchAsker(Asker):
    """The ``ask`` of batch mode: the log's answer, or the request collected for the round."""

    def __init__(self, run: JudgingRun, generation: int, *, collector: Collector) -> None:
        super().__init__(run, generation)
        self.collector = collector
        self.deferred = False

    def answer(self, request: LLMRequest) -> LLMResponse:
        prepared = batch_prepare(request, look_up=False)
        own = self.collector.answers.get(prepared.key)
        if own is not None:  # whether or not the request reads the log (REFRESH)
            return call_response(own, from_cache=False)
        cached = cached_call(prepared.key) if request.cache == CachePolicy.USE else None
        if cached is not None:
            return call_response(cached, from_cache=True)
        state = self.collector.states.get(prepared.key)
        if state is not None and state.status == LLMBatchRequest.Status.FAILED:
            call = state.call
            parse = call is not None and call.status == LLMCall.Status.PARSE_FAILURE
            raise (LLMParseError if parse else LLMError)(state.error, call_id=state.call_id)
        self.collector.wanted.setdefault(prepared.key, prepared)
        self.deferred = True
        return LLMResponse(
            answer=_Waiting(),
            raw_text="",
            provider=Provider(self.run.provider),
            model=self.run.model,
            input_tokens=0,
            output_tokens=0,
            cached_tokens=0,
            latency_s=0.0,
            cost_usd=None,
            from_cache=True,
            call_id=0,
        )

    def done(self) -> None:
        if self.deferred:  # the strategy returned without reading a collected answer
            raise Deferred


def batch_pass(run: JudgingRun, generation: int) -> dict[str, Prepared]:
    """Judge every pending patch of ``run`` as far as the log allows; conclude those whose
    members are all stored; return the requests the log lacks, by cache key.

    Raises ``RunStopped`` if the run is cancelled or resumed meanwhile.
    """
    collector = Collector(run.pk)
    asker_type = partial(BatchAsker, collector=collector)
    pending = run.judgments.filter(status=PatchJudgment.Status.PENDING)
    stored: dict[int, set[str]] = defaultdict(set)
    # In no order: the model's default order would join the run, patch and dataset to sort
    # every pending judgment's results.
    for judgment_id, name in (
        StrategyResult.objects.filter(judgment__in=pending)
        .order_by()
        .values_list("judgment_id", "strategy")
    ):
        stored[judgment_id].add(name)
    ids = list(pending.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), PASS_CHUNK):
        chunk = PatchJudgment.objects.filter(pk__in=ids[start : start + PASS_CHUNK])
        # One transaction a chunk: a pass calls no provider (only the log), and its results
        # and verdicts are thousands of small writes, each a commit of its own otherwise.
        with transaction.atomic():
            for judgment in chunk.select_related("patch__bug").order_by("pk"):
                judgment.run = run
                _judgment_pass(judgment, generation, stored[judgment.pk], asker_type)
    return collector.wanted


def _judgment_pass(
    judgment: PatchJudgment, generation: int, stored: set[str], asker_type: Any
) -> None:
    """One patch's members as far as the log allows; its verdict once all are stored."""
    run = judgment.run
    case, revision = case_and_rubric(run, judgment.patch)
    complete = True
    for name in run.strategies:
        if name in stored:
            continue
        try:
            member_judge(judgment, generation, case, name, revision, asker_type)
        except Deferred:
            complete = False
    if complete:
        judgment_conclude(judgment)


def _next_round(owner: str) -> int:
    last = LLMBatch.objects.filter(owner=owner).aggregate(last=Max("round"))["last"]
    return (last or 0) + 1


def batch_round_advance(*, run_id: int, generation: int) -> float | None:
    """Take the run's batch mode one step on; return the seconds until the next look, or
    None when there is nothing more to do (the run ended, or a newer generation drives it).
    """
    run = JudgingRun.objects.get(pk=run_id)
    owner = run_owner(run_id)
    if run.generation != generation:
        return None  # a resume queued a newer task, which drives the run now
    if run.status == JudgingRun.Status.CANCELLED or not run.batch:
        return _cancelled_advance(owner)  # cancelled, or going on with ordinary calls
    if not run_is_current(run_id, generation):
        return None
    JudgingRun.objects.filter(pk=run_id, status=JudgingRun.Status.QUEUED).update(
        status=JudgingRun.Status.RUNNING
    )
    JudgingRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=timezone.now())
    for job in jobs_open(owner):
        job_advance(job)
    if jobs_open(owner):
        return poll_seconds()
    while True:
        try:
            wanted = batch_pass(run, generation)
        except RunStopped:  # cancelled or resumed meanwhile; no job is open to look after
            return None
        if not wanted:
            run_finish_if_done(run_id)
            return None
        try:
            jobs = round_submit(owner=owner, round=_next_round(owner), requests=wanted.values())
        except RoundTaken:  # a twin of this task (a message delivered twice) sent it
            return poll_seconds()
        except BatchUnsupported as error:
            message = BATCH_UNAVAILABLE.format(error=error)
            judgments_fail(judgment_ids=run_pending_judgment_ids(run_id=run_id), error=message)
            return None
        if jobs:
            return poll_seconds()
        # Every request was refused before sending (too large): its members fail now.


def _cancelled_advance(owner: str) -> float | None:
    """A cancelled run, or one gone on with ordinary calls: its jobs are cancelled, and
    polled until what they answered is stored."""
    for job in jobs_open(owner):
        job_cancel(job)
        job_advance(job)
    return poll_seconds() if jobs_open(owner) else None


def batch_failures_forget(*, run_id: int) -> int:
    """Let the requests the run's batches failed be asked again (*Retry failed*): each goes
    in the next round, with its earlier tries' record; return how many."""
    failed = LLMBatchRequest.objects.filter(
        owner=run_owner(run_id), status=LLMBatchRequest.Status.FAILED
    )
    return failed.update(status=LLMBatchRequest.Status.RETRY, failures=0, call=None)


def batch_runs_open() -> list[tuple[int, int]]:
    """(run, generation) of every run whose batch jobs are still open though it is
    cancelled or went on with ordinary calls: a worker starting polls them on (active
    batch runs are resumed with the others)."""
    owners = set(
        LLMBatch.objects.filter(
            owner__startswith="judging.run:",
            status__in=[
                LLMBatch.Status.SUBMITTING,
                LLMBatch.Status.SUBMITTED,
                LLMBatch.Status.ENDED,
            ],
        ).values_list("owner", flat=True)
    )
    run_ids = [int(owner.split(":", 1)[1]) for owner in owners]
    runs = JudgingRun.objects.filter(pk__in=run_ids).filter(
        Q(status=JudgingRun.Status.CANCELLED) | Q(batch=False)
    )
    return list(runs.values_list("pk", "generation"))


# -- what the run page shows ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RoundRow:
    """One round of a batch run: its jobs' state, counts and wait."""

    round: int
    jobs: int
    requests: int
    completed: int
    failed: int
    status: str  # submitting, submitted, in progress, stored…
    submitted_at: datetime | None
    ended_at: datetime | None  # when the last of its jobs ended
    polled_at: datetime | None = None  # when a worker last asked the provider about it


def run_batch_checked_at(run: JudgingRun) -> datetime | None:
    """When a worker last submitted or polled one of the run's batch jobs: while a round
    waits on the provider, that is the run's progress."""
    moments = LLMBatch.objects.filter(owner=run_owner(run.pk)).aggregate(
        polled=Max("last_polled_at"), submitted=Max("submitted_at")
    )
    return max((m for m in moments.values() if m is not None), default=None)


def run_rounds(run: JudgingRun) -> list[RoundRow]:
    """The run's batch rounds, first to last (the run page's card)."""
    jobs = list(LLMBatch.objects.filter(owner=run_owner(run.pk)).order_by("round", "pk"))
    rounds: dict[int, list[LLMBatch]] = defaultdict(list)
    for job in jobs:
        rounds[job.round].append(job)
    rows = []
    for number, members in rounds.items():
        statuses = {job.status for job in members}
        provider = sorted({job.provider_status for job in members if job.provider_status})
        if statuses == {LLMBatch.Status.STORED}:
            status = "answered"
        elif LLMBatch.Status.SUBMITTING in statuses:
            status = "submitting"
        elif LLMBatch.Status.ENDED in statuses:
            status = "storing results"
        else:
            status = ", ".join(provider) or "submitted"
        ended = [job.ended_at for job in members if job.ended_at]
        submitted = [job.submitted_at for job in members if job.submitted_at]
        polled = [job.last_polled_at for job in members if job.last_polled_at]
        rows.append(
            RoundRow(
                round=number,
                jobs=len(members),
                requests=sum(job.request_count for job in members),
                completed=sum(job.completed_count for job in members),
                failed=sum(job.failed_count for job in members),
                status=status,
                submitted_at=min(submitted) if submitted else None,
                ended_at=max(ended) if len(ended) == len(members) else None,
                polled_at=max(polled) if polled else None,
            )
        )
    return rows
