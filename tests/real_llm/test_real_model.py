"""The product against a real model: llama.cpp's server with Qwen2.5-Coder-1.5B-Instruct on
this machine (``make llm-local``). Skipped, saying so, when no server answers; CI starts one and
sets ``SEJURY_REQUIRE_REAL_LLM=1`` so that they fail instead.

These prove the path, not the judge: the 1.5B model's verdicts are not checked for being
right (``bench/real_judge.py`` measures that), only for being real, parsed, logged and cached.
"""

import time
from pathlib import Path

import pytest

from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.services import run_create, run_resume
from rubrics.bundle.services import bundle_import
from rubrics.models import Dataset, Rubric
from rubrics.review.services import rubric_draft_request
from sejury_web.llm import LLMParseError, LLMRequest, Message, Provider, complete
from sejury_web.llm.answers import schema_check
from sejury_web.llm.config import Target, loopback
from sejury_web.llm.models import LLMCall
from sejury_web.llm.providers import openai_chat
from tests.helpers import DEMO_BUNDLE
from tests.workers import running_worker

from .conftest import RealServer, worker_env

pytestmark = pytest.mark.real_llm

TEAM = ["rubric", "s1b", "s2", "s3", "s4", "s5"]
BUG = "go-cache-1"  # the demo bug with the shortest texts: the calls stay short
PATCHES = ["go-cache-1-p1", "go-cache-1-p2", "go-cache-1-p3"]
DRAFT_TIMEOUT_S = 300
RUN_TIMEOUT_S = 1200

VERDICT_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["VALID", "INVALID"]},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
QUESTION = (
    "Is this patch a correct fix for an off-by-one error in `for i in range(1, n)` that "
    "should visit every index? Patch:\n-for i in range(1, n):\n+for i in range(0, n):"
)


