"""A large bundle uploaded through the page is imported by the worker, with live progress;
a failing one shows its line-numbered errors and leaves nothing written."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from judging.models import Annotation
from rubrics.bundle import upload_execution
from rubrics.bundle.upload_execution import (
    FILE_MISSING,
    bundle_upload_fail,
    bundle_upload_run,
    progress_file,
)
from rubrics.bundle.uploads import bundle_uploads_resume_unfinished, upload_progress
from rubrics.models import Bug, BundleImport, BundleUpload, Dataset, Patch
from rubrics.tasks import bundle_upload_run_task
from tests.rubrics.bundles import bug, jsonl, label, patch

pytestmark = pytest.mark.django_db
Capture = Callable[..., Any]


@pytest.fixture(autouse=True)
def small_threshold(settings: Any, tmp_path: Path) -> None:
    """Bundles over 200 bytes go to the worker; uploads are kept in a fresh folder."""
    settings.SEJURY_BUNDLE_WORKER_BYTES = 200
    settings.VAR_DIR = tmp_path


GOOD = jsonl(bug(), bug("BUG-2"), patch(), patch("P-2", "BUG-2"), label(), label("P-2"))


def post(client: Client, data: bytes, capture: Capture, *, execute: bool) -> Any:
    with capture(execute=execute):
        return client.post(
            reverse("rubrics:bundle_upload"),
            {"dataset": "Big one", "file": SimpleUploadedFile("big.jsonl", data)},
        )


def test_a_small_bundle_is_still_imported_by_the_request(
    lead_client: Client, settings: Any, django_capture_on_commit_callbacks: Capture
) -> None:
    settings.SEJURY_BUNDLE_WORKER_BYTES = len(GOOD)
    response = post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    assert response.status_code == 302
    assert response["Location"] == reverse("rubrics:dataset_detail", args=["big-one"])
    assert not BundleUpload.objects.exists()


def test_a_large_bundle_is_queued_then_imported_by_the_worker(
    lead_client: Client,
    lead: User,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    response = post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=True)
    upload = BundleUpload.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("rubrics:bundle_upload_status", args=[upload.pk])
    assert (upload.status, upload.size, upload.filename) == ("done", len(GOOD), "big.jsonl")
    assert upload.uploaded_by == lead
    record = upload.bundle_import
    assert record is not None
    assert record.imported_by == lead
    assert record.dataset.name == "Big one"
    assert (Bug.objects.count(), Patch.objects.count(), Annotation.objects.count()) == (2, 2, 2)
    assert list(Path(upload_execution.upload_file(upload).parent).iterdir()) == []  # cleaned

    page = lead_client.get(response["Location"]).content.decode()
    assert "2 bugs, 2 patches, 2 labels created" in page
    assert 'hx-trigger="every 1s"' not in page  # finished: no more polling
    assert record.dataset.get_absolute_url() in page


def test_a_queued_upload_shows_its_progress_and_polls(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    response = post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    upload = BundleUpload.objects.get()
    assert upload.status == "queued"
    assert upload_execution.upload_file(upload).read_bytes() == GOOD
    page = lead_client.get(response["Location"]).content.decode()
    assert 'hx-trigger="every 1s"' in page
    assert 'value="0"' in page
    # The worker is 40% through: the partial htmx swaps in says so.
    BundleUpload.objects.filter(pk=upload.pk).update(status="running")
    progress = {"phase": "importing label records", "percent": 40}
    progress_file(upload).write_text(json.dumps(progress))
    partial = lead_client.get(response["Location"], headers={"HX-Request": "true"})
    html = partial.content.decode()
    assert "<html" not in html
    assert 'value="40"' in html
    assert "importing label records" in html
    assert 'hx-trigger="every 1s"' in html


def test_the_worker_writes_progress_as_it_goes(
    lead_client: Client,
    django_capture_on_commit_callbacks: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    upload = BundleUpload.objects.get()
    monkeypatch.setattr(upload_execution, "PROGRESS_EVERY", 0)
    seen: list[int] = []
    real_import = upload_execution.bundle_import

    def watching(**kwargs: Any) -> Any:
        progress = kwargs["progress"]

        def spy(phase: str, fraction: float) -> None:
            progress(phase, fraction)
            seen.append(upload_progress(BundleUpload.objects.get(pk=upload.pk)).percent)

        return real_import(**kwargs | {"progress": spy})

    monkeypatch.setattr(upload_execution, "bundle_import", watching)
    bundle_upload_run(upload_id=upload.pk)
    assert seen
    assert seen[-1] == 100
    assert seen == sorted(seen)
    assert BundleUpload.objects.get().status == "done"


def test_a_failing_large_bundle_lists_its_errors_and_writes_nothing(
    lead_client: Client, eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> None:
    data = GOOD + jsonl(label("NOPE"), "{broken")
    response = post(lead_client, data, django_capture_on_commit_callbacks, execute=True)
    upload = BundleUpload.objects.get()
    assert upload.status == "failed"
    assert [(e["line"], e["field"]) for e in upload.errors] == [(7, "patch"), (8, None)]
    assert not Dataset.objects.exists()
    assert not Bug.objects.exists()
    assert not Annotation.objects.exists()
    page = lead_client.get(response["Location"]).content.decode()
    assert "Nothing was imported" in page
    assert "unknown patch &#x27;NOPE&#x27;" in page
    assert '<td class="num">7</td>' in page
    assert '<td class="num">8</td>' in page


def test_running_the_task_again_changes_nothing(
    lead_client: Client, eager_tasks: None, django_capture_on_commit_callbacks: Capture
) -> None:
    post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=True)
    upload = BundleUpload.objects.get()
    assert bundle_upload_run_task.delay(upload.pk).get() == "done"
    assert Dataset.objects.get().imports.count() == 1


def test_a_crash_in_the_worker_fails_the_upload_and_writes_nothing(
    lead_client: Client,
    django_capture_on_commit_callbacks: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    upload = BundleUpload.objects.get()

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("judging.annotations.bundle.LabelKind.write", crash)
    result = bundle_upload_run_task.apply(args=[upload.pk])
    assert result.failed()
    upload.refresh_from_db()
    assert upload.status == "failed"
    assert "RuntimeError: disk on fire" in upload.errors[0]["message"]
    assert not Dataset.objects.exists()
    assert not Bug.objects.exists()


def test_a_missing_file_fails_the_upload(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    upload = BundleUpload.objects.get()
    upload_execution.upload_file(upload).unlink()
    assert bundle_upload_run(upload_id=upload.pk).errors[0]["message"] == FILE_MISSING


def test_the_upload_page_is_for_leads(
    lead_client: Client,
    reviewer_client: Client,
    annotator_client: Client,
    django_capture_on_commit_callbacks: Capture,
) -> None:
    response = post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    assert reviewer_client.get(response["Location"]).status_code == 403
    assert annotator_client.get(response["Location"]).status_code == 403


def test_an_import_a_starting_worker_queued_again_rolls_back_and_the_new_attempt_imports(
    lead_client: Client,
    django_capture_on_commit_callbacks: Capture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker starts while another is still importing (slow, not dead): the old import
    must not commit, or the bundle would be imported twice."""
    post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    upload = BundleUpload.objects.get()
    real_import = upload_execution.bundle_import

    def resumed_meanwhile(**kwargs: Any) -> Any:
        assert bundle_uploads_resume_unfinished() == [upload.pk]  # another worker starts
        return real_import(**kwargs)

    monkeypatch.setattr(upload_execution, "bundle_import", resumed_meanwhile)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        bundle_upload_run(upload_id=upload.pk, attempt=0)
    upload.refresh_from_db()
    assert (upload.status, upload.attempt) == ("queued", 1)
    assert not Dataset.objects.exists()  # rolled back
    assert upload_execution.upload_file(upload).is_file()  # kept for the new attempt
    assert [(c.args[0].name, c.args[1]) for c in queued] == [
        ("rubrics.import_bundle_upload", (upload.pk, 1))
    ]

    monkeypatch.setattr(upload_execution, "bundle_import", real_import)
    bundle_upload_run_task.run(upload.pk, 0)  # the old message, delivered again: nothing
    assert BundleUpload.objects.get().status == "queued"
    bundle_upload_run_task.run(upload.pk, 1)
    upload.refresh_from_db()
    assert upload.status == "done"
    assert (Bug.objects.count(), Patch.objects.count(), BundleImport.objects.count()) == (2, 2, 1)


def test_a_failure_of_an_older_attempt_leaves_the_upload_to_the_newer(
    lead_client: Client, django_capture_on_commit_callbacks: Capture
) -> None:
    post(lead_client, GOOD, django_capture_on_commit_callbacks, execute=False)
    upload = BundleUpload.objects.get()
    with django_capture_on_commit_callbacks(execute=False):
        bundle_uploads_resume_unfinished()
    bundle_upload_fail(upload_id=upload.pk, message="killed", attempt=0)
    assert BundleUpload.objects.get().status == "queued"
    bundle_upload_fail(upload_id=upload.pk, message="killed", attempt=1)
    assert BundleUpload.objects.get().status == "failed"
