"""valid@k per agent (``judging.reports.valid_at_k``): the estimator against enumerating
every k-subset, the per-source rows on a hand-made case, the bootstrap over bugs against a
plain loop over the same draws, and the chart against the figures. Pure: no database."""

import itertools
import math
import xml.etree.ElementTree as ET
from fractions import Fraction

import numpy as np
import pytest

from judging.models import JudgingRun, Label
from judging.reports.figures import Figure, PatchRecord, Sampling
from judging.reports.judges import RunVerdicts
from judging.reports.resampling import Replicates
from judging.reports.scope import Scope
from judging.reports.valid_at_k import (
    KS,
    NO_SOURCE,
    Candidate,
    ValidAtK,
    pass_at_k,
    valid_at_k,
    valid_at_k_chart,
    valid_at_k_of,
)

SVG = "{http://www.w3.org/2000/svg}"
VALID, INVALID = Label.VALID.value, Label.INVALID.value

# -- the estimator ----------------------------------------------------------------------------


def brute_force(n: int, c: int, k: int) -> Fraction:
    """The share of the k-subsets of n candidates (the first c correct) with a correct one."""
    subsets = list(itertools.combinations(range(n), k))
    hits = sum(any(index < c for index in subset) for subset in subsets)
    return Fraction(hits, len(subsets))


@pytest.mark.parametrize("n", range(1, 10))
def test_pass_at_k_equals_enumerating_every_subset(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(float(brute_force(n, c, k)), abs=1e-12)


def test_pass_at_k_edges() -> None:
    assert pass_at_k(1, 0, 1) == 0.0
    assert pass_at_k(1, 1, 1) == 1.0
    assert pass_at_k(7, 0, 3) == 0.0  # nothing correct
    assert pass_at_k(7, 7, 3) == 1.0  # everything correct
    assert pass_at_k(7, 5, 3) == 1.0  # n − c = 2 < k: every 3-subset holds a correct one
    assert pass_at_k(7, 4, 3) == pytest.approx(1 - 1 / 35)  # n − c = k: one subset misses
    assert pass_at_k(7, 1, 7) == 1.0  # k = n
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)  # pass@1 is the share c / n
    assert pass_at_k(np.int64(5), np.int64(2), np.int64(2)) == pytest.approx(0.7)


def test_pass_at_k_is_stable_where_the_binomials_are_huge() -> None:
    # C(1000, 400) has about 290 digits: the product never forms it.
    exact = 1 - Fraction(math.comb(1000 - 30, 400), math.comb(1000, 400))
    assert pass_at_k(1000, 30, 400) == pytest.approx(float(exact), rel=1e-12)
    assert pass_at_k(1000, 1, 1) == pytest.approx(0.001, rel=1e-12)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(3, 1, 4), (0, 0, 1), (3, 1, 0), (3, 1, -1), (3, 4, 1), (3, -1, 1), (-1, 0, 1)],
)
def test_pass_at_k_refuses_bad_inputs(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="pass_at_k"):
        pass_at_k(n, c, k)


@pytest.mark.parametrize("bad", [1.5, True, "3", None])
def test_pass_at_k_refuses_what_is_not_an_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="must be an integer"):
        pass_at_k(bad, 1, 1)  # type: ignore[arg-type]


# -- per source, on a hand-made case ----------------------------------------------------------

# (patch id, bug id, source, tests_pass), and what humans and the run say of them.
PATCHES = [
    # agent-a, bug 10: 3 candidates, 2 pass, 1 of those valid.
    Candidate(1, 10, "agent-a", True),  # consensus VALID
    Candidate(2, 10, "agent-a", True),  # no consensus: the run says INVALID
    Candidate(3, 10, "agent-a", False),  # fails: its consensus VALID changes nothing
    # agent-a, bug 20: 2 candidates, 1 passes and is valid, 1 never tested.
    Candidate(4, 20, "agent-a", None),
    Candidate(5, 20, "agent-a", True),  # labelled, no consensus yet: the run says VALID
    # agent-a, bug 30: 5 candidates, 2 pass, neither known valid.
    Candidate(6, 30, "agent-a", True),  # consensus INVALID
    Candidate(7, 30, "agent-a", True),  # no consensus, no verdict: unknown, so not valid
    Candidate(8, 30, "agent-a", False),
    Candidate(9, 30, "agent-a", False),
    Candidate(10, 30, "agent-a", False),
    # agent-b, bug 10: the consensus wins over the run.
    Candidate(11, 10, "agent-b", True),  # consensus VALID, the run says INVALID
    # no source, bug 20.
    Candidate(12, 20, "", False),
]
CONSENSUS = {1: VALID, 3: VALID, 6: INVALID, 11: VALID}
VERDICTS = {2: INVALID, 5: VALID, 11: INVALID, 99: VALID}  # 99 is not in scope