def ask(**kw: object) -> LLMRequest:
    return LLMRequest(
        purpose="test.real_llm",
        messages=(
            Message("system", "You review code patches. Be brief."),
            Message("user", QUESTION),
        ),
        schema=VERDICT_SCHEMA,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.django_db
def test_a_schema_constrained_answer_parses_and_is_logged(real_llm: RealServer) -> None:
    response = complete(ask())

    row = LLMCall.objects.get(pk=response.call_id)
    assert row.status == LLMCall.Status.OK
    assert row.settings["output_mode"] == "json_schema"  # llama.cpp takes the schema
    assert response.answer["verdict"] in {"VALID", "INVALID"}
    assert row.input_tokens > 20  # the server's own count of the prompt
    assert row.output_tokens > 0
    assert row.cost_usd == 0
    assert loopback(row.base_url)


@pytest.mark.django_db
def test_a_fenced_answer_of_the_unconstrained_model_is_read(real_llm: RealServer) -> None:
    """Without the schema (as on a server that takes no response_format), the model wraps
    its JSON in a code fence; the layer reads it, and checks it against the schema."""
    target = Target(Provider.OPENAI, real_llm.model, base_url=real_llm.base_url)
    openai_chat.learned_set(
        target, openai_chat.Learned(mode_index=openai_chat.MODES.index("prompt"))
    )

    response = complete(ask(temperature=0.1))

    row = LLMCall.objects.get(pk=response.call_id)
    assert row.settings["output_mode"] == "prompt"
    schema_check(response.answer, VERDICT_SCHEMA)


@pytest.mark.django_db
def test_an_answer_cut_off_at_the_token_limit_fails_clearly(real_llm: RealServer) -> None:
    with pytest.raises(LLMParseError, match="cut off at the output token limit"):
        complete(ask(max_output_tokens=6))

    row = LLMCall.objects.get(purpose="test.real_llm")
    assert row.status == LLMCall.Status.PARSE_FAILURE
    assert row.answer is None
    assert row.attempts == 1  # not asked again under the same limit
    assert row.output_tokens == 6


def _wait(what: str, done: "callable[[], bool]", timeout: float, log: Path) -> None:  # type: ignore[valid-type]
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"
            pytest.fail(f"{what} not done within {timeout:.0f} s; the worker's log:\n{tail}")
        time.sleep(1)


def _active(run: JudgingRun) -> bool:
    return JudgingRun.objects.get(pk=run.pk).status not in (
        JudgingRun.Status.FINISHED,
        JudgingRun.Status.CANCELLED,
    )


def _judge(dataset: Dataset, log: Path) -> JudgingRun:
    run = run_create(
        actor=None,
        dataset=dataset,
        strategies=TEAM,
        context="draft",
        patches=dataset.patches.filter(key__in=PATCHES),
        provider="openai",
        model=LLMCall.objects.filter(purpose="rubric.draft").values_list("model", flat=True)[0],
    )
    _wait(
        f"run {run.pk}",
        lambda: (
            JudgingRun.objects.get(pk=run.pk).status
            in (JudgingRun.Status.FINISHED, JudgingRun.Status.CANCELLED)
        ),
        RUN_TIMEOUT_S,
        log,
    )
    run.refresh_from_db()
    return run


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_draft_and_judge_demo_patches_through_a_real_worker(
    real_llm: RealServer, tmp_path: Path
) -> None:
    real_server = real_llm  # the worker calls it; this process only creates the run
    with DEMO_BUNDLE.open("rb") as source:
        dataset = bundle_import(source=source, dataset_name="Demo", actor=None).dataset
    bug = dataset.bugs.get(key=BUG)
    log = tmp_path / "worker.log"
    started = time.monotonic()
    with running_worker(log, pool="threads", concurrency=2, env=worker_env(real_server)):
        rubric_draft_request(
            bugs=[bug], variant="templated", actor=None, provider="openai", model=real_server.model
        )
        rubric = Rubric.objects.get(bug=bug, variant="templated")
        _wait(
            "the draft",
            lambda: Rubric.objects.get(pk=rubric.pk).status != Rubric.Status.DRAFTING,
            DRAFT_TIMEOUT_S,
            log,
        )
        rubric.refresh_from_db()
        assert rubric.status == Rubric.Status.IN_REVIEW, rubric.draft_error
        drafted = time.monotonic()

        first = _judge(dataset, log)
        if first.judgments.filter(status=PatchJudgment.Status.FAILED).exists():
            # A small model at temperature 0 sometimes loops inside a JSON string until the
            # output limit: the member fails, saying so (checked below). What a lead does
            # then is *Retry failed*, once.
            run_resume(run=first, actor=None, retry_failed=True)
            _wait(f"run {first.pk} retried", lambda: not _active(first), RUN_TIMEOUT_S, log)
            first.refresh_from_db()
        judged = time.monotonic()
        calls_after_first = LLMCall.objects.count()
        second = _judge(dataset, log)
        finished = time.monotonic()
    print(
        f"real model {real_server.model}: draft {drafted - started:.0f} s, first run "
        f"{judged - drafted:.0f} s ({calls_after_first - 1} calls), second run "
        f"{finished - judged:.1f} s"
    )

    # Every call is real: answered by the server on this machine, parsed against its
    # schema, with the token counts the server gave, and free.
    calls = list(LLMCall.objects.all())
    assert {call.purpose for call in calls} >= {
        "rubric.draft",
        "judge.rubric",
        "judge.s1b",
        "judge.s2",
        "judge.s3",
        "judge.s4",
        "judge.s5",
    }
    # The only failure a real model may cause is an answer cut off at the output limit, which
    # fails clearly: never another error, never a guessed answer.
    failed = [c for c in calls if c.status != LLMCall.Status.OK]
    for call in failed:
        assert call.status == LLMCall.Status.PARSE_FAILURE, (call.purpose, call.error)
        assert "cut off at the output token limit" in call.error, call.error
        assert call.answer is None
    assert len(failed) <= 2, [(c.purpose, c.error[:80]) for c in failed]
    for call in (c for c in calls if c.status == LLMCall.Status.OK):
        assert call.provider == "openai"
        assert call.model == real_server.model
        assert loopback(call.base_url)
        assert call.answer is not None
        schema_check(call.answer, call.schema)
        assert call.input_tokens > 0
        assert call.output_tokens > 0
        assert call.cost_usd == 0
        assert call.settings["output_mode"] == "json_schema"

    assert first.status == JudgingRun.Status.FINISHED
    judgments = list(first.judgments.all())
    assert len(judgments) == 3
    done = [j for j in judgments if j.status == PatchJudgment.Status.DONE]
    assert len(done) >= 2, [j.error for j in judgments]
    assert {j.verdict for j in done} <= {"VALID", "INVALID"}
    results = StrategyResult.objects.filter(judgment__run=first, status="done")
    assert sorted({r.strategy for r in results}) == sorted(TEAM)  # every strategy answered
    assert results.count() >= 3 * len(TEAM) - 2
    assert all(r.call_ids for r in results)

    # The second pass asks the model nothing it has answered: the log answers every call
    # that succeeded; only a member that failed (cut off) is asked again.
    assert second.status == JudgingRun.Status.FINISHED
    answered = {(r.judgment.patch_id, r.strategy) for r in results.select_related("judgment")}
    again = StrategyResult.objects.filter(judgment__run=second).select_related("judgment")
    replayed = [r for r in again if (r.judgment.patch_id, r.strategy) in answered]
    assert len(replayed) == len(answered)
    assert all(r.call_ids == r.cached_call_ids and r.provider_calls == 0 for r in replayed)
    if len(answered) == 3 * len(TEAM):  # nothing left failed: the model is not asked at all
        assert LLMCall.objects.count() == calls_after_first
    # A patch all of whose members the cache answered gets the same verdict again.
    replayed_patches = {
        j.patch_id for j in done if all((j.patch_id, name) in answered for name in TEAM)
    }
    first_verdicts = {j.patch_id: j.verdict for j in done if j.patch_id in replayed_patches}
    second_verdicts = dict(
        second.judgments.filter(patch_id__in=replayed_patches).values_list("patch_id", "verdict")
    )
    assert second_verdicts == first_verdicts
