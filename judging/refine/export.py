"""The evaluator tester's figures as plain data: what ``refine --format json`` prints and the
page's JSON link serves."""

from typing import Any

from rubrics.ladders.operators import LEVELS
from rubrics.models import Dataset
from sejury_web.llm import OFFLINE_MARKER

from .scores import SEED, Ordering
from .selectors import Ranked

WORST_SHOWN = 5


def ordering_record(figures: Ordering, *, worst: int = WORST_SHOWN) -> dict[str, Any]:
    return {
        "bugs": figures.n_bugs,
        "bugs_unpaired": figures.unpaired,
        "alignment": figures.alignment.as_dict(),
        "alignment_strict": figures.alignment_strict.as_dict(),
        "tau_b": figures.tau_b.as_dict(),
        "level_means": {str(level): e.as_dict() for level, e in figures.level_means.items()},
        "worst_bugs": [
            {
                "bug": order.bug,
                "alignment": order.alignment,
                "tau_b": order.tau_b,
                "scores": {str(level): score for level, score in order.scores.items()},
                "inversions": [f"L{u}<L{v}" for u, v in order.inversions],
            }
            for order in figures.worst(worst)
        ],
    }


def refine_record(ladder: Dataset, ranking: list[Ranked], levels: list[int]) -> dict[str, Any]:
    configurations = []
    for rank, row in enumerate(ranking, start=1):
        evaluator = row.evaluator
        configurations.append(
            {
                "rank": rank,
                "config": evaluator.label,
                "team": list(evaluator.team),
                "member_of": list(evaluator.member_of) or None,
                "context": evaluator.run.context,
                "run": evaluator.run.pk,
                "run_status": evaluator.run.status,
                "provider": evaluator.run.provider,
                "model": evaluator.run.model,
                "offline": evaluator.offline,
                "patches_judged": evaluator.judged,
                "patches_failed": evaluator.failed,
                **ordering_record(row.ordering),
            }
        )
    return {
        "ladder": ladder.name,
        "source": ladder.derived_from.name if ladder.derived_from else None,
        "levels": {str(level): LEVELS[level] for level in levels},
        "bootstrap": {"over": "bugs", "resamples": 1000, "seed": SEED, "confidence": 0.95},
        "configurations": configurations,
        "notes": (
            [f"Offline configurations' scores come from the {OFFLINE_MARKER}."]
            if any(row.evaluator.offline for row in ranking)
            else []
        ),
    }
