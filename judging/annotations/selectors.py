"""Reads of annotations: campaigns (the lead's overview and progress), the annotator's queue
and own labels, and the label counts that rubrics pages show (``LabelCounts``).

The lead's reads may show labels. The annotator's reads are built from the annotator's own
assignments and own annotations only, so that a page built from them cannot leak a judge's
verdict or another annotator's label (blind by construction).
"""

import dataclasses
import datetime
import statistics
from collections import Counter, defaultdict
from collections.abc import Collection
from typing import NamedTuple

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from judging.dimensions import Dimension
from judging.models import Annotation, AnnotationRevision, Assignment, Campaign, Label
from rubrics.models import Dataset, Patch
from rubrics.selectors import PatchLabel, golden_rubric
from sejury_web.roles import Role

# The one wording of a campaign id that names no campaign (or, to an annotator, none of
# theirs), at every door: the campaign pages, the Label Studio commands, a report.
UNKNOWN_CAMPAIGN = "there is no campaign {campaign}"


@dataclasses.dataclass(frozen=True)
class Progress:
    """Labels given out of labels asked for (a campaign's, or one annotator's)."""

    assigned: int
    done: int

    @classmethod
    def of_queue(cls, queue: "list[QueueItem]") -> "Progress":
        return cls(len(queue), sum(1 for item in queue if item.done))

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.assigned) if self.assigned else 0

    @property
    def finished(self) -> bool:
        return self.done >= self.assigned


@dataclasses.dataclass(frozen=True)
class CampaignRow:
    campaign: Campaign
    patches: int
    progress: Progress


@dataclasses.dataclass(frozen=True)
class AnnotatorProgress:
    annotator: User
    progress: Progress
    unsure: int
    imported: int
    median_seconds: float | None  # over the labels with a measured time


@dataclasses.dataclass(frozen=True)
class PatchCoverage:
    patch_id: int
    patch_key: str
    bug_key: str
    labels: list[tuple[str, str | None]]  # (annotator's name, label or None), by name


@dataclasses.dataclass(frozen=True)
class QueueItem:
    """One place in an annotator's queue, with their own label of its patch."""

    position: int
    patch_id: int
    label: str | None  # the annotator's own current label
    bug_key: str = ""  # what the annotator is told of the patch: its bug and its place

    @property
    def done(self) -> bool:
        return self.label is not None


def _labelled() -> Exists:
    """Whether an assignment's annotator has a label for its patch, whatever its origin."""
    return Exists(
        Annotation.objects.filter(
            patch_id=OuterRef("patch_id"), annotator_id=OuterRef("annotator_id")
        )
    )


def annotator_users() -> QuerySet[User]:
    """The users who may be given a campaign's patches."""
    return User.objects.filter(groups__name=Role.ANNOTATOR, is_active=True).order_by("username")


def _progress_by_campaign(campaign_ids: list[int]) -> dict[int, tuple[int, int, int]]:
    """Campaign id → (patches, assignments, assignments done), in one query."""
    rows = (
        Assignment.objects.filter(campaign_id__in=campaign_ids)
        .annotate(labelled=_labelled())
        .values("campaign_id")
        .annotate(
            patches=Count("patch_id", distinct=True),
            assigned=Count("id"),
            done=Count("id", filter=Q(labelled=True)),
        )
        .order_by()
    )
    return {row["campaign_id"]: (row["patches"], row["assigned"], row["done"]) for row in rows}


def campaign_list(*, dataset: Dataset | None = None) -> list[CampaignRow]:
    """Every campaign (of ``dataset``, if given), newest first, with its overall progress."""
    campaigns = Campaign.objects.select_related("dataset", "created_by")
    if dataset is not None:
        campaigns = campaigns.filter(dataset=dataset)
    found = list(campaigns)
    counts = _progress_by_campaign([c.pk for c in found])
    rows = []
    for campaign in found:
        patches, assigned, done = counts.get(campaign.pk, (0, 0, 0))
        rows.append(CampaignRow(campaign, patches, Progress(assigned, done)))
    return rows


class CampaignNotFound(Campaign.DoesNotExist):
    """No campaign has the id asked for (or none the annotator has patches in); the message
    says which (``UNKNOWN_CAMPAIGN``). A ``Campaign.DoesNotExist``, so code that catches that
    catches this."""

    def __init__(self, campaign_id: object) -> None:
        self.campaign_id = campaign_id
        super().__init__(UNKNOWN_CAMPAIGN.format(campaign=campaign_id))

    def __reduce__(self) -> tuple[type["CampaignNotFound"], tuple[object]]:
        # Made again from its id, not its message, so that a pickled copy says it once.
        return type(self), (self.campaign_id,)


