"""The judge's valid share corrected for its errors (``judging.reports.corrected_rate``): a
hand-worked case, the bootstrap against a plain loop over the same draws, the warnings, and
a simulation where the true share is known. Pure: no database."""

import numpy as np
import pytest

from judging.models import JudgingRun, Label
from judging.reports.corrected_rate import (
    YOUDEN_MIN,
    corrected_valid_rate,
    corrected_valid_rate_of,
    rogan_gladen,
)
from judging.reports.figures import PatchRecord, Sampling
from judging.reports.judges import RunVerdicts
from judging.reports.resampling import Replicates, percentiles
from judging.reports.scope import Scope
from judging.reports.valid_at_k import NO_SOURCE, Candidate

VALID, INVALID = Label.VALID.value, Label.INVALID.value


def hand_made() -> tuple[list[Candidate], dict[int, str], dict[int, str]]:
    """Candidates, consensus and verdicts of ``test_a_hand_worked_example``."""
    candidates: list[Candidate] = []
    consensus: dict[int, str] = {}
    verdicts: dict[int, str] = {}

    def add(source: str, verdict: str | None, truth: str | None = None, passes: bool = True):
        patch_id = len(candidates) + 1
        candidates.append(Candidate(patch_id, patch_id, source, passes))
        if verdict:
            verdicts[patch_id] = verdict
        if truth:
            consensus[patch_id] = truth

    for verdict in (VALID, VALID, VALID, VALID, INVALID):  # ids 1–5: consensus VALID
        add("agent-a", verdict, VALID)
    for verdict in (INVALID, INVALID, INVALID, INVALID, VALID):  # 6–10: consensus INVALID
        add("agent-a", verdict, INVALID)
    for verdict in (VALID, VALID, VALID, VALID, INVALID):  # 11–15: unlabelled
        add("agent-a", verdict)
    for _ in range(4):  # 16–19: unlabelled, all called VALID
        add("agent-b", VALID)
    add("agent-a", VALID, INVALID, passes=False)  # 20: fails its tests: counts nowhere
    add("agent-a", None, VALID)  # 21: no verdict: counts nowhere
    add("agent-a", INVALID, VALID, passes=None)  # 22: never tested: counts nowhere
    add("", INVALID, VALID)  # 23: the calibration patch, no source
    return candidates, consensus, verdicts


def scope_of(candidates: list[Candidate], consensus: dict[int, str]) -> Scope:
    records = [
        PatchRecord(
            patch_id=c.patch_id,
            bug_id=c.bug_id,
            bug_type="",
            source=c.source,
            labels={1: consensus[c.patch_id], 2: consensus[c.patch_id]},
            decisive={1: consensus[c.patch_id], 2: consensus[c.patch_id]},
            consensus=consensus[c.patch_id],
            unanimous=True,
        )
        for c in candidates
        if c.patch_id in consensus
    ]
    return Scope(records, Replicates.draw(len(records), Sampling()))


