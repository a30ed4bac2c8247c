"""The adjudication queue's consensus rule: the page states the rule in force and counts the
majorities; a lead changes the rule of the campaign shown (or else the dataset) with a form
whose change is in the audit trail; others are refused, and a bad value changes nothing."""

import re

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.consensus.rules import ConsensusRule
from judging.consensus.services import CAMPAIGN_CONSENSUS_RULE, DATASET_CONSENSUS_RULE
from judging.consensus.views import PER_PAGE
from judging.models import Annotation, Campaign, Label
from rubrics.models import Dataset, Patch
from sejury_web.audit import audit_events
from sejury_web.models import AuditEvent
from tests.judging.calibration.factories import campaign_of
from tests.judging.factories import AnnotationFactory, UserFactory
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

VALID, INVALID, UNSURE = Label.VALID, Label.INVALID, Label.UNSURE
RULE_ACTIONS = [DATASET_CONSENSUS_RULE, CAMPAIGN_CONSENSUS_RULE]


@pytest.fixture
def dataset() -> Dataset:
    dataset = DatasetFactory(name="Rule demo", slug="rule-demo")
    bug = BugFactory(dataset=dataset, key="B")
    for n in range(4):
        PatchFactory(bug=bug, key=f"P-{n}")
    return dataset


def patch(dataset: Dataset, key: str) -> Patch:
    return dataset.patches.get(key=key)


@pytest.fixture
def campaign(dataset: Dataset) -> Campaign:
    """P-0 unanimous, P-1 2 of 3 (a majority), P-2 3 of 5 (none), P-3 one decisive label."""
    return campaign_of(
        dataset,
        {
            patch(dataset, "P-0"): (VALID, VALID),
            patch(dataset, "P-1"): (INVALID, VALID, INVALID),
            patch(dataset, "P-2"): (VALID, VALID, VALID, INVALID, INVALID),
            patch(dataset, "P-3"): (VALID, UNSURE, UNSURE),
        },
    )


def queue_url(dataset: Dataset, campaign: Campaign | None = None) -> str:
    url = reverse("judging:adjudication_queue", args=[dataset.slug])
    return f"{url}?campaign={campaign.pk}" if campaign else url


def rule_url(dataset: Dataset) -> str:
    return reverse("judging:consensus_rule_set", args=[dataset.slug])


def waiting_keys(html: str) -> list[str]:
    waiting = html[html.index('id="adjudication-waiting"') :]
    return re.findall(r'data-patch-key="([^"]+)"', waiting)


def test_the_queue_states_the_rule_and_counts_majorities(
    dataset: Dataset, campaign: Campaign, lead_client: Client
) -> None:
    html = lead_client.get(queue_url(dataset, campaign)).content.decode()
    assert 'id="consensus-rule" data-rule="unanimous"' in html
    assert re.search(r'id="consensus-rule-in-force">Unanimous \(paper 004\)<', html)
    assert re.search(r'id="count-majority">0<', html)
    assert waiting_keys(html) == ["P-1", "P-2", "P-3"]
    assert 'name="rule"' in html
    assert f'name="campaign" value="{campaign.pk}"' in html  # the form changes the campaign's

    Campaign.objects.filter(pk=campaign.pk).update(consensus_rule=ConsensusRule.MAJORITY)
    html = lead_client.get(queue_url(dataset, campaign)).content.decode()
    assert 'id="consensus-rule" data-rule="majority"' in html
    assert re.search(r'id="consensus-rule-in-force">Two-thirds majority of ≥ 3 labels<', html)
    assert re.search(r'id="count-unanimous">1<', html)
    assert re.search(r'id="count-majority">1<', html)
    assert waiting_keys(html) == ["P-2", "P-3"]
    assert "The dataset’s own rule" in html  # the campaign's differs from the dataset's
    # The dataset's own view keeps the dataset's rule.
    html = lead_client.get(queue_url(dataset)).content.decode()
    assert 'id="consensus-rule" data-rule="unanimous"' in html
    assert waiting_keys(html) == ["P-1", "P-2", "P-3"]


