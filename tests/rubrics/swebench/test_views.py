"""The Import page's SWE-bench tab: leads only, the same outcomes as the command."""

import io
import zipfile
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from rubrics.models import Bug, Patch
from tests.rubrics.swebench.helpers import FIXTURES

pytestmark = pytest.mark.django_db
URL = reverse("rubrics:swebench_upload")


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (FIXTURES / name).read_bytes())


def post(client: Client, **files: Any) -> Any:
    return client.post(URL, {"dataset": "SWE-bench Lite", **files})


def test_reviewers_and_annotators_cannot_import(
    reviewer_client: Client, annotator_client: Client
) -> None:
    for client in (reviewer_client, annotator_client):
        assert client.get(URL).status_code == 403
        files = {"instances": upload("instances.jsonl"), "predictions": upload("preds_gpt4.jsonl")}
        assert post(client, **files).status_code == 403
    assert not Bug.objects.exists()


def test_the_page_shows_both_tabs(lead_client: Client) -> None:
    page = lead_client.get(URL).content.decode()
    assert 'id="import-tab-swebench" href="/datasets/import/swebench/" aria-selected="true"' in page
    assert 'name="predictions"' in page
    assert "multiple" in page
    bundle_page = lead_client.get(reverse("rubrics:bundle_upload")).content.decode()
    assert 'id="import-tab-swebench"' in bundle_page
    assert 'name="file"' in bundle_page
    assert "<script>" not in page
    assert "style=" not in page


def test_a_lead_imports_instances_predictions_and_results(lead_client: Client) -> None:
    response = post(
        lead_client,
        instances=upload("instances.jsonl"),
        predictions=[upload("preds_gpt4.jsonl"), upload("preds_claude.json")],
        results=[upload("gpt-4-0613.run1.json")],
    )
    assert response.status_code == 302, response.content.decode()
    assert response["Location"] == reverse("rubrics:dataset_detail", args=["swe-bench-lite"])
    assert Bug.objects.count() == 4
    assert Patch.objects.count() == 6
    page = lead_client.get(response["Location"]).content.decode()
    assert "1 prediction had no patch" in page
    assert "gpt-4-0613.run1.json (run report) of gpt-4-0613: tests pass for 1, fail for 2" in page
    assert Patch.objects.get(key="astropy__astropy-12907@gpt-4-0613").tests_pass is True
    # Again: nothing new.
    again = post(
        lead_client,
        instances=upload("instances.jsonl"),
        predictions=[upload("preds_gpt4.jsonl"), upload("preds_claude.json")],
        results=[upload("gpt-4-0613.run1.json")],
    )
    assert again.status_code == 302
    page = lead_client.get(again["Location"]).content.decode()
    assert "nothing new" in page


def test_errors_name_the_file_line_and_column(lead_client: Client) -> None:
    response = post(
        lead_client,
        instances=upload("instances.jsonl"),
        predictions=[upload("preds_claude.json")],
        results=[upload("results_trailing_comma.json")],
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was imported" in page
    assert "<td><code>results_trailing_comma.json</code></td>" in page
    assert "trailing comma before &#x27;]&#x27;" in page
    assert not Bug.objects.exists()


def test_an_unknown_instance_is_reported_on_the_page(lead_client: Client) -> None:
    response = post(lead_client, predictions=[upload("preds_unknown.jsonl")])
    assert response.status_code == 400
    page = response.content.decode()
    assert '<td><code>preds_unknown.jsonl</code></td><td class="num">2</td>' in page
    assert "unknown instance" in page


def test_predictions_are_required(lead_client: Client) -> None:
    response = post(lead_client, instances=upload("instances.jsonl"))
    assert response.status_code == 400
    assert not Bug.objects.exists()


def test_a_zip_of_the_harness_logs_is_read_on_the_page(lead_client: Client) -> None:
    harness = FIXTURES / "harness"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted((harness / "logs").rglob("report.json")):
            archive.write(path, path.relative_to(harness).as_posix())
    response = post(
        lead_client,
        instances=upload("instances.jsonl"),
        predictions=[upload("preds_gpt4.jsonl")],
        results=[SimpleUploadedFile("logs.zip", buffer.getvalue())],
    )
    assert response.status_code == 302, response.content.decode()
    patch = Patch.objects.get(key="django__django-11099@gpt-4-0613")
    assert patch.tests_pass is False
    page = lead_client.get(patch.get_absolute_url()).content.decode()
    assert 'id="test-evidence"' in page
    assert 'data-list="FAIL_TO_PASS" data-passed="1" data-failed="1"' in page
    assert "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)" in page
