"""Celery tasks of the rubrics app: thin, idempotent, taking ids."""

from typing import Any

from celery import shared_task
from celery.contrib.django.task import DjangoTask

from rubrics.models import Rubric
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
