"""Building a dataset's quality ladders: the derived dataset and its bug copies, one patch
per level built, the skipped levels and bugs said, idempotence, and the rubrics copied (and
brought up to date when the source's golden rubric changes)."""

import pytest
from django.contrib.auth.models import User

from rubrics.ladders.operators import LEVELS, Rung, build_ladder
from rubrics.ladders.services import (
    DERIVATION,
    NO_REFERENCE,
    NOT_A_SOURCE,
    LadderError,
    ladders_build,
)
from rubrics.models import Dataset, Patch, Rubric, RubricRevision
from rubrics.selectors import golden_rubric
from sejury_web.audit import audit_events
from sejury_web.diffs import normalized_diff_hash, parse_diff
from tests.rubrics.factories import BugFactory, DatasetFactory, rubric_for

pytestmark = pytest.mark.django_db

# Two files, several changes: every level applies.
MULTI = """\
diff --git a/src/Stack.java b/src/Stack.java
--- a/src/Stack.java
+++ b/src/Stack.java
@@ -10,7 +10,8 @@ public class Stack {
     public int pop() {
-        if (size < 0) {
+        if (size == 0) {
             throw new EmptyStackException();
         }
-        return items[size];
+        int top = items[size - 1];
+        return top;
     }
@@ -30,4 +31,4 @@ public class Stack {
     public boolean isEmpty() {
-        return size < 0;
+        return size == 0;
     }
diff --git a/src/Queue.java b/src/Queue.java
--- a/src/Queue.java
+++ b/src/Queue.java
@@ -5,3 +5,3 @@ public class Queue {
     int limit() {
-        return 9;
+        return 10;
     }
"""


@pytest.fixture
def source() -> Dataset:
    dataset = DatasetFactory(name="Source", slug="source")
    BugFactory(dataset=dataset, key="Multi-1", reference_patch=MULTI, language="java")
    BugFactory(dataset=dataset, key="One-2")  # the factory's one-line Python fix
    BugFactory(dataset=dataset, key="None-3", reference_patch="")
    return dataset


def test_the_ladders_are_a_derived_dataset_with_a_patch_per_level_built(
    source: Dataset, django_user_model: type[User]
) -> None:
    lead = django_user_model.objects.create(username="lea")
    build = ladders_build(dataset=source, actor=lead)
    ladder = build.ladder
    assert (ladder.derived_from, ladder.derivation, build.created) == (source, DERIVATION, True)
    assert ladder.name == "Source · ladders"
    # the bug without a reference fix has no ladder, and the build says so
    assert sorted(ladder.bugs.values_list("key", flat=True)) == ["Multi-1", "One-2"]
    assert build.bugs_left_out == {NO_REFERENCE: 1}
    for bug_key in ("Multi-1", "One-2"):
        copy = ladder.bugs.get(key=bug_key)
        origin = source.bugs.get(key=bug_key)
        assert copy.reference_patch == origin.reference_patch
        assert copy.metadata["ladder"]["origin_bug"] == origin.pk
        rungs = build_ladder(origin.reference_patch)
        built = {r.level: r for r in rungs if isinstance(r, Rung)}
        skipped = {str(r.level): r.reason for r in rungs if not isinstance(r, Rung)}
        assert copy.metadata["ladder"]["skipped"] == skipped
        patches = {p.key: p for p in copy.patches.all()}
        assert sorted(patches) == [f"{bug_key}:L{level}" for level in sorted(built)]
        for level, rung in built.items():
            patch = patches[f"{bug_key}:L{level}"]
            assert patch.dataset == ladder
            assert patch.source == f"ladder:L{level}"
            assert patch.diff == rung.diff
            assert patch.diff_hash == normalized_diff_hash(parse_diff(rung.diff))
            assert patch.metadata["ladder"]["level"] == level
            assert patch.metadata["ladder"]["name"] == LEVELS[level]
            assert patch.metadata["ladder"]["operators"] == list(rung.operators)
            assert patch.tests_pass is None
    # the multi-change fix gets every level; the level-0 diff is the reference itself
    assert sorted(build.levels) == sorted(LEVELS)
    assert ladder.patches.get(key="Multi-1:L0").diff == MULTI
    # a level can only be skipped for the one-line fix (nothing to drop, for example)
    assert all(count == 1 for count in build.skipped.values())
    assert build.patches_added == ladder.patches.count()
    event = audit_events(ladder).get()
    assert (event.actor, event.action) == (lead, "ladders built")
    assert event.detail["patches_added"] == build.patches_added


