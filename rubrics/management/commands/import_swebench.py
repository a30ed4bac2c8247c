import io
from argparse import ArgumentParser
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from rubrics.management.commands.import_bundle import summary_lines
from rubrics.swebench.logs import folder_read
from rubrics.swebench.read import SourceErrors
from rubrics.swebench.services import NamedFile, SwebenchImportError, swebench_import


class Command(BaseCommand):
    help = (
        "Import SWE-bench instances (bugs), predictions (patches) and the harness's results "
        "(tests_pass) into a dataset, all or nothing. See rubrics/swebench/services.py for "
        "the mapping."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--instances",
            type=Path,
            help="the SWE-bench task instances (JSON Lines, a JSON array, or the hub's Parquet "
            "file); may be left out when the dataset already holds the instances the "
            "predictions name",
        )
        parser.add_argument(
            "--predictions",
            type=Path,
            action="append",
            default=[],
            help="predictions (JSON Lines, a JSON array, or a JSON object keyed by instance "
            "id); repeat for several models",
        )
        parser.add_argument(
            "--results",
            type=Path,
            action="append",
            default=[],
            help="the harness's results report of a model run (results.json, "
            "<model>.<run_id>.json, or report.json), or a folder or zip of the harness's "
            "logs (logs/run_evaluation/<run_id>: one report.json per instance, the model "
            "read from each one's path); repeat for several runs",
        )
        parser.add_argument("--dataset", required=True, help="dataset name; created if new")

    def handle(
        self,
        *args: Any,
        instances: Path | None,
        predictions: list[Path],
        results: list[Path],
        dataset: str,
        **options: Any,
    ) -> None:
        paths = ([instances] if instances else []) + predictions
        for path in paths:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        for path in results:
            if not path.exists():
                raise CommandError(f"{path}: no such file or folder")
        if instances is None and not predictions:
            raise CommandError("give --instances, --predictions, or both")
        with ExitStack() as stack:

            def named(path: Path) -> NamedFile:
                return NamedFile(str(path), stack.enter_context(path.open("rb")))

            def reports(path: Path) -> list[NamedFile]:
                if not path.is_dir():
                    return [named(path)]
                errors = SourceErrors(1)
                found = folder_read(path, errors)
                if errors:
                    raise CommandError(f"nothing was imported:\n{errors.kept[0]}")
                return [NamedFile(name, io.BytesIO(data)) for name, data in found]

            try:
                summary = swebench_import(
                    instances=named(instances) if instances else None,
                    predictions=[named(path) for path in predictions],
                    results=[report for path in results for report in reports(path)],
                    dataset_name=dataset,
                    actor=None,
                )
            except SwebenchImportError as exc:
                raise CommandError(f"nothing was imported:\n{exc}") from exc
        lines = summary_lines(summary.bundle)
        self.stdout.write("\n".join(lines))
