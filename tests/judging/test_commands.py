"""``judge``: starting, resuming and following runs from the shell; errors create nothing."""

import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from judging.management.commands.judge import (
    CANCELLED,
    INTERRUPT_EXIT,
    NEW_RUN_NEEDS,
    OFFLINE_NOTE,
    RESUME_ALONE,
    RETRY_NEEDS_RESUME,
    Command,
)
from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.execution import run_start
from judging.runs.selectors import UNKNOWN_RUN
from judging.runs.services import NOTHING_TO_RESUME, run_cancel, run_create
from rubrics.models import Dataset
from rubrics.selectors import UNKNOWN_DATASET, UNKNOWN_PATCHES
from tests.judging.factories import make_golden, unchecked_run
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff
from tests.workers import database_url, running_worker

OnCommit = Callable[..., Any]


def two_bugs(name: str = "Demo Set") -> Dataset:
    """A dataset of two bugs with three patches each: BUG-A-1…3 and BUG-B-1…3."""
    dataset = DatasetFactory(name=name, slug="demo-set")
    for bug_key in ("BUG-A", "BUG-B"):
        bug = BugFactory(dataset=dataset, key=bug_key)
        for n in (1, 2, 3):
            PatchFactory(bug=bug, key=f"{bug_key}-{n}", diff=make_diff(new=f"x = {n}"))
    return dataset