def test_a_hand_worked_example() -> None:
    """Worked by hand.

    Se and Sp come from the labelled test-passing patches with a verdict, of every source,
    but the run's calibration patch 23: patches 1–5 are VALID by the consensus and the judge
    calls 4 of them VALID, Se = 4/5 = 0.8; patches 6–10 are INVALID and it calls 4 INVALID,
    Sp = 4/5 = 0.8. Youden's J = 0.8 + 0.8 − 1 = 0.6; 10 labelled patches.

    agent-a: its test-passing candidates with a verdict are 1–15 (20 fails its tests, 21
    has no verdict, 22 was never tested), 15 of them; the judge calls VALID 4 + 1 + 4 = 9:
    judged = 9/15 = 0.6, corrected = (0.6 + 0.8 − 1) / 0.6 = 0.4 / 0.6 = 2/3.

    agent-b: 16–19, all called VALID: judged = 4/4 = 1, corrected = (1 + 0.8 − 1) / 0.6 =
    4/3, clipped to 1.

    (no source): 23, called INVALID: judged = 0, corrected = (0 + 0.8 − 1) / 0.6 = −1/3,
    clipped to 0. It counts in its source's judged share although it is left out of Se/Sp.
    """
    candidates, consensus, verdicts = hand_made()
    run = RunVerdicts(
        run=JudgingRun(pk=7), verdicts=verdicts, statuses={}, excluded=frozenset({23})
    )
    rows = corrected_valid_rate(
        scope_of(candidates, consensus), candidates, run, sampling=Sampling(resamples=200)
    )
    assert [row.source for row in rows] == [NO_SOURCE, "agent-a", "agent-b"]
    none, a, b = rows
    for row in rows:
        assert row.sensitivity.value == pytest.approx(0.8)
        assert row.sensitivity.n == 5
        assert row.specificity.value == pytest.approx(0.8)
        assert row.specificity.n == 5
        assert row.youden.value == pytest.approx(0.6)
        assert row.n_labelled == 10
    assert (a.n_judged, a.judged.value) == (15, pytest.approx(0.6))
    assert a.corrected.value == pytest.approx(2 / 3)
    assert a.clipped == ""
    assert (b.n_judged, b.judged.value, b.corrected.value, b.clipped) == (4, 1.0, 1.0, "1")
    assert (none.n_judged, none.judged.value, none.corrected.value, none.clipped) == (
        1,
        0.0,
        0.0,
        "0",
    )
    # Intervals around the point, inside [0, 1].
    assert a.corrected.ci is not None
    assert 0.0 <= a.corrected.ci[0] <= 2 / 3 <= a.corrected.ci[1] <= 1.0
    # J = 0.6, its interval (seeded) above 0: no warning.
    assert a.youden.ci is not None
    assert a.youden.ci[0] > 0
    assert a.warnings == ()
    # Without the run, nothing; the plain inputs give the same rows as the scope.
    assert corrected_valid_rate(scope_of(candidates, consensus), candidates, None) == []
    assert (
        corrected_valid_rate_of(
            candidates, consensus, verdicts, excluded={23}, sampling=Sampling(resamples=200)
        )
        == rows
    )


def test_rogan_gladen_clips_and_refuses_a_chance_judge() -> None:
    values = rogan_gladen(
        np.array([0.6, 1.0, 0.0, 0.5, 0.5, np.nan]),
        np.array([0.8, 0.8, 0.8, 0.5, 0.4, 0.9]),
        np.array([0.8, 0.8, 0.8, 0.5, 0.5, 0.9]),
    )
    assert values[:3] == pytest.approx([2 / 3, 1.0, 0.0])
    assert np.isnan(values[3:]).all()  # J = 0, J < 0, nothing judged
    # A perfect judge corrects nothing.
    assert rogan_gladen(np.array([0.37]), np.array([1.0]), np.array([1.0])) == pytest.approx([0.37])


def random_case(
    rng: np.random.Generator, *, size: int, rate: float, se: float, sp: float, labelled: int
) -> tuple[list[Candidate], dict[int, str], dict[int, str]]:
    truth = rng.random(size) < rate
    says_valid = np.where(truth, rng.random(size) < se, rng.random(size) >= sp)
    sources = rng.choice(["a", "b", "c"], size)
    candidates = [
        Candidate(index, index, str(source), True) for index, source in enumerate(sources)
    ]
    verdicts = {index: VALID if v else INVALID for index, v in enumerate(says_valid.tolist())}
    chosen = rng.choice(size, labelled, replace=False).tolist()
    consensus = {index: VALID if truth[index] else INVALID for index in chosen}
    return candidates, consensus, verdicts


def test_the_bootstrap_draws_labels_and_verdicts_together_as_a_plain_loop_does() -> None:
    rng = np.random.default_rng(5)
    candidates, consensus, verdicts = random_case(
        rng, size=60, rate=0.4, se=0.8, sp=0.7, labelled=25
    )
    sampling = Sampling(resamples=40, seed=3)
    rows = corrected_valid_rate_of(candidates, consensus, verdicts, sampling=sampling)
    # The same draws as ``Replicates.draw``: the candidates in patch id order.
    indices = np.random.default_rng(sampling.seed).integers(0, 60, size=(40, 60))
    sources = ["a", "b", "c"]
    values = []
    for draw in indices:
        drawn = [candidates[i] for i in draw]
        labelled = [c for c in drawn if c.patch_id in consensus]
        positives = [c for c in labelled if consensus[c.patch_id] == VALID]
        negatives = [c for c in labelled if consensus[c.patch_id] == INVALID]
        se = sum(verdicts[c.patch_id] == VALID for c in positives) / len(positives)
        sp = sum(verdicts[c.patch_id] == INVALID for c in negatives) / len(negatives)
        shares = []
        for source in sources:
            mine = [c for c in drawn if c.source == source]
            judged = sum(verdicts[c.patch_id] == VALID for c in mine) / len(mine)
            shares.append(min(1.0, max(0.0, (judged + sp - 1) / (se + sp - 1))))
        values.append(shares)
    lows, highs = percentiles(np.array(values), (2.5, 97.5))
    assert [row.source for row in rows] == sources
    for column, row in enumerate(rows):
        assert row.corrected.ci == pytest.approx((lows[column], highs[column]))