def record(patch_id: int, consensus: str | None) -> PatchRecord:
    candidate = next(c for c in PATCHES if c.patch_id == patch_id)
    labels = {1: consensus or VALID, 2: consensus or INVALID}
    return PatchRecord(
        patch_id=patch_id,
        bug_id=candidate.bug_id,
        bug_type="",
        source=candidate.source,
        labels=labels,
        decisive=labels,
        consensus=consensus,
        unanimous=consensus is not None,
    )


def hand_made_scope() -> Scope:
    # Patch 5 is labelled but split, waiting for a lead: it has no consensus.
    records = [record(patch_id, CONSENSUS.get(patch_id)) for patch_id in (1, 3, 5, 6, 11)]
    return Scope(records, Replicates.draw(len(records), Sampling()))


def run_verdicts() -> RunVerdicts:
    return RunVerdicts(run=JudgingRun(pk=7), verdicts=VERDICTS, statuses={})


def by_key(rows: list[ValidAtK]) -> dict[tuple[str, int], ValidAtK]:
    return {(row.source, row.k): row for row in rows}


def test_rows_per_source_and_k_on_a_hand_made_case() -> None:
    rows = valid_at_k(hand_made_scope(), PATCHES, run_verdicts(), sampling=Sampling(resamples=50))
    assert [(row.source, row.k) for row in rows] == [
        (NO_SOURCE, 1),
        ("agent-a", 1),
        ("agent-a", 5),  # only bug 30 has five candidates from agent-a; none has ten
        ("agent-b", 1),
    ]
    rows_by = by_key(rows)

    a1 = rows_by["agent-a", 1]
    assert (a1.bugs, a1.candidates, a1.passing, a1.tests_unknown) == (3, 10, 5, 1)
    assert a1.pass_at_k.value == pytest.approx((2 / 3 + 1 / 2 + 2 / 5) / 3)
    assert a1.valid_at_k.value == pytest.approx((1 / 3 + 1 / 2 + 0) / 3)
    assert (a1.pass_at_k.n, a1.valid_at_k.n) == (3, 3)
    # Consensus: patches 1 and 6; the run: 2 and 5; unknown: 7. Failing ones are not counted.
    assert (a1.by_consensus, a1.by_run, a1.unknown) == (2, 2, 1)
    assert a1.pass_at_k.ci is not None
    assert a1.valid_at_k.ci is not None

    a5 = rows_by["agent-a", 5]
    assert (a5.bugs, a5.candidates, a5.passing, a5.tests_unknown) == (1, 5, 2, 0)
    assert a5.pass_at_k == Figure(1.0, 1)  # one bug: no interval
    assert a5.valid_at_k == Figure(0.0, 1)
    assert (a5.by_consensus, a5.by_run, a5.unknown) == (1, 0, 1)

    b1 = rows_by["agent-b", 1]
    assert (b1.pass_at_k.value, b1.valid_at_k.value) == (1.0, 1.0)  # consensus over the run
    assert (b1.by_consensus, b1.by_run, b1.unknown) == (1, 0, 0)

    none1 = rows_by[NO_SOURCE, 1]
    assert (none1.bugs, none1.candidates, none1.passing) == (1, 1, 0)
    assert (none1.pass_at_k.value, none1.valid_at_k.value) == (0.0, 0.0)
    assert (none1.by_consensus, none1.by_run, none1.unknown) == (0, 0, 0)


def test_without_a_run_what_humans_did_not_settle_is_unknown() -> None:
    rows = by_key(valid_at_k(hand_made_scope(), PATCHES, None, sampling=Sampling(resamples=50)))
    a1 = rows["agent-a", 1]
    assert (a1.by_consensus, a1.by_run, a1.unknown) == (2, 0, 3)
    assert a1.valid_at_k.value == pytest.approx((1 / 3 + 0 + 0) / 3)  # patch 5 counts no more
    assert a1.pass_at_k.value == pytest.approx((2 / 3 + 1 / 2 + 2 / 5) / 3)


