"""A running run's verdict table is live: each progress poll sends the unfinished rows the page
shows and gets back, out of band, those that changed; never the whole table."""

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.services import run_create
from rubrics.models import Dataset
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db

Capture = Callable[..., Any]
HTMX = {"HX-Request": "true"}
TEAM = ["bleu", "chrf"]


def running_run(dataset: Dataset, on_commit: Capture) -> JudgingRun:
    """A run of every patch, queued and never started: every row pending."""
    with on_commit(execute=False):
        run = run_create(actor=None, dataset=dataset, strategies=TEAM, context="none")
    JudgingRun.objects.filter(pk=run.pk).update(status=JudgingRun.Status.RUNNING)
    run.refresh_from_db()
    return run


def dataset_of(patches: int) -> Dataset:
    dataset = DatasetFactory(name=f"Live {patches}", slug=f"live-{patches}")
    bug = BugFactory(dataset=dataset, key=f"LIVE-{patches}")
    for n in range(patches):
        PatchFactory(bug=bug, key=f"L-{n:03}")
    return dataset


def finish(judgment: PatchJudgment, score: float) -> None:
    """What the worker writes when every member of the patch has ended."""
    for name in TEAM:
        StrategyResult.objects.create(
            judgment=judgment, strategy=name, status="done", score=score, prompt_version="t"
        )
    judgment.status = PatchJudgment.Status.DONE
    judgment.score = score
    judgment.verdict = "VALID" if score >= 50 else "INVALID"
    judgment.spread = 0.0
    judgment.save()


def live_values(html: str) -> list[str]:
    return re.findall(r'name="live" value="([^"]+)"', html)


def poll(client: Client, run: JudgingRun, live: list[str]) -> str:
    url = reverse("judging:run_progress", args=[run.pk])
    response = client.get(url, {"live": live}, headers=HTMX)
    assert response.status_code == 200
    return response.content.decode()


def test_pending_rows_carry_what_the_poll_sends_and_the_poll_includes_the_table(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    run = running_run(dataset_of(3), django_capture_on_commit_callbacks)
    html = lead_client.get(run.get_absolute_url()).content.decode()
    ids = sorted(run.judgments.values_list("pk", flat=True))
    assert sorted(live_values(html)) == sorted(f"{pk}:0" for pk in ids)
    assert 'hx-include="#run-table"' in html


def test_a_poll_returns_only_the_rows_that_changed_out_of_band(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    run = running_run(dataset_of(3), django_capture_on_commit_callbacks)
    done, halfway, waiting = run.judgments.order_by("patch__key")
    finish(done, 87.5)
    StrategyResult.objects.create(
        judgment=halfway, strategy="bleu", status="done", score=12.0, prompt_version="t"
    )

    html = poll(lead_client, run, [f"{j.pk}:0" for j in (done, halfway, waiting)])

    assert html.lstrip().startswith('<section id="run-progress"')
    rows = re.findall(r'<tr id="verdict-(\d+)"[^>]*hx-swap-oob="outerHTML"', html)
    assert sorted(map(int, rows)) == sorted([done.pk, halfway.pk])
    finished_row = html[html.index(f'id="verdict-{done.pk}"') :]
    finished_row = finished_row[: finished_row.index("</tr>")]
    for shown in ("87.50", "VALID", "Done"):
        assert shown in finished_row
    assert 'name="live"' not in finished_row  # a finished row is no longer asked about
    # The half-judged row asks again with its one member ended; it is not sent twice.
    assert f"{halfway.pk}:1" in live_values(html)
    again = poll(lead_client, run, [f"{halfway.pk}:1", f"{waiting.pk}:0"])
    assert "<tr" not in again


def test_a_poll_costs_the_same_queries_for_three_rows_or_a_page(
    lead_client: Client,
    django_capture_on_commit_callbacks: Capture,
    django_assert_max_num_queries: Capture,
) -> None:
    run = running_run(dataset_of(60), django_capture_on_commit_callbacks)
    judgments = list(run.judgments.order_by("patch__key"))
    for judgment in judgments[:55]:
        finish(judgment, 60.0)
    poll(lead_client, run, [])  # the session and roles, once

    counts = []
    for shown in (judgments[:3], judgments[:60]):
        with django_assert_max_num_queries(20) as captured:
            html = poll(lead_client, run, [f"{j.pk}:0" for j in shown])
        counts.append(len(captured))
        assert html.count("hx-swap-oob") == min(len(shown), 50)  # a page's worth at most
    assert counts[0] == counts[1]
    # Without rows to ask about, the poll reads no row at all.
    with django_assert_max_num_queries(counts[0] - 2):
        poll(lead_client, run, [])


def test_a_poll_ignores_malformed_rows_and_other_runs(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    run = running_run(dataset_of(2), django_capture_on_commit_callbacks)
    other = running_run(dataset_of(1), django_capture_on_commit_callbacks)
    foreign = other.judgments.get()
    finish(foreign, 90.0)
    html = poll(lead_client, run, ["x:1", "3", f"{foreign.pk}:0", ":"])
    assert "<tr" not in html


def test_the_last_poll_sends_no_rows_the_table_reloads_instead(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    run = running_run(dataset_of(1), django_capture_on_commit_callbacks)
    judgment = run.judgments.get()
    finish(judgment, 70.0)
    JudgingRun.objects.filter(pk=run.pk).update(status=JudgingRun.Status.FINISHED)
    url = reverse("judging:run_progress", args=[run.pk])
    response = lead_client.get(url, {"live": f"{judgment.pk}:0"}, headers=HTMX)
    assert response.status_code == 286
    assert "<tr" not in response.content.decode()


def test_the_tables_member_results_are_read_unsorted_and_without_joins(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    """The members' results of a page's rows go into a dict: read without the model's
    default order, which joins the run, the patch and the dataset to sort every result by
    them (two thirds of a 10,000-patch run page's time)."""
    run = running_run(dataset_of(3), django_capture_on_commit_callbacks)
    for judgment in run.judgments.all():
        finish(judgment, 60.0)
    with CaptureQueriesContext(connection) as captured:
        assert lead_client.get(reverse("judging:run_detail", args=[run.pk])).status_code == 200
    results = [
        query["sql"]
        for query in captured
        if query["sql"].startswith('SELECT "judging_strategyresult"."id"')
    ]
    assert results, [query["sql"][:80] for query in captured]
    for sql in results:
        assert "ORDER BY" not in sql, sql
        assert "judging_judgingrun" not in sql, sql
