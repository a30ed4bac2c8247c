"""The judging run pages: who may see them, starting a run, the verdict table, one verdict,
and two runs compared. Runs are judged for real by the offline model, on eager tasks."""

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.models import BugStep, JudgingRun, PatchJudgment, StrategyResult
from judging.runs import views as run_views
from judging.runs.forms import NO_TEAM
from judging.runs.selectors import UNKNOWN_RUN
from judging.runs.services import run_create
from judging.runs.verdicts import OTHER_DATASETS, SAME_RUN
from judging.strategies import STRATEGIES
from judging.strategies.ensemble import BAD_THRESHOLD
from judging.strategies.prompts import SYSTEM
from rubrics.models import Dataset
from rubrics.selectors import UNKNOWN_PATCHES
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.llm.config import MISSING_KEY
from sejury_web.llm.models import LLMCall
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

Capture = Callable[..., Any]
TEAM = ["rubric", "s1b", "bleu"]


@pytest.fixture
def dataset() -> Dataset:
    """Three bugs with two patches each: P-<bug>-a keeps the reference fix, P-<bug>-b not."""
    dataset = DatasetFactory(name="Runs demo", slug="runs-demo")
    for n in range(3):
        bug = BugFactory(dataset=dataset, key=f"BUG-{n}")
        PatchFactory(bug=bug, key=f"P-{n}-a", diff=make_diff(new="x = 2"))
        PatchFactory(bug=bug, key=f"P-{n}-b", diff=make_diff(path="tests/test_app.py", new="y = 0"))
    return dataset


def judged(dataset: Dataset, rows: dict[str, tuple[Any, ...]], **fields: Any) -> JudgingRun:
    """A finished run written directly: for each patch key, (team score, verdict, member
    scores in team order); a score of None is a failed member (and a failed patch)."""
    run = JudgingRun.objects.create(
        dataset=dataset,
        strategies=fields.pop("strategies", TEAM),
        context="reference",
        provider="offline",
        model="heuristic-v1",
        status=JudgingRun.Status.FINISHED,
        **fields,
    )
    for key, (score, verdict, members) in rows.items():
        failed = score is None
        judgment = PatchJudgment.objects.create(
            run=run,
            patch=dataset.patches.get(key=key),
            status=PatchJudgment.Status.FAILED if failed else PatchJudgment.Status.DONE,
            score=score,
            verdict=verdict,
            spread=None if failed else max(members) - min(members),
            error="1 of 3 members failed: s1b: the model was away" if failed else "",
        )
        for name, member in zip(run.strategies, members, strict=True):
            StrategyResult.objects.create(
                judgment=judgment,
                strategy=name,
                status=StrategyResult.Status.FAILED if member is None else "done",
                score=member,
                verdict=("VALID" if member >= 50 else "INVALID") if name == "rubric" else "",
                prompt_version="test",
                error="the model was away" if member is None else "",
            )
    return run


@pytest.fixture
def run(dataset: Dataset) -> JudgingRun:
    return judged(
        dataset,
        {
            "P-0-a": (90.0, "VALID", [100, 80, 90]),
            "P-0-b": (10.0, "INVALID", [0, 20, 10]),
            "P-1-a": (70.0, "VALID", [100, 60, 50]),
            "P-1-b": (None, "", [0, None, 5]),
            "P-2-a": (55.5, "VALID", [100, 30, 36.5]),
            "P-2-b": (40.0, "INVALID", [0, 70, 50]),
        },
    )


def page_urls(run: JudgingRun) -> list[str]:
    judgment = run.judgments.first()
    return [
        reverse("judging:run_list"),
        reverse("judging:run_new"),
        reverse("judging:run_compare"),
        reverse("judging:run_detail", args=[run.pk]),
        reverse("judging:run_progress", args=[run.pk]),
        reverse("judging:verdict_detail", args=[run.pk, judgment.pk]),
    ]


def patch_keys(html: str) -> list[str]:
    """The patch keys of the verdict table, in row order."""
    table = html[html.index('id="run-table"') :]
    return re.findall(r'/verdicts/\d+/">(P-[^<]+)</a>', table)


# Permissions


