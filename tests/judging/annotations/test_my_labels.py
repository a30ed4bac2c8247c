import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from judging.annotations.services import annotation_record, campaign_close
from judging.models import Assignment
from tests.judging.factories import AnnotationFactory, UserFactory, create_campaign
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db


def test_annotators_see_their_own_labels_and_nobody_elses(
    annotator_client: Client, annotator: User
) -> None:
    mine = AnnotationFactory(annotator=annotator, note="my own note")
    AnnotationFactory(
        patch=mine.patch, annotator=UserFactory(username="someone-else"), note="their note"
    )
    html = annotator_client.get(reverse("judging:my_labels")).content.decode()
    assert "my own note" in html
    assert "their note" not in html
    assert "someone-else" not in html


def test_my_labels_is_for_annotators(reviewer_client: Client) -> None:
    assert reviewer_client.get(reverse("judging:my_labels")).status_code == 403


def rows_of(html: str) -> list[str]:
    """The rows of the labels table, each from its bug key on."""
    return html.split('<tr data-bug="')[1:]


def test_each_label_links_to_its_place_and_says_when_it_is_final(
    annotator_client: Client, annotator: User, lead: User
) -> None:
    """Issue 16 items 8 and 17: each row names its bug and its place in the annotator's queue
    (never the patch's key), links there while its campaign is open, and says a closed
    campaign's label is final."""
    dataset = DatasetFactory(name="Places")
    closure = BugFactory(dataset=dataset, key="Closure-2")
    for n, bug in enumerate([closure, closure, BugFactory(dataset=dataset, key="Lang-7")]):
        PatchFactory(bug=bug, key=f"toolname-{n}-p1")
    open_round = create_campaign(dataset, [annotator], name="Round 1", overlap=1)
    first, second, third = (
        Assignment.objects.get(campaign=open_round, annotator=annotator, position=n)
        for n in (1, 2, 3)
    )
    for assignment, label in ((first, "VALID"), (second, "INVALID")):
        annotation_record(
            campaign=open_round, annotator=annotator, patch=assignment.patch, label=label
        )
    # Given in a campaign now closed: final, though the patch is in an open one too.
    closed_round = create_campaign(dataset, [annotator], name="Round 0", overlap=1)
    annotation_record(campaign=closed_round, annotator=annotator, patch=third.patch, label="UNSURE")
    campaign_close(campaign=closed_round, actor=lead)
    # Imported, of a patch in none of the annotator's campaigns.
    math = BugFactory(dataset=dataset, key="Math-3")
    PatchFactory(bug=math, key="toolname-x-p1")
    AnnotationFactory(
        annotator=annotator, patch=PatchFactory(bug=math, key="toolname-x-p9"), origin="imported"
    )

    html = annotator_client.get(reverse("judging:my_labels")).content.decode()
    assert "toolname" not in html
    rows = rows_of(html)
    assert len(rows) == 4
    for assignment in (first, second):
        url = reverse("judging:annotate", args=[open_round.pk, assignment.position])
        (row,) = (r for r in rows if f'href="{url}"' in r)
        assert row.startswith(assignment.patch.bug.key)
        assert f'>Patch {assignment.position} of 3</a> <span class="muted">in Round 1' in row
        assert 'data-changeable="true"' in row
        assert f'<a class="button" href="{url}">Change</a>' in row
    (final,) = (r for r in rows if "UNSURE" in r)
    assert 'data-changeable="false"' in final
    assert "Final: Round 0 is closed" in final
    assert ">Change</a>" not in final
    (imported,) = (r for r in rows if r.startswith("Math-3"))
    assert "Not in your campaigns" in imported
    # Which patch of its bug (issue 28 item 5): by its place, as the queue tells it, not its key.
    assert "Patch 2 of 2 of bug Math-3" in imported
    assert ">Change</a>" not in imported
    # The link opens the patch at its place, where its label can be changed.
    url = reverse("judging:annotate", args=[open_round.pk, first.position])
    page = annotator_client.get(url).content.decode()
    assert f"<title>Bug {first.patch.bug.key} · patch {first.position} of 3 in Round 1" in page
    assert 'id="label-invalid"' in page
    assert 'fieldset class="annotate-fields" disabled' not in page
