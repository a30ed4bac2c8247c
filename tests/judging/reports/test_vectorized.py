"""The vectorized agreement report against a plain reference, resample by resample.

Random records and runs (seeded): the sections computed by ``Scope`` over
``Replicates.from_indices(indices)`` must give every figure the value of the plain statistic
of ``reference`` on the records; in every replicate, the value of that statistic on
``[records[i] for i in row]`` for the same row of the index matrix (undefined where it is
undefined); and as its interval the percentile interval of those reference values.
Every mismatch of a case is collected, so a failure lists them all.

Comparing every replicate, not only the interval's two ends, lets a few replicates do: the
seeds are those that reach the corner cases (undefined figures and replicates, a pair under
two shared patches, one Fleiss size or another, scores on the bins' edges and off the
scale), with ``DEGENERATE``'s variants of seed 0 for the rest.
"""

import dataclasses
import math
from collections import Counter
from collections.abc import Sequence
from statistics import median

import numpy as np
import pytest

from judging.models import JudgingRun, Label, PatchJudgment
from judging.reports.figures import Figure, PatchRecord, Sampling
from judging.reports.humans import PairAgreement, human_section
from judging.reports.judges import (
    BREAKDOWNS,
    NOT_IN_RUN,
    BenchmarkResult,
    RunMasks,
    RunVerdicts,
    breakdown,
    human_judge_agreement,
    judge_column,
)
from judging.reports.resampling import Replicates
from judging.reports.scope import Scope
from tests.judging.reports import reference as ref

V, I, U = Label.VALID.value, Label.INVALID.value, Label.UNSURE.value  # noqa: E741
# Seed 0 is what DEGENERATE varies; seed 3 is the smallest (43 patches); seed 24 has six
# annotators (0 and 3 seven). Their Fleiss sizes are 3, 4 and 2. With every replicate compared,
# they and DEGENERATE reach each situation seeds 0 to 5 reached with 60 replicates (undefined
# figures, figures undefined in some replicates, tied replicates, pairs under two shared
# patches, one category only).
SEEDS = [0, 3, 24]
RESAMPLES = 20
LEVEL = 0.95
BUG_TYPES = ("null_check", "off_by_one", "api_misuse", "")
SOURCES = ("tool-a", "tool-b", "human", "")


def other(label: str) -> str:
    return I if label == V else V


# Random data.


def make_records(rng: np.random.Generator) -> list[PatchRecord]:
    """40–80 patches, 5–7 annotators, 2–6 labels a patch (some UNSURE), VALID skewed; some
    patches adjudicated, some waiting for a lead, a few adjudicated without labels."""
    annotators = [int(a) for a in 100 + np.arange(int(rng.integers(5, 8)))]
    accuracy = {a: float(rng.uniform(0.65, 0.95)) for a in annotators}
    valid_rate = float(rng.uniform(0.6, 0.85))
    records = []
    for index in range(int(rng.integers(40, 81))):
        bug = index // 2
        truth = V if rng.random() < valid_rate else I
        labels: dict[int, str] = {}
        if rng.random() >= 0.05:
            size = min(int(rng.integers(2, 7)), len(annotators))
            for a in rng.choice(annotators, size=size, replace=False):
                if rng.random() < 0.1:
                    labels[int(a)] = U
                else:
                    labels[int(a)] = truth if rng.random() < accuracy[int(a)] else other(truth)
        decisive = {a: label for a, label in labels.items() if label != U}
        unanimous = len(decisive) >= 2 and len(set(decisive.values())) == 1
        consensus: str | None
        roll = rng.random()
        if unanimous:
            (consensus,) = set(decisive.values())
            if roll < 0.03:  # a lead overruled them all
                consensus = other(consensus)
        elif roll < 0.35:
            consensus = None  # waiting for a lead
        elif roll < 0.85:
            consensus = truth
        else:
            consensus = other(truth)
        records.append(
            PatchRecord(
                patch_id=1000 + 3 * index,
                bug_id=bug,
                bug_type=BUG_TYPES[int(rng.choice(4, p=[0.45, 0.3, 0.15, 0.1]))],
                source=SOURCES[int(rng.choice(4, p=[0.5, 0.25, 0.15, 0.1]))],
                labels=labels,
                decisive=decisive,
                consensus=consensus,
                unanimous=unanimous,
            )
        )
    return records


