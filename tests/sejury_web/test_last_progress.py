"""Every page that shows a job's progress says when it last moved, and past two minutes that
nothing is moving: a page never shows progress that is not happening (issue 27)."""

import json
import os
import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judging.models import JudgingRun, PatchJudgment, WebhookDelivery
from rubrics.bundle.upload_execution import progress_file, upload_file
from rubrics.models import BundleUpload, Rubric
from rubrics.review.services import rubric_draft_request
from sejury_web.templatetags.durations import ago, stalled
from tests.api.helpers import TokenClient, token_for
from tests.judging.factories import bug_with_patches
from tests.rubrics.factories import BugFactory

pytestmark = pytest.mark.django_db
Capture = Callable[..., Any]
STALLED = "Nothing has moved for"


def test_ago_says_how_long_ago_as_people_do() -> None:
    now = timezone.now()
    assert ago(now) == "just now"
    assert ago(now - timedelta(seconds=12)) == "12 s ago"
    assert ago(now - timedelta(minutes=3, seconds=59)) == "3 min ago"
    assert ago(now - timedelta(hours=2, minutes=5)) == "2 h ago"
    assert ago(now - timedelta(days=1, hours=5)) == "1 day ago"
    assert ago(now - timedelta(days=4)) == "4 days ago"
    assert ago(None) == ""
    assert not stalled(now - timedelta(seconds=119))
    assert stalled(now - timedelta(seconds=121))
    assert not stalled(None)


def _running_upload(settings: Any, tmp_path: Any, *, progress_age: float) -> BundleUpload:
    settings.VAR_DIR = tmp_path
    upload = BundleUpload.objects.create(
        dataset_name="big",
        path="bundle-uploads/x.jsonl",
        size=10,
        status=BundleUpload.Status.RUNNING,
        started_at=timezone.now() - timedelta(minutes=30),
    )
    BundleUpload.objects.filter(pk=upload.pk).update(created_at=upload.started_at)
    upload_file(upload).parent.mkdir(parents=True)
    path = progress_file(upload)
    path.write_text(json.dumps({"phase": "importing patch records", "percent": 19}))
    moment = time.time() - progress_age
    os.utime(path, (moment, moment))
    return upload


def test_an_upload_says_when_its_import_last_moved(
    lead_client: Client, settings: Any, tmp_path: Any
) -> None:
    upload = _running_upload(settings, tmp_path, progress_age=5)
    page = lead_client.get(upload.get_absolute_url()).content.decode()
    assert "19%" in page
    assert "last progress <time" in page
    assert re.search(r">\d+ s ago</time>", page)  # 5 s, and the time the request took
    assert STALLED not in page


def test_an_upload_whose_worker_died_says_nothing_is_moving(
    lead_client: Client, settings: Any, tmp_path: Any
) -> None:
    upload = _running_upload(settings, tmp_path, progress_age=3 * 60 + 5)
    page = lead_client.get(upload.get_absolute_url(), headers={"HX-Request": "true"})
    html = page.content.decode()
    assert "19%" in html
    assert ">3 min ago</time>" in html
    assert 'data-stalled="true"' in html
    assert f"{STALLED} 3\xa0minutes: is a worker running?" in html
    assert "A worker that starts takes up the import where the stopped one left it." in html


def test_a_draft_batch_says_when_a_draft_was_last_written(reviewer_client: Client) -> None:
    bugs = [BugFactory(), BugFactory()]
    bugs[1].dataset = bugs[0].dataset
    bugs[1].save()
    batch = rubric_draft_request(bugs=bugs, variant="templated", actor=None)
    url = reverse("rubrics:draft_batch", args=[bugs[0].dataset.slug, batch.pk])
    long_ago = timezone.now() - timedelta(minutes=10)
    type(batch).objects.filter(pk=batch.pk).update(created_at=long_ago - timedelta(minutes=1))
    Rubric.objects.filter(bug=bugs[0]).update(status=Rubric.Status.IN_REVIEW, updated_at=long_ago)
    html = reviewer_client.get(url).content.decode()
    assert ">10 min ago</time>" in html
    assert f"{STALLED} 10\xa0minutes" in html

    Rubric.objects.filter(bug=bugs[0]).update(updated_at=timezone.now())
    html = reviewer_client.get(url).content.decode()
    assert re.search(r">(just now|\d s ago)</time>", html)
    assert STALLED not in html


