"""Reads of datasets, bugs, patches and golden rubrics, shaped for the pages that show them;
the labels those pages show come from the ``LabelSource`` that judging registers, a patch's
verdicts and consensus from its ``VerdictSource``."""

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from rubrics.models import Patch, Rubric, RubricRevision

from .models import Bug, BundleImport, Dataset, DraftBatch

BUGS_PER_PAGE = 50
# A name that ``dataset_resolve`` finds no dataset by: the one wording of every door that
# names a dataset (the commands' ``--dataset``, the API).
UNKNOWN_DATASET = "no dataset is called {name!r} (by name or URL name)"
# Bug keys a dataset does not have, as the draft form and ``draft_rubrics`` both say it.
UNKNOWN_BUGS = "no bug {keys} in this dataset"
# Patch keys ``dataset_patches_named`` finds no patch by, as the run and campaign forms, the
# API and ``judge --patches`` all say it.
UNKNOWN_PATCHES = "no patch {keys} in {dataset}"


# -- labels ---------------------------------------------------------------------------------
# Human labels belong to the judging app. Rubrics pages show their counts, so judging
# registers a LabelSource here from its AppConfig.ready(): rubrics never imports judging,
# nor reads its relations.


@dataclass(frozen=True)
class PatchLabel:
    annotator: str
    label: str
    note: str
    origin: str


class LabelSource(Protocol):
    def dataset_count(self, *, dataset_id: int) -> int: ...

    def bug_counts(self, *, bug_ids: Collection[int]) -> dict[int, int]: ...

    def patch_counts(self, *, patch_ids: Collection[int]) -> dict[int, int]: ...

    def patch_labels(self, *, patch_id: int) -> list[PatchLabel]: ...


class NoLabels:
    """The source when no app provides labels: every count is 0."""

    def dataset_count(self, *, dataset_id: int) -> int:
        return 0

    def bug_counts(self, *, bug_ids: Collection[int]) -> dict[int, int]:
        return {}

    def patch_counts(self, *, patch_ids: Collection[int]) -> dict[int, int]:
        return {}

    def patch_labels(self, *, patch_id: int) -> list[PatchLabel]:
        return []


_label_source: LabelSource = NoLabels()


def label_source_register(source: LabelSource) -> None:
    global _label_source
    _label_source = source


def label_source() -> LabelSource:
    return _label_source


# -- verdicts -------------------------------------------------------------------------------
# Judging runs, their verdicts and the human consensus are judging's too. The patch page sets
# each run's verdict beside the consensus, so judging registers a VerdictSource here from its
# AppConfig.ready(), as it does its LabelSource.


@dataclass(frozen=True)
class MemberVerdict:
    """One member of a run's team on the patch."""

    name: str  # the strategy's name, e.g. "s3"
    label: str  # its human name
    status: str  # "done", "failed", or "" when it has not judged the patch yet
    score: float | None  # 0–100
    verdict: str  # the rubric judge's VALID or INVALID; "" for a scoring member


@dataclass(frozen=True)
class RunVerdict:
    """One run's verdict on the patch, and whether it agrees with the human consensus."""

    run_id: int
    run_name: str
    run_url: str
    verdict_url: str
    status: str  # the judgment's: "pending", "done", "failed"
    verdict: str  # the team's VALID or INVALID; "" when it has none
    score: float | None  # on the run's scale, scale_lo–scale_hi
    scale_lo: float
    scale_hi: float
    threshold: float
    margin: float | None  # the score's distance from the threshold, as a share of the scale
    agreement: str  # "agrees", "disagrees", "no consensus yet", "no verdict"
    members: tuple[MemberVerdict, ...]


@dataclass(frozen=True)
class PatchVerdicts:
    """Every judging run's verdict on a patch (newest run first), beside the consensus."""

    runs: tuple[RunVerdict, ...]
    consensus: str | None  # VALID or INVALID; None while the humans have not agreed
    consensus_state: str  # how it was reached, or why there is none, in words

    @property
    def agreeing(self) -> int:
        return sum(run.agreement == "agrees" for run in self.runs)

    @property
    def compared(self) -> int:
        """How many runs' verdicts could be compared with a consensus."""
        return sum(run.agreement in ("agrees", "disagrees") for run in self.runs)


class VerdictSource(Protocol):
    def patch_verdicts(self, *, patch: Patch) -> PatchVerdicts: ...


class NoVerdicts:
    """The source when no app judges patches."""

    def patch_verdicts(self, *, patch: Patch) -> PatchVerdicts:
        return PatchVerdicts(runs=(), consensus=None, consensus_state="")


_verdict_source: VerdictSource = NoVerdicts()


def verdict_source_register(source: VerdictSource) -> None:
    global _verdict_source
    _verdict_source = source


