"""A synthetic labelled dataset with judged runs, at any size: what the agreement report's
benchmark (``bench/agreement_report.py``) and its browser test measure and look at.

Each patch has a hidden truth (VALID at ``valid_rate``, skewed like real patch-correctness
data); each annotator labels it right with their own accuracy, sometimes UNSURE; each run's
verdict is right with its own accuracy and comes with a team score that leans the right
way. Nearly every valid patch passes its tests, and so do many invalid ones. Disputed
patches are adjudicated to the truth, every other one (so B_full is larger
than B_clear, as after a lead's pass). Nothing here is an LLM's output: the runs are
``offline`` runs named as synthetic, and the report marks them so.
"""

import dataclasses

import numpy as np
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.db import transaction
from django.utils.text import slugify

from judging.models import (
    Adjudication,
    Annotation,
    Campaign,
    Context,
    JudgingRun,
    Label,
    PatchJudgment,
    StrategyResult,
)
from rubrics.models import Bug, Dataset, Patch
from sejury_web.llm import Provider

SOURCES = ("agent-a", "agent-b", "apr-tool", "llm-fixer")
BUG_TYPES = ("wrong_operator", "null_check", "off_by_one", "missing_case", "api_misuse")
TEAM = ["rubric", "s1b", "s2"]
RATER_JUDGE = "quality@1"  # the written judge that rates the dimensions, when there are some
LOW, HIGH = 1, 5  # the dimensions' scale
DIFF = "--- a/src/m{bug}.py\n+++ b/src/m{bug}.py\n@@ -1 +1 @@\n-x = {bug}\n+x = {patch}\n"
# The made-up annotators' names: a prefix no real dataset's annotators have (le2019's are
# ``rater-01``…``rater-37``), so that importing real labels never meets them (issue 28).
RATER_PREFIX = "demo-rater-"


@dataclasses.dataclass(frozen=True)
class Shape:
    """How large the synthetic data is, and how it behaves."""

    bugs: int = 2_000
    patches_per_bug: int = 5
    annotators: int = 20
    labels_per_patch: int = 5
    runs: int = 2
    valid_rate: float = 0.2
    unsure_rate: float = 0.05
    seed: int = 0
    # Dimensions the annotators rate on 1–5 (a campaign that asks for them), and each run's
    # written judge ``quality@1`` rates too, around each patch's hidden quality.
    dimensions: tuple[str, ...] = ()


