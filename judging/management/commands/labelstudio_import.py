"""Import the annotations of a Label Studio JSON export as labels, all or nothing."""

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.annotations.labelstudio.import_ import (
    LabelStudioImportError,
    labelstudio_import,
    users_mapping,
)
from judging.management.commands._labelstudio_scope import scope_arguments, scope_from


class Command(BaseCommand):
    help = (
        "Import the annotations of a Label Studio JSON export (of tasks this product exported)"
        " as labels of a campaign's or a dataset's patches, all or nothing."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", type=Path)
        scope_arguments(parser)
        parser.add_argument(
            "--users",
            type=Path,
            metavar="FILE",
            help="Label Studio's list of users (GET /api/users, saved as JSON), or its user ids"
            ' to user names or e-mails: {"7": "rater-01", …}; needed for Label Studio\'s'
            " Export › JSON, whose completed_by is a bare user id",
        )
        parser.add_argument(
            "--grant-annotator-role",
            action="store_true",
            help="give the annotator role (audited) to the existing users without any role"
            " whom the annotations name; never to a lead or a reviewer",
        )

    def handle(self, *args: Any, path: Path, **options: Any) -> None:
        dataset, campaign = scope_from(options)
        for file in (path, options["users"]):
            if file is not None and not file.is_file():
                raise CommandError(f"{file}: no such file")
        try:
            users = users_mapping(options["users"].read_bytes()) if options["users"] else None
            with path.open("rb") as source:
                summary = labelstudio_import(
                    source=source,
                    dataset=dataset,
                    campaign=campaign,
                    users=users,
                    actor=None,
                    filename=path.name,
                    grant_annotator_role=options.get("grant_annotator_role", False),
                )
        except LabelStudioImportError as exc:
            raise CommandError(f"{path}: nothing was imported:\n{exc}") from exc
        self.stdout.write(f"{path}: {summary}.")
