"""Benchmark: the agreement report at 10,000 patches, and the le2019-sized report page.

Run with ``make bench`` (or ``.venv/bin/python bench/agreement_report.py``). By default it
works in a throwaway SQLite database; with ``DATABASE_URL`` set it uses that database and
deletes its datasets afterwards. Prints each figure and its ratio to the target (below 1.0
is within target):

- the whole report (humans, two finished 3-member runs, judge–annotator pairs, breakdowns,
  two rated dimensions with a written judge's ratings in each run, every interval) of
  10,000 patches × 5 labels from 20 annotators: under 1 s to compute,
  under 3 s for ``manage.py agreement_report`` end to end, under 500 MB peak memory;
- the report page of a 150-patch dataset with 900 labels from 37 annotators and two runs
  (le2019's size: 150 patches, 950 labels, 37 annotators): every
  request the page makes (the shell and its sections), under 250 ms of server time, for a
  view whose records no process kept (``judging.reports.read_cache``): the first section
  reads them, the others use what it read.

It also checks that the same data and seed give the same report, byte for byte.
"""

import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-"))
os.environ.setdefault("ALLOWED_HOSTS", "testserver")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from judging.reports import read_cache  # noqa: E402
from judging.reports.export import report_dict  # noqa: E402
from judging.reports.selectors import SECTIONS, agreement_report  # noqa: E402
from judging.reports.synthetic import Shape, synthetic_dataset  # noqa: E402
from rubrics.models import Dataset  # noqa: E402
from sejury_web.roles import Role  # noqa: E402
from sejury_web.users import user_create  # noqa: E402

# Two rated dimensions (issue 29): the annotators' ratings, and each run's written judge's.
LARGE = Shape(
    bugs=2_000,
    patches_per_bug=5,
    annotators=20,
    labels_per_patch=5,
    runs=2,
    dimensions=("maintainability", "security"),
)
# le2019: 150 patches, 950 labels, 37 annotators (5–8 labels a patch); here 6 a patch.
LE2019 = Shape(bugs=30, patches_per_bug=5, annotators=37, labels_per_patch=6, runs=2, seed=1)
COMPUTE_TARGET_S = 1.0
COMMAND_TARGET_S = 3.0
MEMORY_TARGET_MB = 500.0
PAGE_TARGET_S = 0.250
RUNS = 5


def report(name: str, value: float, target: float, unit: str = "ms") -> None:
    scale = 1000 if unit == "ms" else 1
    print(
        f"{name:<58} {value * scale:9.1f} {unit}   target {target * scale:7.0f} {unit}"
        f"   ratio {value / target:5.2f}"
    )


def fresh(name: str, shape: Shape) -> Dataset:
    Dataset.objects.filter(name=name).delete()
    start = time.perf_counter()
    dataset = synthetic_dataset(name, shape)
    print(f"  made {name!r} in {time.perf_counter() - start:.1f} s")
    return dataset


def command(slug: str) -> tuple[float, float, str]:
    """The command's wall time, its peak memory in MB, and its output."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, sys, django, os;"
            "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'sejury_web.settings');"
            "django.setup();"
            "from django.core.management import call_command;"
            f"call_command('agreement_report', '--dataset', {slug!r});"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    print(f"  the command's CPU time (user + system): {cpu * 1000:.0f} ms")
    peak_kb = int(done.stderr.strip().splitlines()[-1])
    return elapsed, peak_kb / 1024, done.stdout


def main() -> None:
    call_command("migrate", verbosity=0)
    from django.db import connection

    print(f"database: {connection.vendor}")
    large = fresh("bench-report-10k", LARGE)
    agreement_report(large)  # warm the imports and the database cache
    samples, cpu = [], []
    for _ in range(RUNS):
        read_cache.forget()  # the compute from the database, not from what a process kept
        start, start_cpu = time.perf_counter(), time.process_time()
        data = agreement_report(large)
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    print(
        f"  {len(data.annotators)} annotators, {data.patches_in_scope:,} patches,"
        f" {len(data.runs)} runs; median of {RUNS}; this process's CPU time (what a busy"
        f" machine's wall clock adds waiting to): median {statistics.median(cpu) * 1000:.0f} ms,"
        f" least {min(cpu) * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}"
    )
    report("10,000-patch report: compute (queries included)", statistics.median(samples),
           COMPUTE_TARGET_S)  # fmt: skip
    first = json.dumps(report_dict(data), sort_keys=True)
    elapsed, peak, out = command(large.slug)
    report("10,000-patch report: agreement_report command, end to end", elapsed,
           COMMAND_TARGET_S)  # fmt: skip
    report("10,000-patch report: command peak memory", peak, MEMORY_TARGET_MB, unit="MB")
    same = json.dumps(json.loads(out), sort_keys=True) == first
    # A web process does not keep a report after answering it; this one would, and every full
    # collection of the garbage collector during the le2019 timings below would walk its
    # objects (about 130 ms, in some timed runs and not others).
    del data, first
    gc.collect()
    print(f"  same data and seed, same report byte for byte: {'yes' if same else 'NO'}")

    lead = user_create(actor=None, username="bench-report-lead", password=None, roles=[Role.LEAD])
    client = Client()
    client.force_login(lead)
    # Not a target: what each request of the 10,000-patch page costs (they load in parallel).
    large_url = reverse("judging:report", args=[large.slug])
    read_cache.forget()  # the first section reads the records, the others use them
    for section in ("", *SECTIONS):
        start = time.perf_counter()
        response = client.get(large_url, {"section": section} if section else {})
        assert response.status_code == 200, response.status_code
        took = (time.perf_counter() - start) * 1000
        print(f"  10,000-patch page, {section or 'shell'}: {took:.0f} ms")

    le2019 = fresh("bench-report-le2019", LE2019)
    url = reverse("judging:report", args=[le2019.slug])
    requests: list[tuple[str, dict[str, str]]] = [(url, {})] + [
        (url, {"section": section}) for section in SECTIONS
    ]
    totals, page_cpu = [], []
    for _ in range(RUNS):
        read_cache.forget()  # each view as the first after a change: its records read once
        start, start_cpu = time.perf_counter(), time.process_time()
        for path, params in requests:
            response = client.get(path, params)
            assert response.status_code == 200, response.status_code
        totals.append(time.perf_counter() - start)
        page_cpu.append(time.process_time() - start_cpu)
    print(
        f"  this process's CPU time for the page: median {statistics.median(page_cpu) * 1000:.0f}"
        f" ms, least {min(page_cpu) * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}"
    )
    report(f"le2019-sized page: shell and {len(SECTIONS)} sections, server time",
           statistics.median(totals), PAGE_TARGET_S)  # fmt: skip
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  (this process's peak memory, data making included: {peak_self:.0f} MB)")
    Dataset.objects.filter(name__startswith="bench-report-").delete()
    from django.contrib.auth.models import User

    User.objects.filter(username__startswith="bench-report-").delete()
    if not same:
        raise SystemExit("the report changed between two runs on the same data and seed")


if __name__ == "__main__":
    main()