def test_plain_inputs_give_the_same_rows_as_the_scope() -> None:
    sampling = Sampling(resamples=50)
    from_scope = valid_at_k(hand_made_scope(), PATCHES, run_verdicts(), sampling=sampling)
    plain = [tuple(candidate) for candidate in PATCHES]
    assert valid_at_k_of(plain, CONSENSUS, VERDICTS, sampling=sampling) == from_scope


def test_nothing_in_scope_gives_no_rows_and_no_chart() -> None:
    assert valid_at_k_of([], {}, None) == []
    assert valid_at_k_chart([]) is None


# -- the bootstrap over bugs ------------------------------------------------------------------


def random_case(seed: int) -> tuple[list[Candidate], dict[int, str], dict[int, str]]:
    rng = np.random.default_rng(seed)
    patches, consensus, verdicts = [], {}, {}
    patch_id = 0
    for bug_id in range(100, 160):
        for source in ("alpha", "beta", "gamma"):
            if rng.random() < 0.2:
                continue
            skill = {"alpha": 0.6, "beta": 0.4, "gamma": 0.2}[source]
            for _ in range(int(rng.integers(1, 13))):
                patch_id += 1
                tests = rng.random()
                passes = None if tests < 0.05 else bool(tests < 0.05 + skill)
                patches.append(Candidate(patch_id, bug_id, source, passes))
                truth = VALID if rng.random() < 0.7 else INVALID
                which = rng.random()
                if which < 0.4:
                    consensus[patch_id] = truth
                elif which < 0.9:
                    verdicts[patch_id] = truth
    return patches, consensus, verdicts


def plain_rows(
    patches: list[Candidate],
    consensus: dict[int, str],
    verdicts: dict[int, str],
    sampling: Sampling,
) -> dict[tuple[str, int], tuple[float, float, tuple[float, float] | None]]:
    """Each row's pass@k and valid@k and the valid@k interval, by plain loops: the bugs
    drawn by the same index matrix, each resample's mean over the drawn bugs that count."""
    bugs = sorted({c.bug_id for c in patches})
    indices = np.random.default_rng(sampling.seed).integers(
        0, len(bugs), size=(sampling.resamples, len(bugs))
    )
    result = {}
    for source in sorted({c.source for c in patches}):
        for k in KS:
            per_bug: dict[int, tuple[float, float]] = {}
            for position, bug_id in enumerate(bugs):
                mine = [c for c in patches if c.bug_id == bug_id and c.source == source]
                if len(mine) < k:
                    continue
                passing = [c for c in mine if c.tests_pass is True]
                valid = [
                    c
                    for c in passing
                    if consensus.get(c.patch_id, verdicts.get(c.patch_id)) == VALID
                ]
                per_bug[position] = (
                    float(brute_force(len(mine), len(passing), k)),
                    float(brute_force(len(mine), len(valid), k)),
                )
            if not per_bug:
                continue
            point_pass = sum(v[0] for v in per_bug.values()) / len(per_bug)
            point_valid = sum(v[1] for v in per_bug.values()) / len(per_bug)
            replicates = []
            for draw in indices:
                drawn = [per_bug[i][1] for i in draw if i in per_bug]
                if drawn:
                    replicates.append(sum(drawn) / len(drawn))
            tail = (1 - sampling.level) / 2 * 100
            ci = (
                tuple(float(x) for x in np.percentile(replicates, [tail, 100 - tail]))
                if len(per_bug) >= 2
                else None
            )
            result[source, k] = (point_pass, point_valid, ci)
    return result


def test_the_bootstrap_resamples_bugs_as_a_plain_loop_does() -> None:
    patches, consensus, verdicts = random_case(3)
    sampling = Sampling(resamples=120, seed=11)
    rows = by_key(valid_at_k_of(patches, consensus, verdicts, sampling=sampling))
    expected = plain_rows(patches, consensus, verdicts, sampling)
    assert set(rows) == set(expected)
    for key, (point_pass, point_valid, ci) in expected.items():
        row = rows[key]
        assert row.pass_at_k.value == pytest.approx(point_pass, abs=1e-12)
        assert row.valid_at_k.value == pytest.approx(point_valid, abs=1e-12)
        if ci is None:
            assert row.valid_at_k.ci is None
        else:
            assert row.valid_at_k.ci == pytest.approx(ci, abs=1e-9)


