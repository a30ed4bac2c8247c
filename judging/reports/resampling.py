"""The bootstrap of an agreement report as one matrix.

A report's intervals come from resampling its patches with replacement: replicate r draws
N patches out of the N in scope, and every figure of the report is computed again on what
was drawn (a patch drawn twice counts twice, in every figure it belongs to). The draws are
one index matrix (``resamples`` × N, from one seeded numpy ``Generator``), kept as how many
times each replicate drew each patch. Row 0 is the data itself (every patch once), so the
point estimate and the intervals come out of the same arithmetic.

A figure's sums over its patches are then one sparse product with that matrix: the cost is
(labels or pairs counted) × replicates, never a Python loop over resamples × patches.
"""

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse

from judging.reports.figures import Figure, Sampling
from judging.reports.vectorized import Array

IntArray = np.ndarray[Any, np.dtype[np.int64]]
# A tally of up to this many entries is summed from rows rather than by a sparse product.
FEW_ENTRIES = 512


class Replicates:
    """How many times each replicate drew each patch: ``by_patch[i, r]``; column 0 is 1."""

    def __init__(self, by_patch: np.ndarray, level: float) -> None:
        self.by_patch = by_patch
        self.level = level

    @property
    def patches(self) -> int:
        return int(self.by_patch.shape[0])

    @property
    def resamples(self) -> int:
        return int(self.by_patch.shape[1]) - 1

    @classmethod
    def draw(cls, patches: int, sampling: Sampling) -> "Replicates":
        """``sampling.resamples`` resamples of ``patches`` patches, seeded by ``sampling.seed``."""
        rng = np.random.default_rng(sampling.seed)
        indices = rng.integers(0, max(patches, 1), size=(sampling.resamples, patches))
        return cls.from_indices(indices, patches, level=sampling.level)

    @classmethod
    def from_indices(cls, indices: IntArray, patches: int, *, level: float) -> "Replicates":
        """The replicates of an index matrix: row r lists the patches resample r drew."""
        resamples = len(indices)
        by_patch = np.ones((patches, resamples + 1), dtype=np.float32)
        if patches and resamples:
            # One resample's counts at a time, in its own row (a patch-major scatter over all
            # of them at once misses the cache on every entry: 5 times slower at 10,000
            # patches), then turned into columns in one copy.
            counts = np.empty((resamples, patches), dtype=np.float32)
            for resample, row in enumerate(np.asarray(indices, np.int64)):
                counts[resample] = np.bincount(row, minlength=patches)
            by_patch[:, 1:] = counts.T
        return cls(by_patch, level)

    def tally(self, patches: IntArray, columns: IntArray, size: int) -> Array:
        """For every replicate, how many of the entries fall in each column: entry j belongs
        to patch ``patches[j]`` and counts in ``columns[j]``. Shape (R + 1, size).

        Counts are whole numbers below 2²⁴, exact in float32 (half the memory traffic), so
        every order of adding gives the same sums: a few entries are summed from their
        patches' rows (building a sparse matrix costs more than that), many by a sparse
        product. The product's matrix is stored by patch (CSC): it walks ``by_patch`` once,
        in order, adding each patch's row to the sums of its columns. Stored by column
        (CSR), it went through ``by_patch`` once per column, jumping from row to row: twice
        the time for the dimension pairs' tables at 10,000 patches.
        """
        patches, columns = np.asarray(patches, np.int64), np.asarray(columns, np.int64)
        if len(patches) > FEW_ENTRIES:
            matrix = sparse.csc_array(
                (np.ones(len(patches), np.float32), (columns, patches)),
                shape=(size, self.patches),
            )
            return np.asarray(matrix @ self.by_patch, dtype=np.float64).T
        result = np.zeros((self.by_patch.shape[1], size))
        if len(patches):
            order = np.argsort(columns, kind="stable")
            ordered = columns[order]
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
            sums = np.add.reduceat(self.by_patch[patches[order]], starts, axis=0)
            result[:, ordered[starts]] = sums.T
        return result

    def as_tallied(self, counts: Array, entries: int) -> Array:
        """``counts`` (R + 1, size) of whole numbers, laid out in memory as ``tally`` lays out
        a tally of ``entries`` entries (by column past ``FEW_ENTRIES``, by row up to it): what
        is computed from it afterwards adds in the same order, to the bit."""
        if entries > FEW_ENTRIES:
            by_column = np.empty((counts.shape[1], counts.shape[0]))
            by_column[...] = counts.T
            return by_column.T
        return np.array(counts, dtype=np.float64, order="C")

    def figures(
        self, values: Array, ns: Sequence[int], *, items: Sequence[int] | None = None
    ) -> list[Figure]:
        """``figure`` for each column of ``values`` (R + 1, K), column k resting on ns[k]
        things (and items[k], default ns[k], for whether it has an interval): the
        percentiles of every column at once."""
        tail = (1.0 - self.level) / 2.0 * 100.0
        lows, highs = percentiles(values[1:], (tail, 100.0 - tail)).tolist()
        points = np.asarray(values[0], np.float64).tolist()  # plain floats: one pass
        figures = []
        for column, (n, count) in enumerate(zip(ns, ns if items is None else items, strict=True)):
            point = points[column]
            if not math.isfinite(point):
                figures.append(Figure(None, n))
                continue
            low = lows[column]
            ci = (low, highs[column]) if count >= 2 and math.isfinite(low) else None
            figures.append(Figure(point, n, ci))
        return figures

    def figure(self, values: Array, n: int, *, items: int | None = None) -> Figure:
        """The figure whose replicate values are ``values``: row 0 is its value, the
        percentile interval of the defined others its interval. ``items`` (default ``n``)
        is how many things it rests on: under two, no interval."""
        (figure,) = self.figures(values[:, None], [n], items=None if items is None else [items])
        return figure


def percentiles(values: Array, qs: Sequence[float]) -> Array:
    """(len(qs), K): each column's percentiles over its finite values, nan for none.

    numpy's default ("linear") method, column by column at once: the same virtual index
    n·q + (1 − q) − 1 and interpolation as ``np.percentile`` on the defined values (equal
    to its result up to the last bit or two of rounding).
    """
    ordered = np.sort(np.where(np.isfinite(values), values, np.nan), axis=0)  # nan last
    defined = np.isfinite(values).sum(axis=0)
    columns = np.arange(values.shape[1])
    top = np.maximum(defined - 1, 0)
    result = np.full((len(qs), values.shape[1]), np.nan)
    for row, q in enumerate(qs):
        quantile = q / 100.0
        virtual = defined * quantile + (1 - quantile) - 1  # numpy's, with α = β = 1
        previous = np.floor(virtual)
        gamma = virtual - previous
        low = ordered[np.clip(previous, 0, top).astype(np.int64), columns]
        high = ordered[np.clip(previous + 1, 0, top).astype(np.int64), columns]
        difference = high - low
        value = np.where(gamma >= 0.5, high - difference * (1 - gamma), low + difference * gamma)
        result[row] = np.where(defined > 0, value, np.nan)
    return result
