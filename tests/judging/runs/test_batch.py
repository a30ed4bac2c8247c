"""Batch mode end to end: a run judged through OpenAI's Batch API in rounds, by a real Celery
worker, with the real ``openai`` SDK against the fake batch server; and what a kill, an
expired job, error lines and a cancel do to it.

The tests share one worker (module-scoped: starting one costs seconds of CPU). Its
environment, fixed when it starts, names the fake servers' ports, so the ports stay for the
module and each test brings a fresh fake server onto them (``answered_by``). The worker is
ready before a test creates its run, so one task drives each run. The kill test kills
workers of its own, and starts the module's worker again to finish the run.
"""

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import Settings

from judging.judges.services import STARTERS, judge_define
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
from tests.workers import start_worker

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


@dataclass
class Shared:
    """What the module's tests share: the fake servers' ports and the worker whose
    environment names them."""

    openai: OpenAIBatchServer
    gemini: GeminiBatchServer
    tmp: Path
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def worker_up(self) -> None:
        """Start the worker unless it runs, and wait until it is ready: it has resumed what
        it found unfinished (Celery's ``worker_ready``), so a run created after that is
        driven by its own task alone."""
        if self.process is not None and self.process.poll() is None:
            return
        self.starts += 1
        self.log = self.tmp / f"worker-{self.starts}.log"
        self.process = start_worker(self.log, pool="threads", concurrency=2, env=self.env)
        _wait_for(
            lambda: " ready." in self.log.read_text(errors="replace"),
            60, "the worker to start", self.log,
        )  # fmt: skip

    def worker_down(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@pytest.fixture(scope="module")
def shared(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    tmp = tmp_path_factory.mktemp("batch")
    with OpenAIBatchServer() as openai, GeminiBatchServer() as gemini:
        env = {
            "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
            "SEJURY_LLM_PROVIDER": "openai",
            "SEJURY_LLM_MODEL": MODEL,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": openai.base_url,
            # A run names its provider and model: a run on Gemini goes there.
            "GEMINI_API_KEY": "test-key",
            "GEMINI_BASE_URL": gemini.url,
            "SEJURY_LLM_LOCK_DIR": str(tmp / "limits"),
            "SEJURY_LLM_LOCAL_FREE": "0",
            "SEJURY_LLM_MAX_ATTEMPTS": "3",
            "SEJURY_LLM_BATCH_POLL_SECONDS": "0.2",
        }
        state = Shared(openai, gemini, tmp, env, log=tmp / "batch_worker.log")
        try:
            yield state
        finally:
            state.worker_down()


@pytest.fixture
def batch(
    shared: Shared, transactional_db: None, request: pytest.FixtureRequest
) -> Iterator[Shared]:
    """The module's servers and worker. After a test that failed, whose run may still be
    under way, the worker is stopped: the next test starts a fresh one."""
    failed = request.session.testsfailed
    yield shared
    if request.session.testsfailed > failed:
        shared.worker_down()


@pytest.fixture
def batch_worker(batch: Shared) -> Shared:
    """The module's worker, running and ready (in place of the suite's ``worker``)."""
    batch.worker_up()
    return batch


@contextmanager
def _batch_server(settings: Settings, batch: Shared, **kw: Any) -> Iterator[OpenAIBatchServer]:
    """A fresh fake OpenAI batch server on the module's port, the settings pointing at it."""
    with batch.openai.answered_by(OpenAIBatchServer(default=schema_reply, **kw)) as server:
        point_at(
            settings, batch.tmp, PROVIDER="openai", MODEL=MODEL, OPENAI_API_KEY="sk-test",
            OPENAI_BASE_URL=server.base_url,
        )  # fmt: skip
        yield server


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


def _owner_jobs(run: JudgingRun) -> list[LLMBatch]:
    return list(LLMBatch.objects.filter(owner=run_owner(run.pk)).order_by("round", "pk"))


def _kill(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_while_a_batch_runs_and_while_its_results_are_stored_loses_nothing(
    settings: Settings, batch: Shared, tmp_path: Path
) -> None:
    # Its own workers, killed with SIGKILL: the module's worker must not take the run's tasks.
    batch.worker_down()
    patches = BUGS * PATCHES_PER_BUG
    env = batch.env | {"SEJURY_LLM_BATCH_STORE_CHUNK": "1"}  # one transaction per result
    with _batch_server(settings, batch, line_delay=0.3) as server:
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
        # The module's worker, started now as a third: its start resumes the run.
        batch.worker_up()
        _wait_for(_finished(run), 90, "the run to finish", batch.log)

    assert [j.status for j in PatchJudgment.objects.filter(run=run)] == ["done"] * patches
    assert server.jobs_created() == 2  # round 1 once, round 2 once
    assert set(_bodies(server).values()) == {1}  # no request sent twice
    assert sum(_bodies(server).values()) == BUGS + 3 * patches
    calls = LLMCall.objects.all()
    assert calls.count() == BUGS + 3 * patches  # one row per request: none written twice
    assert set(Counter(calls.values_list("request_hash", flat=True)).values()) == {1}


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_team_with_s2_s4_and_a_written_judge_is_judged_in_batch_rounds_at_half_the_price(
    settings: Settings, batch_worker: Shared
) -> None:
    starter = json.loads((STARTERS / "nonfunctional.json").read_text(encoding="utf-8"))
    written = judge_define(data=starter, actor=None)[0].label  # nonfunctional@1
    with _batch_server(settings, batch_worker) as server:
        run = _batch_run([*TEAM, written])
        _wait_for(_finished(run), 90, "the run to finish", batch_worker.log)

    patches = BUGS * PATCHES_PER_BUG
    judgments = PatchJudgment.objects.filter(run=run)
    assert [j.status for j in judgments] == ["done"] * patches
    # Round 1: s4's bug steps, s2's first turns and the written judge's one call each;
    # round 2: s4's judgments and s2's rethinks, each of which needed an answer of round 1.
    jobs = LLMBatch.objects.filter(owner=run_owner(run.pk))
    assert sorted(jobs.values_list("round", flat=True)) == [1, 2]
    by_round = {job.round: job.request_count for job in jobs}
    assert by_round == {1: BUGS + 2 * patches, 2: 2 * patches}
    # Every call needed, once; none went as an ordinary call.
    assert sum(_bodies(server).values()) == BUGS + 4 * patches
    assert set(_bodies(server).values()) == {1}
    assert not [r for r in server.requests if r.path == "/v1/chat/completions"]
    calls = LLMCall.objects.all()
    assert calls.count() == BUGS + 4 * patches
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
    # The written judge's answers as a run stores them: each dimension at the top of its
    # scale (the fake answers 50, lowered to the schema's maximum), overall their mean.
    mine = results.filter(strategy=written)
    assert {(r.status, r.prompt_version, r.score) for r in mine} == {
        ("done", f"written:{written}", 100.0)
    }
    first = mine.first()
    assert first is not None
    assert {name: d["rating"] for name, d in first.answers["judge"]["dimensions"].items()} == {
        "maintainability": 5, "performance": 5, "security": 5
    }  # fmt: skip


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_an_expired_batch_keeps_its_answers_and_asks_the_rest_in_the_next_round(
    settings: Settings, batch_worker: Shared
) -> None:
    patches = BUGS * PATCHES_PER_BUG
    with _batch_server(settings, batch_worker) as server:
        server.expire_next(answered=3)
        run = _batch_run()
        _wait_for(_finished(run), 90, "the run to finish", batch_worker.log)

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
    settings: Settings, batch_worker: Shared
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

    with _batch_server(settings, batch_worker) as server:
        server.default = reply  # type: ignore[assignment]
        run = _batch_run()
        _wait_for(_finished(run), 90, "the run to finish", batch_worker.log)

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
        _wait_for(_finished(run), 90, "the retried run to finish", batch_worker.log)

    statuses = PatchJudgment.objects.filter(run=run).values_list("status", flat=True)
    assert list(statuses) == ["done"] * patches
    # Only the refused request and the turn that needed its answer were sent again.
    assert sum(_bodies(server).values()) == sent + 2


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_cancelling_the_run_cancels_its_batch(settings: Settings, batch_worker: Shared) -> None:
    with _batch_server(settings, batch_worker) as server:
        server.hold()
        # The cancel must not wait for a poll: the run's task waits, unanswered, in its look
        # at round 1 until the test ends, and a look after a cancel is answered at once.
        server.stall_polls()
        run = _batch_run()
        _wait_for(
            lambda: any(job.provider_batch_id for job in _owner_jobs(run))
            and server.polls_stalled > 0,
            60, "round 1 at the provider, and the run's task waiting in a look at it",
            batch_worker.log,
        )  # fmt: skip
        run_cancel(run=run, actor=None)
        _wait_for(
            lambda: all(job.status == "stored" for job in _owner_jobs(run)),
            20, "the cancelled batch to be stored", batch_worker.log,
        )  # fmt: skip
        # Checked before the server goes: then the look that waited is answered, late.
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
    settings: Settings, batch_worker: Shared
) -> None:
    patches = BUGS * PATCHES_PER_BUG
    with _batch_server(settings, batch_worker) as server:
        server.hold()
        run = _batch_run()
        _wait_for(
            lambda: any(job.provider_batch_id for job in _owner_jobs(run)),
            60, "round 1 at the provider", batch_worker.log,
        )  # fmt: skip
        run_batch_leave(run=run, actor=None)
        _wait_for(_finished(run), 90, "the run to finish", batch_worker.log)
        _wait_for(
            lambda: all(job.status == "stored" for job in _owner_jobs(run)),
            60, "the cancelled round to be stored", batch_worker.log,
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
    settings: Settings, batch_worker: Shared
) -> None:
    model = "gemini-2.5-flash"
    with batch_worker.gemini.answered_by(GeminiBatchServer(default=schema_reply)) as server:
        point_at(
            settings, batch_worker.tmp, PROVIDER="gemini", MODEL=model, GEMINI_API_KEY="test-key",
            GEMINI_BASE_URL=server.url,
        )  # fmt: skip
        run = _batch_run()
        _wait_for(_finished(run), 90, "the run to finish", batch_worker.log)
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
    settings: Settings, batch_worker: Shared
) -> None:
    with _batch_server(settings, batch_worker) as server:
        server.script(ok("a score of about seventy"))  # the first line of round 1
        run = _batch_run()
        _wait_for(_finished(run), 90, "the run to finish", batch_worker.log)

    patches = BUGS * PATCHES_PER_BUG
    assert [j.status for j in PatchJudgment.objects.filter(run=run)] == ["done"] * patches
    rounds = [(job.round, job.request_count) for job in _owner_jobs(run)]
    # Round 2 asks the correction beside the second turns; the corrected call's own second
    # turn waits for round 3.
    assert rounds == [(1, BUGS + patches), (2, 2 * patches), (3, 1)]
    corrected = LLMCall.objects.get(attempts=2)
    assert corrected.raw_text != "a score of about seventy"
    assert "a score of about seventy" in corrected.attempt_log[0]["raw_text"]
