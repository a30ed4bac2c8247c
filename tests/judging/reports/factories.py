"""The small hand-made dataset of the agreement report tests (see the table in
``test_reports``): three annotators, eight patches on four bugs, and two finished runs."""

import dataclasses

from django.contrib.auth.models import User

from judging.models import Adjudication, Annotation, JudgingRun, PatchJudgment
from rubrics.models import Dataset, Patch
from tests.judging.factories import UserFactory
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

V, I, U = "VALID", "INVALID", "UNSURE"  # noqa: E741
ANNOTATORS = ("ann-a", "ann-b", "ann-c")
LABELS = {
    "P1": (V, V, V),
    "P2": (I, I, I),
    "P3": (V, V, I),
    "P4": (I, I, U),
    "P5": (V, I, V),
    "P6": (I, I, I),
    "P7": (V, V, None),
    "P8": (U, V, None),
}
ADJUDICATED = {"P3": V, "P8": I}
GOLDEN = {"P1": V, "P2": I, "P3": I, "P4": I, "P5": V, "P6": V, "P7": V, "P8": "failed"}
REFERENCE = {"P1": V, "P2": V, "P3": V, "P4": I, "P5": I, "P6": I, "P7": "pending", "P8": I}
BUG_OF = {"P1": 1, "P2": 1, "P3": 2, "P4": 2, "P5": 3, "P6": 3, "P7": 4, "P8": 4}
BUG_TYPES = {1: "null_check", 2: "null_check", 3: "off_by_one", 4: "off_by_one"}


@dataclasses.dataclass
class Small:
    dataset: Dataset
    patches: dict[str, Patch]
    annotators: dict[str, User]
    golden: JudgingRun
    reference: JudgingRun


def make_run(
    dataset: Dataset, patches: dict[str, Patch], verdicts: dict[str, str], **fields: object
) -> JudgingRun:
    run = JudgingRun.objects.create(dataset=dataset, status=JudgingRun.Status.FINISHED, **fields)
    for key, verdict in verdicts.items():
        status = verdict if verdict in ("failed", "pending") else PatchJudgment.Status.DONE
        PatchJudgment.objects.create(
            run=run,
            patch=patches[key],
            status=status,
            verdict=verdict if status == PatchJudgment.Status.DONE else "",
            score=100.0 if verdict == V else 0.0 if verdict == I else None,
        )
    return run


def build_small() -> Small:
    dataset = DatasetFactory(name="Small", slug="small")
    bugs = {n: BugFactory(dataset=dataset, key=f"B{n}", bug_type=BUG_TYPES[n]) for n in range(1, 5)}
    patches = {
        key: PatchFactory(bug=bugs[BUG_OF[key]], key=key, source="tool-a" if n % 2 else "tool-b")
        for n, key in enumerate(LABELS, start=1)
    }
    annotators = {name: UserFactory(username=name) for name in ANNOTATORS}
    for key, labels in LABELS.items():
        for name, label in zip(ANNOTATORS, labels, strict=True):
            if label:
                Annotation.objects.create(
                    patch=patches[key], annotator=annotators[name], label=label
                )
    for key, label in ADJUDICATED.items():
        Adjudication.objects.create(patch=patches[key], label=label, themes=["other"], note="x")
    golden = make_run(
        dataset, patches, GOLDEN, name="golden", strategies=["rubric"], context="golden",
        provider="openai", model="gpt-4o-mini",
    )  # fmt: skip
    reference = make_run(
        dataset, patches, REFERENCE, name="reference", strategies=["s1b", "s2"],
        context="reference", provider="offline", model="offline",
    )  # fmt: skip
    return Small(dataset, patches, annotators, golden, reference)


def add_patches(small: Small, count: int) -> None:
    """``count`` more labelled and judged patches on one more bug."""
    bug = BugFactory(dataset=small.dataset, key=f"B-more-{count}", bug_type="extra")
    for n in range(count):
        patch = PatchFactory(bug=bug, key=f"more-{count}-{n}", source=f"tool-{n % 3}")
        for name, user in small.annotators.items():
            label = V if (n + len(name)) % 3 else I
            Annotation.objects.create(patch=patch, annotator=user, label=label)
        for run in (small.golden, small.reference):
            PatchJudgment.objects.create(
                run=run, patch=patch, status="done", verdict=V if n % 2 else I, score=1.0
            )
