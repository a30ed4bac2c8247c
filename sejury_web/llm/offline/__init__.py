r"""The ``offline`` provider: a deterministic heuristic, no network, and NOT an LLM.

It answers every request from the request's structured ``inputs`` by comparing diffs
with the bug's reference fix, so that the whole workflow runs without a model or a key.
Its scores and verdicts are not judgements of correctness. Every free-text field it
writes starts with ``[offline heuristic — not an LLM]``. Same inputs, same answer: no
randomness, no clock. ``OFFLINE_MODEL`` is part of the cache key: bump it when a rule
below changes.

Terms (the helpers live in ``sejury_web.similarity``)
    *changes*: the changed lines (stripped, blank ones dropped) of each hunk of a diff,
    per *scope*, in files that are not test files (``is_test_path``: ``tests/``,
    ``test_*.py``, ``*_test.go``, ``*Test.java``, ``*.test.js``…). Test files never count.
    A patch is *empty*/*unreadable* when it is blank/not a unified diff, and *test-only*
    when it has no change outside test files.
    *scope*: the nearest function (written ``name()``) or class-like type defined above a
    changed line in its hunk, else the one in the hunk header (``@@ … @@ section``); a
    hunk spanning two functions gives two changes.
    *condition line*: one with ``if``/``elif``/``else if``/``while``/``for``/``switch``/
    ``case``/``return``, ``?:``, a comparison or a boolean operator (not a comment).
    *quote coverage* of code quotes Q over lines L: the mean over q in Q of the best
    ``chrf(l, q)`` for l among the first 500 of L (0 when L is empty); chrF is
    sacrebleu's sentence chrF, on 0–100.

``rubric.draft`` — a skeleton read off the reference diff (the bug text is not analysed)
    Root cause: the files and scopes the fix changes, its condition lines (removed →
    added), whether it updates tests, and a reminder to state the real cause. Requirements:
    one per change, titled "Change `<scope or file>` near line N", its detail naming the
    file and scope and quoting up to 3 removed and 3 added lines (bracket-only lines
    skipped, each cut at 100 characters, "…" marks a cut). Acceptable: a change to the
    same scopes that behaves like the reference; extra test, comment or formatting
    changes. Unacceptable: test-only patches; patches that leave the reference's scopes
    untouched; only some of several changes; and, when the reference changes a condition
    line, suppressing the error instead of fixing the condition. An unreadable or
    test-only reference gives one requirement saying so. ``free_form``: the same content
    as Markdown prose and bullets, without the template's headings.

``rubric.revise`` — the current rubric (``rubric``, its structure) with suggestions read off
    the ``disagreements``' labels alone (no diff is read, nothing is judged). Everything of the
    rubric is kept word for word; then, for each disagreement in order:
    humans VALID, judge INVALID: each failed requirement (``passed: false``; an index not
    in the rubric is skipped and said so) gets, appended to its detail, the sentence
    "[marker] Humans judged patch "<key>", which fails this requirement, valid: the
    requirement may be stricter than a valid fix needs — review it." (one per patch: two
    patches on one requirement give two sentences; the key is quoted with "…", not `…`,
    which the ``judge.rubric`` rule would read as code); and one acceptable solution
    "[marker] A fix like patch "<key>", which the humans judged valid and the rubric judge
    did not; a human noted: "<first note>"." (the note part only when a note is given;
    notes on one line, cut at 200 characters). Humans INVALID, judge VALID: one
    unacceptable solution "[marker] A patch like "<key>", which the humans judged invalid
    and the rubric let through; a human noted: "<first note>"; disagreement themes: <a, b>."
    (each part only when given). Other label pairs change nothing. A sentence or item
    already in the rubric is not added again, so revising the result with the same
    disagreements changes nothing; one that would make the Markdown longer than 50,000
    characters is left out. ``free_form`` (``{"text"}``): the same items as bullets of a
    section "## Offline suggestions (not an LLM)" appended to the text once (later
    bullets go at the end of that section), a failed requirement as "[marker]
    Requirement <n> of the judge's checks: humans judged patch "<key>", which fails it,
    valid: …". ``rationale``: marked, one line per disagreement saying what was added
    for it, then what was left out (too long; ``left_out`` disagreements not shown).

``judge.s1a`` (no reference): 50 when the patch changes non-test code ("undecided
    without a reference"), else 0.
*Reference score* — ``judge.s1b`` and ``judge.s3`` (the offline model cannot tell
    "correct" from "equivalent"): 0 for an empty, unreadable or test-only patch; else
    ``round(0.8 · chrF + 0.2 · 100 · Jaccard)``, where chrF compares the patch's changed
    lines with the reference's (each joined by newlines) and Jaccard is the overlap of the
    files they change. Identical changes score 100. Without a usable reference (none,
    unreadable, test-only) the ``s1a`` rule applies.
``judge.roles`` (one call per role of the ``roles`` strategy): the reference score and its
    reasoning, plus a sentence saying that the heuristic does not play roles. It reads
    neither the persona nor the ``role`` input: every role gets the same answer.
``judge.s2.assess`` (S2's first turn): the reference score, its reasoning as the one reason
    in ``reasons``.
``judge.s2``: the reference score again, a deterministic re-check; the reasoning agrees
    with ``previous`` when within 10 points and otherwise revises it.
``judge.s4.analyze``: one property per reference change, quoting its added condition
    lines (else its added, else its removed lines) and naming its scope and file.
``judge.s5.tests``: one test per reference change, quoting its added (else removed)
    lines, plus one per test file the reference changes (these quote nothing).
``judge.s4``/``judge.s5``: ``round(0.5 · reference score + 0.5 · 100 · k/n)``, where n
    counts the properties (tests) that quote code and k those whose quote coverage over
    the patch's changed lines reaches 50; the reference score alone when n is 0, and 0
    for an empty, unreadable or test-only patch. When the inputs carry ``reference_diff:
    null`` (the step-2 prompt does not show the reference), ``round(100 · k/n)`` alone, and
    the ``s1a`` rule when n is 0.

``judge.rubric``
    For each requirement, the code spans (`…`) of its title say where the change must be;
    the other spans of its detail are code quotes. A span that looks like a path (has a
    ``/`` or a source-file extension), in title or detail, must be a file the patch
    changes. A function in the title (``f()``) must be the scope of some change of the
    patch; a type (``Paginator``) may also be named in such a change's hunk header; the
    quotes are then compared with the lines of those changes only. Other title spans are
    quotes too. The requirement passes when these hold and the quote coverage reaches 50.
    One with no span at all passes when the reference score reaches 50 (fails without a
    usable reference). Verdict VALID when the patch changes non-test code and every
    requirement passes. Without requirements (a rubric's Markdown is not read): VALID when
    the reference score reaches 50, INVALID without a usable reference.

``judge.rejection_theme`` — why a judge rejected a test-passing patch, by the words of its
    ``justification`` (the diff is not read): ``violates_requirement`` when the inputs'
    ``failed_requirements`` are not empty (the rubric judge marked some as failed);
    otherwise the first of these themes with one of its words in the justification
    (case aside, the offline marker ignored; a word matches whole, one written with ``*``
    also as the start of a longer word): ``root_cause`` — root cause*, symptom*,
    workaround*, work around, suppress*, mask*; ``incomplete`` — incomplete, partial*,
    partly, only some, not all, does not fully; ``new_issues`` — break*, regress*, new bug*,
    new issue*, new problem*, crash*; ``violates_requirement`` — requirement*, rubric*;
    else ``other``. The rationale names the rule and the word that decided.
"""

