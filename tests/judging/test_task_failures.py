"""The tasks' failure hooks: an exception that nothing caught fails the judgment or the draft
with its error, through a service, instead of leaving it pending or drafting for ever."""

from typing import Any

import pytest

from judging import tasks
from judging.models import JudgingRun, PatchJudgment
from judging.runs.execution import TASK_FAILED
from judging.runs.services import run_create
from rubrics import tasks as rubric_tasks
from rubrics.models import Rubric
from tests.rubrics.factories import BugFactory, PatchFactory

pytestmark = pytest.mark.django_db


def explode(*args: Any, **kwargs: Any) -> Any:
    raise ZeroDivisionError("a bug nobody caught")


@pytest.fixture
def run() -> JudgingRun:
    bug = BugFactory()
    PatchFactory(bug=bug, key="P-1")
    PatchFactory(bug=bug, key="P-2")
    PatchFactory(bug=BugFactory(dataset=bug.dataset), key="P-3")
    return run_create(dataset=bug.dataset, strategies="s1b", context="reference", actor=None)


def statuses(run: JudgingRun) -> dict[str, tuple[str, str]]:
    return {
        j.patch.key: (j.status, j.error)
        for j in run.judgments.select_related("patch").order_by("patch__key")
    }


def test_a_patch_judge_task_that_raises_fails_its_judgment_and_finishes_the_run(
    run: JudgingRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks, "patch_judge", explode)
    judgments = list(run.judgments.order_by("patch__key"))
    for judgment in judgments:
        result = tasks.patch_judge_task.apply(args=(judgment.pk, run.generation))
        assert isinstance(result.result, ZeroDivisionError)
    error = TASK_FAILED.format(error="ZeroDivisionError: a bug nobody caught")
    assert statuses(run) == dict.fromkeys(("P-1", "P-2", "P-3"), ("failed", error))
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.FINISHED  # nothing pending: Retry failed is offered


def test_a_bug_prepare_task_that_raises_fails_only_that_bugs_judgments(
    run: JudgingRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tasks, "bug_prepare", explode)
    bug_id = run.judgments.get(patch__key="P-1").patch.bug_id
    tasks.bug_prepare_task.apply(args=(run.pk, bug_id, run.generation))
    state = statuses(run)
    assert [state[key][0] for key in ("P-1", "P-2", "P-3")] == ["failed", "failed", "pending"]
    run.refresh_from_db()
    assert run.status != JudgingRun.Status.FINISHED


def test_a_run_start_task_that_raises_fails_the_runs_pending_judgments(
    run: JudgingRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    PatchJudgment.objects.filter(run=run, patch__key="P-3").update(status=PatchJudgment.Status.DONE)
    monkeypatch.setattr(tasks, "run_start", explode)
    tasks.run_start_task.apply(args=(run.pk, run.generation))
    state = statuses(run)
    assert [state[key][0] for key in ("P-1", "P-2", "P-3")] == ["failed", "failed", "done"]


def test_a_draft_task_that_raises_marks_the_draft_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    rubric = Rubric.objects.create(bug=BugFactory(), status=Rubric.Status.DRAFTING)
    monkeypatch.setattr(rubric_tasks, "rubric_draft_write", explode)
    rubric_tasks.rubric_draft_write_task.apply(args=(rubric.pk,))
    rubric.refresh_from_db()
    assert rubric.status == Rubric.Status.DRAFT_FAILED
    assert "ZeroDivisionError: a bug nobody caught" in rubric.draft_error
    assert rubric.events.get().kind == "draft_failed"