def test_a_lead_changes_the_campaigns_rule(
    dataset: Dataset, campaign: Campaign, lead: User, lead_client: Client
) -> None:
    response = lead_client.post(rule_url(dataset), {"rule": "majority", "campaign": campaign.pk})
    assert response.status_code == 302
    assert response["Location"] == queue_url(dataset, campaign)
    campaign.refresh_from_db()
    dataset.refresh_from_db()
    assert (campaign.consensus_rule, dataset.consensus_rule) == ("majority", "unanimous")
    event = audit_events(campaign).get()
    assert (event.actor, event.action, event.detail) == (
        lead,
        CAMPAIGN_CONSENSUS_RULE,
        {"from": "unanimous", "to": "majority"},
    )
    html = lead_client.get(response["Location"]).content.decode()
    assert "is now: Two-thirds majority of ≥ 3 labels." in html
    assert waiting_keys(html) == ["P-2", "P-3"]
    # The campaign's page says so in its history.
    detail = lead_client.get(reverse("judging:campaign_detail", args=[campaign.pk]))
    assert "lead changed the consensus rule" in detail.content.decode()


def test_a_lead_changes_the_datasets_rule(
    dataset: Dataset, campaign: Campaign, lead: User, lead_client: Client
) -> None:
    response = lead_client.post(rule_url(dataset), {"rule": "majority"})
    assert response.status_code == 302
    assert response["Location"] == queue_url(dataset)
    dataset.refresh_from_db()
    campaign.refresh_from_db()
    assert (dataset.consensus_rule, campaign.consensus_rule) == ("majority", "unanimous")
    event = audit_events(dataset).get()
    assert (event.actor, event.action, event.detail) == (
        lead,
        DATASET_CONSENSUS_RULE,
        {"from": "unanimous", "to": "majority"},
    )
    html = lead_client.get(queue_url(dataset)).content.decode()
    assert waiting_keys(html) == ["P-2", "P-3"]
    # The same rule again: said, and no second event.
    again = lead_client.post(rule_url(dataset), {"rule": "majority"}, follow=True)
    assert "was already: Two-thirds majority" in again.content.decode()
    assert audit_events(dataset).count() == 1


@pytest.mark.parametrize("value", ["plurality", ""])
def test_a_bad_rule_is_a_form_error_and_changes_nothing(
    dataset: Dataset, campaign: Campaign, lead_client: Client, value: str
) -> None:
    response = lead_client.post(rule_url(dataset), {"rule": value, "campaign": campaign.pk})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="error" role="alert"' in html
    assert "<details open>" in html  # the form is shown with its error
    assert waiting_keys(html) == ["P-1", "P-2", "P-3"]  # the queue, as it was
    campaign.refresh_from_db()
    dataset.refresh_from_db()
    assert (campaign.consensus_rule, dataset.consensus_rule) == ("unanimous", "unanimous")
    assert not AuditEvent.objects.filter(action__in=RULE_ACTIONS).exists()


def test_only_a_lead_changes_the_rule(
    dataset: Dataset,
    campaign: Campaign,
    annotator_client: Client,
    reviewer_client: Client,
    lead_client: Client,
) -> None:
    for client in (annotator_client, reviewer_client):
        for data in ({"rule": "majority"}, {"rule": "majority", "campaign": campaign.pk}):
            assert client.post(rule_url(dataset), data).status_code == 403
    assert Client().post(rule_url(dataset), {"rule": "majority"}).status_code == 302  # login
    assert lead_client.get(rule_url(dataset)).status_code == 405  # POST only
    other = Campaign.objects.create(dataset=DatasetFactory(), name="Elsewhere")
    refused = lead_client.post(rule_url(dataset), {"rule": "majority", "campaign": other.pk})
    assert refused.status_code == 404
    campaign.refresh_from_db()
    dataset.refresh_from_db()
    assert (campaign.consensus_rule, dataset.consensus_rule) == ("unanimous", "unanimous")
    assert not AuditEvent.objects.filter(action__in=RULE_ACTIONS).exists()


