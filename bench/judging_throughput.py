"""Benchmark: a judging run end to end, through a real Celery worker, against a fixed latency.

A dataset of P patches (P/5 bugs × 5 patches, every diff distinct, so no request is a cache
hit by accident) is judged by the team s1b,s2,s3 in the "reference" context: four model calls
per patch. The model is a local OpenAI-compatible server
(``tests/sejury_web/llm/fake_servers.py``, in its own process) that answers every request
after L seconds with JSON valid against the request's schema. A real worker
(``celery -A sejury_web worker``, threads pool) judges the run that ``run_create`` queues,
exactly as for the web application; this process only polls the database until the run is
finished.

C is ``SEJURY_LLM_MAX_CONCURRENCY``: the LLM layer's machine-wide limit on calls in flight,
the ideal's concurrency. As the documentation's *At scale* page advises for a machine that
judges, there is one worker process per CPU core (Celery's own default concurrency) and
1.5·C threads in all, so that while C threads wait on the model the others do the database
work between two calls; the limiter still lets only C calls out at once, and the server's
peak of requests in flight is printed and checked against C.
``--workers``/``--worker-threads`` change the processes and threads: ``--workers 1``
measures one process, which Python's interpreter lock holds to one core (1.11–1.26 on a
2-core machine, depending on the host's load, against 1.10–1.11 for two processes).

Printed: patches, provider calls (counted by the server and by ``run_progress``), the
server's peak of requests in flight (at most C), the wall
time from creation to finish and from ``started_at`` to ``finished_at``, the ideal
calls·L/C, their ratio (target ≤ 1.25), then a second identical run over the same patches,
which must reach the server zero times (every answer from the LLMCall cache). Exit status 1
on any FAIL.

Run with ``make bench`` or ``.venv/bin/python bench/judging_throughput.py [--patches 500]
[--latency 0.2] [--concurrency 16] [--workers CORES] [--worker-threads N]``. By default in a
throwaway directory (SQLite database, SQLite broker: the embedded defaults); ``DATABASE_URL`` and
``CELERY_BROKER_URL`` are honoured (the worker inherits them), and the dataset is then
deleted afterwards.
"""

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
# A directory of our own is removed after a PASS; after a FAIL it stays, for the worker's log.
OWN_VAR_DIR = "SEJURY_VAR_DIR" not in os.environ
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench.datasets import synthetic_dataset  # noqa: E402
from bench.fake_server import FakeServer, die_with_parent  # noqa: E402
from judging.models import JudgingRun  # noqa: E402
from judging.runs.selectors import run_progress  # noqa: E402
from judging.runs.services import run_create  # noqa: E402
from rubrics.models import Dataset  # noqa: E402

TARGET_RATIO = 1.25
TEAM = "s1b,s2,s3"
CALLS_PER_PATCH = 4  # s1b 1, s2 2 (assess, rethink), s3 1
PATCHES_PER_BUG = 5
MODEL = "gpt-4o-mini"
POLL_S = 0.1
THREADS_PER_SLOT = 1.5  # worker threads per LLM concurrency slot, by default
WORKER_START_TIMEOUT_S = 60.0


def dataset_create(patches: int) -> Dataset:
    """``patches`` patches over ``patches / 5`` bugs, every prompt new (a nonce)."""
    nonce = uuid.uuid4().hex[:12]
    return synthetic_dataset(
        f"bench-judging-{nonce}", patches, per_bug=PATCHES_PER_BUG, nonce=nonce
    )


def llm_env(base_url: str, concurrency: int) -> dict[str, str]:
    return {
        "SEJURY_LLM_PROVIDER": "openai",
        "SEJURY_LLM_MODEL": MODEL,
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": base_url,
        "SEJURY_LLM_MAX_CONCURRENCY": str(concurrency),
        "SEJURY_LLM_RPM": "0",
    }


@contextmanager
def running_workers(
    env: dict[str, str], workers: int, threads: int, log_stem: Path
) -> Iterator[list[Path]]:
    """Real worker processes on this process's database and broker, until the block ends.

    One after the other: workers starting at once on a new SQLite broker race to create its
    queue row, and the loser dies (kombu catches only OperationalError there).
    """
    processes, logs = [], []
    try:
        for n in range(workers):
            log_path = log_stem.with_name(f"{log_stem.name}-{n}.log")
            with log_path.open("wb") as log:
                worker = subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "sejury_web", "worker",
                     "--pool=threads", f"--concurrency={threads}", "--loglevel=INFO",
                     f"--hostname=bench-{os.getpid()}-{n}@%h"],
                    cwd=ROOT,
                    env=os.environ | env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=die_with_parent,  # safe: this process runs no threads
                )  # fmt: skip
            processes.append(worker)
            logs.append(log_path)
            deadline = time.monotonic() + WORKER_START_TIMEOUT_S
            while b" ready." not in log_path.read_bytes():
                if worker.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"a worker did not start; its log: {log_path}")
                time.sleep(0.1)
        yield logs
    finally:
        for worker in processes:
            worker.terminate()  # warm shutdown: running tasks finish first
        for worker in processes:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()


class RunTimeout(Exception):
    """The run did not finish in time."""


