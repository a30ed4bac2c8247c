"""The agreement report on a small hand-made dataset: every figure checked against
scikit-learn, statsmodels and the ``krippendorff`` package, computed here from the raw
labels and verdicts, not through the report's code.

Three annotators, eight patches on four bugs (two bug types, two patch sources):

    patch  a  b  c   state                 consensus
    P1     V  V  V   unanimous             VALID
    P2     I  I  I   unanimous             INVALID
    P3     V  V  I   adjudicated           VALID
    P4     I  I  U   unanimous (2 labels)  INVALID
    P5     V  I  V   disputed, waiting     —
    P6     I  I  I   unanimous             INVALID
    P7     V  V  .   unanimous (c absent)  VALID
    P8     U  V  .   too few → adjudicated INVALID

Run "golden" (an LLM): P1 V, P2 I, P3 I, P4 I, P5 V, P6 V, P7 V, P8 failed.
Run "reference" (offline): P1 V, P2 V, P3 V, P4 I, P5 I, P6 I, P7 pending, P8 I.
"""

import itertools
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    f1_score,
    precision_score,
    recall_score,
)
from statsmodels.stats.inter_rater import fleiss_kappa

from judging.agreement import SMALL_SAMPLE
from judging.consensus.rules import consensus_rule_for
from judging.models import (
    Adjudication,
    Annotation,
    Assignment,
    Calibration,
    Campaign,
    JudgingRun,
    PatchJudgment,
)
from judging.reports import selectors, vectorized
from judging.reports.figures import Sampling
from judging.reports.humans import (
    B_CLEAR,
    B_FULL,
    LABELLED,
    human_section,
    weighted_consensus_kappa,
)
from judging.reports.judges import NOT_IN_RUN, RunMasks, benchmark_result, breakdown
from judging.reports.resampling import Replicates
from judging.reports.scope import Scope
from judging.reports.selectors import (
    FOREIGN_CAMPAIGN,
    FOREIGN_RUN,
    SECTIONS,
    AgreementReport,
    ReportError,
    _inputs,
    _run_verdicts,
    agreement_report,
    default_runs,
    report_campaign,
    report_runs,
)
from judging.runs.selectors import UNKNOWN_RUN
from rubrics.models import Patch
from tests.judging.reports.factories import (
    ANNOTATORS,
    GOLDEN,
    LABELS,
    REFERENCE,
    I,
    Small,
    U,
    V,
    add_patches,
    make_run,
)
from tests.judging.reports.helpers import present
from tests.rubrics.factories import DatasetFactory

pytestmark = pytest.mark.django_db

CONSENSUS = {"P1": V, "P2": I, "P3": V, "P4": I, "P6": I, "P7": V, "P8": I}
UNANIMOUS = ("P1", "P2", "P4", "P6", "P7")


def raw_matrix(keys: list[str]) -> np.ndarray:
    """Raters × patches, decisive labels as 1/0, everything else nan."""
    code = {V: 1.0, I: 0.0}
    return np.array(
        [[code.get(LABELS[key][rater] or "", np.nan) for key in keys] for rater in range(3)]
    )


def decisive(key: str) -> list[str]:
    return [label for label in LABELS[key] if label in (V, I)]


