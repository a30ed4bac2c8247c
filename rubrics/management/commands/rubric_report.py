import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from rubrics.analytics import (
    EDIT_TYPES,
    NO_GOLDEN_RUBRICS,
    DatasetRubricReport,
    dataset_rubric_report,
    report_dict,
)
from rubrics.models import Rubric
from rubrics.selectors import UNKNOWN_DATASET, dataset_resolve
from rubrics.templatetags.charts import number, percent

LABEL_WIDTH = 48


def _line(label: str, value: str) -> str:
    return f"{label:<{LABEL_WIDTH}}{value}"


def _figures(*values: float | None, digits: int = 2) -> str:
    return " / ".join(number(value, digits) for value in values)


def _summary_lines(report: DatasetRubricReport) -> list[str]:
    summary = report.summary
    undrafted = f" ({report.undrafted_count} without a draft yet)" if report.undrafted_count else ""
    lines = [
        _line("Rubrics with a draft", f"{summary.rubric_count}{undrafted}"),
        _line(
            "Draft length, median / mean (characters)",
            _figures(summary.draft_length_median, summary.draft_length_mean, digits=1),
        ),
        _line("Golden rubrics", str(summary.golden_count)),
    ]
    if not summary.has_golden:
        return [*lines, NO_GOLDEN_RUBRICS.capitalize() + ": edit statistics need golden rubrics."]
    modified = f"{summary.modified_count} of {summary.golden_count} golden"
    return [
        *lines,
        _line("Modified (modification rate)", f"{modified} ({percent(summary.modification_rate)})"),
        _line(
            "Edit distance, median / mean / max",
            _figures(
                summary.distance_median, summary.distance_mean, summary.distance_max, digits=1
            ),
        ),
        _line(
            "Normalized edit distance, median / mean / max",
            _figures(summary.normalized_median, summary.normalized_mean, summary.normalized_max),
        ),
        _line(
            "Edit types (golden rubrics)",
            ", ".join(f"{kind} {summary.edit_type_counts[kind]}" for kind in EDIT_TYPES),
        ),
        "Themes (golden rubrics)",
        *(_line(f"  {theme.label}", str(theme.count)) for theme in summary.theme_counts),
    ]


def _row_lines(report: DatasetRubricReport) -> list[str]:
    key_width = max(len("bug"), *(len(row.bug_key) for row in report.rows))
    lines = [
        "Rubrics (measured at the golden revision, else at the current one)",
        f"  {'bug':<{key_width}}  {'status':<22} {'at':<10} {'distance':>9} {'normalized':>10}"
        "  edit types / themes",
    ]
    for row in report.rows:
        at = f"r{row.compared_number}" + (" golden" if row.golden else "")
        kinds = ", ".join(row.metrics.edit_types_ordered) or "–"
        themes = ", ".join(row.themes) or "–"
        lines.append(
            f"  {row.bug_key:<{key_width}}  {row.status_label:<22} {at:<10}"
            f" {row.metrics.distance:>9,} {row.metrics.normalized:>10.2f}  {kinds} / {themes}"
        )
    return lines


def report_text(report: DatasetRubricReport) -> str:
    """The report for a terminal: the paper's figures, then one line per rubric."""
    dataset = report.dataset
    lines = [f"Rubric report: {dataset.name} ({dataset.slug}), {report.variant} rubrics", ""]
    lines += _summary_lines(report)
    if report.rows:
        lines += ["", *_row_lines(report)]
    return "\n".join(lines) + "\n"


class Command(BaseCommand):
    help = "Print a dataset's rubric edit statistics (paper 004, §5.1) as JSON or text."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--dataset", required=True, help="dataset name or slug")
        parser.add_argument(
            "--variant", choices=Rubric.Variant.values, default=Rubric.Variant.TEMPLATED
        )
        parser.add_argument(
            "--format", dest="output_format", choices=["json", "text"], default="json"
        )

    def handle(
        self, *args: Any, dataset: str, variant: str, output_format: str, **options: Any
    ) -> None:
        found = dataset_resolve(dataset)
        if found is None:
            raise CommandError(UNKNOWN_DATASET.format(name=dataset))
        report = dataset_rubric_report(found, variant=variant)
        if output_format == "json":
            self.stdout.write(json.dumps(report_dict(report), indent=2, ensure_ascii=False))
        else:
            self.stdout.write(report_text(report), ending="")
