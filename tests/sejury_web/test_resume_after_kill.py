"""A worker killed (SIGKILL) in the middle of every kind of job at once: the next worker
finishes each, and nothing is lost or done twice.

One crash serves the module (module-scoped, since a real worker is the slowest part of the
suite): a real Celery worker process is given a bundle upload, a draft batch, a rejection
sorting, a judging run and a webhook call; each is held half done (the fake OpenAI server
answers the first request of each kind and holds the rest, the webhook receiver holds its
call, the upload is caught while it imports), the worker is killed, and a second worker,
started on the same database and broker, must finish them all. On the SQLite broker the
killed worker's messages are gone for good: only the database says what was left
(``sejury_web.durable.jobs_resume_unfinished``). Nothing done before the kill is done again:
no row is written twice, and no request behind a result, draft or theme written before the
kill reaches the model again. Batch-mode runs are killed on their own, in
``tests/judging/runs/test_batch.py``.
"""

import json
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import override_settings
from pytest_django import DjangoDbBlocker

from judging.models import (
    JudgingRun,
    PatchJudgment,
    RejectionTheme,
    StrategyResult,
    WebhookDelivery,
)
from judging.runs.services import run_create, run_rejection_themes_request
from judging.runs.webhooks import DELIVERY_HEADER, delivery_open
from rubrics.bundle.upload_execution import progress_file
from rubrics.bundle.uploads import bundle_upload_queue
from rubrics.models import BundleImport, BundleUpload, Dataset, Patch, Rubric, RubricRevision
from rubrics.review.services import rubric_draft_request
from sejury_web.llm.models import LLMCall
from tests.judging.factories import bug_with_patches, finished_run
from tests.rubrics.bundles import bug, jsonl, patch
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory
from tests.sejury_web.llm.fake_servers import OpenAIServer, Reply, schema_reply
from tests.workers import start_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db]

SECRET = "whsec-kill-0123456789"
KINDS = ("draft", "sort", "judge")
UPLOAD_BUGS = 600  # 5 patches each: an import long enough to be caught half done
WAIT = 120.0