def test_anonymous_users_are_sent_to_log_in(client: Client, run: JudgingRun) -> None:
    posts = [reverse(f"judging:run_{action}", args=[run.pk]) for action in ("cancel", "resume")]
    for url in page_urls(run):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url
    for url in posts:
        assert client.post(url).status_code == 302, url
    assert JudgingRun.objects.get(pk=run.pk).status == JudgingRun.Status.FINISHED


def test_runs_are_for_leads_only(
    lead_client: Client, reviewer_client: Client, annotator_client: Client, run: JudgingRun
) -> None:
    for url in page_urls(run):
        assert lead_client.get(url).status_code == 200, url
        assert reviewer_client.get(url).status_code == 403, url
        assert annotator_client.get(url).status_code == 403, url
    for action in ("cancel", "resume"):
        url = reverse(f"judging:run_{action}", args=[run.pk])
        assert reviewer_client.post(url).status_code == 403, url
        assert annotator_client.post(url).status_code == 403, url


def test_leads_find_the_runs_from_the_menu_and_the_dataset(
    lead_client: Client, reviewer_client: Client, dataset: Dataset
) -> None:
    html = lead_client.get(dataset.get_absolute_url()).content.decode()
    assert reverse("judging:run_list") in html
    assert f"{reverse('judging:run_new')}?dataset=runs-demo" in html
    html = reviewer_client.get(dataset.get_absolute_url()).content.decode()
    assert reverse("judging:run_list") not in html
    assert reverse("judging:run_new") not in html


def test_unknown_runs_and_verdicts_are_404(lead_client: Client, run: JudgingRun) -> None:
    other = judged(run.dataset, {"P-0-a": (90.0, "VALID", [100, 80, 90])})
    assert lead_client.get(reverse("judging:run_detail", args=[999])).status_code == 404
    verdict = reverse("judging:verdict_detail", args=[run.pk, other.judgments.get().pk])
    assert lead_client.get(verdict).status_code == 404


# Starting a run


def form_data(**changes: Any) -> dict[str, Any]:
    data = {
        "dataset": "runs-demo",
        "strategies": ["s3", "rubric", "bleu"],
        "context": "reference",
        "provider": "",
        "model": "",
        "threshold": "50",
        "scale_lo": "0",
        "scale_hi": "100",
        "patch_keys": "",
        "name": "First try",
    }
    return data | changes


def test_the_form_offers_the_registry_and_the_contexts_leads_may_pick(
    lead_client: Client, dataset: Dataset
) -> None:
    html = lead_client.get(reverse("judging:run_new") + "?dataset=runs-demo").content.decode()
    assert '<option value="runs-demo" selected>' in html
    for name in ("rubric", "s1a", "s1b", "s2", "s3", "s4", "s5", "bleu", "chrf", "edit"):
        assert f'value="{name}"' in html
    assert 'value="rubric" id="id_strategies_rubric" checked' in html
    assert 'value="s2" id="id_strategies_s2">' in html  # not in the default team
    assert 'value="reference" selected' in html
    assert 'value="revision"' not in html
    assert "S1a never sees it" in html


def test_the_form_takes_a_team_from_the_address(lead_client: Client, dataset: Dataset) -> None:
    """A calibration links here with the team it picked; an unknown name changes nothing."""
    url = reverse("judging:run_new") + "?dataset=runs-demo&team="
    html = lead_client.get(url + "s1a,s3").content.decode()
    assert 'value="s1a" id="id_strategies_s1a" checked' in html
    assert 'value="s3" id="id_strategies_s3" checked' in html
    assert 'value="rubric" id="id_strategies_rubric">' in html  # the default team is replaced
    html = lead_client.get(url + "s1a,nope").content.decode()
    assert 'value="rubric" id="id_strategies_rubric" checked' in html


