"""The streamlined rubric review (paper 004 §8): judging a bug's candidates with the rubric as
it stands and with its draft, on the offline provider, through the service, the selector and
the editor's panel."""

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from judging.models import Context, JudgingRun, PatchJudgment, StrategyResult
from judging.runs.preview import (
    NO_DRAFT,
    NO_PATCHES,
    PreviewError,
    RubricPreview,
    rubric_preview_get,
    rubric_preview_start,
)
from rubrics.models import Patch, Rubric, RubricRevision
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.services import rubric_revise
from sejury_web.llm import OFFLINE_MARKER
from tests.rubrics.factories import BugFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
# A second file the reference fix does not touch: a requirement naming it fails a patch that
# leaves it alone (the offline judge checks that every path a requirement names is changed).
OTHER_FILE = "src/other.py"

Capture = Callable[..., Any]


@pytest.fixture
def rubric(db: None) -> Rubric:
    """A bug with three candidates and its templated rubric, drafted by the offline model.

    With the draft, ``same-fix`` and ``two-files`` pass (they make the reference's change)
    and ``tests-only`` fails.
    """
    bug = BugFactory()
    PatchFactory(bug=bug, key="same-fix", diff=make_diff())
    two_files = make_diff() + make_diff(path=OTHER_FILE, old="y = 1", new="y = 3")
    PatchFactory(bug=bug, key="two-files", diff=two_files)
    PatchFactory(bug=bug, key="tests-only", diff=make_diff(path="tests/test_app.py"))
    drafted = Rubric.objects.create(bug=bug, variant=Rubric.Variant.TEMPLATED)
    return rubric_draft_write(rubric_id=drafted.pk)


def revise(rubric: Rubric, user: User, **requirement: str) -> RubricRevision:
    """Save the next revision with requirement 1 changed by ``requirement``."""
    rubric.refresh_from_db()
    structure = dict(rubric.revisions.get(number=rubric.current_number).structure)
    structure["requirements"] = [
        {**structure["requirements"][0], **requirement},
        *structure["requirements"][1:],
    ]
    revision = rubric_revise(
        rubric=rubric,
        base_number=rubric.current_number,
        structure=structure,
        justification="the fix must also update the other module",
        actor=user,
    )
    rubric.refresh_from_db()
    return revision


def ask_for_other_file(rubric: Rubric, user: User) -> RubricRevision:
    """Revision 1: requirement 1 now also asks for a change to ``OTHER_FILE``."""
    detail = rubric.revisions.get(number=0).structure["requirements"][0]["detail"]
    return revise(rubric, user, detail=f"{detail} Also update `{OTHER_FILE}`.")


def start(rubric: Rubric, user: User, capture: Capture) -> RubricPreview:
    """Start a preview, judge it at once (eager Celery), and read it back."""
    with capture(execute=True):
        rubric_preview_start(rubric=rubric, actor=user)
    rubric.refresh_from_db()
    preview = rubric_preview_get(rubric=rubric)
    assert preview is not None
    return preview


def preview_url(rubric: Rubric) -> str:
    return reverse("judging:rubric_preview", kwargs={"rubric_id": rubric.pk})


def row_html(html: str, patch: Patch) -> str:
    """The comparison table's row of ``patch``."""
    match = re.search(rf'<tr id="preview-patch-{patch.pk}".*?</tr>', html, re.DOTALL)
    assert match, f"no row for {patch.key}"
    return match.group(0)


# -- the service and the selector --------------------------------------------------------------


