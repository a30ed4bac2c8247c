"""403 and 404 pages in the product's layout, with the reason and a way back; an ordinary 403
or 404 is one line in the log, without a traceback (issue 16 item 10)."""

import logging

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_403_says_which_roles_the_page_is_for_in_the_layout(
    annotator_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = annotator_client.get(reverse("judging:run_list"))
    assert response.status_code == 403
    html = response.content.decode()
    assert "This page is for: lead." in html
    assert 'class="topbar"' in html  # the product's layout, with its navigation
    assert "annotator" in html
    assert f'href="{reverse("home")}"' in html
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.getMessage().startswith("Forbidden (Permission denied)")
    assert "Traceback" not in caplog.text


def test_a_404_says_what_was_not_found(
    lead_client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="django.request"):
        missing = lead_client.get(reverse("rubrics:dataset_detail", args=["no-such-dataset"]))
        nowhere = lead_client.get("/no/such/page/")
    for response in (missing, nowhere):
        assert response.status_code == 404
        assert 'class="topbar"' in response.content.decode()
        assert "Back to your start page" in response.content.decode()
    assert "No Dataset matches the given query." in missing.content.decode()
    assert "There is nothing at this address." in nowhere.content.decode()
    assert "/no/such/page/" in nowhere.content.decode()
    assert "Traceback" not in caplog.text
