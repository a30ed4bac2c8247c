"""Shared by the judging tests: Celery in-process, runs judged at once, a recording ``ask``."""

import json
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

from judging.models import JudgingRun
from judging.runs.services import run_create, run_resume
from rubrics.models import Bug, Rubric
from rubrics.review.drafting import rubric_draft_write
from sejury_web.celery import app as celery_app
from sejury_web.llm.answers import schema_check
from sejury_web.llm.types import LLMRequest, LLMResponse, Provider

# The LLM tests' servers, parametrized over both wire protocols.
from tests.llm.conftest import provided  # noqa: F401
from tests.llm.fake_servers import Reply, ok
from tests.rubrics.factories import BugFactory, PatchFactory, make_diff

Judge = Callable[..., JudgingRun]


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks run inline, and a task that raises fails the test instead of a result."""
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_eager_propagates = False


def _judged_at_once(service: Callable[..., JudgingRun], on_commit: Callable[..., Any]) -> Judge:
    """``service(**kwargs)`` with its on-commit task run, then the run as the tasks left it."""

    def call(**kwargs: Any) -> JudgingRun:
        with on_commit(execute=True):
            run = service(**kwargs)
        run.refresh_from_db()
        return run

    return call


@pytest.fixture
def judge_now(eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]) -> Judge:
    """``run_create(**kwargs)``, judged to the end before it returns."""
    return _judged_at_once(run_create, django_capture_on_commit_callbacks)


@pytest.fixture
def resume_now(eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]) -> Judge:
    """``run_resume(**kwargs)``, judged to the end before it returns."""
    return _judged_at_once(run_resume, django_capture_on_commit_callbacks)


SCORE = {"score": 70, "reasoning": "It returns 2 as the bug asks."}
ANSWERS: dict[str, dict[str, Any]] = {
    "judge.rubric": {
        "thought": "Requirement 1 asks for 2; the patch returns 2.",
        "verdict": "VALID",
        "justification": "It meets requirement 1.",
        "requirements": [{"index": 1, "passed": True, "reason": "returns 2"}],
    },
    "judge.s2.assess": {"score": 40, "reasons": ["It misses the null check.", "It keeps f()."]},
    "judge.s4.analyze": {"properties": ["f() returns 2", "x is never 1"]},
    "judge.s5.tests": {"tests": [{"name": "test_f_returns_2", "description": "f() == 2"}]},
}


class Recorder:
    """An ``ask`` that records each request and answers its purpose with a fixed answer.

    Every answer is checked against the request's schema first: a strategy whose schema
    refuses the answer its prompt asks for fails here, as it would with a real model.
    """

    def __init__(self, answers: dict[str, dict[str, Any]] | None = None) -> None:
        self.answers = {**ANSWERS, **(answers or {})}
        self.requests: list[LLMRequest] = []

    def __call__(self, request: LLMRequest) -> LLMResponse:
        answer = self.answers.get(request.purpose, SCORE)
        schema_check(answer, request.schema)
        self.requests.append(request)
        return LLMResponse(
            answer=answer,
            raw_text=json.dumps(answer),
            provider=Provider.OPENAI,
            model="gpt-4o-mini",
            input_tokens=0,
            output_tokens=0,
            cached_tokens=0,
            latency_s=0.0,
            cost_usd=Decimal(0),
            from_cache=False,
            call_id=len(self.requests),
        )


def bug_with_patches(count: int, **fields: Any) -> Bug:
    """A bug whose reference sets x = 2 and whose patches set x = 3, 4, …: no two alike.

    Runs judge a bug's patches in the order of their keys: ``<bug key>-0``, ``-1``, …
    """
    bug = BugFactory(**fields)
    for number in range(count):
        PatchFactory(bug=bug, key=f"{bug.key}-{number}", diff=make_diff(new=f"x = {number + 3}"))
    return bug


def make_golden(bug: Bug) -> None:
    """Give ``bug`` a golden rubric: its offline draft, confirmed as it is."""
    rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug).pk)
    rubric.golden_revision = rubric.revisions.get(number=0)
    rubric.status = Rubric.Status.GOLDEN
    rubric.save()


def reply(answer: dict[str, Any], **usage: Any) -> Reply:
    """A fake server's reply whose text is ``answer`` as JSON."""
    return ok(json.dumps(answer), **usage)


def scored(score: int, **usage: Any) -> Reply:
    return reply({"score": score, "reasoning": f"Scored {score}."}, **usage)
