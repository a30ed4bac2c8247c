"""The pre-flight of a new run: how many patches lack what the team needs in the context, the
form's offer to judge only the others or to go back, the refusal of a run that would fail
entirely (the service, the form and the ``judge`` command alike)."""

import html
import io
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from judging.models import JudgingRun
from judging.runs.selectors import EXAMPLES_SHOWN, run_preflight
from judging.runs.services import RunError, RunNotReady, run_create
from rubrics.models import Bug, Dataset, Rubric
from rubrics.review.drafting import rubric_draft_write
from tests.api.helpers import TokenClient, token_for
from tests.judging.factories import make_golden
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db

Capture = Callable[..., Any]


def bug_of(dataset: Dataset, key: str, patches: int, **fields: Any) -> Bug:
    bug = BugFactory(dataset=dataset, key=key, **fields)
    for n in range(patches):
        PatchFactory(bug=bug, key=f"{key}-p{n}")
    return bug


def draft(bug: Bug, variant: str = Rubric.Variant.TEMPLATED) -> None:
    rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug, variant=variant).pk)


@pytest.fixture
def dataset() -> Dataset:
    """G: 2 patches, a golden rubric (its templated draft, confirmed). D: 3 patches, a
    templated draft only. F: 1 patch, a free-form draft only. N: 6 patches, nothing, and no
    reference fix either."""
    dataset = DatasetFactory(name="Pre-flight", slug="pre-flight")
    make_golden(bug_of(dataset, "G", 2))
    draft(bug_of(dataset, "D", 3))
    draft(bug_of(dataset, "F", 1), Rubric.Variant.FREE_FORM)
    bug_of(dataset, "N", 6, reference_patch="")
    return dataset


def lacks(dataset: Dataset, team: list[str], context: str) -> tuple[int, int, list[str]]:
    preflight = run_preflight(dataset=dataset, strategies=team, context=context)
    return preflight.total, preflight.ready, [sentence for _, sentence in preflight.sentences()]


def test_each_context_needs_its_own_rubric_and_comparers_need_the_reference(
    dataset: Dataset, django_assert_max_num_queries: Capture
) -> None:
    with django_assert_max_num_queries(3):  # the counts, then a few examples of each lack
        golden = lacks(dataset, ["rubric", "s1b"], "golden")
    assert golden == (
        12,
        2,
        [
            "10 of 12 patches have no golden rubric (needed by rubric)",
            "6 of 12 patches have no reference fix (needed by s1b)",
        ],
    )
    assert lacks(dataset, ["rubric"], "draft") == (
        12,
        5,
        ["7 of 12 patches have no draft rubric (needed by rubric)"],
    )
    assert lacks(dataset, ["rubric"], "free_form") == (
        12,
        1,
        ["11 of 12 patches have no free-form draft rubric (needed by rubric)"],
    )
    # In the reference context the rubric judge reads the reference fix; S1a never does.
    assert lacks(dataset, ["rubric", "s1a"], "reference") == (
        12,
        6,
        ["6 of 12 patches have no reference fix (needed by rubric)"],
    )
    assert lacks(dataset, ["rubric", "s1a"], "none") == (12, 12, [])
    # Without the rubric judge, the context's rubric is nobody's need.
    assert lacks(dataset, ["s1a", "s3"], "golden") == (
        12,
        6,
        ["6 of 12 patches have no reference fix (needed by s3)"],
    )


def test_a_lack_names_a_few_patches_and_a_chosen_selection_is_counted_alone(
    dataset: Dataset,
) -> None:
    preflight = run_preflight(dataset=dataset, strategies=["rubric"], context="golden")
    assert preflight.lacks[0].examples == [f"D-p{n}" for n in range(3)] + ["F-p0", "N-p0"]
    assert len(preflight.lacks[0].examples) == EXAMPLES_SHOWN
    chosen = dataset.patches.filter(key__in=["G-p0", "N-p1"]).values_list("pk", flat=True)
    some = run_preflight(dataset=dataset, strategies=["rubric"], context="golden", patch_ids=chosen)
    assert (some.total, some.ready, some.lacks[0].examples) == (2, 1, ["N-p1"])