def campaign_get(*, campaign_id: int) -> Campaign:
    """One campaign, for the lead's pages; ``CampaignNotFound`` otherwise."""
    try:
        return Campaign.objects.select_related("dataset", "created_by").get(pk=campaign_id)
    except Campaign.DoesNotExist:
        raise CampaignNotFound(campaign_id) from None


def dataset_campaigns(dataset: Dataset) -> QuerySet[Campaign]:
    """The dataset's campaigns, in ``Campaign``'s order (the campaign pickers of a report and of
    the adjudication queue)."""
    return Campaign.objects.filter(dataset=dataset)


def campaign_assignment_count(campaign: Campaign) -> int:
    """How many labels the campaign asks for: one per assignment."""
    return Assignment.objects.filter(campaign=campaign).count()


def campaign_patch_ids(campaign: Campaign) -> set[int]:
    """The patches a campaign asked labels for (its assignments' patches). In no order: the
    default order's columns (the campaign's, the annotator, the position) would join the
    campaign and make the DISTINCT one row per assignment."""
    return set(
        Assignment.objects.filter(campaign=campaign)
        .order_by()
        .values_list("patch_id", flat=True)
        .distinct()
    )


class _CampaignLabel(NamedTuple):
    label: str
    origin: str
    seconds_spent: float


def _campaign_labels(campaign: Campaign) -> dict[tuple[int, int], _CampaignLabel]:
    """The current labels of the campaign's assignments, by (patch id, annotator id); read
    in no order (the default order joins the patch and dataset to sort them), as plain
    values (a model instance each cost most of a 30,000-assignment campaign page)."""
    rows = (
        Annotation.objects.filter(
            patch_id__in=Assignment.objects.filter(campaign=campaign).values("patch_id"),
            annotator__in=campaign.annotators.all(),
        )
        .order_by()
        .values_list("patch_id", "annotator_id", "label", "origin", "seconds_spent")
    )
    return {
        (patch_id, annotator_id): _CampaignLabel(label, origin, seconds)
        for patch_id, annotator_id, label, origin, seconds in rows
    }


def campaign_progress(campaign: Campaign) -> list[AnnotatorProgress]:
    """Each annotator's progress in the campaign, by name (for the lead), in three queries."""
    pairs = list(  # counted: in no order (the default order joins the campaign)
        Assignment.objects.filter(campaign=campaign)
        .order_by()
        .values_list("annotator_id", "patch_id")
    )
    labels = _campaign_labels(campaign)
    mine: dict[int, list[_CampaignLabel]] = defaultdict(list)
    assigned: Counter[int] = Counter()
    for annotator_id, patch_id in pairs:
        assigned[annotator_id] += 1
        if (annotation := labels.get((patch_id, annotator_id))) is not None:
            mine[annotator_id].append(annotation)
    rows = []
    for user in campaign.annotators.order_by("username"):
        given = mine[user.pk]
        timed = [a.seconds_spent for a in given if a.seconds_spent > 0]
        rows.append(
            AnnotatorProgress(
                annotator=user,
                progress=Progress(assigned[user.pk], len(given)),
                unsure=sum(1 for a in given if a.label == Label.UNSURE),
                imported=sum(1 for a in given if a.origin == Annotation.Origin.IMPORTED),
                median_seconds=statistics.median(timed) if timed else None,
            )
        )
    return rows


def campaign_coverage(campaign: Campaign) -> tuple[list[PatchCoverage], Counter[int]]:
    """Each patch with its annotators' labels (for the lead), and how many patches have
    0, 1, …, k labels."""
    # Plain values: the page lists every patch, and a patch row holds its whole diff.
    assignments = (
        Assignment.objects.filter(campaign=campaign)
        .order_by("patch__sort_key", "annotator__username")
        .values_list(
            "patch_id", "patch__key", "patch__bug__key", "annotator_id", "annotator__username"
        )
    )
    labels = _campaign_labels(campaign)
    by_patch: dict[int, PatchCoverage] = {}
    for patch_id, patch_key, bug_key, annotator_id, username in assignments:
        row = by_patch.setdefault(patch_id, PatchCoverage(patch_id, patch_key, bug_key, []))
        annotation = labels.get((patch_id, annotator_id))
        row.labels.append((username, annotation.label if annotation else None))
    rows = list(by_patch.values())
    histogram = Counter(sum(1 for _, label in row.labels if label) for row in rows)
    return rows, histogram


