"""The ``judge.s*`` and ``judge.roles`` rules: the scores, and the properties and tests that
s4 and s5 check.

The rules are stated in the package docstring; change them there too, and bump
``OFFLINE_MODEL``.
"""

import re
from dataclasses import dataclass

from sejury_web.similarity import CodeChange, chrf, is_condition

from .patches import COVERAGE_PASS, Patch, code_spans, quote_coverage, quote_lines, say

TEXT_WEIGHT, FILE_WEIGHT = 0.8, 0.2  # of the reference score
CHECK_WEIGHT = 0.5  # of the reference score in s4/s5; the rest is the share of checks met
UNDECIDED = 50  # s1a: non-test code changed, nothing to compare it with
AGREE_WITHIN = 10  # s2: points of difference still counted as agreement

_NON_WORD = re.compile(r"\W+")


@dataclass(frozen=True)
class Score:
    """A score on 0–100 and the reasoning behind it."""

    value: int
    reason: str


def s1a(candidate: Patch) -> Score:
    """``judge.s1a``: undecided when the patch changes non-test code, else 0."""
    if candidate.error:
        only_tests = " (it changes only tests)" if candidate.test_files else ""
        return Score(0, f"Score 0: {candidate.error}{only_tests}.")
    return Score(
        UNDECIDED, "Score 50: the patch changes non-test code; undecided without a reference."
    )


def _jaccard(a: list[str], b: list[str]) -> float:
    union = set(a) | set(b)
    return len(set(a) & set(b)) / len(union) if union else 0.0


def reference_score(candidate: Patch, reference: Patch) -> Score:
    """The *reference score*: chrF of the changed lines blended with the files' overlap."""
    if candidate.error or reference.error:
        fallback = s1a(candidate)
        note = f" No usable reference: {reference.error}." if reference.error else ""
        return Score(fallback.value, fallback.reason + ("" if candidate.error else note))
    text = chrf("\n".join(candidate.lines), "\n".join(reference.lines))
    files = 100 * _jaccard(candidate.files, reference.files)
    value = round(min(100.0, max(0.0, TEXT_WEIGHT * text + FILE_WEIGHT * files)))
    return Score(
        value,
        f"Score {value} = {TEXT_WEIGHT} · chrF {text:.1f} of the changed non-test lines against "
        f"the reference's + {FILE_WEIGHT} · {files:.0f} (overlap of the files touched).",
    )


def recheck(base: Score, before: int) -> Score:
    """``judge.s2``: the reference score again, agreeing with ``before`` or revising it."""
    if abs(before - base.value) <= AGREE_WITHIN:
        return Score(base.value, f"Re-check: {base.reason} I agree with {before}.")
    return Score(base.value, f"Re-check: {base.reason} I revise {before} to {base.value}.")


def same_for_every_role(base: Score) -> Score:
    """``judge.roles``: the reference score whatever the role; the reasoning says so."""
    return Score(
        base.value,
        f"{base.reason} The offline heuristic does not play roles: every role gets this same "
        "S1b heuristic score and reasoning.",
    )


def checked_score(base: Score | None, checks: list[str], candidate: Patch, noun: str) -> Score:
    """s4/s5: the share of quoted checks the patch meets, blended with the reference score
    (``base``), or alone when the prompt showed no reference (``base`` is None)."""
    quoted = [quotes for quotes in map(code_spans, checks) if quotes]
    fallback = base if base is not None else s1a(candidate)
    if candidate.error:
        return fallback if base is not None else Score(0, fallback.reason)
    if not quoted:
        return Score(fallback.value, f"{fallback.reason} None of the {noun} quotes code to check.")
    met = sum(quote_coverage(quotes, candidate.lines) >= COVERAGE_PASS for quotes in quoted)
    share = 100 * met / len(quoted)
    summary = f"{met} of {len(quoted)} {noun} are met (quote coverage ≥ {COVERAGE_PASS:.0f})."
    if base is None:
        return Score(round(share), f"Score {round(share)}: {summary}")
    value = round(CHECK_WEIGHT * base.value + (1 - CHECK_WEIGHT) * share)
    return Score(
        value,
        f"Score {value} = {CHECK_WEIGHT} · {base.value} + {1 - CHECK_WEIGHT} · {share:.0f}: "
        f"{summary} Reference score: {base.reason}",
    )


def _where(change: CodeChange) -> str:
    return f"in {change.scope} of {change.path}" if change.scope else f"in {change.path}"


def properties_of(reference: Patch) -> list[str]:
    """``judge.s4.analyze``: one property per reference change, quoting its lines."""
    if reference.error:
        return [say(f"No property can be read off the reference: {reference.error}.")]
    properties = []
    for change in reference.changes:
        conditions = [line for line in change.added if is_condition(line)]
        if conditions:
            properties.append(
                say(f"keeps the condition {quote_lines(conditions)} {_where(change)}")
            )
        elif change.added:
            properties.append(say(f"keeps {quote_lines(change.added)} {_where(change)}"))
        else:
            properties.append(say(f"removes {quote_lines(change.removed)} {_where(change)}"))
    return properties


def tests_of(reference: Patch) -> list[dict[str, str]]:
    """``judge.s5.tests``: one test per reference change, and one per test file it changes."""
    tests = []
    for number, change in enumerate(reference.changes, start=1):
        slug = _NON_WORD.sub("_", change.scope or change.path).strip("_")
        effect = (
            f"does what {quote_lines(change.added)} does"
            if change.added
            else f"no longer does what {quote_lines(change.removed)} did"
        )
        tests.append(
            {
                "name": say(f"test_change_{number}_{slug}"),
                "description": say(
                    f"Runs the code {_where(change)} on the input of the bug report; passes "
                    f"when it {effect} in the reference fix."
                ),
            }
        )
    for path in reference.test_files:
        tests.append(
            {
                "name": say(path),
                "description": say(
                    "A test file the reference fix updates; the patch should pass it."
                ),
            }
        )
    if not tests:
        tests.append(
            {
                "name": say("no_test"),
                "description": say(f"No test can be read off the reference: {reference.error}."),
            }
        )
    return tests
