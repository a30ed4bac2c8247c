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
from rubrics.bundle import dataset_resolve
from rubrics.models import Rubric
from rubrics.templatetags.charts import number

UNKNOWN_DATASET = "no dataset named {name!r}"
LABEL_WIDTH = 48


def _line(label: str, value: str) -> str:
    return f"{label:<{LABEL_WIDTH}}{value}"


def report_text(report: DatasetRubricReport) -> str:
    """The report for a terminal: the paper's figures, then one line per rubric."""
    summary = report.summary
    lines = [
        f"Rubric report: {report.dataset.name} ({report.dataset.slug}), {report.variant} rubrics",
        "",
        _line("Rubrics with a draft", str(summary.rubric_count))
        + (f" ({report.undrafted_count} without a draft yet)" if report.undrafted_count else ""),
        _line(
            "Draft length, median / mean (characters)",
            " / ".join(
                number(v, 1) for v in (summary.draft_length_median, summary.draft_length_mean)
            ),
        ),
        _line("Golden rubrics", str(summary.golden_count)),
    ]
    if not summary.has_golden:
        lines.append(NO_GOLDEN_RUBRICS.capitalize() + ": edit statistics need golden rubrics.")
    else:
        rate = summary.modification_rate or 0.0
        lines += [
            _line("Modified (modification rate)", f"{summary.modified_count} ({rate:.1%})"),
            _line(
                "Edit distance, median / mean / max",
                " / ".join(
                    number(v, 1)
                    for v in (summary.distance_median, summary.distance_mean, summary.distance_max)
                ),
            ),
            _line(
                "Normalized edit distance, median / mean / max",
                " / ".join(
                    number(v)
                    for v in (
                        summary.normalized_median,
                        summary.normalized_mean,
                        summary.normalized_max,
                    )
                ),
            ),
            _line(
                "Edit types (rubrics)",
                ", ".join(f"{kind} {summary.edit_type_counts[kind]}" for kind in EDIT_TYPES),
            ),
            "Themes (rubrics)",
            *(_line(f"  {theme.label}", str(theme.count)) for theme in summary.theme_counts),
        ]
    if report.rows:
        lines += ["", "Rubrics (measured at the golden revision, else the current one)"]
        key_width = max(len("bug"), *(len(row.bug_key) for row in report.rows))
        lines.append(
            f"  {'bug':<{key_width}}  {'status':<22} {'rev':>4} {'distance':>9} {'normalized':>10}"
            "  edit types / themes"
        )
        for row in report.rows:
            kinds = ", ".join(row.metrics.edit_types_ordered) or "–"
            themes = ", ".join(row.themes) or "–"
            lines.append(
                f"  {row.bug_key:<{key_width}}  {row.status_label:<22} {row.compared_number:>4}"
                f" {row.metrics.distance:>9,} {row.metrics.normalized:>10.2f}  {kinds} / {themes}"
            )
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
