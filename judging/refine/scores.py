"""REFINE's evaluator tester (paper 002 §II-B) on quality ladders: how well a judge
configuration's scores keep the expected order of each bug's levels. Pure: no ORM.

**Expected order.** Level 0 (the reference fix) and level 1 (an equivalent rewrite) are
equally correct: they share the top *tier*; levels 2, 3 and 4 (partial, wrong, no fix) are
one tier each, in that order. A judge should score a better tier strictly higher; within a
tier it has no expected order, so the pair (L0, L1) counts in neither figure. A judge that
matches text rather than behaviour shows up as L1 scored below L2 or L3.

**Ordering alignment** of a bug: over its pairs of levels in different tiers, the share
whose scores are in the expected strict order, a tie counting half (the issue's definition).
``alignment_strict`` is the paper's own, where a tie counts nothing: it does not reward a
judge that gives every level the same score. Overall: the mean over bugs, as in the paper.

**Kendall's τ-b** of a bug: between the expected quality (minus the tier) and the score, so
that +1 is a perfect judge and −1 a reversed one; τ-b corrects for the L0/L1 tie and for
tied scores. A bug whose levels all got the same score has τ-b 0 (no ordering): leaving it
out would reward a constant judge. Overall: the mean over bugs.

**Intervals** are percentile bootstrap intervals over bugs: bugs are resampled with
replacement (``resamples`` times, a fixed seed, so a page and the command agree) and every
overall figure is recomputed on each resample.
"""

import functools
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from judging.agreement import kendall_tau_b

TIER: dict[int, int] = {0: 0, 1: 0, 2: 1, 3: 2, 4: 3}
RESAMPLES = 1000
SEED = 20250804  # REFINE's arXiv date
CONFIDENCE = 0.95


@dataclass(frozen=True)
class BugOrder:
    """One bug's levels as a configuration scored them."""

    bug: str
    scores: dict[int, float]  # level → score
    alignment: float
    alignment_strict: float
    tau_b: float
    pairs: int  # pairs of levels in different tiers

    @property
    def inversions(self) -> list[tuple[int, int]]:
        """Pairs (better, worse) whose worse level scored higher."""
        levels = sorted(self.scores)
        return [
            (u, v)
            for i, u in enumerate(levels)
            for v in levels[i + 1 :]
            if TIER[u] < TIER[v] and self.scores[u] < self.scores[v]
        ]


@dataclass(frozen=True)
class Estimate:
    value: float | None
    lo: float | None = None
    hi: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "ci_lo": self.lo, "ci_hi": self.hi}


@dataclass(frozen=True)
class Ordering:
    """A configuration's agreement with the expected order, overall and per bug."""

    alignment: Estimate
    alignment_strict: Estimate
    tau_b: Estimate
    level_means: dict[int, Estimate]  # level → mean score over the bugs that have it
    bugs: list[BugOrder]  # the bugs with at least one pair, worst-ordered first
    unpaired: int  # bugs left out: fewer than two tiers scored

    @property
    def n_bugs(self) -> int:
        return len(self.bugs)

    def worst(self, n: int = 5) -> list[BugOrder]:
        """The ``n`` worst-ordered bugs, those not in perfect order only."""
        return [bug for bug in self.bugs if bug.alignment_strict < 1][:n]

    @property
    def worst_bugs(self) -> list[BugOrder]:
        return self.worst()


def _pair_credit(better: float, worse: float) -> tuple[float, float]:
    """(credit with ties as half, strict credit) for one pair of levels."""
    if better > worse:
        return 1.0, 1.0
    if better == worse:
        return 0.5, 0.0
    return 0.0, 0.0


def bug_order(bug: str, scores: Mapping[int, float]) -> BugOrder | None:
    """The bug's figures, or None when its scored levels span fewer than two tiers: the
    plain definition, with scipy's τ-b, that ``bug_orders`` is checked against."""
    levels = sorted(level for level in scores if level in TIER)
    credit = strict = 0.0
    pairs = 0
    for i, u in enumerate(levels):
        for v in levels[i + 1 :]:
            if TIER[u] == TIER[v]:
                continue
            half, whole = _pair_credit(scores[u], scores[v])
            credit, strict, pairs = credit + half, strict + whole, pairs + 1
    if not pairs:
        return None
    values = [float(scores[level]) for level in levels]
    tau = kendall_tau_b([-TIER[level] for level in levels], values)
    return BugOrder(
        bug=bug,
        scores={level: float(scores[level]) for level in levels},
        alignment=credit / pairs,
        alignment_strict=strict / pairs,
        tau_b=0.0 if tau is None else tau,
        pairs=pairs,
    )


