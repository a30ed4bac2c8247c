"""An agreement report as data: one JSON document with a key per section, or CSV with one
row per (section, figure, column) and its value, interval and n.

Both carry everything the page shows: the intervals, the "small sample" flag (n under
``SMALL_SAMPLE``), which runs are offline heuristics rather than LLMs, which calibration
patches were left out, and how many patches had no verdict.
"""

import io
from collections.abc import Iterator
from typing import Any

from judging.agreement import SMALL_SAMPLE
from judging.reports.corrected_rate import YOUDEN_MIN, CorrectedRate
from judging.reports.figures import Figure
from judging.reports.humans import HumanColumn, PairAgreement
from judging.reports.judges import BASELINES, METRICS, BenchmarkResult, JudgeColumn, RunVerdicts
from judging.reports.ordinal import DimensionAgreement, JudgeDimension
from judging.reports.rejections import ALL_SOURCES, RejectionThemes
from judging.reports.routing_curve import KAPPA_TARGET, RoutingCurve
from judging.reports.selectors import AgreementReport
from sejury_web.csv_cells import csv_writer
from sejury_web.llm import OFFLINE_MARKER

CSV_HEADER = ("section", "figure", "column", "value", "ci_lo", "ci_hi", "n", "small_sample")
CONFUSION = ("tp", "fp", "fn", "tn")
# The human section's rows, as (key, label) in the order of paper 004 Table 5.
HUMAN_ROWS = (
    ("bugs", "Number of bugs"),
    ("patches", "Number of patches"),
    ("unanimous", "Unanimous agreement"),
    ("alpha", "Krippendorff's α"),
    ("fleiss", "Fleiss' κ"),
    ("ac1", "Gwet's AC1"),
    ("weighted_kappa", "Weighted average Cohen's κ against the consensus"),
    ("consensus_valid", "Consensus: VALID patches"),
    ("consensus_invalid", "Consensus: INVALID patches"),
    ("awaiting", "Waiting for a consensus"),
)

Cell = tuple[str, str, str, Figure]


def figure_dict(figure: Figure) -> dict[str, Any]:
    """A figure in JSON: its value, interval, n and the small-sample flag."""
    return {
        "value": figure.value,
        "ci_lo": figure.ci_lo,
        "ci_hi": figure.ci_hi,
        "n": figure.n,
        "small_sample": figure.small_sample,
    }


def run_dict(run: RunVerdicts, *, by_default: bool) -> dict[str, Any]:
    """What identifies a run's column: its team, context, model, and any calibration."""
    calibration = run.calibration
    return {
        "id": run.run.pk,
        "name": run.run.name,
        "team": list(run.run.strategies),
        "context": run.run.context,
        "provider": run.run.provider,
        "model": run.run.model,
        "status": run.run.status,
        "offline": run.offline,
        "note": OFFLINE_MARKER if run.offline else "",
        "chosen_by_default": by_default,
        "calibration": None
        if calibration is None
        else {
            "id": calibration.pk,
            "campaign": calibration.campaign.name,
            "team": list(calibration.team),
            "patches_left_out": len(run.excluded),
        },
    }


def _column_dict(column: HumanColumn, names: dict[int, str]) -> dict[str, Any]:
    data: dict[str, Any] = {key: figure_dict(getattr(column, key)) for key, _ in HUMAN_ROWS}
    data["unanimous_count"] = column.unanimous_count
    data["fleiss_labels_per_patch"] = column.fleiss_labels
    data["labels"] = {label: figure.value for label, figure in column.labels.items()}
    data["annotators"] = [
        {
            "annotator": names[row.annotator_id],
            "labels": row.labels,
            "unsure": row.unsure,
            "kappa_vs_consensus": figure_dict(row.kappa),
            "weight": row.weight,
        }
        for row in column.annotators
    ]
    return data


def _pairs_dict(pairs: PairAgreement, names: dict[int, str]) -> dict[str, Any]:
    return {
        "pairs": [
            {"a": names[a], "b": names[b], "kappa": figure_dict(figure)}
            for (a, b), figure in pairs.kappas.items()
        ],
        "mean": figure_dict(pairs.mean),
        "median": pairs.median,
        "mean_ac1": figure_dict(pairs.mean_ac1),
    }


def _benchmark_dict(result: BenchmarkResult) -> dict[str, Any]:
    return {
        "n": result.n,
        **{key: figure_dict(result.metrics[key]) for key in METRICS},
        "confusion": dict(result.confusion),
        "prevalence_valid": figure_dict(result.prevalence),
        "baselines": {
            name: {key: figure.value for key, figure in metrics.items()}
            for name, metrics in result.baselines.items()
        },
    }


