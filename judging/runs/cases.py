"""What a run shows its strategies of one patch: the ``Case``, built from the run's context."""

from judging.models import Context, JudgingRun
from judging.strategies import Case
from rubrics.models import Patch, Rubric, RubricRevision
from rubrics.selectors import golden_rubric
from rubrics.templatetags.evidence import evidence_lists

NO_GOLDEN = "bug {bug} has no golden rubric yet"
NO_DRAFT = "bug {bug} has no {variant} draft rubric"
OTHER_BUG = "the run's rubric revision is of bug {owner}, not of bug {bug}"


def _draft(patch: Patch, variant: str) -> RubricRevision | None:
    return (
        RubricRevision.objects.filter(
            rubric__bug_id=patch.bug_id, rubric__variant=variant, number=0
        )
        .only("structure", "text")
        .first()
    )


def _rubric_for(run: JudgingRun, patch: Patch) -> tuple[RubricRevision | None, str]:
    """The rubric revision the run's context names for ``patch``'s bug, or why there is none."""
    bug = patch.bug.key
    if run.context == Context.GOLDEN:
        revision = golden_rubric(bug_id=patch.bug_id)
        return revision, "" if revision else NO_GOLDEN.format(bug=bug)
    if run.context == Context.DRAFT:
        revision = _draft(patch, Rubric.Variant.TEMPLATED)
        return revision, "" if revision else NO_DRAFT.format(bug=bug, variant="templated")
    if run.context == Context.FREE_FORM:
        revision = _draft(patch, Rubric.Variant.FREE_FORM)
        return revision, "" if revision else NO_DRAFT.format(bug=bug, variant="free-form")
    if run.context == Context.REVISION:
        revision = run.rubric_revision
        if revision is not None and revision.rubric.bug_id != patch.bug_id:
            # One bug's rubric says nothing about another bug's patches.
            return None, OTHER_BUG.format(owner=revision.rubric.bug.key, bug=bug)
        return revision, ""
    return None, ""


def case_for(run: JudgingRun, patch: Patch) -> Case:
    """``patch`` as the run's strategies see it (``patch.bug`` should be loaded)."""
    return case_and_rubric(run, patch)[0]


def case_and_rubric(run: JudgingRun, patch: Patch) -> tuple[Case, RubricRevision | None]:
    """``case_for`` and the rubric revision the case shows (None when it shows none), which
    the rubric judge's result records."""
    revision, missing = _rubric_for(run, patch)
    return _case(run, patch, revision, missing), revision


def _case(run: JudgingRun, patch: Patch, revision: RubricRevision | None, missing: str) -> Case:
    bug = patch.bug
    return Case(
        bug_key=bug.key,
        bug_title=bug.title,
        bug_description=bug.description,
        candidate_diff=patch.diff,
        reference_diff=bug.reference_patch,
        context=run.context,
        rubric=revision.structure if revision else None,
        rubric_text=revision.text if revision else "",
        rubric_missing=missing,
        test_evidence=test_evidence_text(patch),
    )


def test_evidence_text(patch: Patch) -> str:
    """The patch's test evidence as a judge reads it ("" when it has none): whether its tests
    pass, each list of the harness with how many pass and the failing ones named, the note."""
    lists = evidence_lists(patch.tests_status)
    if patch.tests_pass is None and not lists and not patch.tests_note:
        return ""
    verdict = {True: "yes", False: "no", None: "unknown"}[patch.tests_pass]
    lines = [f"Tests pass: {verdict}"]
    for found in lists:
        line = f"{found.name} ({found.meaning}): {found.passed} of {found.total} pass"
        if found.failing:
            more = f" and {found.failing_more} more" if found.failing_more else ""
            line += f"; failing: {', '.join(found.failing)}{more}"
        lines.append(line)
    if patch.tests_note:
        lines.append(f"Note: {patch.tests_note}")
    return "\n".join(lines)


def cases_bulk(run: JudgingRun, patches: list[Patch]) -> list[Case]:
    """``case_for`` of each of ``patches`` (of the run's dataset, their ``bug`` loaded), with
    the context's rubrics read in one query for the dataset instead of one per patch: the cost
    forecast builds every prompt of a run before it starts."""
    revisions: dict[int, RubricRevision] = {}
    if run.context == Context.GOLDEN:
        # The templated rubric first, as ``golden_rubric`` takes it.
        rubrics = (
            Rubric.objects.filter(bug__dataset_id=run.dataset_id, golden_revision__isnull=False)
            .select_related("golden_revision")
            .order_by("bug_id", "-variant")
        )
        for rubric in rubrics:
            assert rubric.golden_revision is not None
            revisions.setdefault(rubric.bug_id, rubric.golden_revision)
    elif run.context in (Context.DRAFT, Context.FREE_FORM):
        variant = (
            Rubric.Variant.TEMPLATED if run.context == Context.DRAFT else Rubric.Variant.FREE_FORM
        )
        drafts = RubricRevision.objects.filter(
            rubric__bug__dataset_id=run.dataset_id, rubric__variant=variant, number=0
        ).select_related("rubric")
        for draft in drafts.only("structure", "text", "rubric__bug_id"):
            revisions.setdefault(draft.rubric.bug_id, draft)
    cases = []
    revision: RubricRevision | None
    for patch in patches:
        if run.context in (Context.GOLDEN, Context.DRAFT, Context.FREE_FORM):
            revision = revisions.get(patch.bug_id)
            missing = "" if revision else _missing(run.context, patch.bug.key)
        else:
            revision, missing = _rubric_for(run, patch)  # no query: the run's own revision
        cases.append(_case(run, patch, revision, missing))
    return cases


def _missing(context: str, bug: str) -> str:
    if context == Context.GOLDEN:
        return NO_GOLDEN.format(bug=bug)
    variant = "templated" if context == Context.DRAFT else "free-form"
    return NO_DRAFT.format(bug=bug, variant=variant)