def _interval(values: np.ndarray, point: float | None, confidence: float) -> Estimate:
    if point is None:
        return Estimate(None)
    finite = values[np.isfinite(values)]
    if not finite.size:
        return Estimate(point)
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(finite, [tail, 100 - tail])
    return Estimate(point, float(lo), float(hi))


def bug_orders(
    scores_by_bug: Mapping[str, Mapping[int, float]], levels: list[int]
) -> list[BugOrder]:
    """``bug_order`` of every bug on ``levels``, computed for all bugs at once: the same
    figures (a test checks them against it), at a 2,000-bug ladder's size in milliseconds."""
    keys = list(scores_by_bug)
    if not keys or not levels:
        return []
    matrix = np.array(
        [[scores_by_bug[key].get(level, np.nan) for level in levels] for key in keys],
        dtype=float,
    )
    present = ~np.isnan(matrix)
    count = np.zeros(len(keys))
    credit, strict = np.zeros(len(keys)), np.zeros(len(keys))
    all_pairs, x_ties, y_ties, signed = (np.zeros(len(keys)) for _ in range(4))
    for i, u in enumerate(levels):
        for j in range(i + 1, len(levels)):
            v = levels[j]
            both = present[:, i] & present[:, j]
            dy = np.where(both, matrix[:, i] - matrix[:, j], 0.0)
            dx = TIER[v] - TIER[u]  # u's quality minus v's: >= 0, as levels ascend
            all_pairs += both
            x_ties += both & (dx == 0)
            y_ties += both & (dy == 0)
            signed += np.where(both, np.sign(dx * dy), 0.0)
            if dx:
                count += both
                credit += both * ((dy > 0) + 0.5 * (dy == 0))
                strict += both * (dy > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = signed / np.sqrt((all_pairs - x_ties) * (all_pairs - y_ties))
    tau = np.clip(np.nan_to_num(tau, nan=0.0, posinf=0.0, neginf=0.0), -1.0, 1.0)
    orders = []
    for row in np.flatnonzero(count):
        scores = {lv: float(matrix[row, k]) for k, lv in enumerate(levels) if present[row, k]}
        pairs = int(count[row])
        orders.append(
            BugOrder(
                bug=keys[row],
                scores=scores,
                alignment=float(credit[row]) / pairs,
                alignment_strict=float(strict[row]) / pairs,
                tau_b=float(tau[row]),
                pairs=pairs,
            )
        )
    return orders


@functools.lru_cache(maxsize=4)
def resample_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """How many times each resample draws each of ``n`` bugs (``resamples`` × ``n``), so that
    every figure of every resample is one matrix product rather than a copy of the data per
    resample. The configurations of one page share it: they are usually judged on the same
    bugs."""
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    cells = (np.arange(resamples)[:, None] * n + picks).ravel()
    weights = np.bincount(cells, minlength=resamples * n).reshape(resamples, n).astype(float)
    weights.flags.writeable = False
    return weights


def ordering(
    scores_by_bug: Mapping[str, Mapping[int, float]],
    *,
    levels: Iterable[int] | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Ordering:
    """Score a configuration from its scores per bug and level (only ``levels`` if given)."""
    wanted = set(TIER if levels is None else levels)
    shown = sorted(wanted & set(TIER))
    bugs = bug_orders(scores_by_bug, shown)
    unpaired = len(scores_by_bug) - len(bugs)
    bugs.sort(key=lambda b: (b.alignment, b.tau_b, b.bug))
    n = len(bugs)
    if not n:
        empty = Estimate(None)
        return Ordering(empty, empty, empty, dict.fromkeys(shown, empty), [], unpaired)
    figures = np.array([[b.alignment, b.alignment_strict, b.tau_b] for b in bugs])
    by_level = np.array([[b.scores.get(lv, np.nan) for lv in shown] for b in bugs])
    present = ~np.isnan(by_level)
    weights = resample_weights(n, resamples, seed)
    resampled = weights @ figures / n
    level_sums = weights @ np.where(present, by_level, 0.0)
    level_counts = weights @ present
    with warnings.catch_warnings():
        # a resample that drew no bug with a level has no mean for it: NaN, dropped below
        warnings.simplefilter("ignore", RuntimeWarning)
        level_resampled = level_sums / level_counts
    points = figures.mean(axis=0)
    alignment, strict, tau = (
        _interval(resampled[:, k], float(points[k]), confidence) for k in range(3)
    )
    level_means: dict[int, Estimate] = {}
    for column, level in enumerate(shown):
        if not present[:, column].any():
            level_means[level] = Estimate(None)
            continue
        point = float(by_level[present[:, column], column].mean())
        level_means[level] = _interval(level_resampled[:, column], point, confidence)
    return Ordering(alignment, strict, tau, level_means, bugs, unpaired)
