"""Creating, cancelling and resuming judging runs: what is refused, and what is queued."""

import re
from collections.abc import Callable
from typing import Any

import pytest

from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.services import (
    FOREIGN_PATCHES,
    NO_PATCHES,
    NOT_ACTIVE,
    NOTHING_TO_RESUME,
    REVISION_CONTEXT,
    RunError,
    run_cancel,
    run_create,
    run_resume,
    runs_resume_unfinished,
)
from judging.strategies.ensemble import BAD_SCALE, BAD_THRESHOLD
from judging.strategies.registry import REPEATED_STRATEGY
from rubrics.models import Bug, Rubric, RubricRevision
from sejury_web.llm.config import MISSING_KEY
from tests.judging.factories import bug_with_patches
from tests.rubrics.factories import DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def bug() -> Bug:
    return bug_with_patches(2)


def create(bug: Bug, **changes: Any) -> JudgingRun:
    arguments: dict[str, Any] = {
        "dataset": bug.dataset,
        "strategies": "s1b,s3",
        "context": "reference",
        "actor": None,
        **changes,
    }
    return run_create(**arguments)


def pinned_revision(bug: Bug) -> RubricRevision:
    rubric = Rubric.objects.create(bug=bug)
    return RubricRevision.objects.create(rubric=rubric, number=0, text="r", author="lead")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"strategies": "s1b,s9"}, "unknown strategy 's9'; the strategies are "),
        ({"strategies": "s1b, s3,s1b"}, REPEATED_STRATEGY.format(name="s1b")),
        ({"strategies": " , "}, "a team needs at least one strategy"),
        ({"context": "rubric"}, "unknown context 'rubric'; the contexts are golden, draft, "),
        ({"context": "revision"}, REVISION_CONTEXT),
        ({"patches": []}, NO_PATCHES),
        ({"scale_lo": 5, "scale_hi": 1, "threshold": 3}, BAD_SCALE.format(lo=5, hi=1)),
        ({"scale_lo": 1, "scale_hi": 5}, BAD_THRESHOLD.format(threshold=50.0, lo=1, hi=5)),
        (
            {"provider": "openai"},
            MISSING_KEY.format(provider="openai", variable="OPENAI_API_KEY or OPENAI_BASE_URL"),
        ),
        ({"provider": "gemini"}, MISSING_KEY.format(provider="gemini", variable="GEMINI_API_KEY")),
        ({"provider": "claude"}, "'claude' is not a valid Provider"),
    ],
)
def test_run_create_refuses_what_it_cannot_judge(
    bug: Bug, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(RunError, match=re.escape(message)):
        create(bug, **changes)

    assert not JudgingRun.objects.exists()


def test_only_the_revision_context_takes_a_revision(bug: Bug) -> None:
    with pytest.raises(RunError, match=re.escape(REVISION_CONTEXT)):
        create(bug, context="golden", rubric_revision=pinned_revision(bug))


def test_patches_of_another_dataset_are_refused(bug: Bug) -> None:
    foreign = PatchFactory()

    with pytest.raises(RunError, match=re.escape(FOREIGN_PATCHES.format(dataset=bug.dataset))):
        create(bug, patches=[*bug.patches.all(), foreign])

    assert not JudgingRun.objects.exists()


def test_a_dataset_without_patches_has_nothing_to_judge() -> None:
    with pytest.raises(RunError, match=NO_PATCHES):
        run_create(actor=None, dataset=DatasetFactory(), strategies="s1b", context="reference")


def test_a_run_is_queued_over_the_chosen_patches_once_committed(
    bug: Bug, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    chosen = bug.patches.order_by("key").first()
    assert chosen is not None

    with django_capture_on_commit_callbacks() as callbacks:
        # A generator, as any iterable of patches will do.
        run = create(bug, strategies=["s3", "rubric"], patches=(p for p in [chosen, chosen]))

    assert len(callbacks) == 1  # run_start_task, after the commit
    assert (run.status, run.generation) == (JudgingRun.Status.QUEUED, 0)
    assert (run.strategies, run.provider, run.model) == (
        ["s3", "rubric"],
        "offline",
        "heuristic-v1",
    )
    assert [j.patch for j in run.judgments.all()] == [chosen]
    assert run.judgments.get().status == PatchJudgment.Status.PENDING


def test_a_run_over_the_whole_dataset_and_a_pinned_revision(bug: Bug) -> None:
    revision = pinned_revision(bug)

    run = create(bug, strategies="rubric", context="revision", rubric_revision=revision)

    assert run.rubric_revision == revision
    assert run.judgments.count() == 2


def test_only_an_active_run_can_be_cancelled(bug: Bug) -> None:
    run = run_cancel(actor=None, run=create(bug))

    assert run.status == JudgingRun.Status.CANCELLED
    assert run.finished_at is not None
    with pytest.raises(RunError, match=NOT_ACTIVE.format(run=run.pk, status="cancelled")):
        run_cancel(actor=None, run=run)


def test_resuming_bumps_the_generation_and_queues_the_run_again(
    bug: Bug, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    run = run_cancel(actor=None, run=create(bug))

    with django_capture_on_commit_callbacks() as callbacks:
        run = run_resume(actor=None, run=run)

    assert len(callbacks) == 1
    assert (run.status, run.generation, run.finished_at) == (JudgingRun.Status.QUEUED, 1, None)


def test_a_run_without_pending_patches_has_nothing_to_resume(bug: Bug) -> None:
    run = create(bug)
    judgment = run.judgments.first()
    assert judgment is not None
    run.judgments.update(status=PatchJudgment.Status.DONE)
    PatchJudgment.objects.filter(pk=judgment.pk).update(status=PatchJudgment.Status.FAILED)

    with pytest.raises(RunError, match=NOTHING_TO_RESUME.format(run=run.pk, failed="")):
        run_resume(actor=None, run=run)
    # Retrying turns the failed patch pending again, and only its failed members are deleted.
    failed = StrategyResult.objects.create(
        judgment=judgment, strategy="s3", status="failed", prompt_version="s3-v1", error="boom"
    )
    kept = StrategyResult.objects.create(
        judgment=judgment, strategy="s1b", status="done", score=80, prompt_version="s1-v1"
    )
    run = run_resume(actor=None, run=run, retry_failed=True)
    assert run.generation == 1
    judgment.refresh_from_db()
    assert (judgment.status, judgment.error) == (PatchJudgment.Status.PENDING, "")
    assert list(judgment.results.all()) == [kept]
    assert not StrategyResult.objects.filter(pk=failed.pk).exists()


def test_a_starting_worker_resumes_every_unfinished_run(
    eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    queued, running, finished, cancelled, drained = (create(bug_with_patches(1)) for _ in range(5))
    JudgingRun.objects.filter(pk__in=[running.pk, drained.pk]).update(status="running")
    JudgingRun.objects.filter(pk=finished.pk).update(status="finished")
    run_cancel(actor=None, run=cancelled)
    drained.judgments.update(status=PatchJudgment.Status.DONE)  # a worker died after the last

    with django_capture_on_commit_callbacks(execute=True):
        resumed = runs_resume_unfinished()

    assert sorted(resumed) == sorted([queued.pk, running.pk])
    state = {run.pk: (run.status, run.generation) for run in JudgingRun.objects.all()}
    assert state == {
        queued.pk: ("finished", 1),
        running.pk: ("finished", 1),
        finished.pk: ("finished", 0),
        cancelled.pk: ("cancelled", 0),
        drained.pk: ("finished", 0),
    }
    assert PatchJudgment.objects.filter(run__in=[queued, running], status="done").count() == 2
    assert not PatchJudgment.objects.filter(run__in=[finished, cancelled], status="done").exists()
