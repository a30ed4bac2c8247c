"""What every rule of the offline heuristic reads and writes: patches, code quotes, the marker.

The terms used here (*changes*, *empty*, *unreadable*, *test-only*, *quote coverage*) are
defined in the package docstring.
"""

import re
from dataclasses import dataclass

from sejury_web.diffs import DiffError
from sejury_web.similarity import CodeChanges, chrf, code_changes

from ..types import OFFLINE_MARKER

# Why a patch has nothing to compare; these end up in reasons and rubric text.
NO_REFERENCE = "there is no reference patch"
EMPTY_PATCH = "the patch is empty"
UNREADABLE_PATCH = "the patch is not a readable unified diff ({error})"
NO_CODE_CHANGE = "the patch changes no line of non-test code"

PREFIX = f"[{OFFLINE_MARKER}] "
COVERAGE_PASS = 50.0  # quote coverage that meets a requirement, property or test
QUOTED_LINES = 3  # per side of a change
QUOTE_WIDTH = 100
COVERAGE_LINES = 500  # lines a quote is compared with: keeps huge patches fast

_SPAN = re.compile(r"``(.+?)``|`([^`]+)`")
_BRACKETS_ONLY = re.compile(r"^[\s{}()\[\];,]*$")


def say(text: str) -> str:
    """``text`` marked as the offline heuristic's, as every free-text field must be."""
    return PREFIX + text


@dataclass
class Patch(CodeChanges):
    """A diff as the heuristic compares it; ``error`` says why it has no changes."""

    error: str | None = None
    readable: bool = True


def read_patch(diff: str | None) -> Patch:
    """The changes of ``diff``, or the reason it has none (``None`` is no reference)."""
    if diff is None:
        return Patch(error=NO_REFERENCE, readable=False)
    if not diff.strip():
        return Patch(error=EMPTY_PATCH, readable=False)
    try:
        changes = code_changes(diff)
    except DiffError as error:
        return Patch(error=UNREADABLE_PATCH.format(error=error), readable=False)
    if not changes.changes:
        return Patch(test_files=changes.test_files, error=NO_CODE_CHANGE)
    return Patch(changes=changes.changes, test_files=changes.test_files)


def code_spans(text: str) -> list[str]:
    """The code spans of Markdown text, without the ellipsis of a cut quote."""
    found = (a or b for a, b in _SPAN.findall(text))
    return [span.strip().removesuffix("…").strip() for span in found if span.strip()]


def quote_coverage(quotes: list[str], lines: list[str]) -> float:
    """Mean over the quotes of their best chrF against any one line (0 without lines)."""
    if not quotes or not lines:
        return 0.0
    lines = lines[:COVERAGE_LINES]
    return sum(max(chrf(line, quote) for line in lines) for quote in quotes) / len(quotes)


def _quote(line: str) -> str:
    cut = line if len(line) <= QUOTE_WIDTH else line[: QUOTE_WIDTH - 1] + "…"
    # Markdown needs a longer fence, and spaces inside it, around a backtick.
    return f"`` {cut} ``" if "`" in cut else f"`{cut}`"


def quote_lines(lines: list[str]) -> str:
    """Up to ``QUOTED_LINES`` quoted lines, bracket-only lines skipped unless all are."""
    shown = [line for line in lines if not _BRACKETS_ONLY.match(line)] or lines
    text = ", ".join(_quote(line) for line in shown[:QUOTED_LINES])
    more = len(shown) - QUOTED_LINES
    return text + (f" (and {more} more)" if more > 0 else "")
