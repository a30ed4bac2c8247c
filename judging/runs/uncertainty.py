"""How sure a run is of each verdict, from what the run already stores: the first step of
routing verdicts to humans (paper 004 §8, low-confidence routing).

Four signals, each read off a finished judgment and its members' results:

- ``margin``: the team score's distance from the run's threshold, as a share of the scale
  (0 on the threshold, 1 at the far end of the scale). The smaller, the less sure.
- ``spread``: the highest minus the lowest member score (0–100). The larger, the less sure.
- ``split``: some members score on one side of the threshold and some on the other.
- ``rubric``: the rubric judge's verdict differs from the team's.

The ordering (most uncertain first) sorts by the chosen signal, then by margin, then by
spread, then by patch key: the same data always gives the same order. ``margin`` is the
default: it is what the team's own verdict depends on.
"""

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from operator import itemgetter

from django.db.models import F, Value
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Abs

from judging.models import JudgingRun, PatchJudgment, StrategyResult

SIGNALS = {
    "margin": "Closest to the threshold",
    "spread": "Members furthest apart",
    "split": "Members on both sides of the threshold",
    "rubric": "Rubric judge against the team",
}
DEFAULT_SIGNAL = "margin"
RUBRIC_MEMBER = "rubric"
UNKNOWN_SIGNAL = "unknown signal {signal!r}: use one of {signals}"


@dataclasses.dataclass(frozen=True)
class Uncertainty:
    """One finished verdict and how sure the run is of it."""

    judgment_id: int
    patch_id: int
    patch_key: str
    bug_key: str
    verdict: str
    score: float
    margin: float  # |score − threshold| / (hi − lo)
    spread: float  # 0–100; 0 for a team of one
    split: bool
    rubric_disagrees: bool  # False without a rubric member's verdict


def margin(score: float, run: JudgingRun) -> float:
    """The score's distance from the run's threshold as a share of its scale."""
    return abs(score - run.threshold) / (run.scale_hi - run.scale_lo)


def margin_expression(run: JudgingRun) -> CombinedExpression:
    """``margin`` in the database, for a ``PatchJudgment`` query to sort by."""
    return Abs(F("score") - Value(run.threshold)) / Value(run.scale_hi - run.scale_lo)


def member_threshold(run: JudgingRun) -> float:
    """The run's threshold on the members' 0–100 scale."""
    return 100.0 * (run.threshold - run.scale_lo) / (run.scale_hi - run.scale_lo)


def margin_ranking(run: JudgingRun) -> list[int]:
    """The patch ids of ``run``'s finished verdicts in the default ordering (``margin``,
    then the wider spread, then the patch key): one query and no member read, for a report
    of thousands of patches. The same order as ``uncertainty_order(run_uncertainties(run))``
    (sorted here, not by the database, whose collation may order keys otherwise)."""
    rows = (
        PatchJudgment.objects.filter(run=run, status=PatchJudgment.Status.DONE, score__isnull=False)
        .exclude(verdict="")
        .order_by()
        .values_list("patch_id", "score", "spread", "patch__key")
    )
    return margin_order(rows, run)


def margin_order(
    rows: Iterable[tuple[int, float | None, float | None, str]], run: JudgingRun
) -> list[int]:
    """The patch ids of (patch id, score, spread, patch key) rows of ``run``'s finished
    verdicts in ``margin_ranking``'s order: for a caller that has read them already.

    Sorted by (margin, −spread, key) as one stable ``np.lexsort`` of arrays, the keys as
    their places in Python's string order (a sort of 10,000 tuples was most of a report's
    routing curve). ``margin``'s arithmetic, inlined. Where floats have no order (a NaN) or
    the scale has no width, the tuples themselves are sorted."""
    # Imported here: a worker (which imports this module through the consensus) starts
    # without numpy; the pages and reports that sort have it already.
    import numpy as np

    rows = list(rows)
    size = len(rows)
    threshold, width = run.threshold, run.scale_hi - run.scale_lo
    scores = np.fromiter((score or 0.0 for _, score, _, _ in rows), np.float64, size)
    spreads = np.fromiter((spread or 0.0 for _, _, spread, _ in rows), np.float64, size)
    if not width or np.isnan(scores).any() or np.isnan(spreads).any():
        keyed = [
            (abs((score or 0.0) - threshold) / width, -(spread or 0.0), key, patch_id)
            for patch_id, score, spread, key in rows
        ]
        keyed.sort(key=itemgetter(0, 1, 2))  # patch keys are unique: a total order
        return [row[3] for row in keyed]
    keys = [key for _, _, _, key in rows]
    place = {key: index for index, key in enumerate(sorted(set(keys)))}
    key_places = np.fromiter(map(place.__getitem__, keys), np.int64, size)
    order = np.lexsort((key_places, -spreads, np.abs(scores - threshold) / width))
    return np.fromiter((row[0] for row in rows), np.int64, size)[order].tolist()


def run_uncertainties(run: JudgingRun) -> list[Uncertainty]:
    """Every finished verdict of ``run`` with its signals, in two queries, in no order
    (``uncertainty_order`` sorts them; the models' default order joined the run, patch and
    dataset to sort every verdict and member result)."""
    judgments = list(
        PatchJudgment.objects.filter(run=run, status=PatchJudgment.Status.DONE, score__isnull=False)
        .exclude(verdict="")
        .order_by()
        .values_list(
            "id", "patch_id", "patch__key", "patch__bug__key", "verdict", "score", "spread"
        )
    )
    members: dict[int, list[tuple[str, float | None, str]]] = defaultdict(list)
    rows = StrategyResult.objects.filter(
        judgment__run=run, judgment__status=PatchJudgment.Status.DONE,
        status=StrategyResult.Status.DONE,
    ).order_by().values_list("judgment_id", "strategy", "score", "verdict")  # fmt: skip
    for judgment_id, strategy, score, verdict in rows:
        members[judgment_id].append((strategy, score, verdict))
    cut = member_threshold(run)
    result = []
    for judgment_id, patch_id, patch_key, bug_key, verdict, score, spread in judgments:
        sides = {
            (member_score >= cut) for _, member_score, _ in members[judgment_id]
            if member_score is not None
        }  # fmt: skip
        rubric = [v for name, _, v in members[judgment_id] if name == RUBRIC_MEMBER and v]
        result.append(
            Uncertainty(
                judgment_id=judgment_id,
                patch_id=patch_id,
                patch_key=patch_key,
                bug_key=bug_key,
                verdict=verdict,
                score=float(score or 0.0),  # never None: filtered above
                margin=margin(float(score or 0.0), run),
                spread=spread or 0.0,
                split=len(sides) > 1,
                rubric_disagrees=bool(rubric) and rubric[0] != verdict,
            )
        )
    return result


def uncertainty_order(
    items: Iterable[Uncertainty], signal: str = DEFAULT_SIGNAL
) -> list[Uncertainty]:
    """``items``, most uncertain first by ``signal`` (see the module's docstring)."""
    if signal not in SIGNALS:
        raise ValueError(UNKNOWN_SIGNAL.format(signal=signal, signals=", ".join(SIGNALS)))

    def key(item: Uncertainty) -> tuple[float, float, float, str]:
        first = {
            "margin": item.margin,
            "spread": -item.spread,
            "split": 0.0 if item.split else 1.0,
            "rubric": 0.0 if item.rubric_disagrees else 1.0,
        }[signal]
        return (first, item.margin, -item.spread, item.patch_key)

    return sorted(items, key=key)
