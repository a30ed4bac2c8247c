"""What both Label Studio commands are about: a campaign (``--campaign ID``) or a dataset
(``--dataset NAME``). Not a command: Django skips command modules named with a leading ``_``."""

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from judging.annotations.selectors import CampaignNotFound, campaign_get
from judging.models import Campaign
from rubrics.models import Dataset
from rubrics.selectors import UNKNOWN_DATASET, dataset_resolve


def scope_arguments(parser: ArgumentParser) -> None:
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--campaign", type=int, metavar="ID")
    scope.add_argument("--dataset", metavar="NAME")


def scope_from(options: dict[str, Any]) -> tuple[Dataset, Campaign | None]:
    """The dataset the options name, and the campaign if they name one."""
    if options["campaign"] is not None:
        try:
            campaign = campaign_get(campaign_id=options["campaign"])
        except CampaignNotFound as error:
            raise CommandError(str(error)) from None
        return campaign.dataset, campaign
    dataset = dataset_resolve(options["dataset"])
    if dataset is None:
        raise CommandError(UNKNOWN_DATASET.format(name=options["dataset"]))
    return dataset, None