def test_the_human_columns_match_the_libraries(small: Small) -> None:
    report = agreement_report(small.dataset, runs=[])
    humans = report.humans
    labelled, full, clear = (humans.column(name) for name in (LABELLED, B_FULL, B_CLEAR))
    columns = {LABELLED: sorted(LABELS), B_FULL: sorted(CONSENSUS), B_CLEAR: list(UNANIMOUS)}

    assert (labelled.patches.value, full.patches.value, clear.patches.value) == (8, 7, 5)
    assert (labelled.bugs.value, full.bugs.value, clear.bugs.value) == (4, 4, 4)
    assert {label: figure.value for label, figure in labelled.labels.items()} == {
        V: 10,
        I: 10,
        U: 2,
    }
    for column in humans.columns:
        keys = columns[column.name]
        expected = krippendorff.alpha(
            reliability_data=raw_matrix(keys), level_of_measurement="nominal"
        )
        assert column.alpha.value == pytest.approx(expected), column.name
        assert column.alpha.n == len(keys)
    # Fleiss' κ: the most common number of decisive labels among patches with two is 3 (P1,
    # P2, P3, P5, P6; P4 and P7 have 2, P8 has 1).
    assert labelled.fleiss_labels == 3
    table = [[decisive(k).count(V), decisive(k).count(I)] for k in ("P1", "P2", "P3", "P5", "P6")]
    assert labelled.fleiss.value == pytest.approx(fleiss_kappa(np.array(table)))
    assert labelled.fleiss.n == 5
    # B_clear: three patches with 3 labels (P1, P2, P6) against two with 2 (P4, P7).
    assert clear.fleiss_labels == 3
    assert clear.fleiss.value == pytest.approx(1.0)

    assert labelled.unanimous.value == pytest.approx(5 / 8)
    assert labelled.unanimous_count == 5
    assert full.unanimous.value == pytest.approx(5 / 7)
    assert clear.unanimous.value == 1.0
    assert (full.consensus_valid.value, full.consensus_invalid.value) == (3, 4)
    assert (labelled.awaiting.value, full.awaiting.value) == (1, 0)
    assert (clear.consensus_valid.value, clear.consensus_invalid.value) == (2, 3)


def test_annotators_against_the_consensus_and_their_weighted_average(small: Small) -> None:
    full = agreement_report(small.dataset, runs=[]).humans.column(B_FULL)
    kappas, weights = {}, {}
    for rater, name in enumerate(ANNOTATORS):
        keys = [k for k in CONSENSUS if LABELS[k][rater] in (V, I)]
        own = [LABELS[k][rater] for k in keys]
        kappas[name] = cohen_kappa_score(own, [CONSENSUS[k] for k in keys])
        weights[name] = len(keys)
    rows = {small.annotators[n].pk: n for n in ANNOTATORS}
    for row in full.annotators:
        name = rows[row.annotator_id]
        assert row.kappa.value == pytest.approx(kappas[name]), name
        assert row.kappa.n == weights[name]
        assert row.weight == pytest.approx(weights[name] / sum(weights.values()))
    expected = sum(kappas[n] * weights[n] for n in ANNOTATORS) / sum(weights.values())
    assert full.weighted_kappa.value == pytest.approx(expected)


def pair_kappa(a: int, b: int, keys: list[str]) -> tuple[float | None, int]:
    shared = [k for k in keys if LABELS[k][a] in (V, I) and LABELS[k][b] in (V, I)]
    if len(shared) < 2:
        return None, len(shared)
    return cohen_kappa_score([LABELS[k][a] for k in shared], [LABELS[k][b] for k in shared]), len(
        shared
    )


def test_the_pairwise_matrix(small: Small) -> None:
    pairs = agreement_report(small.dataset, runs=[]).humans.pairs
    ids = [small.annotators[name].pk for name in ANNOTATORS]
    values = []
    for a, b in itertools.combinations(range(3), 2):
        expected, n = pair_kappa(a, b, list(LABELS))
        figure = pairs.pair(ids[b], ids[a])  # either order
        assert figure is not None
        assert figure.n == n
        assert figure.value == pytest.approx(expected)
        values.append(expected)
    assert pairs.mean.value == pytest.approx(np.mean(values))
    assert pairs.median == pytest.approx(np.median(values))


def judged(verdicts: dict[str, str], keys: list[str]) -> tuple[list[str], list[str]]:
    keys = [k for k in keys if verdicts.get(k) in (V, I)]
    return [verdicts[k] for k in keys], [CONSENSUS[k] for k in keys]


def expected_metrics(predicted: list[str], actual: list[str]) -> dict[str, float]:
    return {
        "accuracy": accuracy_score(actual, predicted),
        "kappa": cohen_kappa_score(actual, predicted),
        "precision": precision_score(actual, predicted, pos_label=V),
        "recall": recall_score(actual, predicted, pos_label=V),
        "f1": f1_score(actual, predicted, pos_label=V),
        "npv": precision_score(actual, predicted, pos_label=I),
    }