from typing import Any

from . import revisions, rubrics, scores, themes
from .patches import (
    COVERAGE_LINES,
    COVERAGE_PASS,
    EMPTY_PATCH,
    NO_CODE_CHANGE,
    NO_REFERENCE,
    PREFIX,
    QUOTE_WIDTH,
    QUOTED_LINES,
    UNREADABLE_PATCH,
    read_patch,
    say,
)
from .rubrics import PASS_SCORE
from .scores import AGREE_WITHIN, CHECK_WEIGHT, FILE_WEIGHT, TEXT_WEIGHT, UNDECIDED, Score

# The rules live in ``rubrics.py`` (``rubric.draft``, ``judge.rubric``), ``revisions.py``
# (``rubric.revise``), ``scores.py`` (``judge.s*``) and ``themes.py``
# (``judge.rejection_theme``), over what ``patches.py`` reads; their constants are
# re-exported here.
__all__ = [
    "AGREE_WITHIN",
    "BAD_INPUT",
    "CHECK_WEIGHT",
    "COVERAGE_LINES",
    "COVERAGE_PASS",
    "EMPTY_PATCH",
    "FILE_WEIGHT",
    "MISSING_INPUT",
    "NO_CODE_CHANGE",
    "NO_REFERENCE",
    "OFFLINE_MODEL",
    "PASS_SCORE",
    "PREFIX",
    "QUOTED_LINES",
    "QUOTE_WIDTH",
    "SCORE_PURPOSES",
    "SUPPORTED_PURPOSES",
    "TEXT_WEIGHT",
    "UNDECIDED",
    "UNREADABLE_PATCH",
    "UNSUPPORTED_PURPOSE",
    "OfflineUnsupported",
    "offline_answer",
]

