"""*Test this judge*: a written judge's version measured on a dataset's ladders and labelled
patches, beside the current team and the baselines; the figures checked against scipy and
scikit-learn on the verdicts the runs stored; the trust gate (never without a measured test).
"""

import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from scipy.stats import kendalltau
from sklearn.metrics import accuracy_score, cohen_kappa_score, matthews_corrcoef

from judging import tasks
from judging.judges.measuring import (
    ABOVE,
    BELOW,
    JUDGE,
    LADDER,
    OVERLAPS,
    POLL_SECONDS,
    TEAM,
    judge_test_advance,
    kappa_position,
)
from judging.judges.services import judge_define, judge_version_status_set
from judging.judges.testing import (
    BASELINE_NAMES,
    DEFAULT_TEAM,
    JudgeTestError,
    current_team,
    judge_test_start,
)
from judging.models import Context, JudgeTest, JudgeVersion, JudgingRun, Label, PatchJudgment
from judging.refine.scores import TIER
from judging.reports.selectors import default_runs
from judging.runs.services import run_cancel
from rubrics.ladders.services import ladders_build
from rubrics.models import Dataset
from tests.judging.factories import AnnotationFactory, UserFactory, finished_run, make_golden
from tests.judging.refine.test_refine import FIX
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory
from tests.workers import running_worker

pytestmark = pytest.mark.django_db

SCORE_JUDGE: dict[str, Any] = {
    "name": "closeness",
    "title": "Close to the reference",
    "template": "Score the patch.\n\n{{ bug }}\n\n{{ reference_fix }}\n\n{{ candidate_patch }}",
    "kind": "score",
}
OTHER = FIX.replace("return 10", "return 11").replace("== 0", "<= 0")


@pytest.fixture
def labelled() -> Dataset:
    """Four bugs, each with the reference fix and a different patch, each labelled twice
    (the reference VALID, the other INVALID but one of them VALID), ladders built."""
    dataset = DatasetFactory(name="Calc", slug="calc")
    ann1, ann2 = UserFactory(username="ann1"), UserFactory(username="ann2")
    for number in range(1, 5):
        bug = BugFactory(dataset=dataset, key=f"Calc-{number}", reference_patch=FIX)
        same = PatchFactory(bug=bug, key=f"Calc-{number}-same", diff=FIX)
        other = PatchFactory(bug=bug, key=f"Calc-{number}-other", diff=OTHER)
        for annotator in (ann1, ann2):
            AnnotationFactory(patch=same, annotator=annotator, label=Label.VALID)
            label = Label.VALID if number == 1 else Label.INVALID
            AnnotationFactory(patch=other, annotator=annotator, label=label)
    ladders_build(dataset=dataset, actor=None)
    # The team the dataset judges with now: its newest run's.
    finished_run(dataset, {}, team=["s1b", "s3"], context=Context.REFERENCE)
    return dataset


