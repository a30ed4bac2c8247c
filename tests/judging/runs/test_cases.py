"""What a run's context shows the rubric judge of each patch: which rubric, or why none."""

import pytest

from judging.models import Context, JudgingRun
from judging.runs.cases import case_for
from judging.strategies import StrategyError, get_strategy
from rubrics.models import Patch, Rubric, RubricRevision
from tests.judging.helpers import Recorder
from tests.rubrics.factories import PatchFactory

pytestmark = pytest.mark.django_db

TEXTS = {
    "draft": "Templated draft: set x = 2.",
    "golden": "Golden: f() returns 2.",
    "free_form": "Free-form draft: any fix returning 2.",
    "revision": "Pinned revision under review.",
}


def revision(rubric: Rubric, number: int, text: str) -> RubricRevision:
    return RubricRevision.objects.create(
        rubric=rubric, number=number, structure={"text": text}, text=f"{text}\n", author="lead"
    )


def run_over(patch: Patch, context: str, pinned: RubricRevision | None = None) -> JudgingRun:
    return JudgingRun.objects.create(
        dataset=patch.dataset,
        strategies=["rubric"],
        context=context,
        rubric_revision=pinned,
        provider="offline",
        model="heuristic-v1",
    )


@pytest.fixture
def patch() -> Patch:
    """A patch whose bug has a templated rubric (draft, golden, one later revision) and a
    free-form draft."""
    patch = PatchFactory()
    templated = Rubric.objects.create(bug=patch.bug, variant=Rubric.Variant.TEMPLATED)
    revision(templated, 0, TEXTS["draft"])
    templated.golden_revision = revision(templated, 1, TEXTS["golden"])
    templated.save()
    revision(templated, 2, TEXTS["revision"])
    free_form = Rubric.objects.create(bug=patch.bug, variant=Rubric.Variant.FREE_FORM)
    revision(free_form, 0, TEXTS["free_form"])
    return patch


@pytest.mark.parametrize("context", list(TEXTS))
def test_each_rubric_context_shows_its_rubric_and_no_other(patch: Patch, context: str) -> None:
    pinned = RubricRevision.objects.get(rubric__variant="templated", number=2)
    run = run_over(patch, context, pinned if context == Context.REVISION else None)
    ask = Recorder()

    case = case_for(run, patch)
    get_strategy("rubric").judge(case, ask)

    assert (case.rubric, case.rubric_missing) == ({"text": TEXTS[context]}, "")
    prompt = ask.requests[0].messages[-1].content
    assert f"<rubric>\n{TEXTS[context]}\n\n</rubric>" in prompt
    assert [text for text in TEXTS.values() if text in prompt] == [TEXTS[context]]
    assert ask.requests[0].inputs["rubric"] == {"text": TEXTS[context]}


@pytest.mark.parametrize("context", [Context.REFERENCE, Context.NONE])
def test_the_reference_and_none_contexts_show_no_rubric(patch: Patch, context: str) -> None:
    case = case_for(run_over(patch, context), patch)

    assert (case.rubric, case.rubric_text, case.rubric_missing) == (None, "", "")
    assert case.reference_diff == patch.bug.reference_patch


def test_the_templated_golden_rubric_wins_over_the_free_form_one(patch: Patch) -> None:
    free_form = Rubric.objects.get(variant=Rubric.Variant.FREE_FORM)
    free_form.golden_revision = free_form.revisions.get()
    free_form.save()

    case = case_for(run_over(patch, Context.GOLDEN), patch)

    assert case.rubric == {"text": TEXTS["golden"]}


@pytest.mark.parametrize(
    ("context", "present", "missing"),
    [
        # A rubric still in review has its draft but no golden revision.
        (Context.GOLDEN, "templated", "bug {bug} has no golden rubric yet"),
        (Context.DRAFT, "free_form", "bug {bug} has no templated draft rubric"),
        (Context.FREE_FORM, "templated", "bug {bug} has no free-form draft rubric"),
    ],
)
def test_a_missing_rubric_is_named_and_the_rubric_judge_refuses(
    context: str, present: str, missing: str
) -> None:
    patch = PatchFactory()
    revision(Rubric.objects.create(bug=patch.bug, variant=present), 0, "the other rubric")
    ask = Recorder()

    case = case_for(run_over(patch, context), patch)

    assert case.rubric is None
    assert case.rubric_missing == missing.format(bug=patch.bug.key)
    with pytest.raises(StrategyError, match=case.rubric_missing):
        get_strategy("rubric").judge(case, ask)
    assert ask.requests == []


def test_a_pinned_revision_is_not_shown_with_another_bugs_patches(patch: Patch) -> None:
    pinned = RubricRevision.objects.get(rubric__variant="templated", number=2)
    other = PatchFactory(bug__dataset=patch.dataset)

    case = case_for(run_over(patch, Context.REVISION, pinned), other)

    assert case.rubric is None
    assert case.rubric_missing == (
        f"the run's rubric revision is of bug {patch.bug.key}, not of bug {other.bug.key}"
    )
