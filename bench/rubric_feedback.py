"""Benchmark: the judge's disagreements with humans, brought back to rubrics, at 10,000 patches.

Run with ``make bench`` (or ``.venv/bin/python bench/rubric_feedback.py``). By default it works
in a throwaway SQLite database; with ``DATABASE_URL`` set it uses that database and deletes its
data afterwards. The data: 10,000 synthetic patches (2,000 bugs, 5 labels each from 20
annotators) with a golden rubric per bug, and two finished runs whose rubric judge read it
(about a quarter of its verdicts contradict the humans' consensus). Prints each figure and
its ratio to the target (below 1.0 is within target):

- the reviewer's review queue, which counts every rubric's unanswered disagreements: under
  1 s of server time;
- the review screen of a flagged rubric (its disagreements, the judge's checks and the
  humans' notes beside the editor): under 250 ms.
"""

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
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.urls import reverse  # noqa: E402

from judging.models import PatchJudgment, StrategyResult  # noqa: E402
from judging.reports.synthetic import Shape, synthetic_dataset  # noqa: E402
from rubrics.models import Dataset, Rubric, RubricRevision  # noqa: E402
from rubrics.review.disagreements import open_counts  # noqa: E402
from rubrics.rubric_text import rubric_markdown  # noqa: E402
from sejury_web.roles import Role  # noqa: E402
from sejury_web.users import user_create  # noqa: E402

NAME = "bench-feedback-10k"
SHAPE = Shape(bugs=2_000, patches_per_bug=5, annotators=20, labels_per_patch=5, runs=2)
QUEUE_TARGET_S = 1.0
EDITOR_TARGET_S = 0.250
RUNS = 5
STRUCTURE = {
    "root_cause": "Synthetic root cause (not an LLM's).",
    "requirements": [{"title": "Fix `f()`", "detail": "so that it returns 2"}],
    "acceptable": [],
    "unacceptable": [],
}


def report(name: str, value: float, target: float, unit: str = "ms") -> None:
    scale = 1000 if unit == "ms" else 1
    print(
        f"{name:<58} {value * scale:9.1f} {unit}   target {target * scale:7.0f} {unit}"
        f"   ratio {value / target:5.2f}"
    )


def clean() -> None:
    # A golden revision is protected (a golden rubric is not deleted by accident).
    Rubric.objects.filter(bug__dataset__name=NAME).update(golden_revision=None)
    Dataset.objects.filter(name=NAME).delete()


def make() -> Dataset:
    """The synthetic dataset, a golden rubric per bug, and the rubric judge's results of its
    runs (the run's verdict, the requirement failed when INVALID)."""
    clean()
    start = time.perf_counter()
    dataset = synthetic_dataset(NAME, SHAPE)
    rubrics = Rubric.objects.bulk_create(
        Rubric(bug=bug, status=Rubric.Status.GOLDEN, current_number=0) for bug in dataset.bugs.all()
    )
    text = rubric_markdown(STRUCTURE)
    revisions = RubricRevision.objects.bulk_create(
        RubricRevision(rubric=r, number=0, structure=STRUCTURE, text=text, author="bench")
        for r in rubrics
    )
    for rubric, revision in zip(rubrics, revisions, strict=True):
        rubric.golden_revision = revision
    Rubric.objects.bulk_update(rubrics, ["golden_revision"], batch_size=2_000)
    revision_of = {r.rubric.bug_id: r.pk for r in revisions}
    judgments = PatchJudgment.objects.filter(run__dataset=dataset).values_list(
        "pk", "verdict", "patch__bug_id"
    )
    StrategyResult.objects.bulk_create(
        (
            StrategyResult(
                judgment_id=pk,
                strategy="rubric",
                status=StrategyResult.Status.DONE,
                score=100.0 if verdict == "VALID" else 0.0,
                verdict=verdict,
                reasoning="Synthetic justification (not an LLM's).",
                answers={
                    "judge": {
                        "requirements": [
                            {"index": 1, "passed": verdict == "VALID", "reason": "synthetic"}
                        ]
                    }
                },
                prompt_version="bench",
                is_offline=True,
                rubric_revision_id=revision_of[bug_id],
            )
            for pk, verdict, bug_id in judgments
        ),
        batch_size=5_000,
    )
    print(f"  made {NAME!r} with rubrics and rubric results in {time.perf_counter() - start:.1f} s")
    return dataset


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


def main() -> None:
    call_command("migrate", verbosity=0)
    print(f"database: {connection.vendor}")
    make()
    counts = open_counts()
    flagged = max(counts, key=lambda rubric_id: (counts[rubric_id], -rubric_id))
    print(
        f"  {len(counts):,} rubrics flagged, {sum(counts.values()):,} disagreements;"
        f" the most on one rubric: {counts[flagged]}"
    )
    reviewer = user_create(
        actor=None, username="bench-feedback-reviewer", password=None, roles=[Role.REVIEWER]
    )
    client = Client()
    client.force_login(reviewer)
    took, queries = timed(client, reverse("rubrics:review_queue"))
    report(f"review queue ({queries} queries), server time", took, QUEUE_TARGET_S)
    took, queries = timed(client, Rubric.objects.get(pk=flagged).get_absolute_url())
    report(f"flagged rubric's review screen ({queries} queries)", took, EDITOR_TARGET_S)
    clean()
    from django.contrib.auth.models import User

    User.objects.filter(username__startswith="bench-feedback-").delete()


if __name__ == "__main__":
    main()
