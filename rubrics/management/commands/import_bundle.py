from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from rubrics.bundle.base import FILE_TOO_LARGE, BundleImportError, ImportSummary
from rubrics.bundle.services import bundle_import


def summary_lines(summary: ImportSummary) -> list[str]:
    verb = "created" if summary.dataset_created else "updated"
    if summary.unchanged:
        verb = "unchanged"
    lines = [f"Dataset {summary.dataset.name!r} ({summary.dataset.slug}) {verb}."]
    for kind, c in summary.counts.items():
        lines.append(f"  {kind}: {c.created} created, {c.updated} updated, {c.unchanged} unchanged")
    lines += [f"  note: {note}" for note in summary.notes]
    return lines


class Command(BaseCommand):
    help = (
        "Import a JSONL bundle (bug, patch, label and rubric records) into a dataset, "
        "all or nothing."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--dataset", required=True, help="dataset name; created if new")
        parser.add_argument(
            "--grant-annotator-role",
            action="store_true",
            help="give the annotator role (audited) to the existing users without any role"
            " whom the file's labels name; never to a lead or a reviewer",
        )

    def handle(
        self,
        *args: Any,
        path: Path,
        dataset: str,
        grant_annotator_role: bool = False,
        **options: Any,
    ) -> None:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        limit = settings.SEJURY_BUNDLE_MAX_BYTES
        if path.stat().st_size > limit:
            raise CommandError(f"{path}: {FILE_TOO_LARGE.format(limit=limit)}")
        try:
            with path.open("rb") as source:
                summary = bundle_import(
                    source=source,
                    dataset_name=dataset,
                    actor=None,
                    filename=path.name,
                    grant_annotator_role=grant_annotator_role,
                )
        except BundleImportError as exc:
            hint = ""
            if exc.grantable:
                hint = (
                    f"\n--grant-annotator-role gives the annotator role to the {len(exc.grantable)}"
                    " existing users without any role named above."
                )
            raise CommandError(f"{path}: nothing was imported:\n{exc}{hint}") from exc
        self.stdout.write("\n".join(summary_lines(summary)))
