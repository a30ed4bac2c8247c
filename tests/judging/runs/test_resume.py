"""A worker killed mid-run: the next worker finishes the run, repeating no completed result.

Real parts throughout: a Celery worker process on the test database and broker, the OpenAI
SDK talking to a local server that speaks its protocol, and SIGKILL, which gives the worker
no chance to clean up (its delivered messages are lost with it).
"""

import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.services import run_create
from sejury_web.llm.models import LLMCall
from tests.rubrics.factories import BugFactory, PatchFactory, make_diff
from tests.sejury_web.llm.fake_servers import OpenAIServer, ok
from tests.sejury_web.llm.helpers import point_at
from tests.workers import running_worker, start_worker

PATCHES = 12
TEAM = ["s1b", "s3"]
LATENCY = 0.4


def _wait_for(condition: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            print(log.read_text(errors="replace")[-4000:])
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _prompt(body: dict) -> str:
    """The user message of a request: it names the patch and the strategy."""
    return json.dumps(body["messages"], sort_keys=True)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_s_run_is_finished_by_the_next_without_repeating_results(
    settings: Settings, tmp_path: Path
) -> None:
    answer = ok('{"score": 70, "reasoning": "keeps the fix"}')
    with OpenAIServer(latency=LATENCY, default=lambda _body: answer) as server:
        point_at(
            settings, tmp_path, PROVIDER="openai", OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=server.base_url,
        )  # fmt: skip
        worker_env = {
            # The test settings force the offline model; the worker must use the server.
            "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
            "SEJURY_LLM_PROVIDER": "openai",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
            "SEJURY_LLM_LOCK_DIR": str(tmp_path / "limits"),
        }
        bug = BugFactory()
        for n in range(PATCHES):
            PatchFactory(bug=bug, dataset=bug.dataset, diff=make_diff(new=f"x = {n + 10}"))
        run = run_create(actor=None, dataset=bug.dataset, strategies=TEAM, context="reference")
        log = tmp_path / "first.log"
        first = start_worker(log, pool="threads", concurrency=2, env=worker_env)
        try:
            _wait_for(
                lambda: PatchJudgment.objects.filter(run=run, status="done").count() >= 3,
                90, "three judged patches", log,
            )  # fmt: skip
        finally:
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
        before = {
            (r.judgment_id, r.strategy): (r.pk, r.created_at, r.call_ids)
            for r in StrategyResult.objects.filter(judgment__run=run)
        }
        run.refresh_from_db()
        assert run.status == JudgingRun.Status.RUNNING
        assert 0 < len(before) < PATCHES * len(TEAM)

        log = tmp_path / "second.log"
        with running_worker(log, pool="threads", concurrency=2, env=worker_env):
            _wait_for(
                lambda: JudgingRun.objects.get(pk=run.pk).status == JudgingRun.Status.FINISHED,
                120, "the run to finish", log,
            )  # fmt: skip

    judgments = PatchJudgment.objects.filter(run=run)
    assert [j.status for j in judgments] == ["done"] * PATCHES
    assert all(j.score == pytest.approx(70.0) and j.verdict == "VALID" for j in judgments)
    results = StrategyResult.objects.filter(judgment__run=run)
    assert results.count() == PATCHES * len(TEAM)  # no duplicates, nothing missing
    after = {(r.judgment_id, r.strategy): (r.pk, r.created_at, r.call_ids) for r in results}
    for key, kept in before.items():
        assert after[key] == kept  # completed results untouched
    # No request behind a result completed before the kill was sent again. (Requests in
    # flight when the worker died had no result yet; those are the only repeats allowed.)
    sent = Counter(_prompt(request.body) for request in server.requests if request.body)
    for key, (_pk, _created, call_ids) in before.items():
        call = LLMCall.objects.get(pk=call_ids[0])
        assert sent[json.dumps(call.messages, sort_keys=True)] == 1, key
    repeats = sum(count - 1 for count in sent.values())
    # At most the two requests in flight at the kill, and two more if the new worker ran an
    # old message's call while the resumed one ran the same member (both then store once).
    assert repeats <= 4