def test_building_again_keeps_every_patch_and_adds_only_what_is_missing(source: Dataset) -> None:
    first = ladders_build(dataset=source, actor=None, levels=[0, 4])
    kept = dict(first.ladder.patches.values_list("key", "pk"))
    assert {key.rsplit(":", 1)[1] for key in kept} <= {"L0", "L4"}
    again = ladders_build(dataset=source, actor=None)
    assert (again.ladder, again.created) == (first.ladder, False)
    assert again.patches_kept == len(kept)
    assert again.patches_added == again.ladder.patches.count() - len(kept)
    for key, pk in kept.items():  # never rewritten: a run's verdicts stay with their diff
        assert Patch.objects.get(pk=pk).key == key
    third = ladders_build(dataset=source, actor=None)
    assert (third.patches_added, third.bugs_added) == (0, 0)
    assert Dataset.objects.filter(derived_from=source).count() == 1


def test_the_rubrics_are_copied_and_a_changed_golden_rubric_follows(source: Dataset) -> None:
    origin = source.bugs.get(key="Multi-1")
    rubric = rubric_for(origin, draft="draft text", golden="golden text")
    build = ladders_build(dataset=source, actor=None)
    assert build.rubrics_copied == 1
    copy = build.ladder.bugs.get(key="Multi-1")
    copied = copy.rubrics.get()
    assert copied.status == Rubric.Status.GOLDEN
    assert copied.revisions.get(number=0).text == "draft text"
    golden = golden_rubric(bug_id=copy.pk)
    assert golden is not None
    assert golden.text == "golden text"
    assert "Source / Multi-1, revision 1" in golden.justification
    # the reviewers confirm a new golden revision in the source; the next build follows it
    newer = RubricRevision.objects.create(rubric=rubric, number=2, text="newer golden text")
    rubric.golden_revision, rubric.current_number = newer, 2
    rubric.save()
    again = ladders_build(dataset=source, actor=None)
    assert (again.rubrics_copied, again.rubrics_updated) == (0, 1)
    golden = golden_rubric(bug_id=copy.pk)
    assert golden is not None
    assert (golden.text, golden.number) == ("newer golden text", 2)
    assert ladders_build(dataset=source, actor=None).rubrics_updated == 0


def test_a_ladder_dataset_is_not_a_source_and_levels_are_checked(source: Dataset) -> None:
    ladder = ladders_build(dataset=source, actor=None).ladder
    with pytest.raises(LadderError, match="derived dataset"):
        ladders_build(dataset=ladder, actor=None)
    assert NOT_A_SOURCE.format(name=ladder.name).startswith(ladder.name)
    with pytest.raises(LadderError, match="unknown level 7"):
        ladders_build(dataset=source, actor=None, levels=[0, 7])
    with pytest.raises(LadderError, match="at least one level"):
        ladders_build(dataset=source, actor=None, levels=[])


def test_a_reference_that_does_not_parse_leaves_its_bug_out_with_the_reason(
    source: Dataset,
) -> None:
    BugFactory(dataset=source, key="Broken-4", reference_patch="not a diff at all")
    build = ladders_build(dataset=source, actor=None)
    assert not build.ladder.bugs.filter(key="Broken-4").exists()
    [(reason, count)] = [(r, n) for r, n in build.bugs_left_out.items() if r != NO_REFERENCE]
    assert count == 1
    assert reason.startswith("the reference fix does not parse: not a unified")
