from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from rubrics.bundle.services import bundle_export
from rubrics.selectors import UNKNOWN_DATASET, dataset_resolve


class Command(BaseCommand):
    help = "Write a dataset as a JSONL bundle, to PATH or to standard output."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", nargs="?", type=Path)
        parser.add_argument("--dataset", required=True, help="dataset name or slug")

    def handle(self, *args: Any, path: Path | None, dataset: str, **options: Any) -> None:
        found = dataset_resolve(dataset)
        if found is None:
            raise CommandError(UNKNOWN_DATASET.format(name=dataset))
        if path is None:
            for line in bundle_export(dataset=found):
                self.stdout.write(line, ending="")
            return
        # Write beside the target and rename, so a failed export leaves no partial file.
        partial = path.with_name(path.name + ".partial")
        with partial.open("w", encoding="utf-8", newline="\n") as out:
            out.writelines(bundle_export(dataset=found))
        partial.replace(path)
        self.stderr.write(f"Wrote {path}")
