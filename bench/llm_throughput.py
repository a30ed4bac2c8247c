"""Benchmark: LLM-layer throughput against a server with a fixed latency.

A local OpenAI-compatible server (``tests/sejury_web/llm/fake_servers.py``, in its own process so it
does not compete for this one's interpreter) answers every request after L seconds. N
requests go through ``complete()`` from a pool of C threads, as a Celery worker with C
threads would send them, with the layer's concurrency limit at C. Printed: wall time, the
ideal N·L/C, their ratio (target ≤ 1.15), and a second identical pass, which must make zero
provider requests (every answer from the LLMCall cache).

Run with ``make bench`` or ``.venv/bin/python bench/llm_throughput.py [--n 400] [--latency
0.2] [--concurrency 16]``. By default in a throwaway SQLite database (the embedded default);
with ``DATABASE_URL`` set, in that database.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench.fake_server import FakeServer  # noqa: E402
from sejury_web.llm import LLMRequest, LLMResponse, Message, complete  # noqa: E402

TARGET_RATIO = 1.15
SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "reasoning": {"type": "string"}},
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}


def one_pass(n: int, concurrency: int, label: str = "") -> tuple[float, list[LLMResponse]]:
    def call(index: int) -> LLMResponse:
        try:
            return complete(
                LLMRequest(
                    purpose="bench.throughput",
                    messages=(
                        Message("system", "You judge patches."),
                        Message("user", f"Judge candidate patch {label}#{index}."),
                    ),
                    schema=SCHEMA,
                )
            )
        finally:
            connection.close()  # as a Celery worker thread does after each task

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        responses = list(pool.map(call, range(n)))
    return time.perf_counter() - started, responses


def point_at(base_url: str, concurrency: int) -> None:
    settings.SEJURY_LLM = {
        **settings.SEJURY_LLM,
        "PROVIDER": "openai",
        "MODEL": "gpt-4o-mini",
        "OPENAI_API_KEY": "sk-bench",
        "OPENAI_BASE_URL": base_url,
        "MAX_CONCURRENCY": concurrency,
        "RPM": 0,
    }


def second_pass_in_another_process(base_url: str, n: int, concurrency: int) -> tuple[float, int]:
    """Run the same N requests in a child process; return its wall time and cache hits."""
    arguments = ["--replay", base_url, "--n", str(n), "--concurrency", str(concurrency)]
    child = subprocess.run(
        [sys.executable, __file__, *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,  # the same SEJURY_VAR_DIR or DATABASE_URL: the same LLMCall table
    )
    wall, cached = child.stdout.split()
    return float(wall), int(cached)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--replay", metavar="BASE_URL", help=argparse.SUPPRESS)
    options = parser.parse_args()
    n, latency, concurrency = options.n, options.latency, options.concurrency
    if options.replay:
        point_at(options.replay, concurrency)
        wall, responses = one_pass(n, concurrency)
        print(wall, sum(response.from_cache for response in responses))
        return

    call_command("migrate", verbosity=0)
    server = FakeServer(latency)
    point_at(server.base_url, concurrency)
    try:
        one_pass(1, 1, label="warm-up ")  # imports, connection pool, output mode
        warm_up = server.requests()[0]
        first_wall, first = one_pass(n, concurrency)
        after_first = server.requests()[0]
        second_wall, cached = second_pass_in_another_process(server.base_url, n, concurrency)
        total = server.requests()[0]
    finally:
        server.stop()
    first_requests, second_requests = after_first - warm_up, total - after_first

    ideal = n * latency / concurrency
    ratio = first_wall / ideal
    checks = {
        "ratio": ratio <= TARGET_RATIO,
        # Every first-pass call reached the provider once: no cache hit, no retry.
        "first pass": first_requests == n and not any(r.from_cache for r in first),
        # The second pass, in another process, reached it never: the cache is the database.
        "second pass": second_requests == 0 and cached == n,
        # What is printed adds up to what the server counted.
        "counts": warm_up + first_requests + second_requests == total,
    }
    verdict = {True: "PASS", False: "FAIL"}
    print(
        f"database: {connection.vendor}; N={n} requests, L={latency:g} s, C={concurrency} threads"
    )
    print(
        f"first pass   wall {first_wall:7.2f} s   ideal N·L/C {ideal:6.2f} s   "
        f"ratio {ratio:5.3f}   target ≤ {TARGET_RATIO} ({ratio / TARGET_RATIO:4.2f} of target)"
        f"   {verdict[checks['ratio']]}"
    )
    print(
        f"first pass   provider requests {first_requests} of {n}   {verdict[checks['first pass']]}"
    )
    print(
        f"second pass  wall {second_wall:7.2f} s   provider requests {second_requests}"
        f"   answered from cache {cached}/{n}   target 0 requests   "
        f"{verdict[checks['second pass']]}"
    )
    print(
        f"provider requests in all: {total} = {warm_up} warm-up + {first_requests} first pass"
        f" + {second_requests} second pass   {verdict[checks['counts']]}"
    )
    print("second pass ran in another process: the cache is the database, shared by workers")
    failed = [name for name, ok in checks.items() if not ok]
    print(f"FAIL: {', '.join(failed)}" if failed else "PASS")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