def make_run(
    rng: np.random.Generator,
    pk: int,
    records: list[PatchRecord],
    *,
    accuracy: float,
    says_valid: float | None = None,
    excluded: int = 0,
) -> RunVerdicts:
    """A run (unsaved) that judged most patches, failed or left pending some and never saw
    a few; ``says_valid`` makes it answer VALID at that rate whatever the patch."""
    run = JudgingRun(
        pk=pk,
        provider="openai",
        model="m",
        scale_lo=0,
        scale_hi=100,
        threshold=50,
        strategies=["rubric"],
        context="golden",
    )
    verdicts: dict[int, str] = {}
    statuses: dict[int, str] = {}
    scores: dict[int, float] = {}
    for record in records:
        roll = rng.random()
        if roll < 0.06:
            continue  # not in the run
        if roll < 0.12:
            statuses[record.patch_id] = (
                PatchJudgment.Status.FAILED if roll < 0.09 else PatchJudgment.Status.PENDING
            )
            continue
        truth = record.consensus or (V if rng.random() < 0.7 else I)
        if says_valid is not None:
            verdict = V if rng.random() < says_valid else I
        else:
            verdict = truth if rng.random() < accuracy else other(truth)
        statuses[record.patch_id] = PatchJudgment.Status.DONE
        verdicts[record.patch_id] = verdict
        if rng.random() < 0.9:
            score = float(rng.uniform(50, 100) if verdict == V else rng.uniform(0, 50))
            if rng.random() < 0.1:  # bin edges, the scale's ends included
                score = float(rng.choice([0.0, 30.0, 50.0, 100.0]))
            elif rng.random() < 0.05:  # off the scale: left out of the diagram, counted
                score = float(rng.choice([-5.0, 130.0]))
            scores[record.patch_id] = score
    ids = [record.patch_id for record in records]
    chosen = [int(pk) for pk in rng.choice(ids, size=excluded, replace=False)] if excluded else []
    return RunVerdicts(
        run=run,
        verdicts=verdicts,
        statuses=statuses,
        excluded=frozenset(chosen),
        scores=scores,
    )


class Spied(Replicates):
    """Replicates that keep every figure's replicate values, to compare them one by one."""

    def __init__(self, by_patch: np.ndarray, level: float) -> None:
        super().__init__(by_patch, level)
        self.kept: dict[int, tuple[Figure, np.ndarray]] = {}

    def figures(
        self, values: np.ndarray, ns: Sequence[int], *, items: Sequence[int] | None = None
    ) -> list[Figure]:
        figures = super().figures(values, ns, items=items)
        for column, figure in enumerate(figures):
            self.kept[id(figure)] = (figure, np.array(values[1:, column], np.float64))
        return figures

    def replicates_of(self, figure: Figure) -> np.ndarray | None:
        """The replicate values (row 0, the data, left out) ``figure`` was made of."""
        kept = self.kept.get(id(figure))
        return kept[1] if kept is not None and kept[0] is figure else None


@dataclasses.dataclass
class Case:
    records: list[PatchRecord]
    runs: list[RunVerdicts]
    indices: np.ndarray
    scope: Scope
    level: float = LEVEL
    seeded: bool = False  # one of SEEDS as drawn, no DEGENERATE variant

    @property
    def masks(self) -> list[tuple[RunVerdicts, RunMasks]]:
        return [(run, RunMasks.of(self.scope, run)) for run in self.runs]


