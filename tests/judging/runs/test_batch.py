"""Batch mode end to end: a run judged through OpenAI's Batch API in rounds, by a real Celery
worker, with the real ``openai`` SDK against the fake batch server; and what a kill, an
expired job, error lines and a cancel do to it.
"""

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings

from judging.models import BugStep, JudgingRun, PatchJudgment, StrategyResult
from judging.runs.batch import run_owner
from judging.runs.services import (
    RUN_BATCH_LEAVE,
    run_batch_leave,
    run_cancel,
    run_create,
    run_resume,
)
from sejury_web.audit import AuditEvent
from sejury_web.llm.models import LLMBatch, LLMBatchRequest, LLMCall
from sejury_web.llm.prices import call_cost
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff
from tests.sejury_web.llm.fake_batch import GeminiBatchServer, OpenAIBatchServer
from tests.sejury_web.llm.fake_servers import error, ok, schema_reply
from tests.sejury_web.llm.helpers import point_at
from tests.workers import running_worker, start_worker

MODEL = "gpt-4o-mini"
TEAM = ["s2", "s4"]
BUGS, PATCHES_PER_BUG = 2, 3


def _wait_for(condition: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            print(log.read_text(errors="replace")[-6000:])
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@contextmanager
def _batch_server(
    settings: Settings, tmp_path: Path, **kw: object
) -> Iterator[tuple[OpenAIBatchServer, dict[str, str]]]:
    with OpenAIBatchServer(default=schema_reply, **kw) as server:  # type: ignore[arg-type]
        point_at(
            settings, tmp_path, PROVIDER="openai", MODEL=MODEL, OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=server.base_url,
        )  # fmt: skip
        env = {
            "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
            "SEJURY_LLM_PROVIDER": "openai",
            "SEJURY_LLM_MODEL": MODEL,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
            "SEJURY_LLM_LOCK_DIR": str(tmp_path / "limits"),
            "SEJURY_LLM_LOCAL_FREE": "0",
            "SEJURY_LLM_MAX_ATTEMPTS": "3",
            "SEJURY_LLM_BATCH_POLL_SECONDS": "0.2",
        }
        yield server, env


def _batch_run(team: list[str] = TEAM) -> JudgingRun:
    dataset = DatasetFactory()
    for b in range(BUGS):
        bug = BugFactory(dataset=dataset, reference_patch=make_diff(new=f"x = {b}"))
        for n in range(PATCHES_PER_BUG):
            PatchFactory(bug=bug, diff=make_diff(new=f"x = {b}{n}"))
    return run_create(actor=None, dataset=dataset, strategies=team, context="reference", batch=True)


def _finished(run: JudgingRun) -> Callable[[], bool]:
    return lambda: JudgingRun.objects.get(pk=run.pk).status == JudgingRun.Status.FINISHED


def _bodies(server: OpenAIBatchServer) -> Counter[str]:
    return Counter(json.dumps(line["body"], sort_keys=True) for line in server.lines_received)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_team_with_s2_and_s4_is_judged_in_batch_rounds_at_half_the_price(
    settings: Settings, tmp_path: Path
) -> None:
    with _batch_server(settings, tmp_path) as (server, env):
        run = _batch_run()
        log = tmp_path / "worker.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(_finished(run), 90, "the run to finish", log)

    patches = BUGS * PATCHES_PER_BUG
    judgments = PatchJudgment.objects.filter(run=run)
    assert [j.status for j in judgments] == ["done"] * patches
    # Round 1: s4's bug steps and s2's first turns; round 2: s4's judgments and s2's
    # rethinks, each of which needed an answer of round 1.
    jobs = LLMBatch.objects.filter(owner=run_owner(run.pk))
    assert sorted(jobs.values_list("round", flat=True)) == [1, 2]
    by_round = {job.round: job.request_count for job in jobs}
    assert by_round == {1: BUGS + patches, 2: 2 * patches}
    # Every call needed, once; none went as an ordinary call.
    assert sum(_bodies(server).values()) == BUGS + 3 * patches
    assert set(_bodies(server).values()) == {1}
    assert not [r for r in server.requests if r.path == "/v1/chat/completions"]
    calls = LLMCall.objects.all()
    assert calls.count() == BUGS + 3 * patches
    assert all(c.status == "ok" and c.settings["batch"] for c in calls)
    # The bill: every call at the batch rate, half the ordinary one.
    ordinary = sum(
        call_cost(MODEL, input_tokens=c.input_tokens, output_tokens=c.output_tokens,
                  cached_tokens=c.cached_tokens) for c in calls
    )  # fmt: skip
    results = StrategyResult.objects.filter(judgment__run=run)
    steps = BugStep.objects.filter(run=run)
    billed = sum(r.cost_usd for r in results) + sum(s.cost_usd for s in steps)
    assert billed == pytest.approx(ordinary / 2, abs=Decimal("0.0000001"))
    assert sum(r.provider_calls for r in results) + sum(s.provider_calls for s in steps) == (
        calls.count()
    )
    s2 = results.filter(strategy="s2").first()
    assert s2 is not None
    assert set(s2.answers) == {"assess", "rethink"}


def _owner_jobs(run: JudgingRun) -> list[LLMBatch]:
    return list(LLMBatch.objects.filter(owner=run_owner(run.pk)).order_by("round", "pk"))


def _kill(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_while_a_batch_runs_and_while_its_results_are_stored_loses_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    patches = BUGS * PATCHES_PER_BUG
    with _batch_server(settings, tmp_path, line_delay=0.3) as (server, env):
        env |= {"SEJURY_LLM_BATCH_STORE_CHUNK": "1"}  # one transaction per result
        run = _batch_run()
        server.hold()
        log = tmp_path / "first.log"
        first = start_worker(log, pool="threads", concurrency=2, env=env)
        try:
            _wait_for(
                lambda: any(job.provider_batch_id for job in _owner_jobs(run)),
                60, "round 1 at the provider", log,
            )  # fmt: skip
        finally:
            _kill(first)
        assert server.jobs_created() == 1

        server.release()
        log = tmp_path / "second.log"
        second = start_worker(log, pool="threads", concurrency=2, env=env)
        stored = LLMBatchRequest.objects.filter(batch__round=1, status="done")
        try:
            _wait_for(lambda: stored.count() >= 2, 60, "round 1's results being stored", log)
        finally:
            _kill(second)
        [job] = _owner_jobs(run)
        assert job.status == LLMBatch.Status.ENDED  # killed amid its results
        assert 2 <= stored.count() < BUGS + patches
        assert server.jobs_created() == 1

        server.line_delay = 0  # the trickle was there to kill the second worker amid it
        log = tmp_path / "third.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(_finished(run), 90, "the run to finish", log)

    assert [j.status for j in PatchJudgment.objects.filter(run=run)] == ["done"] * patches
    assert server.jobs_created() == 2  # round 1 once, round 2 once
    assert set(_bodies(server).values()) == {1}  # no request sent twice
    assert sum(_bodies(server).values()) == BUGS + 3 * patches
    calls = LLMCall.objects.all()
    assert calls.count() == BUGS + 3 * patches  # one row per request: none written twice
    assert set(Counter(calls.values_list("request_hash", flat=True)).values()) == {1}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_expired_batch_keeps_its_answers_and_asks_the_rest_in_the_next_round(
    settings: Settings, tmp_path: Path
) -> None:
    patches = BUGS * PATCHES_PER_BUG
    with _batch_server(settings, tmp_path) as (server, env):
        run = _batch_run()
        server.expire_next(answered=3)
        log = tmp_path / "worker.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(_finished(run), 90, "the run to finish", log)

    assert [j.status for j in PatchJudgment.objects.filter(run=run)] == ["done"] * patches
    first = _owner_jobs(run)[0]
    assert first.provider_status == "expired"
    # The 3 answers of the expired job were kept; only the other requests went again.
    unanswered = BUGS + patches - 3
    assert sum(_bodies(server).values()) == BUGS + 3 * patches + unanswered
    assert LLMCall.objects.filter(status="ok").count() == BUGS + 3 * patches
    assert LLMCall.objects.filter(attempts=2).count() == unanswered


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_error_lines_are_asked_again_or_fail_their_member_alone(
    settings: Settings, tmp_path: Path
) -> None:
    patches = BUGS * PATCHES_PER_BUG
    overloaded: list[int] = []
    refuse = [True]

    def reply(body: dict) -> object:
        text = json.dumps(body)
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
        first_turn = "reasons" in schema.get("properties", {})  # s2's first turn
        if first_turn and "x = 01" in text and refuse:
            return error(400, "Invalid 'messages': this request is refused")
        if first_turn and "x = 02" in text and not overloaded:
            overloaded.append(1)
            return error(500, "The server is overloaded")
        return schema_reply(body)

    with _batch_server(settings, tmp_path) as (server, env):
        server.default = reply  # type: ignore[assignment]
        run = _batch_run()
        log = tmp_path / "worker.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(_finished(run), 90, "the run to finish", log)

            judgments = PatchJudgment.objects.filter(run=run).select_related("patch")
            failed = [j for j in judgments if j.status == "failed"]
            assert [j.patch.diff for j in failed] == [make_diff(new="x = 01")]
            assert "400" in failed[0].error
            assert "refused" in failed[0].error
            assert len([j for j in judgments if j.status == "done"]) == patches - 1
            retried = LLMCall.objects.get(status="ok", attempts=2)
            assert "overloaded" in retried.attempt_log[0]["error"]
            sent = sum(_bodies(server).values())

            # The server takes the request now: Retry failed asks it again in a batch.
            refuse.clear()
            run_resume(run=run, actor=None, retry_failed=True)
            _wait_for(_finished(run), 90, "the retried run to finish", log)

    statuses = PatchJudgment.objects.filter(run=run).values_list("status", flat=True)
    assert list(statuses) == ["done"] * patches
    # Only the refused request and the turn that needed its answer were sent again.
    assert sum(_bodies(server).values()) == sent + 2


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_cancelling_the_run_cancels_its_batch(settings: Settings, tmp_path: Path) -> None:
    with _batch_server(settings, tmp_path) as (server, env):
        env["SEJURY_LLM_BATCH_POLL_SECONDS"] = "60"  # the cancel must not wait for a poll
        run = _batch_run()
        server.hold()
        log = tmp_path / "worker.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(
                lambda: any(job.provider_batch_id for job in _owner_jobs(run)),
                60, "round 1 at the provider", log,
            )  # fmt: skip
            run_cancel(run=run, actor=None)
            _wait_for(
                lambda: all(job.status == "stored" for job in _owner_jobs(run)),
                20, "the cancelled batch to be stored", log,
            )  # fmt: skip
        [sent] = server.batches.values()
    assert sent.status == "cancelled"
    [job] = _owner_jobs(run)
    assert job.cancel_requested
    assert JudgingRun.objects.get(pk=run.pk).status == JudgingRun.Status.CANCELLED
    assert set(PatchJudgment.objects.filter(run=run).values_list("status", flat=True)) == {
        "pending"
    }
    assert not LLMCall.objects.filter(status="ok").exists()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_lead_may_go_on_with_ordinary_calls_while_a_round_waits(
    settings: Settings, tmp_path: Path
) -> None:
    patches = BUGS * PATCHES_PER_BUG
    with _batch_server(settings, tmp_path) as (server, env):
        run = _batch_run()
        server.hold()
        log = tmp_path / "worker.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(
                lambda: any(job.provider_batch_id for job in _owner_jobs(run)),
                60, "round 1 at the provider", log,
            )  # fmt: skip
            run_batch_leave(run=run, actor=None)
            _wait_for(_finished(run), 90, "the run to finish", log)
            _wait_for(
                lambda: all(job.status == "stored" for job in _owner_jobs(run)),
                60, "the cancelled round to be stored", log,
            )  # fmt: skip
        [sent] = server.batches.values()
        ordinary = [r for r in server.requests if r.path == "/v1/chat/completions"]
    assert sent.status == "cancelled"
    assert [j.status for j in PatchJudgment.objects.filter(run=run)] == ["done"] * patches
    assert len(ordinary) == BUGS + 3 * patches  # the round was cancelled before answering
    run = JudgingRun.objects.get(pk=run.pk)
    assert not run.batch
    assert AuditEvent.objects.filter(action=RUN_BATCH_LEAVE).count() == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_team_with_s2_and_s4_is_judged_in_rounds_through_gemini_batch_mode(
    settings: Settings, tmp_path: Path
) -> None:
    model = "gemini-2.5-flash"
    with GeminiBatchServer(default=schema_reply) as server:
        point_at(
            settings, tmp_path, PROVIDER="gemini", MODEL=model, GEMINI_API_KEY="test-key",
            GEMINI_BASE_URL=server.url,
        )  # fmt: skip
        env = {
            "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
            "SEJURY_LLM_PROVIDER": "gemini",
            "SEJURY_LLM_MODEL": model,
            "GEMINI_API_KEY": "test-key",
            "GEMINI_BASE_URL": server.url,
            "SEJURY_LLM_LOCK_DIR": str(tmp_path / "limits"),
            "SEJURY_LLM_LOCAL_FREE": "0",
            "SEJURY_LLM_BATCH_POLL_SECONDS": "0.2",
        }
        run = _batch_run()
        log = tmp_path / "worker.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(_finished(run), 90, "the run to finish", log)
        sent = len(server.lines_received)
        ordinary = [r for r in server.requests if r.path.endswith(":generateContent")]

    patches = BUGS * PATCHES_PER_BUG
    assert [j.status for j in PatchJudgment.objects.filter(run=run)] == ["done"] * patches
    assert [job.round for job in _owner_jobs(run)] == [1, 2]
    assert sent == BUGS + 3 * patches
    assert ordinary == []
    calls = LLMCall.objects.all()
    assert {(c.provider, c.status, c.settings["batch"]) for c in calls} == {("gemini", "ok", True)}
    ordinary_cost = sum(
        call_cost(model, input_tokens=c.input_tokens, output_tokens=c.output_tokens,
                  cached_tokens=c.cached_tokens) for c in calls
    )  # fmt: skip
    assert sum(c.cost_usd for c in calls) == pytest.approx(ordinary_cost / 2)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_unparsed_answer_is_asked_again_with_its_correction_in_the_next_round(
    settings: Settings, tmp_path: Path
) -> None:
    with _batch_server(settings, tmp_path) as (server, env):
        server.script(ok("a score of about seventy"))  # the first line of round 1
        run = _batch_run()
        log = tmp_path / "worker.log"
        with running_worker(log, pool="threads", concurrency=2, env=env):
            _wait_for(_finished(run), 90, "the run to finish", log)

    patches = BUGS * PATCHES_PER_BUG
    assert [j.status for j in PatchJudgment.objects.filter(run=run)] == ["done"] * patches
    rounds = [(job.round, job.request_count) for job in _owner_jobs(run)]
    # Round 2 asks the correction beside the second turns; the corrected call's own second
    # turn waits for round 3.
    assert rounds == [(1, BUGS + patches), (2, 2 * patches), (3, 1)]
    corrected = LLMCall.objects.get(attempts=2)
    assert corrected.raw_text != "a score of about seventy"
    assert "a score of about seventy" in corrected.attempt_log[0]["raw_text"]
