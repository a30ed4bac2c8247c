"""A report's patches as arrays, and the tallies its sections compute their figures from.

``Scope`` turns the ``PatchRecord`` list into arrays once (a patch index per record, a row
per label) and answers, for a set of patches given as a boolean mask, the count tables of
``vectorized`` for every replicate of ``resampling``: label profiles, confusion tables of
each annotator against the consensus, of each annotator pair, of a judge against the
consensus or against each annotator. Subsets are masks; nothing loops over patches in
Python after the arrays are built.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from judging.models import Label
from judging.reports.figures import Figure, PatchRecord
from judging.reports.resampling import IntArray, Replicates
from judging.reports.vectorized import Array, confusion_cell

Mask = np.ndarray[Any, np.dtype[np.bool_]]
T = TypeVar("T")
NO_CONSENSUS, INVALID, VALID = -1, 0, 1
CODES: dict[str, int] = {Label.VALID: 0, Label.INVALID: 1, Label.UNSURE: 2}


class Scope:
    """The records of one report, as arrays over patch indices 0 … N − 1 (record order)."""

    def __init__(self, records: Sequence[PatchRecord], replicates: Replicates) -> None:
        if replicates.patches != len(records):
            raise ValueError("Scope: the replicates draw from another number of patches")
        self.records = list(records)
        self.replicates = replicates
        size = len(records)
        self.consensus = np.full(size, NO_CONSENSUS, np.int8)
        self.unanimous = np.zeros(size, bool)
        label_patch: list[int] = []
        label_annotator: list[int] = []
        label_code: list[int] = []
        for index, record in enumerate(records):
            if record.consensus:
                self.consensus[index] = VALID if record.consensus == Label.VALID else INVALID
            self.unanimous[index] = record.unanimous
            for annotator, label in sorted(record.labels.items()):
                label_patch.append(index)
                label_annotator.append(annotator)
                label_code.append(CODES[label])
        self.label_patch: IntArray = np.array(label_patch, np.int64)
        self.label_code: IntArray = np.array(label_code, np.int64)
        ids = np.array(label_annotator, np.int64)
        self.annotators: IntArray = np.unique(ids)  # ids, ascending; labels hold positions
        self.label_annotator: IntArray = np.searchsorted(self.annotators, ids)
        self.labelled: Mask = np.bincount(self.label_patch, minlength=size) > 0
        self.with_consensus: Mask = self.consensus != NO_CONSENSUS
        decisive = self.label_code < 2
        self.decisive_patch = self.label_patch[decisive]
        self.decisive_annotator = self.label_annotator[decisive]
        self.decisive_invalid = self.label_code[decisive] == 1
        self.valid = np.bincount(self.decisive_patch[~self.decisive_invalid], minlength=size)
        self.invalid = np.bincount(self.decisive_patch[self.decisive_invalid], minlength=size)
        self._memo: dict[tuple[str, bytes], Any] = {}

    def __len__(self) -> int:
        return len(self.records)

    def mask(self, patch_ids: set[int] | frozenset[int] | Mapping[int, Any]) -> Mask:
        """The patches whose id is in ``patch_ids``."""
        return np.array([record.patch_id in patch_ids for record in self.records], bool)

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

    def annotator_consensus_cells(self, mask: Mask) -> Array:
        """(R + 1, A, 4): each annotator's labels against the consensus on ``mask``'s
        patches that have one, annotators in ``self.annotators`` order."""
        chosen = (mask & self.with_consensus)[self.decisive_patch]
        patches = self.decisive_patch[chosen]
        cells = confusion_cell(self.decisive_invalid[chosen], self.consensus[patches] == INVALID)
        columns = self.decisive_annotator[chosen] * 4 + cells
        return self.tally(patches, columns, len(self.annotators) * 4).reshape(
            self.replicates.resamples + 1, len(self.annotators), 4
        )

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
        patches = self.decisive_patch[chosen]
        starts: IntArray = np.flatnonzero(np.r_[True, patches[1:] != patches[:-1]])
        lengths: IntArray = np.diff(np.r_[starts, len(chosen)])
        firsts, seconds = [], []
        for length in np.unique(lengths):
            if length < 2:
                continue
            group = starts[lengths == length]
            upper = np.triu_indices(int(length), k=1)
            firsts.append((group[:, None] + upper[0]).ravel())
            seconds.append((group[:, None] + upper[1]).ravel())
        if not firsts:
            return [], np.zeros((self.replicates.resamples + 1, 0, 4))
        first = chosen[np.concatenate(firsts)]
        second = chosen[np.concatenate(seconds)]
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
