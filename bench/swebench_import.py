"""Benchmark: ``import_swebench`` on the full SWE-bench test split's size, three models.

Run with ``.venv/bin/python bench/swebench_import.py [--instances 2294] [--models 3] [--logs]``.
It writes synthetic files of SWE-bench's shape and about its sizes (per instance: a problem
statement of ~2 KB, a reference fix of ~1.5 KB, a test patch of ~4 KB, PASS_TO_PASS of
~3 KB, hints of ~1 KB), instances as JSON Lines, each model's predictions as JSON Lines
(one in twenty empty) and each model's run report (``<model>.<run>.json``; with ``--logs``,
also the harness's logs folder, a ``report.json`` with its ``tests_status`` per evaluated
instance, given as ``--results logs/run_evaluation/run1``), then runs
``manage.py import_swebench`` in a subprocess, in a throwaway SQLite database, with DEBUG
off, twice (the second import changes nothing). Prints wall time and peak resident memory
of each, and the same command's memory on a one-instance import as the baseline, with
their ratios to the targets: the first import within ``WALL_TARGET_S`` (the Import page
imports in the request, so it must finish well inside a web server's timeout), and peak
memory above the baseline within 3 × the files' size (as for bundles, issue 16).
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WALL_TARGET_S = 30.0
MEMORY_FACTOR = 3.0  # peak RSS above the baseline, as a multiple of the files' size


def diff(path: str, n: int, lines: int) -> str:
    body = "".join(f" context line {i} of {path}\n" for i in range(lines))
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -10,{lines + 1} +10,{lines + 1} @@ def f():\n{body}"
        f"-    return value{n}\n+    return value{n} + 1\n"
    )


def report_json(iid: str, n: int, resolved: bool) -> str:
    """A per-instance report as ``get_eval_report`` writes it, with its tests_status."""
    passing = [f"tests/test_mod{n}.py::test_case_{k}" for k in range(80)]
    status = {
        "FAIL_TO_PASS": {
            "success": [f"tests/test_mod{n}.py::test_fix"] if resolved else [],
            "failure": [] if resolved else [f"tests/test_mod{n}.py::test_fix"],
        },
        "PASS_TO_PASS": {"success": passing, "failure": []},
        "FAIL_TO_FAIL": {"success": [], "failure": []},
        "PASS_TO_FAIL": {"success": [], "failure": []},
    }
    report = {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": resolved,
        "infra_failure": False,
        "tests_status": status,
    }
    return json.dumps({iid: report}, indent=4)


def write_files(work: Path, instances: int, models: int, *, logs: bool = False) -> list[str]:
    """The files, and the command's arguments for them."""
    rng = random.Random(7)  # noqa: S311 (synthetic data, not secrets)
    ids = [f"proj{i % 12}__proj{i % 12}-{10000 + i}" for i in range(instances)]
    with (work / "instances.jsonl").open("w") as out:
        for n, iid in enumerate(ids):
            out.write(
                json.dumps(
                    {
                        "repo": f"proj{n % 12}/proj{n % 12}",
                        "instance_id": iid,
                        "base_commit": f"{n:040x}",
                        "patch": diff(f"src/mod{n}.py", n, 30),
                        "test_patch": diff(f"tests/test_mod{n}.py", n, 90),
                        "problem_statement": f"Bug {n}: something fails\n" + "Details. " * 230,
                        "hints_text": "A hint. " * 120,
                        "created_at": "2023-01-01T00:00:00Z",
                        "version": "1.0",
                        "FAIL_TO_PASS": json.dumps([f"tests/test_mod{n}.py::test_fix"]),
                        "PASS_TO_PASS": json.dumps(
                            [f"tests/test_mod{n}.py::test_case_{k}" for k in range(80)]
                        ),
                        "environment_setup_commit": f"{n + 1:040x}",
                    }
                )
                + "\n"
            )
    args = ["--instances", str(work / "instances.jsonl")]
    for m in range(models):
        model = f"org/model-{m}"
        resolved: list[str] = []
        unresolved: list[str] = []
        with (work / f"preds-{m}.jsonl").open("w") as out:
            for n, iid in enumerate(ids):
                empty = rng.random() < 0.05
                patch = "" if empty else diff(f"src/mod{n}.py", n + m, 25 + m)
                out.write(
                    json.dumps(
                        {"instance_id": iid, "model_name_or_path": model, "model_patch": patch}
                    )
                    + "\n"
                )
                if not empty:
                    passes = rng.random() < 0.3
                    (resolved if passes else unresolved).append(iid)
                    if logs:
                        folder = work / "logs" / "run_evaluation" / "run1" / f"org__model-{m}" / iid
                        folder.mkdir(parents=True)
                        (folder / "report.json").write_text(report_json(iid, n, passes))
        report = {"resolved_ids": resolved, "unresolved_ids": unresolved, "schema_version": 2}
        (work / f"org__model-{m}.run1.json").write_text(json.dumps(report))
        args += ["--predictions", str(work / f"preds-{m}.jsonl")]
        args += ["--results", str(work / f"org__model-{m}.run1.json")]
    if logs:
        args += ["--results", str(work / "logs" / "run_evaluation" / "run1")]
    return args


def run(args: list[str], env: dict[str, str], dataset: str) -> tuple[float, float, str]:
    """``manage.py import_swebench``: (seconds, peak RSS in MB, output)."""
    start = time.perf_counter()
    command = [sys.executable, "manage.py", "import_swebench", *args, "--dataset", dataset]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert process.stdout is not None
    output = process.stdout.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"import_swebench failed:\n{output}")
    return elapsed, usage.ru_maxrss * 1024 / 1e6, output  # ru_maxrss: KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=2294)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument(
        "--logs", action="store_true", help="also the harness's logs folder (report.json files)"
    )
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sejury-bench-swebench-"))
    env = os.environ.copy()
    env.pop("DEBUG", None)
    env.pop("DATABASE_URL", None)  # always a throwaway SQLite database
    env["SECRET_KEY"] = "bench-only-insecure-key"
    env["SEJURY_VAR_DIR"] = str(work / "var")
    env.setdefault("ALLOWED_HOSTS", "testserver")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    tiny = work / "tiny"
    tiny.mkdir()
    baseline_args = write_files(tiny, 1, 1)
    args = write_files(work, options.instances, options.models, logs=options.logs)
    sizes = sum(p.stat().st_size for p in work.rglob("*.json*") if "var" not in p.parts) / 1e6
    print(f"files: {sizes:.1f} MB, {options.instances:,} instances × {options.models} models")
    _, baseline, _ = run(baseline_args, env, "bench-swebench-baseline")
    figures = []
    for attempt in ("first import", "again (nothing new)"):
        elapsed, peak, output = run(args, env, "bench-swebench")
        print(output.rstrip())
        print(f"  {attempt}: wall time {elapsed:.1f} s, peak RSS {peak:.0f} MB")
        figures.append((elapsed, peak))
    print(f"  baseline (one instance, one model): peak RSS {baseline:.0f} MB")
    (first_wall, first_peak), _ = figures
    above, memory_target = first_peak - baseline, MEMORY_FACTOR * sizes
    print(
        f"first import: wall time {first_wall:7.1f} s   target {WALL_TARGET_S:5.0f} s"
        f"   ratio {first_wall / WALL_TARGET_S:5.2f}"
    )
    print(
        f"first import: peak RSS above baseline {above:7.1f} MB   target {memory_target:5.0f} MB"
        f" (3 × files)   ratio {above / memory_target:5.2f}"
    )


if __name__ == "__main__":
    main()
