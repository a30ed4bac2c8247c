"""A run is queued bug by bug, in import order, and one patch of a bug is judged before its
siblings fan out, so that they meet the provider's cache of the prompt prefix they share."""

from typing import Any

import pytest

from judging import tasks
from judging.models import JudgingRun, PatchJudgment
from judging.runs import execution
from judging.runs.execution import TASK_FAILED, bug_prepare, run_start
from judging.runs.services import run_create
from sejury_web.llm.models import LLMCall
from tests.judging.factories import bug_with_patches
from tests.rubrics.factories import BugFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db


def interleaved() -> tuple[JudgingRun, list[int]]:
    """Two bugs whose patches were imported interleaved: A-0, B-0, A-1, B-1, A-2."""
    first = BugFactory(key="A")
    second = BugFactory(key="B", dataset=first.dataset)
    for number, bug in enumerate([first, second, first, second, first]):
        PatchFactory(bug=bug, key=f"{bug.key}-{number}", diff=make_diff(new=f"x = {number + 3}"))
    run = run_create(actor=None, dataset=first.dataset, strategies="s1b,s3", context="reference")
    return run, [first.pk, second.pk]


def judgment_keys(run: JudgingRun, status: str) -> list[str]:
    judgments = run.judgments.filter(status=status).select_related("patch")
    return sorted(judgment.patch.key for judgment in judgments)


@pytest.mark.parametrize("team", ["s1b,s3", "s1b,s4"])
def test_a_run_is_queued_one_task_per_bug_in_import_order_with_or_without_bug_steps(
    team: str,
) -> None:
    second = BugFactory(key="Z")
    first = BugFactory(key="Y", dataset=second.dataset)  # made after Z: a higher id
    for number, bug in enumerate([second, first, second]):
        PatchFactory(bug=bug, key=f"{bug.key}-{number}", diff=make_diff(new=f"x = {number + 3}"))
    run = run_create(actor=None, dataset=first.dataset, strategies=team, context="reference")

    assert run_start(run_id=run.pk, generation=run.generation) == [
        ("bug", second.pk),  # its patch was imported first
        ("bug", first.pk),
    ]


def test_a_bug_s_first_patch_is_judged_before_its_siblings_are_handed_back() -> None:
    run, (bug_a, _bug_b) = interleaved()
    run_start(run_id=run.pk, generation=run.generation)

    siblings = bug_prepare(run_id=run.pk, bug_id=bug_a, generation=run.generation)

    assert judgment_keys(run, PatchJudgment.Status.DONE) == ["A-0"]
    pending = PatchJudgment.objects.filter(pk__in=siblings).select_related("patch")
    assert [judgment.patch.key for judgment in pending.order_by("pk")] == ["A-2", "A-4"]
    assert all(judgment.status == PatchJudgment.Status.PENDING for judgment in pending)
    calls = LLMCall.objects.order_by("pk")
    assert [call.purpose for call in calls] == ["judge.s1b", "judge.s3"]  # A-0's alone
    assert {call.inputs["candidate_diff"] for call in calls} == {make_diff(new="x = 3")}


def test_the_bug_task_judges_the_first_patch_then_queues_the_siblings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, (bug_a, _bug_b) = interleaved()
    run_start(run_id=run.pk, generation=run.generation)
    queued: list[tuple[Any, ...]] = []
    monkeypatch.setattr(tasks.patch_judge_task, "delay", lambda *args: queued.append(args))

    count = tasks.bug_prepare_task.apply(args=(run.pk, bug_a, run.generation)).result

    keys = dict(run.judgments.values_list("pk", "patch__key"))
    assert count == 2
    assert [(keys[pk], generation) for pk, generation in queued] == [
        ("A-2", run.generation),
        ("A-4", run.generation),
    ]
    assert judgment_keys(run, PatchJudgment.Status.DONE) == ["A-0"]


def test_a_redelivered_bug_task_judges_only_what_is_still_pending() -> None:
    bug = bug_with_patches(2)
    run = run_create(actor=None, dataset=bug.dataset, strategies="s1b", context="reference")
    first, second = run.judgments.order_by("pk")

    assert bug_prepare(run_id=run.pk, bug_id=bug.pk, generation=run.generation) == [second.pk]
    # The worker died before the message was acknowledged: it is delivered again.
    assert bug_prepare(run_id=run.pk, bug_id=bug.pk, generation=run.generation) == []

    assert LLMCall.objects.count() == 2  # once per patch: the first was not judged again
    assert judgment_keys(run, PatchJudgment.Status.DONE) == sorted(
        [first.patch.key, second.patch.key]
    )
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.FINISHED


def test_what_the_first_patch_raises_fails_that_patch_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run, (bug_a, _bug_b) = interleaved()

    def explode(judgment_id: int, generation: int) -> str:
        raise ZeroDivisionError("a bug nobody caught")

    monkeypatch.setattr(execution, "patch_judge", explode)

    siblings = bug_prepare(run_id=run.pk, bug_id=bug_a, generation=run.generation)

    assert len(siblings) == 2
    failed = run.judgments.get(status=PatchJudgment.Status.FAILED)
    assert failed.patch.key == "A-0"
    assert failed.error == TASK_FAILED.format(error="ZeroDivisionError: a bug nobody caught")
    assert judgment_keys(run, PatchJudgment.Status.PENDING) == ["A-2", "A-4", "B-1", "B-3"]