@pytest.fixture
def tested(
    labelled: Dataset, eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> JudgeTest:
    version, _ = judge_define(data=SCORE_JUDGE, actor=None)
    with django_capture_on_commit_callbacks(execute=True):
        test = judge_test_start(version=version, dataset=labelled, actor=None, provider="offline")
    test.refresh_from_db()
    return test


def _verdicts(run_id: int) -> dict[int, str]:
    return dict(
        PatchJudgment.objects.filter(run_id=run_id, status=PatchJudgment.Status.DONE).values_list(
            "patch_id", "verdict"
        )
    )


def test_a_test_measures_the_ladders_and_the_labelled_patches_beside_the_team(
    tested: JudgeTest, labelled: Dataset
) -> None:
    assert tested.status == JudgeTest.Status.MEASURED, tested.error
    assert tested.version.status == JudgeVersion.Status.TESTED
    assert set(tested.runs) == {LADDER, JUDGE, TEAM, *BASELINE_NAMES}
    assert tested.team == ["s1b", "s3"]
    runs = JudgingRun.objects.in_bulk(tested.runs.values())
    assert runs[tested.runs[TEAM]].strategies == ["s1b", "s3"]
    assert runs[tested.runs[JUDGE]].strategies == ["closeness@1"]
    assert runs[tested.runs[LADDER]].dataset.derived_from_id == labelled.pk
    # The labelled-patch runs are the test's: not the dataset's runs a report defaults to.
    assert {runs[tested.runs[role]].kind for role in (JUDGE, TEAM, *BASELINE_NAMES)} == {"test"}
    assert runs[tested.runs[LADDER]].kind == "run"  # a configuration of the ladders' page
    assert [run.kind for run in default_runs(labelled)] == ["run"]  # the fixture's own run
    figures = tested.figures
    assert figures["offline"] is True

    # The labelled patches: every run on the same 8 patches, its figures those of sklearn on
    # the verdicts it stored against the consensus.
    consensus = {
        patch.pk: Label.VALID
        if patch.key.endswith("same") or patch.key == "Calc-1-other"
        else "INVALID"
        for patch in labelled.patches.all()
    }
    columns = figures["labelled"]["columns"]
    for role in (JUDGE, TEAM, *BASELINE_NAMES):
        verdicts = _verdicts(tested.runs[role])
        assert set(verdicts) == set(consensus), role
        ids = sorted(consensus)
        truth = [consensus[i] == Label.VALID for i in ids]
        said = [verdicts[i] == Label.VALID for i in ids]
        column = columns[role]
        assert column["n"] == 8
        assert column["accuracy"]["value"] == pytest.approx(accuracy_score(truth, said))
        if len(set(said)) > 1:
            assert column["kappa"]["value"] == pytest.approx(cohen_kappa_score(truth, said))
            assert column["mcc"]["value"] == pytest.approx(matthews_corrcoef(truth, said))
        # Gwet's AC1 of two raters by hand: pe = 2q(1-q), q the mean VALID share of both.
        q = (np.mean(truth) + np.mean(said)) / 2
        pa = accuracy_score(truth, said)
        pe = 2 * q * (1 - q)
        assert column["ac1"]["value"] == pytest.approx((pa - pe) / (1 - pe))
        lo, hi = column["kappa"]["lo"], column["kappa"]["hi"]
        if lo is not None:
            assert lo <= column["kappa"]["value"] <= hi
    assert figures["labelled"]["kappa_vs_team"] in (ABOVE, OVERLAPS, BELOW)
    assert set(figures["labelled"]["baselines"]) == {"majority", "random"}

    # The ladders: alignment and τ-b the mean over bugs, τ-b each bug's scipy τ-b against the
    # expected tiers (a bug whose levels tie is 0).
    ladder = figures["ladder"]
    scores: dict[str, dict[int, float]] = defaultdict(dict)
    for key, source, score in PatchJudgment.objects.filter(
        run_id=tested.runs[LADDER], status=PatchJudgment.Status.DONE
    ).values_list("patch__bug__key", "patch__source", "score"):
        assert score is not None
        scores[key][int(source[-1])] = score
    taus, alignments = [], []
    for levels in scores.values():
        ordered = sorted(levels)
        tau = kendalltau([-TIER[lv] for lv in ordered], [levels[lv] for lv in ordered]).statistic
        taus.append(0.0 if np.isnan(tau) else tau)
        pairs = [(u, v) for u in ordered for v in ordered if TIER[u] < TIER[v]]
        alignments.append(
            np.mean(
                [
                    1.0 if levels[u] > levels[v] else 0.5 if levels[u] == levels[v] else 0.0
                    for u, v in pairs
                ]
            )
        )
    assert ladder["bugs"] == 4
    assert ladder["tau_b"]["value"] == pytest.approx(np.mean(taus))
    assert ladder["alignment"]["value"] == pytest.approx(np.mean(alignments))
    assert ladder["tau_b"]["lo"] <= ladder["tau_b"]["value"] <= ladder["tau_b"]["hi"]


def test_a_version_is_trusted_only_once_a_test_measured_it(
    labelled: Dataset, eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    version, _ = judge_define(data=SCORE_JUDGE, actor=None)
    with pytest.raises(ValueError, match="untested"):
        judge_version_status_set(version=version, status="trusted", actor=None)
    # Marked tested by hand, but no test measured it: still refused.
    judge_version_status_set(version=version, status="tested", actor=None)
    with pytest.raises(ValueError, match="not measured yet"):
        judge_version_status_set(version=version, status="trusted", actor=None)
    # A test still running (its runs queued, no worker) does not count either.
    test = judge_test_start(version=version, dataset=labelled, actor=None, provider="offline")
    assert test.status == JudgeTest.Status.RUNNING
    with pytest.raises(ValueError, match="not measured yet"):
        judge_version_status_set(version=version, status="trusted", actor=None)
    JudgeTest.objects.filter(pk=test.pk).update(status=JudgeTest.Status.FAILED)
    with pytest.raises(ValueError, match="not measured yet"):
        judge_version_status_set(version=version, status="trusted", actor=None)
    JudgeTest.objects.filter(pk=test.pk).update(status=JudgeTest.Status.MEASURED)
    judge_version_status_set(version=version, status="trusted", actor=None)
    version.refresh_from_db()
    assert version.status == JudgeVersion.Status.TRUSTED


def test_a_test_needs_ladders_and_labels(labelled: Dataset) -> None:
    version, _ = judge_define(data=SCORE_JUDGE, actor=None)
    bare = DatasetFactory(name="Bare", slug="bare")
    BugFactory(dataset=bare, key="Bare-1", reference_patch=FIX)
    with pytest.raises(JudgeTestError, match="no quality ladders"):
        judge_test_start(version=version, dataset=bare, actor=None, provider="offline")
    ladders_build(dataset=bare, actor=None)
    with pytest.raises(JudgeTestError, match="no patch of Bare has a human consensus"):
        judge_test_start(version=version, dataset=bare, actor=None, provider="offline")
    ladder = Dataset.objects.get(derived_from=labelled)
    with pytest.raises(JudgeTestError, match="derived dataset"):
        judge_test_start(version=version, dataset=ladder, actor=None, provider="offline")
    assert not JudgeTest.objects.exists()
    assert not JudgingRun.objects.filter(name__startswith="Test of").exists()


def test_kappa_intervals_above_overlapping_below() -> None:
    team = {"value": 0.5, "lo": 0.4, "hi": 0.6}
    assert kappa_position({"lo": 0.61, "hi": 0.9}, team) == ABOVE
    assert kappa_position({"lo": 0.1, "hi": 0.39}, team) == BELOW
    assert kappa_position({"lo": 0.5, "hi": 0.7}, team) == OVERLAPS
    assert kappa_position({"lo": None, "hi": None}, team) is None
    assert kappa_position(None, team) is None


def _wait_measured(test: JudgeTest, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        test.refresh_from_db()
        if test.status != JudgeTest.Status.RUNNING:
            return
        time.sleep(0.3)
    raise AssertionError(f"test {test.pk} still running; worker log:\n{log.read_text()[-3000:]}")


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_worker_measures_a_test_and_a_starting_worker_resumes_one_left_running(
    labelled: Dataset, tmp_path: Path
) -> None:
    version, _ = judge_define(data=SCORE_JUDGE, actor=None)
    first = tmp_path / "worker.log"
    with running_worker(first):
        test = judge_test_start(version=version, dataset=labelled, actor=None, provider="offline")
        _wait_measured(test, first)
    assert test.status == JudgeTest.Status.MEASURED, test.error
    measured = test.figures
    assert measured["labelled"]["columns"][JUDGE]["n"] == 8
    version.refresh_from_db()
    assert version.status == JudgeVersion.Status.TESTED
    # A worker killed after the runs ended, before it measured: the row says running and no
    # message is left. The next worker to start measures it, to the same figures.
    JudgeTest.objects.filter(pk=test.pk).update(
        status=JudgeTest.Status.RUNNING, figures={}, measured_at=None
    )
    second = tmp_path / "worker2.log"
    with running_worker(second):
        _wait_measured(test, second)
    assert test.status == JudgeTest.Status.MEASURED
    assert f"resumed judge tests [{test.pk}]" in second.read_text()
    assert test.figures["labelled"] == measured["labelled"]
    assert test.figures["ladder"] == measured["ladder"]


# -- the card on a judge's page, its views and roles --------------------------------------


def _urls(version: JudgeVersion) -> dict[str, str]:
    args = [version.judge.name, version.number]
    return {
        "card": reverse("judging:judge_test_card", args=args),
        "start": reverse("judging:judge_test_start", args=args),
        "trust": reverse("judging:judge_trust", args=args),
        "page": reverse("judging:judge_detail", args=[version.judge.name]),
    }


@pytest.mark.parametrize("client_name", ["annotator_client", "reviewer_client"])
def test_only_leads_test_or_trust_a_judge(
    client_name: str, request: pytest.FixtureRequest, labelled: Dataset
) -> None:
    client: Client = request.getfixturevalue(client_name)
    version, _ = judge_define(data=SCORE_JUDGE, actor=None)
    urls = _urls(version)
    assert client.get(urls["card"]).status_code == 403
    assert client.get(urls["page"]).status_code == 403
    assert client.post(urls["start"], {"dataset": labelled.slug}).status_code == 403
    JudgeTest.objects.create(version=version, dataset=labelled, status=JudgeTest.Status.MEASURED)
    JudgeVersion.objects.filter(pk=version.pk).update(status=JudgeVersion.Status.TESTED)
    assert client.post(urls["trust"]).status_code == 403
    version.refresh_from_db()
    assert version.status == JudgeVersion.Status.TESTED
    assert JudgeTest.objects.count() == 1


def test_a_lead_starts_a_test_watches_it_run_and_is_refused_trust_until_measured(
    lead_client: Client, labelled: Dataset
) -> None:
    version, _ = judge_define(data=SCORE_JUDGE, actor=None)
    urls = _urls(version)
    page = lead_client.get(urls["page"]).content.decode()
    assert 'id="test-card"' in page
    assert 'id="test-form"' in page
    assert f'<option value="{labelled.slug}"' in page
    assert 'id="trust-form"' not in page  # untested: no Mark trusted
    # Trust asked anyway: refused, with why.
    answer = lead_client.post(urls["trust"], HTTP_HX_REQUEST="true").content.decode()
    assert "untested: a version is trusted only once it is tested" in answer
    # A dataset without ladders is refused with why, in the card.
    bare = DatasetFactory(name="Bare", slug="bare")
    answer = lead_client.post(
        urls["start"], {"dataset": bare.slug}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "Bare has no quality ladders yet" in answer
    # Text no slug can be is refused before any query (PostgreSQL cannot compare a NUL).
    with CaptureQueriesContext(connection) as queries:
        answer = lead_client.post(
            urls["start"], {"dataset": "\u202e漢字\x00x"}, HTTP_HX_REQUEST="true"
        ).content.decode()
    assert "Choose a dataset to test the judge on." in answer
    assert not [q for q in queries.captured_queries if "漢字" in str(q["sql"])], (
        queries.captured_queries
    )
    # Started (no worker here): the card says it runs and polls itself.
    answer = lead_client.post(
        urls["start"], {"dataset": labelled.slug}, HTTP_HX_REQUEST="true"
    ).content.decode()
    test = JudgeTest.objects.get()
    assert test.status == JudgeTest.Status.RUNNING
    assert test.created_by is not None
    assert f'hx-get="{urls["card"]}"' in answer
    assert 'id="test-progress"' in answer
    assert "0 of 6 runs ended" in answer
    assert 'id="test-form"' not in answer  # one test at a time
    version.refresh_from_db()
    assert version.status == JudgeVersion.Status.UNTESTED
    # Marked tested by hand is not enough either.
    JudgeVersion.objects.filter(pk=version.pk).update(status=JudgeVersion.Status.TESTED)
    lead_client.post(urls["trust"])
    version.refresh_from_db()
    assert version.status == JudgeVersion.Status.TESTED


def test_the_card_shows_both_measurements_and_the_lead_trusts_the_version(
    tested: JudgeTest, lead_client: Client
) -> None:
    urls = _urls(tested.version)
    card = lead_client.get(urls["card"]).content.decode()
    assert "hx-get" not in card  # measured: no more polling
    assert 'id="test-ladder"' in card
    assert "Kendall’s τ-b" in card
    assert "Measured with the offline heuristic, not an LLM" in card
    for row in ("judge", "team", "bleu", "chrf", "edit", "majority", "random"):
        assert f'id="test-row-{row}"' in card, row
    kappa = tested.figures["labelled"]["columns"][JUDGE]["kappa"]
    assert f'data-value="{kappa["value"]:.6f}"' in card
    assert 'id="test-kappa"' in card
    assert "closeness@1</code>" in card
    assert "s1b,s3" in card
    assert 'id="trust-form"' in card
    response = lead_client.post(urls["trust"])
    assert response.status_code == 302
    tested.version.refresh_from_db()
    assert tested.version.status == JudgeVersion.Status.TRUSTED
    page = lead_client.get(urls["page"]).content.decode()
    assert "is trusted" in page
    assert 'id="trust-form"' not in page


def test_the_current_team_is_the_calibration_s_else_the_newest_run_s_else_the_default(
    labelled: Dataset,
) -> None:
    assert current_team(labelled).team == ("s1b", "s3")  # the fixture's run
    bare = DatasetFactory(name="Bare", slug="bare")
    bug = BugFactory(dataset=bare, key="Bare-1", reference_patch=FIX)
    assert (current_team(bare).team, current_team(bare).context) == (("s1b", "s3"), "reference")
    make_golden(bug)  # the rubric judge has a rubric to read now
    assert (current_team(bare).team, current_team(bare).context) == (DEFAULT_TEAM, "golden")


def test_a_test_whose_run_is_cancelled_or_whose_task_raises_fails_saying_why(
    labelled: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    version, _ = judge_define(data=SCORE_JUDGE, actor=None)
    test = judge_test_start(version=version, dataset=labelled, actor=None, provider="offline")
    assert judge_test_advance(test_id=test.pk) == POLL_SECONDS  # its runs are queued: later
    run_cancel(run=JudgingRun.objects.get(pk=test.runs["bleu"]), actor=None)
    assert judge_test_advance(test_id=test.pk) is None
    test.refresh_from_db()
    assert test.status == JudgeTest.Status.FAILED
    assert test.error == f"run {test.runs['bleu']} (bleu) was cancelled before it ended"
    version.refresh_from_db()
    assert version.status == JudgeVersion.Status.UNTESTED

    def broken(*, test_id: int) -> None:
        raise RuntimeError("the disk is full")

    again = JudgeTest.objects.create(version=version, dataset=labelled)
    monkeypatch.setattr(tasks, "judge_test_advance", broken)
    tasks.judge_test_advance_task.apply(args=(again.pk,))
    again.refresh_from_db()
    assert again.status == JudgeTest.Status.FAILED
    assert again.error == "RuntimeError: the disk is full"
