"""How every app declares a Celery task and queues one: the one pattern for tasks.

``durable_task`` declares a task that loses no work: acknowledged late (a killed worker's
message is delivered again, so the task must be idempotent), named explicitly (the name is
what a queued message carries: renaming the function never strands a message), and given a
failure function, called with the task's own arguments and ``error`` when the task raises
what nothing caught, so that what the task was for is marked failed, never left pending::

    def _run_failed(run_id: int, generation: int, *, error: str) -> None:
        judgments_fail(judgment_ids=run_pending_judgment_ids(run_id=run_id), error=error)

    @durable_task(name="judging.start_run", on_failure=_run_failed, ignore_result=True)
    def run_start_task(run_id: int, generation: int) -> int: ...

``enqueue_on_commit`` queues a task once the caller's transaction commits (at once outside
one), so a worker never looks for a row that is not committed yet. Every service queues
this way, whether it sends at once, later (``countdown``: a webhook's retry) or a task it
cannot import (``judging.runs.webhooks`` is given its task by ``JudgingConfig.ready()``).
If the broker refuses (a fresh SQLite broker may be creating its queue as a worker starts),
it tries once more, then logs and leaves the work queued in the database: the caller's
write is committed already, and raising would tell its user that it was not.

A message a killed worker held may never come back (the SQLite broker deletes what it
delivers), so the database, not the broker, says what is unfinished: every kind of job
registers a ``JobKind`` (from its app's ``ready()``) whose ``resume`` queues again, or fails
saying why, every job of the kind left unfinished, and a starting worker calls them all
(``jobs_resume_unfinished``, on Celery's ``worker_ready``). Each ``durable_task`` belongs to
one kind (``JobKind.tasks``): a task that no kind resumes is refused by the tests.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from celery import shared_task
from celery.contrib.django.task import DjangoTask
from django.db import transaction

log = logging.getLogger(__name__)

SEND_ATTEMPTS = 2
SEND_PAUSE = 0.5  # seconds between the two attempts

# A task's failure function: the task's arguments, and ``error``, the exception as text.
FailureFunction = Callable[..., None]

_failure_functions: dict[str, FailureFunction] = {}


class DurableTask(DjangoTask):
    """The base of every ``durable_task``: on an exception nothing caught, the failure
    function registered under the task's name."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        failed = _failure_functions.get(self.name)
        if failed is not None:
            failed(*args, error=f"{type(exc).__name__}: {exc}", **kwargs)


def durable_task(
    *, name: str, on_failure: FailureFunction, **options: Any
) -> Callable[[Callable[..., Any]], Any]:
    """Declare a Celery task under ``name``, acknowledged late, whose exceptions nothing
    caught call ``on_failure(*args, error=..., **kwargs)``; ``options`` go to Celery
    (``bind``, ``ignore_result``, ``max_retries``)."""

    def declare(run: Callable[..., Any]) -> Any:
        _failure_functions[name] = on_failure
        return shared_task(name=name, base=DurableTask, acks_late=True, **options)(run)

    return declare


def enqueue_on_commit(task: Any, *args: Any, countdown: float = 0.0, **kwargs: Any) -> None:
    """Queue ``task(*args, **kwargs)`` once the current transaction commits, to start after
    ``countdown`` seconds; what the broker refuses twice is logged, not raised."""
    transaction.on_commit(partial(_send, task, args, kwargs, countdown))


def _send(task: Any, args: tuple[Any, ...], kwargs: dict[str, Any], countdown: float) -> None:
    for attempt in range(1, SEND_ATTEMPTS + 1):
        try:
            task.apply_async(args, kwargs, countdown=countdown or None)
            return
        except Exception:
            if attempt == SEND_ATTEMPTS:
                log.exception("could not queue %s%s; a worker start will", task.name, args)
                return
            time.sleep(SEND_PAUSE)


@dataclass(frozen=True)
class JobKind:
    """A kind of background job that a starting worker resumes.

    ``resume()`` queues again every job of the kind that is not finished (a killed worker's
    among them), or fails it with the reason when it cannot be done, and returns their ids;
    it must be harmless to call while another worker is still at them. ``tasks`` are the
    wire names of the ``durable_task``s that do the kind's work."""

    name: str  # in the plural, as the log says it: "judging runs"
    tasks: tuple[str, ...]
    resume: Callable[[], list[int]]


_job_kinds: dict[str, JobKind] = {}


def job_kind_register(kind: JobKind) -> None:
    """Add ``kind`` to what a starting worker resumes (from an app's ``ready()``)."""
    _job_kinds[kind.name] = kind


def job_kinds() -> list[JobKind]:
    return list(_job_kinds.values())


def jobs_resume_unfinished(**_: object) -> dict[str, list[int]]:
    """Resume every registered kind's unfinished jobs (a worker starting: Celery's
    ``worker_ready``); a kind that raises is logged and the others go on."""
    resumed: dict[str, list[int]] = {}
    for kind in job_kinds():
        try:
            resumed[kind.name] = ids = kind.resume()
        except Exception:
            log.exception("could not resume the unfinished %s", kind.name)
            continue
        if ids:
            log.info("resumed %s %s", kind.name, ids)
    return resumed


def durable_task_names() -> set[str]:
    """The wire names of every ``durable_task`` declared so far."""
    return set(_failure_functions)
