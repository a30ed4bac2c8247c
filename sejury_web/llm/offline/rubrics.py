"""The rubric rules: ``rubric.draft`` writes a rubric, ``judge.rubric`` checks a patch with one.

The rules are stated in the package docstring; change them there too, and bump
``OFFLINE_MODEL``.
"""

import re
from typing import Any

from sejury_web.similarity import CodeChange, is_condition

from .patches import (
    COVERAGE_PASS,
    PREFIX,
    Patch,
    code_spans,
    quote_coverage,
    quote_lines,
    say,
)
from .scores import Score, reference_score

PASS_SCORE = 50  # a reference score that counts as "like the reference"

_PATH = re.compile(
    r"^[\w.@+-]*(?:/[\w.@+-]+)+/?$"
    r"|^[\w.@+-]+\.(?:py|pyi|java|kt|scala|js|jsx|mjs|cjs|ts|tsx|go|c|h|cc|cpp|cxx|hpp|rs|rb"
    r"|cs|swift|php|m|mm|sh|sql|json|ya?ml|toml|xml|html|css|md|txt|cfg|ini|gradle)$"
)
_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*$")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _places(reference: Patch) -> str:
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
        return f"{where}: replace {quote_lines(change.removed)} with {quote_lines(change.added)}."
    if change.added:
        return f"{where}: add {quote_lines(change.added)}."
    return f"{where}: remove {quote_lines(change.removed)}."


def templated_draft(bug: dict[str, Any], reference: Patch) -> dict[str, Any]:
    """``rubric.draft``, templated: a skeleton read off the reference diff."""
    key = str(bug.get("key") or "(no key)")
    listed = ", ".join(f"`{path}`" for path in reference.test_files)
    tests = f" The reference also updates the tests in {listed}." if listed else ""
    if reference.error:
        title = "could not be read" if not reference.readable else "changes no non-test code"
        return {
            "root_cause": say(f"Bug `{key}`: no skeleton, as {reference.error}.{tests}"),
            "requirements": [
                {
                    "title": say(f"The reference fix {title}"),
                    "detail": say(
                        f"{_sentence(reference.error)}: write the requirements from the bug "
                        "description."
                    ),
                }
            ],
            "acceptable_solutions": [say("A change to non-test code that fixes the bug.")],
            "unacceptable_solutions": [say("A patch that changes only tests.")],
        }
    removed = [line for c in reference.changes for line in c.removed if is_condition(line)]
    added = [line for c in reference.changes for line in c.added if is_condition(line)]
    conditions = (
        f" It changes the condition lines {quote_lines(removed) or '(none)'} → "
        f"{quote_lines(added) or '(none)'}."
        if removed or added
        else " It changes no condition line."
    )
    scopes = ", ".join(f"`{scope}`" for scope in reference.scopes) or _places(reference)
    unacceptable = [
        say("A patch that changes only tests, or weakens them, instead of the code."),
        say(f"A patch that does not change {scopes}, where the reference fix is."),
    ]
    if len(reference.changes) > 1:
        count = len(reference.changes)
        unacceptable.append(say(f"A patch that makes only some of the {count} changes above."))
    if removed or added:
        unacceptable.append(
            say(
                "Suppressing the error (catching or ignoring it, skipping the input, loosening "
                "a check) instead of fixing the condition."
            )
        )
    return {
        "root_cause": say(
            f"Bug `{key}`: the reference fix changes {_places(reference)}.{conditions}{tests} "
            "This skeleton is read off the diff; state the actual root cause from the report."
        ),
        "requirements": [
            {
                "title": say(f"Change `{change.scope or change.path}` near line {change.line}"),
                "detail": say(_change_detail(change)),
            }
            for change in reference.changes
        ],
        "acceptable_solutions": [
            say(f"A change to {scopes} that behaves like the reference, written differently."),
            say("Extra test, comment or formatting changes alongside the fix."),
        ],
        "unacceptable_solutions": unacceptable,
    }


def free_form(draft: dict[str, Any]) -> str:
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


def judge_rubric(
    candidate: Patch, reference: Patch, rubric: dict[str, Any] | None
) -> dict[str, Any]:
    """``judge.rubric``: a verdict from the rubric's requirements, checked one by one."""
    base = None if reference.error else reference_score(candidate, reference)
    requirements = (rubric or {}).get("requirements") or []
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