OFFLINE_MODEL = "heuristic-v1"

UNSUPPORTED_PURPOSE = "the offline model cannot answer purpose {purpose!r}; it answers {supported}"
MISSING_INPUT = "offline answer to {purpose!r}: missing input {key!r}"
BAD_INPUT = "offline answer to {purpose!r}: input {key!r} must be {expected}"

SCORE_PURPOSES = (
    "judge.s1a",
    "judge.s1b",
    "judge.s2",
    "judge.s3",
    "judge.s4",
    "judge.s5",
    "judge.roles",
)
SUPPORTED_PURPOSES = (
    "rubric.draft",
    "rubric.revise",
    "judge.rubric",
    *SCORE_PURPOSES,
    "judge.s2.assess",
    "judge.s4.analyze",
    "judge.s5.tests",
    "judge.rejection_theme",
)


class OfflineUnsupported(ValueError):
    """The offline model cannot answer this purpose, or its inputs are incomplete."""


def _get(inputs: dict[str, Any], purpose: str, key: str, expected: tuple[type, ...]) -> Any:
    if key not in inputs:
        raise OfflineUnsupported(MISSING_INPUT.format(purpose=purpose, key=key))
    if not isinstance(inputs[key], expected):
        kinds = " or ".join("None" if kind is type(None) else kind.__name__ for kind in expected)
        raise OfflineUnsupported(BAD_INPUT.format(purpose=purpose, key=key, expected=kinds))
    return inputs[key]


def _check_items(purpose: str, key: str, items: Any) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise OfflineUnsupported(BAD_INPUT.format(purpose=purpose, key=key, expected="objects"))
    return items


def _variant(purpose: str, inputs: dict[str, Any]) -> str:
    variant = _get(inputs, purpose, "variant", (str,))
    if variant not in ("templated", "free_form"):
        expected = "'templated' or 'free_form'"
        raise OfflineUnsupported(
            BAD_INPUT.format(purpose=purpose, key="variant", expected=expected)
        )
    return str(variant)


def _revise(inputs: dict[str, Any]) -> dict[str, Any]:
    purpose = "rubric.revise"
    _get(inputs, purpose, "reference_diff", (str, type(None)))
    templated = _variant(purpose, inputs) == "templated"
    rubric = _get(inputs, purpose, "rubric", (dict,))
    if templated:
        if not isinstance(rubric.get("root_cause"), str):
            raise OfflineUnsupported(
                BAD_INPUT.format(purpose=purpose, key="rubric.root_cause", expected="str")
            )
        _check_items(purpose, "rubric.requirements", rubric.get("requirements"))
        for key in ("acceptable", "unacceptable"):
            if not all(isinstance(item, str) for item in rubric.get(key) or []):
                raise OfflineUnsupported(
                    BAD_INPUT.format(purpose=purpose, key=f"rubric.{key}", expected="strs")
                )
    elif not isinstance(rubric.get("text"), str):
        raise OfflineUnsupported(
            BAD_INPUT.format(purpose=purpose, key="rubric.text", expected="str")
        )
    disagreements = _check_items(
        purpose, "disagreements", _get(inputs, purpose, "disagreements", (list,))
    )
    left_out = inputs.get("left_out") or 0
    if not isinstance(left_out, int) or isinstance(left_out, bool):
        raise OfflineUnsupported(BAD_INPUT.format(purpose=purpose, key="left_out", expected="int"))
    return revisions.revise_rubric(rubric, disagreements, templated=templated, left_out=left_out)