def patch_verdicts(*, patch: Patch) -> PatchVerdicts:
    """Each judging run's verdict on ``patch`` beside the human consensus, in a fixed number
    of queries however many runs judged it (for leads and reviewers: no one's label)."""
    return _verdict_source.patch_verdicts(patch=patch)


def _count(queryset: QuerySet, group_by: str, counted: str) -> Coalesce:
    """A correlated subquery counting ``counted`` per ``group_by`` (0 when there is none)."""
    subquery = queryset.order_by().values(group_by).annotate(n=Count(counted)).values("n")
    return Coalesce(Subquery(subquery, output_field=IntegerField()), 0)


def dataset_list(*, counts: bool = True) -> QuerySet[Dataset]:
    """Every dataset by name, with its ``bug_count`` and ``patch_count`` unless ``counts`` is
    False (a dropdown or a list of names: two correlated counts per dataset saved)."""
    if not counts:
        return Dataset.objects.order_by("name")
    return Dataset.objects.annotate(
        bug_count=_count(Bug.objects.filter(dataset=OuterRef("pk")), "dataset", "pk"),
        patch_count=_count(Patch.objects.filter(dataset=OuterRef("pk")), "dataset", "pk"),
    ).order_by("name")


def dataset_get(*, slug: str, counts: bool = True) -> Dataset:
    """The dataset of ``slug`` (404 otherwise), with its ``bug_count`` and ``patch_count``
    unless ``counts`` is False (a page that shows neither: nothing counted)."""
    if not counts:
        return get_object_or_404(Dataset, slug=slug)
    return get_object_or_404(
        Dataset.objects.annotate(
            bug_count=_count(Bug.objects.filter(dataset=OuterRef("pk")), "dataset", "pk"),
            patch_count=_count(Patch.objects.filter(dataset=OuterRef("pk")), "dataset", "pk"),
        ),
        slug=slug,
    )


def dataset_resolve(name: str) -> Dataset | None:
    """The dataset called ``name``, or whose slug is ``name`` (how commands, the API and a
    bundle upload name one); None when there is none, which a door says with
    ``UNKNOWN_DATASET`` (a bundle import creates it instead)."""
    name = name.strip()
    return Dataset.objects.filter(name=name).first() or Dataset.objects.filter(slug=name).first()


def dataset_bugs_page(*, dataset: Dataset, query: str = "", page: int | str = 1) -> Page:
    """One page of a dataset's bugs, with their patch and label counts, filtered by ``query``.

    ``query`` matches a bug's key, title, language or type, or the key of one of its patches.
    Counts are correlated subqueries on indexed foreign keys, so a page costs the same at
    10,000 patches as at 10.
    """
    bugs = Bug.objects.filter(dataset=dataset)
    query = query.strip()
    if query:
        bugs = bugs.filter(
            Q(key__icontains=query)
            | Q(title__icontains=query)
            | Q(language__iexact=query)
            | Q(bug_type__icontains=query)
            | Exists(Patch.objects.filter(bug=OuterRef("pk"), key__icontains=query))
        )
    listed = bugs.only("id", "key", "title", "language", "bug_type", "dataset_id").annotate(
        patch_count=_count(Patch.objects.filter(bug=OuterRef("pk")), "bug", "pk"),
    )
    result = Paginator(listed.order_by("sort_key"), BUGS_PER_PAGE).get_page(page)
    result.object_list = rows = list(result.object_list)
    counts = label_source().bug_counts(bug_ids=[bug.pk for bug in rows])
    for bug in rows:
        bug.label_count = counts.get(bug.pk, 0)  # type: ignore[attr-defined]
    return result


def bug_get(*, dataset: Dataset, key: str) -> Bug:
    return get_object_or_404(Bug.objects.select_related("dataset"), dataset=dataset, key=key)


def bug_patches(*, bug: Bug) -> list[Patch]:
    """The bug's patches, each with its ``label_count``."""
    patches = list(bug.patches.select_related("dataset").order_by("sort_key"))
    counts = label_source().patch_counts(patch_ids=[patch.pk for patch in patches])
    for patch in patches:
        patch.label_count = counts.get(patch.pk, 0)  # type: ignore[attr-defined]
    return patches


def bug_rubrics(*, bug: Bug) -> QuerySet[Rubric]:
    return bug.rubrics.order_by("variant")


def patch_get(*, dataset: Dataset, key: str) -> Patch:
    return get_object_or_404(
        Patch.objects.select_related("bug", "dataset"), dataset=dataset, key=key
    )


def patch_duplicates(*, patch: Patch) -> QuerySet[Patch]:
    """Other patches of the same bug with the same normalized diff."""
    return (
        Patch.objects.filter(bug_id=patch.bug_id, diff_hash=patch.diff_hash)
        .exclude(pk=patch.pk)
        .order_by("sort_key")
    )


def dataset_label_count(dataset: Dataset) -> int:
    return label_source().dataset_count(dataset_id=dataset.pk)


