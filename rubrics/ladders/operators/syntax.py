"""A changed file's language, as far as the operators need it: its comment syntax, which
mutations and declarations apply, and each line's code without its strings and comments.

Mutations and renames look only at the code left by :func:`mask_line`, so they never touch
a string or a comment.
"""

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from sejury_web.diffs import DiffLine, Hunk, LineKind

Family = Literal["c", "python", "script"]


@dataclass(frozen=True)
class Syntax:
    comment: str
    family: Family  # which mutations and declarations apply


C = Syntax("//", "c")
PYTHON = Syntax("#", "python")
SCRIPT = Syntax("#", "script")
# fmt: off
_C_SUFFIXES = (
    ".java", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".js", ".jsx", ".mjs",
    ".cjs", ".ts", ".tsx", ".go", ".rs", ".kt", ".kts", ".scala", ".swift", ".dart", ".groovy",
    ".php",
)
_SCRIPT_SUFFIXES = (
    ".sh", ".bash", ".zsh", ".rb", ".pl", ".pm", ".r", ".yaml", ".yml", ".toml", ".cmake", ".mk",
    ".properties", ".cfg", ".conf",
)
# fmt: on
_SYNTAX_BY_SUFFIX = {
    **dict.fromkeys(_C_SUFFIXES, C),
    **dict.fromkeys((".py", ".pyi"), PYTHON),
    **dict.fromkeys(_SCRIPT_SUFFIXES, SCRIPT),
}
_SYNTAX_BY_NAME = dict.fromkeys(("Makefile", "makefile", "GNUmakefile", "Dockerfile"), SCRIPT)


def syntax_of(path: str) -> Syntax | None:
    """The syntax of the file at ``path``, or None for a file of unknown type."""
    name = PurePosixPath(path)
    return _SYNTAX_BY_NAME.get(name.name) or _SYNTAX_BY_SUFFIX.get(name.suffix.lower())


MASK = "\0"
STRING_BLOCKS = ('"""', "'''")


def mask_line(text: str, syntax: Syntax, open_block: str | None) -> tuple[str, str | None]:
    """``text`` with comments and string contents blanked (same length), and the block
    comment or triple-quoted string still open at its end."""
    out = list(text)
    i, n = 0, len(text)
    if open_block is None and syntax.family == "c" and re.match(r"\s*\*(\s|/|$)", text):
        open_block = "*/"  # a line inside a block comment whose opening the hunk does not show
    while i < n:
        if open_block is not None:
            end = text.find(open_block, i)
            stop = n if end < 0 else end + len(open_block)
            keep = open_block in STRING_BLOCKS and end >= 0  # a string keeps its quotes
            for j in range(i, stop - (len(open_block) if keep else 0)):
                out[j] = MASK
            i, open_block = stop, (open_block if end < 0 else None)
            continue
        char = text[i]
        if syntax.family == "c" and text.startswith("//", i):
            out[i:] = MASK * (n - i)
            break
        if syntax.family == "c" and text.startswith("/*", i):
            out[i : i + 2] = MASK * 2
            i, open_block = i + 2, "*/"
            continue
        if (
            char == "#"
            and syntax.family != "c"
            and (syntax.family == "python" or i == 0 or text[i - 1].isspace())
        ):
            out[i:] = MASK * (n - i)
            break
        if syntax.family == "python" and text.startswith(STRING_BLOCKS, i):
            open_block = text[i : i + 3]
            i += 3
            continue
        if char in "\"'" or (char == "`" and syntax.family == "c"):
            j = i + 1
            while j < n and text[j] != char:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = MASK
            i = j + 1
            continue
        i += 1
    return "".join(out), open_block


@dataclass(frozen=True)
class SideLine:
    """A line of one side of a hunk (old: context and removed; new: context and added)."""

    index: int  # in ``hunk.lines``
    line: DiffLine
    code: str  # the text with strings and comments blanked
    open_before: str | None  # the block comment or string open where the line starts


def side_lines(hunk: Hunk, syntax: Syntax, kinds: tuple[LineKind, ...]) -> list[SideLine]:
    """The lines of ``hunk`` of the given kinds (one side of it), each with its code."""
    lines: list[SideLine] = []
    open_block: str | None = None
    for index, line in enumerate(hunk.lines):
        if line.kind in kinds:
            code, after = mask_line(line.text, syntax, open_block)
            lines.append(SideLine(index, line, code, open_block))
            open_block = after
    return lines


def has_code(code: str) -> bool:
    return bool(code.strip(" \t" + MASK))


def indentation(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t"))]
