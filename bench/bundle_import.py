"""Benchmark: the memory of importing a 60 MB bundle of 935,000 labels; a 1 MB diff's page.

Run with ``make bench`` (or ``.venv/bin/python bench/bundle_import.py [--labels 935000]``).
It writes a bundle of the shape that once took a server from 242 MB to 1.37 GB (issue 16):
bugs, their patches and about 935,000 labels of those patches by a hundred annotators, about
60 MB in all. It then runs ``manage.py import_bundle`` on it in a subprocess, in a throwaway
SQLite database (or ``DATABASE_URL``'s, whose bench dataset it deletes first), with DEBUG
off. The same command importing a one-bug bundle gives the process's baseline. Prints the
peak resident memory of the big import minus that baseline, against the target of 3 × the
file's size (ratio below 1.0 is within target), and the import's wall time (not a target).

Then the page of a patch whose diff is 1 MB (the bundle's limit, ~27,000 lines): its size
and server time (median of 5, the first request apart), and the request's memory, against
a page of at most 400 KB in at most 500 ms. Pages show a long diff's first lines and load
the rest on demand; before that, this page was the whole diff.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY_TARGET_FACTOR = 3.0
ANNOTATORS = 100
PATCHES_PER_BUG = 5
DATASET = "bench-bundle-labels"
LABELS = ("VALID", "INVALID", "INVALID", "UNSURE")
PAGE_TARGET_KB = 400.0
PAGE_TARGET_MS = 500.0


def diff(path: str, n: int) -> str:
    return (
        f"--- a/{path}\n+++ b/{path}\n@@ -10,6 +10,6 @@ class Widget:\n"
        "     def total(self):\n         result = 0\n"
        f"-        for item in self.items[1:]:\n+        for item in self.items[{n}:]:\n"
        "             result += item.value\n         return result\n \n"
    )


def write_bundle(path: Path, labels: int) -> tuple[int, int, int]:
    """A bundle of bugs, patches and ``labels`` labels; (bugs, patches, labels) written."""
    patches = -(-labels // ANNOTATORS)
    bugs = -(-patches // PATCHES_PER_BUG)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for b in range(bugs):
            record: dict[str, object] = {
                "kind": "bug",
                "key": f"B{b:05d}",
                "title": f"Widget.total skips an item ({b})",
                "description": "testTotal fails: expected 6 but was 5.\n" * 3,
                "language": "python",
                "reference_patch": diff(f"src/widget_{b}.py", 1),
            }
            out.write(json.dumps(record) + "\n")
        for p in range(patches):
            record = {
                "kind": "patch",
                "key": f"p{p:04d}",
                "bug": f"B{p // PATCHES_PER_BUG:05d}",
                "diff": diff(f"src/widget_{p // PATCHES_PER_BUG}.py", p),
                "source": f"tool-{p % 8}",
                "tests_pass": True,
            }
            out.write(json.dumps(record) + "\n")
        for p in range(patches):
            for a in range(ANNOTATORS):
                if written == labels:
                    break
                record = {
                    "kind": "label",
                    "patch": f"p{p:04d}",
                    "annotator": f"r{a:02d}",
                    "label": LABELS[(p * 7 + a) % len(LABELS)],
                }
                out.write(json.dumps(record, separators=(",", ":")) + "\n")
                written += 1
    return bugs, patches, written


def run_import(path: Path, env: dict[str, str], dataset: str) -> tuple[float, float, str]:
    """Import ``path`` with ``manage.py import_bundle``: (seconds, peak RSS in MB, output)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "import_bundle", str(path), "--dataset", dataset],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    output = process.stdout.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    if process.returncode:
        raise SystemExit(f"import_bundle failed ({process.returncode}):\n{output}")
    return elapsed, usage.ru_maxrss * 1024 / 1e6, output  # ru_maxrss: KiB on Linux


