"""Written judges as data: defined from JSON (checked whole, nothing written when refused),
every change a new version, a version a run names never changed nor deleted, and the team
syntax: ``name`` is the newest trusted version, an untrusted one is named ``name@N``."""

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.judges.selectors import judge_version_get
from judging.judges.services import (
    JUDGE_VERSION_STATUS,
    JudgeDefinitionError,
    judge_define,
    judge_version_status_set,
)
from judging.models import JudgeTest, JudgeVersion, JudgingRun, VersionFrozen, WrittenJudge
from judging.refine.services import Configuration, configurations_parse
from judging.runs.forecast import run_forecast
from judging.runs.services import RunError, run_check, run_create
from judging.strategies import get_strategy, parse_team
from sejury_web.models import AuditEvent
from tests.api.helpers import TokenClient, token_for
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

MINIMALISM: dict[str, Any] = {
    "name": "minimalism",
    "title": "Rule of Minimalism",
    "template": (
        "A patch that changes more than the bug needs is INVALID.\n\n{{ bug }}\n\n"
        "{{ reference_fix }}\n\n{{ candidate_patch }}"
    ),
    "kind": "verdict",
    "note": "first cut",
}


def _define(data: dict[str, Any], actor: User | None = None, **changes: Any) -> JudgeVersion:
    return judge_define(data={**data, **changes}, actor=actor)[0]


def test_a_definition_makes_a_judge_and_each_change_a_new_version(lead: User) -> None:
    first = _define(MINIMALISM, lead)
    assert (first.label, first.author, first.status) == ("minimalism@1", lead, "untested")
    again, created = judge_define(data=MINIMALISM, actor=lead)
    assert (again, created) == (first, False)  # the same definition: no new version
    second = _define(MINIMALISM, None, title="Minimalism", note="shorter title")
    assert (second.label, second.note, second.author) == ("minimalism@2", "shorter title", None)
    first.refresh_from_db()
    assert first.title == "Rule of Minimalism"  # the first version says what it said


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"name": "s1b"}, "name: 's1b' is a built-in strategy's"),
        ({"name": "Mini Malism"}, "name: 'Mini Malism' must be 1 to 24 lowercase letters"),
        ({"name": "mini@1"}, "name: 'mini@1' must be"),
        ({"template": "{{ bug }} only"}, "template: the template never shows the candidate"),
        ({"template": "{{ patch }}"}, "template: unknown block 'patch' at line 1, column 1"),
        ({"kind": "stars"}, "kind: unknown answer kind 'stars'"),
        ({"kind": "dimensions"}, "dimensions: an answer of kind 'dimensions' needs"),
        ({"title": " "}, "title: missing"),
        ({"owner": "me"}, "unknown field 'owner'"),
    ],
)
def test_a_bad_definition_is_refused_and_changes_nothing(
    changes: dict[str, Any], message: str
) -> None:
    _define(MINIMALISM)
    with pytest.raises(JudgeDefinitionError, match=message):
        _define(MINIMALISM, **changes)
    assert list(JudgeVersion.objects.values_list("number", flat=True)) == [1]
    assert WrittenJudge.objects.count() == 1


def test_a_version_is_never_changed_and_one_a_run_names_never_deleted() -> None:
    version = _define(MINIMALISM)
    version.template = version.template + "\nBe strict."
    with pytest.raises(VersionFrozen, match=r"minimalism@1 is never changed.*template"):
        version.save()
    with pytest.raises(VersionFrozen):
        JudgeVersion.objects.filter(pk=version.pk).update(title="Other")
    version.refresh_from_db()
    judge_version_status_set(version=version, status="tested", actor=None)  # status may change
    dataset = DatasetFactory()
    PatchFactory(bug=BugFactory(dataset=dataset, reference_patch=make_diff()))
    team = "s1b,minimalism@1"
    run = run_create(actor=None, dataset=dataset, strategies=team, context="reference")
    assert run.strategies == ["s1b", "minimalism@1"]
    with pytest.raises(VersionFrozen, match="minimalism@1 is named by a judging run"):
        version.delete()
    with pytest.raises(VersionFrozen, match="minimalism@1 is named by a judging run"):
        version.judge.delete()
    unused = _define(MINIMALISM, title="Another")
    unused.delete()  # no run names it


def _measured(version: JudgeVersion) -> None:
    JudgeTest.objects.create(
        version=version, dataset=DatasetFactory(), status=JudgeTest.Status.MEASURED
    )


