"""Benchmark: REFINE's quality ladders and the evaluator tester at a team's scale.

Run with ``make bench`` (or ``.venv/bin/python bench/refine.py``). By default it works in a
throwaway SQLite database; with ``DATABASE_URL`` set it uses that database and deletes its
data afterwards. The data: a source dataset of 2,000 bugs (a 10,000-patch dataset at 5
patches a bug) whose reference fixes are real, cycled from the 100 Defects4J fixes of
``../shared/datasets/defects4j-le2019`` (hand-made multi-hunk diffs when that folder is
absent: the output says so), each bug with a golden rubric (a draft and a reviewed
revision), as a team's dataset has. Prints each figure and its ratio to the target (below
1.0 is within target):

- building the ladders (``ladders_build``, every level): under 60 s for the 2,000 bugs;
  also the patches built per level and the levels skipped per reason;
- building them again (idempotent: nothing added): under 10 s;
- the tester page (``/refine/<ladder>/``) with 5 finished runs on the ladder patches (3
  single strategies, 2 teams of 3: 11 configurations ranked, scores synthetic, not an
  LLM's), as a lead: under 2 s of server time, in a number of queries that does not grow
  with the patches;
- ``refine --format json`` on the same runs (reused, none started): under 2 s.
"""

import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-"))
os.environ.setdefault("ALLOWED_HOSTS", "testserver")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.contrib.contenttypes.models import ContentType  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.urls import reverse  # noqa: E402

from judging.models import JudgingRun, PatchJudgment, StrategyResult  # noqa: E402
from judging.refine.selectors import level_of  # noqa: E402
from judging.refine.services import configurations_parse  # noqa: E402
from judging.runs.services import run_target  # noqa: E402
from rubrics.ladders.services import ladders_build  # noqa: E402
from rubrics.models import Bug, Dataset, Rubric, RubricRevision  # noqa: E402
from rubrics.rubric_text import rubric_markdown  # noqa: E402
from sejury_web.llm import Provider  # noqa: E402
from sejury_web.models import AuditEvent  # noqa: E402
from sejury_web.roles import Role  # noqa: E402
from sejury_web.users import user_create  # noqa: E402

NAME = "bench-refine-2k"
BUGS = 2_000
LE2019 = ROOT.parent / "shared" / "datasets" / "defects4j-le2019" / "bundle.jsonl"
BUILD_TARGET_S = 60.0
REBUILD_TARGET_S = 10.0
PAGE_TARGET_S = 2.0
COMMAND_TARGET_S = 2.0
RUNS = 3  # timed requests (after one untimed)
# 3 single strategies and 2 teams of 3: 5 run rows and 6 member rows on the page.
CONFIGS = "s1b;s3;rubric@golden;s1b,s2,s3;rubric,s1b,s4"
USER_PREFIX = "bench-refine-"
STRUCTURE = {
    "root_cause": "Synthetic root cause (not an LLM's).",
    "requirements": [{"title": "Fix `f()`", "detail": "so that it returns 2"}],
    "acceptable": [],
    "unacceptable": [],
}
# Hand-made multi-hunk fixes, used only when ../shared/datasets is absent.
HAND_MADE = (
    "--- a/src/main/java/org/example/Range{n}.java\n"
    "+++ b/src/main/java/org/example/Range{n}.java\n"
    "@@ -10,7 +10,8 @@ public class Range{n} {{\n"
    "     public boolean contains(int value) {{\n"
    "-        return value > lower && value < upper;\n"
    "+        int bound = upper;\n"
    "+        return value >= lower && value <= bound;\n"
    "     }}\n"
    " \n"
    "     public int length() {{\n"
    "@@ -30,6 +31,9 @@ public class Range{n} {{\n"
    "     public Range{n} shift(int delta) {{\n"
    "+        if (delta == 0) {{\n"
    "+            return this;\n"
    "+        }}\n"
    "         return new Range{n}(lower + delta, upper + delta);\n"
    "     }}\n"
    " }}\n",
    "--- a/pkg/mod{n}.py\n"
    "+++ b/pkg/mod{n}.py\n"
    "@@ -3,5 +3,6 @@ import os\n"
    " def read(path):\n"
    "-    with open(path) as f:\n"
    "+    size = 4096\n"
    "+    with open(path, buffering=size) as f:\n"
    "         return f.read()\n"
    " \n"
    "@@ -20,4 +21,4 @@ def write(path, text):\n"
    " def retries():\n"
    "-    return 3\n"
    "+    return 5\n",
    "--- a/src/a{n}.c\n"
    "+++ b/src/a{n}.c\n"
    "@@ -1,4 +1,4 @@\n"
    " int check(int x) {{\n"
    "-    return x > 0;\n"
    "+    return x >= 0;\n"
    " }}\n"
    " \n"
    "--- a/src/b{n}.c\n"
    "+++ b/src/b{n}.c\n"
    "@@ -5,3 +5,4 @@ void run(void) {{\n"
    "     start();\n"
    "+    flush();\n"
    "     stop();\n",
)