def report(name: str, value: float, target: float, unit: str) -> None:
    ratio = value / target
    print(f"{name:<58} {value:9.1f} {unit}   target {target:7.1f} {unit}   ratio {ratio:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=935_000)
    parser.add_argument("--page-only", action="store_true", help="only the diff page")
    parser.add_argument("--page-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.page_child:
        page_child()
        return
    work = Path(tempfile.mkdtemp(prefix="sejury-bench-bundle-"))
    env = os.environ.copy()
    env.pop("DEBUG", None)  # DEBUG keeps every query's SQL: not what a server does
    env.setdefault("SECRET_KEY", "bench-only-insecure-key")
    env.setdefault("SEJURY_VAR_DIR", str(work / "var"))
    env.setdefault("ALLOWED_HOSTS", "testserver")
    # Larger --labels may pass the default 64 MiB limit: the bench measures memory, not it.
    env["SEJURY_BUNDLE_MAX_BYTES"] = str(512 * 1024 * 1024)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    if "DATABASE_URL" in env:
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             "from rubrics.models import Dataset;"
             f"Dataset.objects.filter(name__startswith={DATASET!r}).delete()"],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip

    if args.page_only:
        diff_page(env)
        return
    big = work / "labels.jsonl"
    bugs, patches, labels = write_bundle(big, args.labels)
    size_mb = big.stat().st_size / 1e6
    print(
        f"bundle: {size_mb:.1f} MB, {bugs:,} bugs, {patches:,} patches, {labels:,} labels "
        f"by {ANNOTATORS} annotators; database: {env.get('DATABASE_URL', 'SQLite')[:10]}"
    )
    tiny = work / "one-bug.jsonl"
    write_bundle(tiny, 1)
    _, baseline, _ = run_import(tiny, env, f"{DATASET}-baseline")
    elapsed, peak, output = run_import(big, env, DATASET)
    print(output.rstrip())
    print(f"  baseline (the same command on a one-label bundle): {baseline:.0f} MB")
    print(f"  peak of the big import: {peak:.0f} MB; wall time {elapsed:.1f} s")
    report(
        f"import peak RSS minus baseline (target {MEMORY_TARGET_FACTOR:g} × file)",
        peak - baseline,
        MEMORY_TARGET_FACTOR * size_mb,
        "MB",
    )
    diff_page(env)


def diff_page(env: dict[str, str]) -> None:
    """The page of a patch with a 1 MB diff: size, server time, memory (in a subprocess)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--page-child"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"the diff page failed:\n{done.stderr}")
    chars, lines, size, seconds, memory = done.stdout.split()[-5:]
    print(f"patch page of a {int(chars) / 1e6:.2f} MB diff ({int(lines):,} lines):")
    print(f"  request memory (peak growth): {int(memory) / 1e6:.0f} MB")
    report("  page size", int(size) / 1e3, PAGE_TARGET_KB, "KB")
    report("  server time, median of 5", float(seconds) * 1000, PAGE_TARGET_MS, "ms")


def page_child() -> None:
    """In the subprocess: make the patch, open its page as a lead, print the figures."""
    import resource
    import statistics

    import django

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
    django.setup()
    from django.test import Client
    from django.urls import reverse

    from rubrics.models import Bug, Dataset, Patch
    from sejury_web.roles import Role
    from sejury_web.users import user_create

    lines = [
        f'+    private static final int VALUE_{n} = compute({n}, "item-{n}");'
        for n in range(13_950)
    ]
    header = f"--- /dev/null\n+++ b/src/main/java/Big.java\n@@ -0,0 +1,{len(lines)} @@\n"
    text = header + "\n".join(lines) + "\n"
    assert len(text) <= 1_000_000, len(text)
    Dataset.objects.filter(slug="bench-diff-page").delete()
    dataset = Dataset.objects.create(name="bench-diff-page", slug="bench-diff-page")
    bug = Bug.objects.create(
        dataset=dataset, key="BIG-1", description="d", reference_patch=diff("src/big.py", 1)
    )
    patch = Patch.objects.create(
        dataset=dataset, bug=bug, key="big-p1", diff=text, diff_hash="0" * 64
    )
    username = f"bench-diff-lead-{os.getpid()}"
    lead = user_create(actor=None, username=username, password=None, roles=[Role.LEAD])
    client = Client()
    client.force_login(lead)
    url = reverse("rubrics:patch_detail", args=[dataset.slug, patch.key])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    samples, size = [], 0
    for _ in range(6):
        start = time.perf_counter()
        response = client.get(url)
        samples.append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
        size = len(response.content)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
    print(len(text), len(lines), size, statistics.median(samples[1:]), grown)


if __name__ == "__main__":
    main()
