"""The judge beside the humans on one patch: every judging run's verdict on it next to the human
consensus (the patch page, through the ``VerdictSource`` that ``JudgingConfig.ready()``
registers with ``rubrics.selectors``), and one verdict against the consensus and the labels
(the verdict page, leads only).

The consensus is the dataset's (its rule, or a lead's adjudication), as on every dataset-wide
page and in a run's export. Only judging runs count, not a reviewer's rubric previews. Each
read costs the same number of queries however many runs judged the patch and however large
its dataset is.
"""

import dataclasses

from judging.consensus.rules import PatchConsensus, State
from judging.consensus.selectors import (
    GivenLabel,
    JudgeAgreement,
    judge_agreement,
    labels_of,
    patches_consensus,
)
from judging.models import JudgingRun, PatchJudgment, StrategyResult
from judging.runs.uncertainty import margin
from judging.strategies.registry import STRATEGIES
from rubrics.models import Patch
from rubrics.selectors import MemberVerdict, PatchVerdicts, RunVerdict

# How a consensus was reached, or why there is none yet, in words.
STATE_WORDS = {
    State.UNANIMOUS: "unanimous",
    State.MAJORITY: "a two-thirds majority",
    State.ADJUDICATED: "adjudicated by a lead",
    State.DISPUTED: "annotators disagree: waits for a lead",
    State.TOO_FEW: "fewer than two decisive labels",
}
NO_LABEL = "no label yet"


def consensus_words(consensus: PatchConsensus) -> str:
    if consensus.state == State.TOO_FEW and not consensus.labels:
        return NO_LABEL
    return STATE_WORDS[consensus.state]


def _member_label(name: str) -> str:
    strategy = STRATEGIES.get(name)
    return strategy.label if strategy is not None else name


class ConsensusVerdicts:
    """The ``VerdictSource`` of the patch page: each judging run's verdict on a patch, its
    members and margin, beside the consensus, in four queries."""

    def patch_verdicts(self, *, patch: Patch) -> PatchVerdicts:
        consensus = patches_consensus(dataset=patch.dataset, patch_ids=[patch.pk])[patch.pk]
        judgments = list(
            PatchJudgment.objects.filter(patch=patch, run__kind=JudgingRun.Kind.RUN)
            .select_related("run")
            .only(
                "id",
                "status",
                "score",
                "verdict",
                "run_id",
                "run__id",
                "run__name",
                "run__strategies",
                "run__context",
                "run__scale_lo",
                "run__scale_hi",
                "run__threshold",
                "run__created_at",
            )
            .order_by("-run__created_at", "-run_id")
        )
        results: dict[int, dict[str, tuple[str, float | None, str]]] = {}
        rows = StrategyResult.objects.filter(judgment__in=[j.pk for j in judgments]).values_list(
            "judgment_id", "strategy", "status", "score", "verdict"
        )
        for judgment_id, strategy, status, score, verdict in rows:
            results.setdefault(judgment_id, {})[strategy] = (status, score, verdict)
        runs = []
        for judgment in judgments:
            run, found = judgment.run, results.get(judgment.pk, {})
            members = []
            for name in run.strategies:
                status, score, verdict = found.get(name, ("", None, ""))
                members.append(MemberVerdict(name, _member_label(name), status, score, verdict))
            runs.append(
                RunVerdict(
                    run_id=run.pk,
                    run_name=f"Run {run.pk}: {run.name}" if run.name else f"Run {run.pk}",
                    run_url=run.get_absolute_url(),
                    verdict_url=judgment.get_absolute_url(),
                    status=judgment.status,
                    verdict=judgment.verdict,
                    score=judgment.score,
                    scale_lo=run.scale_lo,
                    scale_hi=run.scale_hi,
                    threshold=run.threshold,
                    margin=None if judgment.score is None else margin(judgment.score, run),
                    agreement=judge_agreement(judgment.verdict, consensus).value,
                    members=tuple(members),
                )
            )
        return PatchVerdicts(
            runs=tuple(runs),
            consensus=consensus.consensus,
            consensus_state=consensus_words(consensus),
        )


@dataclasses.dataclass(frozen=True)
class VerdictHumans:
    """The humans beside one verdict: the consensus, how it was reached, whether the judge
    agrees with it, and who said what (the verdict page is the leads')."""

    consensus: str | None
    consensus_state: str
    agreement: JudgeAgreement
    labels: list[GivenLabel]  # by annotator name


def verdict_humans(*, judgment: PatchJudgment) -> VerdictHumans:
    """The consensus on ``judgment``'s patch and its labels, in three queries."""
    patch = judgment.patch
    consensus = patches_consensus(dataset=patch.dataset, patch_ids=[patch.pk])[patch.pk]
    return VerdictHumans(
        consensus=consensus.consensus,
        consensus_state=consensus_words(consensus),
        agreement=judge_agreement(judgment.verdict, consensus),
        labels=labels_of(patch_id=patch.pk),
    )
