"""Send a finished run's least certain verdicts to humans: a campaign of those patches.

    python manage.py route_uncertain --run ID --max N --annotators A,B[,…] --overlap K [--name NAME]

Prints the campaign's id, then its patch keys, most uncertain first, one a line.
"""

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from judging.annotations.services import CampaignError
from judging.runs.routing import RoutingError, route, routing_plan
from judging.runs.selectors import RunNotFound, run_get
from judging.runs.uncertainty import DEFAULT_SIGNAL, SIGNALS

UNKNOWN_USERS = "no user {names}"


class Command(BaseCommand):
    help = (
        "Make a campaign of a finished run's least certain verdicts (those humans have not "
        "settled yet) for the annotators given; print its id and patch keys."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--run", type=int, required=True, metavar="ID")
        parser.add_argument("--max", type=int, required=True, metavar="N", help="patches")
        parser.add_argument(
            "--annotators", required=True, metavar="A,B", help="usernames, comma-separated"
        )
        parser.add_argument("--overlap", type=int, default=2, metavar="K", help="labels a patch")
        parser.add_argument("--name", default="", help="the campaign's name")
        parser.add_argument(
            "--signal",
            choices=list(SIGNALS),
            default=DEFAULT_SIGNAL,
            help="what 'uncertain' means (default: closest to the threshold)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            run = run_get(run_id=options["run"])
        except RunNotFound as error:
            raise CommandError(str(error)) from None
        names = [name.strip() for name in options["annotators"].split(",") if name.strip()]
        people = list(User.objects.filter(username__in=names))
        missing = sorted(set(names) - {user.username for user in people})
        if missing:
            raise CommandError(UNKNOWN_USERS.format(names=", ".join(missing)))
        try:
            plan = routing_plan(
                run=run, budget=options["max"], signal=options["signal"], overlap=options["overlap"]
            )
            campaign = route(plan=plan, annotators=people, name=options["name"], actor=None)
        except (RoutingError, CampaignError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(str(campaign.pk))
        for item in plan.patches:
            self.stdout.write(item.patch_key)
        self.stderr.write(
            f"Campaign {campaign.pk} “{campaign.name}”: {len(plan.patches)} of {plan.candidates}"
            f" unsettled verdicts, {plan.labels} labels, about"
            f" {plan.expected_seconds / 60:.0f} min of annotator time at"
            f" {plan.seconds_per_label:.0f} s a label ("
            + (
                f"the median of {plan.seconds_from_labels} timed labels"
                if plan.seconds_from_labels
                else f"a default: {plan.timed_labels} timed labels, fewer than"
                f" {plan.min_timed_labels}"
            )
            + ")."
        )