# The annotator's side: their own assignments and labels, nothing else. Their pages get plain
# values, never model instances, so that no template can follow a relation from a campaign or
# a patch to other annotators' labels or to a judge's verdicts.


@dataclasses.dataclass(frozen=True)
class CampaignSummary:
    """What an annotator may know of a campaign."""

    pk: int
    name: str
    dataset_name: str
    status: str
    status_display: str
    is_open: bool
    show_rubric: bool

    @classmethod
    def of(cls, campaign: Campaign) -> "CampaignSummary":
        return cls(
            pk=campaign.pk,
            name=campaign.name,
            dataset_name=campaign.dataset.name,
            status=campaign.status,
            status_display=campaign.get_status_display(),
            is_open=campaign.is_open,
            show_rubric=campaign.show_rubric,
        )


@dataclasses.dataclass(frozen=True)
class OwnCampaignRow:
    campaign: CampaignSummary
    progress: Progress


@dataclasses.dataclass(frozen=True)
class LabellingCase:
    """One patch as its annotator sees it: the bug, the golden rubric, the candidate."""

    position: int
    bug_key: str
    bug_title: str
    bug_description: str
    reference_patch: str
    diff: str
    golden_rubric: str | None  # its Markdown; None without one (or if the campaign hides it)


@dataclasses.dataclass(frozen=True)
class OwnLabel:
    label: str
    note: str
    origin_display: str
    ratings: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class DimensionRow:
    """A dimension the annotator rates on the labelling page, and their own rating of it."""

    name: str
    scale: list[int]
    rating: int | None
    description: str = ""


def dimension_rows(dimensions: list[Dimension], own: OwnLabel | None) -> list[DimensionRow]:
    ratings = own.ratings if own else {}
    return [DimensionRow(d.name, d.scale, ratings.get(d.name), d.description) for d in dimensions]


@dataclasses.dataclass(frozen=True)
class UndoOffer:
    """The label the annotator just gave, which they may undo: its value and its place."""

    revision_id: int
    label: str
    position: int


def newest_revision_id(*, patch_id: int, annotator: User) -> int | None:
    """The id of the newest value of the annotator's label of the patch, if any."""
    return (
        AnnotationRevision.objects.filter(
            annotation__patch_id=patch_id, annotation__annotator=annotator
        )
        .order_by("-recorded_at", "-id")
        .values_list("pk", flat=True)
        .first()
    )


def undo_offer(*, campaign: Campaign, annotator: User, revision_id: int) -> UndoOffer | None:
    """The annotator's own label value ``revision_id``, given in ``campaign``, if it is still
    its label's newest value and the campaign is open: what the next page offers to undo."""
    if not campaign.is_open:
        return None
    revision = (
        AnnotationRevision.objects.filter(
            pk=revision_id, campaign=campaign, annotation__annotator=annotator
        )
        .values("label", "annotation_id", "annotation__patch_id")
        .first()
    )
    if revision is None:
        return None
    newest = newest_revision_id(patch_id=revision["annotation__patch_id"], annotator=annotator)
    position = (
        Assignment.objects.filter(
            campaign=campaign, annotator=annotator, patch_id=revision["annotation__patch_id"]
        )
        .values_list("position", flat=True)
        .first()
    )
    if newest != revision_id or position is None:
        return None
    return UndoOffer(revision_id, revision["label"], position)


@dataclasses.dataclass(frozen=True)
class OwnRevision:
    label: str
    note: str
    recorded_at: datetime.datetime
    campaign_name: str | None  # None for an imported value


def annotator_campaigns(*, annotator: User) -> list[OwnCampaignRow]:
    """The campaigns with patches in ``annotator``'s queue, newest first, with their own
    progress (not the other annotators')."""
    rows = (
        Assignment.objects.filter(annotator=annotator)
        .annotate(labelled=_labelled())
        .values("campaign_id")
        .annotate(assigned=Count("id"), done=Count("id", filter=Q(labelled=True)))
        .order_by()
    )
    counts = {row["campaign_id"]: (row["assigned"], row["done"]) for row in rows}
    campaigns = Campaign.objects.filter(pk__in=counts).select_related("dataset")
    return [OwnCampaignRow(CampaignSummary.of(c), Progress(*counts[c.pk])) for c in campaigns]


