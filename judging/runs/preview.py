"""The streamlined rubric review of paper 004 §8: judge a bug's candidate patches with the
rubric as it stands and with its draft, and show which verdicts flip, and why.

A preview is two ``PREVIEW`` runs of the ``rubric`` judge, each pinned to one revision
(``Context.REVISION``): the rubric's current revision, and its draft (revision 0). The
draft never changes, so its run is shared by later previews on the same provider and model
for as long as it stays usable. The pairing is positional, not stored: the latest preview
run of a rubric is the current side, and its draft side is the latest draft run on the same
provider and model created before it (the service creates or picks exactly that one).
"""

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Prefetch, QuerySet

from judging.models import Context, JudgingRun, PatchJudgment, StrategyResult
from judging.runs.selectors import RunProgress, run_progress
from judging.runs.services import RunError, run_create, run_target
from judging.strategies import get_strategy
from rubrics.models import Patch, Rubric, RubricRevision
from sejury_web.llm import Provider

PREVIEW_STRATEGY = "rubric"
NO_DRAFT = "this rubric has no draft yet: the preview compares the rubric with its draft"
NO_PATCHES = "bug {bug} has no candidate patches to judge"
RUN_NAME = "Rubric preview: {rubric} r{number}"

VALID, INVALID = "VALID", "INVALID"


class PreviewError(ValueError):
    """A preview cannot be started; the message says why."""


@dataclass(frozen=True)
class PreviewRuns:
    """The two runs of one preview; the same run twice when the current revision is the draft."""

    draft: JudgingRun
    current: JudgingRun


# -- the service ------------------------------------------------------------------------------


def _preview_runs(rubric: Rubric) -> QuerySet[JudgingRun]:
    return JudgingRun.objects.filter(
        kind=JudgingRun.Kind.PREVIEW,
        context=Context.REVISION,
        rubric_revision__rubric=rubric,
    ).select_related("rubric_revision")


def _draft_run_reusable(run: JudgingRun, patch_ids: set[int]) -> bool:
    """Whether a draft run can stand for a new one: same candidates, same judge prompt,
    and going or finished with no failed patch (a failure deserves another try)."""
    if run.status == JudgingRun.Status.CANCELLED:
        return False
    judgments = PatchJudgment.objects.filter(run=run)
    if set(judgments.values_list("patch_id", flat=True)) != patch_ids:
        return False
    if judgments.filter(status=PatchJudgment.Status.FAILED).exists():
        return False
    prompt = get_strategy(PREVIEW_STRATEGY).prompt_version
    stale = StrategyResult.objects.filter(judgment__run=run).exclude(prompt_version=prompt)
    return not stale.exists()


def rubric_preview_start(*, rubric: Rubric, actor: User) -> PreviewRuns:
    """Judge the bug's candidates with the rubric's current revision and with its draft.

    The draft's run is reused when its latest run (same provider and model) is usable; no
    draft run is added when the current revision is the draft. Raises ``PreviewError``.
    """
    rubric = Rubric.objects.select_related("bug__dataset").get(pk=rubric.pk)
    revisions = {
        revision.number: revision
        for revision in rubric.revisions.filter(number__in=[0, rubric.current_number])
    }
    if rubric.current_number < 0 or 0 not in revisions:
        raise PreviewError(NO_DRAFT)
    draft, current = revisions[0], revisions[rubric.current_number]
    patches = list(rubric.bug.patches.all())
    if not patches:
        raise PreviewError(NO_PATCHES.format(bug=rubric.bug.key))
    try:
        provider, model = run_target("", "")
    except RunError as error:
        raise PreviewError(str(error)) from None

    def judge(revision: RubricRevision) -> JudgingRun:
        try:
            return run_create(
                dataset=rubric.bug.dataset,
                strategies=[PREVIEW_STRATEGY],
                context=Context.REVISION,
                rubric_revision=revision,
                patches=patches,
                provider=provider,
                model=model,
                kind=JudgingRun.Kind.PREVIEW,
                name=RUN_NAME.format(rubric=rubric, number=revision.number)[:200],
                actor=actor,
            )
        except RunError as error:
            raise PreviewError(str(error)) from None

    with transaction.atomic():
        latest = (
            _preview_runs(rubric)
            .filter(rubric_revision=draft, provider=provider, model=model)
            .order_by("-pk")
            .first()
        )
        patch_ids = {patch.pk for patch in patches}
        if latest is not None and _draft_run_reusable(latest, patch_ids):
            draft_run = latest
        else:
            draft_run = judge(draft)
        # Created after the draft's run, so that it is the rubric's latest preview run.
        current_run = draft_run if current.is_draft else judge(current)
    return PreviewRuns(draft=draft_run, current=current_run)


# -- the selector -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedRequirement:
    index: int  # 1 is the rubric's first requirement
    title: str  # "" when the revision has no such requirement (or is free form)
    reason: str


@dataclass(frozen=True)
class PreviewVerdict:
    """One side's verdict on one patch, and why."""

    status: str  # a PatchJudgment status; "" when the run did not judge this patch
    verdict: str  # VALID, INVALID, or "" until judged (or when it failed)
    justification: str
    failed_requirements: tuple[FailedRequirement, ...]
    error: str
    is_offline: bool
    url: str  # the verdict's page; "" when the run did not judge this patch

    @property
    def is_pending(self) -> bool:
        return self.status == PatchJudgment.Status.PENDING


NOT_JUDGED = PreviewVerdict("", "", "", (), "", False, "")


