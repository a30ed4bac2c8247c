"""400, 403 and 404 pages in the product's layout, with the reason and a way back; an ordinary
one is one line in the log, without a traceback (issue 16 item 10)."""

import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from sejury_web.nul import NUL_IN_VALUE
from tests.api.helpers import bearer, token_for
from tests.rubrics.factories import DatasetFactory

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


def test_a_nul_in_an_address_is_refused_before_any_query_in_words(
    lead_client: Client, lead: User, caplog: pytest.LogCaptureFixture
) -> None:
    """No stored text can hold a NUL; PostgreSQL fails a query comparing with one, which made
    the Users search and every key in a path a 500 there (CI, PostgreSQL)."""
    DatasetFactory(slug="demo")
    with caplog.at_level(logging.WARNING, logger="django.request"):
        search = lead_client.get(reverse("user_list"), {"q": "x\x00y"})
        key = lead_client.get(reverse("rubrics:bug_detail", args=["demo", "B\x00"]))
    assert search.status_code == 400
    assert "The parameter &#x27;q&#x27; holds a NUL character (%00)" in search.content.decode()
    assert 'class="topbar"' in search.content.decode()
    assert key.status_code == 404
    assert "No address holds a NUL character (%00)." in key.content.decode()
    assert "Traceback" not in caplog.text
    assert lead_client.get(reverse("user_list"), {"q": "x"}).status_code == 200

    api = Client(headers=bearer(token_for(lead)))
    listed = api.get("/api/v1/runs", {"dataset": "demo\x00"})
    assert listed.status_code == 422
    assert listed.json()["errors"] == [
        {"line": None, "field": "dataset", "message": "dataset " + NUL_IN_VALUE}
    ]
    assert api.get("/api/v1/datasets/demo%00").status_code == 404
    body = {"dataset": "demo", "team": "s1b", "context": "golden", "name": "run\x00"}
    created = api.post("/api/v1/runs", body, content_type="application/json")
    assert created.status_code == 422
    (error,) = created.json()["errors"]
    assert error["field"].endswith("name")
    assert error["message"].endswith(NUL_IN_VALUE)
