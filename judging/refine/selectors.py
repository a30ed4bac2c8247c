"""The evaluator tester's reads: every judging run on a ladder dataset is one configuration
(team × context × model); each is scored by how well it keeps the ladders' expected order
(``scores``), and so is each member of a team, from the same run's member scores."""

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.shortcuts import get_object_or_404

from judging.models import JudgingRun, PatchJudgment, StrategyResult
from rubrics.ladders.operators import LEVELS
from rubrics.ladders.services import DERIVATION, SOURCE_PREFIX
from rubrics.models import Dataset
from sejury_web.llm import Provider

from .scores import Ordering, ordering

LEVEL_OF_SOURCE = re.compile(rf"^{re.escape(SOURCE_PREFIX)}(\d)$")


@dataclass(frozen=True)
class Evaluator:
    """What one row of the ranking scores: a run's team, or one member of it (a
    configuration as a lead writes it is ``services.Configuration``)."""

    run: JudgingRun
    team: tuple[str, ...]  # the strategies whose score this row orders
    member_of: tuple[str, ...] = ()  # the run's team, when this row is one of its members
    judged: int = 0  # patches with a score
    failed: int = 0

    @property
    def label(self) -> str:
        return ",".join(self.team) + (
            "" if self.run.context == "reference" else f"@{self.run.context}"
        )

    @property
    def model(self) -> str:
        return (
            self.run.provider
            if self.run.provider == Provider.OFFLINE
            else (f"{self.run.provider}/{self.run.model}")
        )

    @property
    def offline(self) -> bool:
        return self.run.provider == Provider.OFFLINE


@dataclass(frozen=True)
class Ranked:
    evaluator: Evaluator
    ordering: Ordering


def ladder_datasets() -> QuerySet[Dataset]:
    """Every ladder dataset, with its source and its counts."""
    return (
        Dataset.objects.filter(derivation=DERIVATION)
        .select_related("derived_from")
        .annotate(
            bug_count=Count("bugs", distinct=True), patch_count=Count("patches", distinct=True)
        )
        .order_by("name")
    )


def ladder_get(*, slug: str) -> Dataset:
    """A ladder dataset with the dataset it was built from, or 404."""
    ladders = Dataset.objects.select_related("derived_from").filter(derivation=DERIVATION)
    return get_object_or_404(ladders, slug=slug)


def source_datasets() -> QuerySet[Dataset]:
    """The datasets ladders can be built from, with their bugs that have a reference fix."""
    return (
        Dataset.objects.filter(derived_from__isnull=True)
        .annotate(
            fixes=Count("bugs", filter=~Q(bugs__reference_patch=""), distinct=True),
        )
        .order_by("name")
    )


def level_of(source: str) -> int | None:
    found = LEVEL_OF_SOURCE.match(source)
    return int(found.group(1)) if found else None


def ladder_level_counts(ladder: Dataset) -> dict[int, int]:
    """Patches per level of the ladder dataset."""
    counts: dict[int, int] = dict.fromkeys(LEVELS, 0)
    for source, n in ladder.patches.values_list("source").annotate(n=Count("id")):
        level = level_of(source)
        if level is not None:
            counts[level] = n
    return counts


def ladder_skips(ladder: Dataset) -> list[tuple[int, str, int]]:
    """(level, reason, bugs) for every level the operators skipped, most frequent first."""
    counts: dict[tuple[int, str], int] = defaultdict(int)
    for metadata in ladder.bugs.values_list("metadata", flat=True):
        for level, reason in (metadata or {}).get("ladder", {}).get("skipped", {}).items():
            counts[(int(level), reason)] += 1
    return sorted(
        ((level, reason, n) for (level, reason), n in counts.items()),
        key=lambda item: (item[0], -item[2], item[1]),
    )


def ladder_runs(ladder: Dataset, run_ids: Iterable[int] | None = None) -> list[JudgingRun]:
    """The ladder's judging runs (not previews), newest first; only ``run_ids`` if given."""
    runs = ladder.judging_runs.filter(kind=JudgingRun.Kind.RUN)
    if run_ids is not None:
        runs = runs.filter(pk__in=list(run_ids))
    return list(runs.order_by("-created_at", "-pk"))


def _to_hundred(run: JudgingRun, score: float) -> float:
    """A run's team score on 0–100, whatever the run's scale (members are on 0–100)."""
    span = run.scale_hi - run.scale_lo
    return (score - run.scale_lo) / span * 100 if span else score


def refine_ranking(
    ladder: Dataset,
    *,
    runs: list[JudgingRun],
    levels: Iterable[int] | None = None,
    members: bool = True,
) -> list[Ranked]:
    """Every run (and, with ``members``, each member of a team of two or more) scored and
    ranked: best alignment first, then τ-b. Two queries whatever the ladder's size."""
    run_by_id = {run.pk: run for run in runs}
    team_scores: dict[int, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    judged: dict[int, int] = defaultdict(int)
    failed: dict[int, int] = defaultdict(int)
    rows = PatchJudgment.objects.filter(run_id__in=run_by_id).values_list(
        "run_id", "status", "score", "patch__bug__key", "patch__source"
    )
    for run_id, status, score, bug, source in rows:
        level = level_of(source)
        if status == PatchJudgment.Status.FAILED:
            failed[run_id] += 1
        if level is None or score is None or status != PatchJudgment.Status.DONE:
            continue
        judged[run_id] += 1
        team_scores[run_id][bug][level] = _to_hundred(run_by_id[run_id], score)
    ranked = [
        Ranked(
            Evaluator(run, tuple(run.strategies), judged=judged[run.pk], failed=failed[run.pk]),
            ordering(team_scores[run.pk], levels=levels),
        )
        for run in runs
    ]
    teams = [run for run in runs if len(run.strategies) > 1]
    if members and teams:
        member_scores: dict[tuple[int, str], dict[str, dict[int, float]]] = defaultdict(
            lambda: defaultdict(dict)
        )
        results = StrategyResult.objects.filter(
            judgment__run_id__in=[run.pk for run in teams],
            status=StrategyResult.Status.DONE,
            score__isnull=False,
        ).values_list(
            "judgment__run_id",
            "strategy",
            "score",
            "judgment__patch__bug__key",
            "judgment__patch__source",
        )
        for run_id, strategy, score, bug, source in results:
            level = level_of(source)
            if level is not None and score is not None:
                member_scores[(run_id, strategy)][bug][level] = score
        for run in teams:
            for strategy in run.strategies:
                scores = member_scores[(run.pk, strategy)]
                evaluator = Evaluator(
                    run,
                    (strategy,),
                    member_of=tuple(run.strategies),
                    judged=sum(len(levels_) for levels_ in scores.values()),
                )
                ranked.append(Ranked(evaluator, ordering(scores, levels=levels)))
    ranked.sort(key=_rank_key)
    return ranked


def _rank_key(row: Ranked) -> tuple[float, float, int]:
    figures = row.ordering
    alignment = figures.alignment.value
    tau = figures.tau_b.value
    return (
        -(alignment if alignment is not None else -1.0),
        -(tau if tau is not None else -2.0),
        row.evaluator.run.pk,
    )
