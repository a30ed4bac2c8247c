"""``manage.py api_token --user NAME [--name LABEL]``: a new API token for the user, printed
alone on the last line (the only time it is shown)."""

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from api.tokens import token_create


class Command(BaseCommand):
    help = "Create an API token for a user and print it (it is shown only this once)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--user", required=True, metavar="NAME", help="a username")
        parser.add_argument("--name", default="", metavar="LABEL", help="what uses the token")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"no user is called {options['user']!r}")
        if not user.is_active:
            raise CommandError(f"user {user.username!r} is inactive")
        made = token_create(actor=None, user=user, name=options["name"])
        self.stderr.write(
            f"Token {made.record.prefix}… ({made.record.name}) for {user.username}; it will not "
            "be shown again:"
        )
        self.stdout.write(made.token)
