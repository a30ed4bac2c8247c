"""Drafting a rubric through the LLM layer: ``rubric_draft_write`` is what
``rubrics.tasks.rubric_draft_write_task`` calls.

Imports no task, so that tasks can import it.
"""

import dataclasses

from django.db import IntegrityError, transaction

from rubrics.models import Rubric, RubricEvent, RubricRevision
from rubrics.review.prompts import DRAFT_PROMPT_VERSION, draft_request, structure_from_answer
from rubrics.rubric_text import RubricStructureError, rubric_markdown, structure_normalize
from sejury_web.llm import LLMError, Provider, complete

TASK_FAILED = "the drafting task failed unexpectedly: {error}"
DRAFT_UNUSABLE = "the model's draft could not be used: {error}"


def rubric_draft_write(
    *,
    rubric_id: int,
    provider: str = "",
    model: str = "",
    reasoning: str = "",
    attempt: int | None = None,
) -> Rubric:
    """Draft the rubric through the LLM layer (the task's body); idempotent.

    A task of an ``attempt`` older than the rubric's does nothing: a newer one was queued
    (by a starting worker) and writes it. The model is called outside any transaction. If
    another worker wrote the draft meanwhile, this one's answer is dropped (it stays in the
    LLM log and cache).
    """
    rubric = Rubric.objects.select_related("bug").get(pk=rubric_id)
    if rubric.current_number >= 0:
        return rubric
    if attempt is not None and attempt != rubric.draft_attempt:
        return rubric
    request = dataclasses.replace(
        draft_request(
            rubric.bug,
            variant=rubric.variant,
            provider=Provider(provider) if provider else None,
            model=model or None,
        ),
        reasoning=reasoning,
    )
    try:
        response = complete(request)
        structure = structure_normalize(
            structure_from_answer(response.answer, variant=rubric.variant),
            templated=rubric.variant == Rubric.Variant.TEMPLATED,
        )
    except LLMError as error:
        return rubric_draft_fail(rubric, str(error), call_id=error.call_id)
    except RubricStructureError as error:
        message = DRAFT_UNUSABLE.format(error=error)
        return rubric_draft_fail(rubric, message, call_id=response.call_id)
    with transaction.atomic():
        rubric = Rubric.objects.select_for_update().get(pk=rubric_id)
        if rubric.current_number >= 0:
            return rubric
        try:
            with transaction.atomic():
                revision = RubricRevision.objects.create(
                    rubric=rubric,
                    number=0,
                    structure=structure,
                    text=rubric_markdown(structure),
                    author=f"llm:{response.provider}/{response.model}",
                    prompt_version=DRAFT_PROMPT_VERSION,
                    llm_call_id=response.call_id,
                )
        except IntegrityError:  # a concurrent worker on a database without row locks
            return Rubric.objects.get(pk=rubric_id)
        rubric.current_number = 0
        rubric.status = Rubric.Status.IN_REVIEW
        rubric.draft_error = ""
        rubric.draft_call_id = None
        rubric.save()
        RubricEvent.objects.create(
            rubric=rubric, kind=RubricEvent.Kind.DRAFTED, actor=None, revision=revision
        )
    return rubric


def rubric_draft_fail(rubric: Rubric, message: str, *, call_id: int | None = None) -> Rubric:
    """Mark the rubric's draft failed with ``message`` (unless a draft got there first)."""
    with transaction.atomic():
        rubric = Rubric.objects.select_for_update().get(pk=rubric.pk)
        if rubric.current_number >= 0:
            return rubric
        rubric.status = Rubric.Status.DRAFT_FAILED
        rubric.draft_error = message
        rubric.draft_call_id = call_id
        rubric.save()
        RubricEvent.objects.create(
            rubric=rubric, kind=RubricEvent.Kind.DRAFT_FAILED, actor=None, comment=message
        )
    return rubric
