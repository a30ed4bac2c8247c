"""Builders of judging objects (users, labels, campaigns) and of bugs ready to be judged."""

from typing import Any

import factory
from django.contrib.auth.models import User
from django.db import transaction
from factory.django import DjangoModelFactory

from judging.annotations.services import campaign_create
from judging.models import Annotation, Campaign, JudgingRun, Label, PatchJudgment, StrategyResult
from judging.runs.selectors import RUN_CREATE
from judging.runs.services import run_check
from judging.tasks import run_start_task
from rubrics.models import Bug, Dataset, Patch, Rubric
from rubrics.review.drafting import rubric_draft_write
from rubrics.review.services import rubric_confirm, rubric_revise, rubric_submit
from sejury_web.audit import audit_record
from sejury_web.durable import enqueue_on_commit
from tests.rubrics.factories import BugFactory, PatchFactory, make_diff


class UserFactory(DjangoModelFactory):  # type: ignore[misc]
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")


class AnnotationFactory(DjangoModelFactory):  # type: ignore[misc]
    class Meta:
        model = Annotation

    patch = factory.SubFactory(PatchFactory)
    annotator = factory.SubFactory(UserFactory)
    label = Label.VALID
    origin = Annotation.Origin.UI


def bug_with_patches(count: int, **fields: Any) -> Bug:
    """A bug whose reference sets x = 2 and whose patches set x = 3, 4, …: no two alike.

    Runs judge a bug's patches in the order of their keys: ``<bug key>-0``, ``-1``, …
    """
    bug = BugFactory(**fields)
    for number in range(count):
        PatchFactory(bug=bug, key=f"{bug.key}-{number}", diff=make_diff(new=f"x = {number + 3}"))
    return bug


def make_golden(bug: Bug) -> None:
    """Give ``bug`` a golden rubric: its offline draft, confirmed as it is."""
    rubric = rubric_draft_write(rubric_id=Rubric.objects.create(bug=bug).pk, provider="offline")
    rubric.golden_revision = rubric.revisions.get(number=0)
    rubric.status = Rubric.Status.GOLDEN
    rubric.save()


def confirm_revision(rubric: Rubric, structure: dict[str, Any], people: tuple[User, User]) -> int:
    """Save ``structure`` as the rubric's next revision (by the first of ``people``) and have
    the second confirm it golden; the revision's number."""
    author, confirmer = people
    rubric.refresh_from_db()
    revision = rubric_revise(
        rubric=rubric,
        base_number=rubric.current_number,
        structure=structure,
        justification="The standard changed.",
        actor=author,
    )
    rubric_submit(rubric=rubric, base_number=revision.number, actor=author)
    rubric_confirm(rubric=rubric, base_number=revision.number, actor=confirmer)
    rubric.refresh_from_db()
    assert rubric.golden_revision_id == revision.pk
    return revision.number


def create_campaign(dataset: Dataset, people: list[User], **fields: Any) -> Campaign:
    """``campaign_create`` of every patch with ``people``: a benchmark, k=2, the rubric shown."""
    arguments: dict[str, Any] = {
        "dataset": dataset,
        "name": "Round 1",
        "purpose": Campaign.Purpose.BENCHMARK,
        "selection": Campaign.Selection.ALL,
        "annotators": people,
        "overlap": 2,
        "show_rubric": True,
        "actor": None,
    } | fields
    return campaign_create(**arguments)


def finished_run(
    dataset: Dataset,
    judgments: dict[Patch, tuple[str, dict[str, dict[str, Any]]]],
    *,
    team: list[str],
    provider: str = "offline",
    model: str = "heuristic-v1",
    **fields: Any,
) -> JudgingRun:
    """A finished run made by hand: per patch, the team's verdict ("" for a failed judgment)
    and each member's result fields (status done unless given)."""
    run = JudgingRun.objects.create(
        dataset=dataset,
        strategies=team,
        context=fields.pop("context", "golden"),
        provider=provider,
        model=model,
        status=fields.pop("status", JudgingRun.Status.FINISHED),
        **fields,
    )
    for patch, (verdict, members) in judgments.items():
        judgment = PatchJudgment.objects.create(
            run=run,
            patch=patch,
            status=PatchJudgment.Status.DONE if verdict else PatchJudgment.Status.FAILED,
            verdict=verdict,
            score=None if not verdict else 100.0 if verdict == Label.VALID else 0.0,
        )
        for strategy, result in members.items():
            StrategyResult.objects.create(
                judgment=judgment,
                strategy=strategy,
                **{"status": StrategyResult.Status.DONE, "prompt_version": "test", **result},
            )
    return run


def written_rating_run(
    dataset: Dataset, member: str, ratings: dict[Patch, Any], dimension: str = "maintainability"
) -> JudgingRun:
    """A finished reference run of one written judge (``member``, ``name@N``) rating
    ``dimension`` of each patch (no rating where the value is None), every verdict VALID."""
    judgments = {
        patch: (
            Label.VALID,
            {
                member: {
                    "score": 50.0,
                    "verdict": Label.VALID,
                    "prompt_version": f"written:{member}",
                    "answers": {}
                    if rating is None
                    else {"judge": {"dimensions": {dimension: {"rating": rating, "reason": "r"}}}},
                }
            },
        )
        for patch, rating in ratings.items()
    }
    return finished_run(dataset, judgments, team=[member], context="reference")


def unchecked_run(
    *,
    dataset: Dataset,
    strategies: str,
    context: str,
    threshold: float = 50.0,
    scale_lo: float = 0.0,
    scale_hi: float = 100.0,
) -> JudgingRun:
    """A run of every patch of ``dataset``, written and queued as ``run_create`` writes and
    queues one, but without its pre-flight: patches that lack what the team needs (a golden
    rubric) are judged too, and each such member fails at judging time. For the tests of how
    a run handles failures; no door can start such a run."""
    team, provider, model = run_check(
        strategies=strategies,
        context=context,
        threshold=threshold,
        scale_lo=scale_lo,
        scale_hi=scale_hi,
    )
    patch_ids = list(dataset.patches.order_by("pk").values_list("pk", flat=True))
    with transaction.atomic():
        run = JudgingRun.objects.create(
            dataset=dataset,
            strategies=team,
            context=context,
            provider=provider,
            model=model,
            scale_lo=scale_lo,
            scale_hi=scale_hi,
            threshold=threshold,
        )
        PatchJudgment.objects.bulk_create([PatchJudgment(run=run, patch_id=pk) for pk in patch_ids])
        audit_record(actor=None, action=RUN_CREATE, target=run, detail={"patches": len(patch_ids)})
        enqueue_on_commit(run_start_task, run.pk, run.generation)
    return run
