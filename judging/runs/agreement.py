"""The run page's card of the judge against the humans: the run's verdicts against the human
consensus so far, the agreement report's own figures for this run.

Nothing is computed here: the card is the agreement report of the run's dataset (no
campaign: the dataset's consensus rule) with this run alone and its judge section only
(``judging.reports.selectors.agreement_report``), so its accuracy, κ and AC1, their n and
their bootstrap intervals equal the report's for the same run and labels. The report keeps
its reads and figures while the labels, adjudications, patches and the run's verdicts are
unchanged (``judging.reports.read_cache``): the card polls cheaply, one query asking whether
anything changed, and computes again only when a label (or a verdict) arrived.
"""

import dataclasses

from judging.models import JudgingRun
from judging.reports.figures import Figure
from judging.reports.humans import B_CLEAR, B_FULL
from judging.reports.judges import BenchmarkResult, JudgeColumn
from judging.reports.selectors import JUDGES, agreement_report

# The card's figures, by the report's METRICS keys, in the card's order.
CARD_METRICS = {"accuracy": "Accuracy", "kappa": "Cohen's κ", "ac1": "Gwet's AC1"}


@dataclasses.dataclass(frozen=True)
class RunAgreement:
    """The run against the human consensus on B_full (every patch with a consensus) and
    B_clear (the unanimous ones), as the report's judge section says it."""

    column: JudgeColumn
    level: float  # the intervals' confidence level

    @property
    def full(self) -> BenchmarkResult:
        return self.column.benchmarks[B_FULL]

    @property
    def clear(self) -> BenchmarkResult:
        return self.column.benchmarks[B_CLEAR]

    @property
    def figures(self) -> list[tuple[str, Figure]]:
        """(label, figure) of the card's metrics on B_full."""
        return [(label, self.full.metrics[key]) for key, label in CARD_METRICS.items()]

    @property
    def disagreements(self) -> int:
        """The verdicts B_full's consensus contradicts (false VALIDs and false INVALIDs)."""
        return self.full.confusion["fp"] + self.full.confusion["fn"]


def run_agreement(run: JudgingRun) -> RunAgreement:
    """The run's verdicts against the human consensus so far: the agreement report's judge
    column of this run (its dataset, no campaign)."""
    report = agreement_report(run.dataset, runs=[run], sections=[JUDGES])
    assert report.judges is not None  # asked for
    (column,) = report.judges
    return RunAgreement(column=column, level=report.sampling.level)
