"""Benchmark: the memory an import takes for one huge value, in every input shape.

Run with ``make bench`` (or ``.venv/bin/python bench/input_memory.py [--mb 60]``). Each shape
is a file of about ``--mb`` MB that is one huge value: a bundle line (a patch whose diff is
the whole file, in ASCII and in three-byte UTF-8), SWE-bench instances as a JSON array and
predictions as JSON Lines and as an object keyed by instance id, a Label Studio export (in a
task's data, which the import does not keep, and in an annotation's note). Each is imported
by its command (``import_bundle``, ``import_swebench``, ``labelstudio_import``) in a
subprocess, in a throwaway SQLite database, with DEBUG off: refused for the value's length
(or imported without it). Prints the peak resident memory minus that of the same command
given a small file of the same shape, against the target of 3 × the file's size (ratio below
1.0 is within target), and how the command ended.
"""

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MEMORY_TARGET_FACTOR = 3.0
DATASET = "bench-input-memory"


def _diff(size: int, char: str = "x") -> str:
    head = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+"
    return head + char * max(1, (size - len(head)) // len(char.encode()))


def bundle_line(path: Path, size: int, char: str = "x") -> list[str]:
    record = {"kind": "patch", "key": "P1", "bug": "B1", "diff": _diff(size, char)}
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    return ["import_bundle", str(path), "--dataset", DATASET]


def bundle_line_utf8(path: Path, size: int) -> list[str]:
    return bundle_line(path, size, "€")


def _instance(size: int) -> dict[str, str]:
    return {
        "instance_id": "demo__demo-1",
        "repo": "demo/demo",
        "base_commit": "0" * 40,
        "problem_statement": "x" * size,
        "patch": _diff(100),
    }


def swebench_array(path: Path, size: int) -> list[str]:
    path.write_text(json.dumps([_instance(size)]), encoding="utf-8")
    return ["import_swebench", "--instances", str(path), "--dataset", DATASET]


def _prediction(size: int) -> dict[str, str]:
    return {
        "instance_id": "demo__demo-1",
        "model_name_or_path": "model",
        "model_patch": _diff(size),
    }


def swebench_predictions_lines(path: Path, size: int) -> list[str]:
    path.write_text(json.dumps(_prediction(size)) + "\n", encoding="utf-8")
    return ["import_swebench", "--predictions", str(path), "--dataset", DATASET]


def swebench_predictions_object(path: Path, size: int) -> list[str]:
    path.write_text(json.dumps({"demo__demo-1": _prediction(size)}), encoding="utf-8")
    return ["import_swebench", "--predictions", str(path), "--dataset", DATASET]


def _task(diff: str, note: str) -> dict[str, Any]:
    """A task of the dataset's one patch (``prepare`` made it), labelled with ``note``."""
    result = [{"from_name": "label", "type": "choices", "value": {"choices": ["VALID"]}}]
    if note:
        result.append({"from_name": "note", "type": "textarea", "value": {"text": [note]}})
    return {
        "id": 1,
        "data": {"sejury_patch_id": 1, "sejury_dataset": DATASET, "diff": diff},
        "annotations": [{"completed_by": {"username": "rater-01"}, "result": result}],
    }


def labelstudio_task_data(path: Path, size: int) -> list[str]:
    path.write_text(json.dumps([_task("x" * size, "")]), encoding="utf-8")
    return ["labelstudio_import", str(path), "--dataset", DATASET]


def labelstudio_note(path: Path, size: int) -> list[str]:
    path.write_text(json.dumps([_task(_diff(100), "x" * size)]), encoding="utf-8")
    return ["labelstudio_import", str(path), "--dataset", DATASET]


SHAPES: dict[str, Callable[[Path, int], list[str]]] = {
    "bundle: one line (ASCII)": bundle_line,
    "bundle: one line (UTF-8, 3 bytes a character)": bundle_line_utf8,
    "SWE-bench instances: a JSON array": swebench_array,
    "SWE-bench predictions: JSON Lines": swebench_predictions_lines,
    "SWE-bench predictions: an object by instance": swebench_predictions_object,
    "Label Studio export: a task's data (not kept)": labelstudio_task_data,
    "Label Studio export: an annotation's note": labelstudio_note,
}


def prepare(work: Path, env: dict[str, str]) -> None:
    """The dataset the Label Studio exports are of: one bug, one patch (id 1)."""
    bundle = work / "dataset.jsonl"
    bug = {"kind": "bug", "key": "B1", "description": "d", "reference_patch": _diff(100)}
    patch = {"kind": "patch", "key": "P1", "bug": "B1", "diff": _diff(100)}
    bundle.write_text(json.dumps(bug) + "\n" + json.dumps(patch) + "\n", encoding="utf-8")
    command = [sys.executable, "manage.py", "import_bundle", str(bundle), "--dataset", DATASET]
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)


def run(args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``manage.py args``: (seconds, peak RSS in MB, output)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    output = process.stdout.read().decode(errors="replace")
    _, _, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if "Traceback" in output:
        raise SystemExit(f"manage.py {args[0]} crashed:\n{output}")
    return elapsed, usage.ru_maxrss * 1024 / 1e6, output  # ru_maxrss: KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=60, help="the size of each file, in MB")
    parser.add_argument("--only", default="", help="run only the shapes whose name has this")
    args = parser.parse_args()
    size = args.mb * 1_000_000
    with tempfile.TemporaryDirectory(prefix="sejury-input-memory-") as tmp:
        work = Path(tmp)
        env = os.environ | {
            "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
            "SEJURY_VAR_DIR": str(work / "var"),
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DEBUG": "0",
            "SEJURY_BUNDLE_MAX_BYTES": str(max(64 * 1024 * 1024, size + 1_000_000)),
        }
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
        )
        prepare(work, env)
        failed = False
        print(f"{'shape':<48} {'file':>8} {'grown':>9} {'target':>9} {'ratio':>6} {'time':>7}")
        for name, write in SHAPES.items():
            if args.only and args.only not in name:
                continue
            _, baseline, _ = run(write(work / "small", 1000), env)
            path = work / "big"
            command = write(path, size)
            file_mb = path.stat().st_size / 1e6
            seconds, peak, output = run(command, env)
            grown = peak - baseline
            target = MEMORY_TARGET_FACTOR * file_mb
            ratio = grown / target
            failed |= ratio > 1.0
            print(
                f"{name:<48} {file_mb:6.1f}MB {grown:7.1f}MB {target:7.1f}MB {ratio:6.2f} "
                f"{seconds:6.1f}s  ({output.strip().splitlines()[-1][:60]})"
            )
            path.unlink()
        if failed:
            raise SystemExit("FAIL: a shape took more than 3 × its file's size")


if __name__ == "__main__":
    main()