def _score(purpose: str, inputs: dict[str, Any]) -> Score:
    candidate = read_patch(_get(inputs, purpose, "candidate_diff", (str,)))
    if purpose == "judge.s1a":
        return scores.s1a(candidate)
    reference_diff = _get(inputs, purpose, "reference_diff", (str, type(None)))
    base = scores.reference_score(candidate, read_patch(reference_diff))
    # Step 2 of s4/s5 is not shown the reference: it judges by the checks alone.
    unseen = purpose in ("judge.s4", "judge.s5") and reference_diff is None
    base_or_none = None if unseen else base
    if purpose == "judge.s2":
        before = _get(inputs, purpose, "previous", (dict,)).get("score")
        if not isinstance(before, int) or isinstance(before, bool):
            raise OfflineUnsupported(
                BAD_INPUT.format(purpose=purpose, key="previous.score", expected="an int")
            )
        return scores.recheck(base, before)
    if purpose == "judge.s4":
        properties = [str(p) for p in _get(inputs, purpose, "properties", (list,))]
        return scores.checked_score(base_or_none, properties, candidate, "properties")
    if purpose == "judge.s5":
        tests = _check_items(purpose, "tests", _get(inputs, purpose, "tests", (list,)))
        texts = [f"{t.get('name', '')} {t.get('description', '')}" for t in tests]
        return scores.checked_score(base_or_none, texts, candidate, "tests")
    if purpose == "judge.roles":
        return scores.same_for_every_role(base)
    return base  # s1b and s3: the offline model cannot tell "correct" from "equivalent"


def offline_answer(*, purpose: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The offline model's answer to ``purpose``, computed from ``inputs`` by the rules above.

    Raises ``OfflineUnsupported`` for an unknown purpose or a missing or mistyped input.
    """
    if purpose not in SUPPORTED_PURPOSES:
        supported = ", ".join(SUPPORTED_PURPOSES)
        raise OfflineUnsupported(UNSUPPORTED_PURPOSE.format(purpose=purpose, supported=supported))
    bug = _get(inputs, purpose, "bug", (dict,))
    if purpose in SCORE_PURPOSES:
        score = _score(purpose, inputs)
        return {"score": max(0, min(100, score.value)), "reasoning": say(score.reason)}
    if purpose == "judge.s2.assess":
        score = _score("judge.s1b", inputs)
        return {"score": max(0, min(100, score.value)), "reasons": [say(score.reason)]}
    if purpose == "judge.rubric":
        candidate = read_patch(_get(inputs, purpose, "candidate_diff", (str,)))
        reference = read_patch(_get(inputs, purpose, "reference_diff", (str, type(None))))
        rubric = _get(inputs, purpose, "rubric", (dict, type(None)))
        _check_items(purpose, "rubric.requirements", (rubric or {}).get("requirements") or [])
        return rubrics.judge_rubric(candidate, reference, rubric)
    if purpose == "rubric.revise":
        return _revise(inputs)
    if purpose == "judge.rejection_theme":
        justification = _get(inputs, purpose, "justification", (str,))
        failed = _check_items(
            purpose,
            "failed_requirements",
            _get(inputs, purpose, "failed_requirements", (list,)),
        )
        return themes.rejection_theme(justification, failed)
    reference = read_patch(_get(inputs, purpose, "reference_diff", (str,)))
    if purpose == "judge.s4.analyze":
        return {"properties": scores.properties_of(reference)}
    if purpose == "judge.s5.tests":
        return {"tests": scores.tests_of(reference)}
    variant = _variant(purpose, inputs)
    draft = rubrics.templated_draft(bug, reference)
    return draft if variant == "templated" else {"rubric": rubrics.free_form(draft)}
