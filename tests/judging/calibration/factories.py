"""Builders for the calibration tests: a labelled campaign and a finished run, with costs."""

from decimal import Decimal
from typing import Any

from judging.models import Assignment, Campaign, JudgingRun, PatchJudgment, StrategyResult
from rubrics.models import Dataset, Patch
from sejury_web.llm.models import LLMCall
from tests.judging.factories import AnnotationFactory, UserFactory


def llm_call(cost: str | None) -> int:
    """The id of a successful LLM call that cost ``cost`` dollars (None: unknown)."""
    return LLMCall.objects.create(
        purpose="judge",
        provider="openai",
        model="gpt-4o-mini",
        request_hash="h",
        status=LLMCall.Status.OK,
        cost_usd=None if cost is None else Decimal(cost),
    ).pk


def campaign_of(dataset: Dataset, labels: dict[Patch, tuple[str, ...]], **fields: Any) -> Campaign:
    """A campaign assigning ``labels``' patches, each labelled by ann, bob… as given."""
    campaign = Campaign.objects.create(
        dataset=dataset, name=fields.pop("name", "Calibration sample"), purpose="calibration"
    )
    for position, (patch, given) in enumerate(labels.items(), 1):
        for index, label in enumerate(given):
            annotator = UserFactory(username=f"annotator{index}")
            AnnotationFactory(patch=patch, annotator=annotator, label=label)
        Assignment.objects.create(
            campaign=campaign,
            patch=patch,
            annotator=UserFactory(username="annotator0"),
            position=position,
        )
    return campaign


def run_of(
    dataset: Dataset,
    strategies: list[str],
    scores: dict[Patch, dict[str, float | None]],
    *,
    cost: str | None = "0.001",
    **fields: Any,
) -> JudgingRun:
    """A finished run: each patch's member scores (None: the member failed), one call each."""
    run = JudgingRun.objects.create(
        dataset=dataset,
        strategies=strategies,
        context="reference",
        provider="openai",
        model="gpt-4o-mini",
        status=JudgingRun.Status.FINISHED,
        **fields,
    )
    for patch, members in scores.items():
        judgment = PatchJudgment.objects.create(
            run=run, patch=patch, status=PatchJudgment.Status.DONE
        )
        for name, score in members.items():
            StrategyResult.objects.create(
                judgment=judgment,
                strategy=name,
                status=StrategyResult.Status.FAILED if score is None else "done",
                score=score,
                prompt_version="test",
                call_ids=[llm_call(cost)] if name not in ("bleu", "chrf", "edit") else [],
            )
    return run
