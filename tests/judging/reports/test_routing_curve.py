"""The routing curve of the agreement report on a hand-made case: the hybrid labels' accuracy
and κ as the least certain verdicts go to humans, and routing at random as its expected
value (worked out by hand in the comments)."""

import numpy as np
import pytest

from judging.models import JudgingRun
from judging.reports.figures import PatchRecord
from judging.reports.judges import RunMasks, RunVerdicts
from judging.reports.resampling import Replicates
from judging.reports.routing_curve import routing_curve
from judging.reports.scope import Scope

V, I = "VALID", "INVALID"  # noqa: E741
CONSENSUS = [V, I, V, I]
VERDICTS = [I, I, V, V]  # wrong on p0 (fn) and p3 (fp): tp 1, fp 1, fn 1, tn 1
RANKS = {100: 0, 103: 1, 101: 2, 102: 3}  # the run is least sure of p0, then p3


def curve(indices: np.ndarray | None = None):  # type: ignore[no-untyped-def]
    records = [
        PatchRecord(
            patch_id=100 + n,
            bug_id=1,
            bug_type="",
            source="",
            labels={7: label, 8: label},
            decisive={7: label, 8: label},
            consensus=label,
            unanimous=True,
        )
        for n, label in enumerate(CONSENSUS)
    ]
    if indices is None:
        indices = np.random.default_rng(0).integers(0, 4, size=(50, 4))
    scope = Scope(records, Replicates.from_indices(indices, 4, level=0.95))
    run = RunVerdicts(
        run=JudgingRun(pk=9, provider="openai", scale_lo=0, scale_hi=100, threshold=50),
        verdicts={100 + n: verdict for n, verdict in enumerate(VERDICTS)},
        statuses={100 + n: "done" for n in range(4)},
    )
    return routing_curve(scope, run, RunMasks.of(scope, run), RANKS)


def test_routing_the_least_certain_first_fixes_the_wrong_verdicts_first() -> None:
    points = {round(p.share * 100): p for p in curve().points}
    assert len(points) == 21
    # Nothing routed: the run alone, tp = fp = fn = tn = 1: accuracy 0.5, κ 0.
    assert points[0].routed == 0
    assert points[0].accuracy.value == 0.5
    assert points[0].kappa.value == 0.0
    # 25 %: p0 goes to humans, its fn becomes a tp: tp 2, fp 1, tn 1, accuracy 0.75,
    # κ = 2(2·1 − 0·1) / ((2 + 1)(1 + 1) + (2 + 0)(0 + 1)) = 4 / 8 = 0.5.
    assert points[25].routed == 1
    assert points[25].accuracy.value == 0.75
    assert points[25].kappa.value == pytest.approx(0.5)
    # 30 % rounds up to two patches: p0 and p3, every label right.
    assert points[30].routed == 2
    assert points[30].accuracy.value == 1.0
    assert points[30].kappa.value == 1.0
    assert points[100].kappa.value == 1.0


def test_routing_at_random_is_the_expected_mix() -> None:
    points = {round(p.share * 100): p for p in curve().points}
    # One patch of four at random: the confusion matrix is ¼ perfect (tp 2, tn 2) plus ¾ the
    # run's (1, 1, 1, 1): tp 1.25, fp 0.75, fn 0.75, tn 1.25. Accuracy 2.5 / 4 = 0.625;
    # κ = 2(1.25² − 0.75²) / (2·2 + 2·2) = 2 / 8 = 0.25.
    assert points[25].random_accuracy == pytest.approx(0.625)
    assert points[25].random_kappa == pytest.approx(0.25)
    assert points[0].random_kappa == pytest.approx(0.0)
    assert points[100].random_accuracy == pytest.approx(1.0)
    by_uncertainty, at_random = curve().share_reaching(0.8)
    assert by_uncertainty == 0.3  # two patches
    assert at_random is not None
    assert at_random > by_uncertainty


def test_each_resample_recomputes_the_hybrid_labels() -> None:
    # Every resample draws p0 four times: routed, it is right (κ undefined: one label
    # each); not routed, the judge is always wrong on it.
    drawn = np.zeros((3, 4), dtype=np.int64)
    points = {round(p.share * 100): p for p in curve(drawn).points}
    assert points[0].accuracy.ci == (0.0, 0.0)
    assert points[25].accuracy.ci == (1.0, 1.0)


def _sorted_as_tuples(
    rows: list[tuple[int, float, float | None, str]], run: JudgingRun
) -> list[int]:
    """The ordering's definition, as plainly as it can be written: a sort of tuples by
    (margin, −spread, key)."""
    keyed = [
        (abs(score - run.threshold) / (run.scale_hi - run.scale_lo), -(spread or 0.0), key, p)
        for p, score, spread, key in rows
    ]
    return [row[3] for row in sorted(keyed, key=lambda row: row[:3])]


@pytest.mark.parametrize("seed", range(5))
def test_the_reports_uncertainty_ranks_are_margin_rankings_order(seed: int) -> None:
    """``margin_order`` (a ``lexsort`` of arrays) and the report's ``uncertainty_ranks``
    order a run's verdicts as a sort of tuples does: ties of margin (scores either side of
    the threshold), of spread, spreads missing, keys shared, and a NaN (through the sort)."""
    from judging.reports.selectors import uncertainty_ranks
    from judging.runs.uncertainty import margin_order

    rng = np.random.default_rng(seed)
    size = 300
    patch_ids = rng.permutation(10_000)[:size].tolist()
    scores = rng.choice([0.0, 25.0, 40.0, 50.0, 60.0, 75.0, 100.0, 33.3], size).tolist()
    spread_values = rng.choice([0.0, 10.0, 12.5, 40.0], size).tolist()
    spreads = {
        patch_id: None if rng.random() < 0.2 else spread
        for patch_id, spread in zip(patch_ids, spread_values, strict=True)
    }
    keys = {patch_id: f"bug-{rng.integers(0, 40)}/p{rng.integers(0, 3)}" for patch_id in patch_ids}
    if seed == 4:
        scores[7] = float("nan")
    for run in (
        JudgingRun(pk=9, scale_lo=0, scale_hi=100, threshold=50),
        JudgingRun(pk=9, scale_lo=-1.5, scale_hi=7, threshold=2.25),
    ):
        verdicts = RunVerdicts(
            run=run, verdicts={}, statuses={}, scores=dict(zip(patch_ids, scores, strict=True))
        )
        rows = [(p, s, spreads[p], keys.get(p, "")) for p, s in verdicts.scores.items()]
        expected = {p: rank for rank, p in enumerate(_sorted_as_tuples(rows, run))}
        assert {p: rank for rank, p in enumerate(margin_order(rows, run))} == expected
        assert uncertainty_ranks(verdicts, spreads, keys) == expected