def test_an_edited_requirement_flips_exactly_the_patch_it_now_fails(
    rubric: Rubric, reviewer: User, eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> None:
    ask_for_other_file(rubric, reviewer)

    preview = start(rubric, reviewer, django_capture_on_commit_callbacks)

    assert (preview.draft_number, preview.current_number) == (0, 1)
    assert not preview.stale
    assert not preview.is_active
    assert preview.is_offline
    assert preview.draft_progress is not None
    assert preview.draft_progress.done == preview.current_progress.done == 3
    rows = {row.patch.key: row for row in preview.rows}
    verdicts = {key: (row.draft.verdict, row.current.verdict) for key, row in rows.items()}
    assert verdicts == {
        "same-fix": ("VALID", "INVALID"),
        "two-files": ("VALID", "VALID"),
        "tests-only": ("INVALID", "INVALID"),
    }
    assert [row.patch.key for row in preview.flipped] == ["same-fix"]
    assert preview.rows[0].patch.key == "same-fix"  # flipped first
    flipped = rows["same-fix"]
    assert flipped.flip == "VALID → INVALID"
    assert flipped.draft.failed_requirements == ()
    [failed] = flipped.current.failed_requirements
    current_title = rubric.revisions.get(number=1).structure["requirements"][0]["title"]
    assert (failed.index, failed.title) == (1, current_title)
    assert OTHER_FILE in failed.reason
    assert flipped.current.justification.startswith(f"[{OFFLINE_MARKER}] INVALID")
    assert rows["two-files"].flip == rows["tests-only"].flip == ""
    assert rows["tests-only"].draft.error == ""


def test_both_runs_are_pinned_previews_of_the_rubric_judge(
    rubric: Rubric, reviewer: User, eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> None:
    ask_for_other_file(rubric, reviewer)

    preview = start(rubric, reviewer, django_capture_on_commit_callbacks)

    runs = [preview.draft_run, preview.current_run]
    assert [run.rubric_revision.number for run in runs] == [0, 1]
    for run in runs:
        assert run.kind == JudgingRun.Kind.PREVIEW
        assert run.context == Context.REVISION
        assert run.strategies == ["rubric"]
        assert run.created_by == reviewer
        assert run.status == JudgingRun.Status.FINISHED
        assert run.judgments.count() == 3


def test_the_draft_run_is_reused_and_a_newer_revision_makes_the_preview_stale(
    rubric: Rubric, reviewer: User, eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> None:
    ask_for_other_file(rubric, reviewer)
    first = start(rubric, reviewer, django_capture_on_commit_callbacks)
    assert JudgingRun.objects.count() == 2

    revise(rubric, reviewer, title="Change `f()` and the other module")
    stale = rubric_preview_get(rubric=rubric)
    assert stale is not None
    assert stale.stale
    assert stale.current_number == 1

    second = start(rubric, reviewer, django_capture_on_commit_callbacks)

    assert JudgingRun.objects.count() == 3  # one new run: revision 2's
    assert second.draft_run == first.draft_run
    assert second.current_run != first.current_run
    assert (second.current_number, second.stale) == (2, False)
    assert [row.patch.key for row in second.flipped] == ["same-fix"]


def test_a_draft_run_with_a_failed_patch_or_other_candidates_is_judged_again(
    rubric: Rubric, reviewer: User, eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> None:
    ask_for_other_file(rubric, reviewer)
    first = start(rubric, reviewer, django_capture_on_commit_callbacks)
    assert first.draft_run is not None
    first.draft_run.judgments.filter(patch__key="tests-only").update(
        status=PatchJudgment.Status.FAILED, verdict="", error="the model timed out"
    )

    second = start(rubric, reviewer, django_capture_on_commit_callbacks)
    assert second.draft_run not in (None, first.draft_run)

    PatchFactory(bug=rubric.bug, key="late-arrival")
    third = start(rubric, reviewer, django_capture_on_commit_callbacks)

    assert third.draft_run not in (None, second.draft_run)
    assert len(third.rows) == 4
    assert JudgingRun.objects.count() == 6


def test_a_preview_of_the_draft_itself_is_one_run_with_nothing_flipped(
    rubric: Rubric, reviewer: User, eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> None:
    preview = start(rubric, reviewer, django_capture_on_commit_callbacks)
    again = start(rubric, reviewer, django_capture_on_commit_callbacks)

    assert preview.same_revision
    assert preview.draft_run == preview.current_run == again.current_run
    assert JudgingRun.objects.count() == 1  # the draft never changes: judged once
    assert preview.flipped == []
    assert {row.current.verdict for row in preview.rows} == {"VALID", "INVALID"}


def test_a_preview_needs_a_draft_and_candidates(reviewer: User) -> None:
    undrafted = Rubric.objects.create(bug=BugFactory(), variant=Rubric.Variant.TEMPLATED)
    with pytest.raises(PreviewError, match=re.escape(NO_DRAFT)):
        rubric_preview_start(rubric=undrafted, actor=reviewer)

    bug = BugFactory()
    drafted = rubric_draft_write(
        rubric_id=Rubric.objects.create(bug=bug, variant=Rubric.Variant.TEMPLATED).pk
    )
    with pytest.raises(PreviewError, match=re.escape(NO_PATCHES.format(bug=bug.key))):
        rubric_preview_start(rubric=drafted, actor=reviewer)
    assert not JudgingRun.objects.exists()
    assert rubric_preview_get(rubric=drafted) is None


# -- the panel --------------------------------------------------------------------------------


def test_the_panel_shows_the_flip_and_why(
    rubric: Rubric,
    reviewer: User,
    reviewer_client: Client,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    ask_for_other_file(rubric, reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        started = reviewer_client.post(preview_url(rubric), **HX)
    assert started.status_code == 200
    assert 'hx-trigger="every 1s"' in started.content.decode()  # queued when it answered

    response = reviewer_client.get(preview_url(rubric), **HX)

    html = response.content.decode()
    assert "<html" not in html  # only the panel
    assert 'id="judge-preview"' in html
    assert "every 1s" not in html  # both runs ended: no polling
    assert OFFLINE_MARKER in html
    assert "1 of 3</strong> verdicts flipped" in html
    patches = {patch.key: patch for patch in rubric.bug.patches.all()}
    flipped = row_html(html, patches["same-fix"])
    assert 'class="flipped"' in flipped
    assert "flipped: VALID → INVALID" in flipped
    assert "Requirement 1" in flipped
    assert f"does not touch `{OTHER_FILE}`" in flipped
    assert patches["same-fix"].get_absolute_url() in flipped
    for key in ("two-files", "tests-only"):
        assert "flipped" not in row_html(html, patches[key])
    assert html.count("flip-marker") == 1
    assert "Judge again with revision 1" in html
    assert reverse("judging:run_detail", args=[JudgingRun.objects.first().pk]) not in html


def test_the_panel_polls_while_the_runs_go_then_stops(
    rubric: Rubric, reviewer: User, reviewer_client: Client
) -> None:
    ask_for_other_file(rubric, reviewer)
    rubric_preview_start(rubric=rubric, actor=reviewer)  # queued: no worker, no commit

    html = reviewer_client.get(preview_url(rubric), **HX).content.decode()
    assert 'hx-trigger="every 1s"' in html
    assert f'hx-get="{preview_url(rubric)}"' in html
    assert "<progress" in html
    assert f'href="{preview_url(rubric)}"' in html  # the refresh link without htmx
    assert "preview-table" not in html

    JudgingRun.objects.update(status=JudgingRun.Status.CANCELLED)
    html = reviewer_client.get(preview_url(rubric), **HX).content.decode()
    assert "every 1s" not in html
    assert "<progress" not in html


def test_the_empty_panel_offers_to_judge_and_a_bug_without_patches_says_so(
    rubric: Rubric, reviewer_client: Client
) -> None:
    html = reviewer_client.get(preview_url(rubric), **HX).content.decode()
    assert "Judge the candidates with this rubric" in html
    assert f'hx-post="{preview_url(rubric)}"' in html
    assert "3 candidate patches" in html

    bug = BugFactory()
    lonely = rubric_draft_write(
        rubric_id=Rubric.objects.create(bug=bug, variant=Rubric.Variant.TEMPLATED).pk
    )
    html = reviewer_client.get(preview_url(lonely), **HX).content.decode()
    assert "This bug has no candidate patch to judge." in html
    assert "Judge the candidates with this rubric</button>" not in html

    response = reviewer_client.post(preview_url(lonely), **HX)
    assert response.status_code == 200
    assert NO_PATCHES.format(bug=bug.key) in response.content.decode()
    assert not JudgingRun.objects.exists()


def test_without_htmx_the_panel_is_a_page_and_a_start_redirects_to_it(
    rubric: Rubric, reviewer_client: Client
) -> None:
    page = reviewer_client.get(preview_url(rubric))
    assert page.status_code == 200
    html = page.content.decode()
    assert "<html" in html
    assert rubric.get_absolute_url() in html  # back to the editor

    bug = BugFactory()
    lonely = rubric_draft_write(
        rubric_id=Rubric.objects.create(bug=bug, variant=Rubric.Variant.TEMPLATED).pk
    )
    response = reviewer_client.post(preview_url(lonely), follow=True)
    assert response.redirect_chain == [(preview_url(lonely), 302)]
    assert NO_PATCHES.format(bug=bug.key) in response.content.decode()


def test_a_stale_preview_says_so_and_offers_the_new_revision(
    rubric: Rubric,
    reviewer: User,
    reviewer_client: Client,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    ask_for_other_file(rubric, reviewer)
    start(rubric, reviewer, django_capture_on_commit_callbacks)
    revise(rubric, reviewer, title="Change `f()` and the other module")

    html = reviewer_client.get(preview_url(rubric), **HX).content.decode()

    assert "Stale:" in html
    assert "these verdicts are for revision 1; the rubric is now at revision 2" in html
    assert "Judge again with revision 2" in html


def test_the_editor_lazy_loads_the_panel_with_a_link_fallback(
    rubric: Rubric, reviewer_client: Client
) -> None:
    edit_url = rubric.get_absolute_url()

    html = reviewer_client.get(edit_url).content.decode()

    link = re.search(r'<a id="judge-preview"[^>]*>', html)
    assert link, "no judge-preview placeholder"
    assert f'href="{preview_url(rubric)}"' in link.group(0)
    assert f'hx-get="{preview_url(rubric)}"' in link.group(0)
    assert 'hx-trigger="load"' in link.group(0)
    assert 'aria-controls="tab-judge"' in html


# -- permissions and escaping -----------------------------------------------------------------


def test_annotators_never_see_verdicts_and_anonymous_users_log_in(
    rubric: Rubric, annotator_client: Client, lead_client: Client
) -> None:
    url = preview_url(rubric)
    assert annotator_client.get(url).status_code == 403
    assert annotator_client.get(url, **HX).status_code == 403
    assert annotator_client.post(url, **HX).status_code == 403
    assert not JudgingRun.objects.exists()

    for response in (Client().get(url), Client().post(url)):
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))

    assert lead_client.get(url, **HX).status_code == 200
    assert lead_client.put(url).status_code == 405
    assert lead_client.get(reverse("judging:rubric_preview", args=[999_999])).status_code == 404


def test_a_lead_may_start_a_preview_and_follow_its_runs(
    rubric: Rubric,
    reviewer: User,
    lead_client: Client,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    ask_for_other_file(rubric, reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        lead_client.post(preview_url(rubric), **HX)
    html = lead_client.get(preview_url(rubric), **HX).content.decode()

    current = JudgingRun.objects.order_by("-pk").first()
    assert current is not None
    assert current.rubric_revision.number == 1
    assert f'href="{current.get_absolute_url()}"' in html  # run pages are for leads


def test_patch_keys_titles_and_justifications_are_escaped(
    rubric: Rubric, reviewer: User, reviewer_client: Client
) -> None:
    script = "<script>alert(1)</script>"
    revise(rubric, reviewer, title=f"Change `f()` {script}")
    evil = PatchFactory(bug=rubric.bug, key='<img src=x onerror="alert(2)">')
    runs = {}
    for revision in rubric.revisions.all():
        runs[revision.number] = JudgingRun.objects.create(
            dataset=rubric.bug.dataset,
            kind=JudgingRun.Kind.PREVIEW,
            strategies=["rubric"],
            context=Context.REVISION,
            rubric_revision=revision,
            provider="offline",
            model="heuristic-v1",
            status=JudgingRun.Status.FINISHED,
        )
    for number, verdict in ((0, "VALID"), (1, "INVALID")):
        judgment = PatchJudgment.objects.create(
            run=runs[number], patch=evil, status=PatchJudgment.Status.DONE, verdict=verdict
        )
        StrategyResult.objects.create(
            judgment=judgment,
            strategy="rubric",
            status=StrategyResult.Status.DONE,
            verdict=verdict,
            reasoning=f"Because {script}",
            answers={"judge": {"requirements": [{"index": 1, "passed": False, "reason": script}]}},
            prompt_version="judge-rubric-v1",
        )

    html = reviewer_client.get(preview_url(rubric), **HX).content.decode()

    assert "<script>" not in html
    assert "<img" not in html
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in html
    assert "Because &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Change `f()` &lt;script&gt;" in html
    assert "flipped: VALID → INVALID" in html