def test_the_bootstrap_is_fixed_by_its_seed_and_contains_the_estimate() -> None:
    patches, consensus, verdicts = random_case(5)
    sampling = Sampling(resamples=400, seed=2)
    rows = valid_at_k_of(patches, consensus, verdicts, sampling=sampling)
    assert rows == valid_at_k_of(list(reversed(patches)), consensus, verdicts, sampling=sampling)
    other = valid_at_k_of(patches, consensus, verdicts, sampling=Sampling(resamples=400, seed=3))
    assert [r.valid_at_k.ci for r in rows] != [r.valid_at_k.ci for r in other]
    assert [r.valid_at_k.value for r in rows] == [r.valid_at_k.value for r in other]
    assert {(r.source, r.k) for r in rows} == {
        (s, k) for s in ("alpha", "beta", "gamma") for k in KS
    }
    for row in rows:
        assert row.bugs >= 2
        assert row.by_consensus + row.by_run + row.unknown == row.passing
        for figure in (row.pass_at_k, row.valid_at_k):
            assert figure.value is not None
            assert figure.ci is not None
            assert figure.ci[0] <= figure.value <= figure.ci[1]
            assert 0.0 <= figure.ci[0] <= figure.ci[1] <= 1.0
        # (pass ∧ valid)@k never exceeds pass@k.
        assert row.valid_at_k.value <= row.pass_at_k.value  # type: ignore[operator]


# -- the chart --------------------------------------------------------------------------------


def test_the_chart_marks_are_the_figures() -> None:
    patches, consensus, verdicts = random_case(5)
    rows = valid_at_k_of(patches, consensus, verdicts, sampling=Sampling(resamples=100))
    svg = valid_at_k_chart(rows)
    assert svg is not None
    root = ET.fromstring(svg)  # noqa: S314 - our own output, parsed to prove it well-formed
    assert root.get("id") == "chart-valid-at-k"
    title = root.find(f"{SVG}title")
    assert title is not None
    assert title.text == "pass@1 and valid@1 per patch source"
    labels = [
        "".join(t.itertext())
        for t in root.iter(f"{SVG}text")
        if "chart-label" in (t.get("class") or "")
    ]
    marks = [e for e in root.iter() if "chart-mark" in (e.get("class") or "").split()]
    ones = [row for row in rows if row.k == 1]
    expected = [
        (f"{row.source}: {name}", figure)
        for row in ones
        for name, figure in (("pass@1", row.pass_at_k), ("valid@1", row.valid_at_k))
    ]
    assert labels == [label for label, _ in expected]
    assert len(marks) == len(expected)
    desc = root.find(f"{SVG}desc").text or ""  # type: ignore[union-attr]
    for mark, (label, figure) in zip(marks, expected, strict=True):
        assert figure.value is not None
        assert figure.ci is not None
        assert mark.get("data-value") == f"{figure.value:.6f}"
        assert mark.get("data-ci-lo") == f"{figure.ci[0]:.6f}"
        assert mark.get("data-ci-hi") == f"{figure.ci[1]:.6f}"
        assert (
            f"{label} {figure.value:.1%} ({figure.ci[0]:.1%} to {figure.ci[1]:.1%},"
            f" {figure.n} bugs)" in desc
        )


def test_the_chart_says_undefined_and_small_samples() -> None:
    row = ValidAtK(
        source="solo",
        k=1,
        bugs=1,
        candidates=1,
        passing=1,
        tests_unknown=0,
        pass_at_k=Figure(1.0, 1),
        valid_at_k=Figure(None, 1),
        by_consensus=0,
        by_run=0,
        unknown=1,
    )
    svg = valid_at_k_chart([row, ValidAtK(**{**row.__dict__, "k": 5})])
    assert svg is not None
    root = ET.fromstring(svg)  # noqa: S314
    marks = [e for e in root.iter() if "chart-mark" in (e.get("class") or "").split()]
    assert [m.get("data-value") for m in marks] == ["1.000000"]  # k = 5 rows are not drawn
    desc = root.find(f"{SVG}desc").text or ""  # type: ignore[union-attr]
    assert "solo: pass@1 100.0% (1 bug)" in desc
    assert "solo: valid@1 undefined (1 bug)" in desc
    assert "small sample" in "".join(marks[0].itertext())
