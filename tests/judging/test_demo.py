import io
import json
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from pytest_django.fixtures import Settings

from judging.management.commands.load_demo import DEMO_PASSWORD, DEMO_USERS, MODEL_TEAM
from judging.models import (
    Annotation,
    Assignment,
    Campaign,
    JudgeTest,
    JudgeVersion,
    JudgingRun,
)
from rubrics.models import Dataset, Rubric
from sejury_web.roles import user_roles
from tests.helpers import DEMO_BUNDLE, logs_in
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db


def test_demo_bundle_covers_the_cases_a_new_user_should_see() -> None:
    records = [json.loads(line) for line in DEMO_BUNDLE.read_text(encoding="utf-8").splitlines()]
    bugs = [r for r in records if r["kind"] == "bug"]
    patches = [r for r in records if r["kind"] == "patch"]
    assert len(bugs) == 6
    assert len({b["language"] for b in bugs}) >= 5
    per_bug = defaultdict(list)
    for p in patches:
        per_bug[p["bug"]].append(p["metadata"])
    assert all(3 <= len(per_bug[b["key"]]) <= 5 for b in bugs)
    cases = Counter(m["demo_case"] for ms in per_bug.values() for m in ms)
    assert set(cases) == {
        "correct_fix",
        "alternative_fix",
        "test_only",
        "symptom_masking",
        "incomplete_fix",
    }
    for ms in per_bug.values():
        assert {m["expected"] for m in ms} == {"VALID", "INVALID"}


def test_load_demo_is_idempotent_and_creates_working_logins() -> None:
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115

    def counts() -> tuple[int, ...]:
        models = (Dataset, Annotation, User, Campaign, Assignment, JudgingRun, JudgeVersion)
        return tuple(model.objects.count() for model in models)

    first = counts()
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert counts() == first
    demo = Dataset.objects.get(name="Demo")
    assert demo.bugs.count() == 6
    assert demo.description
    for username, roles in DEMO_USERS:
        user = User.objects.get(username=username)
        assert user_roles(user) >= set(roles)
        assert logs_in(Client(), username, DEMO_PASSWORD), username
    # Demo annotators own the demo labels, so they can log in and see them.
    assert Annotation.objects.filter(annotator__username="annotator1").exists()
    # A calibration sample for the demo annotators, and a run for the worker to judge with
    # the offline model whatever provider is configured.
    campaign = Campaign.objects.get(dataset=demo)
    assert campaign.purpose == Campaign.Purpose.CALIBRATION
    assert campaign.assignments.values("patch").distinct().count() == 12
    assert sorted(campaign.annotators.values_list("username", flat=True)) == [
        "annotator1",
        "annotator2",
        "annotator3",
    ]
    run = JudgingRun.objects.get(dataset=demo, kind=JudgingRun.Kind.RUN)
    assert run.provider == "offline"
    assert run.strategies == ["s1a", "s1b", "s2", "s3", "s4", "s5"]
    # The starter written judges, untested, by the lead.
    starters = JudgeVersion.objects.select_related("judge", "author")
    assert {(v.label, v.status, v.author.username) for v in starters} == {  # type: ignore[union-attr]
        ("minimalism@1", "untested", "lead"),
        ("nonfunctional@1", "untested", "lead"),
    }
    # The Rule of Minimalism's test, queued once on the demo's ladders and labelled patches
    # with the offline model (``test_the_demo_judge_test_is_measured_for_real`` measures it).
    (test,) = JudgeTest.objects.all()
    assert test.version.label == "minimalism@1"
    assert test.dataset == demo
    assert test.status == JudgeTest.Status.RUNNING
    assert set(
        JudgingRun.objects.filter(pk__in=test.runs.values()).values_list("provider", flat=True)
    ) == {"offline"}


def test_the_demo_judge_test_is_measured_for_real(
    eager_tasks: None, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    """What `make run`'s worker does with the demo's queued work, here inline: the demo's
    judge test measured from its runs on the offline model, so the judge's page has a card."""
    with django_capture_on_commit_callbacks(execute=True):
        call_command("load_demo", stdout=io.StringIO())
    test = JudgeTest.objects.select_related("version").get()
    assert test.status == JudgeTest.Status.MEASURED, test.error
    assert test.version.status == JudgeVersion.Status.TESTED
    assert test.figures["offline"] is True
    assert test.figures["ladder"]["bugs"] > 0
    assert test.figures["ladder"]["tau_b"]["value"] is not None
    columns = test.figures["labelled"]["columns"]
    assert set(columns) == {"judge", "team", "bleu", "chrf", "edit"}
    assert columns["team"]["team"] == ["s1a", "s1b", "s2", "s3", "s4", "s5"]
    assert columns["judge"]["n"] == test.patch_count > 0
    assert columns["judge"]["kappa"]["value"] is not None


def test_load_demo_with_a_model_drafts_and_queues_a_run_on_it_once(
    settings: Settings, tmp_path: Path
) -> None:
    """`make run LLM=local`: the demo's rubrics drafted, and a run queued, on the model."""
    with pytest.raises(CommandError, match="--with-model needs a model"):
        call_command("load_demo", "--with-model", stdout=io.StringIO())

    point_at(settings, tmp_path, PROVIDER="openai", MODEL="local-model",
             OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # fmt: skip
    call_command("load_demo", "--with-model", stdout=io.StringIO())
    call_command("load_demo", "--with-model", stdout=io.StringIO())

    dataset = Dataset.objects.get(name="Demo")
    runs = JudgingRun.objects.filter(dataset=dataset, model="local-model")
    assert [(r.provider, r.strategies, r.name) for r in runs] == [
        ("openai", MODEL_TEAM.split(","), f"Demo: {MODEL_TEAM} on local-model")
    ]
    drafting = Rubric.objects.filter(bug__dataset=dataset, variant=Rubric.Variant.TEMPLATED)
    assert drafting.count() == dataset.bugs.count() == 6
    assert set(drafting.values_list("status", flat=True)) == {Rubric.Status.DRAFTING}
