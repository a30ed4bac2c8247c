"""Where the rubric judge and the human consensus disagree, for the rubric that guided it:
the ``DisagreementSource`` that ``JudgingConfig.ready()`` registers with
``rubrics.review.disagreements``.

Only judging runs count (not a reviewer's rubric previews), and of each patch only the rubric
judge's latest result with a revision of the rubric: what the judge says now. The consensus is
the dataset's (its rule, or a lead's adjudication), as on every dataset-wide page.
"""

from collections.abc import Iterable

from django.db.models import QuerySet

from judging.consensus.rules import PatchConsensus, State, patch_consensus
from judging.models import (
    Adjudication,
    Annotation,
    DisagreementTheme,
    JudgingRun,
    Label,
    StrategyResult,
)
from rubrics.models import ConsensusRule, Dataset, natural_sort_key
from rubrics.review.disagreements import HumanLabel, JudgeDisagreement, disagreement_key
from rubrics.review.prompts import RequirementCheck

RUBRIC_STRATEGY = "rubric"
DECISIVE = (Label.VALID, Label.INVALID)
THEME_LABELS = dict(DisagreementTheme.choices)
STATE_LABELS = {
    State.UNANIMOUS: "unanimous",
    State.MAJORITY: "two-thirds majority",
    State.ADJUDICATED: "adjudicated",
}


def _rubric_results() -> QuerySet[StrategyResult]:
    return StrategyResult.objects.filter(
        strategy=RUBRIC_STRATEGY,
        status=StrategyResult.Status.DONE,
        verdict__in=DECISIVE,
        rubric_revision__isnull=False,
        judgment__run__kind=JudgingRun.Kind.RUN,
    )


def _consensus(dataset_ids: Iterable[int]) -> dict[int, PatchConsensus]:
    """The consensus of every labelled patch of these datasets, each under its dataset's rule,
    in three queries that sort nothing (as ``dataset_consensus``: a patch's labels are in no
    particular order; the models' default order joined the dataset to sort them all)."""
    dataset_ids = list(dataset_ids)
    rules = dict(Dataset.objects.filter(pk__in=dataset_ids).values_list("pk", "consensus_rule"))
    labels: dict[int, dict[int, str]] = {}
    dataset_of: dict[int, int] = {}
    annotations = Annotation.objects.filter(patch__dataset_id__in=dataset_ids).order_by()
    for patch_id, dataset_id, annotator_id, label in annotations.values_list(
        "patch_id", "patch__dataset_id", "annotator_id", "label"
    ):
        labels.setdefault(patch_id, {})[annotator_id] = label
        dataset_of[patch_id] = dataset_id
    decided: dict[int, str] = {}
    adjudications = Adjudication.objects.filter(patch__dataset_id__in=dataset_ids).order_by()
    for patch_id, dataset_id, label in adjudications.values_list(
        "patch_id", "patch__dataset_id", "label"
    ):
        decided[patch_id] = label
        dataset_of[patch_id] = dataset_id
    return {
        patch_id: patch_consensus(
            patch_id,
            labels.get(patch_id, {}),
            decided.get(patch_id),
            ConsensusRule(rules[dataset_of[patch_id]]),
        )
        for patch_id in labels.keys() | decided.keys()
    }


def _checks(answers: dict) -> tuple[RequirementCheck, ...]:
    """The judge's pass/fail per requirement, as it answered (malformed items left out)."""
    judge = answers.get("judge")
    items = judge.get("requirements") if isinstance(judge, dict) else None
    checks = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("passed"), bool):
            continue
        index = item.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            checks.append(RequirementCheck(index, item["passed"], str(item.get("reason", ""))))
    return tuple(sorted(checks, key=lambda check: check.index))


class ConsensusDisagreements:
    """The rubric judge's disagreements with the human consensus, per rubric: the
    ``DisagreementSource`` of this app (``rubrics.review.disagreements.RubricDisagreements``
    is one rubric's, split into open and answered)."""

    def rubric_keys(self) -> dict[int, set[str]]:
        rows = _rubric_results().values_list(
            "pk",
            "judgment__patch_id",
            "judgment__patch__dataset_id",
            "verdict",
            "rubric_revision__rubric_id",
        )
        latest: dict[tuple[int, int], tuple[int, str]] = {}
        datasets: set[int] = set()
        for result_id, patch_id, dataset_id, verdict, rubric_id in rows.order_by("pk"):
            latest[rubric_id, patch_id] = (result_id, verdict)
            datasets.add(dataset_id)
        consensus = _consensus(datasets)
        keys: dict[int, set[str]] = {}
        for (rubric_id, patch_id), (result_id, verdict) in latest.items():
            human = consensus.get(patch_id)
            if human is not None and human.consensus and human.consensus != verdict:
                keys.setdefault(rubric_id, set()).add(disagreement_key(result_id, human.consensus))
        return keys

    def rubric_disagreements(self, *, rubric_id: int) -> list[JudgeDisagreement]:
        results = (
            _rubric_results()
            .filter(rubric_revision__rubric_id=rubric_id)
            .select_related("judgment__patch__dataset", "judgment__run", "rubric_revision")
            .order_by("pk")
        )
        latest: dict[int, StrategyResult] = {}
        for result in results:
            latest[result.judgment.patch_id] = result
        if not latest:
            return []
        dataset_id = next(iter(latest.values())).judgment.patch.dataset_id
        consensus = _consensus([dataset_id])
        differing = {
            patch_id: (result, consensus[patch_id])
            for patch_id, result in latest.items()
            if patch_id in consensus
            and consensus[patch_id].consensus
            and consensus[patch_id].consensus != result.verdict
        }
        notes: dict[int, list[HumanLabel]] = {}
        annotations = (
            Annotation.objects.filter(patch_id__in=differing)
            .order_by("patch_id", "created_at", "pk")
            .values_list("patch_id", "label", "note")
        )
        for patch_id, label, note in annotations:
            notes.setdefault(patch_id, []).append(HumanLabel(label=label, note=note))
        adjudications = {a.patch_id: a for a in Adjudication.objects.filter(patch_id__in=differing)}
        rows = []
        for patch_id, (result, human) in differing.items():
            patch = result.judgment.patch
            adjudication = adjudications.get(patch_id)
            themes = adjudication.themes if adjudication else []
            rows.append(
                JudgeDisagreement(
                    key=disagreement_key(result.pk, str(human.consensus)),
                    patch_id=patch_id,
                    patch_key=patch.key,
                    patch_url=patch.get_absolute_url(),
                    source=patch.source,
                    tests_pass=patch.tests_pass,
                    diff=patch.diff,
                    judge_verdict=result.verdict,
                    human_label=str(human.consensus),
                    consensus_state=STATE_LABELS.get(human.state, str(human.state)),
                    justification=result.reasoning,
                    requirements=_checks(result.answers),
                    revision_number=result.rubric_revision.number if result.rubric_revision else 0,
                    run_name=result.judgment.run.name or str(result.judgment.run),
                    verdict_url=result.judgment.get_absolute_url(),
                    labels=tuple(notes.get(patch_id, ())),
                    themes=tuple(THEME_LABELS.get(t, str(t)) for t in themes or []),
                    adjudication_note=adjudication.note if adjudication else "",
                    is_offline=result.is_offline,
                )
            )
        return sorted(rows, key=lambda row: natural_sort_key(row.patch_key))
