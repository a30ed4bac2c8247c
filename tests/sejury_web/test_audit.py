"""The audit trail: each lead action on an object without a history of its own leaves one
row, in the same transaction, naming who did it."""

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import Client
from django.urls import reverse

from judging.annotations.services import (
    CAMPAIGN_CLOSE,
    CAMPAIGN_CREATE,
    CAMPAIGN_REOPEN,
    CampaignError,
    campaign_close,
    campaign_create,
    campaign_reopen,
)
from judging.models import Campaign, JudgingRun, PatchJudgment, StrategyResult
from judging.runs.rejections import PROMPT_VERSION
from judging.runs.services import (
    RUN_CANCEL,
    RUN_CREATE,
    RUN_REJECTION_THEMES,
    RUN_RESUME,
    RUN_RETRY,
    RunError,
    run_cancel,
    run_create,
    run_rejection_themes_request,
    run_resume,
)
from sejury_web.audit import OUTSIDE_TRANSACTION, audit_events, audit_record
from sejury_web.models import AuditEvent
from sejury_web.roles import Role
from sejury_web.users import USER_CREATE, USER_ROLES, user_create, user_set_roles
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db


def trail(target: object) -> list[tuple[str | None, str]]:
    """``(actor, action)`` of the target's events, oldest first."""
    events = reversed(list(audit_events(target)))  # type: ignore[arg-type]
    return [(e.actor.username if e.actor else None, e.action) for e in events]


def test_a_runs_life_is_in_its_trail_with_who_did_what(lead: User) -> None:
    bug = BugFactory()
    PatchFactory(bug=bug)
    PatchFactory(bug=bug)
    run = run_create(dataset=bug.dataset, strategies="s1b,s3", context="reference", actor=lead)
    run_cancel(run=run, actor=lead)
    run_resume(run=run, actor=lead)
    run.judgments.update(status=PatchJudgment.Status.FAILED)
    run_resume(run=run, actor=None, retry_failed=True)  # a script, naming no one
    assert trail(run) == [
        ("lead", RUN_CREATE),
        ("lead", RUN_CANCEL),
        ("lead", RUN_RESUME),
        (None, RUN_RETRY),
    ]
    created = audit_events(run).get(action=RUN_CREATE)
    assert created.detail == {"patches": 2}
    assert created.target == run
    assert audit_events(run).get(action=RUN_RETRY).detail == {"generation": 2}


def test_a_refused_action_leaves_no_row(lead: User) -> None:
    run = run_create(
        dataset=PatchFactory().dataset, strategies="s1b", context="reference", actor=lead
    )
    JudgingRun.objects.filter(pk=run.pk).update(status=JudgingRun.Status.FINISHED)
    run.judgments.update(status=PatchJudgment.Status.DONE)
    with pytest.raises(RunError):
        run_cancel(run=run, actor=lead)
    with pytest.raises(RunError):
        run_resume(run=run, actor=lead)  # nothing pending
    assert trail(run) == [("lead", RUN_CREATE)]


def test_sorting_why_passing_patches_were_rejected_is_in_the_runs_trail(
    lead: User, lead_client: Client
) -> None:
    patch = PatchFactory(tests_pass=True)
    run = JudgingRun.objects.create(
        dataset=patch.dataset, strategies=["s1b"], context="reference", provider="offline",
        model="m", status=JudgingRun.Status.RUNNING,
    )  # fmt: skip
    judgment = PatchJudgment.objects.create(
        run=run, patch=patch, status=PatchJudgment.Status.DONE, verdict="INVALID", score=0.0
    )
    StrategyResult.objects.create(
        judgment=judgment, strategy="s1b", status="done", score=10, reasoning="It is partial.",
        prompt_version="t",
    )  # fmt: skip
    with pytest.raises(RunError):
        run_rejection_themes_request(run=run, actor=lead)  # still judging: refused
    assert trail(run) == []
    JudgingRun.objects.filter(pk=run.pk).update(status=JudgingRun.Status.FINISHED)
    run_rejection_themes_request(run=run, actor=lead)
    assert trail(run) == [("lead", RUN_REJECTION_THEMES)]
    event = audit_events(run).get()
    assert event.detail == {"patches": 1, "prompt_version": PROMPT_VERSION}
    html = lead_client.get(run.get_absolute_url()).content.decode()
    assert "lead sorted why passing patches were rejected" in html[html.index('id="history"') :]