@transaction.atomic
def synthetic_dataset(name: str, shape: Shape) -> Dataset:
    """A new dataset ``name`` with ``shape``'s bugs, patches, labels, adjudications and
    finished runs (annotators ``demo-rater-NN`` are made as needed, without a role and with an
    unusable password so that nobody logs in as them, or reused)."""
    if shape.labels_per_patch > shape.annotators:
        raise ValueError(
            f"synthetic_dataset: {shape.labels_per_patch} labels a patch need as many"
            f" annotators, not {shape.annotators}"
        )
    rng = np.random.default_rng(shape.seed)
    dataset = Dataset.objects.create(name=name, slug=slugify(name))
    bugs = Bug.objects.bulk_create(
        Bug(
            dataset=dataset,
            key=f"SYN-{b}",
            title=f"Synthetic bug {b}",
            description="A synthetic bug: no code behind it.",
            bug_type=BUG_TYPES[b % len(BUG_TYPES)],
            reference_patch=DIFF.format(bug=b, patch=b + 1),
        )
        for b in range(shape.bugs)
    )
    count = shape.bugs * shape.patches_per_bug
    truth = rng.random(count) < shape.valid_rate
    # Tests: nearly every valid patch passes them, and so do many invalid ones (overfitting,
    # paper 004 §7): what valid@k measures beyond pass@k.
    passes = np.where(truth, rng.random(count) < 0.95, rng.random(count) < 0.6)
    patches = Patch.objects.bulk_create(
        Patch(
            dataset=dataset,
            bug=bug,
            key=f"{bug.key}-p{p}",
            diff=DIFF.format(bug=b, patch=b + p + 2),
            diff_hash=f"syn-{b}-{p}",
            source=SOURCES[(b + p) % len(SOURCES)],
            tests_pass=bool(passes[b * shape.patches_per_bug + p]),
        )
        for b, bug in enumerate(bugs)
        for p in range(shape.patches_per_bug)
    )

    raters = [
        User.objects.get_or_create(
            username=f"{RATER_PREFIX}{a:02d}", defaults={"password": make_password(None)}
        )[0]
        for a in range(shape.annotators)
    ]
    accuracy = rng.uniform(0.8, 0.97, size=len(raters))
    # Each patch's hidden quality on each dimension; a rater's rating is one step off it
    # now and then, and missing one time in ten.
    quality = rng.integers(LOW, HIGH + 1, size=(len(patches), len(shape.dimensions)))
    if shape.dimensions:
        Campaign.objects.create(
            dataset=dataset,
            name="Synthetic ratings",
            overlap=shape.labels_per_patch,
            dimensions=[{"name": d, "low": LOW, "high": HIGH} for d in shape.dimensions],
        )

    def ratings(index: int) -> dict[str, int]:
        off = rng.choice([-1, 0, 0, 0, 1], size=len(shape.dimensions))
        rated = rng.random(len(shape.dimensions)) >= 0.1
        values = np.clip(quality[index] + off, LOW, HIGH)
        return {
            d: int(v) for d, v, kept in zip(shape.dimensions, values, rated, strict=True) if kept
        }

    labels = []
    decisive: list[list[bool]] = []
    for index, patch in enumerate(patches):
        given = rng.choice(len(raters), size=shape.labels_per_patch, replace=False)
        said = []
        for rater in given:
            if rng.random() < shape.unsure_rate:
                label = Label.UNSURE
            else:
                right = rng.random() < accuracy[rater]
                label = Label.VALID if truth[index] == right else Label.INVALID
                said.append(label == Label.VALID)
            labels.append(
                Annotation(
                    patch=patch,
                    annotator=raters[rater],
                    label=label,
                    origin="imported",
                    ratings=ratings(index) if shape.dimensions else {},
                )
            )
        decisive.append(said)
    Annotation.objects.bulk_create(labels, batch_size=5_000)
    disputed = [index for index, said in enumerate(decisive) if len(said) < 2 or len(set(said)) > 1]
    Adjudication.objects.bulk_create(
        Adjudication(
            patch=patches[index],
            label=Label.VALID if truth[index] else Label.INVALID,
            themes=["other"],
            note="Synthetic adjudication.",
        )
        for index in disputed[::2]
    )
    for number in range(shape.runs):
        run = JudgingRun.objects.create(
            dataset=dataset,
            name=f"Synthetic verdicts {number + 1} (not an LLM's)",
            strategies=[*TEAM, RATER_JUDGE] if shape.dimensions else TEAM,
            context=list(Context.values)[number % len(Context.values)],
            provider=Provider.OFFLINE,
            model="synthetic",
            status=JudgingRun.Status.FINISHED,
        )
        right = rng.random(len(patches)) < 0.75 + 0.08 * number
        says_valid = truth == right
        scores = np.clip(
            np.where(says_valid, 70.0, 30.0) + rng.normal(0, 15, len(patches)), 0.0, 100.0
        )
        scores = np.where(says_valid, np.maximum(scores, 50.0), np.minimum(scores, 49.9))
        judgments = PatchJudgment.objects.bulk_create(
            (
                PatchJudgment(
                    run=run,
                    patch=patch,
                    status=PatchJudgment.Status.DONE,
                    verdict=Label.VALID if says_valid[index] else Label.INVALID,
                    score=float(round(scores[index], 1)),
                )
                for index, patch in enumerate(patches)
            ),
            batch_size=5_000,
        )
        if shape.dimensions:
            _judge_ratings(judgments, quality, shape.dimensions, rng)
    return dataset


def _judge_ratings(
    judgments: list[PatchJudgment],
    quality: np.ndarray,
    dimensions: tuple[str, ...],
    rng: np.random.Generator,
) -> None:
    """The written judge's ratings of every judged patch, as its results keep them."""
    off = rng.choice([-2, -1, 0, 0, 1], size=quality.shape)
    values = np.clip(quality + off, LOW, HIGH)
    StrategyResult.objects.bulk_create(
        (
            StrategyResult(
                judgment=judgment,
                strategy=RATER_JUDGE,
                status=StrategyResult.Status.DONE,
                score=float(values[index].mean()),
                prompt_version=f"written:{RATER_JUDGE}",
                reasoning="Synthetic ratings: not an LLM's.",
                answers={
                    "judge": {
                        "dimensions": {
                            d: {"rating": int(v), "reason": "synthetic"}
                            for d, v in zip(dimensions, values[index], strict=True)
                        }
                    }
                },
            )
            for index, judgment in enumerate(judgments)
        ),
        batch_size=5_000,
    )
