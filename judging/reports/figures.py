"""The pieces every agreement report section is made of: a figure with its interval, and
the plain record of one labelled patch that the sections compute from.

Every estimated figure carries its 95% percentile bootstrap interval (``resampling``: the
report's patches resampled with a fixed seed, so a report is the same each time it is
read) and the number of patches it rests on; under ``SMALL_SAMPLE`` it says so. Counts
carry no interval: they are not estimates.
"""

import dataclasses
from collections.abc import Mapping

from judging.agreement import SMALL_SAMPLE

# Percentile intervals want a few hundred resamples; ``bench/agreement_report.py`` measures
# the report with this many at 10,000 patches. The command takes more with --resamples.
RESAMPLES = 400
LEVEL = 0.95
SEED = 0


@dataclasses.dataclass(frozen=True)
class Figure:
    """A number in a report, the patches it rests on, and its bootstrap interval."""

    value: float | None  # None when undefined (nothing to compare, a zero denominator)
    n: int
    ci: tuple[float, float] | None = None
    estimated: bool = True  # False for counts, which need no interval

    @property
    def small_sample(self) -> bool:
        return self.estimated and self.n < SMALL_SAMPLE

    @property
    def ci_lo(self) -> float | None:
        return self.ci[0] if self.ci else None

    @property
    def ci_hi(self) -> float | None:
        return self.ci[1] if self.ci else None


def count(value: int) -> Figure:
    """A count as a figure: exact, so without an interval."""
    return Figure(value, value, None, estimated=False)


@dataclasses.dataclass(frozen=True)
class Sampling:
    """How the intervals are drawn: the same for every figure of a report."""

    resamples: int = RESAMPLES
    level: float = LEVEL
    seed: int = SEED


@dataclasses.dataclass(frozen=True)
class PatchRecord:
    """One patch of the report's scope that has labels or an adjudication."""

    patch_id: int
    bug_id: int
    bug_type: str
    source: str
    labels: Mapping[int, str]  # annotator id → label, UNSURE included
    decisive: Mapping[int, str]  # the VALID and INVALID ones: UNSURE counts as missing
    consensus: str | None  # VALID, INVALID, or None while it waits for a lead
    unanimous: bool  # B_clear: at least two decisive labels, all equal, before adjudication
