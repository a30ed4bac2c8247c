"""Why passing patches were rejected (paper 004 §7), per patch source: the themes that
``judging.runs.rejections`` gave the justifications of the test-passing patches a run found
INVALID, counted by source, with a few examples per theme. Pure: computed from plain values.

The run is the one whose verdicts stand in for valid@k where humans gave none (the report's
first run). A patch counts when it is in the report's scope, passes its tests
(``tests_pass`` true) and has the run's verdict INVALID; a theme counts when such a patch's
row is sorted (a row left from before a re-judge flipped the verdict is ignored). A theme's
share is of the sorted patches of its column (a source, or every source).
"""

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from judging.models import Label, RejectionTheme
from judging.reports.judges import RunVerdicts
from judging.reports.valid_at_k import NO_SOURCE, Candidate
from judging.runs.rejections import PROMPT_VERSION

EXAMPLES = 3  # per theme
THEMES = RejectionTheme.Theme
ALL_SOURCES = "All sources"


class ThemeRecord(NamedTuple):
    """One row of ``RejectionTheme`` as the report reads it: ``values_list`` of
    ``ROW_FIELDS`` fits as it is."""

    row_id: int
    judgment_id: int
    patch_id: int
    patch_key: str
    bug_key: str
    status: str
    theme: str
    prompt_version: str
    is_offline: bool


ROW_FIELDS = (
    "id",
    "judgment_id",
    "judgment__patch_id",
    "judgment__patch__key",
    "judgment__patch__bug__key",
    "status",
    "theme",
    "prompt_version",
    "is_offline",
)


@dataclasses.dataclass(frozen=True)
class ThemeCell:
    patches: int
    share: float | None  # of the column's sorted patches; None when it has none

    @property
    def percent(self) -> str:
        """The share as the page shows it ("60.6%"); "" without one."""
        return "" if self.share is None else f"{self.share:.1%}"


@dataclasses.dataclass(frozen=True)
class ThemeRow:
    theme: str
    label: str
    total: ThemeCell  # every source
    cells: list[tuple[str, ThemeCell]]  # per source, in the order of ``sources``


@dataclasses.dataclass(frozen=True)
class ThemeExample:
    """A sorted patch to open; the texts are read for the examples only."""

    row_id: int
    judgment_id: int
    patch_key: str
    bug_key: str
    source: str
    is_offline: bool
    rationale: str = ""
    justification: str = ""
    strategy: str = ""


@dataclasses.dataclass(frozen=True)
class RejectionThemes:
    run: RunVerdicts
    prompt_version: str  # today's; ``prompt_versions`` are those the sorted rows used
    prompt_versions: list[str]
    sources: list[str]
    rejected: int  # test-passing patches in scope the run found INVALID
    rejected_by_source: list[int]  # per source, in the order of ``sources``
    sorted: int
    sorted_by_source: list[int]
    failed: int
    pending: int
    offline: int  # sorted by the offline heuristic
    rows: list[ThemeRow]  # one per theme, in the paper's order
    examples: list[tuple[str, str, list[ThemeExample]]]  # (theme, label, up to EXAMPLES)
    requested: bool  # the run has any row: a lead asked for the sorting once

    @property
    def unsorted(self) -> int:
        """Never asked for (or asked for before the run's verdict flipped)."""
        return self.rejected - self.sorted - self.failed - self.pending

    def example_ids(self) -> list[int]:
        return [example.row_id for _, _, examples in self.examples for example in examples]


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def rejected_sources(run: RunVerdicts, candidates: Iterable[Candidate]) -> dict[int, str]:
    """The test-passing patches of ``candidates`` (the report's scope) that ``run`` judged
    INVALID: patch id → source. What ``rejection_themes`` counts; it changes only with the
    scope or the verdicts, so a reader may keep it while the sorting goes on."""
    source_of: dict[int, str] = {}
    for candidate in map(Candidate._make, candidates):
        if candidate.tests_pass is True and run.verdicts.get(candidate.patch_id) == Label.INVALID:
            source_of[candidate.patch_id] = candidate.source or NO_SOURCE
    return source_of


def rejection_themes(
    run: RunVerdicts, source_of: Mapping[int, str], records: Iterable[Sequence[object]]
) -> RejectionThemes:
    """The themes × sources table of ``run`` over its rejected test-passing patches
    (``source_of``, from ``rejected_sources``), from ``records`` (every ``RejectionTheme`` row
    of the run, as ``ThemeRecord``s)."""
    rows = [ThemeRecord._make(record) for record in records]
    kept = sorted(
        (row for row in rows if row.patch_id in source_of),
        key=lambda row: (row.patch_key, row.row_id),
    )
    done = [row for row in kept if row.status == RejectionTheme.Status.DONE and row.theme]
    sources = sorted(set(source_of.values()))
    rejected = Counter(source_of.values())
    by_source = Counter(source_of[row.patch_id] for row in done)
    counts = Counter((row.theme, source_of[row.patch_id]) for row in done)
    themes = Counter(row.theme for row in done)
    table = [
        ThemeRow(
            theme=theme,
            label=label,
            total=ThemeCell(themes[theme], _share(themes[theme], len(done))),
            cells=[
                (
                    source,
                    ThemeCell(
                        counts[theme, source], _share(counts[theme, source], by_source[source])
                    ),
                )
                for source in sources
            ],
        )
        for theme, label in THEMES.choices
    ]
    examples = []
    for theme, label in THEMES.choices:
        chosen = [row for row in done if row.theme == theme][:EXAMPLES]
        if chosen:
            examples.append(
                (
                    theme,
                    label,
                    [
                        ThemeExample(
                            row_id=row.row_id,
                            judgment_id=row.judgment_id,
                            patch_key=row.patch_key,
                            bug_key=row.bug_key,
                            source=source_of[row.patch_id],
                            is_offline=row.is_offline,
                        )
                        for row in chosen
                    ],
                )
            )
    return RejectionThemes(
        run=run,
        prompt_version=PROMPT_VERSION,
        prompt_versions=sorted({row.prompt_version for row in done}),
        sources=sources,
        rejected=len(source_of),
        rejected_by_source=[rejected[source] for source in sources],
        sorted=len(done),
        sorted_by_source=[by_source[source] for source in sources],
        failed=sum(row.status == RejectionTheme.Status.FAILED for row in kept),
        pending=sum(row.status == RejectionTheme.Status.PENDING for row in kept),
        offline=sum(row.is_offline for row in done),
        rows=table,
        examples=examples,
        requested=bool(rows),
    )


def with_texts(themes: RejectionThemes, texts: dict[int, tuple[str, str, str]]) -> RejectionThemes:
    """``themes`` with its examples' rationale, justification and member, by row id."""
    examples = [
        (
            theme,
            label,
            [
                dataclasses.replace(
                    example,
                    rationale=texts.get(example.row_id, ("", "", ""))[0],
                    justification=texts.get(example.row_id, ("", "", ""))[1],
                    strategy=texts.get(example.row_id, ("", "", ""))[2],
                )
                for example in chosen
            ],
        )
        for theme, label, chosen in themes.examples
    ]
    return dataclasses.replace(themes, examples=examples)
