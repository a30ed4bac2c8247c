"""The lead's adjudication, its reads: the queue of patches whose labels give no consensus.

Under the consensus rule in force (``consensus_rule_for``: the campaign's when the queue
shows a campaign, else the dataset's), a waiting patch (annotators disagree, or too few
decisive labels) gets its consensus from a lead, who also says why the annotators disagreed
with the themes of paper 004 §5.2.1. Recording again updates the adjudication: the queue
lists adjudicated patches too. Recording an adjudication, and changing the rule of a
campaign or a dataset (which changes which patches wait), are ``judging.consensus.services``.

At scale the queue is read a window at a time (``queue_window``): the window after (or
before) a patch, by the queue's order, so that patches adjudicated meanwhile leave the
waiting list without making the next window skip any; only a window's diffs are read
(``adjudication_diffs``).
"""

import bisect
import dataclasses
from collections import Counter
from collections.abc import Iterable
from enum import StrEnum
from typing import Any

from django.db.models import Count, QuerySet

from judging.annotations.selectors import campaign_patch_ids
from judging.consensus.rules import (
    FROM_LABELS,
    ConsensusRule,
    PatchConsensus,
    State,
    consensus_rule_for,
    dataset_consensus,
    dataset_rows_parts,
)
from judging.models import Adjudication, Annotation, Campaign, DisagreementTheme, Label
from judging.reports import read_cache
from rubrics.models import Dataset, Patch
from sejury_web.gc_pause import collector_paused
from sejury_web.row_versions import row_version_of

CAMPAIGN_ELSEWHERE = "campaign {campaign} is on dataset {other}, not {dataset}"

# Waiting patches in this order: a disagreement is what the lead is there for.
WAITING_ORDER = (State.DISPUTED, State.TOO_FEW)


class AdjudicationError(ValueError):
    """An adjudication cannot be recorded as given; ``field`` names the form field at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclasses.dataclass(frozen=True)
class GivenLabel:
    """One annotator's label of a patch, as the lead sees it when adjudicating."""

    annotator: str
    label: str
    note: str
    imported: bool


def _disputed(consensus: PatchConsensus) -> bool:
    return len(set(consensus.decisive.values())) > 1


@dataclasses.dataclass(frozen=True)
class AdjudicationItem:
    patch: Patch  # with its bug
    consensus: PatchConsensus
    labels: list[GivenLabel]  # by annotator name
    adjudication: Adjudication | None

    @property
    def disputed(self) -> bool:
        """The decisive labels disagree: the lead must tag the disagreement."""
        return _disputed(self.consensus)

    @property
    def theme_labels(self) -> list[str]:
        themes = self.adjudication.themes if self.adjudication else []
        return [DisagreementTheme(theme).label for theme in themes]

    @property
    def label_counts(self) -> list[tuple[str, int]]:
        """How many annotators gave each label, VALID, INVALID then UNSURE (the labels the
        consensus is computed from)."""
        given = Counter(self.consensus.labels.values())
        return [(label, given[label]) for label in (Label.VALID, Label.INVALID, Label.UNSURE)]

    @property
    def majority(self) -> str | None:
        """The decisive label more annotators gave than the other, if one did (a plain
        majority: it is the consensus only under the rule in force)."""
        given = Counter(self.consensus.decisive.values())
        valid, invalid = given[Label.VALID], given[Label.INVALID]
        if valid == invalid:
            return None
        return Label.VALID if valid > invalid else Label.INVALID

    @property
    def decisive_count(self) -> int:
        return len(self.consensus.decisive)

    @property
    def majority_count(self) -> int:
        return Counter(self.consensus.decisive.values())[self.majority] if self.majority else 0


# A patch's place in a list of the queue: what the list is sorted by, compared with bisect.
Place = tuple[Any, ...]


def waiting_place(
    consensus: PatchConsensus, bug_sort_key: str, sort_key: str, patch_id: int
) -> Place:
    """A patch's place among waiting patches: disputed first (whether or not adjudicated
    since: the order holds while the lead works through it), then by bug and patch key
    (numbers in keys as numbers)."""
    return (0 if _disputed(consensus) else 1, bug_sort_key, sort_key, patch_id)


def adjudicated_place(bug_sort_key: str, sort_key: str, patch_id: int) -> Place:
    """A patch's place among adjudicated patches: by bug and patch key."""
    return (bug_sort_key, sort_key, patch_id)


@dataclasses.dataclass(frozen=True)
class QueueCounts:
    unanimous: int
    majority: int  # a two-thirds majority, not unanimous (0 under the unanimous rule)
    adjudicated: int
    disputed: int
    too_few: int
    unlabelled: int  # a campaign's patches nobody has labelled yet (0 without a campaign)

    @property
    def waiting(self) -> int:
        return self.disputed + self.too_few


