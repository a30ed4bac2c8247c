"""Benchmark: a run judged in batch mode through the fake batch server, with real workers.

P patches (3 per bug, every diff distinct) are judged by the team s1b,s2,s3,s4 in the
"reference" context through OpenAI's Batch API as ``tests/sejury_web/llm/fake_batch.py``
speaks it (in its own process, counting prompt and cached tokens as OpenAI does, 4
characters a token). The fake ends each job after ``--turnaround`` polls, the workers look
every ``--poll`` seconds; that simulated wait is measured (each round from its first job's
submission to its last job's end) and taken out of the wall time.

Printed: the rounds and their requests; requests submitted (= the calls needed: one s4 step
per bug and five calls per patch, with 0 duplicates); the wall time, with and without the
simulated turnaround; the peak memory (VmHWM) of the worker and the fake server, and of this
process (target: each under 500 MB); and dollars per 1,000 patches at gpt-5-mini's list
prices from the token counts recorded, ordinary against batch (target ratio ≤ 0.50). Exit
status 1 on any FAIL.

Run with ``.venv/bin/python bench/batch_judging.py [--patches 10000] [--poll 1]
[--turnaround 1] [--worker-threads 4]``, in a throwaway directory (SQLite database and
broker) unless ``DATABASE_URL``/``CELERY_BROKER_URL`` say otherwise.
"""

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
OWN_VAR_DIR = "SEJURY_VAR_DIR" not in os.environ
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.db.models import Max, Min, Sum  # noqa: E402

from bench.datasets import synthetic_dataset  # noqa: E402
from bench.fake_server import die_with_parent  # noqa: E402
from judging.models import JudgingRun, PatchJudgment  # noqa: E402
from judging.runs.batch import run_owner  # noqa: E402
from judging.runs.services import run_create  # noqa: E402
from rubrics.models import Dataset  # noqa: E402
from sejury_web.llm.models import LLMBatch, LLMCall  # noqa: E402
from sejury_web.llm.prices import call_cost  # noqa: E402

TEAM = "s1b,s2,s3,s4"
CALLS_PER_PATCH = 5  # s1b 1, s2 2, s3 1, s4 1; and s4's step once per bug
PATCHES_PER_BUG = 3
MODEL = "gpt-5-mini"
MEMORY_TARGET_MB = 500
TARGET_RATIO = Decimal("0.50")
POLL_S = 0.5
WORKER_START_TIMEOUT_S = 60.0


