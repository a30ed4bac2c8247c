"""The human consensus on each patch: unanimous labels, or a lead's adjudication.

A patch's labels are *unanimous* when at least two annotators gave a decisive label (VALID
or INVALID; UNSURE counts as no label, as in the agreement statistics) and all of them
agree. Its consensus is then that label, with nothing recorded. Any other patch with labels
(annotators who disagree, or fewer than two decisive labels) waits for a lead, whose
``Adjudication`` is its consensus from then on. B_full is every patch with a consensus,
B_clear the unanimous ones (paper 004, Table 5).
"""

import dataclasses
from collections.abc import Iterable, Sequence
from enum import StrEnum

from judging.models import Adjudication, Annotation, Label
from rubrics.models import Dataset

MIN_DECISIVE_LABELS = 2


class State(StrEnum):
    UNANIMOUS = "unanimous"  # consensus from the labels
    ADJUDICATED = "adjudicated"  # consensus from a lead
    DISPUTED = "disputed"  # decisive labels disagree; waits for a lead
    TOO_FEW = "too_few"  # fewer than two decisive labels; waits for labels or a lead


@dataclasses.dataclass(frozen=True)
class PatchConsensus:
    patch_id: int
    labels: dict[int, str]  # annotator id → label, UNSURE included
    state: State
    consensus: str | None  # VALID, INVALID, or None while it waits

    @property
    def decisive(self) -> dict[int, str]:
        """The VALID and INVALID labels by annotator id: UNSURE counts as no label."""
        return {
            annotator: label for annotator, label in self.labels.items() if label != Label.UNSURE
        }

    @property
    def is_unanimous(self) -> bool:
        """In B_clear: the decisive labels agree, and the consensus is their label.

        An adjudicated patch whose labels became unanimous later (an annotator changed their
        label while the campaign was open) counts only if the lead's label is theirs.
        """
        return (
            self.consensus is not None and unanimous_label(self.labels.values()) == self.consensus
        )


def unanimous_label(labels: Iterable[str]) -> str | None:
    """The label every decisive label agrees on, if there are at least two; otherwise None."""
    decisive = [label for label in labels if label != Label.UNSURE]
    if len(decisive) >= MIN_DECISIVE_LABELS and len(set(decisive)) == 1:
        return decisive[0]
    return None


def patch_consensus(
    patch_id: int, labels: dict[int, str], adjudicated: str | None
) -> PatchConsensus:
    """The consensus of one patch from its labels and its adjudication (if any)."""
    if adjudicated:
        return PatchConsensus(patch_id, labels, State.ADJUDICATED, adjudicated)
    if agreed := unanimous_label(labels.values()):
        return PatchConsensus(patch_id, labels, State.UNANIMOUS, agreed)
    decisive = {label for label in labels.values() if label != Label.UNSURE}
    state = State.DISPUTED if len(decisive) > 1 else State.TOO_FEW
    return PatchConsensus(patch_id, labels, state, None)


def dataset_consensus(
    dataset: Dataset, *, patch_ids: Sequence[int] | None = None
) -> dict[int, PatchConsensus]:
    """Every labelled (or adjudicated) patch of the dataset, by patch id, in two queries."""
    annotations = Annotation.objects.filter(patch__dataset=dataset)
    adjudications = Adjudication.objects.filter(patch__dataset=dataset)
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
        patch_id: patch_consensus(patch_id, labels.get(patch_id, {}), decided.get(patch_id))
        for patch_id in sorted(labels.keys() | decided.keys())
    }
