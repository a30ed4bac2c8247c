"""``judge --batch``: a batch-mode run from the shell, and ``--wait`` on one."""

import io
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from pytest_django.fixtures import Settings

from judging.management.commands.judge import CANCELLED, RESUME_ALONE, Command
from judging.models import JudgingRun
from judging.runs.services import run_cancel, run_create
from rubrics.models import Dataset
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory
from tests.sejury_web.llm.fake_batch import OpenAIBatchServer
from tests.sejury_web.llm.helpers import point_at

ARGS = ("--dataset", "batch-set", "--team", "s1b", "--context", "none", "--batch")


def _dataset() -> None:
    dataset = DatasetFactory(name="Batch set", slug="batch-set")
    PatchFactory(bug=BugFactory(dataset=dataset))


def _judge(*args: str) -> str:
    out = io.StringIO()
    call_command("judge", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.django_db
def test_judge_batch_starts_a_batch_run(settings: Settings, tmp_path: Path) -> None:
    _dataset()
    with OpenAIBatchServer() as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        _judge(*ARGS)
        with pytest.raises(CommandError, match=RESUME_ALONE.split("{")[0]) as refused:
            _judge("--resume", str(JudgingRun.objects.get().pk), "--batch")
    assert "--batch" in str(refused.value)
    assert JudgingRun.objects.get().batch


@pytest.mark.django_db
def test_judge_batch_says_why_a_server_cannot(settings: Settings, tmp_path: Path) -> None:
    _dataset()
    with OpenAIBatchServer(batch_api=False) as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        with pytest.raises(CommandError, match="no batch API"):
            _judge(*ARGS)
    assert not JudgingRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_wait_does_not_call_a_batch_run_waiting_on_its_provider_stalled(
    settings: Settings, tmp_path: Path
) -> None:
    _dataset()
    with OpenAIBatchServer() as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        run = run_create(
            actor=None, dataset=Dataset.objects.get(), strategies="s1b", context="none",
            batch=True,
        )  # fmt: skip
    JudgingRun.objects.filter(pk=run.pk).update(status=JudgingRun.Status.RUNNING)
    # Nothing moves for longer than the stall timeout; then the lead cancels the run.
    threading.Timer(2.0, lambda: run_cancel(run=run, actor=None)).start()
    with pytest.raises(CommandError) as ended:
        Command(stdout=io.StringIO())._follow(run.pk, worker_timeout=0, stall_timeout=0.5)
    assert str(ended.value) == CANCELLED.format(run=run.pk)