class Held:
    """The fake model's gate: the first answer of each kind goes out, the others wait until
    the gate opens (after the kill), holding the worker's threads mid-job."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.answered = dict.fromkeys(KINDS, 0)
        self.held = dict.fromkeys(KINDS, 0)
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = _kind(body)
        with self.lock:
            first = self.answered[kind] == 0 and not self.open.is_set()
            if first:
                self.answered[kind] += 1
            else:
                self.held[kind] += 1
        if not first:
            self.open.wait(WAIT)
        return schema_reply(body)


def _kind(body: dict[str, Any]) -> str:
    """Which job asks, from the properties of the answer it wants."""
    schema = body.get("response_format", {}).get("json_schema", {}).get("schema", {})
    properties = schema.get("properties", {})
    return "draft" if "root_cause" in properties else "sort" if "theme" in properties else "judge"


@dataclass
class Receiver:
    """A webhook receiver whose first call waits until ``open`` is set."""

    open: threading.Event = field(default_factory=threading.Event)
    deliveries: list[str] = field(default_factory=list)  # the delivery id of each call
    url: str = ""


@dataclass
class Crash:
    """What was there when the worker was killed, and the jobs to look at after."""

    upload: BundleUpload
    drafts: list[Rubric]
    drafted_before: dict[int, int]  # rubric → its draft revision's pk, written before the kill
    sorted_run: JudgingRun
    sorted_before: dict[int, Any]  # theme row → its sorted_at, before the kill
    judged_run: JudgingRun
    results_before: dict[tuple[int, str], int]
    webhook_run: JudgingRun
    receiver: Receiver
    logs: list[Path]
    sent: Counter[str]  # how many times the model was asked each prompt, by its messages

    def asked_once(self, call_id: int | None) -> bool:
        """Whether the prompt of ``call_id`` (a call answered before the kill) reached the
        model once only: the next worker did not ask it again."""
        messages = LLMCall.objects.get(pk=call_id).messages
        return self.sent[json.dumps(messages, sort_keys=True)] == 1


def _wait_for(
    condition: Callable[[], bool], what: str, logs: list[Path], every: float = 0.1
) -> None:
    """Ask ``condition`` (a few queries) ``every`` seconds: more often would take CPU from
    the worker it waits for."""
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            for log in logs:
                if log.is_file():
                    print(log.read_text(errors="replace")[-4000:])
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


def _receiver(state: Receiver) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.deliveries.append(self.headers.get(DELIVERY_HEADER, ""))
            if len(state.deliveries) == 1:
                state.open.wait(WAIT)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    return server


def _bundle() -> bytes:
    records: list[dict[str, Any]] = []
    for b in range(UPLOAD_BUGS):
        records.append(bug(f"U-{b}"))
        records += [patch(f"U-{b}-{p}", f"U-{b}") for p in range(5)]
    return jsonl(*records)


def _jobs(receiver: Receiver) -> dict[str, Any]:
    """Every kind of job but the upload, queued: the worker takes them at once."""
    drafts_dataset = DatasetFactory(name="Drafts")
    drafts = rubric_draft_request(
        bugs=[BugFactory(dataset=drafts_dataset) for _ in range(2)],
        variant="templated",
        actor=None,
        provider="openai",
    )
    sorted_dataset = DatasetFactory(name="Sorted")
    sorted_bug = BugFactory(dataset=sorted_dataset)
    rejected = {
        PatchFactory(bug=sorted_bug, dataset=sorted_dataset, tests_pass=True): (
            "INVALID",
            {"s1b": {"score": 10.0, "reasoning": f"It masks the symptom ({n})."}},
        )
        for n in range(2)
    }
    sorted_run = finished_run(
        sorted_dataset, rejected, team=["s1b"], provider="openai", model="gpt-4o-mini"
    )
    run_rejection_themes_request(run=sorted_run, actor=None)
    judged_bug = bug_with_patches(3, dataset=DatasetFactory(name="Judged"))
    judged_run = run_create(
        actor=None, dataset=judged_bug.dataset, strategies=["s1b"], context="reference"
    )
    webhook_dataset = DatasetFactory(name="Called")
    called: dict[Any, tuple[str, dict[str, Any]]] = {
        PatchFactory(bug=BugFactory(dataset=webhook_dataset)): ("VALID", {})
    }
    webhook_run = finished_run(
        webhook_dataset,
        called,
        team=["s1b"],
        webhook_url=receiver.url,
    )
    delivery_open(run_id=webhook_run.pk, event=WebhookDelivery.Event.FINISHED)
    return {
        "drafts": list(drafts.rubrics.order_by("pk")),
        "sorted_run": sorted_run,
        "judged_run": judged_run,
        "webhook_run": webhook_run,
    }


def _half_done(jobs: dict[str, Any], held: Held, receiver: Receiver) -> bool:
    drafted = Rubric.objects.filter(
        pk__in=[r.pk for r in jobs["drafts"]], status=Rubric.Status.IN_REVIEW
    ).count()
    sorted_ = RejectionTheme.objects.filter(
        judgment__run=jobs["sorted_run"], status=RejectionTheme.Status.DONE
    ).count()
    judged = PatchJudgment.objects.filter(run=jobs["judged_run"], status="done").count()
    return (
        (drafted, sorted_, judged) == (1, 1, 1)
        and all(held.held[kind] for kind in KINDS)
        and len(receiver.deliveries) == 1
    )


@pytest.fixture(scope="module")
def crash(
    django_db_setup: None,
    django_db_blocker: DjangoDbBlocker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Crash]:
    tmp = tmp_path_factory.mktemp("crash")
    held, receiver = Held(), Receiver()
    with (
        django_db_blocker.unblock(),
        OpenAIServer(default=held) as server,
    ):
        webhooks = _receiver(receiver)
        llm = {
            "PROVIDER": "openai",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
        }
        env = {
            # The test settings force the offline model; the workers must use the server.
            "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
            "SEJURY_LLM_PROVIDER": "openai",
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_BASE_URL": server.base_url,
            "SEJURY_LLM_LOCK_DIR": str(tmp / "limits"),
            "SEJURY_WEBHOOK_SECRET": SECRET,
            "SEJURY_WEBHOOK_TIMEOUT": str(WAIT),
            "SEJURY_BASE_URL": "https://sejury.example",
        }
        logs = [tmp / "first.log", tmp / "second.log"]
        first = second = None
        try:
            with override_settings(SEJURY_LLM={**_llm_settings(), **llm}):
                first = start_worker(logs[0], pool="threads", concurrency=8, env=env)
                # Once it has started: its start resumes what it finds, queuing again what
                # is queued already (harmless, but the first answers would go twice).
                _wait_for(lambda: _ready(logs[0]), "the first worker to start", logs)
                jobs = _jobs(receiver)
                _wait_for(lambda: _half_done(jobs, held, receiver), "every job half done", logs)
                upload = bundle_upload_queue(
                    actor=_system_user(),
                    file=SimpleUploadedFile("big.jsonl", _bundle()),
                    dataset_name="Uploaded",
                )
                # Killed as soon as the import writes its progress: early enough on any
                # machine (the import takes a second or more), and it is an import under way.
                # Asked often: the import may be most of the way through when it first says so.
                _wait_for(lambda: _importing(upload), "the upload to be imported", logs, 0.01)
                os.kill(first.pid, signal.SIGKILL)
                first.wait()
            assert _reload(upload).status == BundleUpload.Status.RUNNING, "killed too late"
            assert not Dataset.objects.filter(name="Uploaded").exists()
            assert _half_done(jobs, held, receiver)  # nothing moved past the kill
            drafted_before = {
                r.rubric_id: r.pk
                for r in RubricRevision.objects.filter(rubric__in=jobs["drafts"], number=0)
            }
            sorted_before = dict(
                RejectionTheme.objects.filter(
                    judgment__run=jobs["sorted_run"], status=RejectionTheme.Status.DONE
                ).values_list("pk", "sorted_at")
            )
            results_before = {
                (r.judgment_id, r.strategy): r.pk
                for r in StrategyResult.objects.filter(judgment__run=jobs["judged_run"])
            }

            held.open.set()
            receiver.open.set()
            second = start_worker(logs[1], pool="threads", concurrency=8, env=env)
            _wait_for(lambda: _all_ended(jobs, upload), "every job to end", logs)
            sent = Counter(
                json.dumps(request.body["messages"], sort_keys=True)
                for request in server.requests
                if request.body
            )
            yield Crash(
                upload=_reload(upload),
                sent=sent,
                drafted_before=drafted_before,
                sorted_before=sorted_before,
                results_before=results_before,
                receiver=receiver,
                logs=logs,
                **jobs,
            )
        finally:
            held.open.set()
            receiver.open.set()
            for process in (first, second):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
            webhooks.shutdown()
            webhooks.server_close()
            # The module's rows were committed outside any test's transaction: flush them,
            # as a transactional test does, so the next test starts from an empty database.
            call_command("flush", interactive=False, verbosity=0)


def _llm_settings() -> dict[str, Any]:
    from django.conf import settings

    return dict(settings.SEJURY_LLM)


def _system_user() -> Any:
    from django.contrib.auth.models import User

    return User.objects.create(username="uploader")


def _ready(log: Path) -> bool:
    return log.is_file() and " ready." in log.read_text(errors="replace")


def _importing(upload: BundleUpload) -> bool:
    upload = _reload(upload)
    return upload.status == BundleUpload.Status.RUNNING and progress_file(upload).is_file()


def _reload(upload: BundleUpload) -> BundleUpload:
    return BundleUpload.objects.get(pk=upload.pk)


def _all_ended(jobs: dict[str, Any], upload: BundleUpload) -> bool:
    drafting = Rubric.objects.filter(
        pk__in=[r.pk for r in jobs["drafts"]], status=Rubric.Status.DRAFTING
    )
    return (
        _reload(upload).status in (BundleUpload.Status.DONE, BundleUpload.Status.FAILED)
        and not drafting.exists()
        and not RejectionTheme.objects.filter(
            judgment__run=jobs["sorted_run"], status=RejectionTheme.Status.PENDING
        ).exists()
        and JudgingRun.objects.get(pk=jobs["judged_run"].pk).status == JudgingRun.Status.FINISHED
        and WebhookDelivery.objects.filter(
            run=jobs["webhook_run"], status=WebhookDelivery.Status.DELIVERED
        ).exists()
    )


# -- one test per kind of job ------------------------------------------------------------


def test_an_upload_killed_mid_import_is_imported_once_by_the_next_worker(crash: Crash) -> None:
    upload = crash.upload
    assert upload.status == BundleUpload.Status.DONE, upload.errors
    assert upload.attempt == 1  # queued again by the second worker's start
    dataset = Dataset.objects.get(name="Uploaded")
    assert BundleImport.objects.filter(dataset=dataset).count() == 1
    assert upload.bundle_import is not None
    assert upload.bundle_import.dataset == dataset
    assert Patch.objects.filter(dataset=dataset).count() == UPLOAD_BUGS * 5


def test_a_draft_batch_killed_mid_way_is_finished_keeping_the_draft_written_before(
    crash: Crash,
) -> None:
    rubrics = Rubric.objects.filter(pk__in=[r.pk for r in crash.drafts])
    assert [r.status for r in rubrics] == [Rubric.Status.IN_REVIEW] * len(crash.drafts)
    revisions = RubricRevision.objects.filter(rubric__in=rubrics)
    assert sorted(revisions.values_list("rubric_id", "number")) == [
        (r.pk, 0) for r in sorted(rubrics, key=lambda r: r.pk)
    ]  # one draft each, none twice
    for rubric_id, revision_id in crash.drafted_before.items():
        revision = revisions.get(rubric_id=rubric_id)
        assert revision.pk == revision_id
        assert crash.asked_once(revision.llm_call_id)


def test_a_sorting_killed_mid_way_sorts_the_rest_and_keeps_what_was_sorted(crash: Crash) -> None:
    rows = RejectionTheme.objects.filter(judgment__run=crash.sorted_run)
    assert rows.count() == 2
    assert set(rows.values_list("status", flat=True)) == {RejectionTheme.Status.DONE}
    for pk, sorted_at in crash.sorted_before.items():
        row = rows.get(pk=pk)
        assert row.sorted_at == sorted_at  # not sorted again
        assert crash.asked_once(row.llm_call_id)


def test_a_run_killed_mid_way_is_finished_without_a_result_twice(crash: Crash) -> None:
    run = JudgingRun.objects.get(pk=crash.judged_run.pk)
    assert run.status == JudgingRun.Status.FINISHED
    assert (
        list(PatchJudgment.objects.filter(run=run).values_list("status", flat=True)) == ["done"] * 3
    )
    assert all(j.score is not None and j.verdict for j in PatchJudgment.objects.filter(run=run))
    results = StrategyResult.objects.filter(judgment__run=run)
    assert results.count() == 3  # one per patch and member: none twice, none missing
    assert crash.results_before
    for key, pk in crash.results_before.items():
        result = results.get(judgment_id=key[0], strategy=key[1])
        assert result.pk == pk  # completed results untouched
        assert crash.asked_once(result.call_ids[0])


def test_a_webhook_call_killed_in_flight_is_made_again_under_the_same_delivery_id(
    crash: Crash,
) -> None:
    delivery = WebhookDelivery.objects.get(run=crash.webhook_run)
    assert delivery.status == WebhookDelivery.Status.DELIVERED
    # The receiver heard the call the killed worker was making, then the next worker's:
    # the same delivery id, which is how a receiver drops the second (at least once).
    assert len(crash.receiver.deliveries) == 2
    assert set(crash.receiver.deliveries) == {str(delivery.delivery_id)}


def test_the_second_worker_says_what_it_resumed(crash: Crash) -> None:
    log = crash.logs[1].read_text(errors="replace")
    for kind in ("bundle uploads", "rubric drafts", "judging runs", "webhook deliveries"):
        assert f"resumed {kind} [" in log
    assert "resumed sortings of rejected passing patches [" in log
