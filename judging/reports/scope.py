"""A report's patches as arrays, and the tallies its sections compute their figures from.

``Scope`` holds a report's patches as arrays (a patch index per patch, a row per label),
built from a report's read (``Scope.of_columns``) or from a ``PatchRecord`` list, and
answers, for a set of patches given as a boolean mask, the count tables of ``vectorized``
for every replicate of ``resampling``: label profiles, confusion tables of
each annotator against the consensus, of each annotator pair, of a judge against the
consensus or against each annotator. Subsets are masks; nothing loops over patches in
Python after the arrays are built.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from judging.consensus.rules import (
    MAJORITY_SHARE,
    MIN_DECISIVE_LABELS,
    MIN_MAJORITY_LABELS,
    ConsensusRule,
)
from judging.models import Label
from judging.reports.figures import Figure, PatchRecord
from judging.reports.resampling import IntArray, Replicates
from judging.reports.vectorized import Array, confusion_cell, pairs_within_runs

Mask = np.ndarray[Any, np.dtype[np.bool_]]
T = TypeVar("T")
NO_CONSENSUS, INVALID, VALID = -1, 0, 1
CODES: dict[str, int] = {Label.VALID: 0, Label.INVALID: 1, Label.UNSURE: 2}


def consensus_columns(
    valid: IntArray, invalid: IntArray, adjudicated: np.ndarray, rule: ConsensusRule
) -> tuple[np.ndarray, Mask]:
    """``judging.consensus.rules.patch_consensus`` over arrays: per patch, from its decisive
    labels (``valid`` and ``invalid`` counts) and a lead's label (``adjudicated``: ``VALID``,
    ``INVALID`` or ``NO_CONSENSUS`` for none), its consensus (the same codes) and whether it
    is unanimous (``PatchConsensus.is_unanimous``). The same rule, for a report's 10,000
    patches at once: ``tests/judging/reports/test_scope.py`` checks every count against it."""
    decisive = valid + invalid
    agreed = (decisive >= MIN_DECISIVE_LABELS) & ((valid == 0) | (invalid == 0))
    agreed_code = np.where(invalid == 0, VALID, INVALID)
    consensus = np.where(agreed, agreed_code, NO_CONSENSUS)
    if rule == ConsensusRule.MAJORITY:
        # Two thirds of three or more: never a tie, so the larger count is the label.
        numerator, denominator = MAJORITY_SHARE
        majority = (
            ~agreed
            & (decisive >= MIN_MAJORITY_LABELS)
            & (np.maximum(valid, invalid) * denominator >= numerator * decisive)
        )
        consensus = np.where(majority, np.where(valid > invalid, VALID, INVALID), consensus)
    decided = adjudicated != NO_CONSENSUS
    consensus = np.where(decided, adjudicated, consensus).astype(np.int8)
    unanimous = np.where(decided, agreed & (agreed_code == adjudicated), agreed)
    return consensus, unanimous


class Scope:
    """The patches of one report, as arrays over patch indices 0 … N − 1 (ascending patch id
    in a report's read; record order from ``PatchRecord`` lists)."""

    def __init__(self, records: Sequence[PatchRecord], replicates: Replicates) -> None:
        """The scope of ``records`` (each with its labels and consensus)."""
        label_patch: list[int] = []
        label_annotator: list[int] = []
        label_code: list[int] = []
        for index, record in enumerate(records):
            for annotator, label in sorted(record.labels.items()):
                label_patch.append(index)
                label_annotator.append(annotator)
                label_code.append(CODES[label])
        self._build(
            patch_ids=np.array([record.patch_id for record in records], np.int64),
            bug_ids=np.array([record.bug_id for record in records], np.int64),
            groups={
                "bug_type": [record.bug_type for record in records],
                "source": [record.source for record in records],
            },
            consensus=np.array(
                [
                    (VALID if record.consensus == Label.VALID else INVALID)
                    if record.consensus
                    else NO_CONSENSUS
                    for record in records
                ],
                np.int8,
            ),
            unanimous=np.array([record.unanimous for record in records], bool),
            label_patch=np.array(label_patch, np.int64),
            label_annotator=np.array(label_annotator, np.int64),
            label_code=np.array(label_code, np.int64),
            replicates=replicates,
        )

    @classmethod
    def of_columns(
        cls,
        *,
        patch_ids: IntArray,
        bug_ids: IntArray,
        groups: dict[str, list[str]],
        consensus: np.ndarray,
        unanimous: Mask,
        label_patch: IntArray,
        label_annotator: IntArray,
        label_code: IntArray,
        replicates: Replicates,
    ) -> "Scope":
        """The scope of patches given as columns: per patch its id, bug id, the breakdowns'
        values (``groups``: bug type and source), its consensus (``VALID``, ``INVALID`` or
        ``NO_CONSENSUS``) and unanimity; per label its patch index, annotator id and code
        (``CODES``), sorted by patch index then annotator id. What a report's read builds,
        without an object per patch."""
        scope = cls.__new__(cls)
        scope._build(
            patch_ids=patch_ids,
            bug_ids=bug_ids,
            groups=groups,
            consensus=consensus,
            unanimous=unanimous,
            label_patch=label_patch,
            label_annotator=label_annotator,
            label_code=label_code,
            replicates=replicates,
        )
        return scope

    def _build(
        self,
        *,
        patch_ids: IntArray,
        bug_ids: IntArray,
        groups: dict[str, list[str]],
        consensus: np.ndarray,
        unanimous: Mask,
        label_patch: IntArray,
        label_annotator: IntArray,
        label_code: IntArray,
        replicates: Replicates,
    ) -> None:
        size = len(patch_ids)
        if replicates.patches != size:
            raise ValueError("Scope: the replicates draw from another number of patches")
        self.replicates = replicates
        self.patch_ids: IntArray = patch_ids
        self.bug_ids: IntArray = bug_ids
        self.groups = groups
        self.consensus = consensus
        self.unanimous = unanimous
        self.label_patch: IntArray = label_patch
        self.label_code: IntArray = label_code
        self.annotators: IntArray = np.unique(label_annotator)  # ids; labels hold positions
        self.label_annotator: IntArray = np.searchsorted(self.annotators, label_annotator)
        self.labelled: Mask = np.bincount(self.label_patch, minlength=size) > 0
        self.with_consensus: Mask = self.consensus != NO_CONSENSUS
        decisive = self.label_code < 2
        self.decisive_patch = self.label_patch[decisive]
        self.decisive_annotator = self.label_annotator[decisive]
        self.decisive_invalid = self.label_code[decisive] == 1
        self.valid = np.bincount(self.decisive_patch[~self.decisive_invalid], minlength=size)
        self.invalid = np.bincount(self.decisive_patch[self.decisive_invalid], minlength=size)
        self._memo: dict[tuple[str, bytes], Any] = {}
        self._consensus_labels: dict[int, str] | None = None

    def __len__(self) -> int:
        return len(self.patch_ids)

    def mask(self, patch_ids: set[int] | frozenset[int] | Mapping[int, Any]) -> Mask:
        """The patches whose id is in ``patch_ids``."""
        wanted = np.fromiter(patch_ids, np.int64, count=len(patch_ids))
        return np.isin(self.patch_ids, wanted)

    def consensus_labels(self) -> dict[int, str]:
        """Patch id → its consensus label, for the patches that have one: built once (valid@k
        and the corrected rate both ask), so not to be changed by the caller."""
        if self._consensus_labels is None:
            labels = {VALID: Label.VALID.value, INVALID: Label.INVALID.value}
            self._consensus_labels = {
                patch_id: labels[code]
                for patch_id, code in zip(
                    self.patch_ids.tolist(), self.consensus.tolist(), strict=True
                )
                if code != NO_CONSENSUS
            }
        return self._consensus_labels

    def ids(self, indices: IntArray) -> list[int]:
        """The patch ids at ``indices``."""
        result: list[int] = self.patch_ids[indices].tolist()
        return result

    def figure(self, values: Array, n: int, *, items: int | None = None) -> Figure:
        return self.replicates.figure(values, n, items=items)

    def figures(
        self, values: Array, ns: list[int], *, items: list[int] | None = None
    ) -> list[Figure]:
        return self.replicates.figures(values, ns, items=items)

    def tally(self, patches: IntArray, columns: IntArray, size: int) -> Array:
        return self.replicates.tally(patches, columns, size)

    # Patch-level tables.

    def flag_counts(self, mask: Mask, flag: np.ndarray) -> Array:
        """(R + 1, 2): the patches of ``mask`` without and with ``flag``."""
        members = np.flatnonzero(mask)
        return self.tally(members, np.asarray(flag, np.int64)[members], 2)

    def profiles(self, mask: Mask) -> Array:
        """(R + 1, M + 1, M + 1): patches of ``mask`` with v VALID and u INVALID labels."""
        members = np.flatnonzero(mask)
        largest = int(max(self.valid.max(initial=0), self.invalid.max(initial=0)))
        side = largest + 1
        columns = self.valid[members] * side + self.invalid[members]
        return self.tally(members, columns, side * side).reshape(
            self.replicates.resamples + 1, side, side
        )

    def consensus_cells(self, mask: Mask, verdict_invalid: np.ndarray) -> Array:
        """(R + 1, 4): a judge's verdicts against the consensus on the patches of ``mask``
        (which must all have both); ``verdict_invalid`` is indexed by patch."""
        members = np.flatnonzero(mask)
        cells = confusion_cell(verdict_invalid[members], self.consensus[members] == INVALID)
        return self.tally(members, cells, 4)

    # Label-level tables: one entry per decisive label.

    def annotator_consensus_cells(
        self, mask: Mask, group: IntArray | None = None, groups: int = 1
    ) -> Array:
        """(R + 1, A, 4): each annotator's labels against the consensus on ``mask``'s
        patches that have one, annotators in ``self.annotators`` order; with each patch's
        ``group`` (of ``groups``), (R + 1, groups, A, 4): each group's apart."""
        chosen = (mask & self.with_consensus)[self.decisive_patch]
        patches = self.decisive_patch[chosen]
        cells = confusion_cell(self.decisive_invalid[chosen], self.consensus[patches] == INVALID)
        columns = self.decisive_annotator[chosen] * 4 + cells
        width = len(self.annotators) * 4
        shape = (self.replicates.resamples + 1, len(self.annotators), 4)
        if group is None:
            return self.tally(patches, columns, width).reshape(shape)
        columns += group[patches] * width
        tallied = self.tally(patches, columns, groups * width)
        return tallied.reshape(shape[0], groups, *shape[1:])

    def judge_annotator_cells(self, mask: Mask, verdict_invalid: np.ndarray) -> Array:
        """(R + 1, A, 4): a judge's verdict (first) against each annotator's label (second)
        on ``mask``'s patches."""
        chosen = mask[self.decisive_patch]
        patches = self.decisive_patch[chosen]
        cells = confusion_cell(verdict_invalid[patches], self.decisive_invalid[chosen])
        columns = self.decisive_annotator[chosen] * 4 + cells
        return self.tally(patches, columns, len(self.annotators) * 4).reshape(
            self.replicates.resamples + 1, len(self.annotators), 4
        )

    def memo(self, name: str, mask: Mask, compute: Callable[[], T]) -> T:
        """``compute()``, once per name and set of patches: the human section and every
        run's RQ2 usually ask for the same annotator pairs on the same patches."""
        key = (name, np.packbits(mask).tobytes() + len(mask).to_bytes(8, "big"))
        if key not in self._memo:
            self._memo[key] = compute()
        result: T = self._memo[key]
        return result

    def pair_cells(self, mask: Mask) -> tuple[list[tuple[int, int]], Array]:
        """Every annotator pair sharing a decisive patch of ``mask``, as (id, id) with the
        smaller first, and (R + 1, pairs, 4): the first's label against the second's."""
        return self.memo("pair_cells", mask, lambda: self._pair_cells(mask))

    def _pair_cells(self, mask: Mask) -> tuple[list[tuple[int, int]], Array]:
        chosen = np.flatnonzero(mask[self.decisive_patch])  # rows sorted by patch, annotator
        firsts, seconds = pairs_within_runs(self.decisive_patch[chosen])
        if not len(firsts):
            return [], np.zeros((self.replicates.resamples + 1, 0, 4))
        first, second = chosen[firsts], chosen[seconds]
        size = len(self.annotators)
        codes = self.decisive_annotator[first] * size + self.decisive_annotator[second]
        used, pair_index = np.unique(codes, return_inverse=True)
        cells = confusion_cell(self.decisive_invalid[first], self.decisive_invalid[second])
        counts = self.tally(self.decisive_patch[first], pair_index * 4 + cells, len(used) * 4)
        pairs = [
            (int(self.annotators[code // size]), int(self.annotators[code % size])) for code in used
        ]
        return pairs, counts.reshape(self.replicates.resamples + 1, len(used), 4)

    def label_counts(self, mask: Mask) -> dict[str, int]:
        """How many VALID, INVALID and UNSURE labels ``mask``'s patches have."""
        counts = np.bincount(self.label_code[mask[self.label_patch]], minlength=3)
        return {label: int(counts[code]) for label, code in CODES.items()}

    def annotator_label_counts(self, mask: Mask) -> tuple[IntArray, IntArray]:
        """Per annotator (``self.annotators`` order): labels on ``mask``'s patches, UNSURE."""
        chosen = mask[self.label_patch]
        size = len(self.annotators)
        given = np.bincount(self.label_annotator[chosen], minlength=size)
        unsure = np.bincount(self.label_annotator[chosen & (self.label_code == 2)], minlength=size)
        return given, unsure
