"""What the offline model, which is NOT an LLM, answers to each strategy's prompts.

One rule per purpose, each described by its docstring, registered with ``@offline_rule`` at
import (``judging.strategies`` imports this module after the strategies). A rule reads the
request's ``inputs``, never its messages; the terms (*changes*, *reference score*, *quote
coverage*…) are defined in ``sejury_web.llm.offline``. Change a rule and bump
``OFFLINE_MODEL`` there: it is part of the cache key.

A new strategy whose offline answer is the reference score alone registers in one line, as
S1b and S3 do below: ``offline_rule_register("judge.mine", reference_similarity)``.
"""

import re
from collections.abc import Callable
from typing import Any

from sejury_web.llm.offline import (
    Inputs,
    Score,
    offline_rule,
    offline_rule_register,
    reference_similarity,
    say,
    scored_answer,
)
from sejury_web.llm.offline.patches import (
    COVERAGE_PASS,
    Patch,
    code_spans,
    quote_coverage,
    quote_lines,
    read_patch,
)
from sejury_web.llm.offline.scores import inputs_reference_score, reference_score, undecided
from sejury_web.similarity import CodeChange, is_condition

CHECK_WEIGHT = 0.5  # of the reference score in s4/s5; the rest is the share of checks met
AGREE_WITHIN = 10  # s2: points of difference still counted as agreement
PASS_SCORE = 50  # the rubric judge: a reference score that counts as "like the reference"

# The purposes whose answer is ``{score, reasoning}`` (S2's first turn gives ``reasons``).
SCORE_PURPOSES = (
    "judge.s1a",
    "judge.s1b",
    "judge.s2",
    "judge.s3",
    "judge.s4",
    "judge.s5",
    "judge.roles",
)

_NON_WORD = re.compile(r"\W+")


def _candidate(inputs: Inputs) -> Patch:
    return read_patch(inputs.require("candidate_diff", str))


# -- one-step scores ---------------------------------------------------------------------------


@offline_rule("judge.s1a")
def s1a_score(inputs: Inputs) -> dict[str, Any]:
    """S1a (no reference): 50 when the patch changes non-test code ("undecided without a
    reference"), else 0."""
    return scored_answer(undecided(_candidate(inputs)))


# The offline model cannot tell "correct" (S1b) from "equivalent" (S3): both are the
# reference score, 0 for an empty, unreadable or test-only patch, the S1a rule without a
# usable reference.
offline_rule_register("judge.s1b", reference_similarity)
offline_rule_register("judge.s3", reference_similarity)


@offline_rule("judge.s2.assess")
def s2_assess(inputs: Inputs) -> dict[str, Any]:
    """S2's first turn: the reference score, its reasoning as the one reason in ``reasons``
    (an input missing is reported as S1b's, whose prompt this turn is)."""
    score = inputs_reference_score(Inputs("judge.s1b", inputs.values))
    return {"score": score.value, "reasons": [say(score.reason)]}


@offline_rule("judge.s2")
def s2_rethink(inputs: Inputs) -> dict[str, Any]:
    """S2's second turn: the reference score again, a deterministic re-check; the reasoning
    agrees with ``previous`` when within ``AGREE_WITHIN`` points and otherwise revises it."""
    base = inputs_reference_score(inputs)
    before = inputs.require("previous", dict).get("score")
    if not isinstance(before, int) or isinstance(before, bool):
        raise inputs.bad("previous.score", "an int")
    if abs(before - base.value) <= AGREE_WITHIN:
        return scored_answer(Score(base.value, f"Re-check: {base.reason} I agree with {before}."))
    return scored_answer(
        Score(base.value, f"Re-check: {base.reason} I revise {before} to {base.value}.")
    )


@offline_rule("judge.roles")
def roles_score(inputs: Inputs) -> dict[str, Any]:
    """One call per persona of the ``roles`` strategy: the reference score and its reasoning,
    plus a sentence saying that the heuristic does not play roles. It reads neither the
    persona nor the ``role`` input: every persona gets the same answer."""
    base = inputs_reference_score(inputs)
    return scored_answer(
        Score(
            base.value,
            f"{base.reason} The offline heuristic does not play roles: every role gets this "
            "same S1b heuristic score and reasoning.",
        )
    )


# -- two steps: S4's properties, S5's tests ---------------------------------------------------


def _where(change: CodeChange) -> str:
    return f"in {change.scope} of {change.path}" if change.scope else f"in {change.path}"


@offline_rule("judge.s4.analyze")
def s4_analyze(inputs: Inputs) -> dict[str, Any]:
    """S4's first step: one property per reference change, quoting its added condition lines
    (else its added, else its removed lines) and naming its scope and file."""
    reference = read_patch(inputs.require("reference_diff", str))
    if reference.error:
        return {
            "properties": [say(f"No property can be read off the reference: {reference.error}.")]
        }
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
    return {"properties": properties}


