"""Judging patches for a run: members and bug steps, the team's verdict, failures, and the
checks that keep a cancelled or superseded run from calling the model again."""

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape
from pytest_django.fixtures import Settings

from judging.models import BugStep, JudgingRun, PatchJudgment, StrategyResult
from judging.runs.execution import Asker, RunStopped, bug_prepare, patch_judge, run_start
from judging.runs.selectors import run_progress
from judging.runs.services import run_cancel, run_create, run_resume
from judging.strategies import get_strategy
from judging.strategies.ensemble import combine
from judging.strategies.prompts import SCORE_SCHEMA
from sejury_web.llm import OFFLINE_MARKER, LLMRequest, Message
from sejury_web.llm.answers import correction
from sejury_web.llm.models import LLMCall
from tests.judging.factories import bug_with_patches, make_golden, unchecked_run
from tests.judging.helpers import ANSWERS, Judge, reply, scored
from tests.rubrics.factories import DatasetFactory, PatchFactory, make_diff
from tests.sejury_web.llm.fake_servers import (
    OpenAIServer,
    Reply,
    error,
    ok,
    request_schema,
    schema_answer,
)
from tests.sejury_web.llm.helpers import Provided, point_at

pytestmark = pytest.mark.django_db

TEAM = ["rubric", "s1b", "s2", "s3", "s4", "s5"]
PURPOSES = {
    "rubric": ["judge.rubric"],
    "s1b": ["judge.s1b"],
    "s2": ["judge.s2.assess", "judge.s2"],
    "s3": ["judge.s3"],
    "s4": ["judge.s4"],
    "s5": ["judge.s5"],
}
PROPERTIES = reply(ANSWERS["judge.s4.analyze"])
TESTS = reply(ANSWERS["judge.s5.tests"])
CORRECTED = correction("", {}).split(":")[0]  # how a correction turn starts


def verdict(label: str) -> dict[str, object]:
    return {**ANSWERS["judge.rubric"], "verdict": label, "justification": f"It is {label}."}


def members(judgment: PatchJudgment) -> dict[str, StrategyResult]:
    return {result.strategy: result for result in judgment.results.all()}


def test_a_whole_run_scores_each_patch_as_the_ensemble_of_its_members(judge_now: Judge) -> None:
    bug = bug_with_patches(2)
    PatchFactory(bug=bug, diff=bug.reference_patch)
    team = ["rubric", "s1a", "s1b", "s2", "s3", "s4", "s5", "bleu", "chrf", "edit"]

    run = judge_now(
        dataset=bug.dataset,
        strategies=team,
        context="reference",
        scale_lo=1,
        scale_hi=5,
        threshold=3,
    )

    assert run.status == JudgingRun.Status.FINISHED
    assert run.started_at is not None
    assert run.finished_at is not None
    assert run.started_at <= run.finished_at
    for judgment in run.judgments.all():
        results = members(judgment)
        assert list(results) == team  # written once each, in the team's order
        assert {r.status for r in results.values()} == {StrategyResult.Status.DONE}
        expected = combine([results[name].score for name in team], lo=1, hi=5, threshold=3)  # type: ignore[misc]
        assert judgment.status == PatchJudgment.Status.DONE
        assert (judgment.score, judgment.verdict, judgment.spread) == (
            expected.score,
            expected.verdict,
            expected.spread,
        )
        assert [name for name, r in results.items() if r.is_offline] == team[:7]
        assert all(OFFLINE_MARKER in results[name].reasoning for name in team[:7])
    # The reference itself: mean (100 + 50 + 100 · 3 + 100 · 2 + 100 · 3) / 10 = 95 → 4.8
    reference = run.judgments.get(patch__diff=bug.reference_patch)
    assert (reference.score, reference.verdict) == (pytest.approx(4.8), "VALID")
    # Step 1 of s4 and s5 once per bug, for all three patches.
    assert LLMCall.objects.filter(purpose="judge.s4.analyze").count() == 1
    assert LLMCall.objects.filter(purpose="judge.s5.tests").count() == 1
    assert BugStep.objects.filter(run=run).count() == 2
    assert run_progress(run).done == 3