def _reliability_dict(column: JudgeColumn) -> list[dict[str, Any]]:
    return [
        {
            "score_lo": row.lo,
            "score_hi": row.hi,
            "patches": row.n,
            "mean_score": row.mean_score,
            "valid_share": figure_dict(row.valid_share),
        }
        for row in column.reliability.bins
    ]


def _routing_dict(curve: RoutingCurve) -> dict[str, Any]:
    reached, at_random = curve.share_reaching()
    return {
        "run": curve.run.run.pk,
        "order": "least certain first: closest to the threshold, then members furthest apart",
        "patches": curve.patches,
        "kappa_target": KAPPA_TARGET,
        "share_reaching_target": reached,
        "share_reaching_target_at_random": at_random,
        "points": [
            {
                "share": point.share,
                "routed": point.routed,
                "accuracy": figure_dict(point.accuracy),
                "kappa": figure_dict(point.kappa),
                "random": {"accuracy": point.random_accuracy, "kappa": point.random_kappa},
            }
            for point in curve.points
        ],
    }


def _valid_at_k_dict(report: AgreementReport) -> dict[str, Any]:
    run = report.valid_at_k_run.run.pk if report.valid_at_k_run else None
    return {
        "validity": "human consensus where there is one, otherwise the verdict of run"
        f" {run}; neither counts as not valid",
        "run": run,
        "interval": "percentile bootstrap over bugs",
        "rows": [
            {
                "source": row.source,
                "k": row.k,
                "bugs": row.bugs,
                "candidates": row.candidates,
                "passing": row.passing,
                "tests_unknown": row.tests_unknown,
                "pass_at_k": figure_dict(row.pass_at_k),
                "valid_at_k": figure_dict(row.valid_at_k),
                "validity_from": {
                    "consensus": row.by_consensus,
                    "run": row.by_run,
                    "unknown": row.unknown,
                },
            }
            for row in report.valid_at_k or []
        ],
    }


def _corrected_dict(row: CorrectedRate) -> dict[str, Any]:
    return {
        "source": row.source,
        "n_judged": row.n_judged,
        "judged": figure_dict(row.judged),
        "corrected": {**figure_dict(row.corrected), "clipped_to": row.clipped or None},
        "sensitivity": figure_dict(row.sensitivity),
        "specificity": figure_dict(row.specificity),
        "youden_j": figure_dict(row.youden),
        "n_labelled": row.n_labelled,
        "warnings": list(row.warnings),
    }


def _corrected_valid_rate_dict(report: AgreementReport) -> dict[str, Any]:
    run = report.valid_at_k_run.run.pk if report.valid_at_k_run else None
    return {
        "run": run,
        "judged": "the share of the source's test-passing candidates with a verdict of the"
        " run that it calls VALID",
        "corrected": "Rogan–Gladen: (judged + specificity − 1) / (sensitivity + specificity"
        " − 1), clipped to [0, 1]; null when the judge is no better than chance",
        "sensitivity_specificity": "the run against the human consensus on the labelled"
        " test-passing candidates of every source, its calibration patches left out;"
        " VALID is the positive class",
        "interval": "percentile bootstrap over the test-passing candidates with a verdict,"
        " the labelled ones resampled with the others in each replicate",
        "youden_j_warning_below": YOUDEN_MIN,
        "rows": [_corrected_dict(row) for row in report.corrected_valid_rate or []],
    }


def rejection_themes_dict(themes: RejectionThemes | None) -> dict[str, Any] | None:
    """Why the run rejected test-passing patches, per source; None without a run, or when
    no one asked for the sorting yet."""
    if themes is None or not themes.requested:
        return None
    return {
        "run": themes.run.run.pk,
        "patches": "test-passing patches in scope that the run found INVALID",
        "justification": (
            "the rubric member's when it said INVALID, else the lowest-scoring member's"
        ),
        "offline": themes.offline > 0,
        "offline_sorted": themes.offline,
        "note": OFFLINE_MARKER if themes.offline else "",
        "prompt_version": themes.prompt_version,
        "prompt_versions_used": themes.prompt_versions,
        "rejected": themes.rejected,
        "sorted": themes.sorted,
        "failed": themes.failed,
        "pending": themes.pending,
        "not_sorted": themes.unsorted,
        "share_of": "the sorted patches of the column (a source, or every source)",
        "sources": {
            source: {"rejected": rejected, "sorted": sorted_}
            for source, rejected, sorted_ in zip(
                themes.sources, themes.rejected_by_source, themes.sorted_by_source, strict=True
            )
        },
        "themes": [
            {
                "theme": row.theme,
                "label": row.label,
                "patches": row.total.patches,
                "share": row.total.share,
                "by_source": {
                    source: {"patches": cell.patches, "share": cell.share}
                    for source, cell in row.cells
                },
            }
            for row in themes.rows
        ],
        "examples": {
            theme: [
                {
                    "patch": example.patch_key,
                    "bug": example.bug_key,
                    "source": example.source,
                    "judgment": example.judgment_id,
                    "member": example.strategy,
                    "rationale": example.rationale,
                    "offline": example.is_offline,
                }
                for example in examples
            ]
            for theme, _label, examples in themes.examples
        },
    }


