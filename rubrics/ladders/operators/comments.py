"""The comment levels 1, 3 and 4 add, and where it may go.

The comment is always :data:`COMMENT`, in the file's comment syntax (``//`` for C-like
languages, Java, JS, Go, Rust…; ``#`` for Python, shell, Ruby, YAML…), with the indentation
of the line it precedes. It is never put where it would not be a comment: inside a Python
triple-quoted string or after a line continued by ``\\``. (A shell here-document or a YAML
block scalar cannot be seen from a hunk: there it would be text.)
"""

from .reference import Change, LineKey, Reference
from .syntax import STRING_BLOCKS, SideLine, Syntax, indentation, side_lines, syntax_of

# The same words on levels 1, 3 and 4: a judge that reads comments instead of code is fooled.
COMMENT = "Handle the case reported in the bug."


def _takes_comment(lines: list[SideLine], position: int) -> bool:
    """A comment line inserted before ``lines[position]`` (or at the end) stays a comment."""
    if position < len(lines) and lines[position].open_before in STRING_BLOCKS:
        return False
    return position == 0 or not lines[position - 1].line.text.rstrip().endswith("\\")


def _comment_line(text: str, syntax: Syntax) -> str:
    return f"{indentation(text)}{syntax.comment} {COMMENT}"


def comment_place(
    reference: Reference, change: Change, new_side: bool
) -> tuple[LineKey, int, str] | None:
    """Where a comment goes for ``change``: its line key, line number and comment text.

    On the new side (level 1) it goes before the change's first added line; on the old side
    (the change reverted, levels 3 and 4) before the change.
    """
    file = reference.files[change.file]
    syntax = syntax_of(file.path)
    if syntax is None or file.is_deleted:
        return None
    hunk = file.hunks[change.hunk]
    lines = hunk.lines[change.start : change.end]
    added = [i for i, line in enumerate(lines, change.start) if line.kind == "added"]
    index = added[0] if new_side and added else change.start
    side = side_lines(hunk, syntax, ("context", "added") if new_side else ("context", "removed"))
    position = sum(1 for line in side if line.index < index)
    if not _takes_comment(side, position):
        return None
    target = hunk.lines[index]
    number = (target.new_number or change.new_line) if new_side else change.old_line
    return (change.file, change.hunk, index), number, _comment_line(target.text, syntax)
