"""Builders of datasets, bugs, patches and rubrics, and of the diffs they carry."""

from typing import Any

import factory
from factory.django import DjangoModelFactory

from rubrics.models import Bug, Dataset, Patch, Rubric, RubricRevision
from sejury_web.diffs import normalized_diff_hash, parse_diff


def make_diff(path: str = "src/app.py", old: str = "x = 1", new: str = "x = 2") -> str:
    return (
        f"diff --git a/{path} b/{path}\n"
        f"--- a/{path}\n"
        f"+++ b/{path}\n"
        "@@ -1,3 +1,3 @@\n"
        " def f():\n"
        f"-    {old}\n"
        f"+    {new}\n"
        "     return x\n"
    )


class DatasetFactory(DjangoModelFactory):  # type: ignore[misc]
    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"Dataset {n}")
    slug = factory.Sequence(lambda n: f"dataset-{n}")


class BugFactory(DjangoModelFactory):  # type: ignore[misc]
    class Meta:
        model = Bug

    dataset = factory.SubFactory(DatasetFactory)
    key = factory.Sequence(lambda n: f"BUG-{n}")
    title = factory.LazyAttribute(lambda o: f"{o.key}: x is wrong")
    description = "f() returns 1 instead of 2."
    language = "python"
    bug_type = "wrong_constant"
    reference_patch = factory.LazyFunction(make_diff)


class PatchFactory(DjangoModelFactory):  # type: ignore[misc]
    class Meta:
        model = Patch

    bug = factory.SubFactory(BugFactory)
    dataset = factory.LazyAttribute(lambda o: o.bug.dataset)
    key = factory.Sequence(lambda n: f"patch-{n}")
    diff = factory.LazyFunction(make_diff)
    diff_hash = factory.LazyAttribute(lambda o: normalized_diff_hash(parse_diff(o.diff)))
    source = "agent-a"
    tests_pass = True


GOLDEN_TEXT = "## Requirements\n\n1. **Return two:** f() returns 2 for every caller."
DRAFT_TEXT = "## Requirements\n\n1. The patch must equal the reference exactly (draft-only)."


def rubric_for(bug: Bug, *, draft: str, golden: str | None = None, pending: str = "") -> Rubric:
    """A templated rubric: its LLM draft, a confirmed golden revision (if ``golden``), and an
    edit that awaits confirmation (if ``pending``)."""
    rubric = Rubric.objects.create(bug=bug, status=Rubric.Status.IN_REVIEW, current_number=0)
    texts = [draft, *([golden] if golden else []), *([pending] if pending else [])]
    revisions = [
        RubricRevision.objects.create(
            rubric=rubric, number=n, text=text, author="llm:offline/x" if n == 0 else "reviewer"
        )
        for n, text in enumerate(texts)
    ]
    rubric.current_number = len(revisions) - 1
    if golden:
        rubric.golden_revision = revisions[1]
        rubric.status = Rubric.Status.AWAITING_CONFIRMATION if pending else Rubric.Status.GOLDEN
    rubric.save()
    return rubric


def editor_form(rubric: Rubric, **changes: Any) -> dict[str, Any]:
    """What the editor posts for the current revision, with ``changes`` applied."""
    structure = rubric.revisions.get(number=rubric.current_number).structure
    data: dict[str, Any] = {
        "base_number": rubric.current_number,
        "mode": "templated",
        "root_cause": structure["root_cause"],
        "requirement_title": [r["title"] for r in structure["requirements"]],
        "requirement_detail": [r["detail"] for r in structure["requirements"]],
        "acceptable": structure["acceptable"],
        "unacceptable": structure["unacceptable"],
        "justification": "",
    }
    data.update(changes)
    return data
