"""The Label Studio card of a campaign and of a dataset: leads export tasks and the config,
and import annotations; annotators and reviewers are refused."""

import json
import xml.etree.ElementTree as ET

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from judging.annotations.labelstudio.names import PATCH_FIELD
from judging.models import Annotation, Campaign
from rubrics.models import Dataset
from tests.judging.annotations import test_labelstudio as shared
from tests.judging.annotations.labelstudio_files import Given, labelstudio_export, patch_ids
from tests.judging.annotations.test_labelstudio import ANN, BEA, EXPECTED, GIVEN, labels_of
from tests.judging.factories import finished_run

pytestmark = pytest.mark.django_db

# The round trip's dataset, annotators and campaign.
dataset, people, campaign = shared.dataset, shared.people, shared.campaign


def urls(campaign: Campaign) -> dict[str, str]:
    slug = campaign.dataset.slug
    return {
        "campaign page": reverse("judging:campaign_labelstudio", args=[campaign.pk]),
        "campaign tasks": reverse("judging:campaign_labelstudio_tasks", args=[campaign.pk]),
        "campaign config": reverse("judging:campaign_labelstudio_config", args=[campaign.pk]),
        "dataset page": reverse("judging:dataset_labelstudio", args=[slug]),
        "dataset tasks": reverse("judging:dataset_labelstudio_tasks", args=[slug]),
        "dataset config": reverse("judging:dataset_labelstudio_config", args=[slug]),
    }


def upload(content: bytes, name: str = "export.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/json")


def test_only_leads_reach_label_studio(
    campaign: Campaign, annotator_client: Client, reviewer_client: Client, lead_client: Client
) -> None:
    for name, url in urls(campaign).items():
        for client in (annotator_client, reviewer_client):
            assert client.get(url).status_code == 403, name
            assert client.post(url, {}).status_code in (403, 405), name
        assert lead_client.get(url).status_code == 200, name
    assert not Annotation.objects.exists()


def test_the_campaign_page_has_the_card(campaign: Campaign, lead_client: Client) -> None:
    run = finished_run(campaign.dataset, {}, team=["s1b"], name="nightly")
    page = lead_client.get(campaign.get_absolute_url()).content.decode()
    assert 'id="labelstudio"' in page
    assert f'action="{urls(campaign)["campaign tasks"]}"' in page
    assert f'href="{urls(campaign)["campaign config"]}"' in page
    assert f'<option value="{run.pk}">Run {run.pk} nightly: s1b · heuristic-v1 · offline' in page
    dataset_page = lead_client.get(campaign.dataset.get_absolute_url()).content.decode()
    assert urls(campaign)["dataset page"] in dataset_page


def test_the_downloads(campaign: Campaign, lead_client: Client) -> None:
    run = finished_run(
        campaign.dataset, {campaign.dataset.patches.get(key="P-1"): ("VALID", {})}, team=["s3"]
    )
    response = lead_client.get(urls(campaign)["campaign tasks"])
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="labelstudio-campaign-{campaign.pk}-tasks.json"'
    )
    tasks = json.loads(response.content)
    assert [t["data"][PATCH_FIELD] for t in tasks] == patch_ids(["P-0", "P-1", "P-2", "P-3"])
    assert all("predictions" not in t for t in tasks)
    with_run = json.loads(
        lead_client.get(urls(campaign)["campaign tasks"], {"run": run.pk}).content
    )
    assert [len(t["predictions"]) for t in with_run] == [0, 1, 0, 0]
    assert lead_client.get(urls(campaign)["campaign tasks"], {"run": 9999}).status_code == 400
    config = lead_client.get(urls(campaign)["dataset config"])
    assert config["Content-Disposition"] == 'attachment; filename="labelstudio-ls-demo-config.xml"'
    assert ET.fromstring(config.content).tag == "View"  # noqa: S314 - our own output


def test_a_lead_imports_an_export_on_the_campaign_page(
    campaign: Campaign, lead_client: Client
) -> None:
    tasks = json.loads(lead_client.get(urls(campaign)["campaign tasks"]).content)
    content = json.dumps(labelstudio_export(tasks, GIVEN)).encode()
    response = lead_client.post(
        urls(campaign)["campaign page"], {"file": upload(content)}, follow=True
    )
    assert response.redirect_chain == [(campaign.get_absolute_url(), 302)]
    assert "7 labels created, 0 updated, 0 unchanged; 1 skipped" in response.content.decode()
    assert labels_of(campaign.dataset) == EXPECTED


def test_an_import_with_errors_shows_them_and_imports_nothing(
    campaign: Campaign, lead_client: Client, lead: User
) -> None:
    tasks = json.loads(lead_client.get(urls(campaign)["campaign tasks"]).content)
    exported = labelstudio_export(
        tasks, {0: [Given(ANN, "VALID")], 1: [Given(BEA, "PERHAPS")]}, user_details=False
    )
    response = lead_client.post(
        urls(campaign)["campaign page"], {"file": upload(json.dumps(exported).encode())}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was imported" in page
    assert "Label Studio user ids only (11, 12)" in page
    assert "GET /api/users" in page
    # With the users file, the unknown choice remains.
    users = upload(b'{"11": "annotator", "12": "rater-b"}', "users.json")
    response = lead_client.post(
        urls(campaign)["campaign page"],
        {"file": upload(json.dumps(exported).encode()), "users": users},
    )
    assert response.status_code == 400
    assert "unknown label &#x27;PERHAPS&#x27;" in response.content.decode()
    assert not Annotation.objects.exists()
    # No file: the form says so.
    assert lead_client.post(urls(campaign)["dataset page"], {}).status_code == 400


def test_a_dataset_import_goes_back_to_the_dataset(
    dataset: Dataset, campaign: Campaign, lead_client: Client
) -> None:
    tasks = json.loads(lead_client.get(urls(campaign)["dataset tasks"]).content)
    content = json.dumps(labelstudio_export(tasks, {0: [Given(ANN, "INVALID", "no")]})).encode()
    response = lead_client.post(urls(campaign)["dataset page"], {"file": upload(content)})
    assert response["Location"] == dataset.get_absolute_url()
    assert labels_of(dataset) == {("P-0", "annotator"): ("INVALID", "no")}
