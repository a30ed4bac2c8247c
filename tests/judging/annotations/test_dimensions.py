"""Rated dimensions: a lead's campaign asks annotators to rate named dimensions on ordinal
scales besides the label; each rating is kept with the label and its history."""

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from judging.annotations.dimensions import campaign_dimensions_parse
from judging.annotations.services import CampaignError, annotation_record, annotation_undo
from judging.dimensions import Dimension, DimensionsError
from judging.models import Annotation, AnnotationRevision, Campaign
from tests.judging.annotations.test_views import annotate_url, make_annotator, patch_at
from tests.judging.factories import create_campaign
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db
DIMENSIONS = [Dimension("maintainability", 1, 5), Dimension("security", 0, 2)]


@pytest.fixture
def rated(annotator: User) -> Campaign:
    dataset = DatasetFactory(name="Rated", slug="rated")
    bug = BugFactory(dataset=dataset, key="RATED-1")
    for n in range(3):
        PatchFactory(bug=bug, key=f"R-{n}", diff=make_diff(new=f"y = {n}"))
    return create_campaign(
        dataset, [annotator, make_annotator("rater-r")], name="Rated round", dimensions=DIMENSIONS
    )


def test_a_campaign_s_scales_are_digits_a_judge_s_lines_otherwise() -> None:
    assert campaign_dimensions_parse("maintainability 1..5\n\n security 0-2 ") == DIMENSIONS
    with pytest.raises(DimensionsError, match=re.escape("line 1: the scale of ok must run")):
        campaign_dimensions_parse("ok 1..10")
    with pytest.raises(DimensionsError, match=re.escape("0–9 (digits: a rating is one key)")):
        campaign_dimensions_parse("ok 1..10")


def test_a_lead_s_campaign_form_stores_the_dimensions_or_says_what_is_wrong(
    lead_client: Client, annotator: User, annotator_client: Client
) -> None:
    dataset = DatasetFactory(name="Form", slug="form")
    PatchFactory(bug=BugFactory(dataset=dataset), key="F-1")
    page = lead_client.get(reverse("judging:campaign_new")).content.decode()
    assert 'name="dimensions"' in page
    post = {
        "dataset": "form", "name": "Rate", "purpose": "benchmark", "selection": "all",
        "annotators": [annotator.pk], "overlap": "1",
        "dimensions": "maintainability 1..5 Easy to change later?\nsecurity 0..2",
    }  # fmt: skip
    bad = lead_client.post(reverse("judging:campaign_new"), post | {"dimensions": "speed 1..12"})
    assert bad.status_code == 400
    assert "the scale of speed must run" in bad.content.decode()
    assert not Campaign.objects.exists()
    response = lead_client.post(reverse("judging:campaign_new"), post)
    assert response.status_code == 302
    campaign = Campaign.objects.get()
    assert campaign.dimensions == [
        {"name": "maintainability", "low": 1, "high": 5, "description": "Easy to change later?"},
        {"name": "security", "low": 0, "high": 2, "description": ""},
    ]
    detail = lead_client.get(response["Location"]).content.decode()
    assert "maintainability 1–5 (Easy to change later?), security 0–2" in detail
    page = annotator_client.get(annotate_url(campaign, 1)).content.decode()
    assert "Easy to change later?" in page  # the annotator reads what a dimension measures


def test_the_labelling_page_rates_each_dimension_on_its_scale(
    rated: Campaign, annotator: User, annotator_client: Client
) -> None:
    page = annotator_client.get(annotate_url(rated, 1)).content.decode()
    for value in range(1, 6):
        assert f'id="rating-maintainability-{value}"' in page
    assert 'id="rating-maintainability-0"' not in page  # off the scale
    assert 'id="rating-security-0"' in page
    assert 'id="rating-security-3"' not in page
    # A dimension may be left unrated; an off-scale rating is refused, nothing recorded.
    off = annotator_client.post(
        annotate_url(rated, 1), {"label": "VALID", "rating-maintainability": "7"}
    )
    assert off.status_code == 400
    assert not Annotation.objects.exists()
    response = annotator_client.post(
        annotate_url(rated, 1),
        {"label": "VALID", "rating-maintainability": "4", "rating-security": ""},
    )
    assert response.status_code == 302
    patch = patch_at(rated, annotator, 1)
    annotation = Annotation.objects.get(patch=patch, annotator=annotator)
    assert annotation.ratings == {"maintainability": 4}
    again = annotator_client.get(annotate_url(rated, 1)).content.decode()
    assert 'value="4" id="rating-maintainability-4" checked' in again
    assert 'value="" id="rating-security-none" checked' in again
    # A changed rating is a new value in the label's history; undo goes back to the old one.
    changed = annotation_record(
        campaign=rated, annotator=annotator, patch=patch, label="VALID",
        ratings={"maintainability": 2, "security": 1},
    )  # fmt: skip
    assert changed.ratings == {"maintainability": 2, "security": 1}
    revisions = AnnotationRevision.objects.filter(annotation=changed).order_by("id")
    assert [r.ratings for r in revisions] == [
        {"maintainability": 4},
        {"maintainability": 2, "security": 1},
    ]
    undone = annotation_undo(campaign=rated, annotator=annotator, revision_id=revisions[1].pk)
    assert undone is not None
    assert undone.ratings == {"maintainability": 4}
    with pytest.raises(CampaignError, match="this campaign rates no dimension 'speed'"):
        annotation_record(
            campaign=rated, annotator=annotator, patch=patch, label="VALID", ratings={"speed": 1}
        )