@dataclasses.dataclass(frozen=True)
class QueueOutline:
    """The queue in its order, with only what the order needs: each patch's id, consensus and
    places (``waiting_place``, ``adjudicated_place``); no patch row, label or adjudication.
    A page reads those of the window it shows (``queue_window``): thousands of patches wait
    in a large dataset, ten are shown."""

    dataset: Dataset
    campaign: Campaign | None
    rule: ConsensusRule  # the campaign's, or else the dataset's
    counts: QueueCounts
    waiting: list[int]  # patch ids, disputed first, then too few labels
    adjudicated: list[int]  # patch ids
    consensus: dict[int, PatchConsensus]  # of each patch of either list
    # Each patch's (waiting, adjudicated) place, and each list's places in order (bisect's).
    places: dict[int, tuple[Place, Place]]
    waiting_places: list[Place]
    adjudicated_places: list[Place]

    def list_of(self, adjudicated: bool) -> tuple[list[int], list[Place], int]:
        """The ids and places of a list, and which of a patch's places is its place in it."""
        if adjudicated:
            return self.adjudicated, self.adjudicated_places, 1
        return self.waiting, self.waiting_places, 0


@dataclasses.dataclass(frozen=True)
class AdjudicationQueue:
    dataset: Dataset
    campaign: Campaign | None
    rule: ConsensusRule  # the campaign's, or else the dataset's
    waiting: list[AdjudicationItem]  # disputed first, then too few labels
    adjudicated: list[AdjudicationItem]
    counts: QueueCounts


def campaign_check(*, dataset: Dataset, campaign: Campaign | None) -> None:
    """Refuse a campaign of another dataset (``AdjudicationError`` on the campaign field)."""
    if campaign is not None and campaign.dataset_id != dataset.pk:
        message = CAMPAIGN_ELSEWHERE.format(
            campaign=campaign, other=campaign.dataset, dataset=dataset
        )
        raise AdjudicationError(message, field="campaign")


def _consensus(
    dataset: Dataset, campaign: Campaign | None
) -> tuple[dict[int, PatchConsensus], QueueCounts]:
    campaign_check(dataset=dataset, campaign=campaign)
    patch_ids = None if campaign is None else campaign_patch_ids(campaign)
    consensus = dataset_consensus(
        dataset,
        patch_ids=None if patch_ids is None else sorted(patch_ids),
        rule=consensus_rule_for(dataset, campaign),
    )
    states = Counter(state.state for state in consensus.values())
    counts = QueueCounts(
        unanimous=states[State.UNANIMOUS],
        majority=states[State.MAJORITY],
        adjudicated=states[State.ADJUDICATED],
        disputed=states[State.DISPUTED],
        too_few=states[State.TOO_FEW],
        unlabelled=0 if patch_ids is None else len(patch_ids - consensus.keys()),
    )
    return consensus, counts


def adjudication_counts(*, dataset: Dataset, campaign: Campaign | None = None) -> QueueCounts:
    """How many patches are unanimous, a majority's, adjudicated and waiting (optionally in a
    campaign), under the rule in force."""
    return _consensus(dataset, campaign)[1]


def _labels_by_patch(patch_ids: Iterable[int]) -> dict[int, list[GivenLabel]]:
    rows = (
        Annotation.objects.filter(patch_id__in=list(patch_ids))
        .order_by("patch_id", "annotator__username")
        .values_list("patch_id", "annotator__username", "label", "note", "origin")
    )
    labels: dict[int, list[GivenLabel]] = {}
    for patch_id, name, label, note, origin in rows:
        given = GivenLabel(name, label, note, origin == Annotation.Origin.IMPORTED)
        labels.setdefault(patch_id, []).append(given)
    return labels


def labels_of(*, patch_id: int) -> list[GivenLabel]:
    """One patch's labels by annotator name, in one query (for leads: who said what)."""
    return _labels_by_patch([patch_id]).get(patch_id, [])


def adjudication_queue_outline(
    *, dataset: Dataset, campaign: Campaign | None = None
) -> QueueOutline:
    """The queue as ``adjudication_queue``, in its order, with only what the order needs
    (``QueueOutline``).

    Kept by the process while the labels, adjudications and patches are unchanged (as the
    agreement report keeps its reads: ``judging.reports.read_cache``): a lead paging through
    the queue, or several leads, do not compute every patch's consensus for each window."""
    campaign_check(dataset=dataset, campaign=campaign)
    patch_ids = None if campaign is None else campaign_patch_ids(campaign)
    rows = row_version_of(("adjudication", dataset.pk), lambda: [dataset_rows_parts(dataset)])
    version = (*rows, None if patch_ids is None else hash(frozenset(patch_ids)))
    rule = consensus_rule_for(dataset, campaign)
    outline = read_cache.remembered(
        ("outline", dataset.pk, dataset.created_at, campaign and campaign.pk, rule),
        version,
        lambda: _outline(dataset, campaign),
        kind="adjudication",
    )
    return dataclasses.replace(outline, dataset=dataset, campaign=campaign)


