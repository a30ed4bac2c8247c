"""Changed rubrics re-judge what they touch: the rubric judge's result records the rubric
revision it was judged with; once a newer revision is golden, the run page counts and filters
the stale verdicts, and *Re-judge stale* (or ``judge --resume ID --stale``) asks only the
rubric judge again, keeps the earlier result in the history and lists what flipped.

Runs are judged for real by the offline model (deterministic), on eager tasks.
"""

import io
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from judging.management.commands.judge import STALE_NEEDS_RESUME, STALE_OR_RETRY
from judging.models import (
    BugStep,
    JudgingRun,
    PatchJudgment,
    ReplacedResult,
    StrategyResult,
)
from judging.runs import views as run_views
from judging.runs.services import (
    NOT_GOLDEN,
    NOTHING_STALE,
    RUN_REJUDGE_STALE,
    STILL_ACTIVE,
    RunError,
    run_create,
    run_rejudge_stale,
)
from judging.runs.stale import FLIPS_SHOWN, rejudge_summary, stale_count, stale_results
from judging.runs.verdicts import STALE_NOTE
from rubrics.models import Bug, Rubric, RubricRevision
from rubrics.review.drafting import rubric_draft_write
from sejury_web.audit import audit_events
from sejury_web.llm.models import LLMCall
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD
from tests.judging.factories import bug_with_patches, confirm_revision
from tests.judging.helpers import Judge
from tests.rubrics.factories import PatchFactory

pytestmark = pytest.mark.django_db

Capture = Callable[..., Any]
TEAM = ["rubric", "s1b", "s4"]  # s4 has a bug-level step: it must not be repeated either
THRESHOLD = 70.0
# Only the reference fix meets it (the offline judge checks the file and the quoted code).
LENIENT = {
    "root_cause": "f() returns 1 instead of 2.",
    "requirements": [{"title": "Change `src/app.py`", "detail": "so that `x = 2`"}],
}
# Fails every patch: none of them touches `src/other.py`.
STRICT = {
    "root_cause": "f() returns 1 instead of 2.",
    "requirements": [{"title": "Change `src/other.py`", "detail": "where x is set"}],
}


@pytest.fixture
def reviewers() -> tuple[User, User]:
    """An author and a second reviewer who confirms their work."""
    return tuple(  # type: ignore[return-value]
        user_create(actor=None, username=name, password=PASSWORD, roles=[Role.REVIEWER])
        for name in ("author", "confirmer")
    )


@pytest.fixture
def bug(reviewers: tuple[User, User]) -> Bug:
    """Three patches (one is the reference fix itself), and a rubric drafted by the offline
    model whose golden revision 1 is lenient."""
    bug = bug_with_patches(2)
    PatchFactory(bug=bug, key=f"{bug.key}-ref", diff=bug.reference_patch)
    rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug).pk)
    assert confirm_revision(rubric, LENIENT, reviewers) == 1
    return bug


def judge_calls() -> Counter[str]:
    """The judging model calls made so far, by purpose (every offline answer is logged)."""
    purposes = LLMCall.objects.filter(purpose__startswith="judge.").values_list("purpose")
    return Counter(purpose for (purpose,) in purposes)


def verdicts(run: JudgingRun) -> dict[str, str]:
    return dict(run.judgments.values_list("patch__key", "verdict"))


