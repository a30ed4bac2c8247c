"""A run with a written judge on the pages and exports every run has: the run page, the
verdict page (the member's title and version, each dimension's rating and reason in its
answer), the verdicts export (the member's score under its version)."""

import json
from typing import Any

import pytest
from django.test import Client

from judging.judges.services import judge_define
from judging.models import PatchJudgment
from judging.runs.export import verdict_jsonl
from tests.judging.helpers import Judge
from tests.judging.judges.test_runs import NON_FUNCTIONAL
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db


def test_a_written_judge_s_member_shows_on_the_run_and_verdict_pages_and_exports(
    judge_now: Judge, lead_client: Client
) -> None:
    judge_define(data=NON_FUNCTIONAL, actor=None)
    dataset = DatasetFactory()
    bug = BugFactory(dataset=dataset, reference_patch=make_diff(new="x = 2"))
    PatchFactory(bug=bug, diff=make_diff(new="x = 3"))
    run = judge_now(
        dataset=dataset, strategies="s1b,nonfunctional@1", context="reference",
        provider="offline", model="heuristic",
    )  # fmt: skip
    judgment = PatchJudgment.objects.get(run=run)
    assert judgment.status == PatchJudgment.Status.DONE, judgment.error

    page = lead_client.get(run.get_absolute_url())
    assert page.status_code == 200
    assert "nonfunctional@1" in page.content.decode()
    verdict = lead_client.get(judgment.get_absolute_url())
    text = verdict.content.decode()
    assert verdict.status_code == 200
    assert "Non-functional quality (nonfunctional@1)" in text
    assert "maintainability" in text  # the answer, with each dimension's rating and reason
    assert 'id="dimensions-nonfunctional@1"' in text  # a row per dimension, rating and reason
    assert '<tr data-dimension="security"><th scope="row">security</th>' in text
    [record] = [json.loads(line) for line in verdict_jsonl(run)]
    scores: dict[str, Any] = record["scores"]
    assert set(scores) == {"s1b", "nonfunctional@1"}
    assert scores["nonfunctional@1"] is not None
    ratings = record["dimensions"]["nonfunctional@1"]
    assert set(ratings) == {"maintainability", "security"}
    assert all(isinstance(r["rating"], int) and r["reason"] for r in ratings.values())
