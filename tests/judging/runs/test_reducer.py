"""A run's reducer through every door: the service records it and the team's verdicts use it;
the run form, the API and the ``judge`` command choose it; the run page shows it; the export
carries it. A run that names none is the mean's."""

import io
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from judging.models import JudgingRun
from judging.runs.export import csv_columns, verdict_records
from judging.runs.services import RunError, run_create
from judging.strategies.ensemble import combine
from judging.strategies.reducers import UNKNOWN_REDUCER
from tests.api.helpers import TokenClient, token_for
from tests.judging.helpers import Judge
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

TEAM = ["s3", "bleu", "chrf"]


@pytest.fixture
def dataset() -> Any:
    """Two bugs: one patch that is the reference fix, one that changes something else."""
    dataset = DatasetFactory(name="Reducer demo", slug="reducer-demo")
    for n in range(2):
        bug = BugFactory(dataset=dataset, key=f"BUG-{n}")
        PatchFactory(bug=bug, key=f"P-{n}-a", diff=bug.reference_patch)
        PatchFactory(bug=bug, key=f"P-{n}-b", diff=make_diff(path="src/other.py", new="y = 0"))
    return dataset


def test_a_run_records_its_reducer_and_its_verdicts_use_it(dataset: Any, judge_now: Judge) -> None:
    by_min = judge_now(
        dataset=dataset, strategies=TEAM, context="reference", reducer="min", actor=None
    )
    by_mean = judge_now(dataset=dataset, strategies=TEAM, context="reference", actor=None)

    assert (by_min.reducer, by_mean.reducer) == ("min", "mean")
    for run, reducer in ((by_min, "min"), (by_mean, "mean")):
        for judgment in run.judgments.all():
            scores = [float(r.score or 0) for r in judgment.results.all()]
            team = combine(scores, reducer=reducer)
            assert (judgment.score, judgment.verdict, judgment.spread) == (
                team.score,
                team.verdict,
                team.spread,
            )
            expected = min(scores) if reducer == "min" else sum(scores) / len(scores)
            assert judgment.score == pytest.approx(expected)
    # The same members' scores on the same patches, only reduced otherwise.
    assert list(by_min.judgments.order_by("patch__key").values_list("score", flat=True)) != list(
        by_mean.judgments.order_by("patch__key").values_list("score", flat=True)
    )


def test_an_unknown_reducer_starts_no_run(dataset: Any) -> None:
    with pytest.raises(RunError) as error:
        run_create(
            dataset=dataset, strategies=TEAM, context="reference", reducer="mode", actor=None
        )
    assert str(error.value) == UNKNOWN_REDUCER.format(
        name="mode", known="mean, median, majority, min"
    )
    assert not JudgingRun.objects.exists()


def test_the_export_carries_the_reducer(dataset: Any) -> None:
    run = run_create(
        dataset=dataset, strategies=TEAM, context="reference", reducer="median", actor=None
    )
    assert {record["reducer"] for record in verdict_records(run)} == {"median"}
    assert "reducer" in csv_columns(run)


def test_the_run_form_chooses_it_and_the_run_page_shows_it(
    dataset: Any, lead_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    page = lead_client.get(reverse("judging:run_new")).content.decode()
    assert '<option value="mean" selected>Mean of the members&#x27; scores</option>' in page
    assert '<option value="majority">Majority of the members&#x27; verdicts</option>' in page
    data = {
        "dataset": "reducer-demo",
        "strategies": TEAM,
        "context": "reference",
        "threshold": "50",
        "scale_lo": "0",
        "scale_hi": "100",
        "reducer": "majority",
    }
    response = lead_client.post(reverse("judging:run_new"), data)
    run = JudgingRun.objects.get()
    assert response.status_code == 302, response.content.decode()
    assert run.reducer == "majority"

    page = lead_client.get(run.get_absolute_url()).content.decode()
    assert "<dt>Team score</dt>" in page
    assert "Majority of the members&#x27; verdicts <code>majority</code>" in page
    assert "A tie is INVALID" in page

    wrong = lead_client.post(reverse("judging:run_new"), data | {"reducer": "mode"})
    assert wrong.status_code == 400
    assert JudgingRun.objects.count() == 1


def test_the_api_chooses_it_and_says_it(dataset: Any, lead: Any) -> None:
    api = TokenClient(token_for(lead))
    body = {"dataset": "reducer-demo", "team": TEAM, "context": "reference"}
    created = api.post("/api/v1/runs", body | {"reducer": "median"})
    assert created.status_code == 201, created.content
    assert created.json()["reducer"] == "median"
    assert JudgingRun.objects.get(pk=created.json()["id"]).reducer == "median"
    default = api.post("/api/v1/runs", body)
    assert default.json()["reducer"] == "mean"
    wrong = api.post("/api/v1/runs", body | {"reducer": "mode"})
    assert wrong.status_code == 422
    assert wrong.json()["detail"].startswith("unknown reducer 'mode'")


def test_the_judge_command_chooses_it(dataset: Any) -> None:
    out = io.StringIO()
    args = ["--dataset", "reducer-demo", "--team", "s3,bleu", "--context", "reference"]
    call_command("judge", *args, "--reducer", "min", stdout=out, stderr=io.StringIO())
    run = JudgingRun.objects.get()
    assert run.reducer == "min"
    assert "(VALID from 50 on 0–100; team score: min)." in out.getvalue()

    with pytest.raises(CommandError, match="invalid choice: 'mode'"):
        call_command("judge", *args, "--reducer", "mode", stdout=io.StringIO())


def test_a_resumed_run_keeps_its_reducer(dataset: Any) -> None:
    run = run_create(dataset=dataset, strategies=TEAM, context="reference", actor=None)
    with pytest.raises(CommandError, match="--resume takes no --reducer"):
        call_command("judge", "--resume", str(run.pk), "--reducer", "min", stdout=io.StringIO())
    assert JudgingRun.objects.get().reducer == "mean"