@offline_rule("judge.s5.tests")
def s5_tests(inputs: Inputs) -> dict[str, Any]:
    """S5's first step: one test per reference change, quoting its added (else removed)
    lines, plus one per test file the reference changes (these quote nothing)."""
    reference = read_patch(inputs.require("reference_diff", str))
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
    return {"tests": tests}


def _checked_score(base: Score | None, checks: list[str], candidate: Patch, noun: str) -> Score:
    """The share of quoted checks the patch meets, blended with the reference score
    (``base``), or alone when the prompt showed no reference (``base`` is None)."""
    quoted = [quotes for quotes in map(code_spans, checks) if quotes]
    fallback = base if base is not None else undecided(candidate)
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


def _step_two(inputs: Inputs, noun: str, checks: Callable[[], list[str]]) -> dict[str, Any]:
    """S4's and S5's second step: ``round(0.5 · reference score + 0.5 · 100 · k/n)``, where
    n counts the checks (properties, tests) that quote code and k those whose quote coverage
    over the patch's changed lines reaches 50; the reference score alone when n is 0, and 0
    for an empty, unreadable or test-only patch. When the inputs carry ``reference_diff:
    null`` (the step-2 prompt does not show the reference), ``round(100 · k/n)`` alone, and
    the S1a rule when n is 0."""
    candidate = _candidate(inputs)
    reference_diff = inputs.require("reference_diff", str, type(None))
    base = reference_score(candidate, read_patch(reference_diff))
    base_or_none = None if reference_diff is None else base
    return scored_answer(_checked_score(base_or_none, checks(), candidate, noun))


@offline_rule("judge.s4")
def s4_assess(inputs: Inputs) -> dict[str, Any]:
    """S4's second step: the share of the properties met (see ``_step_two``)."""
    return _step_two(
        inputs, "properties", lambda: [str(p) for p in inputs.require("properties", list)]
    )


@offline_rule("judge.s5")
def s5_assess(inputs: Inputs) -> dict[str, Any]:
    """S5's second step: the share of the tests met, a test quoting from its name and
    description (see ``_step_two``)."""

    def texts() -> list[str]:
        tests = inputs.objects("tests", inputs.require("tests", list))
        return [f"{t.get('name', '')} {t.get('description', '')}" for t in tests]

    return _step_two(inputs, "tests", texts)


# -- the rubric judge -----------------------------------------------------------------------

_PATH = re.compile(
    r"^[\w.@+-]*(?:/[\w.@+-]+)+/?$"
    r"|^[\w.@+-]+\.(?:py|pyi|java|kt|scala|js|jsx|mjs|cjs|ts|tsx|go|c|h|cc|cpp|cxx|hpp|rs|rb"
    r"|cs|swift|php|m|mm|sh|sql|json|ya?ml|toml|xml|html|css|md|txt|cfg|ini|gradle)$"
)
_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*$")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _touches(patch: Patch, path: str) -> bool:
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


def _check_requirement(
    title: str, detail: str, candidate: Patch, base: Score | None
) -> tuple[bool, str]:
    """Whether ``candidate`` meets one rubric requirement, and why."""
    located, described = code_spans(title), code_spans(detail)
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
    coverage = quote_coverage(quotes, lines)
    relation = "≥" if coverage >= COVERAGE_PASS else "<"
    return (
        coverage >= COVERAGE_PASS,
        f"Coverage of its quoted code {coverage:.0f} {relation} {COVERAGE_PASS:.0f}.",
    )


@offline_rule("judge.rubric")
def rubric_verdict(inputs: Inputs) -> dict[str, Any]:
    """The rubric judge: a verdict from the rubric's requirements, checked one by one.

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
    candidate = _candidate(inputs)
    reference = read_patch(inputs.require("reference_diff", str, type(None)))
    structure = inputs.require("rubric", dict, type(None))
    requirements = inputs.objects(
        "rubric.requirements", (structure or {}).get("requirements") or []
    )
    base = None if reference.error else reference_score(candidate, reference)
    results = []
    for index, requirement in enumerate(requirements, start=1):
        title, detail = str(requirement.get("title", "")), str(requirement.get("detail", ""))
        passed, reason = _check_requirement(title, detail, candidate, base)
        results.append({"index": index, "passed": passed, "reason": say(reason)})
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
        "thought": say(f"The patch changes {files}. {similarity}"),
        "verdict": verdict,
        "justification": say(f"{verdict}: {_sentence(why)}"),
        "requirements": results,
    }