def _judge_dict(column: JudgeColumn) -> dict[str, Any]:
    return {
        "run": column.run.run.pk,
        "patches_with_consensus": column.with_consensus,
        "calibration_patches_left_out": column.excluded,
        "without_verdict": dict(column.without_verdict),
        "benchmarks": {name: _benchmark_dict(r) for name, r in column.benchmarks.items()},
        "reliability_b_full": _reliability_dict(column),
        "reliability_scores_off_scale": column.reliability.outside,
    }


def dimensions_dict(dimensions: list[DimensionAgreement] | None) -> list[dict[str, Any]]:
    """Each rated dimension: the annotators' ordinal agreement, and each written judge's
    against their median (``ordinal``)."""
    return [
        {
            "name": d.name,
            "scale": [d.low, d.high],
            "ratings": d.ratings,
            "raters": d.raters,
            "patches": d.patches,
            "alpha_ordinal": figure_dict(d.alpha),
            "annotator_pairs": d.pairs,
            "pairs_mean_weighted_kappa_linear": figure_dict(d.kappa_linear),
            "pairs_mean_weighted_kappa_quadratic": figure_dict(d.kappa_quadratic),
            "judges": [
                {
                    "run": j.run_id,
                    "member": j.member,
                    "patches": j.patches,
                    "against": "the annotators' median rating (the lower one when even)",
                    "weighted_kappa_linear": figure_dict(j.kappa_linear),
                    "weighted_kappa_quadratic": figure_dict(j.kappa_quadratic),
                    "spearman_rho": figure_dict(j.spearman),
                }
                for j in d.judges
            ],
            "by_source": [
                {
                    "source": g.group,
                    "patches": g.patches,
                    "alpha_ordinal": figure_dict(g.alpha),
                    "judges": [
                        {
                            "run": j.run_id,
                            "member": j.member,
                            "patches": j.patches,
                            "weighted_kappa_quadratic": figure_dict(j.kappa_quadratic),
                            "spearman_rho": figure_dict(j.spearman),
                        }
                        for j in g.judges
                    ],
                }
                for g in d.by_source
            ],
        }
        for d in dimensions or []
    ]


def report_dict(report: AgreementReport) -> dict[str, Any]:
    """The whole report as one JSON-ready document, a key per section."""
    assert report.humans is not None
    assert report.judges is not None
    assert report.human_judge is not None
    assert report.breakdowns is not None
    names = report.annotators
    sampling = report.sampling
    return {
        "dataset": {"name": report.dataset.name, "slug": report.dataset.slug},
        "campaign": None
        if report.campaign is None
        else {"id": report.campaign.pk, "name": report.campaign.name},
        "patches_in_scope": report.patches_in_scope,
        "intervals": {
            "method": (
                "percentile bootstrap: the report's patches resampled with replacement, every"
                " figure recomputed on each resample"
            ),
            "level": sampling.level,
            "resamples": sampling.resamples,
            "seed": sampling.seed,
            "small_sample_below": SMALL_SAMPLE,
        },
        "consensus": {
            "rule": report.rule.value,
            "description": report.rule.label,
            "adjudicated_always_wins": True,
            "unanimous_only": report.humans.unanimous_only,
        },
        "baselines": dict(BASELINES),
        "runs": [run_dict(run, by_default=report.runs_by_default) for run in report.runs],
        "humans": {
            "annotators": list(names.values()),
            "columns": {c.name: _column_dict(c, names) for c in report.humans.columns},
            "pairs": _pairs_dict(report.humans.pairs, names),
            "pairwise_mean_kappa": {
                names[pk]: figure_dict(figure) for pk, figure in report.humans.pairwise.items()
            },
        },
        "judges": [_judge_dict(column) for column in report.judges],
        "routing": [_routing_dict(curve) for curve in report.routing or []],
        "valid_at_k": _valid_at_k_dict(report),
        "corrected_valid_rate": _corrected_valid_rate_dict(report),
        "rejection_themes": rejection_themes_dict(report.rejection_themes),
        "human_judge": [
            {
                "run": agreement.run.run.pk,
                "patches": agreement.patches,
                "judge_annotator": [
                    {"annotator": names[a], "kappa": figure_dict(figure)}
                    for a, figure in agreement.judge_pairs.items()
                ],
                "judge_mean": figure_dict(agreement.judge_mean),
                "judge_mean_ac1": figure_dict(agreement.judge_mean_ac1),
                "judge_median": agreement.judge_median,
                "annotator_pairs": _pairs_dict(agreement.humans, names),
            }
            for agreement in report.human_judge
        ],
        "dimensions": dimensions_dict(report.dimensions),
        "breakdowns": {
            breakdown.key: {
                "groups": breakdown.groups,
                "rows": [
                    {
                        "group": row.group,
                        "patches": row.patches,
                        "unanimous": figure_dict(row.unanimous),
                        "weighted_kappa": figure_dict(row.weighted_kappa),
                        "valid_rate": figure_dict(row.valid_rate),
                        "runs": {str(pk): _benchmark_dict(r) for pk, r in row.judges.items()},
                    }
                    for row in breakdown.rows
                ],
            }
            for breakdown in report.breakdowns
        },
    }


