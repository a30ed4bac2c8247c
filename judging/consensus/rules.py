"""The human consensus on each patch: its labels under a consensus rule, or a lead's adjudication.

Only decisive labels count (VALID or INVALID; UNSURE counts as no label, as in the agreement
statistics). A patch's labels are *unanimous* when at least two annotators gave a decisive
label and all of them agree. The lead chooses the rule (``ConsensusRule``) per campaign, and
per dataset for its imported labels and dataset-wide views:

- ``unanimous`` (paper 004, the default): the consensus is the unanimous label;
- ``majority``: the unanimous label too, or the label of at least two thirds of at least
  three decisive labels (2 of 3, 3 of 4, 4 of 6; not 3 of 5).

The consensus is then that label, with nothing recorded. Any other patch with labels
(annotators who disagree, or too few decisive labels) waits for a lead, whose
``Adjudication`` is its consensus from then on, under either rule. B_full is every patch with
a consensus, B_clear the unanimous ones (paper 004, Table 5), whatever the rule.
"""

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from enum import StrEnum

from django.db.models import (
    Case,
    CharField,
    Count,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from judging.models import Adjudication, Annotation, Campaign, Label

# ConsensusRule lives in rubrics (a dataset holds one); the rest of judging imports it here.
from rubrics.models import Bug, ConsensusRule, Dataset, Patch
from sejury_web.row_versions import count_of, newest

MIN_DECISIVE_LABELS = 2
MIN_MAJORITY_LABELS = 3
MAJORITY_SHARE = (2, 3)  # at least two thirds of the decisive labels, as a fraction
# A rule that is not a ``ConsensusRule``, as a new campaign and a lead's change of rule say it.
UNKNOWN_RULE = "unknown consensus rule {rule!r}; the rules are {known}"


class State(StrEnum):
    UNANIMOUS = "unanimous"  # consensus from the labels: all decisive labels agree
    MAJORITY = "majority"  # consensus from the labels: a two-thirds majority (majority rule)
    ADJUDICATED = "adjudicated"  # consensus from a lead
    DISPUTED = "disputed"  # decisive labels disagree; waits for a lead
    TOO_FEW = "too_few"  # fewer than two decisive labels; waits for labels or a lead


# The states whose consensus comes from the labels alone: the queue leaves them out.
FROM_LABELS = frozenset({State.UNANIMOUS, State.MAJORITY})


@dataclasses.dataclass(frozen=True)
class PatchConsensus:
    patch_id: int
    labels: dict[int, str]  # annotator id → label, UNSURE included
    state: State
    consensus: str | None  # VALID, INVALID, or None while it waits

    # Cached (the object is frozen): the report reads both of every patch.
    @functools.cached_property
    def decisive(self) -> dict[int, str]:
        """The VALID and INVALID labels by annotator id: UNSURE counts as no label."""
        return {annotator: label for annotator, label in self.labels.items() if label != _UNSURE}

    @functools.cached_property
    def is_unanimous(self) -> bool:
        """In B_clear: the decisive labels agree, and the consensus is their label.

        Whatever the rule: a majority consensus is not unanimous. An adjudicated patch whose
        labels became unanimous later (an annotator changed their label while the campaign
        was open) counts only if the lead's label is theirs.
        """
        if self.state != State.ADJUDICATED:  # the labels' own consensus, or none
            return self.state == State.UNANIMOUS
        return _unanimous(list(self.decisive.values())) == self.consensus


_UNSURE = Label.UNSURE.value  # a plain string compares faster than the member


def _decisive(labels: Iterable[str]) -> list[str]:
    return [label for label in labels if label != _UNSURE]


def _unanimous(decisive: list[str]) -> str | None:
    if len(decisive) >= MIN_DECISIVE_LABELS and len(set(decisive)) == 1:
        return decisive[0]
    return None


def _majority(decisive: list[str]) -> str | None:
    if len(decisive) < MIN_MAJORITY_LABELS:
        return None
    label, count = Counter(decisive).most_common(1)[0]
    numerator, denominator = MAJORITY_SHARE
    return label if count * denominator >= numerator * len(decisive) else None


def unanimous_label(labels: Iterable[str]) -> str | None:
    """The label every decisive label agrees on, if there are at least two; otherwise None."""
    return _unanimous(_decisive(labels))


def majority_label(labels: Iterable[str]) -> str | None:
    """The label of at least two thirds of the decisive labels, if there are at least three;
    otherwise None. (The majority rule also accepts a unanimous pair: ``patch_consensus``.)"""
    return _majority(_decisive(labels))


def patch_consensus(
    patch_id: int,
    labels: dict[int, str],
    adjudicated: str | None,
    rule: ConsensusRule = ConsensusRule.UNANIMOUS,
) -> PatchConsensus:
    """The consensus of one patch from its labels under ``rule`` and its adjudication (if
    any), which wins over either rule."""
    if adjudicated:
        return PatchConsensus(patch_id, labels, State.ADJUDICATED, adjudicated)
    decisive = _decisive(labels.values())
    if agreed := _unanimous(decisive):
        return PatchConsensus(patch_id, labels, State.UNANIMOUS, agreed)
    if rule == ConsensusRule.MAJORITY and (most := _majority(decisive)):
        return PatchConsensus(patch_id, labels, State.MAJORITY, most)
    state = State.DISPUTED if len(set(decisive)) > 1 else State.TOO_FEW
    return PatchConsensus(patch_id, labels, state, None)


def _label_count(patch_ref: str, label: str) -> Coalesce:
    """How many annotators gave the patch at ``patch_ref`` (an outer field) ``label``."""
    labels = (
        Annotation.objects.filter(patch_id=OuterRef(patch_ref), label=label)
        .order_by()
        .values("patch_id")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return Coalesce(Subquery(labels, output_field=IntegerField()), 0)


def with_consensus(
    queryset: QuerySet, rule: ConsensusRule, *, patch_ref: str = "patch_id", name: str = "consensus"
) -> QuerySet:
    """``queryset`` with the alias ``name`` (to filter by, or to ``annotate`` with): the
    consensus of the patch at ``patch_ref`` under ``rule`` (VALID, INVALID, or None while it
    waits or has no label), ``patch_consensus`` in SQL, so that a page can filter and count
    by it without reading every label (``tests/judging/runs/test_run_humans.py`` checks it
    against ``patch_consensus``). An alias, not a column: a query that filters by it does
    not also compute it for every row it returns; refer to it once (SQL repeats its
    subqueries at each reference)."""
    adjudicated = Adjudication.objects.filter(patch_id=OuterRef(patch_ref)).values("label")[:1]
    valid, invalid = f"_{name}_valid", f"_{name}_invalid"
    queryset = queryset.alias(
        **{
            f"_{name}_adjudicated": Subquery(adjudicated, output_field=CharField()),
            valid: _label_count(patch_ref, Label.VALID),
            invalid: _label_count(patch_ref, Label.INVALID),
        }
    )
    whens = [
        When(
            Q(**{f"_{name}_adjudicated__isnull": False}) & ~Q(**{f"_{name}_adjudicated": ""}),
            then=F(f"_{name}_adjudicated"),
        ),
        When(Q(**{f"{valid}__gte": MIN_DECISIVE_LABELS, invalid: 0}), then=Value(Label.VALID)),
        When(Q(**{f"{invalid}__gte": MIN_DECISIVE_LABELS, valid: 0}), then=Value(Label.INVALID)),
    ]
    if ConsensusRule(rule) == ConsensusRule.MAJORITY:
        # Two thirds of three or more decisive labels: never a tie.
        numerator, denominator = MAJORITY_SHARE
        queryset = queryset.alias(**{f"_{name}_decisive": F(valid) + F(invalid)})
        for label, count in ((Label.VALID, valid), (Label.INVALID, invalid)):
            share = f"_{name}_{label.lower()}_share"  # ≥ 0: at least two thirds
            queryset = queryset.alias(
                **{share: F(count) * denominator - F(f"_{name}_decisive") * numerator}
            )
            whens.append(
                When(
                    Q(**{f"{share}__gte": 0, f"_{name}_decisive__gte": MIN_MAJORITY_LABELS}),
                    then=Value(label),
                )
            )
    return queryset.alias(**{name: Case(*whens, default=Value(None), output_field=CharField())})


def consensus_rule_for(dataset: Dataset, campaign: Campaign | None) -> ConsensusRule:
    """The rule in force: the campaign's when there is one, else the dataset's."""
    holder: Dataset | Campaign = dataset if campaign is None else campaign
    return ConsensusRule(holder.consensus_rule)


def dataset_consensus(
    dataset: Dataset,
    *,
    patch_ids: Sequence[int] | None = None,
    rule: ConsensusRule | None = None,
) -> dict[int, PatchConsensus]:
    """Every labelled (or adjudicated) patch of the dataset, by patch id, in two queries.

    ``rule`` None is the dataset's own rule (``dataset.consensus_rule``). A patch's labels
    are in no particular order, and the queries sort nothing: the models' default ordering
    (by dataset name, then natural key) cost a fifth of a 10,000-patch report.
    """
    rule = ConsensusRule(dataset.consensus_rule) if rule is None else ConsensusRule(rule)
    annotations = Annotation.objects.filter(patch__dataset=dataset).order_by()
    adjudications = Adjudication.objects.filter(patch__dataset=dataset).order_by()
    if patch_ids is not None:
        annotations = annotations.filter(patch_id__in=patch_ids)
        adjudications = adjudications.filter(patch_id__in=patch_ids)
    labels: dict[int, dict[int, str]] = {}
    for patch_id, annotator_id, label in annotations.values_list(
        "patch_id", "annotator_id", "label"
    ):
        labels.setdefault(patch_id, {})[annotator_id] = label
    decided = dict(adjudications.values_list("patch_id", "label"))
    return {
        patch_id: patch_consensus(patch_id, labels.get(patch_id, {}), decided.get(patch_id), rule)
        for patch_id in sorted(labels.keys() | decided.keys())
    }


def consensus_version_parts(dataset: Dataset) -> list[QuerySet]:
    """What changes whenever ``dataset_consensus`` would answer otherwise: how many labels and
    adjudications the dataset has and their newest change (a deleted one lowers the count, a
    changed one moves the date). For a reader that keeps what it computed from them, to ask
    with the rest of what it read (``sejury_web.row_versions.row_version``)."""
    labels = Annotation.objects.filter(patch__dataset=dataset)
    adjudications = Adjudication.objects.filter(patch__dataset=dataset)
    return [
        count_of(labels),
        newest(labels, "updated_at"),
        count_of(adjudications),
        newest(adjudications, "decided_at"),
    ]


def dataset_rows_parts(dataset: Dataset) -> list[QuerySet]:
    """How many patches the dataset has and their and its bugs' newest change, with its labels'
    and adjudications' (``consensus_version_parts``): what every read of its report, or of its
    adjudication queue, is computed from."""
    patches = Patch.objects.filter(dataset=dataset)
    return [
        count_of(patches),
        newest(patches, "updated_at"),
        newest(Bug.objects.filter(dataset=dataset), "updated_at"),
        *consensus_version_parts(dataset),
    ]