def report(name: str, value: float, target: float, unit: str = "ms") -> None:
    scale = 1000 if unit == "ms" else 1
    print(
        f"{name:<58} {value * scale:9.1f} {unit}   target {target * scale:7.0f} {unit}"
        f"   ratio {value / target:5.2f}"
    )


def references() -> tuple[list[tuple[str, str, str]], str]:
    """(key, title, reference fix) of the fixes cycled through, and where they come from."""
    if LE2019.is_file():
        records = [json.loads(line) for line in LE2019.read_text().splitlines() if line.strip()]
        fixes = [
            (r["key"], r.get("title", ""), r["reference_patch"])
            for r in records
            if r["kind"] == "bug" and r["reference_patch"].strip()
        ]
        if fixes:
            return fixes, f"{len(fixes)} real reference fixes of {LE2019.parent.name}"
    fixes = [
        (f"HAND-{i}", f"Hand-made fix {i}", HAND_MADE[i % len(HAND_MADE)].format(n=i))
        for i in range(30)
    ]
    return fixes, (f"{LE2019} is absent: {len(fixes)} HAND-MADE multi-hunk fixes, not real ones")


def clean() -> None:
    # A golden revision is protected (a golden rubric is not deleted by accident).
    datasets = Dataset.objects.filter(name__startswith=NAME)
    ladders = list(Dataset.objects.filter(derived_from__in=datasets).values_list("pk", flat=True))
    Rubric.objects.filter(bug__dataset__name__startswith=NAME).update(golden_revision=None)
    AuditEvent.objects.filter(
        target_type=ContentType.objects.get_for_model(Dataset), target_id__in=ladders
    ).delete()
    datasets.delete()


@transaction.atomic
def make_source() -> Dataset:
    """The source dataset: ``BUGS`` bugs cycling through the reference fixes, each with a
    golden rubric (draft revision 0, reviewed revision 1)."""
    fixes, origin = references()
    print(f"  reference fixes: {origin}")
    dataset = Dataset.objects.create(name=NAME, slug=NAME)
    bugs = Bug.objects.bulk_create(
        (
            Bug(
                dataset=dataset,
                key=f"{key}-c{i // len(fixes):02d}",
                title=title,
                description="A bench bug: its reference fix is real, cycled.",
                language="java",
                reference_patch=fix,
            )
            for i, (key, title, fix) in ((i, fixes[i % len(fixes)]) for i in range(BUGS))
        ),
        batch_size=1_000,
    )
    rubrics = Rubric.objects.bulk_create(
        (Rubric(bug=bug, status=Rubric.Status.GOLDEN, current_number=1) for bug in bugs),
        batch_size=1_000,
    )
    text = rubric_markdown(STRUCTURE)
    revisions = RubricRevision.objects.bulk_create(
        (
            RubricRevision(rubric=r, number=n, structure=STRUCTURE, text=text, author="bench")
            for r in rubrics
            for n in (0, 1)
        ),
        batch_size=2_000,
    )
    for revision in revisions:
        if revision.number == 1:
            revision.rubric.golden_revision = revision
    Rubric.objects.bulk_update(rubrics, ["golden_revision"], batch_size=1_000)
    return dataset


@transaction.atomic
def make_runs(ladder: Dataset) -> list[JudgingRun]:
    """A finished offline run per configuration of ``CONFIGS`` on every ladder patch, with
    synthetic scores (the team's and each member's) that mostly fall level by level."""
    provider, model = run_target(Provider.OFFLINE, "")
    patches = list(ladder.patches.values_list("pk", "source"))
    tiers = np.array([{0: 0, 1: 0, 2: 1, 3: 2, 4: 3}[level_of(s) or 0] for _, s in patches])
    rng = np.random.default_rng(18)
    runs = []
    for number, config in enumerate(configurations_parse(CONFIGS)):
        run = JudgingRun.objects.create(
            dataset=ladder,
            name=f"REFINE {config.text} (synthetic scores, not an LLM's)",
            strategies=list(config.team),
            context=config.context,
            provider=provider,
            model=model,
            status=JudgingRun.Status.FINISHED,
        )
        members = {
            name: np.clip(
                90 - (18 - 3 * number) * tiers + rng.normal(0, 12 + 4 * i, len(patches)), 0, 100
            ).round(1)
            for i, name in enumerate(config.team)
        }
        team = np.mean(list(members.values()), axis=0).round(1)
        judgments = PatchJudgment.objects.bulk_create(
            (
                PatchJudgment(
                    run=run,
                    patch_id=pk,
                    status=PatchJudgment.Status.DONE,
                    verdict="VALID" if team[index] >= run.threshold else "INVALID",
                    score=float(team[index]),
                )
                for index, (pk, _) in enumerate(patches)
            ),
            batch_size=5_000,
        )
        StrategyResult.objects.bulk_create(
            (
                StrategyResult(
                    judgment=judgment,
                    strategy=name,
                    status=StrategyResult.Status.DONE,
                    score=float(scores[index]),
                    reasoning="Synthetic score (not an LLM's).",
                    prompt_version="bench",
                    is_offline=True,
                )
                for index, judgment in enumerate(judgments)
                for name, scores in members.items()
            ),
            batch_size=5_000,
        )
        runs.append(run)
    return runs


