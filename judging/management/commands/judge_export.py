"""Print a written judge's version as JSON, which ``judge_define`` reads on any installation:

    python manage.py judge_export minimalism      # its newest version, trusted or not
    python manage.py judge_export minimalism@2

Besides what the version says, ``exported_from`` tells which version it was (its number,
status, author and date); ``judge_define`` ignores it.
"""

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judging.judges.selectors import JudgeNotFound, judge_export


class Command(BaseCommand):
    help = "Print a written judge's version (NAME: the newest; NAME@N) as JSON."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("judge", help="NAME or NAME@VERSION")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            data = judge_export(options["judge"])
        except JudgeNotFound as error:
            raise CommandError(str(error)) from None
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
