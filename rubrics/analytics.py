"""Edit analytics of rubrics: how far reviewers moved the LLM drafts (paper 004, §4.2.1, §5.1).

The metrics are pure functions over texts; ``dataset_rubric_report`` is the one read of the
database, shaped for the report page and the ``rubric_report`` command.

- Edit distance: character-level Levenshtein distance between the draft (revision 0) and a
  later revision, absolute and normalized by the draft's length.
- Edit types: ``addition``, ``deletion``, ``modification``, from a line-level diff of the
  draft and the revision.
- The report: modification rate, draft lengths, edit distances over the golden rubrics (an
  unmodified golden rubric counts as 0, as in the paper), edit-type and theme counts, and
  the CDF of normalized edit distance (Figure 2). With no golden rubric, every statistic
  over golden rubrics is ``None`` (not NaN: the report is also JSON) and the CDF is empty.
"""

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from itertools import groupby
from typing import Any, NamedTuple

import Levenshtein
from django.db.models import F, Q

from .models import Dataset, Rubric, RubricRevision, Theme

ADDITION, DELETION, MODIFICATION = "addition", "deletion", "modification"
EDIT_TYPES = (ADDITION, DELETION, MODIFICATION)

EMPTY_DRAFT = "{function}: the draft is empty, there is no length to normalize by"
UNKNOWN_VARIANT = "dataset_rubric_report: unknown variant {variant!r}"
NO_GOLDEN_RUBRICS = "no golden rubrics yet"


# -- metrics of one revision ----------------------------------------------------------------


def edit_distance(draft: str, revision: str) -> int:
    """Character-level Levenshtein distance: insertions, deletions, substitutions."""
    return int(Levenshtein.distance(draft, revision))


def normalized_edit_distance(draft: str, revision: str) -> float:
    """``Levenshtein(draft, revision) / len(draft)``; above 1 when the revision grew a lot.

    An empty draft has no length to normalize by: ``ValueError`` (``EMPTY_DRAFT``). Stored
    drafts are never empty (``structure_normalize`` refuses an empty rubric).
    """
    if not draft:
        raise ValueError(EMPTY_DRAFT.format(function="normalized_edit_distance"))
    return edit_distance(draft, revision) / len(draft)


def edit_types(draft: str, revision: str) -> set[str]:
    """The kinds of edit between two texts, from a diff of their lines.

    ``Levenshtein.opcodes`` over the lines (line endings ignored), read block by block, a
    block being a run of lines between two unchanged ones (a run of non-equal opcodes): a
    block that only inserts lines is an addition, one that only deletes lines a deletion,
    one that has lines on both sides a modification. A changed line is a modification, not
    a deletion plus an addition. Identical texts, or texts that differ only in line endings,
    give the empty set.

    Blocks, not opcodes: Levenshtein writes a block of two lines replaced by one as a
    ``replace`` and a ``delete`` in whichever order its tie-breaking picks; as a block it is
    one modification, as it was when this read the standard library's SequenceMatcher. Where
    the two still differ is the alignment: Levenshtein's edit script is minimal and a line
    substituted for another costs 1 where a deletion plus an insertion costs 2, so a line
    deleted and another added with no more unchanged lines between them than the shorter of
    the two runs is long (``a b`` → ``b c``: 2 substitutions, or 1 deletion + 1 insertion)
    may come out as one modification where SequenceMatcher matched the unchanged line in
    between: a deletion and an addition.
    """
    kinds: set[str] = set()
    opcodes = Levenshtein.opcodes(draft.splitlines(), revision.splitlines())
    for changed, run in groupby(opcodes, key=lambda opcode: opcode[0] != "equal"):
        if changed:
            block = list(run)
            deletes = any(i2 > i1 for _, i1, i2, _, _ in block)
            inserts = any(j2 > j1 for _, _, _, j1, j2 in block)
            kinds.add(MODIFICATION if deletes and inserts else DELETION if deletes else ADDITION)
    return kinds


@dataclass(frozen=True)
class RevisionMetrics:
    """How a revision differs from its rubric's draft."""

    distance: int
    normalized: float
    edit_types: frozenset[str]

    @property
    def edit_types_ordered(self) -> tuple[str, ...]:
        """The edit types in the fixed order addition, deletion, modification."""
        return tuple(kind for kind in EDIT_TYPES if kind in self.edit_types)


def revision_metrics(draft_text: str, text: str) -> RevisionMetrics:
    """Distance, normalized distance and edit types of ``text`` against the draft."""
    if not draft_text:
        raise ValueError(EMPTY_DRAFT.format(function="revision_metrics"))
    distance = edit_distance(draft_text, text)
    return RevisionMetrics(
        distance=distance,
        normalized=distance / len(draft_text),
        edit_types=frozenset(edit_types(draft_text, text)),
    )


