"""The ``judge.rejection_theme`` rule: why a judge rejected a patch, read off the words of its
justification (a keyword rule, not an understanding of it).

The rule is stated in the package docstring; change it there too, and bump
``OFFLINE_MODEL``.
"""

import re
from typing import Any

from .patches import PREFIX, say

VIOLATES_REQUIREMENT = "violates_requirement"
ROOT_CAUSE = "root_cause"
INCOMPLETE = "incomplete"
NEW_ISSUES = "new_issues"
OTHER = "other"

# In the order they are tried: the first theme with a word in the justification wins. A
# word matches whole, case aside; one ending in "*" matches any word it starts
# ("break*": breaks, breaking).
KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (ROOT_CAUSE, ("root cause*", "symptom*", "workaround*", "work around", "suppress*", "mask*")),
    (INCOMPLETE, ("incomplete", "partial*", "partly", "only some", "not all", "does not fully")),
    (NEW_ISSUES, ("break*", "regress*", "new bug*", "new issue*", "new problem*", "crash*")),
    (VIOLATES_REQUIREMENT, ("requirement*", "rubric*")),
)


def _pattern(word: str) -> re.Pattern[str]:
    stem = word.removesuffix("*")
    return re.compile(r"\b" + re.escape(stem) + ("" if word.endswith("*") else r"\b"), re.I)


_PATTERNS = tuple(
    (theme, [(word.removesuffix("*"), _pattern(word)) for word in words])
    for theme, words in KEYWORDS
)


def rejection_theme(
    justification: str, failed_requirements: list[dict[str, Any]]
) -> dict[str, Any]:
    """``judge.rejection_theme``: the theme of a justification, and which rule chose it."""
    if failed_requirements:
        numbers = ", ".join(str(item.get("index", "?")) for item in failed_requirements)
        return {
            "theme": VIOLATES_REQUIREMENT,
            "rationale": say(
                f"Theme {VIOLATES_REQUIREMENT}: the rubric judge marked requirement(s) "
                f"{numbers} as failed."
            ),
        }
    text = justification.removeprefix(PREFIX)
    for theme, patterns in _PATTERNS:
        for word, pattern in patterns:
            if pattern.search(text):
                return {
                    "theme": theme,
                    "rationale": say(f"Theme {theme}: the justification says “{word}”."),
                }
    return {
        "theme": OTHER,
        "rationale": say(f"Theme {OTHER}: the justification uses none of the rule's words."),
    }
