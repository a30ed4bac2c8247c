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

``judge.s1a`` (no reference): 50 when the patch changes non-test code ("undecided
    without a reference"), else 0.
*Reference score* — ``judge.s1b`` and ``judge.s3`` (the offline model cannot tell
    "correct" from "equivalent"): 0 for an empty, unreadable or test-only patch; else
    ``round(0.8 · chrF + 0.2 · 100 · Jaccard)``, where chrF compares the patch's changed
    lines with the reference's (each joined by newlines) and Jaccard is the overlap of the
    files they change. Identical changes score 100. Without a usable reference (none,
    unreadable, test-only) the ``s1a`` rule applies.
``judge.s2``: the reference score again, a deterministic re-check; the reasoning agrees
    with ``previous`` when within 10 points and otherwise revises it.
``judge.s4.analyze``: one property per reference change, quoting its added condition
    lines (else its added, else its removed lines) and naming its scope and file.
``judge.s5.tests``: one test per reference change, quoting its added (else removed)
    lines, plus one per test file the reference changes (these quote nothing).
``judge.s4``/``judge.s5``: ``round(0.5 · reference score + 0.5 · 100 · k/n)``, where n
    counts the properties (tests) that quote code and k those whose quote coverage over
    the patch's changed lines reaches 50; the reference score alone when n is 0, and 0
    for an empty, unreadable or test-only patch.

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
"""

import re
from dataclasses import dataclass
from typing import Any

from sejury_web.diffs import DiffError
from sejury_web.similarity import CodeChange, CodeChanges, chrf, code_changes, is_condition

from .types import OFFLINE_MARKER

OFFLINE_MODEL = "heuristic-v1"

UNSUPPORTED_PURPOSE = "the offline model cannot answer purpose {purpose!r}; it answers {supported}"
MISSING_INPUT = "offline answer to {purpose!r}: missing input {key!r}"
BAD_INPUT = "offline answer to {purpose!r}: input {key!r} must be {expected}"
# Why a patch has nothing to compare; these end up in reasons and rubric text.
NO_REFERENCE = "there is no reference patch"
EMPTY_PATCH = "the patch is empty"
UNREADABLE_PATCH = "the patch is not a readable unified diff ({error})"
NO_CODE_CHANGE = "the patch changes no line of non-test code"

PREFIX = f"[{OFFLINE_MARKER}] "
TEXT_WEIGHT, FILE_WEIGHT = 0.8, 0.2  # of the reference score
CHECK_WEIGHT = 0.5  # of the reference score in s4/s5; the rest is the share of checks met
PASS_SCORE = 50  # a reference score that counts as "like the reference"
COVERAGE_PASS = 50.0  # quote coverage that meets a requirement, property or test
UNDECIDED = 50  # s1a: non-test code changed, nothing to compare it with
AGREE_WITHIN = 10  # s2: points of difference still counted as agreement
QUOTED_LINES = 3  # per side of a change
QUOTE_WIDTH = 100
COVERAGE_LINES = 500  # lines a quote is compared with: keeps huge patches fast

SCORE_PURPOSES = ("judge.s1a", "judge.s1b", "judge.s2", "judge.s3", "judge.s4", "judge.s5")
SUPPORTED_PURPOSES = (
    "rubric.draft",
    "judge.rubric",
    *SCORE_PURPOSES,
    "judge.s4.analyze",
    "judge.s5.tests",
)

_SPAN = re.compile(r"``(.+?)``|`([^`]+)`")
_PATH = re.compile(
    r"^[\w.@+-]*(?:/[\w.@+-]+)+/?$"
    r"|^[\w.@+-]+\.(?:py|pyi|java|kt|scala|js|jsx|mjs|cjs|ts|tsx|go|c|h|cc|cpp|cxx|hpp|rs|rb"
    r"|cs|swift|php|m|mm|sh|sql|json|ya?ml|toml|xml|html|css|md|txt|cfg|ini|gradle)$"
)
_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*$")
_NON_WORD = re.compile(r"\W+")
_BRACKETS_ONLY = re.compile(r"^[\s{}()\[\];,]*$")


class OfflineUnsupported(ValueError):
    """The offline model cannot answer this purpose, or its inputs are incomplete."""


def _say(text: str) -> str:
    return PREFIX + text


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass
class _Patch(CodeChanges):
    """A diff as the heuristic compares it; ``error`` says why it has no changes."""

    error: str | None = None
    readable: bool = True


def _read_patch(diff: str | None) -> _Patch:
    if diff is None:
        return _Patch(error=NO_REFERENCE, readable=False)
    if not diff.strip():
        return _Patch(error=EMPTY_PATCH, readable=False)
    try:
        changes = code_changes(diff)
    except DiffError as error:
        return _Patch(error=UNREADABLE_PATCH.format(error=error), readable=False)
    if not changes.changes:
        return _Patch(test_files=changes.test_files, error=NO_CODE_CHANGE)
    return _Patch(changes=changes.changes, test_files=changes.test_files)


def _spans(text: str) -> list[str]:
    """The code spans of Markdown text, without the ellipsis of a cut quote."""
    spans = (a or b for a, b in _SPAN.findall(text))
    return [span.strip().removesuffix("…").strip() for span in spans if span.strip()]


def _touches(patch: _Patch, path: str) -> bool:
    files = patch.files + patch.test_files  # a requirement may ask for a test
    return any(f == path or f.endswith("/" + path) or path.endswith("/" + f) for f in files)


def _in_scope(change: CodeChange, names: list[str]) -> bool:
    """Whether the change lies in one of the named scopes, compared by their last part.

    A function (``f()``) must be the change's scope; a type may also be named in its hunk
    header, which is where the enclosing class shows when its methods are long.
    """
    for name in names:
        last = re.split(r"\.|::", name.removesuffix("()"))[-1]
        if (change.scope or "").removesuffix("()") == last:
            return True
        if not name.endswith("()") and re.search(rf"\b{re.escape(last)}\b", change.section):
            return True
    return False


def _coverage(quotes: list[str], lines: list[str]) -> float:
    """Mean over the quotes of their best chrF against any one line (0 without lines)."""
    if not quotes or not lines:
        return 0.0
    lines = lines[:COVERAGE_LINES]
    return sum(max(chrf(line, quote) for line in lines) for quote in quotes) / len(quotes)


def _jaccard(a: list[str], b: list[str]) -> float:
    union = set(a) | set(b)
    return len(set(a) & set(b)) / len(union) if union else 0.0


def _quote(line: str) -> str:
    cut = line if len(line) <= QUOTE_WIDTH else line[: QUOTE_WIDTH - 1] + "…"
    # Markdown needs a longer fence, and spaces inside it, around a backtick.
    return f"`` {cut} ``" if "`" in cut else f"`{cut}`"


def _quotes(lines: list[str]) -> str:
    """Up to ``QUOTED_LINES`` quoted lines, bracket-only lines skipped unless all are."""
    shown = [line for line in lines if not _BRACKETS_ONLY.match(line)] or lines
    text = ", ".join(_quote(line) for line in shown[:QUOTED_LINES])
    more = len(shown) - QUOTED_LINES
    return text + (f" (and {more} more)" if more > 0 else "")


@dataclass(frozen=True)
class _Score:
    value: int
    reason: str


def _s1a(candidate: _Patch) -> _Score:
    if candidate.error:
        only_tests = " (it changes only tests)" if candidate.test_files else ""
        return _Score(0, f"Score 0: {candidate.error}{only_tests}.")
    return _Score(
        UNDECIDED, "Score 50: the patch changes non-test code; undecided without a reference."
    )


def _reference_score(candidate: _Patch, reference: _Patch) -> _Score:
    if candidate.error or reference.error:
        fallback = _s1a(candidate)
        note = f" No usable reference: {reference.error}." if reference.error else ""
        return _Score(fallback.value, fallback.reason + ("" if candidate.error else note))
    text = chrf("\n".join(candidate.lines), "\n".join(reference.lines))
    files = 100 * _jaccard(candidate.files, reference.files)
    value = round(min(100.0, max(0.0, TEXT_WEIGHT * text + FILE_WEIGHT * files)))
    return _Score(
        value,
        f"Score {value} = {TEXT_WEIGHT} · chrF {text:.1f} of the changed non-test lines against "
        f"the reference's + {FILE_WEIGHT} · {files:.0f} (overlap of the files touched).",
    )


def _checked_score(base: _Score, checks: list[str], candidate: _Patch, noun: str) -> _Score:
    """s4/s5: the reference score blended with the share of quoted checks the patch meets."""
    quoted = [quotes for quotes in map(_spans, checks) if quotes]
    if candidate.error:
        return base
    if not quoted:
        return _Score(base.value, f"{base.reason} None of the {noun} quotes code to check.")
    met = sum(_coverage(quotes, candidate.lines) >= COVERAGE_PASS for quotes in quoted)
    share = 100 * met / len(quoted)
    value = round(CHECK_WEIGHT * base.value + (1 - CHECK_WEIGHT) * share)
    return _Score(
        value,
        f"Score {value} = {CHECK_WEIGHT} · {base.value} + {1 - CHECK_WEIGHT} · {share:.0f}: "
        f"{met} of {len(quoted)} {noun} are met (quote coverage ≥ {COVERAGE_PASS:.0f}). "
        f"Reference score: {base.reason}",
    )


def _check_requirement(
    title: str, detail: str, candidate: _Patch, base: _Score | None
) -> tuple[bool, str]:
    """Whether ``candidate`` meets one rubric requirement, and why."""
    located, described = _spans(title), _spans(detail)
    paths = [s for s in located + described if _PATH.match(s)]
    names = [s for s in located if s not in paths and _NAME.match(s.removesuffix("()"))]
    quotes = [s for s in described + located if s not in paths and s not in names]
    if not paths and not names and not quotes:
        if base is None:
            return False, "Nothing in it can be checked offline, and there is no reference."
        verb = "reaches" if base.value >= PASS_SCORE else "is below"
        return base.value >= PASS_SCORE, f"Nothing in it to check; the reference score {verb} 50."
    missing = [path for path in paths if not _touches(candidate, path)]
    if missing:
        return False, f"The patch does not touch `{missing[0]}`."
    lines = candidate.lines
    if names:
        inside = [change for change in candidate.changes if _in_scope(change, names)]
        if not inside:
            return False, f"The patch changes nothing in `{names[0]}`."
        lines = [line for change in inside for line in change.lines]
    if not quotes:
        return True, "The patch changes the place it names."
    coverage = _coverage(quotes, lines)
    relation = "≥" if coverage >= COVERAGE_PASS else "<"
    return (
        coverage >= COVERAGE_PASS,
        f"Coverage of its quoted code {coverage:.0f} {relation} {COVERAGE_PASS:.0f}.",
    )


def _places(reference: _Patch) -> str:
    """The files and scopes of the changes, as "`a.py` (`f()`, `g()`) and `b.py`"."""
    parts = []
    for path in reference.files:
        scopes = dict.fromkeys(
            f"`{c.scope}`" for c in reference.changes if c.path == path and c.scope
        )
        parts.append(f"`{path}`" + (f" ({', '.join(scopes)})" if scopes else ""))
    return " and ".join(parts)


def _change_detail(change: CodeChange) -> str:
    where = f"In `{change.path}`" + (f", in `{change.scope}`" if change.scope else "")
    if change.removed and change.added:
        return f"{where}: replace {_quotes(change.removed)} with {_quotes(change.added)}."
    if change.added:
        return f"{where}: add {_quotes(change.added)}."
    return f"{where}: remove {_quotes(change.removed)}."


def _draft(bug: dict[str, Any], reference: _Patch) -> dict[str, Any]:
    key = str(bug.get("key") or "(no key)")
    listed = ", ".join(f"`{path}`" for path in reference.test_files)
    tests = f" The reference also updates the tests in {listed}." if listed else ""
    if reference.error:
        title = "could not be read" if not reference.readable else "changes no non-test code"
        return {
            "root_cause": _say(f"Bug `{key}`: no skeleton, as {reference.error}.{tests}"),
            "requirements": [
                {
                    "title": _say(f"The reference fix {title}"),
                    "detail": _say(
                        f"{_sentence(reference.error)}: write the requirements from the bug "
                        "description."
                    ),
                }
            ],
            "acceptable_solutions": [_say("A change to non-test code that fixes the bug.")],
            "unacceptable_solutions": [_say("A patch that changes only tests.")],
        }
    removed = [line for c in reference.changes for line in c.removed if is_condition(line)]
    added = [line for c in reference.changes for line in c.added if is_condition(line)]
    conditions = (
        f" It changes the condition lines {_quotes(removed) or '(none)'} → "
        f"{_quotes(added) or '(none)'}."
        if removed or added
        else " It changes no condition line."
    )
    scopes = ", ".join(f"`{scope}`" for scope in reference.scopes) or _places(reference)
    unacceptable = [
        _say("A patch that changes only tests, or weakens them, instead of the code."),
        _say(f"A patch that does not change {scopes}, where the reference fix is."),
    ]
    if len(reference.changes) > 1:
        count = len(reference.changes)
        unacceptable.append(_say(f"A patch that makes only some of the {count} changes above."))
    if removed or added:
        unacceptable.append(
            _say(
                "Suppressing the error (catching or ignoring it, skipping the input, loosening "
                "a check) instead of fixing the condition."
            )
        )
    return {
        "root_cause": _say(
            f"Bug `{key}`: the reference fix changes {_places(reference)}.{conditions}{tests} "
            "This skeleton is read off the diff; state the actual root cause from the report."
        ),
        "requirements": [
            {
                "title": _say(f"Change `{change.scope or change.path}` near line {change.line}"),
                "detail": _say(_change_detail(change)),
            }
            for change in reference.changes
        ],
        "acceptable_solutions": [
            _say(f"A change to {scopes} that behaves like the reference, written differently."),
            _say("Extra test, comment or formatting changes alongside the fix."),
        ],
        "unacceptable_solutions": unacceptable,
    }


def _free_form(draft: dict[str, Any]) -> str:
    """The templated draft as Markdown prose and bullets, without the template's headings."""

    def bullets(texts: list[str]) -> list[str]:
        return [f"- {text.removeprefix(PREFIX)}" for text in texts]

    details = [requirement["detail"] for requirement in draft["requirements"]]
    return "\n".join(
        [
            draft["root_cause"],
            "",
            "A valid patch does all of this:",
            "",
            *bullets(details),
            "",
            "Fine:",
            "",
            *bullets(draft["acceptable_solutions"]),
            "",
            "Not valid:",
            "",
            *bullets(draft["unacceptable_solutions"]),
            "",
        ]
    )


def _where(change: CodeChange) -> str:
    return f"in {change.scope} of {change.path}" if change.scope else f"in {change.path}"


def _properties(reference: _Patch) -> list[str]:
    if reference.error:
        return [_say(f"No property can be read off the reference: {reference.error}.")]
    properties = []
    for change in reference.changes:
        conditions = [line for line in change.added if is_condition(line)]
        if conditions:
            properties.append(_say(f"keeps the condition {_quotes(conditions)} {_where(change)}"))
        elif change.added:
            properties.append(_say(f"keeps {_quotes(change.added)} {_where(change)}"))
        else:
            properties.append(_say(f"removes {_quotes(change.removed)} {_where(change)}"))
    return properties


def _tests(reference: _Patch) -> list[dict[str, str]]:
    tests = []
    for number, change in enumerate(reference.changes, start=1):
        slug = _NON_WORD.sub("_", change.scope or change.path).strip("_")
        effect = (
            f"does what {_quotes(change.added)} does"
            if change.added
            else f"no longer does what {_quotes(change.removed)} did"
        )
        tests.append(
            {
                "name": _say(f"test_change_{number}_{slug}"),
                "description": _say(
                    f"Runs the code {_where(change)} on the input of the bug report; passes "
                    f"when it {effect} in the reference fix."
                ),
            }
        )
    for path in reference.test_files:
        tests.append(
            {
                "name": _say(path),
                "description": _say(
                    "A test file the reference fix updates; the patch should pass it."
                ),
            }
        )
    if not tests:
        tests.append(
            {
                "name": _say("no_test"),
                "description": _say(f"No test can be read off the reference: {reference.error}."),
            }
        )
    return tests


def _judge_rubric(
    candidate: _Patch, reference: _Patch, rubric: dict[str, Any] | None
) -> dict[str, Any]:
    base = None if reference.error else _reference_score(candidate, reference)
    requirements = (rubric or {}).get("requirements") or []
    results = []
    for index, requirement in enumerate(requirements, start=1):
        title, detail = str(requirement.get("title", "")), str(requirement.get("detail", ""))
        passed, reason = _check_requirement(title, detail, candidate, base)
        results.append({"index": index, "passed": passed, "reason": _say(reason)})
    failed = [str(result["index"]) for result in results if not result["passed"]]
    if candidate.error:
        valid, why = False, _sentence(candidate.error) + "."
    elif results:
        valid = not failed
        why = f"requirement(s) {', '.join(failed)} of {len(results)} fail."
        why = f"all {len(results)} requirements pass." if valid else why
    elif base is not None:
        valid = base.value >= PASS_SCORE
        why = f"no rubric requirements; the reference score is {base.value} (VALID from 50)."
    else:
        valid, why = False, "no rubric requirements, and no usable reference to compare with."
    verdict = "VALID" if valid else "INVALID"
    files = ", ".join(f"`{path}`" for path in candidate.files) or "no non-test file"
    similarity = base.reason if base else f"No reference score: {reference.error}."
    return {
        "thought": _say(f"The patch changes {files}. {similarity}"),
        "verdict": verdict,
        "justification": _say(f"{verdict}: {_sentence(why)}"),
        "requirements": results,
    }


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


def _score(purpose: str, inputs: dict[str, Any]) -> _Score:
    candidate = _read_patch(_get(inputs, purpose, "candidate_diff", (str,)))
    if purpose == "judge.s1a":
        return _s1a(candidate)
    reference = _read_patch(_get(inputs, purpose, "reference_diff", (str, type(None))))
    base = _reference_score(candidate, reference)
    if purpose == "judge.s2":
        before = _get(inputs, purpose, "previous", (dict,)).get("score")
        if not isinstance(before, int) or isinstance(before, bool):
            raise OfflineUnsupported(
                BAD_INPUT.format(purpose=purpose, key="previous.score", expected="an int")
            )
        if abs(before - base.value) <= AGREE_WITHIN:
            return _Score(base.value, f"Re-check: {base.reason} I agree with {before}.")
        return _Score(base.value, f"Re-check: {base.reason} I revise {before} to {base.value}.")
    if purpose == "judge.s4":
        properties = [str(p) for p in _get(inputs, purpose, "properties", (list,))]
        return _checked_score(base, properties, candidate, "properties")
    if purpose == "judge.s5":
        tests = _check_items(purpose, "tests", _get(inputs, purpose, "tests", (list,)))
        texts = [f"{t.get('name', '')} {t.get('description', '')}" for t in tests]
        return _checked_score(base, texts, candidate, "tests")
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
        return {"score": max(0, min(100, score.value)), "reasoning": _say(score.reason)}
    if purpose == "judge.rubric":
        candidate = _read_patch(_get(inputs, purpose, "candidate_diff", (str,)))
        reference = _read_patch(_get(inputs, purpose, "reference_diff", (str, type(None))))
        rubric = _get(inputs, purpose, "rubric", (dict, type(None)))
        _check_items(purpose, "rubric.requirements", (rubric or {}).get("requirements") or [])
        return _judge_rubric(candidate, reference, rubric)
    reference = _read_patch(_get(inputs, purpose, "reference_diff", (str,)))
    if purpose == "judge.s4.analyze":
        return {"properties": _properties(reference)}
    if purpose == "judge.s5.tests":
        return {"tests": _tests(reference)}
    variant = _get(inputs, purpose, "variant", (str,))
    if variant not in ("templated", "free_form"):
        expected = "'templated' or 'free_form'"
        raise OfflineUnsupported(
            BAD_INPUT.format(purpose=purpose, key="variant", expected=expected)
        )
    draft = _draft(bug, reference)
    return draft if variant == "templated" else {"rubric": _free_form(draft)}
