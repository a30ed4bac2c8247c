"""Writes of annotation campaigns: creating one with balanced assignments, closing and
reopening it, and recording an annotator's label with its history.

Assignments are balanced by construction (paper 004 §4.2.2 has every patch labelled by the
same number of raters): each patch goes to exactly ``overlap`` distinct annotators, chosen
greedily among the least loaded, so that no annotator holds more than one patch more than
another. Each annotator's queue is then shuffled with the campaign's seed, so that the
annotators do not all meet the patches in the same order (order effects, fatigue).
"""

import datetime
import logging
import math
import random
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from judging.annotations.bundle import UNKNOWN_LABEL
from judging.annotations.dimensions import ratings_check
from judging.consensus.rules import UNKNOWN_RULE, ConsensusRule
from judging.dimensions import Dimension, DimensionsError, dimensions_of
from judging.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Campaign,
    JudgingRun,
    Label,
)
from rubrics.models import Dataset, Patch
from rubrics.selectors import UNKNOWN_PATCHES, dataset_patches_named
from sejury_web.audit import audit_record
from sejury_web.roles import Role

log = logging.getLogger(__name__)

DEFAULT_CALIBRATION_SAMPLE = 20
# A label's time on the page beyond this is an idle tab, not work: it is cut to this.
MAX_SECONDS_PER_LABEL = 3600.0
FILTER_KEYS = ("bug_type", "source", "tests_pass", "patches")

NO_NAME = "a campaign needs a name"
UNKNOWN_PURPOSE = "unknown purpose {value!r}; expected one of: {choices}"
UNKNOWN_SELECTION = "unknown selection {value!r}; expected one of: {choices}"
UNKNOWN_FILTER = "unknown filter {names}; the filters are: {known}"
FILTERS_WITH_ALL = "'All patches' takes no filter: choose 'A filter' or 'A random sample'"
EMPTY_FILTER = "a filter needs at least one criterion (bug type, source, tests or patch keys)"
NO_SAMPLE_SIZE = "a random sample needs a size"
BAD_SAMPLE_SIZE = "the sample size must be at least 1"
SAMPLE_TOO_LARGE = "a sample of {size} is larger than the {count} patches to draw from"
NO_PATCHES = "the selection holds no patch of {dataset}"
NO_ANNOTATORS = "pick at least one annotator"
NOT_ANNOTATORS = "not in the annotator role: {names}"
BAD_OVERLAP = "the overlap k must be between 1 and the number of annotators ({count})"
ALREADY_CLOSED = "campaign {campaign!r} is already closed"
ALREADY_OPEN = "campaign {campaign!r} is already open"
CAMPAIGN_CLOSED = "campaign {campaign!r} is closed: its labels are final"
# An annotator reads these: they name the bug, never the patch's key (which may name the
# tool that wrote it).
NOT_ASSIGNED = "this patch of bug {bug} is not in your queue of campaign {campaign!r}"
NOTHING_TO_UNDO = "nothing to undo: that label has changed since, or was undone already"
LABEL_FINAL = (
    "your label of this patch of bug {bug} was given in campaign {other!r}, which is closed: "
    "it is final"
)


# Audit actions (sejury_web.audit) of a campaign's life.
CAMPAIGN_CREATE = "campaign.create"
CAMPAIGN_CLOSE = "campaign.close"
CAMPAIGN_REOPEN = "campaign.reopen"


class CampaignError(ValueError):
    """A campaign cannot be created or changed as asked; the message says why."""


def _check_choice(value: str, choices: type[Any], message: str) -> None:
    if value not in choices.values:
        raise CampaignError(message.format(value=value, choices=", ".join(choices.values)))


def _clean_filters(filters: dict[str, Any] | None) -> dict[str, Any]:
    """The filters that narrow the patches, without the empty ones."""
    cleaned = {
        name: value
        for name, value in (filters or {}).items()
        if value not in ("", [], ()) and not (value is None and name != "tests_pass")
    }
    if unknown := sorted(set(cleaned) - set(FILTER_KEYS)):
        raise CampaignError(
            UNKNOWN_FILTER.format(names=", ".join(unknown), known=", ".join(FILTER_KEYS))
        )
    if "patches" in cleaned:
        cleaned["patches"] = list(dict.fromkeys(cleaned["patches"]))
    return cleaned