def judge(*args: str) -> str:
    out = io.StringIO()
    call_command("judge", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_judge_creates_a_run_and_the_workers_complete_it(
    eager_tasks: None, django_capture_on_commit_callbacks: OnCommit
) -> None:
    two_bugs()
    with django_capture_on_commit_callbacks(execute=True):
        out = judge("--dataset", "Demo Set", "--team", "rubric,s1b,s3", "--context", "reference")

    run = JudgingRun.objects.get()
    assert out.splitlines()[0] == (
        f"Run {run.pk}: 6 patches of 'Demo Set', judged by rubric, s1b, s3 with context "
        f"reference, on offline/{run.model} (VALID from 50 on 0–100)."
    )
    assert OFFLINE_NOTE in out
    assert "not an LLM" in OFFLINE_NOTE
    assert (run.strategies, run.context, run.provider) == (
        ["rubric", "s1b", "s3"],
        "reference",
        "offline",
    )
    assert run.status == JudgingRun.Status.FINISHED
    assert set(run.judgments.values_list("status", flat=True)) == {PatchJudgment.Status.DONE}
    assert StrategyResult.objects.filter(judgment__run=run).count() == 6 * 3


@pytest.mark.django_db
def test_the_dataset_is_found_by_slug_and_the_threshold_defaults_to_mid_scale() -> None:
    two_bugs()
    out = judge(
        "--dataset", "demo-set", "--team", "s3", "--context", "none", "--scale", "1", "5",
        "--name", "five points", "--model", "ignored-offline",
    )  # fmt: skip
    run = JudgingRun.objects.get()
    assert (run.scale_lo, run.scale_hi, run.threshold, run.name) == (1, 5, 3, "five points")
    assert "(VALID from 3 on 1–5)" in out
    assert run.status == JudgingRun.Status.QUEUED  # no worker here, and none was needed


@pytest.mark.django_db
def test_patches_selects_by_key_and_unknown_keys_are_named(
    eager_tasks: None, django_capture_on_commit_callbacks: OnCommit
) -> None:
    dataset = two_bugs()
    with pytest.raises(CommandError) as excinfo:
        judge(
            "--dataset", "demo-set", "--team", "s3", "--context", "none",
            "--patches", "BUG-A-1,NOPE-2,BUG-B-3,NOPE-1",
        )  # fmt: skip
    assert str(excinfo.value) == UNKNOWN_PATCHES.format(keys="NOPE-1, NOPE-2", dataset=dataset.name)
    assert not JudgingRun.objects.exists()

    with django_capture_on_commit_callbacks(execute=True):
        out = judge(
            "--dataset", "demo-set", "--team", "s3", "--context", "none",
            "--patches", " BUG-A-1, BUG-B-3 ,",
        )  # fmt: skip
    run = JudgingRun.objects.get()
    assert "2 patches of 'Demo Set'" in out
    judged = run.judgments.values_list("patch__key", "status")
    assert sorted(judged) == [("BUG-A-1", "done"), ("BUG-B-3", "done")]


NEW_RUN = ["--dataset", "demo-set", "--team", "rubric,s3", "--context", "golden"]


def replaced(option: str, value: str) -> list[str]:
    """``NEW_RUN`` with ``option`` given ``value``."""
    at = NEW_RUN.index(option)
    return [*NEW_RUN[:at], option, value, *NEW_RUN[at + 2 :]]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (replaced("--dataset", "ghost"), UNKNOWN_DATASET.format(name="ghost")),
        (replaced("--team", "rubric,nope"), "unknown strategy 'nope'; the strategies are rubric"),
        (replaced("--team", "s3,s3"), "strategy 's3' appears twice in the team"),
        (replaced("--context", "all"), "argument --context: invalid choice: 'all'"),
        (replaced("--context", "revision"), "argument --context: invalid choice: 'revision'"),
        (replaced("--team", ""), NEW_RUN_NEEDS),
        (NEW_RUN[2:], NEW_RUN_NEEDS),
        ([*NEW_RUN, "--provider", "gemini"], "GEMINI_API_KEY"),
        ([*NEW_RUN, "--provider", "claude"], "claude"),
        ([*NEW_RUN, "--scale", "5", "1"], "the scale's low end (5.0) must be below its high end"),
        ([*NEW_RUN, "--threshold", "120"], "the threshold (120.0) must lie on the scale 0.0–100.0"),
        ([*NEW_RUN, "--retry-failed"], RETRY_NEEDS_RESUME),
    ],
)
def test_errors_are_clear_and_create_nothing(argv: list[str], message: str) -> None:
    two_bugs()
    with pytest.raises(CommandError) as excinfo:
        judge(*argv)
    assert message in str(excinfo.value)
    assert not JudgingRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_resume_retries_failed_patches_and_waits_for_them(eager_tasks: None) -> None:
    dataset = two_bugs()
    make_golden(dataset.bugs.get(key="BUG-A"))
    # No door starts a run where some patches lack their golden rubric (its pre-flight);
    # one made without it judges them all, and BUG-B's fail, again on a retry.
    run = unchecked_run(dataset=dataset, strategies="rubric,s3", context="golden")
    out = judge("--resume", str(run.pk), "--retry-failed", "--wait")
    assert f"Run {run.pk} finished" in out
    assert "6/6 judged, 3 failed" in out
    assert "Failed patches (3 of 3):" in out
    assert "  BUG-B-1: 1 of 2 members failed: rubric: bug BUG-B has no golden rubric yet" in out

    with pytest.raises(CommandError) as excinfo:
        judge("--resume", str(run.pk))
    assert str(excinfo.value) == NOTHING_TO_RESUME.format(run=run.pk, failed="")

    make_golden(dataset.bugs.get(key="BUG-B"))
    out = judge("--resume", str(run.pk), "--retry-failed", "--wait")
    assert out.startswith(f"Run {run.pk} resumed: 3 of 6 patches queued, judged by rubric, s3")
    assert "6/6 judged, 0 failed" in out
    run.refresh_from_db()
    assert (run.status, run.generation) == (JudgingRun.Status.FINISHED, 2)
    assert set(run.judgments.values_list("status", flat=True)) == {PatchJudgment.Status.DONE}


@pytest.mark.django_db
def test_resume_errors() -> None:
    with pytest.raises(CommandError) as excinfo:
        judge("--resume", "404")
    assert str(excinfo.value) == UNKNOWN_RUN.format(run=404)
    with pytest.raises(CommandError) as excinfo:
        judge("--resume", "404", "--team", "s3", "--scale", "1", "5", "--threshold", "1")
    assert str(excinfo.value) == RESUME_ALONE.format(options="--team, --scale, --threshold")


@pytest.mark.django_db
def test_wait_without_a_worker_says_how_to_start_one_and_gives_up() -> None:
    two_bugs()
    began = time.monotonic()
    out = io.StringIO()
    with pytest.raises(CommandError) as excinfo:
        call_command(
            "judge", "--dataset", "demo-set", "--team", "s3", "--context", "none",
            "--wait", "--worker-timeout", "2", stdout=out,
        )  # fmt: skip
    assert time.monotonic() - began < 10
    run = JudgingRun.objects.get()
    message = str(excinfo.value)
    assert message.startswith(f"run {run.pk} is still queued after 2 s: no Celery worker")
    assert "`make run`" in message
    assert "celery -A sejury_web worker --pool threads --concurrency 8" in message
    assert excinfo.value.returncode != 0
    assert "0/6 judged, 0 failed, 0 calls" in out.getvalue()
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.QUEUED  # judged when a worker starts


