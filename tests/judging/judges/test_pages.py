"""A run with a written judge on the pages and exports every run has: the run page, the
verdict page (the member's title and version, each dimension's rating and reason in its
answer), the verdicts export (the member's score under its version; each dimension's rating and
reason in the JSON, the CSV's columns and the API's records)."""

import csv
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from judging.judges.services import judge_define
from judging.models import PatchJudgment
from judging.runs.export import verdict_csv, verdict_jsonl
from sejury_web.llm import OFFLINE_MARKER
from tests.api.helpers import TokenClient, token_for
from tests.judging.helpers import Judge
from tests.judging.judges.test_runs import MINIMALISM, NON_FUNCTIONAL
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db


def test_a_written_judge_s_member_shows_on_the_run_and_verdict_pages_and_exports(
    judge_now: Judge, lead_client: Client, lead: User
) -> None:
    judge_define(data=NON_FUNCTIONAL, actor=None)
    judge_define(data=MINIMALISM, actor=None)
    dataset = DatasetFactory()
    bug = BugFactory(dataset=dataset, reference_patch=make_diff(new="x = 2"))
    PatchFactory(bug=bug, diff=make_diff(new="x = 3"))
    run = judge_now(
        dataset=dataset, strategies="s1b,nonfunctional@1,minimalism@1", context="reference",
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
    assert '<span class="muted">of 0–2</span>' in text  # each rating on its own scale
    [record] = [json.loads(line) for line in verdict_jsonl(run)]
    scores: dict[str, Any] = record["scores"]
    assert set(scores) == {"s1b", "nonfunctional@1", "minimalism@1"}
    assert scores["nonfunctional@1"] is not None
    ratings = record["dimensions"]["nonfunctional@1"]
    assert set(ratings) == {"maintainability", "security"}
    assert all(isinstance(r["rating"], int) and r["reason"] for r in ratings.values())
    assert set(record["dimensions"]) == {"nonfunctional@1"}  # a verdict judge rates none
    # The offline heuristic's answers say they are not an LLM's, on the page and in each export.
    assert (record["offline"], record["note"]) == (True, OFFLINE_MARKER)
    assert all(r["reason"].startswith(f"[{OFFLINE_MARKER}]") for r in ratings.values())
    member = text[text.index('id="member-minimalism@1"') :]
    member = member[: member.index("</section>")]
    assert f'<span class="tag offline">{OFFLINE_MARKER}</span>' in member

    # The CSV: a rating and a reason column per dimension the run's written members rate.
    [row] = list(csv.DictReader(io.StringIO("".join(verdict_csv(run)))))
    rated = [column for column in row if column.startswith(("nonfunctional@1.", "minimalism@1."))]
    assert rated == [
        "nonfunctional@1.maintainability.rating",
        "nonfunctional@1.maintainability.reason",
        "nonfunctional@1.security.rating",
        "nonfunctional@1.security.reason",
    ]
    assert (row["offline"], row["note"]) == ("True", OFFLINE_MARKER)
    for name, answer in ratings.items():
        assert row[f"nonfunctional@1.{name}.rating"] == str(answer["rating"])
        assert row[f"nonfunctional@1.{name}.reason"] == answer["reason"]

    # The API's records carry them too, typed in the OpenAPI document.
    api = TokenClient(token_for(lead))
    [served] = api.get(f"/api/v1/runs/{run.pk}/verdicts").json()["results"]
    assert served["dimensions"] == record["dimensions"]
    assert (served["offline"], served["note"]) == (True, OFFLINE_MARKER)
    document = api.get("/api/v1/openapi.json").json()
    field = document["components"]["schemas"]["VerdictRecord"]["properties"]["dimensions"]
    assert "DimensionRatingOut" in json.dumps(field)
    rating = document["components"]["schemas"]["DimensionRatingOut"]["properties"]["rating"]
    assert {"type": "integer"} in rating["anyOf"]