def _filtered_patches(dataset: Dataset, filters: dict[str, Any]) -> list[int]:
    """Ids of the dataset's patches that meet every filter, in the order of their keys."""
    patches = Patch.objects.filter(dataset=dataset)
    if "bug_type" in filters:
        patches = patches.filter(bug__bug_type=filters["bug_type"])
    if "source" in filters:
        patches = patches.filter(source=filters["source"])
    if "tests_pass" in filters:
        value = filters["tests_pass"]
        patches = (
            patches.filter(tests_pass__isnull=True)
            if value is None
            else patches.filter(tests_pass=bool(value))
        )
    if "patches" in filters:
        named, missing = dataset_patches_named(dataset, filters["patches"])
        if missing:
            raise CampaignError(UNKNOWN_PATCHES.format(keys=", ".join(missing), dataset=dataset))
        patches = patches.filter(pk__in=[patch.pk for patch in named])
    return list(patches.order_by("key").values_list("pk", flat=True))


def _sample_size(purpose: str, sample_size: int | None, pool: int) -> int:
    if sample_size is None:
        if purpose != Campaign.Purpose.CALIBRATION:
            raise CampaignError(NO_SAMPLE_SIZE)
        # The default is a convenience: on a smaller dataset it means every patch.
        return min(DEFAULT_CALIBRATION_SAMPLE, pool)
    if sample_size < 1:
        raise CampaignError(BAD_SAMPLE_SIZE)
    if sample_size > pool:
        raise CampaignError(SAMPLE_TOO_LARGE.format(size=sample_size, count=pool))
    return sample_size


def _annotators(annotators: Iterable[User]) -> list[User]:
    """The annotators, each once, in the order of their ids; all must hold the role."""
    by_id = {user.pk: user for user in annotators}
    if not by_id:
        raise CampaignError(NO_ANNOTATORS)
    allowed = set(
        User.objects.filter(pk__in=by_id)
        .filter(Q(groups__name=Role.ANNOTATOR) | Q(is_superuser=True))
        .values_list("pk", flat=True)
    )
    if refused := sorted(user.username for pk, user in by_id.items() if pk not in allowed):
        raise CampaignError(NOT_ANNOTATORS.format(names=", ".join(refused)))
    return [by_id[pk] for pk in sorted(by_id)]


def balanced_assignments(
    patch_ids: Sequence[int], annotator_ids: Sequence[int], *, overlap: int, seed: int
) -> dict[int, list[int]]:
    """Each annotator's queue of patch ids: every patch in exactly ``overlap`` queues, queue
    lengths that differ by at most one, and each queue in its own seeded order.

    Greedy: each patch goes to the ``overlap`` least-loaded annotators. If loads differ by at
    most one before a patch, they do after it (the least loaded rise first), so the invariant
    holds throughout. Ties go to the annotator earliest in a seeded order of the annotators:
    deterministic, yet not the same people always carrying the extra patch.
    """
    if not 1 <= overlap <= len(annotator_ids):
        raise CampaignError(BAD_OVERLAP.format(count=len(annotator_ids)))
    rng = random.Random(seed)  # noqa: S311 - seeded: the same queues on every draw
    tiebreak = list(annotator_ids)
    rng.shuffle(tiebreak)
    rank = {annotator: place for place, annotator in enumerate(tiebreak)}
    queues: dict[int, list[int]] = {annotator: [] for annotator in tiebreak}
    for patch_id in patch_ids:
        chosen = sorted(tiebreak, key=lambda a: (len(queues[a]), rank[a]))[:overlap]
        for annotator in chosen:
            queues[annotator].append(patch_id)
    for annotator in tiebreak:
        rng.shuffle(queues[annotator])
    return queues