@collector_paused()  # tens of thousands of objects built and kept: no collection meanwhile
def _outline(dataset: Dataset, campaign: Campaign | None) -> QueueOutline:
    consensus, counts = _consensus(dataset, campaign)
    shown = {c.patch_id: c for c in consensus.values() if c.state not in FROM_LABELS}
    # Plain rows, not Patch and Bug objects: building 2 × 4,000 models was a fourth of it.
    keys = (
        Patch.objects.filter(dataset=dataset)
        .order_by()
        .values_list("pk", "sort_key", "bug__sort_key")
    )
    places = {
        pk: (waiting_place(shown[pk], bug_key, key, pk), adjudicated_place(bug_key, key, pk))
        for pk, key, bug_key in keys
        if pk in shown
    }
    waiting = sorted(
        (pk for pk in places if shown[pk].state in WAITING_ORDER), key=lambda pk: places[pk][0]
    )
    adjudicated = sorted(
        (pk for pk in places if shown[pk].state == State.ADJUDICATED),
        key=lambda pk: places[pk][1],
    )
    return QueueOutline(
        dataset=dataset,
        campaign=campaign,
        rule=consensus_rule_for(dataset, campaign),
        counts=counts,
        waiting=waiting,
        adjudicated=adjudicated,
        consensus={pk: shown[pk] for pk in places},
        places=places,
        waiting_places=[places[pk][0] for pk in waiting],
        adjudicated_places=[places[pk][1] for pk in adjudicated],
    )


def _filled(outline: QueueOutline, ids: list[int]) -> list[AdjudicationItem]:
    """The outline's patches ``ids`` as items: their patches whole (with bug and dataset,
    without diffs), labels and adjudications, in four queries."""
    if not ids:
        return []
    # Without their diffs: the page shows a window of the queue, whose diffs it reads alone.
    patches = (
        Patch.objects.select_related("bug__dataset", "dataset")
        .defer("diff", "bug__reference_patch")
        .in_bulk(ids)
    )
    adjudications = Adjudication.objects.select_related("decided_by").in_bulk(
        ids, field_name="patch_id"
    )
    labels = _labels_by_patch(ids)
    return [
        AdjudicationItem(
            patches[pk], outline.consensus[pk], labels.get(pk, []), adjudications.get(pk)
        )
        for pk in ids
    ]


def adjudication_queue(*, dataset: Dataset, campaign: Campaign | None = None) -> AdjudicationQueue:
    """The dataset's patches whose labels give no consensus under the rule in force, and the
    adjudicated ones (optionally a campaign's only), each with its labels and adjudication."""
    outline = adjudication_queue_outline(dataset=dataset, campaign=campaign)
    return AdjudicationQueue(
        dataset=dataset,
        campaign=campaign,
        rule=outline.rule,
        waiting=_filled(outline, outline.waiting),
        adjudicated=_filled(outline, outline.adjudicated),
        counts=outline.counts,
    )


@dataclasses.dataclass(frozen=True)
class QueueWindow:
    """Some consecutive items of a list of the queue, and where they are in it."""

    items: list[AdjudicationItem]
    first: int  # 1-based place of the first item in the list (0 when empty)
    total: int
    before: int | None  # the first item's patch id, when items come before it
    after: int | None  # the last item's patch id, when items come after it

    @property
    def last(self) -> int:
        return self.first + len(self.items) - 1 if self.items else 0


def queue_window(
    outline: QueueOutline,
    *,
    adjudicated: bool = False,
    after: int | None = None,
    before: int | None = None,
    size: int,
) -> QueueWindow:
    """``size`` items of the waiting list (or the adjudicated one): the first ones, those
    after the patch ``after`` or those before the patch ``before`` (the first ones when
    fewer come before it), by the list's order.

    A patch given as ``after`` or ``before`` need not be in the list any more (adjudicated
    since the lead read its window): its place is found from its labels and keys, so no
    waiting patch is skipped. A patch unknown to the queue starts from the beginning.
    """
    ids, places, which = outline.list_of(adjudicated)
    start = 0
    if after is not None and after in outline.places:
        start = bisect.bisect_right(places, outline.places[after][which])
    elif before is not None and before in outline.places:
        start = max(bisect.bisect_left(places, outline.places[before][which]) - size, 0)
    shown = ids[start : start + size]
    return QueueWindow(
        items=_filled(outline, shown),  # the window's items get their labels and adjudications
        first=start + 1 if shown else 0,
        total=len(ids),
        before=shown[0] if shown and start > 0 else None,
        after=shown[-1] if shown and start + len(shown) < len(ids) else None,
    )