def test_the_form_needs_its_csrf_token(dataset: Dataset, lead: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    response = client.post(rule_url(dataset), {"rule": "majority"})
    assert response.status_code == 403
    dataset.refresh_from_db()
    assert dataset.consensus_rule == "unanimous"
    page = client.get(queue_url(dataset)).content.decode()
    form = page[page.index('id="consensus-rule-form"') :]
    assert 'name="csrfmiddlewaretoken"' in form[: form.index("</form>")]


def test_the_index_shows_each_datasets_rule(
    dataset: Dataset, campaign: Campaign, lead_client: Client
) -> None:
    Dataset.objects.filter(pk=dataset.pk).update(consensus_rule=ConsensusRule.MAJORITY)
    html = lead_client.get(reverse("judging:adjudication_index")).content.decode()
    assert "<td>Two-thirds majority of ≥ 3 labels</td>" in html


def test_the_queue_is_paged_with_counts_majority_diff_and_shortcuts(lead_client: Client) -> None:
    """Issue 16 item 13: 57 disputes made one page of 39,000 px."""
    dataset = DatasetFactory(slug="many-disputes")
    for n in range(23):
        patch = PatchFactory(
            bug=BugFactory(dataset=dataset, key=f"D-{n:02d}"),
            key=f"D-{n:02d}-p",
            diff=make_diff(new=f"x = {n}  # DIFF-LINE-{n:02d}"),
        )
        for rater, label in enumerate((VALID, INVALID, INVALID)):
            AnnotationFactory(patch=patch, annotator=UserFactory(username=f"r{rater}"), label=label)
    html = lead_client.get(queue_url(dataset)).content.decode()
    assert waiting_keys(html) == [f"D-{n:02d}-p" for n in range(PER_PAGE)]
    assert re.search(r'id="adjudication-range">1–10<', html)
    # Each card: its diff inline in a <details> (open while it waits), the counts, the majority.
    first = dataset.patches.get(key="D-00-p")
    assert re.search(
        rf'<details class="adjudication-diff" id="adjudication-{first.pk}-diff" open>', html
    )
    assert "DIFF-LINE-00" in html
    assert "DIFF-LINE-09" in html
    assert "DIFF-LINE-10" not in html  # only the window's diffs
    assert f'data-majority="{INVALID}"' in html
    assert "2 of 3 decisive" in html
    assert re.search(r'data-label="VALID">.*?<b>1</b>', html, re.S)
    # The shortcuts, documented, and their script.
    assert 'id="adjudication-keys"' in html
    assert "<kbd>n / →</kbd>" in html
    assert "js/adjudicate.js" in html
    # The next window starts after the last patch shown.
    last = dataset.patches.get(key="D-09-p")
    assert f'href="{queue_url(dataset)}?after={last.pk}" id="adjudication-next"' in html
    html = lead_client.get(queue_url(dataset), {"after": last.pk}).content.decode()
    assert waiting_keys(html) == [f"D-{n:02d}-p" for n in range(10, 20)]
    assert 'id="adjudication-prev"' in html
    # A card's form keeps the window: a save without htmx comes back to it.
    tenth = dataset.patches.get(key="D-10-p")
    assert f'<input type="hidden" name="after" value="{last.pk}">' in html
    response = lead_client.post(
        reverse("judging:adjudication_save", args=[dataset.slug, tenth.pk]),
        {"label": INVALID, "themes": ["rubric_ambiguity"], "after": last.pk},
    )
    assert response["Location"] == f"{queue_url(dataset)}?after={last.pk}#adjudication-{tenth.pk}"
    html = lead_client.get(queue_url(dataset), {"after": last.pk}).content.decode()
    assert waiting_keys(html) == [f"D-{n:02d}-p" for n in range(11, 21)]
    # The adjudicated, on their own tab.
    html = lead_client.get(queue_url(dataset), {"show": "adjudicated"}).content.decode()
    assert re.findall(r'data-patch-key="([^"]+)"', html) == ["D-10-p"]
    assert 'id="adjudication-tab-adjudicated" href' in html


def test_the_queue_page_reads_labels_and_adjudications_of_its_window_only(
    lead_client: Client,
) -> None:
    """Issue 27 item 9: a 10,000-patch dataset has thousands of waiting patches; the page
    read every one's labels, adjudication and whole patch to show ten (1.4 s)."""
    dataset = DatasetFactory(slug="many-waiting")
    for n in range(PER_PAGE + 5):
        patch = PatchFactory(bug=BugFactory(dataset=dataset, key=f"W-{n:02d}"), key=f"W-{n:02d}-p")
        for rater, label in enumerate((VALID, INVALID)):
            AnnotationFactory(patch=patch, annotator=UserFactory(username=f"w{rater}"), label=label)
    with CaptureQueriesContext(connection) as queries:
        html = lead_client.get(queue_url(dataset)).content.decode()
    assert len(waiting_keys(html)) == PER_PAGE
    whole = [
        query["sql"]
        for query in queries.captured_queries
        if query["sql"].startswith('SELECT "judging_adjudication"."id"')
        or '"judging_annotation"."note"' in query["sql"]
    ]
    assert len(whole) == 2, whole
    for sql in whole:  # the window's patches, not the queue's
        ids = re.search(r" IN \(([^)]*)\)", sql)
        assert ids is not None, sql
        assert len(ids[1].split(",")) == PER_PAGE, sql


def test_the_queue_read_again_computes_no_consensus_until_a_label_changes(
    lead_client: Client,
) -> None:
    """A lead paging through a large queue: every patch's consensus is computed once while
    the labels and adjudications are the same (a few aggregates say so)."""
    dataset = DatasetFactory(slug="kept-queue")
    for n in range(3):
        patch = PatchFactory(bug=BugFactory(dataset=dataset, key=f"K-{n}"), key=f"K-{n}-p")
        for rater, label in enumerate((VALID, INVALID)):
            AnnotationFactory(patch=patch, annotator=UserFactory(username=f"k{rater}"), label=label)
    lead_client.get(queue_url(dataset))
    with CaptureQueriesContext(connection) as again:
        html = lead_client.get(queue_url(dataset)).content.decode()
    every_label = [
        q["sql"]
        for q in again.captured_queries
        if 'FROM "judging_annotation"' in q["sql"]
        and "COUNT(" not in q["sql"]
        and '"judging_annotation"."note"' not in q["sql"]  # the window's own labels
    ]
    assert every_label == []
    assert len(waiting_keys(html)) == 3
    changed = Annotation.objects.get(patch__key="K-0-p", label=INVALID)
    changed.label = VALID  # now unanimous: it leaves the queue at once
    changed.save()
    html = lead_client.get(queue_url(dataset)).content.decode()
    assert waiting_keys(html) == ["K-1-p", "K-2-p"]


def test_an_empty_submit_names_the_missing_label_and_theme_and_htmx_gets_the_tab_counts(
    dataset: Dataset, campaign: Campaign, lead_client: Client
) -> None:
    """Issue 28 item 5: both faults at once; the answer to htmx also swaps the tabs' counts."""
    url = reverse("judging:adjudication_save", args=[dataset.slug, patch(dataset, "P-2").pk])
    post = {"campaign": campaign.pk}
    html = lead_client.post(url, post, headers={"HX-Request": "true"}).content.decode()
    assert "pick the consensus label" in html
    assert "at least one theme" in html
    html = lead_client.post(
        url,
        post | {"label": VALID, "themes": ["other"], "note": "x"},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert re.search(r'id="adjudication-tab-waiting-count" hx-swap-oob="true">2<', html)
    assert re.search(r'id="adjudication-tab-adjudicated-count" hx-swap-oob="true">1<', html)


def test_recording_a_consensus_with_htmx_sends_the_page_s_range_again(
    lead_client: Client,
) -> None:
    """Issue 28 item 5: "Patches 1–10 of 12 waiting" went stale after a consensus."""
    dataset = DatasetFactory(slug="range-line")
    for n in range(PER_PAGE + 2):
        patch = PatchFactory(bug=BugFactory(dataset=dataset, key=f"R-{n:02d}"), key=f"R-{n:02d}-p")
        for rater, label in enumerate((VALID, INVALID, INVALID)):
            AnnotationFactory(patch=patch, annotator=UserFactory(username=f"q{rater}"), label=label)
    first, last = (dataset.patches.get(key=f"R-{n:02d}-p") for n in (0, PER_PAGE - 1))
    html = lead_client.get(queue_url(dataset)).content.decode()
    assert re.search(rf'id="adjudication-range">1–{PER_PAGE}</b> of {PER_PAGE + 2} waiting', html)
    # Each card's form says which page it is on.
    assert f'<input type="hidden" name="shown_first" value="{first.pk}">' in html
    assert f'<input type="hidden" name="shown_last" value="{last.pk}">' in html

    def record(patch: Patch) -> str:
        response = lead_client.post(
            reverse("judging:adjudication_save", args=[dataset.slug, patch.pk]),
            {"label": INVALID, "themes": ["other"], "note": "x"}
            | {"shown_first": first.pk, "shown_last": last.pk},
            headers={"HX-Request": "true"},
        )
        return response.content.decode()

    html = record(dataset.patches.get(key="R-03-p"))
    line = html.split('id="adjudication-range-line" hx-swap-oob="true">')[1].split("</p>")[0]
    assert f"1–{PER_PAGE - 1}</b> of {PER_PAGE + 1} waiting" in line
    pager = html.split('id="adjudication-pager-range" hx-swap-oob="true">')[1].split("<")[0]
    assert pager == f"1–{PER_PAGE - 1} of {PER_PAGE + 1}"
    # The page's first patch too: the range starts at the next one still waiting, still 1.
    html = record(first)
    assert f"1–{PER_PAGE - 2}</b> of {PER_PAGE} waiting" in html
