"""Benchmark: the dataset page and bundle import at 10,000 patches.

Run with ``make bench`` (or ``.venv/bin/python bench/dataset_page.py``). By default it
works in a throwaway SQLite database; with ``DATABASE_URL`` set it uses that database and
deletes its dataset afterwards. Prints each figure and its ratio to the target (below 1.0
is within target).
"""

import io
import json
import os
import statistics
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

from rubrics.bundle.services import bundle_import  # noqa: E402
from rubrics.models import Dataset  # noqa: E402
from sejury_web.roles import Role  # noqa: E402
from sejury_web.users import user_create  # noqa: E402

BUGS, PATCHES_PER_BUG, LABELS_PER_PATCH = 2_000, 5, 3
PAGE_TARGET_S = 0.200  # a dataset page, searched or not, renders in under 200 ms
IMPORT_TARGET_S = 60.0  # a 10,000-patch bundle imports in under a minute
RUNS = 15


def diff(path: str, n: int) -> str:
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -{n},3 +{n},3 @@\n"
        f" def f{n}(x):\n-    return x + {n}\n+    return x - {n}\n     # end\n"
    )


def bundle() -> bytes:
    lines = []
    for b in range(BUGS):
        lines.append(
            {
                "kind": "bug",
                "key": f"BENCH-{b}",
                "title": f"Bug {b} in module m{b % 37}",
                "description": "f returns the wrong value " * 5,
                "language": ["java", "python", "go"][b % 3],
                "bug_type": "wrong_operator",
                "reference_patch": diff(f"src/m{b}.py", b),
            }
        )
        for p in range(PATCHES_PER_BUG):
            key = f"BENCH-{b}-p{p}"
            lines.append(
                {
                    "kind": "patch",
                    "key": key,
                    "bug": f"BENCH-{b}",
                    "diff": diff(f"src/m{b}.py", b + p),
                }
            )
            for a in range(LABELS_PER_PATCH):
                lines.append(
                    {
                        "kind": "label",
                        "patch": key,
                        "annotator": f"bench-rater-{a}",
                        "label": "VALID",
                    }
                )
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


def timed(
    client: Client, url: str, params: dict[str, str], headers: dict[str, str] | None = None
) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        response = client.get(url, params, headers=headers or {})
        samples.append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
    return statistics.median(samples)


def report(name: str, seconds: float, target: float) -> None:
    ms, target_ms = seconds * 1000, target * 1000
    print(f"{name:<44} {ms:9.1f} ms   target {target_ms:8.0f} ms   ratio {seconds / target:5.2f}")


def main() -> None:
    call_command("migrate", verbosity=0)
    from django.db import connection

    patches = BUGS * PATCHES_PER_BUG
    print(
        f"database: {connection.vendor}; {BUGS:,} bugs, {patches:,} patches, "
        f"{patches * LABELS_PER_PATCH:,} labels; median of {RUNS} requests"
    )
    Dataset.objects.filter(slug="bench-10k").delete()
    data = bundle()
    start = time.perf_counter()
    bundle_import(source=io.BytesIO(data), dataset_name="bench-10k", actor=None)
    report(
        f"import of a {len(data) / 1e6:.1f} MB bundle", time.perf_counter() - start, IMPORT_TARGET_S
    )
    start = time.perf_counter()
    bundle_import(source=io.BytesIO(data), dataset_name="bench-10k", actor=None)
    report("re-import of the same bundle (no change)", time.perf_counter() - start, IMPORT_TARGET_S)

    from django.contrib.auth.models import User

    lead = User.objects.filter(username="bench-lead").first() or user_create(
        actor=None, username="bench-lead", password=None, roles=[Role.LEAD]
    )
    client = Client()
    client.force_login(lead)
    url = reverse("rubrics:dataset_detail", args=["bench-10k"])
    htmx = {"HX-Request": "true", "HX-Target": "bug-table"}
    report("dataset page, first page", timed(client, url, {}), PAGE_TARGET_S)
    report("dataset page, page 30", timed(client, url, {"page": "30"}), PAGE_TARGET_S)
    report(
        "search by title word (htmx partial)", timed(client, url, {"q": "m17"}, htmx), PAGE_TARGET_S
    )
    report(
        "search by patch key (htmx partial)",
        timed(client, url, {"q": "BENCH-1999-p4"}, htmx),
        PAGE_TARGET_S,
    )
    report(
        "search with no match (htmx partial)", timed(client, url, {"q": "zzz"}, htmx), PAGE_TARGET_S
    )
    bug_url = reverse("rubrics:bug_detail", args=["bench-10k", "BENCH-1000"])
    report("bug page (5 patches, highlighted diffs)", timed(client, bug_url, {}), PAGE_TARGET_S)
    Dataset.objects.filter(slug="bench-10k").delete()
    User.objects.filter(username__startswith="bench-").delete()


if __name__ == "__main__":
    main()