def test_a_name_is_the_newest_trusted_version_and_an_untrusted_one_needs_its_number(
    lead: User,
) -> None:
    one = _define(MINIMALISM)
    untrusted = r"no trusted version yet: .* e\.g\. minimalism@1 \(untested\)"
    with pytest.raises(ValueError, match=untrusted):
        parse_team("s1b,minimalism")
    assert parse_team("s1b, minimalism@1") == ["s1b", "minimalism@1"]
    with pytest.raises(ValueError, match="'minimalism' has no version 4; its versions are 1 to 1"):
        parse_team("minimalism@4")
    with pytest.raises(ValueError, match="untested: a version is trusted only once it is tested"):
        judge_version_status_set(version=one, status="trusted", actor=None)
    judge_version_status_set(version=one, status="tested", actor=lead)
    _measured(one)  # a test measured it (tests/judging/judges/test_testing.py: the gate)
    judge_version_status_set(version=one, status="trusted", actor=lead)
    trail = AuditEvent.objects.filter(action=JUDGE_VERSION_STATUS, target_id=one.pk)
    assert [(e.actor, e.detail["to"]) for e in trail.order_by("pk")] == [
        (lead, "tested"),
        (lead, "trusted"),
    ]
    two = _define(MINIMALISM, title="Stricter")  # newer, untested
    assert parse_team("minimalism") == ["minimalism@1"]  # the newest trusted, pinned
    assert parse_team("minimalism@2") == ["minimalism@2"]
    judge_version_status_set(version=two, status="tested", actor=None)
    _measured(two)
    judge_version_status_set(version=two, status="trusted", actor=None)
    assert parse_team("minimalism") == ["minimalism@2"]
    with pytest.raises(ValueError, match="strategy 'minimalism' appears twice"):
        parse_team("minimalism@2,minimalism")
    unknown = r"unknown strategy 'nope'; the strategies are rubric, .*edit, minimalism$"
    with pytest.raises(RunError, match=unknown):
        run_check(strategies="nope", context="reference")
    strategy = get_strategy("minimalism@1")
    assert (strategy.name, strategy.prompt_version) == ("minimalism@1", "written:minimalism@1")
    assert (strategy.uses_reference, strategy.uses_rubric) == (True, False)
    assert judge_version_get("minimalism").number == 2


def test_a_run_keeps_meaning_the_version_it_named() -> None:
    one = _define(MINIMALISM)
    dataset = DatasetFactory()
    PatchFactory(bug=BugFactory(dataset=dataset, reference_patch=make_diff()))
    run = run_create(actor=None, dataset=dataset, strategies="minimalism@1", context="reference")
    _define(copy.deepcopy(MINIMALISM), template="Stricter. {{ candidate_patch }}")
    run = JudgingRun.objects.get(pk=run.pk)
    assert run.strategies == ["minimalism@1"]
    assert get_strategy(run.strategies[0]).spec.template == one.template  # type: ignore[attr-defined]


def test_refine_takes_a_written_judge_s_version_with_or_without_a_context() -> None:
    _define(MINIMALISM)
    assert configurations_parse("minimalism@1; s1b; minimalism@1@none") == [
        Configuration(("minimalism@1",), "reference"),
        Configuration(("s1b",), "reference"),
        Configuration(("minimalism@1",), "none"),
    ]


def test_a_run_s_forecast_reads_a_written_judge_once_whatever_the_patches(
    django_assert_max_num_queries: Any,
) -> None:
    _define(MINIMALISM)
    dataset = DatasetFactory()
    bug = BugFactory(dataset=dataset, reference_patch=make_diff())
    PatchFactory(bug=bug, diff=make_diff(new="x = 3"))

    def forecast() -> Any:
        return run_forecast(
            dataset=dataset, team=["minimalism@1"], context="reference",
            provider="offline", model="heuristic",
        )  # fmt: skip

    with CaptureQueriesContext(connection) as one:
        assert forecast().patches == 1
    for n in range(20):
        PatchFactory(bug=bug, diff=make_diff(new=f"x = {n + 4}"))
    with django_assert_max_num_queries(len(one)):
        assert forecast().patches == 21


def test_an_untested_version_named_bare_is_refused_with_why_by_every_door(
    lead: User, lead_client: Client
) -> None:
    """The web form, the API (ordinary and batch), ``judge`` and ``refine`` all say that an
    untested judge is named with its version, and start nothing; ``name@1`` starts a run."""
    _define(MINIMALISM)
    dataset = DatasetFactory(slug="doors")
    PatchFactory(bug=BugFactory(dataset=dataset, reference_patch=make_diff()))
    why = "judge 'minimalism' has no trusted version yet: name a version with its number"
    api = TokenClient(token_for(lead))
    body = {"dataset": "doors", "team": "s1b,minimalism", "context": "reference"}
    for batch in (False, True):
        refused = api.post("/api/v1/runs", {**body, "batch": batch})
        assert refused.status_code == 422
        assert why in refused.json()["detail"]
    assert why in api.post("/api/v1/runs/preflight", body).json()["detail"]
    judge = ("judge", "--dataset", "doors", "--team", "minimalism", "--context", "reference")
    with pytest.raises(CommandError, match=why):
        call_command(*judge)
    with pytest.raises(CommandError, match=f"configuration 'minimalism@golden': {why}"):
        call_command("refine", "--dataset", "doors", "--configs", "s1b; minimalism@golden")
    form = {"dataset": "doors", "context": "reference", "strategies": "minimalism"}
    assert lead_client.post(reverse("judging:run_new"), form).status_code == 400
    linked = lead_client.get(reverse("judging:run_new") + "?team=s1b,minimalism")
    assert f"The link&#x27;s team is not ticked: {why}".replace("'", "&#x27;") in (
        linked.content.decode()
    )
    assert not JudgingRun.objects.exists()
    created = api.post("/api/v1/runs", {**body, "team": "s1b,minimalism@1"})
    assert created.status_code == 201, created.json()["detail"]
    assert created.json()["team"] == ["s1b", "minimalism@1"]