@dataclass(frozen=True)
class PreviewRow:
    patch: Patch
    draft: PreviewVerdict
    current: PreviewVerdict

    @property
    def flipped(self) -> bool:
        """Both sides judged it, and the verdicts differ."""
        verdicts = {self.draft.verdict, self.current.verdict}
        return verdicts == {VALID, INVALID}

    @property
    def flip(self) -> str:
        """``VALID → INVALID``, ``INVALID → VALID``, or "" when it did not flip."""
        return f"{self.draft.verdict} → {self.current.verdict}" if self.flipped else ""


@dataclass(frozen=True)
class RubricPreview:
    """The latest preview of a rubric: its runs, how far they are, and the comparison."""

    rubric: Rubric
    draft_run: JudgingRun | None  # None if the draft's run was deleted
    current_run: JudgingRun
    draft_progress: RunProgress | None
    current_progress: RunProgress
    draft_number: int
    current_number: int  # the revision the current side judged
    stale: bool  # the rubric has a newer revision than ``current_number``
    rows: list[PreviewRow]  # flipped patches first, then by key

    @property
    def same_revision(self) -> bool:
        """The current revision was the draft: one run, nothing to compare yet."""
        return self.current_number == self.draft_number

    @property
    def is_active(self) -> bool:
        runs = [self.current_run, self.draft_run]
        return any(run is not None and run.is_active for run in runs)

    @property
    def flipped(self) -> list[PreviewRow]:
        return [row for row in self.rows if row.flipped]

    @property
    def errors(self) -> int:
        return sum(bool(row.draft.error or row.current.error) for row in self.rows)

    @property
    def is_offline(self) -> bool:
        sides = [side for row in self.rows for side in (row.draft, row.current)]
        runs = [run for run in (self.current_run, self.draft_run) if run is not None]
        return any(side.is_offline for side in sides) or any(
            run.provider == Provider.OFFLINE for run in runs
        )


def _failed_requirements(
    answers: dict[str, Any], revision: RubricRevision
) -> tuple[FailedRequirement, ...]:
    """The requirements the judge said the patch fails, with their titles in ``revision``."""
    judge = answers.get("judge")
    items = judge.get("requirements") if isinstance(judge, dict) else None
    requirements = revision.structure.get("requirements") or []
    failed = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or item.get("passed") is not False:
            continue
        index = item.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            continue
        title = ""
        if 1 <= index <= len(requirements) and isinstance(requirements[index - 1], dict):
            title = str(requirements[index - 1].get("title", ""))
        failed.append(FailedRequirement(index, title, str(item.get("reason", ""))))
    return tuple(failed)


def _verdict(judgment: PatchJudgment | None, revision: RubricRevision) -> PreviewVerdict:
    if judgment is None:
        return NOT_JUDGED
    # ``_judgments`` prefetched the rubric judge's result only.
    result = next(iter(judgment.results.all()), None)
    return PreviewVerdict(
        status=judgment.status,
        verdict=judgment.verdict if judgment.status == PatchJudgment.Status.DONE else "",
        justification=result.reasoning if result else "",
        failed_requirements=_failed_requirements(result.answers, revision) if result else (),
        error=judgment.error or (result.error if result else ""),
        is_offline=bool(result and result.is_offline),
        url=judgment.get_absolute_url(),
    )


def _judgments(run: JudgingRun | None) -> dict[int, PatchJudgment]:
    if run is None:
        return {}
    judgments = (
        PatchJudgment.objects.filter(run=run)
        .select_related("patch__dataset")
        .prefetch_related(
            Prefetch("results", queryset=StrategyResult.objects.filter(strategy=PREVIEW_STRATEGY))
        )
    )
    return {judgment.patch_id: judgment for judgment in judgments}


def rubric_preview_get(*, rubric: Rubric) -> RubricPreview | None:
    """The rubric's latest preview, or None if it has none."""
    runs = _preview_runs(rubric)
    current_run = runs.order_by("-pk").first()
    if current_run is None:
        return None
    current_revision = current_run.rubric_revision
    assert current_revision is not None  # a preview run is pinned to its revision
    draft_run: JudgingRun | None = current_run
    if not current_revision.is_draft:
        draft_run = (
            runs.filter(
                rubric_revision__number=0,
                provider=current_run.provider,
                model=current_run.model,
                pk__lt=current_run.pk,
            )
            .order_by("-pk")
            .first()
        )
    draft_revision = draft_run.rubric_revision if draft_run else None
    by_current = _judgments(current_run)
    by_draft = by_current if draft_run == current_run else _judgments(draft_run)
    rows = []
    for patch_id in sorted(by_draft.keys() | by_current.keys()):
        draft_judgment, current_judgment = by_draft.get(patch_id), by_current.get(patch_id)
        judgment = current_judgment or draft_judgment
        assert judgment is not None
        rows.append(
            PreviewRow(
                patch=judgment.patch,
                draft=_verdict(draft_judgment, draft_revision) if draft_revision else NOT_JUDGED,
                current=_verdict(current_judgment, current_revision),
            )
        )
    rows.sort(key=lambda row: (not row.flipped, row.patch.key))
    return RubricPreview(
        rubric=rubric,
        draft_run=draft_run,
        current_run=current_run,
        draft_progress=run_progress(draft_run) if draft_run else None,
        current_progress=run_progress(current_run),
        draft_number=0,
        current_number=current_revision.number,
        stale=rubric.current_number > current_revision.number,
        rows=rows,
    )


def rubric_preview_candidates(*, rubric: Rubric) -> int:
    """How many candidate patches a preview of ``rubric`` would judge."""
    return Patch.objects.filter(bug_id=rubric.bug_id).count()