def patch_labels(*, patch: Patch) -> list[PatchLabel]:
    """The patch's labels with their annotators (for leads only)."""
    return label_source().patch_labels(patch_id=patch.pk)


@dataclass(frozen=True)
class DraftProgress:
    """Where a draft batch stands, read from its rubrics (so it survives any reload)."""

    total: int
    drafted: int
    failed: int
    drafting: int
    started_at: datetime
    rubrics: list[Rubric]
    # The last draft written or failed, else when the batch was asked for.
    moved_at: datetime | None = None

    @property
    def done(self) -> bool:
        return self.drafting == 0

    @property
    def percent(self) -> int:
        return round(100 * (self.drafted + self.failed) / self.total) if self.total else 100


def dataset_imports_recent(dataset: Dataset, *, limit: int = 5) -> list[BundleImport]:
    """The dataset's last bundle imports, newest first, with who imported them."""
    return list(dataset.imports.select_related("imported_by")[:limit])


def dataset_draft_batches_recent(dataset: Dataset, *, limit: int = 3) -> list[DraftBatch]:
    """The dataset's last draft requests, newest first, with who asked."""
    return list(dataset.draft_batches.select_related("requested_by")[:limit])


def draft_batch_get(*, dataset_slug: str, batch_id: int) -> DraftBatch:
    """One of the dataset's draft requests, or 404."""
    return get_object_or_404(
        DraftBatch.objects.select_related("dataset", "requested_by"),
        pk=batch_id,
        dataset__slug=dataset_slug,
    )


def draft_batch_progress(batch: DraftBatch) -> DraftProgress:
    rubrics = list(batch.rubrics.select_related("bug").order_by("bug__sort_key"))
    statuses = [rubric.status for rubric in rubrics]
    drafting = statuses.count(Rubric.Status.DRAFTING)
    failed = statuses.count(Rubric.Status.DRAFT_FAILED)
    return DraftProgress(
        total=len(rubrics),
        drafted=len(rubrics) - drafting - failed,
        failed=failed,
        drafting=drafting,
        started_at=batch.created_at,
        rubrics=rubrics,
        moved_at=max(
            [batch.created_at]
            + [r.updated_at for r in rubrics if r.status != Rubric.Status.DRAFTING]
        ),
    )


def dataset_rubric_counts(dataset: Dataset) -> list[tuple[str, str, int]]:
    """(status, label, count) of the rubrics of ``dataset``, every status, in workflow order."""
    rows = (
        Rubric.objects.filter(bug__dataset=dataset)
        .order_by()
        .values_list("status")
        .annotate(n=Count("id"))
    )
    found = dict(rows)
    return [(status, label, found.get(status, 0)) for status, label in Rubric.Status.choices]


def dataset_bugs_named(dataset: Dataset, keys: Iterable[str]) -> tuple[list[Bug], list[str]]:
    """The bugs of ``dataset`` named by ``keys`` (all of them when none), and the unknown keys."""
    wanted = {key for key in keys if key}
    bugs = Bug.objects.filter(dataset=dataset).order_by("sort_key")
    if wanted:
        bugs = bugs.filter(key__in=wanted)
    found = list(bugs)
    return found, sorted(wanted - {bug.key for bug in found})


def dataset_patches_named(dataset: Dataset, keys: Iterable[str]) -> tuple[list[Patch], list[str]]:
    """The patches of ``dataset`` named by ``keys``, and the keys no patch has (which a caller
    says with ``UNKNOWN_PATCHES``)."""
    wanted = {key for key in keys if key}
    found = list(Patch.objects.filter(dataset=dataset, key__in=wanted).only("id", "dataset_id"))
    return found, sorted(wanted - {patch.key for patch in found})


def rubric_get(*, rubric_id: int) -> Rubric:
    """One rubric with its bug and dataset, or 404."""
    return get_object_or_404(Rubric.objects.select_related("bug__dataset"), pk=rubric_id)


def rubric_reviewers_since_draft(rubric: Rubric) -> set[int]:
    """Ids of users who edited the rubric after its draft, or submitted it."""
    authors = set(
        rubric.revisions.filter(number__gt=0, author_user__isnull=False).values_list(
            "author_user_id", flat=True
        )
    )
    if rubric.submitted_by_id is not None:
        authors.add(rubric.submitted_by_id)
    return authors


def golden_rubric(*, bug_id: int) -> RubricRevision | None:
    """The bug's golden rubric: its last confirmed revision, never a draft or an edit that
    awaits confirmation. What the golden-context judge and the annotators both read."""
    rubric = (
        Rubric.objects.filter(bug_id=bug_id, golden_revision__isnull=False)
        .select_related("golden_revision")
        # the templated rubric first: it is the one paper 004's reviewers refine
        .order_by("-variant")
        .first()
    )
    return rubric.golden_revision if rubric else None