@transaction.atomic
def campaign_create(
    *,
    dataset: Dataset,
    name: str,
    purpose: str,
    selection: str,
    sample_size: int | None = None,
    seed: int | None = None,
    filters: dict[str, Any] | None = None,
    annotators: Iterable[User],
    overlap: int,
    show_rubric: bool,
    consensus_rule: str = ConsensusRule.UNANIMOUS,
    routed_from: JudgingRun | None = None,
    dimensions: Sequence[Dimension] = (),
    actor: User | None,
) -> Campaign:
    """Create a campaign over the selected patches and every annotator's queue; its labels
    are a patch's consensus under ``consensus_rule`` (``judging.consensus.rules``)."""
    name = name.strip()
    if not name:
        raise CampaignError(NO_NAME)
    _check_choice(purpose, Campaign.Purpose, UNKNOWN_PURPOSE)
    _check_choice(selection, Campaign.Selection, UNKNOWN_SELECTION)
    if consensus_rule not in ConsensusRule.values:
        known = ", ".join(ConsensusRule.values)
        raise CampaignError(UNKNOWN_RULE.format(rule=consensus_rule, known=known))
    filters = _clean_filters(filters)
    if selection == Campaign.Selection.ALL and filters:
        raise CampaignError(FILTERS_WITH_ALL)
    if selection == Campaign.Selection.FILTER and not filters:
        raise CampaignError(EMPTY_FILTER)
    people = _annotators(annotators)
    if not 1 <= overlap <= len(people):
        raise CampaignError(BAD_OVERLAP.format(count=len(people)))
    # The seed orders every queue (and draws the sample): stored, so it all can be redone.
    seed = secrets.randbits(31) if seed is None else seed
    patch_ids = _filtered_patches(dataset, filters)
    if not patch_ids:
        raise CampaignError(NO_PATCHES.format(dataset=dataset))
    if selection == Campaign.Selection.SAMPLE:
        sample_size = _sample_size(purpose, sample_size, len(patch_ids))
        patch_ids = sorted(random.Random(seed).sample(patch_ids, sample_size))  # noqa: S311
    else:
        sample_size = None
    campaign = Campaign.objects.create(
        dataset=dataset,
        name=name,
        purpose=purpose,
        selection=selection,
        sample_size=sample_size,
        seed=seed,
        filters=filters,
        overlap=overlap,
        show_rubric=show_rubric,
        consensus_rule=consensus_rule,
        routed_from=routed_from,
        dimensions=[dimension.as_json() for dimension in dimensions],
        created_by=actor,
    )
    campaign.annotators.set(people)
    queues = balanced_assignments(patch_ids, [u.pk for u in people], overlap=overlap, seed=seed)
    Assignment.objects.bulk_create(
        [
            Assignment(campaign=campaign, patch_id=patch_id, annotator_id=annotator, position=n)
            for annotator, queue in queues.items()
            for n, patch_id in enumerate(queue, start=1)
        ],
        batch_size=1000,
    )
    audit_record(
        actor=actor,
        action=CAMPAIGN_CREATE,
        target=campaign,
        detail={
            "patches": len(patch_ids),
            "annotators": [u.username for u in people],
            **({"routed_from_run": routed_from.pk} if routed_from else {}),
        },
    )
    return campaign


def _status_set(
    campaign: Campaign, *, to: str, closed_at: datetime.datetime | None, refused: str
) -> Campaign:
    """Move the campaign to status ``to`` unless it is there already.

    One conditional UPDATE: of two leads closing (or reopening) at once, one wins and the
    other is told, and a label being recorded (which locks the campaign) is either before
    the close or refused by it.
    """
    changed = (
        Campaign.objects.filter(pk=campaign.pk)
        .exclude(status=to)
        .update(status=to, closed_at=closed_at)
    )
    if not changed:
        raise CampaignError(refused.format(campaign=campaign.name))
    campaign.status, campaign.closed_at = to, closed_at
    return campaign


@transaction.atomic
def campaign_close(*, campaign: Campaign, actor: User) -> Campaign:
    """Close the campaign: its labels become final."""
    campaign = _status_set(
        campaign, to=Campaign.Status.CLOSED, closed_at=timezone.now(), refused=ALREADY_CLOSED
    )
    audit_record(actor=actor, action=CAMPAIGN_CLOSE, target=campaign)
    return campaign


@transaction.atomic
def campaign_reopen(*, campaign: Campaign, actor: User) -> Campaign:
    """Open a closed campaign again, e.g. to let a late annotator finish."""
    campaign = _status_set(campaign, to=Campaign.Status.OPEN, closed_at=None, refused=ALREADY_OPEN)
    audit_record(actor=actor, action=CAMPAIGN_REOPEN, target=campaign)
    return campaign


def clamp_seconds(seconds: float | None) -> float:
    """A label's time on the page, within 0 and :data:`MAX_SECONDS_PER_LABEL`."""
    if seconds is None or not math.isfinite(seconds):
        return 0.0
    return min(max(float(seconds), 0.0), MAX_SECONDS_PER_LABEL)


def _unchanged(
    annotation: Annotation, *, label: str, note: str, ratings: dict[str, int], campaign: Campaign
) -> bool:
    """Whether recording ``label``, ``note`` and ``ratings`` in ``campaign`` would change
    nothing."""
    return (
        annotation.label == label
        and annotation.note == note
        and annotation.ratings == ratings
        and annotation.campaign_id == campaign.pk
        and annotation.origin == Annotation.Origin.UI
    )