@pytest.mark.parametrize("run_name", ["golden", "reference"])
def test_each_run_against_the_consensus_on_b_full_and_b_clear(small: Small, run_name: str) -> None:
    run = getattr(small, run_name)
    verdicts = GOLDEN if run_name == "golden" else REFERENCE
    report = agreement_report(small.dataset, runs=[small.golden, small.reference])
    column = next(c for c in report.judges if c.run.run == run)
    for benchmark, keys in ((B_FULL, sorted(CONSENSUS)), (B_CLEAR, list(UNANIMOUS))):
        predicted, actual = judged(verdicts, keys)
        result = column.benchmarks[benchmark]
        assert result.n == len(predicted)
        for metric, value in expected_metrics(predicted, actual).items():
            assert result.metrics[metric].value == pytest.approx(value), (benchmark, metric)
        tp = sum(p == a == V for p, a in zip(predicted, actual, strict=True))
        tn = sum(p == a == I for p, a in zip(predicted, actual, strict=True))
        assert (result.confusion["tp"], result.confusion["tn"]) == (tp, tn)
    left_out = {"golden": {"failed": 1}, "reference": {"pending": 1}}[run_name]
    assert column.without_verdict == left_out
    assert column.with_consensus == 7
    assert column.run.offline is (run_name == "reference")


def test_precision_recall_and_npv_rest_on_their_denominators(small: Small) -> None:
    report = agreement_report(small.dataset, runs=[small.golden])
    metrics = present(report.judges)[0].benchmarks[B_FULL].metrics
    # Golden on B_full: P1 tp, P2 tn, P3 fn, P4 tn, P6 fp, P7 tp.
    assert (metrics["accuracy"].n, metrics["precision"].n, metrics["recall"].n) == (6, 3, 3)
    assert metrics["npv"].n == 3
    assert all(figure.small_sample for figure in metrics.values())  # n < SMALL_SAMPLE


def test_a_patch_outside_the_run_is_counted_as_not_in_it(small: Small) -> None:
    PatchJudgment.objects.filter(run=small.golden, patch=small.patches["P4"]).delete()
    column = present(agreement_report(small.dataset, runs=[small.golden]).judges)[0]
    assert column.without_verdict == {"failed": 1, NOT_IN_RUN: 1}
    assert column.benchmarks[B_FULL].n == 5


def test_the_judge_beside_each_annotator_and_the_annotator_pairs(small: Small) -> None:
    report = agreement_report(small.dataset, runs=[small.golden])
    (agreement,) = report.human_judge
    keys = [k for k in LABELS if GOLDEN[k] in (V, I)]  # P8 failed
    assert agreement.patches == len(keys) == 7
    values = []
    for rater, name in enumerate(ANNOTATORS):
        shared = [k for k in keys if LABELS[k][rater] in (V, I)]
        expected = cohen_kappa_score(
            [GOLDEN[k] for k in shared], [LABELS[k][rater] for k in shared]
        )
        figure = agreement.judge_pairs[small.annotators[name].pk]
        assert figure.value == pytest.approx(expected), name
        assert figure.n == len(shared)
        values.append(expected)
    assert agreement.judge_mean.value == pytest.approx(np.mean(values))
    assert agreement.judge_median == pytest.approx(np.median(values))
    pair_values = [pair_kappa(a, b, keys)[0] for a, b in itertools.combinations(range(3), 2)]
    assert agreement.humans.mean.value == pytest.approx(np.mean(pair_values))


def test_a_calibrated_team_leaves_the_calibration_patches_out(small: Small) -> None:
    campaign = Campaign.objects.create(
        dataset=small.dataset, name="Calibration", purpose="calibration"
    )
    for position, key in enumerate(("P1", "P2"), start=1):
        Assignment.objects.create(
            campaign=campaign, patch=small.patches[key], annotator=small.annotators["ann-a"],
            position=position,
        )  # fmt: skip
    Calibration.objects.create(campaign=campaign, run=small.golden, team=["rubric"], patch_count=2)
    report = agreement_report(small.dataset, runs=[small.golden, small.reference])
    golden, reference = report.judges
    assert golden.run.calibration is not None
    assert golden.run.excluded == {small.patches["P1"].pk, small.patches["P2"].pk}
    assert golden.excluded == 2
    assert golden.with_consensus == 5
    keys = [k for k in CONSENSUS if k not in ("P1", "P2")]
    predicted, actual = judged(GOLDEN, keys)
    assert golden.benchmarks[B_FULL].n == len(predicted) == 4
    assert golden.benchmarks[B_FULL].metrics["accuracy"].value == pytest.approx(
        accuracy_score(actual, predicted)
    )
    assert present(report.human_judge)[0].patches == 5  # P3–P7
    # Another team is not calibrated: it keeps every patch.
    assert reference.run.calibration is None
    assert reference.benchmarks[B_FULL].n == 6


