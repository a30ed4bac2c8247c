"""What routing buys (paper 004 §8): a run's verdicts with the least certain ones replaced
by the human consensus, share by share. Pure: computed from a ``Scope``.

On the patches of B_full the run judged, route a share s of them to humans, the least
certain first (``judging.runs.uncertainty``): the *hybrid* labels are the consensus on the
routed patches and the run's verdict on the rest. Its accuracy and κ against the consensus,
for s from 0 to 100 %, with intervals, beside routing at random: the expected value of
routing the same number of patches drawn at random (its confusion matrix is the mix
s·perfect + (1 − s)·the run's, so its figures carry no interval).
"""

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from judging.reports import vectorized
from judging.reports.figures import Figure
from judging.reports.judges import RunMasks, RunVerdicts
from judging.reports.scope import Scope

SHARES = tuple(step / 20 for step in range(21))  # 0 %, 5 %, …, 100 %
KAPPA_TARGET = 0.8  # the page says which share reaches it
TP, TN = 0, 3


@dataclasses.dataclass(frozen=True)
class RoutingPoint:
    share: float
    routed: int  # patches routed to humans
    accuracy: Figure
    kappa: Figure
    random_accuracy: float | None  # expected, routing the same number at random
    random_kappa: float | None


@dataclasses.dataclass(frozen=True)
class RoutingCurve:
    run: RunVerdicts
    patches: int  # B_full patches the run judged
    points: list[RoutingPoint]

    def share_reaching(self, kappa: float = KAPPA_TARGET) -> tuple[float | None, float | None]:
        """The smallest share that reaches κ ≥ ``kappa``, by uncertainty and at random."""
        by_uncertainty = next(
            (p.share for p in self.points if p.kappa.value is not None and p.kappa.value >= kappa),
            None,
        )
        at_random = next(
            (
                p.share
                for p in self.points
                if p.random_kappa is not None and p.random_kappa >= kappa
            ),
            None,
        )
        return by_uncertainty, at_random


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def routing_curve(
    scope: Scope, run: RunVerdicts, masks: RunMasks, ranks: Mapping[int, int]
) -> RoutingCurve:
    """The curve of ``run`` on its judged B_full patches; ``ranks`` orders them, most
    uncertain first (a patch without a rank, say without a score, comes last)."""
    members = np.flatnonzero(masks.judged & scope.with_consensus)
    last = len(ranks)
    rank = np.array([ranks.get(patch_id, last) for patch_id in scope.ids(members)], np.int64)
    members = members[np.lexsort((members, rank))]  # by rank, then index
    consensus_invalid = scope.consensus[members] == 0
    judged = vectorized.confusion_cell(masks.verdict_invalid[members], consensus_invalid)
    perfect = np.where(consensus_invalid, TN, TP)
    judge_counts = np.bincount(judged, minlength=4).astype(float)
    perfect_counts = np.bincount(perfect, minlength=4).astype(float)
    n = len(members)
    routed_counts = [math.ceil(share * n) for share in SHARES]
    # The routed patches grow share by share: tally each patch's two cells by the first
    # share that routes it, then add up. Hybrid = the run's cells, less the routed ones'
    # verdicts, plus their consensus; every replicate at once, in two products.
    first = np.searchsorted(np.array(routed_counts), np.arange(n), side="right")
    size = len(SHARES) * 4
    by_share = (-1, len(SHARES), 4)
    judged_routed = np.cumsum(scope.tally(members, first * 4 + judged, size).reshape(by_share), 1)
    perfect_routed = np.cumsum(scope.tally(members, first * 4 + perfect, size).reshape(by_share), 1)
    run_counts = scope.tally(members, judged, 4)
    # Every share at once: (R + 1, shares, 4), then accuracy and κ of each, one interval
    # pass over all of their columns.
    counts = run_counts[:, None, :] - judged_routed + perfect_routed
    accuracy = vectorized.ratio(counts[..., TP] + counts[..., TN], counts.sum(axis=-1))
    shares = len(SHARES)
    figures = scope.figures(
        np.concatenate([accuracy, vectorized.kappa(counts)], axis=1), [n] * (2 * shares)
    )
    mixes = np.array([[routed / n if n else 0.0] for routed in routed_counts])
    expected = mixes * perfect_counts + (1 - mixes) * judge_counts
    random_accuracy = vectorized.ratio(expected[:, TP] + expected[:, TN], expected.sum(axis=-1))
    random_kappa = vectorized.kappa(expected)
    points = [
        RoutingPoint(
            share=share,
            routed=routed,
            accuracy=figures[position],
            kappa=figures[shares + position],
            random_accuracy=_defined(float(random_accuracy[position])),
            random_kappa=_defined(float(random_kappa[position])),
        )
        for position, (share, routed) in enumerate(zip(SHARES, routed_counts, strict=True))
    ]
    return RoutingCurve(run=run, patches=n, points=points)
