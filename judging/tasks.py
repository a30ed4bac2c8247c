"""Celery tasks of the judging app: thin, idempotent, taking ids.

A run fans out as ``start_run`` → one ``prepare_bug`` per bug (teams with a bug-level step)
→ one ``judge_patch`` per patch. Every task carries the run's generation: a resume bumps it,
and tasks of an older generation return without judging. A task that raises what nothing
caught fails the judgments it was for (its failure hook), so none stays pending for ever.

``sort_rejections`` → one ``sort_rejection`` per row: why a run rejected patches that pass
their tests (paper 004 §7), for the rows a lead's request left pending. A row is written only
while pending, so a redelivered task sorts nothing twice; the failure hooks fail what is
still pending.

``deliver_webhook`` makes one attempt of a run's webhook call and retries itself with a
countdown (``self.retry``) while ``judging.runs.webhooks`` says to; it carries the attempt's
number, so a redelivered message of an attempt already made sends nothing.
"""

import logging
from typing import Any

from celery import Task, shared_task
from celery.contrib.django.task import DjangoTask

from judging.runs.execution import (
    bug_prepare,
    judgments_fail,
    patch_judge,
    run_pending_judgment_ids,
    run_start,
)
from judging.runs.rejections import rejection_pending_ids, rejection_sort, rejections_fail
from judging.runs.webhooks import delivery_attempt, delivery_fail

log = logging.getLogger(__name__)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _FailsTheRun(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught fails every pending judgment of the run."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        run_id, _generation = args
        judgments_fail(judgment_ids=run_pending_judgment_ids(run_id=run_id), error=_error(exc))


class _FailsTheBug(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught fails the bug's pending judgments of the run."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        run_id, bug_id, _generation = args
        pending = run_pending_judgment_ids(run_id=run_id, bug_id=bug_id)
        judgments_fail(judgment_ids=pending, error=_error(exc))


class _FailsTheJudgment(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught fails the judgment (members already stored are kept)."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        judgment_id, _generation = args
        judgments_fail(judgment_ids=[judgment_id], error=_error(exc))


@shared_task(name="judging.start_run", base=_FailsTheRun, acks_late=True, ignore_result=True)
def start_run(run_id: int, generation: int) -> int:
    """Fan the run out; return the number of tasks queued."""
    tasks = run_start(run_id=run_id, generation=generation)
    for kind, object_id in tasks:
        if kind == "bug":
            prepare_bug.delay(run_id, object_id, generation)
        else:
            judge_patch.delay(object_id, generation)
    return len(tasks)


@shared_task(name="judging.prepare_bug", base=_FailsTheBug, acks_late=True, ignore_result=True)
def prepare_bug(run_id: int, bug_id: int, generation: int) -> int:
    """One bug's first steps (s4, s5), then its patches; return the patches queued."""
    judgment_ids = bug_prepare(run_id=run_id, bug_id=bug_id, generation=generation)
    for judgment_id in judgment_ids:
        judge_patch.delay(judgment_id, generation)
    return len(judgment_ids)


@shared_task(name="judging.judge_patch", base=_FailsTheJudgment, acks_late=True, ignore_result=True)
def judge_patch(judgment_id: int, generation: int) -> str:
    """Judge one patch with the run's team; return its status."""
    return patch_judge(judgment_id, generation)


class _FailsTheSorting(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught fails the run's rows still waiting to be sorted."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        (run_id,) = args
        rejections_fail(row_ids=rejection_pending_ids(run_id=run_id), error=_error(exc))


class _FailsTheRow(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught fails the row, if it is still pending."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        (row_id,) = args
        rejections_fail(row_ids=[row_id], error=_error(exc))


@shared_task(
    name="judging.sort_rejections", base=_FailsTheSorting, acks_late=True, ignore_result=True
)
def sort_rejections(run_id: int) -> int:
    """Queue one task per pending row of the run; return how many were queued."""
    row_ids = rejection_pending_ids(run_id=run_id)
    for row_id in row_ids:
        sort_rejection.delay(row_id)
    return len(row_ids)


@shared_task(name="judging.sort_rejection", base=_FailsTheRow, acks_late=True, ignore_result=True)
def sort_rejection(row_id: int) -> str:
    """Sort one rejected passing patch's justification into a theme; return the row's status."""
    return rejection_sort(row_id)


class _FailsTheDelivery(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught fails the webhook delivery, shown so on the run page."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        delivery_id, _attempt = args
        delivery_fail(delivery_id=delivery_id, error=_error(exc))


@shared_task(
    name="judging.deliver_webhook",
    bind=True,
    base=_FailsTheDelivery,
    acks_late=True,
    ignore_result=True,
    max_retries=None,  # judging.runs.webhooks counts the attempts
)
def deliver_webhook(self: Task, delivery_id: int, attempt: int) -> str:
    """POST the run's webhook (attempt ``attempt``); retry later if told to; return the
    delivery's status."""
    outcome = delivery_attempt(delivery_id=delivery_id, attempt=attempt)
    if outcome.retry_in is not None:
        raise self.retry(args=(delivery_id, attempt + 1), countdown=outcome.retry_in)
    return outcome.status


def queue_delivery(delivery_id: int, attempt: int, countdown: float = 0.0) -> None:
    """Queue a webhook attempt (registered with ``judging.runs.webhooks`` by the app). If the
    broker refuses, a worker's start queues it again (``deliveries_resume_unfinished``)."""
    try:
        deliver_webhook.apply_async((delivery_id, attempt), countdown=countdown or None)
    except Exception:
        log.exception("could not queue webhook delivery %s; a worker start will", delivery_id)