@pytest.fixture
def rejudge_now(
    eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> Callable[..., JudgingRun]:
    def call(run: JudgingRun, actor: User | None = None) -> JudgingRun:
        with django_capture_on_commit_callbacks(execute=True):
            run = run_rejudge_stale(run=run, actor=actor)
        run.refresh_from_db()
        return run

    return call


def test_a_new_golden_revision_re_judges_only_the_rubric_member_and_lists_the_flips(
    bug: Bug,
    reviewers: tuple[User, User],
    lead: User,
    lead_client: Client,
    judge_now: Judge,
    rejudge_now: Callable[..., JudgingRun],
) -> None:
    rubric = bug.rubrics.get()
    run = judge_now(dataset=bug.dataset, strategies=TEAM, context="golden", threshold=THRESHOLD)
    assert run.status == JudgingRun.Status.FINISHED
    first = {r.pk: r for r in StrategyResult.objects.filter(judgment__run=run)}
    revision_1 = rubric.revisions.get(number=1)
    # The rubric judge recorded the revision it was shown; the others were shown none.
    assert {(r.strategy, r.rubric_revision_id) for r in first.values()} == {
        ("rubric", revision_1.pk),
        ("s1b", None),
        ("s4", None),
    }
    before = verdicts(run)
    assert before[f"{bug.key}-ref"] == "VALID"
    calls_before, steps_before = judge_calls(), list(BugStep.objects.values_list("pk", flat=True))
    assert stale_count(run) == 0

    # A newer revision becomes golden: every rubric verdict of the run is stale.
    assert confirm_revision(rubric, STRICT, reviewers) == 2
    assert stale_count(run) == 3
    assert set(stale_results(run).values_list("strategy", flat=True)) == {"rubric"}

    run = rejudge_now(run, lead)

    assert (run.status, run.generation) == (JudgingRun.Status.FINISHED, 1)
    assert stale_count(run) == 0
    # Only the rubric judge was asked again, once per patch; s1b and s4 (and s4's bug step)
    # were not: their results are the very same rows.
    assert judge_calls() - calls_before == Counter({"judge.rubric": 3})
    assert list(BugStep.objects.values_list("pk", flat=True)) == steps_before
    now = {r.pk: r for r in StrategyResult.objects.filter(judgment__run=run)}
    kept = {pk: r for pk, r in first.items() if r.strategy != "rubric"}
    assert set(kept) <= set(now)
    assert all(now[pk].call_ids == r.call_ids for pk, r in kept.items())
    new_rubric = [r for r in now.values() if r.strategy == "rubric"]
    assert len(new_rubric) == 3
    assert {r.rubric_revision.number for r in new_rubric} == {2}  # type: ignore[union-attr]
    assert {r.verdict for r in new_rubric} == {"INVALID"}
    assert sum(r.provider_calls for r in new_rubric) == 3

    # The earlier results stay, as they were, with the team's verdict of the time.
    history = ReplacedResult.objects.filter(judgment__run=run).select_related("judgment__patch")
    assert len(history) == 3
    for old in history:
        assert old.strategy == "rubric"
        assert old.rubric_revision_id == revision_1.pk
        assert old.team_verdict == before[old.judgment.patch.key]
        assert old.generation == 1
        assert old.reason == ReplacedResult.Reason.RUBRIC_CHANGED
    rubric_first = {r.judgment_id: r for r in first.values() if r.strategy == "rubric"}
    for old in history:
        assert (old.verdict, old.call_ids) == (
            rubric_first[old.judgment_id].verdict,
            rubric_first[old.judgment_id].call_ids,
        )

    # The flips: the team verdicts that changed, with both revisions and why.
    after = verdicts(run)
    flipped = sorted(key for key in after if after[key] != before[key])
    assert flipped  # the reference fix was VALID with the lenient rubric, not with the strict
    summary = rejudge_summary(run)
    assert summary is not None
    assert (summary.rejudged, summary.pending, summary.flipped) == (3, 0, len(flipped))
    assert [f.patch_key for f in summary.flips if f.flipped] == flipped
    for flip in summary.flips:
        assert (flip.old_verdict, flip.new_verdict) == (
            before[flip.patch_key],
            after[flip.patch_key],
        )
        assert (flip.old_revision, flip.new_revision) == (1, 2)
        assert flip.new_member_verdict == "INVALID"
        assert flip.reason == ReplacedResult.Reason.RUBRIC_CHANGED.label

    # The patch's verdict page shows the earlier result beside the current one.
    ref = run.judgments.get(patch__key=f"{bug.key}-ref")
    html = lead_client.get(reverse("judging:verdict_detail", args=[run.pk, ref.pk])).content
    page = html.decode()
    assert "judged with rubric revision 2" in page
    earlier = page[page.index('id="earlier-results"') :]
    assert "<td>r1</td>" in earlier
    assert "A newer revision of the rubric became golden" in earlier

    # The audit trail names who re-judged what.
    event = audit_events(run).get(action=RUN_REJUDGE_STALE)
    assert event.actor == lead
    assert event.detail == {
        "generation": 1,
        "patches": 3,
        "members": ["rubric"],
        "reason": "rubric_changed",
    }


def test_the_run_page_counts_filters_and_re_judges_stale_verdicts(
    bug: Bug,
    reviewers: tuple[User, User],
    lead_client: Client,
    judge_now: Judge,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    run = judge_now(dataset=bug.dataset, strategies=TEAM, context="golden", threshold=THRESHOLD)
    url = run.get_absolute_url()
    html = lead_client.get(url).content.decode()
    assert 'id="run-rejudge"' in html
    assert "None: each rubric verdict was judged with its rubric’s golden revision." in html
    assert 'id="rejudge-stale"' not in html

    # One patch is judged again first with today's golden rubric: the other two are stale.
    rubric = bug.rubrics.get()
    confirm_revision(rubric, STRICT, reviewers)
    fresh = run.judgments.get(patch__key=f"{bug.key}-0")
    fresh.results.filter(strategy="rubric").update(rubric_revision=rubric.golden_revision)

    html = lead_client.get(url).content.decode()
    assert "<b>2</b> patches have a rubric verdict judged with an older revision" in html
    assert 'id="rejudge-stale"' in html
    assert html.count('class="tag stale"') == 2
    assert STALE_NOTE.format(old=1, new=2) in html
    stale_only = lead_client.get(url, {"stale": "1"}).content.decode()
    table = stale_only[stale_only.index('id="run-table"') :]
    assert f">{bug.key}-0</a>" not in table
    assert f">{bug.key}-1</a>" in table
    assert f">{bug.key}-ref</a>" in table
    assert "2 verdicts, with a stale rubric verdict" in table
    assert 'id="stale-only" type="checkbox" name="stale" value="1" checked' in stale_only

    with django_capture_on_commit_callbacks(execute=True):
        # The page the lead is sent to is read before the workers (here: the on-commit
        # callbacks) have judged anything.
        response = lead_client.post(
            reverse("judging:run_rejudge_stale", args=[run.pk]), follow=True
        )
        html = response.content.decode()
        assert escape(run_views.REJUDGING.format(count=2, plural="es", run=run.pk)) in html
        assert "<b>2</b> being judged again" in html
    html = lead_client.get(url).content.decode()
    assert "None: each rubric verdict was judged with its rubric’s golden revision." in html
    assert "Re-judged after the rubric changed" in html
    assert "<b>2</b> patches re-judged" in html
    assert "being judged again" not in html
    flips = html[html.index('class="table compact rejudge-flips"') :]
    flips = flips[: flips.index("</table>")]
    assert f">{bug.key}-ref</a>" in flips
    assert "r1 → r2" in flips
    assert "A newer revision of the rubric became golden" in flips
    assert ReplacedResult.objects.count() == 2

    # Nothing stale is left: the service says so.
    response = lead_client.post(reverse("judging:run_rejudge_stale", args=[run.pk]), follow=True)
    html = response.content.decode()
    assert escape(NOTHING_STALE.format(run=run.pk)) in html
    assert "— lead re-judged the stale rubric verdicts</li>" in html  # the run's history


def test_the_stale_card_reloads_alone_when_the_run_ends(
    bug: Bug, lead_client: Client, judge_now: Judge
) -> None:
    run = judge_now(dataset=bug.dataset, strategies=["rubric"], context="golden")
    response = lead_client.get(
        run.get_absolute_url(),
        headers={"HX-Request": "true", "HX-Target": run_views.REJUDGE_TARGET},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="run-rejudge"')
    assert 'id="run-table"' not in html


def test_runs_of_other_contexts_never_go_stale(
    bug: Bug, reviewers: tuple[User, User], lead_client: Client, judge_now: Judge
) -> None:
    draft = judge_now(dataset=bug.dataset, strategies=["rubric"], context="draft")
    reference = judge_now(dataset=bug.dataset, strategies=["rubric"], context="reference")
    # The draft context records revision 0; the reference context shows no rubric.
    assert set(
        StrategyResult.objects.filter(judgment__run=draft).values_list(
            "rubric_revision__number", flat=True
        )
    ) == {0}
    assert set(
        StrategyResult.objects.filter(judgment__run=reference).values_list(
            "rubric_revision", flat=True
        )
    ) == {None}
    confirm_revision(bug.rubrics.get(), STRICT, reviewers)

    for run in (draft, reference):
        assert stale_count(run) == 0
        with pytest.raises(RunError) as excinfo:
            run_rejudge_stale(run=run, actor=None)
        assert str(excinfo.value) == NOT_GOLDEN.format(
            run=run.pk, context=run.get_context_display()
        )
        html = lead_client.get(run.get_absolute_url(), {"stale": "1"}).content.decode()
        assert 'id="run-rejudge"' not in html
        assert 'id="stale-only"' not in html
        assert "No verdict matches." in html


def test_an_active_run_or_one_with_nothing_stale_is_refused(
    bug: Bug, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        active = run_create(actor=None, dataset=bug.dataset, strategies="rubric", context="golden")
    with pytest.raises(RunError) as excinfo:
        run_rejudge_stale(run=active, actor=None)
    assert str(excinfo.value) == STILL_ACTIVE.format(run=active.pk, status="queued")

    JudgingRun.objects.filter(pk=active.pk).update(status=JudgingRun.Status.FINISHED)
    with pytest.raises(RunError) as excinfo:
        run_rejudge_stale(run=active, actor=None)
    assert str(excinfo.value) == NOTHING_STALE.format(run=active.pk)
    assert not audit_events(active).filter(action=RUN_REJUDGE_STALE).exists()


@pytest.mark.parametrize("who", ["annotator_client", "reviewer_client"])
def test_only_leads_may_re_judge(
    who: str, request: pytest.FixtureRequest, bug: Bug, reviewers: tuple[User, User]
) -> None:
    run = JudgingRun.objects.create(
        dataset=bug.dataset,
        strategies=["rubric"],
        context="golden",
        provider="offline",
        model="heuristic-v1",
        status=JudgingRun.Status.FINISHED,
    )
    client: Client = request.getfixturevalue(who)
    url = reverse("judging:run_rejudge_stale", args=[run.pk])
    assert client.post(url).status_code == 403
    assert run.generation == JudgingRun.objects.get(pk=run.pk).generation == 0


def test_re_judging_takes_a_post(lead_client: Client, bug: Bug) -> None:
    run = JudgingRun.objects.create(
        dataset=bug.dataset,
        strategies=["rubric"],
        context="golden",
        provider="offline",
        model="heuristic-v1",
    )
    assert lead_client.get(reverse("judging:run_rejudge_stale", args=[run.pk])).status_code == 405


# From a script


def judge(*args: str) -> str:
    out = io.StringIO()
    call_command("judge", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_judge_resume_stale_re_judges_and_lists_the_flips(
    bug: Bug,
    reviewers: tuple[User, User],
    judge_now: Judge,
) -> None:
    run = judge_now(dataset=bug.dataset, strategies=TEAM, context="golden", threshold=THRESHOLD)
    with pytest.raises(CommandError) as excinfo:
        judge("--resume", str(run.pk), "--stale")
    assert str(excinfo.value) == NOTHING_STALE.format(run=run.pk)

    confirm_revision(bug.rubrics.get(), STRICT, reviewers)
    calls = judge_calls()
    out = judge("--resume", str(run.pk), "--stale", "--wait")

    assert out.startswith(f"Run {run.pk}: the stale rubric verdicts on 3 patches queued again")
    assert "3/3 judged, 0 failed" in out
    assert judge_calls() - calls == Counter({"judge.rubric": 3})
    summary = rejudge_summary(JudgingRun.objects.get(pk=run.pk))
    assert summary is not None
    assert (summary.flipped, summary.member_flipped) == (1, 1)
    assert "Re-judged 3: 1 team verdict and 1 member verdict flipped." in out
    assert (
        f"  {bug.key}-ref: team VALID → INVALID, rubric VALID → INVALID "
        "(rubric r1 → r2: a newer revision of the rubric became golden)"
    ) in out
    assert audit_events(run).get(action=RUN_REJUDGE_STALE).actor is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--dataset", "x", "--team", "rubric", "--context", "golden", "--stale"],
            STALE_NEEDS_RESUME,
        ),
        (["--resume", "{run}", "--stale", "--retry-failed"], STALE_OR_RETRY),
    ],
)
def test_judge_stale_errors(bug: Bug, argv: list[str], message: str) -> None:
    run = JudgingRun.objects.create(
        dataset=bug.dataset,
        strategies=["rubric"],
        context="golden",
        provider="offline",
        model="heuristic-v1",
        status=JudgingRun.Status.FINISHED,
    )
    with pytest.raises(CommandError) as excinfo:
        judge(*[arg.format(run=run.pk) for arg in argv])
    assert str(excinfo.value) == message


# Queries


def written(bug: Bug, patches: int, golden: RubricRevision, old: RubricRevision) -> JudgingRun:
    """A finished golden run written directly over ``patches`` new patches of ``bug``: each
    judged by the rubric judge with ``old``, once before with an older result replaced."""
    run = JudgingRun.objects.create(
        dataset=bug.dataset,
        strategies=["rubric", "s1b"],
        context="golden",
        provider="offline",
        model="heuristic-v1",
        status=JudgingRun.Status.FINISHED,
        generation=1,
    )
    for n in range(patches):
        patch = PatchFactory(bug=bug, key=f"{bug.key}-q{run.pk}-{n:03}")
        judgment = PatchJudgment.objects.create(
            run=run, patch=patch, status="done", score=50.0, verdict="VALID", spread=0.0
        )
        for name in run.strategies:
            StrategyResult.objects.create(
                judgment=judgment,
                strategy=name,
                status="done",
                score=100.0 if n % 2 else 0.0,
                verdict=("VALID" if n % 2 else "INVALID") if name == "rubric" else "",
                prompt_version="test",
                rubric_revision=old if name == "rubric" else None,
            )
        ReplacedResult.objects.create(
            judgment=judgment,
            strategy="rubric",
            reason=ReplacedResult.Reason.RUBRIC_CHANGED,
            generation=1,
            status="done",
            score=100.0,
            verdict="VALID",
            prompt_version="test",
            rubric_revision=golden,
            judged_at=judgment.run.created_at,
            team_status="done",
            team_score=100.0,
            team_verdict="INVALID",
        )
    return run


def test_the_stale_count_filter_and_flips_cost_the_same_queries_at_any_size(
    bug: Bug,
    reviewers: tuple[User, User],
    lead_client: Client,
    django_assert_max_num_queries: Capture,
) -> None:
    rubric = bug.rubrics.get()
    old = rubric.revisions.get(number=1)
    confirm_revision(rubric, STRICT, reviewers)
    golden = rubric.revisions.get(number=2)
    small = written(bug, 2, golden, old)
    large = written(bug, FLIPS_SHOWN + 70, golden, old)
    lead_client.get(small.get_absolute_url())  # the session and roles, once

    for run in (small, large):
        assert stale_count(run) == run.judgments.count()
        summary = rejudge_summary(run)
        assert summary is not None
        assert summary.flipped == run.judgments.count()
        for params in ({}, {"stale": "1", "sort": "-rubric"}):
            # 15 as for any finished run, then what replaced results spent, the stale count,
            # and the flips (their counts, and the first ones).
            with django_assert_max_num_queries(19):
                response = lead_client.get(run.get_absolute_url(), params)
            assert response.status_code == 200
        html = response.content.decode()
        assert html.count('class="tag stale"') == min(50, run.judgments.count())
        if run is large:
            assert "and 70 more." in html
