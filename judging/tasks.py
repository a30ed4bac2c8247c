"""Celery tasks of the judging app: thin, idempotent, taking ids.

Each task is named after the function it calls, with ``_task``: ``run_start_task`` calls
``judging.runs.execution.run_start``; its name on the wire (``name=``) is what queued
messages carry and never changes. Every task is a ``sejury_web.durable.durable_task``: late
acknowledged, with a failure function that fails what the task was for when it raises what
nothing caught, so no judgment, row or delivery stays pending for ever.

A run fans out as ``run_start_task`` → one ``bug_prepare_task`` per bug, in import order,
which takes the bug's first steps (s4, s5) and judges its first patch itself → one
``patch_judge_task`` per other patch of the bug: its siblings are judged once the provider
has cached the prompt prefix they share with it. Every task carries the run's generation: a
resume bumps it, and tasks of an older generation return without judging.

A batch-mode run (``JudgingRun.batch``) starts ``batch_round_advance_task`` instead, which
takes its rounds one step on and queues itself again with a countdown (``self.retry``)
while the provider's batch jobs are open: no worker sleeps through a batch's hours.

``run_rejections_sort_task`` → one ``rejection_sort_task`` per row: why a run rejected
patches that pass their tests (paper 004 §7), for the rows a lead's request left pending. A
row is written only while pending, so a redelivered task sorts nothing twice; the failure
functions fail what is still pending.

``delivery_attempt_task`` makes one attempt of a run's webhook call and retries itself with
a countdown (``self.retry``) while ``judging.runs.webhooks`` says to; it carries the
attempt's number, so a redelivered message of an attempt already made sends nothing.

``judge_test_advance_task`` measures a written judge's test (``judging.judges.measuring``)
once its runs have ended, and queues itself again with a countdown while they run.
"""

from celery import Task
from django.db import OperationalError

from judging.judges.measuring import POLL_SECONDS, judge_test_advance, judge_test_fail
from judging.runs.batch import batch_round_advance, poll_seconds, run_is_batch
from judging.runs.execution import (
    bug_prepare,
    judgments_fail,
    patch_judge,
    run_pending_judgment_ids,
    run_start,
)
from judging.runs.rejections import rejection_pending_ids, rejection_sort, rejections_fail
from judging.runs.webhooks import delivery_attempt, delivery_fail
from sejury_web.durable import durable_task


def _run_failed(run_id: int, generation: int, *, error: str) -> None:
    """Every pending judgment of the run fails."""
    judgments_fail(judgment_ids=run_pending_judgment_ids(run_id=run_id), error=error)


@durable_task(name="judging.start_run", on_failure=_run_failed, ignore_result=True)
def run_start_task(run_id: int, generation: int) -> int:
    """Fan the run out; return the number of tasks queued."""
    if run_is_batch(run_id=run_id):
        batch_round_advance_task.delay(run_id, generation)
        return 1
    tasks = run_start(run_id=run_id, generation=generation)
    for kind, object_id in tasks:
        if kind == "bug":
            bug_prepare_task.delay(run_id, object_id, generation)
        else:
            patch_judge_task.delay(object_id, generation)
    return len(tasks)


def _bug_failed(run_id: int, bug_id: int, generation: int, *, error: str) -> None:
    """The bug's pending judgments of the run fail."""
    pending = run_pending_judgment_ids(run_id=run_id, bug_id=bug_id)
    judgments_fail(judgment_ids=pending, error=error)


@durable_task(name="judging.prepare_bug", on_failure=_bug_failed, ignore_result=True)
def bug_prepare_task(run_id: int, bug_id: int, generation: int) -> int:
    """One bug's first steps (s4, s5) and its first patch, then its other patches; return
    the patches queued."""
    judgment_ids = bug_prepare(run_id=run_id, bug_id=bug_id, generation=generation)
    for judgment_id in judgment_ids:
        patch_judge_task.delay(judgment_id, generation)
    return len(judgment_ids)


def _judgment_failed(judgment_id: int, generation: int, *, error: str) -> None:
    """The judgment fails (members already stored are kept)."""
    judgments_fail(judgment_ids=[judgment_id], error=error)


@durable_task(name="judging.judge_patch", on_failure=_judgment_failed, ignore_result=True)
def patch_judge_task(judgment_id: int, generation: int) -> str:
    """Judge one patch with the run's team; return its status."""
    return patch_judge(judgment_id, generation)


@durable_task(
    name="judging.batch_round",
    on_failure=_run_failed,
    bind=True,
    ignore_result=True,
    max_retries=None,  # a batch may take 24 hours; the run's generation ends the chain
)
def batch_round_advance_task(self: Task, run_id: int, generation: int) -> None:
    """Take a batch-mode run one step on (its jobs, or its next round); look again later
    while its jobs are open."""
    try:
        poll_in = batch_round_advance(run_id=run_id, generation=generation)
    except OperationalError:  # the database was busy or away: the rows wait, look again later
        poll_in = poll_seconds()
    if poll_in is not None:
        raise self.retry(countdown=poll_in)


def _sorting_failed(run_id: int, *, error: str) -> None:
    """The run's rows still waiting to be sorted fail."""
    rejections_fail(row_ids=rejection_pending_ids(run_id=run_id), error=error)


@durable_task(name="judging.sort_rejections", on_failure=_sorting_failed, ignore_result=True)
def run_rejections_sort_task(run_id: int) -> int:
    """Queue one ``rejection_sort_task`` per pending row of the run; return how many."""
    row_ids = rejection_pending_ids(run_id=run_id)
    for row_id in row_ids:
        rejection_sort_task.delay(row_id)
    return len(row_ids)


def _row_failed(row_id: int, *, error: str) -> None:
    """The row fails, if it is still pending."""
    rejections_fail(row_ids=[row_id], error=error)


@durable_task(name="judging.sort_rejection", on_failure=_row_failed, ignore_result=True)
def rejection_sort_task(row_id: int) -> str:
    """Sort one rejected passing patch's justification into a theme; return the row's status."""
    return rejection_sort(row_id)


def _delivery_failed(delivery_id: int, attempt: int, *, error: str) -> None:
    """The webhook delivery fails, shown so on the run page."""
    delivery_fail(delivery_id=delivery_id, error=error)


@durable_task(
    name="judging.deliver_webhook",
    on_failure=_delivery_failed,
    bind=True,
    ignore_result=True,
    max_retries=None,  # judging.runs.webhooks counts the attempts
)
def delivery_attempt_task(self: Task, delivery_id: int, attempt: int) -> str:
    """POST the run's webhook (attempt ``attempt``); retry later if told to; return the
    delivery's status."""
    outcome = delivery_attempt(delivery_id=delivery_id, attempt=attempt)
    if outcome.retry_in is not None:
        raise self.retry(args=(delivery_id, attempt + 1), countdown=outcome.retry_in)
    return outcome.status


def _judge_test_failed(test_id: int, *, error: str) -> None:
    """The judge test fails, saying why."""
    judge_test_fail(test_id=test_id, error=error)


@durable_task(
    name="judging.judge_test",
    on_failure=_judge_test_failed,
    bind=True,
    ignore_result=True,
    max_retries=None,  # the test's runs end, or are cancelled: the test ends the chain
)
def judge_test_advance_task(self: Task, test_id: int) -> None:
    """Measure a judge test once its runs have ended; look again later while they run."""
    try:
        poll_in = judge_test_advance(test_id=test_id)
    except OperationalError:  # the database was busy: look again later
        poll_in = POLL_SECONDS
    if poll_in is not None:
        raise self.retry(countdown=poll_in)