def annotator_campaign_get(*, campaign_id: int, annotator: User) -> Campaign:
    """A campaign in which ``annotator`` has patches; ``CampaignNotFound`` otherwise (the same
    error whether the campaign does not exist or is someone else's)."""
    try:
        return Campaign.objects.select_related("dataset").get(
            pk=campaign_id,
            pk__in=Assignment.objects.filter(annotator=annotator).values("campaign_id"),
        )
    except Campaign.DoesNotExist:
        raise CampaignNotFound(campaign_id) from None


def annotator_queue(*, campaign: Campaign, annotator: User) -> list[QueueItem]:
    """The annotator's queue in the campaign, in order, with their own current labels."""
    mine = Assignment.objects.filter(campaign=campaign, annotator=annotator)
    own = dict(
        Annotation.objects.filter(
            annotator=annotator, patch_id__in=mine.values("patch_id")
        ).values_list("patch_id", "label")
    )
    return [
        QueueItem(position, patch_id, own.get(patch_id), bug_key)
        for position, patch_id, bug_key in mine.order_by("position").values_list(
            "position", "patch_id", "patch__bug__key"
        )
    ]


def annotator_assignment(*, campaign: Campaign, annotator: User, position: int) -> Assignment:
    """The annotator's assignment at ``position``; ``Assignment.DoesNotExist`` otherwise."""
    return Assignment.objects.select_related("patch__bug").get(
        campaign=campaign, annotator=annotator, position=position
    )


def next_unlabelled(queue: list[QueueItem], after: int) -> QueueItem | None:
    """The first unlabelled item after position ``after``, wrapping around to the start."""
    waiting = [item for item in queue if not item.done]
    return next((item for item in waiting if item.position > after), None) or next(
        iter(waiting), None
    )


def labelling_case(*, campaign: Campaign, assignment: Assignment) -> LabellingCase:
    """The patch of ``assignment`` (``annotator_assignment``) as its annotator sees it."""
    patch, bug = assignment.patch, assignment.patch.bug
    golden = golden_rubric(bug_id=bug.pk) if campaign.show_rubric else None
    return LabellingCase(
        position=assignment.position,
        bug_key=bug.key,
        bug_title=bug.title,
        bug_description=bug.description,
        reference_patch=bug.reference_patch,
        diff=patch.diff,
        golden_rubric=golden.text if golden else None,
    )


def own_label(*, patch_id: int, annotator: User) -> tuple[OwnLabel | None, list[OwnRevision]]:
    """The annotator's current label of the patch and every value it took, newest first."""
    annotation = Annotation.objects.filter(patch_id=patch_id, annotator=annotator).first()
    if annotation is None:
        return None, []
    revisions = annotation.revisions.select_related("campaign").order_by("-recorded_at", "-id")
    return (
        OwnLabel(
            annotation.label,
            annotation.note,
            annotation.get_origin_display(),
            dict(annotation.ratings or {}),
        ),
        [
            OwnRevision(r.label, r.note, r.recorded_at, r.campaign.name if r.campaign else None)
            for r in revisions
        ],
    )


def annotations_of(*, annotator: User) -> QuerySet[Annotation]:
    """An annotator's own labels, newest first. Never anyone else's."""
    return (
        Annotation.objects.filter(annotator=annotator)
        .select_related("patch", "patch__dataset", "patch__bug")
        .order_by("-updated_at", "-id")
    )


@dataclasses.dataclass(frozen=True)
class QueuePlace:
    """Where a patch is in one of the annotator's queues: what they are told of it instead
    of its key (a key may name the tool that wrote the patch)."""

    campaign_pk: int
    campaign_name: str
    campaign_open: bool
    position: int
    queue_length: int


@dataclasses.dataclass(frozen=True)
class OwnLabelRow:
    """One of the annotator's labels, as plain values: the page can follow no relation from it
    to other annotators' labels, and it names no patch key."""

    dataset_name: str
    bug_key: str
    label: str
    note: str
    updated_at: datetime.datetime
    imported: bool
    place: QueuePlace | None  # where to open it: in the campaign it was given in, if any
    final_in: str | None  # the closed campaign it was given in: the label is final
    # Outside the annotator's campaigns, which patch of its bug it is (never its key): its
    # place among the bug's patches in the order they were added, and how many there are.
    bug_place: tuple[int, int] | None = None

    @property
    def changeable(self) -> bool:
        return self.final_in is None and self.place is not None and self.place.campaign_open