def test_intervals_are_reproducible_and_bracket_the_value(small: Small) -> None:
    first = agreement_report(small.dataset, runs=[small.golden])
    second = agreement_report(small.dataset, runs=[small.golden])
    alpha = first.humans.column(LABELLED).alpha
    assert alpha.ci == second.humans.column(LABELLED).alpha.ci
    assert alpha.ci is not None
    assert alpha.value is not None
    assert alpha.ci[0] <= alpha.value <= alpha.ci[1]
    assert alpha.small_sample
    accuracy = present(first.judges)[0].benchmarks[B_FULL].metrics["accuracy"]
    assert accuracy.ci == present(second.judges)[0].benchmarks[B_FULL].metrics["accuracy"].ci
    other = agreement_report(small.dataset, runs=[small.golden], sampling=Sampling(seed=7))
    assert other.humans.column(LABELLED).alpha.value == alpha.value
    assert first.humans.column(LABELLED).patches.small_sample is False  # a count


def test_breakdowns_by_bug_type_and_source(small: Small) -> None:
    report = agreement_report(small.dataset, runs=[small.golden])
    by_type, by_source = report.breakdowns
    assert [row.group for row in by_type.rows] == ["null_check", "off_by_one"]
    null_check = by_type.rows[0]  # P1–P4
    assert null_check.patches == 4
    assert null_check.unanimous.value == pytest.approx(3 / 4)  # P1, P2, P4
    predicted, actual = judged(GOLDEN, ["P1", "P2", "P3", "P4"])
    result = null_check.judges[small.golden.pk]
    assert result.metrics["accuracy"].value == pytest.approx(accuracy_score(actual, predicted))
    assert [row.group for row in by_source.rows] == ["tool-a", "tool-b"]
    tool_a = by_source.rows[0]  # P1, P3, P5, P7
    assert tool_a.patches == 4
    assert tool_a.unanimous.value == pytest.approx(2 / 4)