# -- the report over many rubrics -----------------------------------------------------------


class RubricEdits(NamedTuple):
    """One rubric as the report sees it; ``golden_text`` is None until it is confirmed.

    ``themes``: the themes of every revision after the draft, up to the golden one.
    """

    draft_text: str
    golden_text: str | None
    themes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class CdfPoint:
    """``share`` of the golden rubrics have a normalized edit distance ≤ ``x``."""

    x: float
    share: float


@dataclass(frozen=True)
class ThemeCount:
    theme: str
    label: str
    count: int


@dataclass(frozen=True)
class RubricReport:
    """The statistics of paper 004 §5.1; ``None`` where there is nothing to measure."""

    rubric_count: int  # rubrics with a draft
    golden_count: int
    modified_count: int  # golden rubrics whose text differs from their draft
    modification_rate: float | None  # modified_count / golden_count
    draft_length_median: float | None  # characters, over every draft
    draft_length_mean: float | None
    distance_median: float | None  # over golden rubrics, unmodified ones counting 0
    distance_mean: float | None
    distance_max: int | None
    normalized_median: float | None
    normalized_mean: float | None
    normalized_max: float | None
    edit_type_counts: dict[str, int]  # golden rubrics with each edit type
    theme_counts: tuple[ThemeCount, ...]  # golden rubrics with each theme, all themes
    cdf: tuple[CdfPoint, ...]  # of normalized edit distance, x ascending

    @property
    def has_golden(self) -> bool:
        return self.golden_count > 0


def cdf_points(values: Sequence[float]) -> tuple[CdfPoint, ...]:
    """The empirical CDF: one point per distinct value, with the share of values ≤ it."""
    ordered = sorted(values)
    total = len(ordered)
    points: list[CdfPoint] = []
    for index, value in enumerate(ordered, start=1):
        if index < total and ordered[index] == value:
            continue  # ties: keep the last one, whose share counts them all
        points.append(CdfPoint(x=value, share=index / total))
    return tuple(points)


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _report(
    rubrics: Sequence[RubricEdits], golden: Sequence[tuple[RubricEdits, RevisionMetrics]]
) -> RubricReport:
    draft_lengths = [len(rubric.draft_text) for rubric in rubrics]
    distances = [metrics.distance for _, metrics in golden]
    normalized = [metrics.normalized for _, metrics in golden]
    modified = sum(1 for rubric, _ in golden if rubric.golden_text != rubric.draft_text)
    themes = [rubric.themes for rubric, _ in golden]
    return RubricReport(
        rubric_count=len(rubrics),
        golden_count=len(golden),
        modified_count=modified,
        modification_rate=modified / len(golden) if golden else None,
        draft_length_median=_median(draft_lengths),
        draft_length_mean=_mean(draft_lengths),
        distance_median=_median(distances),
        distance_mean=_mean(distances),
        distance_max=max(distances, default=None),
        normalized_median=_median(normalized),
        normalized_mean=_mean(normalized),
        normalized_max=max(normalized, default=None),
        edit_type_counts={
            kind: sum(1 for _, metrics in golden if kind in metrics.edit_types)
            for kind in EDIT_TYPES
        },
        # Themes outside ``Theme`` (say, from an old import) are not counted.
        theme_counts=tuple(
            ThemeCount(
                theme=theme.value, label=str(theme.label), count=sum(theme in t for t in themes)
            )
            for theme in Theme
        ),
        cdf=cdf_points(normalized),
    )


def rubric_report_data(
    rubrics: Iterable[RubricEdits | tuple[str, str | None, Iterable[str]]],
) -> RubricReport:
    """The report over ``(draft_text, golden_text or None, themes)`` of each drafted rubric.

    Draft lengths cover every rubric; everything else covers the golden ones only.
    """
    edits = [RubricEdits(draft, golden, frozenset(themes)) for draft, golden, themes in rubrics]
    golden = [
        (rubric, revision_metrics(rubric.draft_text, rubric.golden_text))
        for rubric in edits
        if rubric.golden_text is not None
    ]
    return _report(edits, golden)


# -- a dataset's report (reads the database) ------------------------------------------------