def test_a_lead_starts_a_run_and_it_is_judged(
    lead_client: Client,
    lead: User,
    dataset: Dataset,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        response = lead_client.post(reverse("judging:run_new"), form_data())

    run = JudgingRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == run.get_absolute_url()
    assert run.strategies == [name for name in STRATEGIES if name in {"s3", "rubric", "bleu"}]
    assert (run.name, run.created_by, run.provider) == ("First try", lead, "offline")
    assert run.status == JudgingRun.Status.FINISHED
    assert set(run.judgments.values_list("status", flat=True)) == {"done"}
    assert run.judgments.count() == 6


def test_a_run_can_judge_a_selection_of_patches(
    lead_client: Client, dataset: Dataset, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        lead_client.post(reverse("judging:run_new"), form_data(patch_keys="P-0-a,\nP-2-b  P-0-a"))

    keys = JudgingRun.objects.get().judgments.values_list("patch__key", flat=True)
    assert sorted(keys) == ["P-0-a", "P-2-b"]


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"strategies": []}, NO_TEAM),
        (
            {"patch_keys": "P-0-a, NOPE-1\nNOPE-2"},
            UNKNOWN_PATCHES.format(keys="NOPE-1, NOPE-2", dataset="Runs demo"),
        ),
        (
            {"threshold": "6", "scale_lo": "1", "scale_hi": "5"},
            BAD_THRESHOLD.format(threshold=6.0, lo=1.0, hi=5.0),
        ),
        # The service refuses a provider without a key: its message is the form's.
        (
            {"provider": "openai"},
            MISSING_KEY.format(provider="openai", variable="OPENAI_API_KEY or OPENAI_BASE_URL"),
        ),
    ],
)
def test_a_refused_run_says_why_and_keeps_the_form(
    lead_client: Client, dataset: Dataset, changes: dict[str, Any], error: str
) -> None:
    response = lead_client.post(reverse("judging:run_new"), form_data(**changes))

    assert response.status_code == 400
    html = response.content.decode()
    assert error in html.replace("&#x27;", "'")
    assert 'value="First try"' in html
    assert not JudgingRun.objects.exists()


# The run page


def test_the_run_page_shows_the_team_the_offline_marker_and_each_member_s_column(
    lead_client: Client, run: JudgingRun
) -> None:
    html = lead_client.get(run.get_absolute_url()).content.decode()

    assert run_views.OFFLINE_NOTE in html
    assert OFFLINE_MARKER in run_views.OFFLINE_NOTE
    for label in ("Rubric-guided judge", "S1b Direct Assess with reference", "BLEU"):
        assert label in html
    for name in TEAM:
        assert f"sort={name}" in html
    row = html[html.index(">P-2-a</a>") :].split("</tr>")[0]
    assert "55.50" in row  # the team score, two decimals
    assert "label-valid" in row  # the rubric member's verdict
    assert ">30<" in row  # the other members' scores
    assert ">36.50<" in row
    failed = html[html.index(">P-1-b</a>") :].split("</tr>")[0]
    assert "the model was away" in failed


def test_filters_and_sorts_change_the_rows(lead_client: Client, run: JudgingRun) -> None:
    url = run.get_absolute_url()

    def keys(**params: str) -> list[str]:
        return patch_keys(lead_client.get(url, params).content.decode())

    assert keys() == ["P-0-a", "P-0-b", "P-1-a", "P-1-b", "P-2-a", "P-2-b"]
    assert keys(sort="-patch")[0] == "P-2-b"
    assert keys(sort="score") == ["P-0-b", "P-2-b", "P-2-a", "P-1-a", "P-0-a", "P-1-b"]
    assert keys(sort="-score") == ["P-0-a", "P-1-a", "P-2-a", "P-2-b", "P-0-b", "P-1-b"]
    assert keys(sort="-spread")[:2] == ["P-2-a", "P-2-b"]
    assert keys(sort="s1b") == ["P-0-b", "P-2-a", "P-1-a", "P-2-b", "P-0-a", "P-1-b"]
    assert keys(sort="-bleu") == ["P-0-a", "P-1-a", "P-2-b", "P-2-a", "P-0-b", "P-1-b"]
    assert keys(verdict="VALID") == ["P-0-a", "P-1-a", "P-2-a"]
    assert keys(verdict="INVALID", sort="-score") == ["P-2-b", "P-0-b"]
    assert keys(status="failed") == ["P-1-b"]
    assert keys(q="bug-2") == ["P-2-a", "P-2-b"]
    assert keys(q="1-B") == ["P-1-b"]
    assert keys(sort="nonsense", verdict="maybe") == keys()


