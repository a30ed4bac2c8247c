import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.judging.factories import AnnotationFactory, UserFactory

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