def dataset_create(patches: int) -> tuple[Dataset, int]:
    """``patches`` patches, three per bug, every prompt new (a nonce); and the bugs' count."""
    nonce = uuid.uuid4().hex[:12]
    dataset = synthetic_dataset(
        f"bench-batch-{nonce}", patches, per_bug=PATCHES_PER_BUG, key_prefix="BATCH", nonce=nonce
    )
    return dataset, -(-patches // PATCHES_PER_BUG)


class BatchServer:
    """The fake batch server in a subprocess; says what it received on SIGUSR1."""

    def __init__(self, turnaround: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.sejury_web.llm.fake_batch", "--prefix-cache",
             "--turnaround", str(turnaround)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent,
        )  # fmt: skip
        line = self._line()
        if not line.startswith("URL "):
            raise SystemExit(f"the fake batch server did not start: {line!r}")
        self.base_url = line.removeprefix("URL ") + "/v1"

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def counts(self) -> dict[str, int]:
        self.process.send_signal(signal.SIGUSR1)
        words = self._line().split()  # LINES n DISTINCT d JOBS j
        return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def peak_mb(pid: int) -> float:
    """A live process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def worker_start(env: dict[str, str], threads: int, log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "sejury_web", "worker", "--pool=threads",
             f"--concurrency={threads}", "--loglevel=INFO", f"--hostname=bench-{os.getpid()}@%h"],
            cwd=ROOT, env=os.environ | env, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )  # fmt: skip
    deadline = time.monotonic() + WORKER_START_TIMEOUT_S
    while b" ready." not in log_path.read_bytes():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start; its log: {log_path}")
        time.sleep(0.1)
    return worker


def dollars(calls: "list[LLMCall]", *, batch: bool) -> Decimal:
    total = Decimal(0)
    for call in calls:
        cost = call_cost(
            MODEL,
            input_tokens=call.input_tokens,
            output_tokens=call.output_tokens,
            cached_tokens=call.cached_tokens,
            batch=batch,
        )
        assert cost is not None
        total += cost
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--patches", type=int, default=10_000)
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between two polls")
    parser.add_argument("--turnaround", type=int, default=1, help="polls before a job ends")
    parser.add_argument("--worker-threads", type=int, default=4)
    options = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    call_command("migrate", verbosity=0)
    dataset, bugs = dataset_create(options.patches)
    needed = bugs + CALLS_PER_PATCH * options.patches
    server = BatchServer(options.turnaround)
    env = {
        "SEJURY_LLM_PROVIDER": "openai",
        "SEJURY_LLM_MODEL": MODEL,
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": server.base_url,
        "SEJURY_LLM_LOCAL_FREE": "0",
        "SEJURY_LLM_BATCH_POLL_SECONDS": str(options.poll),
    }
    os.environ.update(env)
    settings.SEJURY_LLM = {
        **settings.SEJURY_LLM,
        "PROVIDER": "openai",
        "MODEL": MODEL,
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": server.base_url,
        "LOCAL_FREE": False,
    }
    log_path = Path(settings.VAR_DIR) / f"bench-batch-worker-{os.getpid()}.log"
    worker = worker_start(env, options.worker_threads, log_path)
    try:
        started = time.perf_counter()
        run = run_create(
            actor=None, dataset=dataset, strategies=TEAM, context="reference", batch=True
        )
        active = (JudgingRun.Status.QUEUED, JudgingRun.Status.RUNNING)
        while JudgingRun.objects.filter(pk=run.pk, status__in=active).exists():
            time.sleep(POLL_S)
        wall = time.perf_counter() - started
        memory = {"worker": peak_mb(worker.pid), "fake server": peak_mb(server.process.pid)}
        counts = server.counts()
    finally:
        worker.kill()
        worker.wait()
        server.stop()
    memory["bench (web side)"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    product = {name: mb for name, mb in memory.items() if name != "fake server"}

    jobs = LLMBatch.objects.filter(owner=run_owner(run.pk))
    rounds = list(
        jobs.values("round")
        .annotate(asked=Sum("request_count"), first=Min("submitted_at"), last=Max("ended_at"))
        .order_by("round")
    )
    waited = sum((r["last"] - r["first"]).total_seconds() for r in rounds)
    judgments = PatchJudgment.objects.filter(run=run)
    done = judgments.filter(status="done").count()
    calls = list(LLMCall.objects.filter(settings__batch=True).only(
        "input_tokens", "output_tokens", "cached_tokens", "cost_usd"
    ))  # fmt: skip
    ordinary, batch = dollars(calls, batch=False), dollars(calls, batch=True)
    recorded = sum((c.cost_usd for c in calls if c.cost_usd is not None), Decimal(0))
    ratio = batch / ordinary
    per_thousand = Decimal(1000) / options.patches
    checks = {
        "judged": done == options.patches,
        "submitted": counts["LINES"] == counts["DISTINCT"] == needed == len(calls),
        "memory": all(mb < MEMORY_TARGET_MB for mb in product.values()),
        "ratio": ratio <= TARGET_RATIO and abs(recorded - batch) < Decimal("0.01"),
    }
    print(
        f"database: {connection.vendor}; P={options.patches} patches ({bugs} bugs), team {TEAM}, "
        f"model {MODEL}; poll {options.poll:g} s, turnaround {options.turnaround} poll(s)"
    )
    for r in rounds:
        took = (r["last"] - r["first"]).total_seconds()
        print(f"round {r['round']}    {r['asked']:6d} requests   submitted→answered {took:6.1f} s")
    print(
        f"submitted    {counts['LINES']} requests in {counts['JOBS']} jobs, {counts['DISTINCT']} "
        f"distinct (calls needed {needed}; duplicates {counts['LINES'] - counts['DISTINCT']})   "
        f"{'PASS' if checks['submitted'] else 'FAIL'}"
    )
    print(
        f"wall         {wall:7.1f} s from creation; {wall - waited:7.1f} s without the fake's "
        f"turnaround ({waited:.1f} s); patches done {done}/{options.patches}"
    )
    print(
        "peak memory  "
        + ", ".join(f"{name} {mb:.0f} MB" for name, mb in memory.items())
        + f"   target < {MEMORY_TARGET_MB} MB for the worker and this process   "
        + ("PASS" if checks["memory"] else "FAIL")
    )
    print(
        f"per 1,000    ordinary ${ordinary * per_thousand:.4f}   batch ${batch * per_thousand:.4f}"
        f" (recorded ${recorded * per_thousand:.4f})   ratio {ratio:.3f}   target ≤ "
        f"{TARGET_RATIO}   {'PASS' if checks['ratio'] else 'FAIL'}"
    )
    failed = [name for name, passed in checks.items() if not passed]
    if failed:
        print(f"FAIL: {', '.join(failed)}   (worker log: {log_path})")
        sys.exit(1)
    print("PASS")
    if OWN_VAR_DIR:
        shutil.rmtree(settings.VAR_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
