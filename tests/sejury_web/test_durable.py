"""The one pattern for tasks: ``durable_task`` and ``enqueue_on_commit``."""

import logging
from collections.abc import Callable
from typing import Any

import pytest
from django.db import transaction

from sejury_web import durable
from sejury_web.celery import app as celery_app
from sejury_web.durable import DurableTask, durable_task, enqueue_on_commit

failures: list[tuple[Any, ...]] = []


def _probe_failed(number: int, *, error: str, label: str = "") -> None:
    failures.append((number, label, error))


@durable_task(name="tests.durable_probe", on_failure=_probe_failed)
def probe_task(number: int, *, label: str = "") -> int:
    """Divides by ``number``: zero raises what nothing catches."""
    return 10 // number


class Task:
    """A task's ``apply_async`` that the broker refuses ``refusals`` times."""

    name = "tests.fake"

    def __init__(self, refusals: int = 0) -> None:
        self.refusals = refusals
        self.sent: list[tuple[tuple[Any, ...], dict[str, Any], float | None]] = []

    def apply_async(self, args: tuple[Any, ...], kwargs: dict[str, Any], countdown: Any) -> None:
        if self.refusals:
            self.refusals -= 1
            raise ConnectionError("the broker is busy")
        self.sent.append((args, kwargs, countdown))


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(durable, "SEND_PAUSE", 0.0)


def test_a_task_is_queued_only_once_its_transaction_commits(
    db: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    task = Task()
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        enqueue_on_commit(task, 1, 2, countdown=30.0, label="x")
        assert task.sent == []
    assert len(callbacks) == 1
    assert task.sent == [((1, 2), {"label": "x"}, 30.0)]


def test_no_countdown_starts_at_once(
    db: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    task = Task()
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit(task, 7)
    assert task.sent == [((7,), {}, None)]


def test_a_refusing_broker_is_tried_once_more_then_logged_not_raised(
    db: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    once = Task(refusals=1)
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit(once, 1)
    assert once.sent == [((1,), {}, None)]

    always = Task(refusals=5)
    with (
        caplog.at_level(logging.ERROR, logger="sejury_web.durable"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        enqueue_on_commit(always, 2)
    assert always.sent == []
    assert always.refusals == 3  # two attempts
    assert "could not queue tests.fake(2,); a worker start will" in caplog.text


def test_a_task_that_raises_calls_its_failure_function_with_its_arguments() -> None:
    failures.clear()
    assert probe_task.apply(args=(5,)).result == 2
    assert failures == []
    result = probe_task.apply(args=(0,), kwargs={"label": "zero"})
    assert isinstance(result.result, ZeroDivisionError)
    assert failures == [(0, "zero", "ZeroDivisionError: integer division or modulo by zero")]


def test_every_task_of_the_apps_is_durable_and_late_acknowledged() -> None:
    celery_app.loader.import_default_modules()
    names = [name for name in celery_app.tasks if name.startswith(("judging.", "rubrics."))]
    assert sorted(names) == [
        "judging.batch_round",
        "judging.deliver_webhook",
        "judging.judge_patch",
        "judging.judge_test",
        "judging.prepare_bug",
        "judging.sort_rejection",
        "judging.sort_rejections",
        "judging.start_run",
        "rubrics.draft_rubric",
        "rubrics.import_bundle_upload",
    ]
    for name in names:
        task = celery_app.tasks[name]
        assert isinstance(task, DurableTask), name
        assert task.acks_late, name
        assert name in durable._failure_functions, name
        assert task.__name__.endswith("_task"), name


# -- what a starting worker resumes -------------------------------------------------------


def test_every_task_of_the_apps_belongs_to_a_kind_of_job_a_starting_worker_resumes() -> None:
    resumed = {task for kind in durable.job_kinds() for task in kind.tasks}
    apps = {name for name in durable.durable_task_names() if not name.startswith("tests.")}
    assert apps - resumed == set()  # a new task needs its JobKind, registered from ready()
    assert resumed - apps == set()  # and a kind names real tasks
    assert {kind.name for kind in durable.job_kinds()} >= {
        "judging runs",
        "rubric drafts",
        "bundle uploads",
        "sortings of rejected passing patches",
        "webhook deliveries",
        "batch jobs of cancelled runs",
    }


def test_a_kind_that_cannot_resume_is_logged_and_the_others_are_resumed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> list[int]:
        raise RuntimeError("the database is gone")

    monkeypatch.setattr(durable, "_job_kinds", {})
    durable.job_kind_register(durable.JobKind("broken jobs", ("tests.a",), broken))
    durable.job_kind_register(durable.JobKind("good jobs", ("tests.b",), lambda: [3, 4]))
    with caplog.at_level(logging.INFO, logger="sejury_web.durable"):
        assert durable.jobs_resume_unfinished() == {"good jobs": [3, 4]}
    assert "could not resume the unfinished broken jobs" in caplog.text
    assert "resumed good jobs [3, 4]" in caplog.text
