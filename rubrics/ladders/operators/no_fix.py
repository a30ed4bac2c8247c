"""Level 4, *no fix*: every change is reverted, and a comment keeps each file touched.

:data:`~.comments.COMMENT` is added where the first change of each file was (the first
change with a place for a comment), so every file is touched and no behaviour changes. A
created file becomes a file holding only the comment. Skipped when a changed file has no
known comment syntax, or the fix deletes a file (the deletion cannot be undone while the
file is still touched).
"""

from .comments import comment_place
from .reference import Edits, Reference
from .rungs import Rung, Skipped
from .syntax import syntax_of

UNKNOWN_SYNTAX = "{path} has no known comment syntax: no comment can stand in for its changes"
DELETES_FILE = "the fix deletes {path}: a deletion cannot be undone while the file is touched"
NO_PLACE_IN_FILE = "no change of {path} has a place for a comment line"


def no_fix(reference: Reference) -> Rung | Skipped:
    """Level 4: all changes reverted, the comment where each file's first change was."""
    edits = Edits(reverted={change.number for change in reference.changes})
    total = len(reference.changes)
    operators = [f"all {total} changes reverted" if total > 1 else "the one change reverted"]
    for file_index in reference.changed_files():
        file = reference.files[file_index]
        if file.is_deleted:
            return Skipped(4, DELETES_FILE.format(path=file.path))
        if syntax_of(file.path) is None:
            return Skipped(4, UNKNOWN_SYNTAX.format(path=file.path))
        place = next(
            (
                found
                for change in reference.file_changes(file_index)
                if (found := comment_place(reference, change, new_side=False)) is not None
            ),
            None,
        )
        if place is None:
            return Skipped(4, NO_PLACE_IN_FILE.format(path=file.path))
        key, number, comment = place
        edits.comments[key] = comment
        operators.append(f"comment added before line {number} of {file.path}")
    return Rung(4, reference.render(edits), tuple(operators))
