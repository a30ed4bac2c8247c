"""Write a judging run's verdicts, one record per patch, as JSON lines or CSV."""

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.runs.export import EXPORTERS
from judging.runs.selectors import RunNotFound, run_get


class Command(BaseCommand):
    help = "Write a judging run's verdicts (one record per patch) to FILE or standard output."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--run", type=int, required=True, metavar="ID")
        parser.add_argument("--format", choices=list(EXPORTERS), default="jsonl")
        parser.add_argument("--output", type=Path, metavar="FILE", help="default: stdout")
        parser.add_argument(
            "--final-labels",
            action="store_true",
            help="add each patch's final label: the human consensus where there is one,"
            " otherwise the team's verdict, and which of the two it is",
        )

    def handle(self, *args: Any, output: Path | None, **options: Any) -> None:
        try:
            run = run_get(run_id=options["run"])
        except RunNotFound as error:
            raise CommandError(str(error)) from None
        lines = EXPORTERS[options["format"]](run, final=options["final_labels"])
        if output is None:
            for line in lines:
                self.stdout.write(line, ending="")
            return
        # Write beside the target and rename, so a failed export leaves no partial file.
        partial = output.with_name(output.name + ".partial")
        with partial.open("w", encoding="utf-8", newline="") as out:
            out.writelines(lines)
        partial.replace(output)
        self.stderr.write(f"Wrote {output}")