def test_a_team_asks_each_bug_step_once_and_each_member_per_patch(
    provided: Provided, judge_now: Judge
) -> None:
    bug = bug_with_patches(2)
    provided.server.script(
        PROPERTIES,
        TESTS,
        *[reply(verdict("VALID")), scored(80), reply({"score": 60, "reasons": ["r"]})],
        *[scored(70), scored(90), scored(40), scored(50)],
        *[reply(verdict("INVALID")), scored(10), reply({"score": 20, "reasons": ["r"]})],
        *[scored(30), scored(100), scored(0), scored(5)],
    )

    run = judge_now(dataset=bug.dataset, strategies=",".join(TEAM), context="reference")

    # 2 bug steps, then per patch rubric 1 + s1b 1 + s2 2 + s3 1 + s4 1 + s5 1: 2 + 2 · 7
    assert provided.server.request_count == 16
    assert (run.status, run.provider, run.model) == ("finished", provided.name, provided.model)
    expected = [[100, 80, 70, 90, 40, 50], [0, 10, 30, 100, 0, 5]]
    judgments = list(run.judgments.order_by("patch__key"))
    for judgment, scores in zip(judgments, expected, strict=True):
        results = members(judgment)
        assert [results[name].score for name in TEAM] == scores
        assert judgment.score == combine(scores).score
        for name, result in results.items():
            assert result.prompt_version == get_strategy(name).prompt_version
            calls = [LLMCall.objects.get(pk=pk) for pk in result.call_ids]
            assert [call.purpose for call in calls] == PURPOSES[name]
            assert result.provider_calls == len(calls)
            assert not result.is_offline
    assert [r.verdict for r in StrategyResult.objects.filter(strategy="rubric")] == [
        "VALID",
        "INVALID",
    ]
    steps = {step.strategy: step for step in BugStep.objects.filter(run=run)}
    assert steps["s4"].answer == ANSWERS["judge.s4.analyze"]
    assert LLMCall.objects.get(pk=steps["s5"].call_id).purpose == "judge.s5.tests"

    again = judge_now(dataset=bug.dataset, strategies=",".join(TEAM), context="reference")

    assert provided.server.request_count == 16  # every answer came from the cache
    assert [j.score for j in again.judgments.order_by("patch__key")] == [j.score for j in judgments]
    assert run_progress(again).provider_calls == 0


def test_a_member_whose_provider_fails_fails_alone_and_is_retried_alone(
    provided: Provided, settings: Settings, judge_now: Judge, resume_now: Judge
) -> None:
    settings.SEJURY_LLM = {**settings.SEJURY_LLM, "MAX_ATTEMPTS": 2}
    bug = bug_with_patches(1)
    provided.server.script(scored(80), error(500, "backend exploded"), error(500, "again"))

    run = judge_now(dataset=bug.dataset, strategies="s1b,s3", context="reference")

    assert provided.server.request_count == 3
    assert run.status == JudgingRun.Status.FINISHED
    judgment = run.judgments.get()
    kept, failed = judgment.results.get(strategy="s1b"), judgment.results.get(strategy="s3")
    assert (kept.status, kept.score) == (StrategyResult.Status.DONE, 80.0)
    assert (failed.status, failed.score) == (StrategyResult.Status.FAILED, None)
    assert failed.error.startswith("gave up after 2 attempts: ")
    assert "500" in failed.error
    assert "again" in failed.error
    [call_id] = failed.call_ids
    assert LLMCall.objects.get(pk=call_id).status == LLMCall.Status.ERROR
    assert failed.provider_calls == 1  # a failed call was still paid for
    assert judgment.status == PatchJudgment.Status.FAILED
    assert judgment.error == f"1 of 2 members failed: s3: {failed.error}"
    assert (judgment.score, judgment.verdict) == (None, "")

    provided.server.script(scored(60))
    run = resume_now(run=run, retry_failed=True)

    assert provided.server.request_count == 4  # s3 only
    assert judgment.results.get(strategy="s1b").pk == kept.pk
    judgment.refresh_from_db()
    assert (judgment.status, judgment.score, judgment.error) == ("done", 70.0, "")
    assert (run.status, run.generation) == (JudgingRun.Status.FINISHED, 1)


