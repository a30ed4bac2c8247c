"""The run page beside the humans: its Humans column (each row's consensus), the filter "the
judge disagrees with humans", and the card of the run against the consensus, whose figures
are the agreement report's. Costs the same queries at 10 patches as at thousands."""

import os
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext

from judging.consensus.rules import dataset_consensus, with_consensus
from judging.models import Adjudication, Annotation, JudgingRun, Label, PatchJudgment
from judging.reports import read_cache
from judging.reports.humans import B_FULL
from judging.reports.judges import METRICS
from judging.reports.selectors import JUDGES, agreement_report
from judging.reports.synthetic import Shape, synthetic_dataset
from judging.runs import views as run_views
from judging.runs.agreement import CARD_METRICS, run_agreement
from judging.runs.verdicts import WAITING, TableQuery, run_verdicts
from rubrics.models import ConsensusRule, Dataset, Patch
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE
HTMX = {"HX-Request": "true"}
LARGE_BUGS = int(os.environ.get("RUN_HUMANS_LARGE_BUGS", "200"))  # of 5 patches each


@pytest.fixture(autouse=True)
def _nothing_kept() -> None:
    read_cache.forget()  # every test reads the report afresh


def _raters(count: int) -> list[User]:
    return [User.objects.create(username=f"humans-rater-{n}") for n in range(count)]


@pytest.fixture
def labelled() -> tuple[Dataset, JudgingRun]:
    """Six patches judged: the humans agree (P-agree), contradict the judge unanimously
    (P-wrong) or by a lead's adjudication (P-adjudicated), disagree among themselves
    (P-disputed), gave one decisive label (P-one), or none (P-none)."""
    dataset = DatasetFactory(name="Humans demo", slug="humans-demo")
    bug = BugFactory(dataset=dataset, key="BUG-1")
    raters = _raters(3)
    labels = {
        "P-agree": [VALID, VALID],
        "P-wrong": [INVALID, INVALID, UNSURE],
        "P-adjudicated": [VALID, INVALID],
        "P-disputed": [VALID, INVALID],
        "P-one": [VALID, UNSURE],
        "P-none": [],
    }
    verdicts = {
        "P-agree": VALID,
        "P-wrong": VALID,
        "P-adjudicated": VALID,
        "P-disputed": INVALID,
        "P-one": INVALID,
        "P-none": VALID,
    }
    run = JudgingRun.objects.create(
        dataset=dataset,
        strategies=["bleu"],
        context="reference",
        provider="offline",
        model="heuristic-v1",
        status=JudgingRun.Status.FINISHED,
    )
    for key, given in labels.items():
        patch = PatchFactory(bug=bug, key=key)
        for rater, label in zip(raters, given, strict=False):
            Annotation.objects.create(patch=patch, annotator=rater, label=label)
        PatchJudgment.objects.create(
            run=run,
            patch=patch,
            status=PatchJudgment.Status.DONE,
            verdict=verdicts[key],
            score=90.0 if verdicts[key] == VALID else 10.0,
        )
    Adjudication.objects.create(
        patch=dataset.patches.get(key="P-adjudicated"), label=INVALID, themes=["other"]
    )
    return dataset, run


def test_each_row_shows_its_patch_consensus(labelled: tuple[Dataset, JudgingRun]) -> None:
    _, run = labelled
    table = run_verdicts(run=run, query=TableQuery())
    humans = {row.judgment.patch.key: row.humans for row in table.rows}
    assert humans == {
        "P-adjudicated": INVALID,
        "P-agree": VALID,
        "P-disputed": WAITING,
        "P-none": "",
        "P-one": WAITING,
        "P-wrong": INVALID,
    }
    disagreeing = {row.judgment.patch.key for row in table.rows if row.disagrees}
    assert disagreeing == {"P-wrong", "P-adjudicated"}