def _count_cell(section: str, figure: str, column: str, value: int) -> Cell:
    return (section, figure, column, Figure(value, value, estimated=False))


def _dimension_judge_label(judge: JudgeDimension) -> str:
    """A written judge in a dimension's CSV rows: its run, offline heuristics saying so, and
    its ``name@N``."""
    offline = f" ({OFFLINE_MARKER})" if judge.offline else ""
    return f"{judge.run_label}{offline} {judge.member}"


def run_label(run: RunVerdicts) -> str:
    """How a run is named in CSV columns: offline heuristics say so in every row."""
    return f"run {run.run.pk} ({OFFLINE_MARKER})" if run.offline else f"run {run.run.pk}"


def _benchmark_cells(section: str, column: str, result: BenchmarkResult) -> Iterator[Cell]:
    for key in METRICS:
        yield (section, key, column, result.metrics[key])
    for key in CONFUSION:
        yield _count_cell(section, key, column, result.confusion[key])
    yield (section, "prevalence_valid", column, result.prevalence)
    for baseline, metrics in result.baselines.items():
        for key, figure in metrics.items():
            yield (section, f"baseline {baseline} {key}", column, figure)


def _pair_cells(
    section: str, column: str, pairs: PairAgreement, names: dict[int, str]
) -> Iterator[Cell]:
    for (a, b), figure in pairs.kappas.items():
        yield (section, f"kappa {names[a]} × {names[b]}", column, figure)
    yield (section, "mean pair kappa", column, pairs.mean)
    yield (section, "mean pair ac1", column, pairs.mean_ac1)


