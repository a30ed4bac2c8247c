"""The campaign pages: leads create, follow, close and reopen campaigns; annotators label
their own queue one patch at a time, without JavaScript (plain form posts)."""

import re
import threading
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judging.annotations.services import CAMPAIGN_CLOSED, annotation_record, campaign_close
from judging.annotations.views import CLOSED, REOPENED
from judging.models import Annotation, Campaign
from rubrics.models import Dataset
from rubrics.selectors import UNKNOWN_PATCHES
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD, client_for
from tests.judging.factories import create_campaign
from tests.rubrics.factories import (
    DRAFT_TEXT,
    GOLDEN_TEXT,
    BugFactory,
    DatasetFactory,
    PatchFactory,
    make_diff,
    rubric_for,
)

pytestmark = pytest.mark.django_db

PENDING_TEXT = "## Requirements\n\n1. An edit awaiting confirmation (pending-only)."


def make_annotator(name: str) -> User:
    return user_create(actor=None, username=name, password=PASSWORD, roles=[Role.ANNOTATOR])


@pytest.fixture
def dataset() -> Dataset:
    """Two bugs: BUG-A with a golden rubric (and a pending edit), BUG-B with a draft only."""
    dataset = DatasetFactory(name="Labels demo", slug="labels-demo")
    first = BugFactory(dataset=dataset, key="BUG-A", title="Totals skip the first item")
    second = BugFactory(dataset=dataset, key="BUG-B", title="Parser drops the last line")
    rubric_for(first, draft=DRAFT_TEXT, golden=GOLDEN_TEXT, pending=PENDING_TEXT)
    rubric_for(second, draft=DRAFT_TEXT)
    for n, bug in enumerate([first, first, second, second]):
        PatchFactory(bug=bug, key=f"P-{n}", diff=make_diff(new=f"total = {n + 40}"))
    return dataset


@pytest.fixture
def campaign(dataset: Dataset, annotator: User, lead: User) -> Campaign:
    """Every patch for ``annotator`` and one other annotator."""
    people = [annotator, make_annotator("rater-b")]
    return create_campaign(dataset, people, name="Calibration 1", purpose="calibration", actor=lead)


def annotate_url(campaign: Campaign, position: int) -> str:
    return reverse("judging:annotate", args=[campaign.pk, position])


def patch_at(campaign: Campaign, user: User, position: int) -> Any:
    return campaign.assignments.get(annotator=user, position=position).patch


# Roles


def test_lead_pages_are_for_leads_and_annotate_pages_for_annotators(
    campaign: Campaign, lead_client: Client, annotator_client: Client, reviewer_client: Client
) -> None:
    lead_gets = [
        reverse("judging:campaign_list"),
        reverse("judging:campaign_new"),
        reverse("judging:campaign_detail", args=[campaign.pk]),
    ]
    lead_posts = [
        reverse("judging:campaign_close", args=[campaign.pk]),
        reverse("judging:campaign_reopen", args=[campaign.pk]),
    ]
    annotator_gets = [
        reverse("judging:annotate_campaigns"),
        reverse("judging:annotate_queue", args=[campaign.pk]),
        annotate_url(campaign, 1),
    ]
    for url in lead_gets:
        assert lead_client.get(url).status_code == 200
        assert annotator_client.get(url).status_code == 403
        assert reviewer_client.get(url).status_code == 403
    for url in lead_posts:
        assert annotator_client.post(url).status_code == 403
    for url in annotator_gets:
        assert annotator_client.get(url).status_code == 200
        assert lead_client.get(url).status_code == 403
        assert reviewer_client.get(url).status_code == 403
    assert annotator_client.post(annotate_url(campaign, 1)).status_code == 400  # no label
    anonymous = Client().get(annotate_url(campaign, 1))
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))


# Leads


