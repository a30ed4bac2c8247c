"""Shared by the judging tests: runs judged at once (``eager_tasks`` is in tests/conftest.py).

The LLM servers' fixtures (``provided``, ``openai_server``) are in tests/conftest.py; plain
helpers are in ``tests.judging.factories`` and ``tests.judging.helpers``.
"""

from collections.abc import Callable
from typing import Any

import pytest

from judging.models import JudgingRun
from judging.runs.services import run_create, run_resume
from tests.judging.helpers import Judge


def _judged_at_once(service: Callable[..., JudgingRun], on_commit: Callable[..., Any]) -> Judge:
    """``service(**kwargs)`` with its on-commit task run, then the run as the tasks left it."""

    def call(**kwargs: Any) -> JudgingRun:
        with on_commit(execute=True):
            run = service(**{"actor": None, **kwargs})
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