def test_the_page_shows_the_humans_column_and_filters_the_disagreements(
    lead_client: Client, labelled: tuple[Dataset, JudgingRun]
) -> None:
    _, run = labelled
    page = lead_client.get(run.get_absolute_url()).content.decode()
    assert "<th" in page
    assert ">Humans</th>" in page
    assert 'name="disagrees"' in page
    assert page.count("≠ judge") == 2
    assert page.count(">waiting</span>") == 2

    # The filter, as htmx asks for the table (the form's checkbox), then as a plain page.
    table = lead_client.get(
        run.get_absolute_url(),
        {"disagrees": "1"},
        headers={**HTMX, "HX-Target": run_views.TABLE_TARGET},
    ).content.decode()
    assert "2 verdicts, where the judge disagrees with humans" in table
    assert "P-wrong" in table
    assert "P-adjudicated" in table
    assert "P-agree" not in table
    assert "P-disputed" not in table
    assert "P-none" not in table
    assert "disagrees=1" in table  # sorting and paging keep the filter
    whole = lead_client.get(run.get_absolute_url(), {"disagrees": "1"}).content.decode()
    assert 'name="disagrees" value="1" checked' in whole
    assert "P-agree" not in whole


def test_the_filter_pages(lead_client: Client, labelled: tuple[Dataset, JudgingRun]) -> None:
    dataset, run = labelled
    bug = dataset.bugs.get()
    rater = User.objects.get(username="humans-rater-0")
    other = User.objects.get(username="humans-rater-1")
    for n in range(60):  # 60 more the judge calls VALID and humans INVALID
        patch = PatchFactory(bug=bug, key=f"P-more-{n:02}")
        Annotation.objects.create(patch=patch, annotator=rater, label=INVALID)
        Annotation.objects.create(patch=patch, annotator=other, label=INVALID)
        PatchJudgment.objects.create(
            run=run, patch=patch, status=PatchJudgment.Status.DONE, verdict=VALID, score=90.0
        )
    query = TableQuery(disagrees=True)
    first = run_verdicts(run=run, query=query)
    second = run_verdicts(run=run, query=TableQuery(disagrees=True, page=2))
    assert first.page.paginator.count == 62
    assert len(first.rows) + len(second.rows) == 62
    assert all(row.disagrees for row in (*first.rows, *second.rows))
    assert "disagrees=1" in first.next_params
    htmx = lead_client.get(
        run.get_absolute_url(),
        {"disagrees": "1", "page": "2"},
        headers={**HTMX, "HX-Target": run_views.TABLE_TARGET},
    ).content.decode()
    assert htmx.count('<tr id="verdict-') == len(second.rows) == 12


@pytest.mark.parametrize("rule", [ConsensusRule.UNANIMOUS, ConsensusRule.MAJORITY])
def test_the_sql_consensus_is_the_rules(rule: ConsensusRule) -> None:
    """``with_consensus`` answers as ``patch_consensus`` on every patch of a dataset with
    unanimous, majority, disputed, too-few and adjudicated patches."""
    dataset = synthetic_dataset(
        f"SQL consensus {rule}",
        Shape(bugs=40, patches_per_bug=5, annotators=6, labels_per_patch=4, unsure_rate=0.25),
    )
    dataset.consensus_rule = rule
    dataset.save()
    expected = {patch_id: state.consensus for patch_id, state in dataset_consensus(dataset).items()}
    patches = with_consensus(Patch.objects.filter(dataset=dataset), rule, patch_ref="pk")
    got = dict(patches.annotate(said=F("consensus")).values_list("pk", "said"))
    assert {pk: c for pk, c in got.items() if pk in expected} == expected
    assert all(c is None for pk, c in got.items() if pk not in expected)
    assert len(set(expected.values())) == 3  # VALID, INVALID and waiting all met