def test_a_campaigns_life_is_in_its_trail(lead: User, annotator: User) -> None:
    dataset = DatasetFactory()
    PatchFactory(bug=BugFactory(dataset=dataset))
    campaign = campaign_create(
        dataset=dataset,
        name="Round 1",
        purpose=Campaign.Purpose.BENCHMARK,
        selection=Campaign.Selection.ALL,
        annotators=[annotator],
        overlap=1,
        show_rubric=False,
        actor=lead,
    )
    campaign_close(campaign=campaign, actor=lead)
    with pytest.raises(CampaignError):
        campaign_close(campaign=campaign, actor=lead)
    campaign_reopen(campaign=campaign, actor=lead)
    assert trail(campaign) == [
        ("lead", CAMPAIGN_CREATE),
        ("lead", CAMPAIGN_CLOSE),
        ("lead", CAMPAIGN_REOPEN),
    ]
    created = audit_events(campaign).get(action=CAMPAIGN_CREATE)
    assert created.detail == {"patches": 1, "annotators": [annotator.username]}


def test_users_created_and_given_roles_on_the_users_page(lead_client: Client, lead: User) -> None:
    response = lead_client.post(
        reverse("user_list"),
        {
            "username": "newcomer",
            "password1": "a long enough passphrase 1",
            "password2": "a long enough passphrase 1",
            "roles": [Role.ANNOTATOR],
        },
    )
    assert response.status_code == 302
    newcomer = User.objects.get(username="newcomer")
    lead_client.post(
        reverse("user_roles_update", args=[newcomer.pk]),
        {"roles": [Role.ANNOTATOR, Role.REVIEWER]},
    )
    assert trail(newcomer) == [("lead", USER_CREATE), ("lead", USER_ROLES)]
    roles = audit_events(newcomer).get(action=USER_ROLES).detail
    assert roles == {"before": ["annotator"], "after": ["annotator", "reviewer"]}


def test_setting_the_same_roles_again_is_no_event(lead: User) -> None:
    user = user_create(username="same", password=None, roles=[Role.REVIEWER], actor=lead)
    user_set_roles(user=user, roles=[Role.REVIEWER], actor=lead)
    assert trail(user) == [("lead", USER_CREATE)]


@pytest.mark.django_db(transaction=True)  # so that the test itself is outside a transaction
def test_a_row_outside_the_changes_transaction_is_refused(lead: User) -> None:
    with pytest.raises(RuntimeError, match="must run in the transaction"):
        audit_record(actor=lead, action="run.cancel", target=lead)
    assert OUTSIDE_TRANSACTION.startswith("audit_record(")
    with transaction.atomic():
        audit_record(actor=lead, action="test.ok", target=lead)
    assert AuditEvent.objects.filter(action="test.ok").count() == 1


def test_the_run_and_campaign_pages_show_their_history(
    lead_client: Client, lead: User, annotator: User
) -> None:
    patch = PatchFactory()
    run = run_create(dataset=patch.dataset, strategies="s1b", context="reference", actor=lead)
    lead_client.post(reverse("judging:run_cancel", args=[run.pk]))
    html = lead_client.get(reverse("judging:run_detail", args=[run.pk])).content.decode()
    history = html[html.index('id="history"') :]
    assert history.index("lead cancelled") < history.index("lead created")  # newest first
    campaign = campaign_create(
        dataset=patch.dataset,
        name="Round <b>1</b>",
        purpose=Campaign.Purpose.BENCHMARK,
        selection=Campaign.Selection.ALL,
        annotators=[annotator],
        overlap=1,
        show_rubric=False,
        actor=None,
    )
    url = reverse("judging:campaign_detail", args=[campaign.pk])
    html = lead_client.get(url).content.decode()
    assert "the system or a script created" in html[html.index('id="history"') :]