def test_a_lead_creates_a_campaign_from_the_form(
    dataset: Dataset, lead: User, lead_client: Client, annotator: User
) -> None:
    other = make_annotator("rater-c")
    page = lead_client.get(reverse("judging:campaign_new") + "?dataset=labels-demo")
    html = page.content.decode()
    assert f'data-username="{annotator.username}"' in html
    assert 'data-username="lead"' not in html  # only annotators are offered
    # The picker's filter and buttons wait for its script (without it, boxes ticked by hand),
    # and the filter is never posted.
    assert '<div class="picker-tools" id="annotator-tools" hidden>' in html
    assert "js/annotator_picker.js" in html
    assert '<input type="search" id="annotator-filter"' in html
    response = lead_client.post(
        reverse("judging:campaign_new"),
        {
            "dataset": "labels-demo",
            "name": "Pilot",
            "purpose": "calibration",
            "selection": "sample",
            "sample_size": "3",
            "seed": "42",
            "bug_type": "",
            "source": "",
            "tests": "",
            "patch_keys": "",
            "annotators": [annotator.pk, other.pk],
            "overlap": "2",
            "show_rubric": "on",
        },
    )
    campaign = Campaign.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:campaign_detail", args=[campaign.pk])
    assert (campaign.name, campaign.purpose, campaign.sample_size, campaign.seed) == (
        "Pilot",
        "calibration",
        3,
        42,
    )
    assert (campaign.overlap, campaign.show_rubric, campaign.created_by) == (2, True, lead)
    assert campaign.consensus_rule == "unanimous"  # not posted: paper 004's rule
    assert campaign.assignments.count() == 6
    detail = lead_client.get(response["Location"]).content.decode()
    assert "Created campaign &#x27;Pilot&#x27;: 3 patches, 6 labels to give." in detail


def test_a_lead_chooses_the_campaigns_consensus_rule(
    dataset: Dataset, lead_client: Client, annotator: User
) -> None:
    page = lead_client.get(reverse("judging:campaign_new")).content.decode()
    select = page[page.index('name="consensus_rule"') :]
    select = select[: select.index("</select>")]
    assert re.findall(r'<option value="(\w+)"', select) == ["unanimous", "majority"]
    assert '<option value="unanimous" selected>' in select
    assert "Changing the rule" not in page  # that is the queue's help
    assert "which patches wait for adjudication changes with it" in page
    fields = {
        "dataset": "labels-demo",
        "name": "Majority",
        "purpose": "benchmark",
        "selection": "all",
        "annotators": [annotator.pk],
        "overlap": "1",
    }
    refused = lead_client.post(reverse("judging:campaign_new"), fields | {"consensus_rule": "x"})
    assert refused.status_code == 400
    assert not Campaign.objects.exists()
    response = lead_client.post(
        reverse("judging:campaign_new"), fields | {"consensus_rule": "majority"}
    )
    assert response.status_code == 302
    campaign = Campaign.objects.get()
    assert campaign.consensus_rule == "majority"
    detail = lead_client.get(response["Location"]).content.decode()
    assert 'id="campaign-consensus-rule" data-rule="majority"' in detail