def test_the_card_is_the_agreement_reports_judge_column(lead_client: Client) -> None:
    dataset = synthetic_dataset("Card demo", Shape(bugs=30, patches_per_bug=4, runs=1))
    run = JudgingRun.objects.get(dataset=dataset)
    report = agreement_report(dataset, runs=[run], sections=[JUDGES])
    assert report.judges is not None
    expected = report.judges[0].benchmarks[B_FULL]
    card = run_agreement(run)
    assert card.full.n == expected.n > 0
    for key in CARD_METRICS:
        assert key in METRICS
        assert card.full.metrics[key] == expected.metrics[key]
        assert expected.metrics[key].ci is not None
    # The page's card says the same figures, and the filter lists the disagreements it counts.
    html = lead_client.get(
        run.get_absolute_url(), headers={**HTMX, "HX-Target": run_views.AGREEMENT_TARGET}
    ).content.decode()
    for key in CARD_METRICS:
        assert f'data-value="{expected.metrics[key].value:.6f}" data-n="{expected.n}"' in html
    assert 'hx-trigger="run-ended from:body, every 30s"' in html  # its last verdicts, and labels
    disagreeing = run_verdicts(run=run, query=TableQuery(disagrees=True)).page.paginator.count
    assert disagreeing == card.disagreements == expected.confusion["fp"] + expected.confusion["fn"]
    # As a label arrives, the card follows: a VALID patch's consensus turned INVALID.
    agreed = next(
        patch
        for patch in dataset.patches.filter(judgments__run=run, judgments__verdict=VALID)
        if patch.pk in dataset_consensus(dataset)
        and not hasattr(patch, "adjudication")
        and dataset_consensus(dataset, patch_ids=[patch.pk])[patch.pk].consensus == VALID
    )
    Adjudication.objects.create(patch=agreed, label=INVALID, themes=["other"])
    assert run_agreement(run).disagreements == card.disagreements + 1


def test_the_page_loads_the_card_lazily(
    lead_client: Client, labelled: tuple[Dataset, JudgingRun]
) -> None:
    _, run = labelled
    page = lead_client.get(run.get_absolute_url()).content.decode()
    assert 'id="run-agreement"' in page
    assert 'hx-trigger="load"' in page
    card = lead_client.get(
        run.get_absolute_url(), headers={**HTMX, "HX-Target": run_views.AGREEMENT_TARGET}
    ).content.decode()
    # B_full: P-agree (agrees), P-wrong, P-adjudicated (disagree).
    assert "n=<b>3</b>" in card
    assert "<b>2</b> disagree" in card


def _queries(client: Client, url: str, **kwargs: Any) -> int:
    read_cache.forget()  # each size reads the report afresh: the same queries either way
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, **kwargs).status_code == 200
    return len(captured.captured_queries)


def test_the_run_page_costs_the_same_queries_at_10_and_at_thousands_of_patches(
    lead_client: Client,
) -> None:
    small = synthetic_dataset("Small", Shape(bugs=2, patches_per_bug=5, runs=1))
    # 1,000 patches here (20 pages of the table) to keep the suite fast; measured by hand
    # at 10,000 too (the same counts: /tmp/notes/28-run-page.md).
    large = synthetic_dataset("Large", Shape(bugs=LARGE_BUGS, patches_per_bug=5, runs=1, seed=1))
    counts = {}
    for dataset in (small, large):
        run = JudgingRun.objects.get(dataset=dataset)
        url = run.get_absolute_url()
        lead_client.get(url)  # the session and roles, once
        table = {**HTMX, "HX-Target": run_views.TABLE_TARGET}
        card = {**HTMX, "HX-Target": run_views.AGREEMENT_TARGET}
        counts[dataset.patches.count()] = (
            _queries(lead_client, url),
            _queries(lead_client, url, data={"disagrees": "1", "sort": "-score"}),
            _queries(lead_client, url, data={"disagrees": "1", "page": "2"}, headers=table),
            _queries(lead_client, url, headers=card),
        )
    assert set(counts) == {10, LARGE_BUGS * 5}
    assert counts[10] == counts[LARGE_BUGS * 5], counts


@pytest.mark.parametrize("who", ["annotator_client", "reviewer_client"])
def test_only_leads_see_the_run_beside_the_humans(
    request: pytest.FixtureRequest, who: str, labelled: tuple[Dataset, JudgingRun]
) -> None:
    """Annotators stay blind to the judge (and reviewers do not see runs): the page, its
    table with the filter and its card are refused."""
    _, run = labelled
    client: Client = request.getfixturevalue(who)
    for params, target in (
        ({}, None),
        ({"disagrees": "1"}, run_views.TABLE_TARGET),
        ({}, run_views.AGREEMENT_TARGET),
    ):
        headers = {**HTMX, "HX-Target": target} if target else {}
        response = client.get(run.get_absolute_url(), params, headers=headers)
        assert response.status_code == 403
        assert "Humans" not in response.content.decode()