def _relabel(record: PatchRecord, labels: dict[int, str], **fields: object) -> PatchRecord:
    decisive = {a: label for a, label in labels.items() if label != U}
    unanimous = len(decisive) >= 2 and len(set(decisive.values())) == 1
    return dataclasses.replace(
        record, labels=labels, decisive=decisive, unanimous=unanimous, **fields
    )


def _all_valid(record: PatchRecord) -> PatchRecord:
    labels = {a: label if label == U else V for a, label in record.labels.items()}
    return _relabel(record, labels, consensus=V if record.consensus else None)


def _one_annotator(record: PatchRecord) -> PatchRecord:
    return _relabel(record, {a: label for a, label in record.labels.items() if a == 100})


def _all_unsure(record: PatchRecord) -> PatchRecord:
    return _relabel(record, dict.fromkeys(record.labels, U))


# Corner cases of seed 0's records: figures undefined in the data or in some resamples.
DEGENERATE = {
    "all_valid": lambda records: [_all_valid(r) for r in records],
    "one_annotator": lambda records: [_one_annotator(r) for r in records],
    "all_unsure": lambda records: [_all_unsure(r) for r in records],
    "two_patches": lambda records: records[:2],
    "five_patches": lambda records: records[3:8],
}


def make_case(seed: int, degenerate: str | None = None) -> Case:
    rng = np.random.default_rng(seed)
    records = make_records(rng)
    if degenerate:
        records = DEGENERATE[degenerate](records)
    runs = [
        make_run(rng, 1, records, accuracy=0.85),
        make_run(rng, 2, records, accuracy=0.7, excluded=min(6, len(records) // 3)),
        make_run(rng, 3, records, accuracy=0.0, says_valid=0.97),  # κ, MCC often undefined
    ]
    size = len(records)
    indices = np.random.default_rng(seed + 1000).integers(0, size, size=(RESAMPLES, size))
    scope = Scope(records, Spied.from_indices(indices, size, level=LEVEL))
    return Case(records, runs, indices, scope, seeded=degenerate is None)


# Comparing.


class Checker:
    """Compares figures with the reference and keeps every mismatch."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.failures: list[str] = []
        self.figures = 0
        self.partly_undefined = 0  # figures undefined in some replicates, not all

    def equal(self, where: str, actual: object, expected: object) -> None:
        if actual != expected:
            self.failures.append(f"{where}: {actual!r} != {expected!r}")

    def close(self, where: str, actual: float | None, expected: float | None) -> None:
        if (actual is None) != (expected is None) or (
            expected is not None and actual != pytest.approx(expected, rel=1e-9)
        ):
            self.failures.append(f"{where}: {actual!r} != reference {expected!r}")

    def figure(
        self, where: str, figure: Figure, f: ref.Statistic, *, n: int, items: int | None = None
    ) -> None:
        """``figure`` is f on the records, f on each replicate's records in its replicate,
        with the plain interval of those (none under two items)."""
        self.figures += 1
        self.equal(f"{where} n", figure.n, n)
        value = f(self.case.records)
        expected = value if value is not None and math.isfinite(value) else None
        self.close(f"{where} value", figure.value, expected)
        values = ref.replicate_values(self.case.records, self.case.indices, f)
        self.partly_undefined += None in values and any(v is not None for v in values)
        self.replicates(where, figure, values)
        ci = None
        if expected is not None and (n if items is None else items) >= 2:
            ci = ref.percentile_interval(values, self.case.level)
        if (figure.ci is None) != (ci is None) or (
            ci is not None and figure.ci != pytest.approx(ci, rel=1e-9)
        ):
            self.failures.append(f"{where} ci: {figure.ci!r} != reference {ci!r}")

    def replicates(self, where: str, figure: Figure, expected: list[float | None]) -> None:
        """The replicate values ``figure`` came from are ``expected``, nan where None."""
        spied = self.case.scope.replicates
        assert isinstance(spied, Spied)
        actual = spied.replicates_of(figure)
        if actual is None:
            self.failures.append(f"{where}: not made by Replicates.figures")
            return
        self.equal(f"{where} replicates", len(actual), len(expected))
        if len(actual) != len(expected):
            return
        want = np.array([np.nan if value is None else value for value in expected], np.float64)
        # As pytest.approx(want, rel=1e-9) for each defined one, at once.
        same = (np.isfinite(actual) == np.isfinite(want)) & (
            ~np.isfinite(want) | np.isclose(actual, want, rtol=1e-9, atol=1e-12)
        )
        wrong = [
            f"{r + 1}: {actual[r]!r} != reference {expected[r]!r}" for r in np.flatnonzero(~same)
        ]
        if wrong:
            self.failures.append(f"{where} replicates " + "; ".join(wrong))

    def pairs(self, where: str, agreement: PairAgreement, select: ref.Selector) -> None:
        """Each annotator pair's κ, and their mean κ and mean AC1, on ``select``'s patches."""
        members = select(self.case.records)
        shared = ref.shared_labels(members)
        self.equal(f"{where} pairs", sorted(agreement.kappas), sorted(shared))
        for pair, labels in shared.items():
            figure = agreement.kappas.get(pair)
            if figure is None:
                continue
            if len(labels) < ref.MIN_SHARED:
                self.equal(f"{where} {pair}", figure, Figure(None, len(labels)))
            else:
                self.figure(
                    f"{where} {pair}",
                    figure,
                    ref.on(select, ref.one_pair_kappa(pair)),
                    n=len(labels),
                )
        values = [
            value
            for labels in shared.values()
            if len(labels) >= ref.MIN_SHARED and (value := ref.pair_kappa(labels)) is not None
        ]
        self.close(f"{where} median", agreement.median, median(values) if values else None)
        n = len(members)
        self.figure(f"{where} mean", agreement.mean, ref.on(select, ref.mean_pair_kappa), n=n)
        self.figure(f"{where} mean AC1", agreement.mean_ac1, ref.on(select, ref.mean_pair_ac1), n=n)

    def benchmark(
        self, where: str, result: BenchmarkResult, run: RunVerdicts, select: ref.Selector
    ) -> None:
        """A run's metrics, confusion and prevalence on ``select``'s patches."""
        members = select(self.case.records)
        n = len(members)
        confusion = ref.confusion(run, members)
        self.equal(f"{where} n", result.n, n)
        self.equal(f"{where} confusion", result.confusion, confusion)
        tp, fp, fn, tn = (confusion[key] for key in ("tp", "fp", "fn", "tn"))
        denominators = {"precision": tp + fp, "recall": tp + fn, "npv": tn + fn}
        for key in ref.METRICS:
            self.figure(
                f"{where} {key}",
                result.metrics[key],
                ref.on(select, ref.judge_metric(run, key)),
                n=denominators.get(key, n),
                items=n,
            )
        self.figure(
            f"{where} prevalence",
            result.prevalence,
            ref.on(select, ref.judge_metric(run, "prevalence")),
            n=n,
        )
        self.equal(f"{where} baselines", bool(result.baselines), n > 0)

    def done(self, *, some: bool = True) -> None:
        """Fails with every mismatch; with ``some``, when nothing was compared; on a seed's
        case, when no figure was undefined in some replicates only (the corner the few
        replicates must still reach)."""
        assert self.figures or not some, "no figure was compared"
        assert self.partly_undefined or not self.case.seeded, "no replicate undefined"
        assert not self.failures, f"{len(self.failures)} mismatches:\n" + "\n".join(self.failures)


@pytest.fixture(
    params=[(seed, None) for seed in SEEDS] + [(0, name) for name in DEGENERATE],
    ids=[f"seed{seed}" for seed in SEEDS] + list(DEGENERATE),
)
def case(request: pytest.FixtureRequest) -> Case:
    return make_case(*request.param)


def test_random_cases_have_what_the_checks_need() -> None:
    """The random data reach every branch: disputes, waiting patches, UNSURE, groups."""
    for seed in SEEDS:
        case = make_case(seed)
        records = case.records
        assert 40 <= len(records) <= 80
        assert 5 <= len(ref.annotators_of(records)) <= 7
        assert any(U in r.labels.values() for r in records)
        assert any(r.consensus is None for r in records)
        assert any(r.consensus and not r.unanimous for r in records)
        assert any(r.unanimous for r in records)
        assert any(not r.labels for r in records)
        assert len({r.bug_type for r in records}) > 1
        assert len({r.source for r in records}) > 1
        assert all(run.excluded for run in case.runs[1:2])
    # What the seeds are chosen for (SEEDS): six and seven annotators, Fleiss sizes 2 to 4.
    cases = [make_case(seed).records for seed in SEEDS]
    assert {len(ref.annotators_of(records)) for records in cases} == {6, 7}
    assert {ref.fleiss_labels(records) for records in cases} == {2, 3, 4}


# The sections.


def test_human_section(case: Case) -> None:
    check = Checker(case)
    records = case.records
    section = human_section(case.scope, ref.annotators_of(records))
    for column in section.columns:
        name = column.name
        select = ref.column(name)
        members = select(records)
        with_consensus = [r for r in members if r.consensus]
        check.equal(f"{name} patches", column.patches.value, len(members))
        check.equal(f"{name} bugs", column.bugs.value, len({r.bug_id for r in members}))
        check.equal(
            f"{name} labels",
            {label: figure.value for label, figure in column.labels.items()},
            {
                label: sum(list(r.labels.values()).count(label) for r in members)
                for label in (V, I, U)
            },
        )
        check.equal(
            f"{name} unanimous count", column.unanimous_count, sum(r.unanimous for r in members)
        )
        check.figure(
            f"{name} unanimous",
            column.unanimous,
            ref.on(select, ref.unanimous_share),
            n=len(members),
        )
        check.figure(f"{name} α", column.alpha, ref.on(select, ref.alpha), n=len(members))
        k = ref.fleiss_labels(members)
        check.equal(f"{name} Fleiss labels", column.fleiss_labels, k)
        check.figure(
            f"{name} Fleiss",
            column.fleiss,
            ref.on(select, ref.fleiss(k)),
            n=sum(len(r.decisive) == k for r in members),
        )
        check.figure(f"{name} AC1", column.ac1, ref.on(select, ref.ac1), n=len(members))
        check.figure(
            f"{name} weighted κ",
            column.weighted_kappa,
            ref.on(select, ref.weighted_consensus_kappa),
            n=len(with_consensus),
        )
        check.equal(f"{name} awaiting", column.awaiting.value, len(members) - len(with_consensus))
        check.equal(
            f"{name} consensus",
            (column.consensus_valid.value, column.consensus_invalid.value),
            (sum(r.consensus == V for r in members), sum(r.consensus == I for r in members)),
        )
        pairs = ref.consensus_pairs(members)
        check.equal(
            f"{name} annotators",
            [row.annotator_id for row in column.annotators],
            ref.annotators_of(members),
        )
        weights = {a: len(own) for a, own in pairs.items() if ref.pair_kappa(own) is not None}
        for row in column.annotators:
            a = row.annotator_id
            where = f"{name} annotator {a}"
            given = [r.labels[a] for r in members if a in r.labels]
            check.equal(f"{where} labels", (row.labels, row.unsure), (len(given), given.count(U)))
            own = pairs.get(a, [])
            if not own:
                check.equal(f"{where} κ", row.kappa, Figure(None, 0))
            else:
                check.figure(
                    f"{where} κ", row.kappa, ref.on(select, ref.annotator_kappa(a)), n=len(own)
                )
            check.close(
                f"{where} weight",
                row.weight,
                weights[a] / sum(weights.values()) if a in weights else None,
            )
    check.pairs("labelled pairs", section.pairs, ref.column(ref.LABELLED))
    labelled = ref.column(ref.LABELLED)(records)
    expected = ref.annotators_of(records) if ref.shared_labels(labelled) else []
    check.equal("pairwise annotators", sorted(section.pairwise), expected)
    for a, figure in section.pairwise.items():
        check.figure(
            f"pairwise {a}",
            figure,
            ref.on(ref.column(ref.LABELLED), ref.pairwise_mean(a)),
            n=sum(a in r.decisive for r in labelled),
        )
    check.equal(
        "unanimous only",
        section.unanimous_only,
        [bool(r.consensus) for r in records] == [r.unanimous for r in records],
    )
    check.done()


def test_judge_columns(case: Case) -> None:
    check = Checker(case)
    records = case.records
    for run, masks in case.masks:
        column = judge_column(case.scope, run, masks)
        where = f"run {run.run.pk}"
        with_consensus = [r for r in records if r.consensus]
        kept = ref.kept(run)(with_consensus)
        check.equal(f"{where} with consensus", column.with_consensus, len(kept))
        check.equal(f"{where} excluded", column.excluded, len(with_consensus) - len(kept))
        check.equal(
            f"{where} without verdict",
            column.without_verdict,
            dict(
                sorted(
                    Counter(
                        run.statuses.get(r.patch_id, NOT_IN_RUN)
                        for r in kept
                        if r.patch_id not in run.verdicts
                    ).items()
                )
            ),
        )
        for name in (ref.B_FULL, ref.B_CLEAR):
            check.benchmark(
                f"{where} {name}", column.benchmarks[name], run, ref.benchmark(run, name)
            )
        scored = [r for r in ref.benchmark(run, ref.B_FULL)(records) if r.patch_id in run.scores]
        on_scale = [r for r in scored if 0.0 <= run.scores[r.patch_id] <= 100.0]
        check.equal(f"{where} reliability bins", len(column.reliability.bins), 10 if scored else 0)
        check.equal(
            f"{where} scores off the scale",
            column.reliability.outside,
            len(scored) - len(on_scale),
        )
        for position, bin_ in enumerate(column.reliability.bins):
            select = ref.reliability_bin(run, position)
            members = select(records)
            check.equal(f"{where} bin {position} lo", bin_.lo, 10.0 * position)
            check.close(
                f"{where} bin {position} mean score",
                bin_.mean_score,
                float(np.mean([run.scores[r.patch_id] for r in members])) if members else None,
            )
            check.figure(
                f"{where} bin {position} VALID share",
                bin_.valid_share,
                ref.on(select, ref.valid_rate),
                n=len(members),
            )
    check.done()


def test_human_judge_agreement(case: Case) -> None:
    check = Checker(case)
    for run, masks in case.masks:
        agreement = human_judge_agreement(case.scope, run, masks)
        where = f"run {run.run.pk}"
        select = ref.judged_labelled(run)
        members = select(case.records)
        check.equal(f"{where} patches", agreement.patches, len(members))
        pairs = ref.judge_annotator_pairs(run, members)
        check.equal(f"{where} annotators", sorted(agreement.judge_pairs), sorted(pairs))
        for a, own in pairs.items():
            figure = agreement.judge_pairs.get(a)
            if figure is None:
                continue
            if len(own) < ref.MIN_SHARED:
                check.equal(f"{where} judge–{a}", figure, Figure(None, len(own)))
            else:
                check.figure(
                    f"{where} judge–{a}",
                    figure,
                    ref.on(select, ref.judge_kappa(run, a)),
                    n=len(own),
                )
        values = [
            value
            for own in pairs.values()
            if len(own) >= ref.MIN_SHARED and (value := ref.pair_kappa(own)) is not None
        ]
        check.close(f"{where} median", agreement.judge_median, median(values) if values else None)
        check.figure(
            f"{where} judge mean κ",
            agreement.judge_mean,
            ref.on(select, ref.mean_judge_kappa(run)),
            n=len(members),
        )
        check.figure(
            f"{where} judge mean AC1",
            agreement.judge_mean_ac1,
            ref.on(select, ref.mean_judge_ac1(run)),
            n=len(members),
        )
        check.pairs(f"{where} humans", agreement.humans, select)
    check.done()


def test_breakdowns(case: Case) -> None:
    check = Checker(case)
    records = case.records
    runs = case.masks
    for key in BREAKDOWNS:
        result = breakdown(case.scope, key, runs)
        groups = sorted({getattr(r, key) or "" for r in records})
        check.equal(f"{key} groups", len(result.groups), len(groups))
        check.equal(f"{key} rows", len(result.rows), len(groups) if len(groups) > 1 else 0)
        for row in result.rows:
            group = "" if row.group.startswith("(no ") else row.group
            where = f"{key} {row.group}"
            check.equal(f"{where} known", group in groups, True)
            select = ref.in_group(key, group)
            members = select(records)
            labelled = ref.then(select, ref.column(ref.LABELLED))
            consensus = [r for r in members if r.consensus]
            check.equal(f"{where} patches", row.patches, len(labelled(records)))
            check.figure(
                f"{where} unanimous",
                row.unanimous,
                ref.on(labelled, ref.unanimous_share),
                n=len(labelled(records)),
            )
            check.figure(
                f"{where} weighted κ",
                row.weighted_kappa,
                ref.on(select, ref.weighted_consensus_kappa),
                n=len(consensus),
            )
            check.figure(
                f"{where} VALID rate",
                row.valid_rate,
                ref.on(select, ref.valid_rate),
                n=len(consensus),
            )
            for run, _ in runs:
                check.benchmark(
                    f"{where} run {run.run.pk}",
                    row.judges[run.run.pk],
                    run,
                    ref.benchmark(run, ref.B_FULL, key, group),
                )
    check.done(some=False)  # one group: no rows


# The bootstrap matrix itself.


def test_draw_is_deterministic_and_row_zero_is_the_data() -> None:
    sampling = Sampling(resamples=50, level=LEVEL, seed=7)
    first = Replicates.draw(40, sampling)
    again = Replicates.draw(40, sampling)
    np.testing.assert_array_equal(first.by_patch, again.by_patch)
    assert (first.patches, first.resamples, first.level) == (40, 50, LEVEL)
    # Column 0 (the point estimate) is every patch once; every resample draws 40 patches.
    np.testing.assert_array_equal(first.by_patch[:, 0], np.ones(40))
    np.testing.assert_array_equal(first.by_patch.sum(axis=0), np.full(51, 40.0))
    # The draws are numpy's for the seed: one ``integers`` call, resamples × patches.
    indices = np.random.default_rng(7).integers(0, 40, size=(50, 40))
    for r, row in enumerate(indices):
        np.testing.assert_array_equal(first.by_patch[:, r + 1], np.bincount(row, minlength=40))
    other = Replicates.draw(40, dataclasses.replace(sampling, seed=8))
    assert not np.array_equal(first.by_patch, other.by_patch)


def test_report_scope_matches_the_reference_on_its_own_draws() -> None:
    """What ``agreement_report`` builds, ``Replicates.draw``: the same figures as the
    reference on the seed's index matrix."""
    case = make_case(0)
    size = len(case.records)
    sampling = Sampling(resamples=40, level=0.9, seed=3)
    scope = Scope(case.records, Spied.draw(size, sampling))
    indices = np.random.default_rng(3).integers(0, size, size=(40, size))
    drawn = Case(case.records, case.runs, indices, scope, level=0.9)
    check = Checker(drawn)
    column = human_section(scope, []).column(ref.LABELLED)
    select = ref.column(ref.LABELLED)
    n = len(select(case.records))
    for where, figure, f in (
        ("α", column.alpha, ref.alpha),
        ("AC1", column.ac1, ref.ac1),
        ("weighted κ", column.weighted_kappa, ref.weighted_consensus_kappa),
    ):
        expected_n = sum(bool(r.consensus) for r in select(case.records)) if "κ" in where else n
        check.figure(where, figure, ref.on(select, f), n=expected_n)
        assert figure.ci is not None
    check.done()
