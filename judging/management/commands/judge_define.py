"""Define a written judge, or a new version of it, from a JSON file:

    python manage.py judge_define --file minimalism.json [--author USERNAME]

The file is what ``judge_export`` prints: ``name``, ``title``, ``template``, ``kind``, and
for ``dimensions`` the ``dimensions`` and ``overall``, with an optional ``note``. Prints the
version, ``name@version``: a new one, or the newest when it says the same already. A file
that cannot be used is refused with why, and nothing is written.
"""

from argparse import ArgumentParser
from json import JSONDecodeError
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from judging.judges.services import JudgeDefinitionError, judge_define
from sejury_web.json_reader import json_loads

UNREADABLE = "{path}: cannot be read ({error})"
NOT_JSON = "{path}: not JSON: {error}"
REPEATED = "{path}: field {field!r} appears twice"
UNKNOWN_AUTHOR = "no user is named {name!r}"
UNCHANGED = "{label} already says this: no new version"


def _no_repeats(path: Path) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise CommandError(REPEATED.format(path=path, field=key))
            seen[key] = value
        return seen

    return pairs


class Command(BaseCommand):
    help = "Define a written judge, or a new version of it, from a JSON file; print name@version."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--file", required=True, type=Path, help="The judge as JSON.")
        parser.add_argument("--author", default="", help="The username the version is by.")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(UNREADABLE.format(path=path, error=error)) from None
        try:
            data = json_loads(text, object_pairs_hook=_no_repeats(path))
        except JSONDecodeError as error:
            raise CommandError(NOT_JSON.format(path=path, error=error)) from None
        author = None
        if options["author"]:
            author = get_user_model().objects.filter(username=options["author"]).first()
            if author is None:
                raise CommandError(UNKNOWN_AUTHOR.format(name=options["author"]))
        try:
            version, created = judge_define(data=data, actor=author)
        except JudgeDefinitionError as error:
            raise CommandError(f"{path}: {error}") from None
        if not created:
            self.stderr.write(UNCHANGED.format(label=version.label))
        self.stdout.write(version.label)