def test_a_run_that_would_fail_entirely_is_not_started(
    dataset: Dataset, django_capture_on_commit_callbacks: Capture
) -> None:
    only_n = list(dataset.patches.filter(bug__key="N"))
    with pytest.raises(RunError, match="none of the 6 patches could be judged") as refused:
        run_create(
            actor=None, dataset=dataset, strategies="rubric", context="golden", patches=only_n
        )
    assert "since all 6 patches have no golden rubric (needed by rubric)" in str(refused.value)
    assert "confirm their rubrics in the review queue" in str(refused.value)
    assert not JudgingRun.objects.exists()


def test_only_ready_judges_the_others(
    dataset: Dataset, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        run = run_create(
            actor=None, dataset=dataset, strategies="rubric", context="draft", only_ready=True
        )
    assert sorted(run.judgments.values_list("patch__key", flat=True)) == [
        "D-p0",
        "D-p1",
        "D-p2",
        "G-p0",
        "G-p1",
    ]


# The new-run form


def form_data(**changes: Any) -> dict[str, Any]:
    data = {
        "dataset": "pre-flight",
        "strategies": ["rubric", "s1b"],
        "context": "golden",
        "provider": "offline",
        "threshold": "50",
        "reducer": "mean",
        "scale_lo": "0",
        "scale_hi": "100",
        "name": "Checked first",
    }
    return data | changes


def test_the_form_says_what_is_missing_and_starts_nothing(
    lead_client: Client, dataset: Dataset
) -> None:
    response = lead_client.post(reverse("judging:run_new"), form_data())

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="preflight"' in html
    assert "10 of 12 patches have no golden rubric (needed by rubric)" in html
    assert "6 of 12 patches have no reference fix (needed by s1b)" in html
    assert re.search(r'name="only_ready" value="2"[^>]*>Judge only the 2 ready patches<', html)
    assert 'name="back"' in html
    assert 'value="Checked first"' in html  # the form keeps what the lead entered
    assert not JudgingRun.objects.exists()


def test_judging_only_the_ready_patches_starts_the_run_with_them(
    lead_client: Client, dataset: Dataset, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        response = lead_client.post(reverse("judging:run_new"), form_data(only_ready="2"))

    run = JudgingRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == run.get_absolute_url()
    assert sorted(run.judgments.values_list("patch__key", flat=True)) == ["G-p0", "G-p1"]
    page = lead_client.get(response["Location"]).content.decode()
    assert "Left out 10 patches" in page


def test_a_changed_form_asks_again_and_going_back_starts_nothing(
    lead_client: Client, dataset: Dataset
) -> None:
    # The lead agreed to 2, then picked the draft context: 5 are ready now.
    again = lead_client.post(
        reverse("judging:run_new"),
        form_data(context="draft", strategies=["rubric"], only_ready="2"),
    )
    assert again.status_code == 200
    assert "7 of 12 patches have no draft rubric" in again.content.decode()
    assert "Judge only the 5 ready patches" in again.content.decode()
    back = lead_client.post(reverse("judging:run_new"), form_data(back="1"))
    assert back.status_code == 200
    assert 'id="preflight"' not in back.content.decode()
    assert 'value="Checked first"' in back.content.decode()
    assert not JudgingRun.objects.exists()


def test_the_form_refuses_a_run_that_would_fail_entirely(
    lead_client: Client, dataset: Dataset
) -> None:
    response = lead_client.post(
        reverse("judging:run_new"),
        form_data(strategies=["rubric"], context="free_form", patch_keys="N-p0, D-p1"),
    )
    assert response.status_code == 400
    html = response.content.decode().replace("&#x27;", "'")
    assert "no run was started: none of the 2 patches could be judged" in html
    assert 'id="preflight"' not in html
    assert not JudgingRun.objects.exists()


def test_a_ready_run_starts_at_once(
    lead_client: Client, dataset: Dataset, django_capture_on_commit_callbacks: Capture
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        response = lead_client.post(
            reverse("judging:run_new"), form_data(context="none", strategies=["rubric", "s1a"])
        )
    assert response.status_code == 302
    assert JudgingRun.objects.get().judgments.count() == 12


# The judge command


def judge(*args: str) -> str:
    out = io.StringIO()
    call_command("judge", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_command_refuses_a_run_with_unready_patches_unless_told_to_leave_them_out(
    dataset: Dataset, django_capture_on_commit_callbacks: Capture
) -> None:
    new_run = ["--dataset", "pre-flight", "--team", "rubric,s1b", "--context", "golden"]
    with pytest.raises(CommandError) as refused:
        judge(*new_run, "--provider", "offline")
    message = str(refused.value)
    assert "10 of 12 patches have no golden rubric (needed by rubric)" in message
    assert "Pass --only-ready to judge the 2 other patches" in message
    assert not JudgingRun.objects.exists()

    with django_capture_on_commit_callbacks(execute=False):
        out = judge(*new_run, "--provider", "offline", "--only-ready")
    run = JudgingRun.objects.get()
    assert run.judgments.count() == 2
    assert "Left out 10 of 12 patches" in out
    assert f"Run {run.pk}: 2 patches" in out

    with pytest.raises(CommandError, match="none of the 6 patches could be judged"):
        judge(
            *new_run[:4],
            "--context",
            "free_form",
            "--patches",
            ",".join(f"N-p{n}" for n in range(6)),
            "--only-ready",
        )
    with pytest.raises(CommandError, match="--resume takes no --only-ready"):
        judge("--resume", str(run.pk), "--only-ready")


# One decision, three doors: the page, the API and the command say the service's refusal


def refusal(dataset: Dataset, **settings: Any) -> RunNotReady:
    with pytest.raises(RunNotReady) as refused:
        run_create(actor=None, dataset=dataset, **settings)
    return refused.value


@pytest.mark.parametrize(
    ("team", "context", "keys", "ready"),
    [
        (["rubric", "s1b"], "golden", [], 2),  # some patches are ready
        (["rubric"], "free_form", ["N-p0", "D-p1"], 0),  # none is
    ],
)
def test_the_page_the_api_and_the_command_give_the_service_s_refusal(
    lead_client: Client,
    lead: User,
    dataset: Dataset,
    team: list[str],
    context: str,
    keys: list[str],
    ready: int,
) -> None:
    chosen = list(dataset.patches.filter(key__in=keys)) if keys else None
    error = refusal(
        dataset, strategies=",".join(team), context=context, patches=chosen, provider="offline"
    )
    assert error.preflight.ready == ready
    said = str(error)
    assert said.startswith("no run was started: ")

    page = lead_client.post(
        reverse("judging:run_new"),
        form_data(strategies=team, context=context, patch_keys=", ".join(keys)),
    )
    assert said in html.unescape(page.content.decode())

    run = {"dataset": dataset.name, "team": team, "context": context, "provider": "offline"}
    answer = TokenClient(token_for(lead)).post("/api/v1/runs", run | {"patches": keys or None})
    assert answer.status_code == 422
    assert answer.json()["detail"].startswith(said)
    assert (answer.json()["total"], answer.json()["ready"]) == (error.preflight.total, ready)

    argv = ["--dataset", dataset.slug, "--team", ",".join(team), "--context", context]
    with pytest.raises(CommandError) as command:
        judge(*argv, "--provider", "offline", *(["--patches", ",".join(keys)] if keys else []))
    assert str(command.value).startswith(said)
    assert not JudgingRun.objects.exists()


def test_a_lead_who_agreed_to_another_count_is_asked_again(dataset: Dataset) -> None:
    settings: dict[str, Any] = {"strategies": "rubric", "context": "draft", "only_ready": True}
    error = refusal(dataset, expected_ready=2, **settings)
    assert error.preflight.ready == 5
    assert not JudgingRun.objects.exists()