@pytest.mark.parametrize(
    ("out_of_range", "said"),
    [(150, "150 is greater than the maximum of 100"), (-7, "-7 is less than the minimum of 0")],
)
def test_a_score_outside_0_100_is_asked_again_then_fails_its_member_never_clamped(
    openai_server: OpenAIServer,
    judge_now: Judge,
    lead_client: Client,
    out_of_range: int,
    said: str,
) -> None:
    bug = bug_with_patches(1)
    # s1b answers out of range twice (the answer, then its correction); s3 answers 80.
    openai_server.script(scored(out_of_range), scored(out_of_range), scored(80))

    run = judge_now(dataset=bug.dataset, strategies="s1b,s3", context="reference")

    assert openai_server.request_count == 3
    asked_again = openai_server.requests[1].body["messages"]
    assert asked_again[-2] == {"role": "assistant", "content": f'{{"score": {out_of_range}, '
                               f'"reasoning": "Scored {out_of_range}."}}'}  # fmt: skip
    assert f"at score: {said}" in asked_again[-1]["content"]
    judgment = run.judgments.get()
    s1b, s3 = judgment.results.get(strategy="s1b"), judgment.results.get(strategy="s3")
    assert (s1b.status, s1b.score, s1b.answers) == (StrategyResult.Status.FAILED, None, {})
    assert s1b.error == (
        "the model's answer did not match the schema twice: the answer does not match the "
        f"schema at score: {said}"
    )
    [call] = LLMCall.objects.filter(pk__in=s1b.call_ids)
    assert (call.status, call.attempts, call.answer) == (LLMCall.Status.PARSE_FAILURE, 2, None)
    assert (s3.status, s3.score) == (StrategyResult.Status.DONE, 80.0)
    # Nothing stands for the score the model did not give: no 100, no 0, no team score.
    assert not StrategyResult.objects.filter(score__in=[0, 100]).exists()
    assert (judgment.status, judgment.score, judgment.verdict) == ("failed", None, "")
    assert judgment.error == f"1 of 2 members failed: s1b: {s1b.error}"
    assert run.status == JudgingRun.Status.FINISHED

    reason = escape(s1b.error)
    assert reason in lead_client.get(judgment.get_absolute_url()).content.decode()
    assert reason in lead_client.get(run.get_absolute_url()).content.decode()


def test_a_failed_bug_step_fails_its_member_on_every_patch_until_retried(
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    judge_now: Judge,
    resume_now: Judge,
) -> None:
    bug = bug_with_patches(2)
    point_at(settings, tmp_path, MAX_ATTEMPTS=2)
    openai_server.script(error(503), error(503), scored(80), scored(20))
    run = judge_now(dataset=bug.dataset, strategies="s1b,s4", context="reference")

    assert openai_server.request_count == 4  # step 1 twice (one call, two attempts), s1b twice
    step = BugStep.objects.get(run=run)
    assert (step.answer, step.provider_calls) == (None, 1)
    assert step.error.startswith("gave up after 2 attempts: ")
    for judgment in run.judgments.all():
        s4 = judgment.results.get(strategy="s4")
        assert s4.error == f"step 1 of s4 failed for bug {bug.key}: {step.error}"
        assert (s4.call_ids, s4.provider_calls) == ([], 0)  # the step holds its cost
        assert judgment.status == PatchJudgment.Status.FAILED

    openai_server.script(PROPERTIES, scored(40), scored(60))
    run = resume_now(run=run, retry_failed=True)

    assert openai_server.request_count == 7
    assert BugStep.objects.get(run=run).answer == ANSWERS["judge.s4.analyze"]
    # (80 + 40) / 2 and (20 + 60) / 2
    assert [j.score for j in run.judgments.order_by("patch__key")] == [60.0, 40.0]
    assert run.status == JudgingRun.Status.FINISHED


