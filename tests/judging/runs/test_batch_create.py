"""Starting a run in batch mode: the server is asked first whether it has a batch API."""

import socket
import time
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from judging.models import JudgingRun
from judging.runs.batch import BATCH_UNREACHABLE, NO_BATCH_OFFLINE, batch_problem
from judging.runs.services import BATCH_REFUSED, RunError, run_create
from sejury_web.audit import AuditEvent
from tests.rubrics.factories import BugFactory, PatchFactory
from tests.sejury_web.llm.fake_batch import OpenAIBatchServer
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db


def _dataset() -> object:
    bug = BugFactory()
    PatchFactory(bug=bug)
    return bug.dataset


def test_a_batch_run_is_created_when_the_server_has_a_batch_api(
    settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer() as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        run = run_create(
            actor=None, dataset=_dataset(), strategies="s1b", context="reference", batch=True
        )
        assert server.jobs_created() == 0  # asked, not submitted
        assert [r.path for r in server.requests] == ["/v1/batches", "/v1/files"]
    assert JudgingRun.objects.get(pk=run.pk).batch
    assert AuditEvent.objects.get(action="run.create").detail["batch"] is True


def test_a_server_without_a_batch_api_refuses_the_run_before_anything_is_created(
    settings: Settings, tmp_path: Path
) -> None:
    with OpenAIBatchServer(batch_api=False) as server:
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=server.base_url)
        with pytest.raises(RunError) as refused:
            run_create(
                actor=None, dataset=_dataset(), strategies="s1b", context="reference", batch=True
            )
        assert server.jobs_created() == 0
    message = str(refused.value)
    assert message.startswith(BATCH_REFUSED.split("{")[0])
    assert "404 on /v1/batches" in message
    assert "ordinary calls" in message  # the other choice
    assert not JudgingRun.objects.exists()


def test_the_offline_heuristic_has_no_batch_mode() -> None:
    with pytest.raises(RunError, match=NO_BATCH_OFFLINE.split(":")[0]):
        run_create(
            actor=None,
            dataset=_dataset(),
            strategies="s1b",
            context="reference",
            provider="offline",
            batch=True,
        )


def test_a_server_that_does_not_answer_is_said_so_quickly(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sejury_web.llm.batch import openai_batch

    monkeypatch.setattr(openai_batch, "CHECK_TIMEOUT", 0.5)
    with socket.socket() as silent:  # takes the connection, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        point_at(settings, tmp_path, PROVIDER="openai", OPENAI_BASE_URL=url)
        started = time.monotonic()
        problem = batch_problem(provider="openai", model="gpt-4o-mini")
        assert time.monotonic() - started < 5  # not the SDK's retries of a long timeout
    assert problem.startswith(BATCH_UNREACHABLE.split("{")[0])