@dataclasses.dataclass(frozen=True)
class QueueRange:
    """Where a page's patches still in its list are: 1-based places (0 when none is left)."""

    first: int
    last: int
    total: int
    paged: bool = False  # patches of the list come before or after the page's: it has a pager


def queue_range(
    outline: QueueOutline,
    *,
    adjudicated: bool = False,
    first: int | None,
    last: int | None,
) -> QueueRange:
    """The places in the list (waiting, or adjudicated) of those patches of a page shown from
    patch ``first`` to patch ``last`` that are still in it: after the lead records a
    consensus on that page, the page's range line says so without a reload."""
    ids, places, which = outline.list_of(adjudicated)
    known = outline.places
    if first is None or last is None or first not in known or last not in known:
        return QueueRange(0, 0, len(ids))
    start = bisect.bisect_left(places, known[first][which])
    end = bisect.bisect_right(places, known[last][which])
    paged = start > 0 or end < len(ids)
    if end <= start:
        return QueueRange(0, 0, len(ids), paged)
    return QueueRange(start + 1, end, len(ids), paged)


def adjudication_diffs(*, patch_ids: Iterable[int]) -> dict[int, str]:
    """The diffs of a window's patches, by patch id."""
    return dict(Patch.objects.filter(pk__in=list(patch_ids)).values_list("pk", "diff"))


def adjudication_item(*, patch: Patch, campaign: Campaign | None = None) -> AdjudicationItem:
    """One patch as the queue (of ``campaign``, if given) shows it, after the lead records
    its adjudication."""
    rule = consensus_rule_for(patch.dataset, campaign)
    consensus = dataset_consensus(patch.dataset, patch_ids=[patch.pk], rule=rule)
    state = consensus.get(patch.pk) or PatchConsensus(patch.pk, {}, State.TOO_FEW, None)
    adjudication = Adjudication.objects.select_related("decided_by").filter(patch=patch).first()
    return AdjudicationItem(
        patch, state, _labels_by_patch([patch.pk]).get(patch.pk, []), adjudication
    )


def patches_consensus(*, dataset: Dataset, patch_ids: Iterable[int]) -> dict[int, PatchConsensus]:
    """The consensus of each of these patches of ``dataset``, under the dataset's rule (a lead's
    adjudication wins), as every dataset-wide page and a run's verdicts compare with it: each
    patch asked for is answered, one nobody labelled as ``TOO_FEW`` with no consensus. In two
    queries, however many patches."""
    ids = sorted(set(patch_ids))
    found = dataset_consensus(dataset, patch_ids=ids) if ids else {}
    return {
        patch_id: found.get(patch_id) or PatchConsensus(patch_id, {}, State.TOO_FEW, None)
        for patch_id in ids
    }


class JudgeAgreement(StrEnum):
    """Whether a verdict agrees with the human consensus on its patch."""

    AGREES = "agrees"
    DISAGREES = "disagrees"
    NO_CONSENSUS = "no consensus yet"  # the humans have not agreed (or not labelled) yet
    NO_VERDICT = "no verdict"  # the judge has not given one (pending, failed)


def judge_agreement(verdict: str, consensus: PatchConsensus | None) -> JudgeAgreement:
    """``verdict`` (VALID, INVALID or "" when there is none) against ``consensus``."""
    if not verdict:
        return JudgeAgreement.NO_VERDICT
    if consensus is None or consensus.consensus is None:
        return JudgeAgreement.NO_CONSENSUS
    return JudgeAgreement.AGREES if verdict == consensus.consensus else JudgeAgreement.DISAGREES


def adjudication_datasets() -> QuerySet[Dataset]:
    """Datasets with labels, each with its label count and campaigns (the queue's index)."""
    return (
        Dataset.objects.annotate(label_count=Count("patches__annotations"))
        .filter(label_count__gt=0)
        .prefetch_related("campaigns")
        .order_by("name")
    )


def adjudication_patch(*, dataset: Dataset, patch_id: int) -> Patch:
    """One of the dataset's patches, with its bug, as the queue records it
    (``Patch.DoesNotExist`` otherwise)."""
    return Patch.objects.select_related("bug__dataset", "dataset").get(dataset=dataset, pk=patch_id)


def dataset_campaign(*, dataset: Dataset, campaign_id: int) -> Campaign:
    """One of the dataset's campaigns (``Campaign.DoesNotExist`` otherwise)."""
    return Campaign.objects.get(dataset=dataset, pk=campaign_id)