def test_a_stored_member_is_not_judged_again_and_the_run_picks_the_model(
    settings: Settings, tmp_path: Path
) -> None:
    bug = bug_with_patches(1)
    with OpenAIServer() as server:
        point_at(settings, tmp_path, OPENAI_BASE_URL=server.base_url)  # the default: offline
        run = run_create(
            actor=None,
            dataset=bug.dataset,
            strategies="s1b,s3",
            context="reference",
            provider="openai",
            model="gpt-4o",
        )
        judgment = run.judgments.get()
        StrategyResult.objects.create(
            judgment=judgment, strategy="s1b", status="done", score=77, prompt_version="s1-v1"
        )
        server.script(scored(33))

        assert patch_judge(judgment.pk, run.generation) == PatchJudgment.Status.DONE

        [request] = server.requests
    assert request.body["model"] == "gpt-4o"
    assert "semantically equivalent" in json.dumps(request.body)  # s3's prompt
    judgment.refresh_from_db()
    assert judgment.score == 55.0  # (77 + 33) / 2
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.FINISHED


def test_without_a_golden_rubric_only_the_rubric_member_fails(
    eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    bug = bug_with_patches(1)

    # No door starts a run whose patch lacks its golden rubric: one made without the check.
    with django_capture_on_commit_callbacks(execute=True):
        run = unchecked_run(dataset=bug.dataset, strategies="rubric,s1b", context="golden")
    run.refresh_from_db()

    judgment = run.judgments.get(patch__bug=bug)
    results = members(judgment)
    missing = f"bug {bug.key} has no golden rubric yet"
    assert (results["rubric"].status, results["rubric"].error) == ("failed", missing)
    assert results["rubric"].call_ids == []
    assert results["s1b"].status == StrategyResult.Status.DONE
    assert results["s1b"].score is not None
    assert judgment.status == PatchJudgment.Status.FAILED
    assert judgment.error == f"1 of 2 members failed: rubric: {missing}"
    assert run.status == JudgingRun.Status.FINISHED


def test_a_cancelled_run_makes_no_further_call() -> None:
    bug = bug_with_patches(1)
    run = run_create(actor=None, dataset=bug.dataset, strategies="s1b,s2", context="reference")
    judgment = run.judgments.get()

    run_cancel(actor=None, run=run)

    assert patch_judge(judgment.pk, run.generation) == PatchJudgment.Status.PENDING
    assert bug_prepare(run_id=run.pk, bug_id=bug.pk, generation=run.generation) == []
    assert run_start(run_id=run.pk, generation=run.generation) == []
    assert not StrategyResult.objects.exists()
    assert not LLMCall.objects.exists()
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.CANCELLED


def test_the_runs_ask_checks_the_run_before_every_call() -> None:
    bug = bug_with_patches(1)
    run = run_create(actor=None, dataset=bug.dataset, strategies="s1a", context="none")
    ask = Asker(run, run.generation)
    request = LLMRequest(
        purpose="judge.s1a",
        messages=(Message("user", "Is it correct?"),),
        schema=SCORE_SCHEMA,
        inputs={"bug": {}, "candidate_diff": make_diff()},
    )

    answered = ask(request)
    run_cancel(actor=None, run=run)

    with pytest.raises(RunStopped):
        ask(request)
    assert ask.responses == [answered]
    assert LLMCall.objects.count() == 1


def test_a_task_of_an_older_generation_returns_without_judging() -> None:
    bug = bug_with_patches(1)
    run = run_create(actor=None, dataset=bug.dataset, strategies="s1b,s4", context="reference")
    judgment = run.judgments.get()

    run = run_resume(actor=None, run=run)

    assert run.generation == 1
    assert patch_judge(judgment.pk, 0) == PatchJudgment.Status.PENDING
    assert bug_prepare(run_id=run.pk, bug_id=bug.pk, generation=0) == []
    assert run_start(run_id=run.pk, generation=0) == []
    assert not LLMCall.objects.exists()
    assert run_start(run_id=run.pk, generation=1) == [("bug", bug.pk)]
    assert bug_prepare(run_id=run.pk, bug_id=bug.pk, generation=1) == []  # judged its patch
    assert patch_judge(judgment.pk, 1) == PatchJudgment.Status.DONE


def _faulty(body: dict[str, Any], counter: Iterator[int]) -> Reply:
    """A server whose answers fit their schema but for every fifth score (150 or -7) and
    rubric check (one requirement past the rubric's last), and every other answer to a
    correction."""
    schema = request_schema(body)
    assert schema is not None
    answer = schema_answer(schema)
    n = next(counter)
    corrected = any(CORRECTED in str(m.get("content")) for m in body["messages"])
    if n % 5 == 0 or (corrected and n % 2 == 0):
        if "score" in answer:
            answer["score"] = 150 if n % 2 else -7
        elif answer.get("requirements"):
            answer["requirements"][0]["index"] += 1
    return ok(json.dumps(answer))


def test_a_run_against_a_faulty_server_stores_no_score_the_model_did_not_give(
    openai_server: OpenAIServer, judge_now: Judge
) -> None:
    team = ["rubric", "s1b", "s2", "s3", "s4", "s5", "roles"]
    dataset = DatasetFactory()
    for n in range(2):
        make_golden(bug_with_patches(3, key=f"B-{n}", dataset=dataset))
    counter = itertools.count(1)
    openai_server.default = lambda body: _faulty(body, counter)

    run = judge_now(dataset=dataset, strategies=team, context="golden")

    refused = [
        entry["error"]
        for call in LLMCall.objects.all()
        for entry in call.attempt_log
        if "error" in entry
    ]
    results = list(StrategyResult.objects.filter(judgment__run=run))
    done = [r for r in results if r.status == StrategyResult.Status.DONE]
    failed = [r for r in results if r.status == StrategyResult.Status.FAILED]
    made_up = [r for r in done if not _as_answered(r)]
    print(
        f"{len(refused)} answers outside their schema; "
        f"{len(refused) - len(failed)} fitted when asked again; "
        f"{len(failed)} members failed with the reason; "
        f"{len(made_up)} of {len(results)} member scores made of an answer outside it"
    )
    assert made_up == []
    assert refused
    assert all("maximum of" in error or "minimum of" in error for error in refused)
    assert failed
    for result in failed:
        assert result.score is None
        assert result.error.startswith("the model's answer did not match the schema twice: ")
    parse_failures = LLMCall.objects.filter(status=LLMCall.Status.PARSE_FAILURE)
    assert parse_failures.count() == len(failed)
    assert len(done) + len(failed) == len(team) * 6


def _as_answered(result: StrategyResult) -> bool:
    """Whether a member's score (or verdict) is what its model answered, every answer of it
    within its schema's bounds."""
    answers = result.answers
    scores = [a["score"] for a in answers.values() if isinstance(a, dict) and "score" in a]
    if not all(0 <= score <= 100 for score in scores):
        return False
    if result.strategy == "rubric":
        [judge] = answers.values()
        checks = [item["index"] for item in judge["requirements"]]
        count = len(result.rubric_revision.structure["requirements"])
        scored_as = 100.0 if judge["verdict"] == "VALID" else 0.0
        return result.score == scored_as and all(1 <= i <= count for i in checks)
    if result.strategy == "roles":
        return result.score == sum(scores) / len(scores)
    return result.score == float(scores[-1])  # s2: its rethink, the last turn