def test_a_weak_judge_is_warned_about_and_a_chance_judge_corrects_nothing() -> None:
    candidates = [Candidate(i, i, "a", True) for i in range(8)]
    # Labelled: 4 VALID (judge: 3 VALID), 4 INVALID (judge: 2 INVALID): J = 0.75 + 0.5 − 1.
    consensus = {i: VALID if i < 4 else INVALID for i in range(8)}
    weak = {0: VALID, 1: VALID, 2: VALID, 3: INVALID, 4: INVALID, 5: INVALID, 6: VALID, 7: VALID}
    (row,) = corrected_valid_rate_of(candidates, consensus, weak, sampling=Sampling(resamples=50))
    assert row.youden.value == pytest.approx(0.25)
    assert row.youden.value is not None
    assert row.youden.value >= YOUDEN_MIN  # not weak; but on 8 labels J may be 0
    assert row.warnings
    assert "reaches" in row.warnings[0]
    weaker = {**weak, 4: VALID}  # Sp = 0.25: J = 0
    (row,) = corrected_valid_rate_of(candidates, consensus, weaker, sampling=Sampling(resamples=50))
    assert row.youden.value == pytest.approx(0.0)
    assert row.corrected.value is None
    assert "no better than chance" in row.warnings[0]
    many = [Candidate(i, i, "a", True) for i in range(40)]
    truth = {i: VALID if i < 20 else INVALID for i in range(40)}
    # Se = 12/20, Sp = 11/20: J = 0.15, under the threshold.
    says = {i: VALID if (i < 12 or 20 <= i < 29) else INVALID for i in range(40)}
    (row,) = corrected_valid_rate_of(many, truth, says, sampling=Sampling(resamples=50))
    assert row.youden.value == pytest.approx(0.15)
    assert "below 0.2" in row.warnings[0]
    only_valid = dict.fromkeys(range(4), VALID)
    (row,) = corrected_valid_rate_of(candidates, only_valid, weak, sampling=Sampling(resamples=20))
    assert row.corrected.value is None
    assert "specificity unknown" in row.warnings[0]


def test_the_corrected_share_covers_the_true_share_where_the_judged_one_is_biased() -> None:
    """200 benchmarks of 400 test-passing candidates, 30% truly valid, a judge with Se 0.85
    and Sp 0.75, and humans labelling 150 of them at random. The judge calls VALID
    0.3 · 0.85 + 0.7 · 0.25 = 43% of them: 13 points too many. The corrected share's 95%
    interval covers 30% in most benchmarks; the judged share's almost never does."""
    rng = np.random.default_rng(2026)
    rate, covered, naive_covered, estimates, judged = 0.3, 0, 0, [], []
    simulations = 200
    for seed in range(simulations):
        candidates, consensus, verdicts = random_case(
            rng, size=400, rate=rate, se=0.85, sp=0.75, labelled=150
        )
        candidates = [c._replace(source="agent") for c in candidates]
        (row,) = corrected_valid_rate_of(
            candidates, consensus, verdicts, sampling=Sampling(resamples=200, seed=seed)
        )
        assert row.corrected.ci is not None
        assert row.judged.ci is not None
        covered += row.corrected.ci[0] <= rate <= row.corrected.ci[1]
        naive_covered += row.judged.ci[0] <= rate <= row.judged.ci[1]
        estimates.append(row.corrected.value)
        judged.append(row.judged.value)
    assert covered >= 0.88 * simulations
    assert naive_covered <= 0.02 * simulations
    assert abs(np.mean(estimates) - rate) < 0.02  # nearly unbiased
    assert np.mean(judged) == pytest.approx(0.43, abs=0.01)  # biased by the judge's errors