def judge(dataset: Dataset, timeout: float) -> tuple[JudgingRun, float]:
    """Create a run over the dataset, wait until it is finished; return it and the wall time."""
    started = time.perf_counter()
    run = run_create(
        actor=None,
        dataset=dataset,
        strategies=TEAM,
        context="reference",
        provider="openai",
        model=MODEL,
    )
    active = (JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING)
    while JudgingRun.objects.filter(pk=run.pk, status__in=active).exists():
        if time.perf_counter() - started > timeout:
            progress = run_progress(run)
            raise RunTimeout(
                f"run {run.pk} not finished after {timeout:.0f} s "
                f"({progress.finished}/{progress.total} patches judged)"
            )
        time.sleep(POLL_S)  # in autocommit, no read transaction stays open between polls
    wall = time.perf_counter() - started
    run.refresh_from_db()
    return run, wall


def run_wall(run: JudgingRun) -> float:
    assert run.started_at is not None
    assert run.finished_at is not None
    return (run.finished_at - run.started_at).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--patches", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument(
        "--concurrency", type=int, default=16, help="SEJURY_LLM_MAX_CONCURRENCY: the ideal's C"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes (default: one per CPU core)",
    )
    parser.add_argument(
        "--worker-threads",
        type=int,
        help=f"each worker's --concurrency (default: {THREADS_PER_SLOT:g}·C / workers, rounded up)",
    )
    options = parser.parse_args()
    patches, latency, concurrency = options.patches, options.latency, options.concurrency
    workers = options.workers
    threads = options.worker_threads or math.ceil(THREADS_PER_SLOT * concurrency / workers)
    # A SIGTERM ends the benchmark through the finally blocks, which stop the subprocesses.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    call_command("migrate", verbosity=0)
    dataset = dataset_create(patches)
    expected_calls = patches * CALLS_PER_PATCH
    timeout = max(120.0, 10 * expected_calls * latency / concurrency)
    log_stem = Path(settings.VAR_DIR) / f"bench-worker-{os.getpid()}"
    try:
        server = FakeServer(latency)
        try:
            env = llm_env(server.base_url, concurrency)
            os.environ.update(env)  # for this process's run_create: the same provider and model
            settings.SEJURY_LLM = {
                **settings.SEJURY_LLM,
                "PROVIDER": "openai",
                "MODEL": MODEL,
                "OPENAI_API_KEY": "sk-bench",
                "OPENAI_BASE_URL": server.base_url,
                "MAX_CONCURRENCY": concurrency,
            }
            with running_workers(env, workers, threads, log_stem):
                first, first_wall = judge(dataset, timeout)
                first_requests, peak = server.requests()
                second, second_wall = judge(dataset, timeout)
                second_requests = server.requests()[0] - first_requests
        finally:
            server.stop()
        first_progress, second_progress = run_progress(first), run_progress(second)
    except RunTimeout as timeout_error:
        print(f"FAIL: {timeout_error} (worker logs: {log_stem}-*.log)")
        sys.exit(1)
    finally:
        if "DATABASE_URL" in os.environ:  # a throwaway SQLite file needs no cleaning
            dataset.delete()

    ideal = first_requests * latency / concurrency
    ratio = first_wall / ideal if ideal else float("inf")
    checks = {
        "ratio": ratio <= TARGET_RATIO,
        "calls": first_requests == first_progress.provider_calls == expected_calls,
        "peak": peak <= concurrency,
        "judged": first_progress.done == second_progress.done == patches,
        "cache": second_requests == 0 and second_progress.provider_calls == 0,
    }
    print(
        f"database: {connection.vendor}; broker: {settings.CELERY_BROKER_URL.split(':', 1)[0]}; "
        f"P={patches} patches, team {TEAM}, L={latency:g} s, C={concurrency} concurrent "
        f"calls; {workers} worker process{'es' if workers > 1 else ''} × {threads} threads"
    )
    print(
        f"first run    patches done {first_progress.done}/{patches} "
        f"(failed {first_progress.failed})   provider calls: server {first_requests}, "
        f"run_progress {first_progress.provider_calls} (expected {expected_calls})   "
        f"peak in flight {peak} (limit C={concurrency})"
    )
    print(
        f"first run    wall {first_wall:7.2f} s from creation, {run_wall(first):7.2f} s "
        f"started→finished   ideal calls·L/C {ideal:6.2f} s"
    )
    print(
        f"first run    ratio {ratio:5.3f}   target ≤ {TARGET_RATIO} "
        f"({ratio / TARGET_RATIO:4.2f} of target)   {'PASS' if checks['ratio'] else 'FAIL'}"
    )
    print(
        f"second run   wall {second_wall:7.2f} s from creation, {run_wall(second):7.2f} s "
        f"started→finished   server requests {second_requests} (target 0), run_progress "
        f"provider calls {second_progress.provider_calls}   {'PASS' if checks['cache'] else 'FAIL'}"
    )
    failed = [name for name, passed in checks.items() if not passed]
    if failed:
        print(f"FAIL: {', '.join(failed)}   (worker logs: {log_stem}-*.log)")
        sys.exit(1)
    print("PASS")
    if OWN_VAR_DIR:
        shutil.rmtree(settings.VAR_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