def test_the_table_pages_by_fifty(lead_client: Client, dataset: Dataset) -> None:
    bug = dataset.bugs.get(key="BUG-0")
    for n in range(52):
        PatchFactory(bug=bug, key=f"P-9-{n:02}")
    run = judged(dataset, {f"P-9-{n:02}": (50.0, "VALID", [100, 0, 50]) for n in range(52)})

    first = lead_client.get(run.get_absolute_url()).content.decode()
    second = lead_client.get(run.get_absolute_url(), {"page": 2}).content.decode()

    assert len(patch_keys(first)) == 50
    assert patch_keys(second) == ["P-9-50", "P-9-51"]
    assert "Page 2 of 2" in second


def test_htmx_gets_only_the_table(lead_client: Client, run: JudgingRun) -> None:
    response = lead_client.get(
        run.get_absolute_url(),
        {"sort": "-score"},
        headers={"HX-Request": "true", "HX-Target": run_views.TABLE_TARGET},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="run-table"')
    assert "<html" not in html
    assert patch_keys(html)[0] == "P-0-a"
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize(
    "target",
    [
        run_views.TABLE_TARGET,
        run_views.REJUDGE_TARGET,
        run_views.WEBHOOK_TARGET,
        run_views.AGREEMENT_TARGET,
    ],
)
def test_htmx_asking_for_one_card_reads_only_what_it_shows(
    lead_client: Client, run: JudgingRun, target: str
) -> None:
    """The card's reads, not the page's: no verdict table for another card, no run history,
    webhook or rejection themes for the table."""
    lead_client.get(run.get_absolute_url())  # the session and roles, once
    with CaptureQueriesContext(connection) as captured:
        response = lead_client.get(
            run.get_absolute_url(), headers={"HX-Request": "true", "HX-Target": target}
        )
    assert response.status_code == 200
    sql = " ".join(query["sql"] for query in captured.captured_queries)
    assert ("judging_strategyresult" in sql) == (target == run_views.TABLE_TARGET)
    assert "sejury_web_auditevent" not in sql
    assert "judging_rejectiontheme" not in sql
    if target != run_views.WEBHOOK_TARGET:
        assert "judging_webhookdelivery" not in sql


def test_the_run_page_costs_the_same_queries_at_any_size(
    lead_client: Client, dataset: Dataset, django_assert_max_num_queries: Capture
) -> None:
    small = judged(dataset, {"P-0-a": (90.0, "VALID", [100, 80, 90])})
    bug = dataset.bugs.get(key="BUG-1")
    for n in range(120):
        PatchFactory(bug=bug, key=f"P-big-{n:03}")
    large = judged(dataset, {f"P-big-{n:03}": (50.0, "VALID", [100, 0, 50]) for n in range(120)})
    lead_client.get(small.get_absolute_url())  # the session and roles, once

    for run in (small, large):
        for params in ({}, {"sort": "-s1b", "verdict": "VALID", "q": "P"}):
            # 10 for the run and its table, 2 for its rows' human consensus (their labels
            # and adjudications), 1 for the run's history (its audit events), 1 for the
            # campaigns routed from it (a finished run's header names them), 1 for why
            # passing patches were rejected (one count of each theme).
            with django_assert_max_num_queries(15):
                assert lead_client.get(run.get_absolute_url(), params).status_code == 200


def test_the_progress_partial_polls_while_active_and_stops_when_finished(
    lead_client: Client,
    dataset: Dataset,
    run: JudgingRun,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    htmx = {"HX-Request": "true"}
    with django_capture_on_commit_callbacks(execute=False):
        active = run_create(actor=None, dataset=dataset, strategies=["bleu"], context="none")
    url = reverse("judging:run_progress", args=[active.pk])

    polling = lead_client.get(url, headers=htmx)
    assert polling.status_code == 200
    assert 'hx-trigger="every 1s"' in polling.content.decode()
    assert "Cancel" in polling.content.decode()

    ended = lead_client.get(reverse("judging:run_progress", args=[run.pk]), headers=htmx)
    assert ended.status_code == 286  # htmx stops polling
    assert "hx-trigger" not in ended.content.decode()
    assert run_views.RUN_ENDED_EVENT in ended["HX-Trigger"]
    assert "100%" in ended.content.decode()  # a failed patch is finished too
    assert "Retry failed" in ended.content.decode()


def test_cancel_and_resume_change_the_run(
    lead_client: Client,
    dataset: Dataset,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(
            actor=None, dataset=dataset, strategies=["s1b", "bleu"], context="reference"
        )
    cancel = reverse("judging:run_cancel", args=[run.pk])
    resume = reverse("judging:run_resume", args=[run.pk])

    response = lead_client.post(cancel, follow=True)
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.CANCELLED
    html = response.content.decode()
    assert run_views.CANCELLED.format(run=run.pk) in html
    assert ">Resume</button>" in html
    assert ">Cancel</button>" not in html

    with django_capture_on_commit_callbacks(execute=True):
        response = lead_client.post(resume, follow=True)
    run.refresh_from_db()
    assert run.status == JudgingRun.Status.FINISHED
    assert run.generation == 1
    assert run_views.RESUMED.format(run=run.pk) in response.content.decode()

    # A finished run cannot be cancelled: the service's reason is shown.
    html = lead_client.post(cancel, follow=True).content.decode()
    assert "only a queued or running run can be cancelled" in html


def test_retry_failed_judges_the_failed_patches_again(
    lead_client: Client,
    run: JudgingRun,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        lead_client.post(reverse("judging:run_resume", args=[run.pk]), {"retry_failed": "1"})

    judgment = run.judgments.get(patch__key="P-1-b")
    assert judgment.status == PatchJudgment.Status.DONE
    assert judgment.results.get(strategy="s1b").is_offline
    assert judgment.results.get(strategy="rubric").prompt_version == "test"  # kept


# One verdict


def test_the_verdict_page_shows_every_prompt_and_raw_answer(
    lead_client: Client,
    dataset: Dataset,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        run = run_create(
            actor=None,
            dataset=dataset,
            strategies=["rubric", "s2", "s4", "bleu"],
            context="reference",
        )
    judgment = run.judgments.get(patch__key="P-1-a")
    s2 = judgment.results.get(strategy="s2")
    assert len(s2.call_ids) == 2

    html = lead_client.get(judgment.get_absolute_url()).content.decode()

    assert html.count(OFFLINE_MARKER) >= 4
    assert "S2 Direct Assess and Rethink" in html
    for call in LLMCall.objects.filter(pk__in=s2.call_ids):
        assert call.purpose in html
        assert _escaped(call.raw_text) in html
        for message in call.messages:
            assert _escaped(message["content"]) in html
    assert _escaped(SYSTEM) in html
    assert _escaped(s2.reasoning) in html
    assert "rethink" in html  # the step names
    step = BugStep.objects.get(run=run, bug=judgment.patch.bug, strategy="s4")
    assert "Step 1, once per bug" in html
    assert _escaped(LLMCall.objects.get(pk=step.call_id).raw_text) in html
    assert "No model call: a match-based baseline." in html
    assert judgment.patch.get_absolute_url() in html
    assert "diff-table" in html
    assert 'rel="prev"' in html
    assert 'rel="next"' in html


def test_the_verdict_page_shows_the_patch_s_test_evidence_beside_the_verdict(
    lead_client: Client, run: JudgingRun
) -> None:
    judgment = run.judgments.get(patch__key="P-0-b")
    patch = judgment.patch
    patch.tests_pass = False
    patch.tests_status = {
        "FAIL_TO_PASS": {"success": [], "failure": ["test_total_counts_first (app.tests)"]},
        "PASS_TO_PASS": {"success": ["test_empty (app.tests)"], "failure": []},
    }
    patch.save()
    html = lead_client.get(judgment.get_absolute_url()).content.decode()
    verdict, evidence = html.index("The team’s verdict"), html.index('id="test-evidence"')
    assert verdict < evidence < html.index("Candidate diff")
    assert 'data-list="FAIL_TO_PASS" data-passed="0" data-failed="1"' in html
    assert "test_total_counts_first (app.tests)" in html


def test_a_second_run_s_answers_come_from_the_cache(
    lead_client: Client,
    dataset: Dataset,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            run = run_create(actor=None, dataset=dataset, strategies=["s1b"], context="reference")
    judgment = run.judgments.get(patch__key="P-0-a")
    assert judgment.results.get().provider_calls == 0

    html = lead_client.get(judgment.get_absolute_url()).content.decode()
    assert "from cache" in html


# Comparing runs


def test_two_runs_compared_list_the_patches_whose_verdicts_differ(
    lead_client: Client, run: JudgingRun
) -> None:
    other = judged(
        run.dataset,
        {
            "P-0-a": (90.0, "VALID", [100, 80, 90]),
            "P-0-b": (60.0, "VALID", [100, 20, 60]),
            "P-1-a": (30.0, "INVALID", [0, 60, 30]),
            "P-1-b": (20.0, "INVALID", [0, 30, 30]),
            "P-2-a": (55.5, "VALID", [100, 30, 36.5]),
        },
    )
    with CaptureQueriesContext(connection) as captured:
        response = lead_client.get(reverse("judging:run_compare"), {"a": run.pk, "b": other.pk})
    comparison = response.context["comparison"]

    # B's judgment of each row is read in no order: the model's default order would join
    # B's run, patch and dataset in each subquery, for every row (half the page's time).
    paired = [query["sql"] for query in captured if '"b_status"' in query["sql"]]
    assert len(paired) >= 2, [query["sql"][:80] for query in captured]
    for sql in paired:
        assert "judging_judgingrun" not in sql, sql
    assert (comparison.both_valid, comparison.both_invalid) == (2, 0)
    assert (comparison.a_valid_b_invalid, comparison.a_invalid_b_valid) == (1, 1)
    assert (comparison.unfinished, comparison.only_a, comparison.only_b) == (1, 1, 0)
    html = response.content.decode()
    differing = html[html.index('id="differing"') :]
    assert re.findall(r">(P-[^<]+)</a>", differing) == ["P-0-b", "P-1-a"]
    b_judgment = other.judgments.get(patch__key="P-1-a")
    assert reverse("judging:verdict_detail", args=[other.pk, b_judgment.pk]) in differing
    a_judgment = run.judgments.get(patch__key="P-1-a")
    assert reverse("judging:verdict_detail", args=[run.pk, a_judgment.pk]) in differing


def test_runs_that_cannot_be_compared_say_why(lead_client: Client, run: JudgingRun) -> None:
    elsewhere = DatasetFactory(name="Elsewhere")
    PatchFactory(bug=BugFactory(dataset=elsewhere), key="P-0-a")
    foreign = judged(elsewhere, {"P-0-a": (90.0, "VALID", [100, 80, 90])})
    url = reverse("judging:run_compare")

    cases = [
        ({"a": run.pk, "b": run.pk}, SAME_RUN.format(run=run.pk)),
        ({"a": run.pk, "b": 999}, UNKNOWN_RUN.format(run=999)),
        (
            {"a": run.pk, "b": foreign.pk},
            OTHER_DATASETS.format(
                a=run.pk, b=foreign.pk, dataset_a="Runs demo", dataset_b="Elsewhere"
            ),
        ),
        ({"a": "x", "b": run.pk}, "Enter a whole number."),
    ]
    for params, message in cases:
        response = lead_client.get(url, params)
        assert response.status_code == 400, params
        assert message in response.content.decode(), params
    assert lead_client.get(url).status_code == 200


def test_compare_chooses_the_dataset_first_and_offers_only_its_runs(
    lead_client: Client, run: JudgingRun, dataset: Dataset
) -> None:
    """Issue 28: the two newest runs were chosen even from two datasets, then refused."""
    newer = judged(dataset, {"P-0-a": (90.0, "VALID", [100, 80, 90])}, name="newer")
    elsewhere = DatasetFactory(name="Elsewhere", slug="elsewhere")
    PatchFactory(bug=BugFactory(dataset=elsewhere), key="E-0")
    lonely = judged(elsewhere, {"E-0": (90.0, "VALID", [100, 80, 90])}, name="lonely")
    url = reverse("judging:run_compare")

    def offered(html: str, field: str) -> tuple[list[str], list[str]]:
        select = html[html.index(f'id="id_{field}"') :]
        select = select[: select.index("</select>")]
        values = re.findall(r'<option value="([^"]*)"', select)
        return values, re.findall(r'<option value="([^"]*)" selected', select)

    # The newest run is elsewhere's, alone there: that dataset first, and it says why not.
    first = lead_client.get(url)
    html = first.content.decode()
    assert first.status_code == 200
    assert offered(html, "dataset") == (["elsewhere", "runs-demo"], ["elsewhere"])
    assert "Elsewhere has 1 run: comparing needs two." in html
    assert 'id="id_a"' not in html

    # The other dataset: only its runs, the newest as B and the one before as A.
    html = lead_client.get(url, {"dataset": "runs-demo"}).content.decode()
    runs = [str(newer.pk), str(run.pk)]  # newest first
    assert offered(html, "a") == (runs, [str(run.pk)])
    assert offered(html, "b") == (runs, [str(newer.pk)])
    assert str(lonely.pk) not in re.findall(r'<option value="([^"]*)"', html)
    assert offered(html, "dataset")[1] == ["runs-demo"]

    # Comparing two runs shows their dataset and keeps them chosen.
    compared = lead_client.get(url, {"a": run.pk, "b": newer.pk})
    html = compared.content.decode()
    assert compared.status_code == 200
    assert offered(html, "dataset")[1] == ["runs-demo"]
    assert offered(html, "a")[1] == [str(run.pk)]
    assert offered(html, "b")[1] == [str(newer.pk)]


# Escaping


def test_user_text_is_escaped(lead_client: Client, dataset: Dataset) -> None:
    bug = BugFactory(dataset=dataset, key="BUG-<i>", title="<script>alert('title')</script>")
    PatchFactory(bug=bug, key="<script>alert(1)")
    rows = {"<script>alert(1)": (90.0, "VALID", [100, 80, 90])}
    run = judged(dataset, rows, name="<b>bold run</b>")
    other = judged(dataset, {"<script>alert(1)": (10.0, "INVALID", [0, 20, 10])})
    judgment = run.judgments.get()
    pages = [
        reverse("judging:run_list"),
        run.get_absolute_url(),
        judgment.get_absolute_url(),
        reverse("judging:run_compare") + f"?a={run.pk}&b={other.pk}",
    ]
    for url in pages:
        html = lead_client.get(url).content.decode()
        assert "<script>alert" not in html, url
        assert "<b>bold run</b>" not in html, url
    html = lead_client.get(judgment.get_absolute_url()).content.decode()
    assert "&lt;script&gt;alert(1)" in html
    assert "&lt;script&gt;alert(&#x27;title&#x27;)&lt;/script&gt;" in html


def _escaped(text: str) -> str:
    from django.utils.html import escape

    return str(escape(text))


def test_the_run_list_counts_the_verdicts_of_its_page_only(
    lead_client: Client, dataset: Dataset
) -> None:
    """Issue 27 item 9: the list grouped every verdict of every run, for the page and again
    for the paginator's count; now the page's runs are read, then their verdicts counted."""
    one = judged(dataset, {"P-0-a": (90.0, "VALID", [100, 80, 90]), "P-1-a": (None, "", [0, 0, 0])})
    two = judged(dataset, {"P-2-b": (10.0, "INVALID", [0, 20, 10])})
    PatchJudgment.objects.create(run=two, patch=dataset.patches.get(key="P-0-b"))  # pending
    with CaptureQueriesContext(connection) as queries:
        html = lead_client.get(reverse("judging:run_list")).content.decode()
    assert '100% <span class="muted">(2/2)</span>' in html  # done and failed are finished
    assert '50% <span class="muted">(1/2)</span>' in html
    grouped = [q["sql"] for q in queries.captured_queries if "GROUP BY" in q["sql"]]
    assert len(grouped) == 1, grouped
    assert f"IN ({one.pk}, {two.pk})" in grouped[0] or f"IN ({two.pk}, {one.pk})" in grouped[0]