def test_each_breakdown_group_is_as_if_its_patches_were_all(
    small: Small, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every group's figures of a kind come from one tally, equal to the bit to the figures
    computed on the group's patches alone."""
    sampling = Sampling(resamples=30)
    inputs = _inputs(small.dataset, None, consensus_rule_for(small.dataset, None), sampling)
    scope = inputs.scope
    (golden,), _ = _run_verdicts([small.golden])
    runs = [(golden, RunMasks.of(scope, golden))]
    tallies: list[int] = []
    tally = Replicates.tally

    def counted(*arguments: Any) -> Any:
        tallies.append(1)
        return tally(*arguments)

    monkeypatch.setattr(Replicates, "tally", counted)
    by_type = breakdown(scope, "bug_type", runs)
    assert len(tallies) == 4  # unanimity, VALID rate, annotators' κ, the run
    monkeypatch.setattr(Replicates, "tally", tally)
    for row in by_type.rows:
        mask = np.array([value == row.group for value in scope.groups["bug_type"]])
        labelled, decided = mask & scope.labelled, mask & scope.with_consensus
        unanimous = vectorized.share(scope.flag_counts(labelled, scope.unanimous))
        valid = vectorized.share(scope.flag_counts(decided, scope.consensus == 1))
        assert row.unanimous == scope.figure(unanimous, int(labelled.sum()))
        assert row.valid_rate == scope.figure(valid, int(decided.sum()))
        assert row.weighted_kappa == weighted_consensus_kappa(scope, mask)
        masks = runs[0][1]
        alone = benchmark_result(scope, B_FULL, mask & masks.kept, masks)
        assert row.judges[small.golden.pk] == alone


def test_a_human_column_tallies_the_annotators_against_the_consensus_once(
    small: Small, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A column's weighted κ and its annotator rows rest on the same tally: once a column."""
    inputs = _inputs(small.dataset, None, consensus_rule_for(small.dataset, None), Sampling())
    scope = inputs.scope
    tallied: list[bytes] = []
    cells = Scope.annotator_consensus_cells

    def counted(self: Scope, mask: np.ndarray, *arguments: Any) -> Any:
        tallied.append(mask.tobytes())
        return cells(self, mask, *arguments)

    monkeypatch.setattr(Scope, "annotator_consensus_cells", counted)
    human_section(scope, sorted(inputs.annotators))
    assert len(tallied) == len(set(tallied)) == 3  # labelled, B_full, B_clear


def test_one_group_has_no_breakdown_rows(small: Small) -> None:
    Patch.objects.filter(dataset=small.dataset).update(source="")
    by_source = present(agreement_report(small.dataset, runs=[]).breakdowns)[1]
    assert by_source.single_group
    assert by_source.groups == ["(no source)"]
    assert by_source.rows == []


def test_a_campaign_limits_the_report_to_its_patches(small: Small) -> None:
    campaign = Campaign.objects.create(dataset=small.dataset, name="Benchmark")
    for position, key in enumerate(("P1", "P3", "P5"), start=1):
        Assignment.objects.create(
            campaign=campaign, patch=small.patches[key], annotator=small.annotators["ann-b"],
            position=position,
        )  # fmt: skip
    report = agreement_report(small.dataset, campaign=campaign, runs=[small.golden])
    assert report.patches_in_scope == 3
    assert report.humans.column(LABELLED).patches.value == 3
    assert report.humans.column(B_FULL).patches.value == 2  # P5 waits
    assert present(report.judges)[0].benchmarks[B_FULL].n == 2


def test_default_runs_are_the_newest_finished_run_per_context(small: Small) -> None:
    newer = make_run(
        small.dataset, small.patches, GOLDEN, strategies=["rubric"], context="golden",
        provider="openai", model="gpt-4o",
    )  # fmt: skip
    JudgingRun.objects.create(
        dataset=small.dataset, strategies=["rubric"], context="draft", provider="openai",
        model="m", status=JudgingRun.Status.RUNNING,
    )  # fmt: skip
    assert default_runs(small.dataset) == [newer, small.reference]
    report = agreement_report(small.dataset)
    assert report.runs_by_default
    assert [run.run for run in report.runs] == [newer, small.reference]


def test_runs_and_campaigns_of_another_dataset_are_refused(small: Small) -> None:
    other = DatasetFactory(name="Other", slug="other")
    foreign = JudgingRun.objects.create(
        dataset=other, strategies=["rubric"], context="golden", provider="openai", model="m"
    )
    with pytest.raises(ReportError) as error:
        report_runs(dataset=small.dataset, run_ids=[small.golden.pk, foreign.pk])
    assert str(error.value) == FOREIGN_RUN.format(
        run=foreign.pk, other=other, dataset=small.dataset
    )
    with pytest.raises(ReportError, match=UNKNOWN_RUN.format(run=999_999)):
        report_runs(dataset=small.dataset, run_ids=["999999"])
    for not_an_id in ("x", str(2**63), "99999999999999999999", "-1", "²"):
        with pytest.raises(ReportError, match="must be a whole number from 1 to"):
            report_runs(dataset=small.dataset, run_ids=[not_an_id])
    campaign = Campaign.objects.create(dataset=other, name="Elsewhere")
    with pytest.raises(ReportError) as error:
        report_campaign(dataset=small.dataset, campaign_id=campaign.pk)
    assert str(error.value) == FOREIGN_CAMPAIGN.format(
        campaign=campaign.pk, other=other, dataset=small.dataset
    )
    assert report_runs(dataset=small.dataset, run_ids=[str(small.reference.pk)]) == [
        small.reference
    ]


def test_the_report_costs_the_same_queries_at_any_size(small: Small) -> None:
    runs = [small.golden, small.reference]
    with CaptureQueriesContext(connection) as few:
        agreement_report(small.dataset, runs=runs, sampling=Sampling(resamples=10))
    add_patches(small, 40)
    with CaptureQueriesContext(connection) as many:
        report = agreement_report(small.dataset, runs=runs, sampling=Sampling(resamples=10))
    assert report.humans.column(LABELLED).patches.value == 48
    # 12 reads at most, and the 6 aggregates that tell whether kept reads are still current.
    assert len(many) == len(few) <= 18, [q["sql"] for q in many.captured_queries]
    assert SMALL_SAMPLE == 30


def test_a_report_read_again_reads_no_label_until_one_changes(small: Small) -> None:
    """The page's four sections, and every view of it, read the records once while the data
    is unchanged (only the aggregates that say so); a changed label is read at once."""
    runs, sampling = [small.golden], Sampling(resamples=10)
    first = agreement_report(small.dataset, runs=runs, sampling=sampling)
    with CaptureQueriesContext(connection) as again:
        for section in SECTIONS:
            agreement_report(small.dataset, runs=runs, sampling=sampling, sections=[section])
    per_patch = (
        'FROM "judging_annotation"',
        'FROM "judging_patchjudgment"',
        'FROM "rubrics_patch"',
    )
    reads = [
        query["sql"]
        for query in again.captured_queries
        if any(table in query["sql"] for table in per_patch) and "COUNT(" not in query["sql"]
    ]
    assert reads == []
    annotation = Annotation.objects.filter(patch__dataset=small.dataset).first()
    assert annotation is not None
    annotation.label = I if annotation.label == V else V
    annotation.save()
    changed = agreement_report(small.dataset, runs=runs, sampling=sampling)
    assert changed.humans != first.humans


def test_the_report_sorts_no_row_it_reads_per_patch(small: Small) -> None:
    """The patches, labels and verdicts are read in no order: the models' default ordering
    (dataset name, then natural key) joined and sorted every label of the dataset, a fifth
    of a 10,000-patch report, for figures that do not depend on order."""
    with CaptureQueriesContext(connection) as queries:
        agreement_report(small.dataset, runs=[small.golden], sampling=Sampling(resamples=10))
    per_patch = ("rubrics_patch", "judging_annotation", "judging_patchjudgment")
    sorted_reads = [
        query["sql"]
        for query in queries.captured_queries
        if "ORDER BY" in query["sql"]
        and query["sql"].split(" FROM ")[1].split()[0].strip('"') in per_patch
    ]
    assert sorted_reads == []


def test_reliability_bins_place_edge_scores_above_and_count_scores_off_the_scale(
    small: Small,
) -> None:
    # On a 1–5 scale, 1.4, 3.4 and 3.8 are bin edges that (score − lo) / width puts one bin
    # low in floating point; 7.0 and −1.0 are off the scale.
    small.golden.scale_lo, small.golden.scale_hi = 1.0, 5.0
    small.golden.save()
    scores = {"P1": 1.4, "P2": 3.4, "P3": 3.8, "P4": 5.0, "P5": 7.0, "P6": -1.0, "P7": 1.0}
    for key, score in scores.items():
        PatchJudgment.objects.filter(run=small.golden, patch=small.patches[key]).update(score=score)
    column = present(agreement_report(small.dataset, runs=[small.golden]).judges)[0]
    bins = column.reliability.bins
    assert [round(b.lo, 6) for b in bins] == [round(1 + 0.4 * k, 6) for k in range(10)]
    placed = {round(b.lo, 6): b.n for b in bins if b.n}
    # B_full and judged: P1–P4, P6, P7 (P5 waits for a lead, P8 failed); P6 is off the
    # scale, and 5.0, the top of the scale, closes the last bin.
    assert placed == {1.0: 1, 1.4: 1, 3.4: 1, 3.8: 1, 4.6: 1}
    assert column.reliability.outside == 1


def test_no_consensus_at_all_is_not_unanimous_only(small: Small) -> None:
    Adjudication.objects.all().delete()
    Annotation.objects.filter(annotator=small.annotators["ann-c"]).delete()
    Annotation.objects.filter(annotator=small.annotators["ann-b"]).delete()
    humans = present(agreement_report(small.dataset, runs=[]).humans)
    assert humans.column(B_FULL).patches.value == 0
    assert humans.unanimous_only is False


def test_a_section_viewed_again_is_drawn_from_its_figures_until_a_run_or_name_changes(
    small: Small, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load, many leads view the same report: a section's figures are computed once
    while its reads and runs are the same; a renamed run or annotator shows at once."""
    computed: list[int] = []
    column = selectors.judge_column

    def counted(*args: Any) -> Any:
        computed.append(1)
        return column(*args)

    monkeypatch.setattr(selectors, "judge_column", counted)
    sampling = Sampling(resamples=10)

    def judges() -> AgreementReport:
        run = JudgingRun.objects.get(pk=small.golden.pk)  # as a new request reads it
        return agreement_report(
            small.dataset, runs=[run], sampling=sampling, sections=[selectors.JUDGES]
        )

    first = judges()
    assert judges().judges == first.judges
    assert computed == [1]
    JudgingRun.objects.filter(pk=small.golden.pk).update(name="Renamed run")
    renamed = judges()
    assert computed == [1, 1]
    assert renamed.judges is not None
    assert renamed.judges[0].run.run.name == "Renamed run"
    annotator = next(iter(small.annotators.values()))
    annotator.username = "renamed-annotator"
    annotator.save()
    assert "renamed-annotator" in judges().annotators.values()


def test_the_corrected_valid_rate_is_in_the_breakdowns_and_kept_with_its_figures(
    small: Small, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run golden on the patches with a consensus: of P1, P3, P7 (VALID) it calls P1 and P7
    VALID, Se = 2/3; of P2, P4, P6 (INVALID) it calls P2 and P4 INVALID, Sp = 2/3; J = 1/3.
    tool-a (P1, P3, P5, P7): it calls 3 of 4 VALID, corrected (3/4 + 2/3 − 1) / (1/3) = 5/4,
    clipped to 1. tool-b (P2, P4, P6; P8 failed): 1 of 3, corrected (1/3 + 2/3 − 1) / (1/3)
    = 0. The figure is computed once while the reads and the run are the same."""
    computed: list[int] = []
    corrected = selectors.corrected_valid_rate

    def counted(*args: Any, **kwargs: Any) -> Any:
        computed.append(1)
        return corrected(*args, **kwargs)

    monkeypatch.setattr(selectors, "corrected_valid_rate", counted)
    sampling = Sampling(resamples=20)

    def breakdowns() -> AgreementReport:
        return agreement_report(
            small.dataset, runs=[small.golden], sampling=sampling, sections=[selectors.BREAKDOWN]
        )

    report = breakdowns()
    assert report.corrected_valid_rate is not None
    a, b = report.corrected_valid_rate
    assert (a.source, a.n_judged, b.source, b.n_judged) == ("tool-a", 4, "tool-b", 3)
    assert (a.judged.value, b.judged.value) == (pytest.approx(3 / 4), pytest.approx(1 / 3))
    assert a.sensitivity.value == pytest.approx(2 / 3) == a.specificity.value
    assert a.n_labelled == 6
    assert (a.corrected.value, a.clipped) == (1.0, "1")
    assert b.corrected.value == pytest.approx(0.0, abs=1e-12)
    assert breakdowns().corrected_valid_rate == report.corrected_valid_rate
    assert computed == [1]
    humans_only = agreement_report(
        small.dataset, runs=[small.golden], sampling=sampling, sections=[selectors.HUMANS]
    )
    assert humans_only.corrected_valid_rate is None


def test_a_report_is_computed_with_no_cyclic_collection(
    small: Small, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The garbage collector does not walk the report's reads' rows while it computes, and
    is back on afterwards."""
    import gc

    seen: list[bool] = []
    valid_at_k = selectors.valid_at_k

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return valid_at_k(*args, **kwargs)

    monkeypatch.setattr(selectors, "valid_at_k", watched)
    assert gc.isenabled()
    agreement_report(small.dataset, runs=[small.golden], sampling=Sampling(resamples=20))
    assert seen == [False]
    assert gc.isenabled()