def test_the_form_shows_the_service_s_refusals(
    dataset: Dataset, lead_client: Client, annotator: User
) -> None:
    response = lead_client.post(
        reverse("judging:campaign_new"),
        {
            "dataset": "labels-demo",
            "name": "Too many",
            "purpose": "benchmark",
            "selection": "filter",
            "patch_keys": "P-0, NOPE",
            "annotators": [annotator.pk],
            "overlap": "2",
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "the overlap k must be between 1 and the number of annotators (1)" in html
    response = lead_client.post(
        reverse("judging:campaign_new"),
        {
            "dataset": "labels-demo",
            "name": "Unknown keys",
            "purpose": "benchmark",
            "selection": "filter",
            "patch_keys": "P-0, NOPE",
            "annotators": [annotator.pk],
            "overlap": "1",
        },
    )
    assert response.status_code == 400
    assert UNKNOWN_PATCHES.format(keys="NOPE", dataset="Labels demo") in response.content.decode()
    assert not Campaign.objects.exists()


def test_the_lead_sees_progress_labels_and_closes_and_reopens(
    campaign: Campaign, annotator: User, lead_client: Client
) -> None:
    first = patch_at(campaign, annotator, 1)
    annotation_record(
        campaign=campaign, annotator=annotator, patch=first, label="UNSURE", seconds_spent=40
    )
    html = lead_client.get(reverse("judging:campaign_detail", args=[campaign.pk])).content.decode()
    assert 'data-annotator="annotator" data-assigned="4" data-done="1"' in html
    assert 'data-annotator="rater-b" data-assigned="4" data-done="0"' in html
    assert "40 s" in html
    assert f'data-patch="{first.key}"' in html
    assert 'annotator: <span class="label label-unsure">UNSURE</span>' in html
    listing = lead_client.get(reverse("judging:campaign_list") + "?dataset=labels-demo")
    assert "Calibration 1" in listing.content.decode()
    assert lead_client.get(reverse("judging:campaign_list") + "?dataset=nope").status_code == 404

    response = lead_client.post(reverse("judging:campaign_close", args=[campaign.pk]), follow=True)
    campaign.refresh_from_db()
    assert campaign.status == "closed"
    assert CLOSED.format(name="Calibration 1").replace("'", "&#x27;") in response.content.decode()
    response = lead_client.post(reverse("judging:campaign_close", args=[campaign.pk]), follow=True)
    assert "is already closed" in response.content.decode()
    response = lead_client.post(reverse("judging:campaign_reopen", args=[campaign.pk]), follow=True)
    campaign.refresh_from_db()
    assert campaign.status == "open"
    assert REOPENED.format(name="Calibration 1").replace("'", "&#x27;") in response.content.decode()
    assert lead_client.get(reverse("judging:campaign_detail", args=[999])).status_code == 404


# Annotators


def test_the_labelling_page_shows_the_bug_the_golden_rubric_and_the_diff(
    campaign: Campaign, annotator: User, annotator_client: Client
) -> None:
    pages = {
        patch_at(campaign, annotator, n).bug.key: annotator_client.get(
            annotate_url(campaign, n)
        ).content.decode()
        for n in range(1, 5)
    }
    with_rubric, without = pages["BUG-A"], pages["BUG-B"]
    assert "Totals skip the first item" in with_rubric
    assert "<strong>Return two:</strong> f() returns 2 for every caller." in with_rubric
    assert 'class="diff"' in with_rubric  # the project's diff rendering
    for html in pages.values():
        assert "draft-only" not in html
        assert "pending-only" not in html
        for element in (
            'id="annotate-form"',
            'id="label-valid"',
            'id="label-invalid"',
            'id="label-unsure"',
            'data-shortcut="v"',
            'id="annotate-note"',
            'id="annotate-seconds"',
            'id="annotate-progress" data-done="0" data-total="4"',
            "0 of 4",
            "js/annotate.js",
        ):
            assert element in html
    assert 'id="annotate-no-rubric"' in without
    assert "Parser drops the last line" in without


def test_the_bug_description_is_rendered_markdown_sanitized(
    campaign: Campaign, annotator: User, annotator_client: Client
) -> None:
    """Issue 28 item 5: not raw Markdown, and no script of the bug's reporter."""
    bug = patch_at(campaign, annotator, 1).bug
    bug.description = "Calls `total()` **twice**.\n\n<script>alert(1)</script>"
    bug.save()
    html = annotator_client.get(annotate_url(campaign, 1)).content.decode()
    described = html[html.index('id="annotate-bug-description"') :]
    described = described[: described.index("</div>")]
    assert "<code>total()</code>" in described
    assert "<strong>twice</strong>" in described
    assert "**twice**" not in described
    assert "<script>" not in described


def test_a_campaign_without_rubrics_shows_none(
    dataset: Dataset, annotator: User, annotator_client: Client
) -> None:
    campaign = create_campaign(dataset, [annotator], name="No rubric", overlap=1, show_rubric=False)
    for n in range(1, 5):
        html = annotator_client.get(annotate_url(campaign, n)).content.decode()
        assert "Return two" not in html
        assert 'id="annotate-rubric"' not in html


def test_labelling_without_javascript_moves_on_to_the_next_unlabelled_patch(
    campaign: Campaign, annotator: User, annotator_client: Client
) -> None:
    # Patch 2 is labelled already: after patch 1 comes patch 3.
    annotation_record(
        campaign=campaign,
        annotator=annotator,
        patch=patch_at(campaign, annotator, 2),
        label="INVALID",
    )
    response = annotator_client.post(
        annotate_url(campaign, 1), {"label": "VALID", "note": "looks right", "seconds": "12.5"}
    )
    assert response.status_code == 302
    assert response["Location"] == annotate_url(campaign, 3)
    annotation = Annotation.objects.get(annotator=annotator, patch=patch_at(campaign, annotator, 1))
    assert (annotation.label, annotation.note, annotation.seconds_spent) == (
        "VALID",
        "looks right",
        12.5,
    )
    assert annotation.origin == Annotation.Origin.UI
    # A time that does not parse costs nothing but the time.
    response = annotator_client.post(annotate_url(campaign, 3), {"label": "UNSURE", "seconds": "x"})
    assert response["Location"] == annotate_url(campaign, 4)
    assert Annotation.objects.get(patch=patch_at(campaign, annotator, 3)).seconds_spent == 0
    response = annotator_client.post(annotate_url(campaign, 4), {"label": "INVALID"})
    assert response["Location"] == reverse("judging:annotate_queue", args=[campaign.pk])
    queue = annotator_client.get(response["Location"]).content.decode()
    assert 'id="annotate-done"' in queue
    assert "4 of 4" in queue


@pytest.mark.django_db(transaction=True)
def test_two_identical_label_posts_at_once_record_one_label_once(
    campaign: Campaign, annotator: User
) -> None:
    """A double submit, or the same form in two tabs sent at once: one annotation, one row of
    history, the time once (each request on its own connection, as two server threads)."""
    clients = [client_for(annotator), client_for(annotator)]
    url = annotate_url(campaign, 1)
    start = threading.Barrier(len(clients))
    answers: list[int] = []

    def post(client: Client) -> None:
        try:
            start.wait(timeout=10)
            answers.append(client.post(url, {"label": "VALID", "seconds": "20"}).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers == [302, 302]
    annotation = Annotation.objects.get(annotator=annotator)
    assert (annotation.label, annotation.seconds_spent) == ("VALID", 20.0)
    assert list(annotation.revisions.values_list("label", "seconds_spent")) == [("VALID", 20.0)]
    # The same form replayed later adds nothing either.
    clients[0].post(url, {"label": "VALID", "seconds": "20"})
    annotation.refresh_from_db()
    assert (annotation.seconds_spent, annotation.revisions.count()) == (20.0, 1)


def test_changing_a_label_keeps_the_annotator_s_own_history(
    campaign: Campaign, annotator: User, annotator_client: Client
) -> None:
    url = annotate_url(campaign, 1)
    annotator_client.post(url, {"label": "VALID", "note": "first thought"})
    annotator_client.post(url, {"label": "INVALID", "note": "misses a caller"})
    html = annotator_client.get(url).content.decode()
    history = html[html.index('id="annotate-history"') :]
    assert history.index("misses a caller") < history.index("first thought")
    assert re.search(r'id="label-invalid"[^>]*aria-pressed="true"', html)
    assert 'id="annotate-current-label" data-label="INVALID"' in html
    assert ">misses a caller</textarea>" in html
    assert Annotation.objects.get(annotator=annotator, patch=patch_at(campaign, annotator, 1))


def undo_url(campaign: Campaign) -> str:
    return reverse("judging:annotate_undo", args=[campaign.pk])


def undo_revision(html: str) -> str:
    """The revision the page's undo bar offers to undo."""
    bar = html[html.index('id="annotate-undo-bar"') :]
    found = re.search(r'name="revision" value="(\d+)"', bar)
    assert found
    return found.group(1)


def test_a_label_is_confirmed_and_undone_to_its_previous_value_or_to_none(
    campaign: Campaign, annotator: User, annotator_client: Client
) -> None:
    """Issue 28 item 5: after a label the next page says so, with an undo; undoing a first
    label leaves the patch unlabelled, undoing a change brings the previous label back."""
    patch = patch_at(campaign, annotator, 1)
    response = annotator_client.post(annotate_url(campaign, 1), {"label": "VALID"}, follow=True)
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == annotate_url(campaign, 2)
    assert re.search(r'id="annotate-undo-bar"[^>]*data-label="VALID"', html)
    assert "· patch 1</span>" in html
    response = annotator_client.post(
        undo_url(campaign), {"revision": undo_revision(html)}, follow=True
    )
    assert response.redirect_chain[-1][0] == annotate_url(campaign, 1)
    assert "Undid your label VALID: the patch is unlabelled again." in response.content.decode()
    assert not Annotation.objects.filter(patch=patch, annotator=annotator).exists()

    # A change undone: back to the earlier label, note and time; its history as it was.
    annotator_client.post(annotate_url(campaign, 1), {"label": "VALID", "note": "a", "seconds": 5})
    html = annotator_client.post(
        annotate_url(campaign, 1), {"label": "INVALID", "note": "b", "seconds": 7}, follow=True
    ).content.decode()
    revision = undo_revision(html)
    annotator_client.post(undo_url(campaign), {"revision": revision})
    annotation = Annotation.objects.get(patch=patch, annotator=annotator)
    assert (annotation.label, annotation.note, annotation.seconds_spent) == ("VALID", "a", 5.0)
    assert list(annotation.revisions.values_list("label", flat=True)) == ["VALID"]
    # Undone once only; another annotator's label, no id, too long an id: refused, unchanged.
    rater = User.objects.get(username="rater-b")
    annotation_record(campaign=campaign, annotator=rater, patch=patch, label="INVALID")
    theirs = Annotation.objects.get(patch=patch, annotator=rater).revisions.get().pk
    for value in (revision, str(theirs), "x", str(10**30)):
        response = annotator_client.post(undo_url(campaign), {"revision": value}, follow=True)
        assert "Nothing to undo" in response.content.decode()
    assert Annotation.objects.get(patch=patch, annotator=rater).label == "INVALID"
    assert Annotation.objects.get(patch=patch, annotator=annotator).label == "VALID"


def test_the_undo_is_offered_once_and_not_for_a_label_that_changed_nothing(
    campaign: Campaign, annotator: User, annotator_client: Client
) -> None:
    url = annotate_url(campaign, 1)
    first = annotator_client.post(url, {"label": "VALID"}, follow=True).content.decode()
    assert 'id="annotate-undo-bar"' in first
    # Read again: the confirmation was said once.
    assert (
        'id="annotate-undo-bar"'
        not in annotator_client.get(annotate_url(campaign, 2)).content.decode()
    )
    again = annotator_client.post(url, {"label": "VALID"}, follow=True).content.decode()
    assert 'id="annotate-undo-bar"' not in again


def test_a_label_cannot_be_undone_once_its_campaign_is_closed(
    campaign: Campaign, annotator: User, annotator_client: Client, lead: User
) -> None:
    html = annotator_client.post(
        annotate_url(campaign, 1), {"label": "VALID"}, follow=True
    ).content.decode()
    campaign_close(campaign=campaign, actor=lead)
    response = annotator_client.post(undo_url(campaign), {"revision": undo_revision(html)})
    assert Annotation.objects.get(patch=patch_at(campaign, annotator, 1)).label == "VALID"
    assert response.status_code == 302


def test_a_closed_campaign_is_read_only(
    campaign: Campaign, annotator: User, annotator_client: Client, lead: User
) -> None:
    annotation_record(
        campaign=campaign,
        annotator=annotator,
        patch=patch_at(campaign, annotator, 1),
        label="VALID",
    )
    campaign_close(campaign=campaign, actor=lead)
    html = annotator_client.get(annotate_url(campaign, 1)).content.decode()
    assert 'id="annotate-closed"' in html
    assert re.search(r'<fieldset class="annotate-fields"\s+disabled>', html)
    response = annotator_client.post(annotate_url(campaign, 1), {"label": "INVALID"})
    assert response.status_code == 400
    message = CAMPAIGN_CLOSED.format(campaign="Calibration 1").replace("'", "&#x27;")
    assert message in response.content.decode()
    assert Annotation.objects.get(annotator=annotator).label == "VALID"
    queue = annotator_client.get(reverse("judging:annotate_queue", args=[campaign.pk]))
    assert 'id="annotate-closed"' in queue.content.decode()


def test_annotators_reach_only_their_own_campaigns_and_positions(
    campaign: Campaign, dataset: Dataset, annotator: User, annotator_client: Client
) -> None:
    stranger = make_annotator("rater-z")
    theirs = create_campaign(dataset, [stranger], name="Not yours", overlap=1)
    for url in (
        reverse("judging:annotate_queue", args=[theirs.pk]),
        annotate_url(theirs, 1),
        annotate_url(campaign, 5),
        annotate_url(campaign, 0),
        reverse("judging:annotate_queue", args=[999]),
    ):
        assert annotator_client.get(url).status_code == 404
        assert annotator_client.post(url, {"label": "VALID"}).status_code in {404, 405}
    assert not Annotation.objects.exists()
    listing = annotator_client.get(reverse("judging:annotate_campaigns")).content.decode()
    assert "Calibration 1" in listing
    assert "Not yours" not in listing
    assert client_for(stranger).get(annotate_url(theirs, 1)).status_code == 200


def test_my_labels_lists_the_annotator_s_campaigns(
    campaign: Campaign, annotator_client: Client
) -> None:
    html = annotator_client.get(reverse("judging:my_labels")).content.decode()
    assert 'id="my-campaigns"' in html
    assert reverse("judging:annotate_queue", args=[campaign.pk]) in html


# Queries: the lead's and the annotator's pages cost the same whatever the campaign's size.


def queries_of(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_the_pages_run_as_many_queries_for_many_patches_as_for_few(
    annotator: User, lead: User, lead_client: Client, annotator_client: Client
) -> None:
    counts = []
    for size in (2, 8):
        dataset = DatasetFactory()
        for n in range(size):
            bug = BugFactory(dataset=dataset, key=f"BUG-{n}")
            rubric_for(bug, draft=DRAFT_TEXT, golden=GOLDEN_TEXT)
            PatchFactory(bug=bug, key=f"P-{n}", diff=make_diff(new=f"total = {n}"))
        people = [annotator, make_annotator(f"other-{size}")]
        campaign = create_campaign(dataset, people, name=f"Size {size}", actor=lead)
        for position in range(1, size, 2):
            annotation_record(
                campaign=campaign,
                annotator=annotator,
                patch=patch_at(campaign, annotator, position),
                label="VALID",
                note="seen",
            )
        counts.append(
            (
                queries_of(lead_client, campaign.get_absolute_url()),
                queries_of(lead_client, reverse("judging:campaign_list")),
                queries_of(annotator_client, reverse("judging:annotate_queue", args=[campaign.pk])),
                queries_of(annotator_client, annotate_url(campaign, 1)),
            )
        )
    assert counts[0] == counts[1], counts


def test_the_queue_links_each_position_to_its_patch_page(
    campaign: Campaign, annotator: User, annotator_client: Client
) -> None:
    """The queue's links are built from its own address (one reverse, not one a row): each
    is exactly the address ``annotate`` has for that position, and each answers."""
    html = annotator_client.get(reverse("judging:annotate_queue", args=[campaign.pk])).content
    links = re.findall(r'<li data-position="(\d+)"[^>]*><a href="([^"]+)">', html.decode())
    assert len(links) == campaign.assignments.filter(annotator=annotator).count() >= 2
    for position, href in links:
        assert href == reverse("judging:annotate", args=[campaign.pk, int(position)])
        assert annotator_client.get(href).status_code == 200
