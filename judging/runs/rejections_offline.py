"""What the offline model, which is NOT an LLM, answers to the theme prompt of
``rejections`` (``judge.rejection_theme``): a keyword rule over the judge's justification,
not an understanding of it.

The rule is registered with ``@offline_rule`` at import (``JudgingConfig.ready()`` imports
this module). Change it and bump ``sejury_web.llm.offline.OFFLINE_MODEL``: it is part of the
cache key.
"""

import re
from typing import Any

from sejury_web.llm.offline import PREFIX, Inputs, offline_rule, say

from .rejections import PURPOSE, THEMES

VIOLATES_REQUIREMENT = THEMES.VIOLATES_REQUIREMENT.value
ROOT_CAUSE = THEMES.ROOT_CAUSE.value
INCOMPLETE = THEMES.INCOMPLETE.value
NEW_ISSUES = THEMES.NEW_ISSUES.value
OTHER = THEMES.OTHER.value

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


@offline_rule(PURPOSE)
def rejection_theme(inputs: Inputs) -> dict[str, Any]:
    """Why a judge rejected a test-passing patch, by the words of its ``justification`` (the
    diff is not read).

    ``violates_requirement`` when the inputs' ``failed_requirements`` are not empty (the
    rubric judge marked some as failed); otherwise the first theme of ``KEYWORDS`` with one
    of its words in the justification (case aside, the offline marker ignored; a word
    matches whole, one written with ``*`` also as the start of a longer word); else
    ``other``. The rationale names the rule and the word that decided.
    """
    justification = inputs.require("justification", str)
    failed_requirements = inputs.objects(
        "failed_requirements", inputs.require("failed_requirements", list)
    )
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