def own_label_rows(*, annotator: User, annotations: list[Annotation]) -> list[OwnLabelRow]:
    """``annotations`` (the annotator's own, ``annotations_of``) as rows of *My labels*, each
    with its place in the annotator's campaigns, in two queries.

    The place is in the campaign the label was last given in; otherwise (an imported label)
    an open campaign's, newest first. A label given in a closed campaign is final
    (``annotation_record`` refuses to change it), wherever else its patch is.
    """
    patch_ids = {a.patch_id for a in annotations}
    assignments = list(
        Assignment.objects.filter(annotator=annotator, patch_id__in=patch_ids)
        .order_by("-campaign__created_at", "-campaign_id")
        .values_list("patch_id", "campaign_id", "position", "campaign__name", "campaign__status")
    )
    lengths = dict(
        Assignment.objects.filter(
            annotator=annotator, campaign_id__in={row[1] for row in assignments}
        )
        .values("campaign_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("campaign_id", "n")
    )
    places: dict[int, list[QueuePlace]] = defaultdict(list)
    for patch_id, campaign_id, position, name, status in assignments:
        places[patch_id].append(
            QueuePlace(
                campaign_id, name, status == Campaign.Status.OPEN, position, lengths[campaign_id]
            )
        )
    closed = dict(
        Campaign.objects.filter(
            pk__in={a.campaign_id for a in annotations if a.campaign_id is not None},
            status=Campaign.Status.CLOSED,
        ).values_list("pk", "name")
    )
    bug_places = _bug_places({a.patch.bug_id for a in annotations if a.patch_id not in places})
    rows = []
    for a in annotations:
        mine = places.get(a.patch_id, [])
        given_in = [p for p in mine if p.campaign_pk == a.campaign_id]
        # Else an open campaign's first (``mine`` is newest first; sorted() keeps that order).
        place = next(iter(given_in or sorted(mine, key=lambda p: not p.campaign_open)), None)
        rows.append(
            OwnLabelRow(
                dataset_name=a.patch.dataset.name,
                bug_key=a.patch.bug.key,
                label=a.label,
                note=a.note,
                updated_at=a.updated_at,
                imported=a.origin == Annotation.Origin.IMPORTED,
                place=place,
                final_in=closed.get(a.campaign_id) if a.campaign_id is not None else None,
                bug_place=None if place else bug_places.get(a.patch_id),
            )
        )
    return rows


def _bug_places(bug_ids: Collection[int]) -> dict[int, tuple[int, int]]:
    """Each patch of these bugs: its place among its bug's patches, in the order they were
    added (their ids: not their keys, whose order could hint at the tools), and their number."""
    if not bug_ids:
        return {}
    by_bug: dict[int, list[int]] = defaultdict(list)
    for bug_id, patch_id in (
        Patch.objects.filter(bug_id__in=bug_ids).order_by("pk").values_list("bug_id", "pk")
    ):
        by_bug[bug_id].append(patch_id)
    return {
        patch_id: (n, len(patch_ids))
        for patch_ids in by_bug.values()
        for n, patch_id in enumerate(patch_ids, start=1)
    }


class LabelCounts:
    """The labels that rubrics pages show (counts, and a patch's labels for leads), read
    here because annotations are judging's; registered with ``rubrics.selectors`` by
    ``JudgingConfig.ready()``."""

    def dataset_count(self, *, dataset_id: int) -> int:
        return Annotation.objects.filter(patch__dataset_id=dataset_id).count()

    def bug_counts(self, *, bug_ids: Collection[int]) -> dict[int, int]:
        return self._counts("patch__bug_id", bug_ids)

    def patch_counts(self, *, patch_ids: Collection[int]) -> dict[int, int]:
        return self._counts("patch_id", patch_ids)

    @staticmethod
    def _counts(group_by: str, ids: Collection[int]) -> dict[int, int]:
        """Labels per ``group_by`` value among ``ids``, in one grouped query (in no order: the
        default order's joins would stay in the query, though a grouped one drops its sort)."""
        rows = (
            Annotation.objects.filter(**{f"{group_by}__in": ids})
            .order_by()
            .values(group_by)
            .annotate(n=Count("pk"))
            .values_list(group_by, "n")
        )
        return dict(rows)

    def patch_labels(self, *, patch_id: int) -> list[PatchLabel]:
        annotations = (
            Annotation.objects.filter(patch_id=patch_id)
            .select_related("annotator")
            .order_by("annotator__username")
        )
        return [
            PatchLabel(
                annotator=a.annotator.username,
                label=a.label,
                note=a.note,
                origin=a.get_origin_display(),
            )
            for a in annotations
        ]