@dataclass(frozen=True)
class RubricRow:
    """One rubric in the report's table, measured at its golden revision if it has one,
    else at its current revision."""

    bug_key: str
    status: str
    status_label: str
    revision_count: int  # the draft included
    compared_number: int
    golden: bool
    metrics: RevisionMetrics
    themes: tuple[str, ...]  # of the revisions after the draft, up to compared_number

    @property
    def theme_labels(self) -> tuple[str, ...]:
        labels = dict(Theme.choices)
        return tuple(str(labels.get(theme, theme)) for theme in self.themes)


@dataclass(frozen=True)
class DatasetRubricReport:
    dataset: Dataset
    variant: str
    summary: RubricReport
    rows: tuple[RubricRow, ...]
    undrafted_count: int  # rubrics still drafting, or whose draft failed: not in the report


def dataset_rubric_report(
    dataset: Dataset, *, variant: str = Rubric.Variant.TEMPLATED
) -> DatasetRubricReport:
    """The edit report of a dataset's rubrics of one variant, in three queries.

    Only the texts the report compares are loaded (the draft, the golden revision, and the
    current one of a rubric not yet golden); themes come from every revision, without text.
    """
    if variant not in Rubric.Variant.values:
        raise ValueError(UNKNOWN_VARIANT.format(variant=variant))
    in_scope = Q(rubric__bug__dataset=dataset, rubric__variant=variant)
    rubrics = list(
        Rubric.objects.filter(bug__dataset=dataset, variant=variant)
        .order_by("bug__sort_key")
        .values("id", "status", "current_number", "golden_revision__number", "bug__key")
    )
    themes: dict[tuple[int, int], list[str]] = {}
    revision_counts: dict[int, int] = {}
    for rubric_id, number, revision_themes in RubricRevision.objects.filter(in_scope).values_list(
        "rubric_id", "number", "themes"
    ):
        themes[rubric_id, number] = revision_themes if isinstance(revision_themes, list) else []
        revision_counts[rubric_id] = revision_counts.get(rubric_id, 0) + 1
    texts = {
        (rubric_id, number): text
        for rubric_id, number, text in RubricRevision.objects.filter(in_scope)
        .filter(
            Q(number=0) | Q(number=F("rubric__current_number")) | Q(pk=F("rubric__golden_revision"))
        )
        .values_list("rubric_id", "number", "text")
    }

    rows: list[RubricRow] = []
    edits: list[RubricEdits] = []
    golden: list[tuple[RubricEdits, RevisionMetrics]] = []
    undrafted = 0
    for rubric in rubrics:
        rubric_id = rubric["id"]
        draft = texts.get((rubric_id, 0))
        golden_number = rubric["golden_revision__number"]
        compared = golden_number if golden_number is not None else rubric["current_number"]
        text = texts.get((rubric_id, compared))
        if draft is None or text is None:
            undrafted += 1
            continue
        rubric_themes = frozenset(
            theme
            for number in range(1, compared + 1)
            for theme in themes.get((rubric_id, number), [])
        )
        metrics = revision_metrics(draft, text)
        status = rubric["status"]
        rows.append(
            RubricRow(
                bug_key=rubric["bug__key"],
                status=status,
                status_label=str(Rubric.Status(status).label),
                revision_count=revision_counts.get(rubric_id, 0),
                compared_number=compared,
                golden=golden_number is not None,
                metrics=metrics,
                themes=tuple(sorted(rubric_themes)),
            )
        )
        edit = RubricEdits(draft, text if golden_number is not None else None, rubric_themes)
        edits.append(edit)
        if golden_number is not None:
            golden.append((edit, metrics))
    return DatasetRubricReport(
        dataset=dataset,
        variant=variant,
        summary=_report(edits, golden),
        rows=tuple(rows),
        undrafted_count=undrafted,
    )


def report_dict(report: DatasetRubricReport) -> dict[str, Any]:
    """The report as JSON-ready data, for the command and the page's download."""
    summary = asdict(report.summary)
    summary["edit_types"] = summary.pop("edit_type_counts")
    summary["themes"] = summary.pop("theme_counts")
    if not report.summary.has_golden:
        summary["note"] = NO_GOLDEN_RUBRICS
    return {
        "dataset": report.dataset.name,
        "slug": report.dataset.slug,
        "variant": report.variant,
        "undrafted": report.undrafted_count,
        "summary": summary,
        "rubrics": [
            {
                "bug": row.bug_key,
                "status": row.status,
                "revisions": row.revision_count,
                "compared_revision": row.compared_number,
                "golden": row.golden,
                "distance": row.metrics.distance,
                "normalized": row.metrics.normalized,
                "edit_types": list(row.metrics.edit_types_ordered),
                "themes": list(row.themes),
            }
            for row in report.rows
        ],
    }
