"""Deterministic degradations of a reference fix: the rungs of REFINE's quality ladder.

A judge that can tell a good patch from a slightly worse one should score the rungs of a
bug's ladder in order. Each rung is built from the reference diff by operators that are
plain text edits of its hunks, so the same diff always gives the same ladder, and every
rung applies to the same files as the reference. Pure: no Django, no LLM.

Where each piece lives:

- :mod:`.ladder`: :func:`build_ladder`, level 0 (the reference fix, unchanged);
- :mod:`.rungs`: :data:`LEVELS`, :class:`Rung`, :class:`Skipped`;
- one module a level, each documenting its operators and why it skips:
  :mod:`.equivalent_rewrite` (1: a comment, a local renamed), :mod:`.partial_fix`
  (2: the later half of the changes reverted), :mod:`.wrong_fix` (3: a line mutated),
  :mod:`.no_fix` (4: every change reverted, a comment in its place);
- what they share: :mod:`.reference` (the diff's changes, and a rung rendered from edits:
  reverting, recounted headers, CRLF and ``\\ No newline`` kept), :mod:`.comments` (the
  comment levels 1, 3 and 4 add, and where it may go), :mod:`.syntax` (a file's language,
  and its code without strings and comments).
"""

from .comments import COMMENT
from .equivalent_rewrite import NO_COMMENT_PLACE
from .ladder import NO_CHANGE, UNKNOWN_LEVELS, build_ladder
from .no_fix import DELETES_FILE, NO_PLACE_IN_FILE, UNKNOWN_SYNTAX
from .partial_fix import ONE_CHANGE, ONE_CHANGE_PER_FILE
from .rungs import LEVELS, Rung, Skipped
from .wrong_fix import (
    NOTHING_TO_MUTATE,
    NOTHING_TO_MUTATE_NO_REVERT,
    NOTHING_TO_MUTATE_ONE_CHANGE,
)

__all__ = [
    "COMMENT",
    "DELETES_FILE",
    "LEVELS",
    "NOTHING_TO_MUTATE",
    "NOTHING_TO_MUTATE_NO_REVERT",
    "NOTHING_TO_MUTATE_ONE_CHANGE",
    "NO_CHANGE",
    "NO_COMMENT_PLACE",
    "NO_PLACE_IN_FILE",
    "ONE_CHANGE",
    "ONE_CHANGE_PER_FILE",
    "UNKNOWN_LEVELS",
    "UNKNOWN_SYNTAX",
    "Rung",
    "Skipped",
    "build_ladder",
]