def report_cells(report: AgreementReport) -> Iterator[Cell]:
    """Every figure of the report as (section, figure, column, Figure)."""
    assert report.humans is not None
    assert report.judges is not None
    assert report.human_judge is not None
    assert report.breakdowns is not None
    names = report.annotators
    for column in report.humans.columns:
        for key, _ in HUMAN_ROWS:
            yield ("humans", key, column.name, getattr(column, key))
        for label, figure in column.labels.items():
            yield ("humans", f"labels {label}", column.name, figure)
        for annotator in column.annotators:
            yield (
                "humans_vs_consensus",
                f"kappa {names[annotator.annotator_id]}",
                column.name,
                annotator.kappa,
            )
    yield from _pair_cells("human_pairs", "labelled", report.humans.pairs, names)
    for pk, figure in report.humans.pairwise.items():
        yield ("human_pairs", f"mean kappa of {names[pk]} with the others", "labelled", figure)
    for judge in report.judges:
        run = run_label(judge.run)
        for name, result in judge.benchmarks.items():
            yield from _benchmark_cells("judges", f"{run} {name}", result)
        for status, number in judge.without_verdict.items():
            yield _count_cell("judges", f"without verdict: {status}", run, number)
        yield _count_cell("judges", "calibration patches left out", run, judge.excluded)
        yield _count_cell("judges", "scores off the scale", run, judge.reliability.outside)
        for bin_ in judge.reliability.bins:
            yield (
                "judges",
                f"valid share, score {bin_.lo:g} to {bin_.hi:g}",
                run,
                bin_.valid_share,
            )
    for agreement in report.human_judge:
        run = run_label(agreement.run)
        for a, figure in agreement.judge_pairs.items():
            yield ("human_judge", f"kappa judge × {names[a]}", run, figure)
        yield ("human_judge", "mean judge kappa", run, agreement.judge_mean)
        yield ("human_judge", "mean judge ac1", run, agreement.judge_mean_ac1)
        yield from _pair_cells("human_judge", run, agreement.humans, names)
    for d in report.dimensions or []:
        section = f"dimension {d.name}"
        yield (section, "alpha ordinal", "annotators", d.alpha)
        yield (section, "pairs mean weighted kappa linear", "annotators", d.kappa_linear)
        yield (section, "pairs mean weighted kappa quadratic", "annotators", d.kappa_quadratic)
        for j in d.judges:
            member = _dimension_judge_label(j)
            yield (section, "weighted kappa linear vs median", member, j.kappa_linear)
            yield (section, "weighted kappa quadratic vs median", member, j.kappa_quadratic)
            yield (section, "spearman rho vs median", member, j.spearman)
        for g in d.by_source:
            yield (f"{section} by source", "alpha ordinal", g.group, g.alpha)
            for j in g.judges:
                name = _dimension_judge_label(j)
                yield (
                    f"{section} by source",
                    f"{name} weighted kappa quadratic",
                    g.group,
                    j.kappa_quadratic,
                )
                yield (f"{section} by source", f"{name} spearman rho", g.group, j.spearman)
    for curve in report.routing or []:
        run = run_label(curve.run)
        for point in curve.points:
            share = f"{point.share:.0%} routed"
            yield ("routing", f"accuracy, {share}", run, point.accuracy)
            yield ("routing", f"kappa, {share}", run, point.kappa)
    for estimate in report.valid_at_k or []:
        yield ("valid_at_k", f"pass@{estimate.k}", estimate.source, estimate.pass_at_k)
        yield ("valid_at_k", f"valid@{estimate.k}", estimate.source, estimate.valid_at_k)
    for rate in report.corrected_valid_rate or []:
        yield ("corrected_valid_rate", "judged", rate.source, rate.judged)
        yield ("corrected_valid_rate", "corrected", rate.source, rate.corrected)
        yield ("corrected_valid_rate", "sensitivity", rate.source, rate.sensitivity)
        yield ("corrected_valid_rate", "specificity", rate.source, rate.specificity)
        yield ("corrected_valid_rate", "youden_j", rate.source, rate.youden)
        yield _count_cell("corrected_valid_rate", "n_judged", rate.source, rate.n_judged)
        yield _count_cell("corrected_valid_rate", "n_labelled", rate.source, rate.n_labelled)
    themes = report.rejection_themes
    if themes is not None and themes.requested:
        for theme in themes.rows:
            name = f"{run_label(themes.run)} {theme.theme}"
            yield _count_cell("rejection_themes", name, ALL_SOURCES, theme.total.patches)
            for source, cell in theme.cells:
                yield _count_cell("rejection_themes", name, source, cell.patches)
    labels = {run.run.pk: run_label(run) for run in report.runs}
    for breakdown in report.breakdowns:
        section = f"by_{breakdown.key}"
        for row in breakdown.rows:
            yield (section, "unanimous", row.group, row.unanimous)
            yield (section, "weighted_kappa", row.group, row.weighted_kappa)
            yield (section, "valid_rate", row.group, row.valid_rate)
            for pk, result in row.judges.items():
                yield from _benchmark_cells(section, f"{row.group} {labels[pk]} b_full", result)


def report_csv(report: AgreementReport) -> str:
    """The report's figures as CSV, one row per (section, figure, column)."""
    out = io.StringIO()
    writer = csv_writer(out)  # bug types and patch sources come from imported bundles
    writer.writerow(CSV_HEADER)
    # How the consensus was reached: the column names the rule, the value says whether
    # every consensus is unanimous (then annotators' κ against it is 1 by construction).
    assert report.humans is not None
    writer.writerow(
        ("consensus", "rule", report.rule.value, "", "", "", "", ""),
    )
    writer.writerow(
        ("consensus", "unanimous_only", "report", int(report.humans.unanimous_only), "", "", "", "")
    )
    for section, figure, column, value in report_cells(report):
        writer.writerow(
            (
                section,
                figure,
                column,
                "" if value.value is None else value.value,
                "" if value.ci_lo is None else value.ci_lo,
                "" if value.ci_hi is None else value.ci_hi,
                value.n,
                "small sample" if value.small_sample else "",
            )
        )
    return out.getvalue()
