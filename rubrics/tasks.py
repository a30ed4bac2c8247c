"""Celery tasks of the rubrics app: thin, idempotent, taking ids."""

from typing import Any

from celery import shared_task
from celery.contrib.django.task import DjangoTask

from rubrics.bundle.upload_execution import TASK_FAILED as UPLOAD_FAILED
from rubrics.bundle.upload_execution import bundle_upload_fail, bundle_upload_run
from rubrics.models import BundleUpload, Rubric
from rubrics.review.drafting import TASK_FAILED, rubric_draft_fail, rubric_draft_write


class _FailsTheDraft(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught marks the draft failed, never leaves it "drafting"."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        (rubric_id,) = args
        rubric = Rubric.objects.filter(pk=rubric_id).first()
        if rubric is not None:
            message = TASK_FAILED.format(error=f"{type(exc).__name__}: {exc}")
            rubric_draft_fail(rubric, message)


@shared_task(name="rubrics.draft_rubric", base=_FailsTheDraft, acks_late=True)
def draft_rubric(rubric_id: int, *, provider: str = "", model: str = "") -> str:
    """Draft one rubric; a second delivery finds the draft written and does nothing."""
    rubric = rubric_draft_write(rubric_id=rubric_id, provider=provider, model=model)
    return rubric.status


class _FailsTheUpload(DjangoTask):  # keeps delay_on_commit
    """An exception nothing caught marks the upload failed (nothing was imported: the
    import's transaction rolled back), never leaves it "importing"."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        (upload_id,) = args
        if BundleUpload.objects.filter(pk=upload_id).exists():
            message = UPLOAD_FAILED.format(error=f"{type(exc).__name__}: {exc}")
            bundle_upload_fail(upload_id=upload_id, message=message)


@shared_task(name="rubrics.import_bundle_upload", base=_FailsTheUpload, acks_late=True)
def import_bundle_upload(upload_id: int) -> str:
    """Import an uploaded bundle; a second delivery finds it finished and does nothing."""
    return bundle_upload_run(upload_id=upload_id).status