def test_a_run_says_when_it_last_judged_a_patch(lead_client: Client) -> None:
    bug = bug_with_patches(2)
    run = JudgingRun.objects.create(
        dataset=bug.dataset, strategies=["s1b"], context="reference", provider="offline",
        model="m", status=JudgingRun.Status.RUNNING,
    )  # fmt: skip
    JudgingRun.objects.filter(pk=run.pk).update(
        created_at=timezone.now() - timedelta(hours=1),
        started_at=timezone.now() - timedelta(hours=1),
    )
    first, _second = (PatchJudgment.objects.create(run=run, patch=p) for p in bug.patches.all())
    PatchJudgment.objects.filter(pk=first.pk).update(
        status="done", finished_at=timezone.now() - timedelta(minutes=7)
    )
    progress = reverse("judging:run_progress", args=[run.pk])
    html = lead_client.get(progress, headers={"HX-Request": "true"}).content.decode()
    assert ">7 min ago</time>" in html
    assert f"{STALLED} 7\xa0minutes" in html
    assert "takes up the run where the stopped one left it" in html

    PatchJudgment.objects.filter(pk=first.pk).update(finished_at=timezone.now())
    html = lead_client.get(progress, headers={"HX-Request": "true"}).content.decode()
    assert re.search(r">(just now|\d s ago)</time>", html)
    assert STALLED not in html


def test_a_webhook_call_pending_since_long_says_nothing_is_moving(lead_client: Client) -> None:
    bug = bug_with_patches(1)
    run = JudgingRun.objects.create(
        dataset=bug.dataset, strategies=["s1b"], context="reference", provider="offline",
        model="m", status=JudgingRun.Status.FINISHED, webhook_url="https://hooks.example/x",
    )  # fmt: skip
    delivery = WebhookDelivery.objects.create(run=run, generation=0, event="run.finished", url="x")
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        created_at=timezone.now() - timedelta(minutes=4)
    )
    html = lead_client.get(run.get_absolute_url()).content.decode()
    card = html[html.index('id="run-webhook"') :]
    assert "queued <time" in card
    assert ">4 min ago</time>" in card
    assert "Nothing has moved since: is a worker running?" in card


def test_the_api_says_when_an_upload_and_a_run_last_moved(
    lead: User, settings: Any, tmp_path: Any
) -> None:
    api = TokenClient(token_for(lead))
    upload = _running_upload(settings, tmp_path, progress_age=3 * 60 + 5)
    body = api.get(f"/api/v1/uploads/{upload.pk}").json()
    moved = datetime.fromisoformat(body["last_progress_at"])
    assert timedelta(minutes=3) < timezone.now() - moved < timedelta(minutes=4)

    bug = bug_with_patches(1)
    run = JudgingRun.objects.create(
        dataset=bug.dataset, strategies=["s1b"], context="reference", provider="offline",
        model="m", status=JudgingRun.Status.RUNNING,
    )  # fmt: skip
    finished = timezone.now() - timedelta(minutes=7)
    PatchJudgment.objects.create(run=run, patch=bug.patches.get(), status="done")
    PatchJudgment.objects.filter(run=run).update(finished_at=finished)
    JudgingRun.objects.filter(pk=run.pk).update(created_at=finished - timedelta(minutes=1))
    body = api.get(f"/api/v1/runs/{run.pk}").json()
    assert datetime.fromisoformat(body["last_progress_at"]) == finished
