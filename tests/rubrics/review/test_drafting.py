"""Drafting from the dataset page and from the command line, with live progress."""

from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from pytest_django.fixtures import Settings

from rubrics.models import DraftBatch, Rubric
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.services import NO_BUGS, rubric_draft_request, rubric_drafts_resume_unfinished
from rubrics.selectors import UNKNOWN_BUGS
from sejury_web.llm import OFFLINE_MARKER
from sejury_web.llm.models import LLMCall
from sejury_web.llm.offline import OFFLINE_MODEL
from tests.rubrics.factories import BugFactory, DatasetFactory
from tests.sejury_web.llm.fake_servers import OpenAIServer, schema_reply
from tests.sejury_web.llm.helpers import point_at

pytestmark = pytest.mark.django_db


def test_the_dataset_page_offers_drafting_and_counts_rubrics(reviewer_client: Client) -> None:
    bug = BugFactory()
    Rubric.objects.create(bug=bug, variant="templated", status=Rubric.Status.DRAFT_FAILED)

    page = reviewer_client.get(bug.dataset.get_absolute_url())

    assert page.status_code == 200
    assert b"Draft rubrics" in page.content
    assert b"<b>1</b> draft failed" in page.content


def test_drafting_a_dataset_redirects_to_its_live_progress(
    reviewer_client: Client,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    dataset = DatasetFactory()
    BugFactory.create_batch(2, dataset=dataset)
    url = reverse("rubrics:rubric_draft_dataset", args=[dataset.slug])

    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer_client.post(url, {"variant": "templated", "bug_keys": ""})

    batch = DraftBatch.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("rubrics:draft_batch", args=[dataset.slug, batch.pk])
    partial = reviewer_client.get(response.url, headers={"HX-Request": "true"})
    assert b"<b>2</b> drafted" in partial.content
    assert b"every 2s" not in partial.content  # done: the page stops polling


def test_progress_polls_while_drafts_wait(reviewer_client: Client) -> None:
    bug = BugFactory()
    batch = rubric_draft_request(bugs=[bug], variant="templated", actor=None)

    page = reviewer_client.get(reverse("rubrics:draft_batch", args=[bug.dataset.slug, batch.pk]))

    assert b'hx-trigger="every 2s"' in page.content
    assert b"<b>1</b> waiting" in page.content
    assert b"is a worker running?" in page.content


def test_unknown_bug_keys_are_reported_and_nothing_is_queued(reviewer_client: Client) -> None:
    bug = BugFactory()
    url = reverse("rubrics:rubric_draft_dataset", args=[bug.dataset.slug])

    response = reviewer_client.post(
        url, {"variant": "templated", "bug_keys": "NOPE-1"}, follow=True
    )

    assert b"no bug NOPE-1 in this dataset" in response.content
    assert not DraftBatch.objects.exists()


def test_annotators_cannot_draft(annotator_client: Client) -> None:
    bug = BugFactory()
    url = reverse("rubrics:rubric_draft_dataset", args=[bug.dataset.slug])

    assert annotator_client.post(url, {"variant": "templated"}).status_code == 403


@pytest.mark.django_db(transaction=True)
def test_the_command_drafts_and_waits(eager_tasks: None) -> None:
    dataset = DatasetFactory(name="Cmd")
    BugFactory.create_batch(3, dataset=dataset)
    out = StringIO()

    call_command("draft_rubrics", "--dataset", "Cmd", "--wait", stdout=out)

    assert "3/3 (3 drafted, 0 failed)" in out.getvalue()
    assert Rubric.objects.filter(status=Rubric.Status.IN_REVIEW).count() == 3


def test_the_command_says_when_no_worker_picks_the_drafts_up() -> None:
    dataset = DatasetFactory(name="Idle")
    BugFactory(dataset=dataset)

    with pytest.raises(CommandError, match="is a Celery worker running"):
        call_command("draft_rubrics", "--dataset", "Idle", "--wait", "--idle-timeout", "0.5")


def test_the_page_and_draft_rubrics_refuse_alike(reviewer_client: Client) -> None:
    """Unknown bug keys, and a dataset without bugs, are said in one wording at both doors."""
    bug = BugFactory()
    empty = DatasetFactory(name="Empty", slug="empty")
    page = reviewer_client.post(
        reverse("rubrics:rubric_draft_dataset", args=[bug.dataset.slug]),
        {"variant": "templated", "bug_keys": "NOPE-1"},
        follow=True,
    )
    assert UNKNOWN_BUGS.format(keys="NOPE-1") in page.content.decode()
    with pytest.raises(CommandError, match=UNKNOWN_BUGS.format(keys="NOPE-1")):
        call_command("draft_rubrics", "--dataset", bug.dataset.slug, "--bugs", "NOPE-1")
    page = reviewer_client.post(
        reverse("rubrics:rubric_draft_dataset", args=[empty.slug]),
        {"variant": "templated"},
        follow=True,
    )
    assert NO_BUGS in page.content.decode()
    with pytest.raises(CommandError, match=NO_BUGS):
        call_command("draft_rubrics", "--dataset", empty.slug)
    assert not DraftBatch.objects.exists()


def test_a_draft_asked_for_before_a_worker_starts_asks_the_model_once() -> None:
    """The task queued by the request and the one a starting worker queues again are both
    delivered: only the newer attempt drafts; the older does nothing, not a second call."""
    bug = BugFactory()
    rubric_draft_request(bugs=[bug], variant="templated", actor=None, provider="offline")
    [first] = Rubric.objects.filter(bug=bug).values_list("draft_attempt", flat=True)

    assert rubric_drafts_resume_unfinished() == [Rubric.objects.get(bug=bug).pk]
    rubric = Rubric.objects.get(bug=bug)
    assert rubric.draft_attempt == first + 1

    stale = rubric_draft_write(rubric_id=rubric.pk, provider="offline", attempt=first)
    assert stale.status == Rubric.Status.DRAFTING
    assert not LLMCall.objects.exists()

    written = rubric_draft_write(rubric_id=rubric.pk, provider="offline", attempt=first + 1)
    assert written.current_number == 0
    assert LLMCall.objects.count() == 1


# -- the model a batch drafts with (issue 28 item 5) -------------------------------------------


def test_the_dataset_page_offers_a_provider_and_model_the_offline_one_by_default(
    reviewer_client: Client,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    dataset = DatasetFactory()
    BugFactory.create_batch(2, dataset=dataset)
    html = reviewer_client.get(dataset.get_absolute_url()).content.decode()
    form = html.split('id="draft-form"')[1].split("</form>")[0]
    assert '<option value="" selected>Configured default (offline)</option>' in form
    for name in ("provider", "model", "reasoning", "bug_keys"):
        assert f'name="{name}"' in form
    assert 'type="radio" name="variant" value="templated"' in form

    url = reverse("rubrics:rubric_draft_dataset", args=[dataset.slug])
    with django_capture_on_commit_callbacks(execute=True):
        response = reviewer_client.post(url, {"variant": "templated"}, follow=True)

    batch = DraftBatch.objects.get()
    assert (batch.provider, batch.model) == ("offline", OFFLINE_MODEL)
    # The batch page says it once, for the whole batch, not on each row.
    page = response.content.decode()
    assert page.count(OFFLINE_MARKER) == 1
    assert 'id="draft-batch-offline"' in page
    assert f"offline/{OFFLINE_MODEL}" in page


def test_drafts_go_to_the_provider_and_model_chosen_on_the_page(
    reviewer_client: Client,
    openai_server: OpenAIServer,
    settings: Settings,
    tmp_path: Path,
    eager_tasks: None,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    # The configured default stays offline: the page's choice is what sends it to the model.
    point_at(settings, tmp_path, PROVIDER="offline", OPENAI_BASE_URL=openai_server.base_url)
    openai_server.default = schema_reply
    bug = BugFactory()
    url = reverse("rubrics:rubric_draft_dataset", args=[bug.dataset.slug])
    chosen = {"variant": "free_form", "provider": "openai", "model": "gpt-drafter"}

    with django_capture_on_commit_callbacks(execute=True):
        page = reviewer_client.post(url, chosen, follow=True).content.decode()

    batch = DraftBatch.objects.get()
    assert (batch.provider, batch.model) == ("openai", "gpt-drafter")
    [sent] = openai_server.requests
    assert sent.body["model"] == "gpt-drafter"
    revision = Rubric.objects.get(bug=bug).revisions.get(number=0)
    assert revision.author == "llm:openai/gpt-drafter"
    assert "openai/gpt-drafter" in page
    assert OFFLINE_MARKER not in page


def test_a_provider_without_its_key_is_refused_in_the_form_which_keeps_the_choice(
    reviewer_client: Client,
) -> None:
    bug = BugFactory()
    url = reverse("rubrics:rubric_draft_dataset", args=[bug.dataset.slug])

    response = reviewer_client.post(url, {"variant": "free_form", "provider": "gemini"})

    assert response.status_code == 400
    form = response.content.decode().split('id="draft-form"')[1].split("</form>")[0]
    assert "GEMINI_API_KEY" in form.split('class="form-errors"')[1]
    assert '<option value="gemini" selected>' in form
    assert 'value="free_form" id="id_variant_1" required checked>' in form
    assert not DraftBatch.objects.exists()


def test_retrying_a_failed_draft_uses_its_batch_s_model(reviewer_client: Client) -> None:
    bug = BugFactory()
    batch = rubric_draft_request(bugs=[bug], variant="templated", actor=None)
    Rubric.objects.filter(bug=bug).update(status=Rubric.Status.DRAFT_FAILED, draft_error="x")
    page = reviewer_client.get(reverse("rubrics:draft_batch", args=[bug.dataset.slug, batch.pk]))
    retry = page.content.decode().split("Retry")[0].rsplit("<form", 1)[1]
    assert '<input type="hidden" name="provider" value="offline">' in retry
    assert f'<input type="hidden" name="model" value="{OFFLINE_MODEL}">' in retry

    response = reviewer_client.post(
        reverse("rubrics:rubric_draft_bug", args=[bug.dataset.slug, bug.key, "templated"]),
        {"provider": "offline", "model": OFFLINE_MODEL},
    )
    assert response.status_code == 302
    again = DraftBatch.objects.latest("pk")
    assert (again.provider, again.model) == ("offline", OFFLINE_MODEL)
