"""The match-based baselines against independent computations: sacrebleu for BLEU and chrF,
a textbook Levenshtein for edit similarity, all over the changed lines of both diffs."""

from collections.abc import Callable

import pytest
import sacrebleu

from judging.models import StrategyResult
from judging.strategies import get_strategy
from judging.strategies.base import NO_REFERENCE, Case, StrategyError
from tests.judging.helpers import Judge, Recorder
from tests.rubrics.factories import PatchFactory

REFERENCE = """\
diff --git a/src/paginator.py b/src/paginator.py
--- a/src/paginator.py
+++ b/src/paginator.py
@@ -10,4 +10,5 @@ class Paginator:
     def page_count(self):
-        if self.count == 0:
-            return 0
+        if self.count <= 0:
+            return 1
+        # an empty list still has one page
         return math.ceil(self.count / self.per_page)
"""
CANDIDATE = """\
diff --git a/src/paginator.py b/src/paginator.py
--- a/src/paginator.py
+++ b/src/paginator.py
@@ -10,4 +10,4 @@ class Paginator:
     def page_count(self):
-        if self.count == 0:
-            return 0
+        if not self.count:
+            return 1
         return math.ceil(self.count / self.per_page)
"""
NOT_A_DIFF = "I replaced == with <= in page_count."


def changed(diff: str) -> str:
    """The removed, then the added lines, stripped, blank ones dropped, one per line."""
    lines = diff.splitlines()
    removed = [line[1:].strip() for line in lines if line[:1] == "-" and line[:3] != "---"]
    added = [line[1:].strip() for line in lines if line[:1] == "+" and line[:3] != "+++"]
    return "\n".join(line for line in removed + added if line)


def levenshtein(a: str, b: str) -> int:
    """Edits (insert, delete, substitute) from ``a`` to ``b``, one row of the table at a time."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def edit_similarity(a: str, b: str) -> float:
    return 100 * (1 - levenshtein(a, b) / max(len(a), len(b)))


INDEPENDENT: dict[str, Callable[[str, str], float]] = {
    "bleu": lambda hyp, ref: sacrebleu.sentence_bleu(hyp, [ref]).score,
    "chrf": lambda hyp, ref: sacrebleu.sentence_chrf(hyp, [ref]).score,
    "edit": edit_similarity,
}


def case(candidate: str = CANDIDATE, reference: str = REFERENCE) -> Case:
    return Case("BUG-1", "", "page_count() is 0 for an empty list", candidate, reference)


def test_the_dp_agrees_with_textbook_distances() -> None:
    assert levenshtein("kitten", "sitting") == 3  # k→s, e→i, +g
    assert levenshtein("", "abc") == 3
    assert levenshtein("flaw", "lawn") == 2  # -f, +n


@pytest.mark.parametrize("name", list(INDEPENDENT))
def test_a_baseline_scores_the_changed_lines_as_the_independent_computation(name: str) -> None:
    ask = Recorder()
    hypothesis, reference = changed(CANDIDATE), changed(REFERENCE)
    assert hypothesis.splitlines()[-1] == "return 1"  # the comparison is on changed lines

    outcome = get_strategy(name).judge(case(), ask)

    expected = INDEPENDENT[name](hypothesis, reference)
    assert 0 < expected < 100
    assert outcome.score == round(expected, 2)
    assert f"{outcome.score:.2f}" in outcome.reasoning
    assert ask.requests == []  # no model is asked


@pytest.mark.parametrize("name", list(INDEPENDENT))
def test_a_patch_identical_to_the_reference_scores_100(name: str) -> None:
    assert get_strategy(name).judge(case(candidate=REFERENCE), Recorder()).score == 100.0


@pytest.mark.parametrize("name", list(INDEPENDENT))
def test_a_baseline_needs_a_reference(name: str) -> None:
    with pytest.raises(StrategyError, match=NO_REFERENCE):
        get_strategy(name).judge(case(reference="\n"), Recorder())


@pytest.mark.parametrize("name", list(INDEPENDENT))
@pytest.mark.parametrize(
    ("candidate", "reference", "which"),
    [(NOT_A_DIFF, REFERENCE, "candidate patch"), (CANDIDATE, NOT_A_DIFF, "reference fix")],
)
def test_an_unreadable_diff_is_named_in_the_error(
    name: str, candidate: str, reference: str, which: str
) -> None:
    with pytest.raises(StrategyError) as raised:
        get_strategy(name).judge(case(candidate, reference), Recorder())

    assert str(raised.value) == (
        f"cannot read the {which}: not a unified diff: no file header (diff --git, Index: or "
        "---/+++) and no hunk"
    )


@pytest.mark.django_db
def test_an_unreadable_patch_fails_the_baselines_of_a_run_and_not_the_others(
    judge_now: Judge,
) -> None:
    patch = PatchFactory(diff=NOT_A_DIFF, diff_hash="unreadable", bug__reference_patch=REFERENCE)

    run = judge_now(dataset=patch.dataset, strategies="bleu,s1a,edit", context="reference")

    results = {r.strategy: r for r in StrategyResult.objects.filter(judgment__run=run)}
    assert results["s1a"].status == StrategyResult.Status.DONE
    for name in ("bleu", "edit"):
        assert results[name].status == StrategyResult.Status.FAILED
        assert results[name].score is None
        assert results[name].error.startswith("cannot read the candidate patch: not a unified")
        assert (results[name].call_ids, results[name].is_offline) == ([], False)
    judgment = run.judgments.get()
    assert judgment.status == "failed"
    assert judgment.error.startswith("2 of 3 members failed: bleu: cannot read the candidate")