@transaction.atomic
def annotation_record(
    *,
    campaign: Campaign,
    annotator: User,
    patch: Patch,
    label: str,
    note: str = "",
    ratings: Mapping[str, Any] | None = None,
    seconds_spent: float | None = 0.0,
) -> Annotation:
    """Record ``annotator``'s label of ``patch`` in ``campaign``, keeping the earlier values.

    The one current label per annotator and patch is created or changed (given in the app,
    in this campaign; the time adds up), and its new value appended to its history. A label
    that changes nothing (the same label and note, already given in the app in this
    campaign) records nothing: no history row, no time. Idempotent under concurrency too:
    the campaign and the annotation are locked (``SELECT … FOR UPDATE`` on PostgreSQL;
    SQLite's IMMEDIATE transactions write one at a time), so of two identical requests at
    once the second reads the first one's label and finds nothing to change.
    """
    if label not in Label.values:
        raise CampaignError(UNKNOWN_LABEL.format(value=label, choices=", ".join(Label.values)))
    # Locked, so that a close racing this label either precedes it or sees it.
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if not campaign.is_open:
        raise CampaignError(CAMPAIGN_CLOSED.format(campaign=campaign.name))
    if not Assignment.objects.filter(campaign=campaign, patch=patch, annotator=annotator).exists():
        raise CampaignError(NOT_ASSIGNED.format(bug=patch.bug.key, campaign=campaign.name))
    try:  # the campaign's dimensions, each on its scale (the lock read them fresh)
        checked = ratings_check(dimensions_of(campaign.dimensions), ratings or {})
    except DimensionsError as error:
        raise CampaignError(str(error)) from None
    seconds = clamp_seconds(seconds_spent)
    # get_or_create: the same patch may be in two open campaigns of the annotator, whose
    # locks do not exclude each other; a second insert then finds the first one's row.
    # No select_related("campaign"): PostgreSQL refuses FOR UPDATE across the outer join of
    # a nullable foreign key. The other campaign is read below only when there is one.
    annotation, created = Annotation.objects.select_for_update().get_or_create(
        patch=patch, annotator=annotator, defaults={"label": label}
    )
    if (
        not created
        and annotation.campaign is not None
        and annotation.campaign_id != campaign.pk
        and not annotation.campaign.is_open
    ):
        raise CampaignError(LABEL_FINAL.format(bug=patch.bug.key, other=annotation.campaign.name))
    note = note.strip()
    if not created and _unchanged(
        annotation, label=label, note=note, ratings=checked, campaign=campaign
    ):
        # The same label again (a double click, two tabs, a replayed form): nothing to
        # record, and no time added twice.
        return annotation
    annotation.label = label
    annotation.note = note
    annotation.ratings = checked
    annotation.origin = Annotation.Origin.UI
    annotation.campaign = campaign
    annotation.seconds_spent += seconds
    annotation.save()
    AnnotationRevision.objects.create(
        annotation=annotation,
        label=label,
        note=annotation.note,
        ratings=checked,
        campaign=campaign,
        seconds_spent=seconds,
    )
    return annotation


@transaction.atomic
def annotation_undo(*, campaign: Campaign, annotator: User, revision_id: int) -> Annotation | None:
    """Undo ``annotator``'s last label in ``campaign``, the revision ``revision_id``: the
    label is back to its previous value (its history loses the undone row, and its time the
    undone time), or, if it was the patch's first label, is removed, so that the patch is
    unlabelled again (None). Only the newest value of a label, while its campaign is open."""
    campaign = Campaign.objects.select_for_update().get(pk=campaign.pk)
    if not campaign.is_open:
        raise CampaignError(CAMPAIGN_CLOSED.format(campaign=campaign.name))
    revision = AnnotationRevision.objects.filter(
        pk=revision_id, campaign=campaign, annotation__annotator=annotator
    ).first()
    if revision is None:
        raise CampaignError(NOTHING_TO_UNDO)
    annotation = Annotation.objects.select_for_update().get(pk=revision.annotation_id)
    newest = list(annotation.revisions.order_by("-recorded_at", "-id")[:2])
    if newest[0].pk != revision.pk or annotation.campaign_id != campaign.pk:
        raise CampaignError(NOTHING_TO_UNDO)
    if len(newest) == 1:
        annotation.delete()
        return None
    earlier = newest[1]
    annotation.label = earlier.label
    annotation.note = earlier.note
    annotation.ratings = earlier.ratings
    annotation.campaign_id = earlier.campaign_id
    annotation.origin = Annotation.Origin.UI if earlier.campaign_id else Annotation.Origin.IMPORTED
    annotation.seconds_spent = max(0.0, annotation.seconds_spent - revision.seconds_spent)
    annotation.save()
    revision.delete()
    return annotation
