"""``bundle_submit`` decides, for the Import page and the API alike, whether a bundle is
imported by the request or queued for the worker, and its refusal is the same at both doors."""

import html
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from rubrics.bundle.base import BundleImportError, ImportSummary
from rubrics.bundle.uploads import bundle_submit
from rubrics.models import BundleUpload, Dataset
from tests.api.helpers import NDJSON, TokenClient, token_for
from tests.rubrics.bundles import bug, jsonl, patch

pytestmark = pytest.mark.django_db

GOOD = jsonl(bug(), patch())
# Line 2's patch names a bug that is neither in the file nor in the dataset.
BAD = jsonl(bug(), patch("P-9", "BUG-404"))


@pytest.fixture(autouse=True)
def uploads_folder(settings: Any, tmp_path: Path) -> None:
    settings.VAR_DIR = tmp_path


def test_a_small_bundle_is_imported_and_a_large_one_queued(lead: User, settings: Any) -> None:
    settings.SEJURY_BUNDLE_WORKER_BYTES = len(GOOD)
    now = bundle_submit(actor=lead, file=SimpleUploadedFile("b.jsonl", GOOD), dataset_name="D")
    assert isinstance(now, ImportSummary)
    assert now.dataset == Dataset.objects.get(name="D")
    settings.SEJURY_BUNDLE_WORKER_BYTES = len(GOOD) - 1
    later = bundle_submit(actor=lead, file=SimpleUploadedFile("b.jsonl", GOOD), dataset_name="E")
    assert isinstance(later, BundleUpload)
    assert later.status == BundleUpload.Status.QUEUED


def test_the_page_and_the_api_say_the_service_s_refusal(
    lead: User, lead_client: Client, settings: Any
) -> None:
    settings.SEJURY_BUNDLE_WORKER_BYTES = 10_000
    with pytest.raises(BundleImportError) as refused:
        bundle_submit(actor=lead, file=SimpleUploadedFile("b.jsonl", BAD), dataset_name="D")
    messages = [error.message for error in refused.value.errors]
    assert messages

    page = lead_client.post(
        reverse("rubrics:bundle_upload"),
        {"dataset": "D", "file": SimpleUploadedFile("b.jsonl", BAD)},
    )
    assert page.status_code == 400
    text = html.unescape(page.content.decode())
    assert all(message in text for message in messages)

    answer = TokenClient(token_for(lead)).post("/api/v1/datasets/D/bundle", BAD, NDJSON)
    assert answer.status_code == 422
    assert [error["message"] for error in answer.json()["errors"]] == messages
    assert not Dataset.objects.exists()