@pytest.mark.django_db
def test_a_cancelled_run_is_summarized_and_fails_the_command() -> None:
    dataset = two_bugs()
    run = run_create(actor=None, dataset=dataset, strategies="s3", context="none")
    run_cancel(actor=None, run=run)
    out = io.StringIO()
    with pytest.raises(CommandError) as excinfo:
        Command(stdout=out)._follow(run.pk, worker_timeout=30, stall_timeout=0)
    assert str(excinfo.value) == CANCELLED.format(run=run.pk)
    assert (
        f"Run {run.pk} cancelled (never started): 0 VALID, 0 INVALID, 0 failed, 6 pending, "
        "of 6 patches."
    ) in out.getvalue()


@pytest.mark.django_db
def test_a_running_run_that_stops_moving_is_reported() -> None:
    dataset = two_bugs()
    run = run_create(actor=None, dataset=dataset, strategies="s3", context="none")
    run_start(run_id=run.pk, generation=run.generation)  # running, but nobody judges it
    with pytest.raises(CommandError) as excinfo:
        Command(stdout=io.StringIO())._follow(run.pk, worker_timeout=0, stall_timeout=1.5)
    assert str(excinfo.value).startswith(f"run {run.pk} has not moved for 1.5 s")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_wait_follows_a_real_worker_to_the_summary(tmp_path: Path) -> None:
    two_bugs()
    out = io.StringIO()
    with running_worker(tmp_path / "worker.log", pool="threads", concurrency=4):
        try:
            call_command(
                "judge", "--dataset", "Demo Set", "--team", "rubric,s1b,s3",
                "--context", "none", "--wait", "--worker-timeout", "60", stdout=out,
            )  # fmt: skip
        finally:
            print((tmp_path / "worker.log").read_text(errors="replace")[-3000:])
    run = JudgingRun.objects.get()
    lines = out.getvalue().splitlines()
    assert f"Run {run.pk} finished" in out.getvalue()
    assert "6/6 judged, 0 failed" in out.getvalue()
    summary = next(line for line in lines if line.startswith(f"Run {run.pk} finished"))
    valid, invalid = (
        run.judgments.filter(verdict="VALID").count(),
        6 - run.judgments.filter(verdict="VALID").count(),
    )
    assert f": {valid} VALID, {invalid} INVALID, 0 failed, 0 pending, of 6 patches." in summary
    assert any(line.endswith("output tokens, $0.0000.") for line in lines)
    assert OFFLINE_NOTE in lines
    assert run.status == JudgingRun.Status.FINISHED


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_stops_waiting_and_leaves_the_run_queued(tmp_path: Path) -> None:
    two_bugs()
    env = os.environ | {
        "DATABASE_URL": database_url(),
        # A broker of its own: the message it queues must not reach other tests' workers.
        "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}",
        "PYTHONUNBUFFERED": "1",
        "PYTHONFAULTHANDLER": "1",  # SIGABRT prints every thread's stack: see below
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "judge", "--dataset", "demo-set", "--team", "s3",
         "--context", "none", "--wait", "--worker-timeout", "120"],
        cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as from a terminal, even when the tests run in the background of a shell,
        # which starts its background jobs with SIGINT ignored (and Python then installs no
        # KeyboardInterrupt handler): so it was, once, in CI.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("0/6 judged"):  # it is following the run
                break
        process.send_signal(signal.SIGINT)
        try:
            stdout, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # Say where it hangs, if it does.
            process.send_signal(signal.SIGABRT)
            _, stacks = process.communicate(timeout=10)
            pytest.fail(f"judge did not stop within 60 s of Ctrl-C; its threads:\n{stacks}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    run = JudgingRun.objects.get()
    assert process.returncode == INTERRUPT_EXIT, stdout + stderr
    assert f"Stopped waiting; run {run.pk} goes on in the workers." in stderr
    assert run.status == JudgingRun.Status.QUEUED
