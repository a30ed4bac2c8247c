"""Celery tasks of the rubrics app: thin, idempotent, taking ids."""

from celery import shared_task

from rubrics.review.drafting import rubric_draft_write


@shared_task(name="rubrics.draft_rubric", acks_late=True)
def draft_rubric(rubric_id: int, *, provider: str = "", model: str = "") -> str:
    """Draft one rubric; a second delivery finds the draft written and does nothing."""
    rubric = rubric_draft_write(rubric_id=rubric_id, provider=provider, model=model)
    return rubric.status
