"""Celery tasks of the rubrics app: thin, idempotent, taking ids; each named after the
function it calls, with ``_task``, and declared with ``sejury_web.durable.durable_task``."""

from rubrics.bundle.upload_execution import TASK_FAILED as UPLOAD_FAILED
from rubrics.bundle.upload_execution import bundle_upload_fail, bundle_upload_run
from rubrics.models import BundleUpload, Rubric
from rubrics.review.drafting import TASK_FAILED, rubric_draft_fail, rubric_draft_write
from sejury_web.durable import durable_task


def _draft_failed(rubric_id: int, *, error: str, **_: str) -> None:
    """The draft is marked failed, never left "drafting"."""
    rubric = Rubric.objects.filter(pk=rubric_id).first()
    if rubric is not None:
        rubric_draft_fail(rubric, TASK_FAILED.format(error=error))


@durable_task(name="rubrics.draft_rubric", on_failure=_draft_failed)
def rubric_draft_write_task(
    rubric_id: int,
    *,
    provider: str = "",
    model: str = "",
    reasoning: str = "",
    attempt: int | None = None,
) -> str:
    """Draft one rubric; a second delivery finds the draft written, or a newer attempt
    queued, and does nothing."""
    rubric = rubric_draft_write(
        rubric_id=rubric_id, provider=provider, model=model, reasoning=reasoning, attempt=attempt
    )
    return rubric.status


def _upload_failed(upload_id: int, attempt: int = 0, *, error: str) -> None:
    """The upload is marked failed (nothing was imported: the import's transaction rolled
    back), never left "importing", unless a newer attempt holds it."""
    if BundleUpload.objects.filter(pk=upload_id).exists():
        message = UPLOAD_FAILED.format(error=error)
        bundle_upload_fail(upload_id=upload_id, message=message, attempt=attempt)


@durable_task(name="rubrics.import_bundle_upload", on_failure=_upload_failed)
def bundle_upload_run_task(upload_id: int, attempt: int = 0) -> str:
    """Import an uploaded bundle as its ``attempt`` (0 until a starting worker queues it
    again); a second delivery finds it finished, or superseded, and does nothing."""
    return bundle_upload_run(upload_id=upload_id, attempt=attempt).status
