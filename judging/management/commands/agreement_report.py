"""Write a dataset's agreement report (paper 004 Tables 5–6, paper 000 RQ2) as JSON or CSV:
the same data as the report page and its downloads."""

import json
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.reports.export import report_csv, report_dict
from judging.reports.figures import RESAMPLES, Sampling
from judging.reports.selectors import ReportError, agreement_report, report_campaign, report_runs
from rubrics.selectors import UNKNOWN_DATASET, dataset_resolve

BAD_RESAMPLES = "--resamples must be at least 1, got {resamples}"
RUNS_AND_NO_RUNS = "give --run or --no-runs, not both"


class Command(BaseCommand):
    help = (
        "Write a dataset's agreement report: annotators with each other and with their "
        "consensus, and judging runs against the consensus, with bootstrap intervals."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--dataset", required=True, help="dataset name or slug")
        parser.add_argument(
            "--run",
            type=int,
            nargs="+",
            action="extend",
            metavar="ID",
            help="runs to compare, as columns (default: the newest finished run per context)",
        )
        parser.add_argument(
            "--no-runs", action="store_true", help="the human section only, without any run"
        )
        parser.add_argument("--campaign", type=int, metavar="ID", help="only its patches")
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument("--output", type=Path, metavar="FILE", help="default: stdout")
        parser.add_argument(
            "--resamples",
            type=int,
            default=RESAMPLES,
            help=f"bootstrap resamples per interval (default {RESAMPLES}, as the page)",
        )

    def handle(self, *args: Any, output: Path | None, **options: Any) -> None:
        dataset = dataset_resolve(options["dataset"])
        if dataset is None:
            raise CommandError(UNKNOWN_DATASET.format(name=options["dataset"]))
        if options["resamples"] < 1:
            raise CommandError(BAD_RESAMPLES.format(resamples=options["resamples"]))
        if options["run"] and options["no_runs"]:
            raise CommandError(RUNS_AND_NO_RUNS)
        try:
            campaign = report_campaign(dataset=dataset, campaign_id=options["campaign"])
            runs = report_runs(dataset=dataset, run_ids=options["run"] or [])
        except ReportError as error:
            raise CommandError(str(error)) from None
        report = agreement_report(
            dataset,
            campaign=campaign,
            runs=runs if options["run"] or options["no_runs"] else None,
            sampling=Sampling(resamples=options["resamples"]),
        )
        if options["format"] == "csv":
            text = report_csv(report)
        else:
            text = (
                json.dumps(report_dict(report), indent=2, ensure_ascii=False, allow_nan=False)
                + "\n"
            )
        if output is None:
            self.stdout.write(text, ending="")
            return
        # Write beside the target and rename, so a failed report leaves no partial file.
        partial = output.with_name(output.name + ".partial")
        partial.write_text(text, encoding="utf-8", newline="")
        partial.replace(output)
        self.stderr.write(f"Wrote {output}")