def timed(client: Client, url: str) -> tuple[float, int]:
    """The median server time of ``url`` over ``RUNS`` requests, and its number of queries."""
    client.get(url)
    samples = []
    for _ in range(RUNS):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url)
            samples.append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
    return statistics.median(samples), len(queries)


def refine_command(ladder: Dataset) -> tuple[float, dict[str, Any], str]:
    """The median time of ``refine --format json`` over ``RUNS`` calls, its JSON, its notes."""
    samples = []
    for _ in range(RUNS + 1):  # the first untimed
        out, notes = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(notes):
            start = time.perf_counter()
            call_command(
                "refine",
                dataset=ladder.name,
                configs=CONFIGS,
                provider="offline",
                format="json",
                stdout=out,
            )
            samples.append(time.perf_counter() - start)
    return statistics.median(samples[1:]), json.loads(out.getvalue()), notes.getvalue()


def main() -> None:
    call_command("migrate", verbosity=0)
    print(f"database: {connection.vendor}")
    clean()
    try:
        run_bench()
    finally:
        clean()
        User.objects.filter(username__startswith=USER_PREFIX).delete()


def run_bench() -> None:
    start = time.perf_counter()
    source = make_source()
    print(
        f"  made {NAME!r}: {BUGS:,} bugs with golden rubrics in {time.perf_counter() - start:.1f} s"
    )

    start = time.perf_counter()
    build = ladders_build(dataset=source, actor=None)
    took = time.perf_counter() - start
    report(
        f"ladders built for {build.bugs:,} bugs ({build.patches_added:,} patches)",
        took,
        BUILD_TARGET_S,
        "s",
    )
    levels = ", ".join(f"L{level} {n:,}" for level, n in sorted(build.levels.items()))
    print(f"  patches per level: {levels}; rubrics copied: {build.rubrics_copied:,}")
    skipped: Counter[str] = Counter()
    for (level, reason), n in sorted(build.skipped.items()):
        skipped[f"L{level}: {reason}"] += n
    for reason, n in skipped.items():
        print(f"  skipped {n:>5,} × {reason}")
    for reason, n in build.bugs_left_out.items():
        print(f"  left out {n:>4,} bugs: {reason}")

    start = time.perf_counter()
    again = ladders_build(dataset=source, actor=None)
    took = time.perf_counter() - start
    assert again.patches_added == again.bugs_added == again.rubrics_copied == 0, again.as_dict()
    assert again.rubrics_updated == 0, again.as_dict()
    report(
        f"ladders built again ({again.patches_kept:,} kept, nothing added)",
        took,
        REBUILD_TARGET_S,
        "s",
    )

    ladder = build.ladder
    start = time.perf_counter()
    runs = make_runs(ladder)
    results = StrategyResult.objects.filter(judgment__run__in=runs).count()
    print(
        f"  made {len(runs)} finished runs ({PatchJudgment.objects.filter(run__in=runs).count():,}"
        f" judgments, {results:,} member results) in {time.perf_counter() - start:.1f} s"
    )

    lead = user_create(actor=None, username=f"{USER_PREFIX}lead", password=None, roles=[Role.LEAD])
    client = Client()
    client.force_login(lead)
    took, queries = timed(client, reverse("judging:refine_detail", args=[ladder.slug]))
    report(f"tester page, 11 configurations ({queries} queries)", took, PAGE_TARGET_S)

    before = JudgingRun.objects.filter(dataset=ladder).count()
    took, record, notes = refine_command(ladder)
    started = JudgingRun.objects.filter(dataset=ladder).count() - before
    assert started == 0, notes
    assert "Started" not in notes, notes
    assert len(record["configurations"]) == 11, len(record["configurations"])
    report(
        f"refine --format json ({len(record['configurations'])} rows, 0 runs started)",
        took,
        COMMAND_TARGET_S,
    )
    best = record["configurations"][0]
    alignment = best["alignment"]["value"]
    print(f"  best: {best['config']}, alignment {alignment:.3f} on {best['bugs']:,} bugs")


if __name__ == "__main__":
    main()
