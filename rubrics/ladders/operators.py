r"""Deterministic degradations of a reference fix: the rungs of REFINE's quality ladder.

A judge that can tell a good patch from a slightly worse one should score the rungs of a
bug's ladder in order. Each rung is built from the reference diff by operators that are
plain text edits of its hunks, so the same diff always gives the same ladder, and every
rung applies to the same files as the reference (its pre-image is the reference's: context
and removed lines are never dropped or altered, only turned from removed into context).

A *change* is a maximal run of removed/added lines inside a hunk (with the ``\ No newline
at end of file`` markers among them). *Reverting* a change removes its added lines (and
their markers) and turns its removed lines into context lines; a hunk left with no change
is dropped. Hunk headers are recounted, and a hunk's new start is shifted by what the
earlier hunks of its file now add or remove. Everything else (``diff --git``, ``Index:``,
``---``/``+++`` headers, text around the diff, CRLF endings line by line) is kept as it is.

The comment these operators add is always :data:`COMMENT`, in the file's comment syntax
(``//`` for C-like languages, Java, JS, Go, Rust…; ``#`` for Python, shell, Ruby, YAML…),
with the indentation of the line it precedes. It is never put where it would not be a
comment: inside a Python triple-quoted string or after a line continued by ``\``. (A shell
here-document or a YAML block scalar cannot be seen from a hunk: there it would be text.)

Level 0, *reference fix*: the reference diff, unchanged.

Level 1, *equivalent rewrite* (behaviour kept; exposes a judge that only matches text):

- the comment is added before the first added line of the first change of a file of known
  type (before the change itself if it only removes lines);
- where possible, a local variable the fix introduces is renamed (``n`` → ``nValue``,
  ``n`` → ``n_value`` in Python or snake case) in every added line of its file. A
  candidate is declared in an added line (a C-like typed, ``var``/``let``/``const`` or Go
  ``:=`` declaration; a Python assignment), and the rename is made only when what the
  hunks show proves it keeps behaviour (reflection and ``eval`` aside): the whole scope is
  in one hunk (the enclosing ``{ … }`` block of a code body, not of a class; the enclosing
  Python ``def``, up to the next line indented as deep as the ``def``), every mention of the
  name in the file is an added line inside such a scope, after its declaration, in code
  (not in a string, an f-string or a comment), not after a ``.``, not called, not a keyword
  argument or object key, not alone on a line (a JS object shorthand); and the new name is
  nowhere in the diff.

A rung of level 1 always differs from the reference by its comment. Skipped when no
change has a place for it (no changed file has a known comment syntax, say).

Level 2, *partial fix*: roughly the later half of the changes is reverted
(``max(1, changes // 2)`` of them, the last in diff order), but never the first change of
a file, nor the change of a created or deleted file, so the rung touches the same files.
Skipped when every changed file has one change.

Level 3, *wrong fix*: one added line is mutated, in this order of preference (the first
kind that applies anywhere wins, then the first line where it applies, then the first
place in that line): invert a comparison or boolean operator (``==``/``!=``, ``<``/``>=``,
``>``/``<=`` when spaced as comparisons, not generics, ``&&``/``||``, Python
``and``/``or``), negate an ``if`` condition (``if (!(c))``; ``if not (c):``), add one to
an integer literal, flip a boolean literal (``true``/``false``, ``True``/``False``). Only
code is mutated, never strings or comments, and only in files of known type. When no
line can be mutated and the fix has several changes, the first (core) change is reverted
and the rest kept; if that leaves its file with no change, the comment stands in for it
(so the file is still touched). Otherwise skipped. (A fix that only inverts a comparison
gets back its bug's line: wrong by behaviour, though not by text, as level 4 is.)

Level 4, *no fix*: every change is reverted and the comment is added where the first
change of each file was (the first change with a place for a comment), so every file is
touched and no behaviour changes. A created file becomes a file holding only the comment.
Skipped when a changed file has no known comment syntax, or the fix deletes a file (the
deletion cannot be undone while the file is still touched).

The ladder is built on the raw text lines, found through the positions
:func:`sejury_web.diffs.parse_diff` gives (no Django, no LLM).
"""

import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Literal

from sejury_web.diffs import DiffLine, FileDiff, Hunk, LineKind, parse_diff

LEVELS: dict[int, str] = {
    0: "reference fix",
    1: "equivalent rewrite",
    2: "partial fix",
    3: "wrong fix",
    4: "no fix",
}

# The same words on levels 1, 3 and 4: a judge that reads comments instead of code is fooled.
COMMENT = "Handle the case reported in the bug."

NO_CHANGE = "the reference changes no line: there is nothing to degrade"
NO_COMMENT_PLACE = (
    "no change of {paths} takes a comment line (no known comment syntax, or only places inside"
    " a string or a continued line): no equivalent rewrite can be made"
)
ONE_CHANGE = "the fix is one change: no part of it can be dropped"
ONE_CHANGE_PER_FILE = (
    "each of the {files} changed files has one change: dropping one would leave its file untouched"
)
NOTHING_TO_MUTATE = (
    "no added line holds a comparison, a boolean operator, an `if`, an integer or a boolean"
    " literal in code of a known language"
)
NOTHING_TO_MUTATE_ONE_CHANGE = NOTHING_TO_MUTATE + ", and the fix is one change"
NOTHING_TO_MUTATE_NO_REVERT = (
    NOTHING_TO_MUTATE + ", and no change can be reverted while its file stays touched"
)
UNKNOWN_SYNTAX = "{path} has no known comment syntax: no comment can stand in for its changes"
DELETES_FILE = "the fix deletes {path}: a deletion cannot be undone while the file is touched"
NO_PLACE_IN_FILE = "no change of {path} has a place for a comment line"
UNKNOWN_LEVELS = "unknown ladder levels {levels}: the levels are 0 to 4"


@dataclass(frozen=True)
class Rung:
    """A level that was built: its diff and the operators that made it from the reference."""

    level: int
    diff: str
    operators: tuple[str, ...]


@dataclass(frozen=True)
class Skipped:
    """A level that does not apply to this reference, with a sentence for the lead."""

    level: int
    reason: str


Family = Literal["c", "python", "script"]


@dataclass(frozen=True)
class _Syntax:
    comment: str
    family: Family  # which mutations and declarations apply


_C = _Syntax("//", "c")
_PYTHON = _Syntax("#", "python")
_SCRIPT = _Syntax("#", "script")
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
    **dict.fromkeys(_C_SUFFIXES, _C),
    **dict.fromkeys((".py", ".pyi"), _PYTHON),
    **dict.fromkeys(_SCRIPT_SUFFIXES, _SCRIPT),
}
_SYNTAX_BY_NAME = dict.fromkeys(("Makefile", "makefile", "GNUmakefile", "Dockerfile"), _SCRIPT)


def _syntax_of(path: str) -> _Syntax | None:
    name = PurePosixPath(path)
    return _SYNTAX_BY_NAME.get(name.name) or _SYNTAX_BY_SUFFIX.get(name.suffix.lower())


# --- masking: code without its strings and comments --------------------------------------

_MASK = "\0"
_STRING_BLOCKS = ('"""', "'''")


def _mask_line(text: str, syntax: _Syntax, open_block: str | None) -> tuple[str, str | None]:
    """``text`` with comments and string contents blanked (same length), and the block
    comment or triple-quoted string still open at its end.

    Mutations and renames look only at what is left, so they never touch a string or a
    comment.
    """
    out = list(text)
    i, n = 0, len(text)
    if open_block is None and syntax.family == "c" and re.match(r"\s*\*(\s|/|$)", text):
        open_block = "*/"  # a line inside a block comment whose opening the hunk does not show
    while i < n:
        if open_block is not None:
            end = text.find(open_block, i)
            stop = n if end < 0 else end + len(open_block)
            keep = open_block in _STRING_BLOCKS and end >= 0  # a string keeps its quotes
            for j in range(i, stop - (len(open_block) if keep else 0)):
                out[j] = _MASK
            i, open_block = stop, (open_block if end < 0 else None)
            continue
        char = text[i]
        if syntax.family == "c" and text.startswith("//", i):
            out[i:] = _MASK * (n - i)
            break
        if syntax.family == "c" and text.startswith("/*", i):
            out[i : i + 2] = _MASK * 2
            i, open_block = i + 2, "*/"
            continue
        if (
            char == "#"
            and syntax.family != "c"
            and (syntax.family == "python" or i == 0 or text[i - 1].isspace())
        ):
            out[i:] = _MASK * (n - i)
            break
        if syntax.family == "python" and text.startswith(_STRING_BLOCKS, i):
            open_block = text[i : i + 3]
            i += 3
            continue
        if char in "\"'" or (char == "`" and syntax.family == "c"):
            j = i + 1
            while j < n and text[j] != char:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = _MASK
            i = j + 1
            continue
        i += 1
    return "".join(out), open_block


@dataclass(frozen=True)
class _SideLine:
    """A line of one side of a hunk (old: context and removed; new: context and added)."""

    index: int  # in ``hunk.lines``
    line: DiffLine
    code: str  # the text with strings and comments blanked
    open_before: str | None  # the block comment or string open where the line starts


def _side(hunk: Hunk, syntax: _Syntax, kinds: tuple[LineKind, ...]) -> list[_SideLine]:
    side: list[_SideLine] = []
    open_block: str | None = None
    for index, line in enumerate(hunk.lines):
        if line.kind in kinds:
            code, after = _mask_line(line.text, syntax, open_block)
            side.append(_SideLine(index, line, code, open_block))
            open_block = after
    return side


def _has_code(code: str) -> bool:
    return bool(code.strip(" \t" + _MASK))


def _indentation(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t"))]


def _takes_comment(side: list[_SideLine], position: int) -> bool:
    """A comment line inserted before ``side[position]`` (or at the end) stays a comment."""
    if position < len(side) and side[position].open_before in _STRING_BLOCKS:
        return False
    return position == 0 or not side[position - 1].line.text.rstrip().endswith("\\")


# --- the reference and the edits of a rung ------------------------------------------------


@dataclass(frozen=True)
class _Change:
    number: int  # 1-based, in diff order
    file: int
    hunk: int
    start: int  # first line in ``hunk.lines``
    end: int  # one past the last line (markers included)
    old_line: int  # where the change starts, in the old file
    new_line: int  # and in the new one


LineKey = tuple[int, int, int]  # file, hunk, line of ``hunk.lines``


@dataclass
class _Edits:
    reverted: set[int] = field(default_factory=set)  # change numbers
    replaced: dict[LineKey, str] = field(default_factory=dict)  # an added line's new text
    comments: dict[LineKey, str] = field(default_factory=dict)  # inserted before the line


class _Reference:
    """The reference diff as raw lines, with its parse and its changes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.raw = text.split("\n")  # "\r" kept: line endings survive line by line
        self.files = parse_diff(text).files
        self.changes: list[_Change] = []
        self.change_of: dict[LineKey, int] = {}
        for file_index, file in enumerate(self.files):
            for hunk_index, hunk in enumerate(file.hunks):
                self._find_changes(file_index, hunk_index, hunk)
        self.changed_hunks = {(change.file, change.hunk) for change in self.changes}

    def _find_changes(self, file_index: int, hunk_index: int, hunk: Hunk) -> None:
        # A side of zero lines is numbered from the line before it.
        old = hunk.old_start + (hunk.header_old_count == 0)
        new = hunk.new_start + (hunk.header_new_count == 0)
        lines, i = hunk.lines, 0
        while i < len(lines):
            if lines[i].kind not in ("added", "removed"):
                old, new = old + (lines[i].kind == "context"), new + (lines[i].kind == "context")
                i += 1
                continue
            start, old_line, new_line = i, old, new
            while i < len(lines) and lines[i].kind != "context":
                old, new = old + (lines[i].kind == "removed"), new + (lines[i].kind == "added")
                i += 1
            number = len(self.changes) + 1
            self.changes.append(
                _Change(number, file_index, hunk_index, start, i, old_line, new_line)
            )
            for index in range(start, i):
                self.change_of[(file_index, hunk_index, index)] = number

    def raw_line(self, file: int, hunk: int, index: int) -> str:
        return self.raw[self.files[file].hunks[hunk].header_line + index]

    def file_changes(self, file: int) -> list[_Change]:
        return [change for change in self.changes if change.file == file]

    def changed_files(self) -> list[int]:
        return sorted({change.file for change in self.changes})

    def render(self, edits: _Edits) -> str:
        out: list[str] = []
        done = 0
        for file_index, file in enumerate(self.files):
            shift = 0  # what the earlier rendered hunks of the file add, minus the reference's
            for hunk_index, hunk in enumerate(file.hunks):
                top = hunk.header_line - 1
                out += self.raw[done:top]
                done = hunk.header_line + len(hunk.lines)
                body = self._body(edits, file_index, hunk_index)
                reference_delta = hunk.new_count - hunk.old_count
                changed = any(kind in ("added", "removed") for kind, _ in body)
                if not changed and (file_index, hunk_index) in self.changed_hunks:
                    shift -= reference_delta
                    continue
                old_count = sum(kind in ("context", "removed") for kind, _ in body)
                new_count = sum(kind in ("context", "added") for kind, _ in body)
                new_first = hunk.new_start + (hunk.header_new_count == 0) + shift
                out.append(
                    _hunk_header(
                        self.raw[top],
                        hunk.old_start,
                        old_count,
                        new_first - (new_count == 0),
                        new_count,
                    )
                )
                out += [raw for _, raw in body]
                shift += new_count - old_count - reference_delta
        out += self.raw[done:]
        return "\n".join(out)

    def _body(self, edits: _Edits, file: int, hunk: int) -> list[tuple[LineKind, str]]:
        lines = self.files[file].hunks[hunk].lines
        body: list[tuple[LineKind, str]] = []
        dropped = False  # a marker goes with the line before it
        for index in range(len(lines) + 1):
            raw = self.raw_line(file, hunk, min(index, len(lines) - 1))
            eol = "\r" if raw.endswith("\r") else ""
            comment = edits.comments.get((file, hunk, index))
            if comment is not None:
                body.append(("added", f"+{comment}{eol}"))
            if index == len(lines):
                break
            kind = lines[index].kind
            reverted = self.change_of.get((file, hunk, index)) in edits.reverted
            if kind == "no_newline":
                if not dropped:
                    body.append((kind, raw))
                continue
            dropped = reverted and kind == "added"
            if dropped:
                continue
            if reverted and kind == "removed":
                body.append(("context", f" {raw[1:]}"))
            elif (file, hunk, index) in edits.replaced:
                body.append(("added", f"+{edits.replaced[(file, hunk, index)]}{eol}"))
            else:
                body.append((kind, raw))
        return body


_HEADER_COUNTS = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


def _hunk_header(reference: str, old_start: int, old: int, new_start: int, new: int) -> str:
    """The reference's header line with new numbers, its section and line ending kept."""
    match = _HEADER_COUNTS.match(reference)
    tail = reference[match.end() :] if match else ""
    return f"@@ -{old_start},{old} +{new_start},{new} @@{tail}"


def _comment_line(text: str, syntax: _Syntax) -> str:
    return f"{_indentation(text)}{syntax.comment} {COMMENT}"


def _file_comment_key(
    reference: _Reference, change: _Change, new_side: bool
) -> tuple[LineKey, int, str] | None:
    """Where a comment goes for ``change``: its line key, line number and comment text.

    On the new side (level 1) it goes before the change's first added line; on the old side
    (the change reverted, levels 3 and 4) before the change.
    """
    file = reference.files[change.file]
    syntax = _syntax_of(file.path)
    if syntax is None or file.is_deleted:
        return None
    hunk = file.hunks[change.hunk]
    lines = hunk.lines[change.start : change.end]
    added = [i for i, line in enumerate(lines, change.start) if line.kind == "added"]
    index = added[0] if new_side and added else change.start
    side = _side(hunk, syntax, ("context", "added") if new_side else ("context", "removed"))
    position = sum(1 for line in side if line.index < index)
    if not _takes_comment(side, position):
        return None
    target = hunk.lines[index]
    number = (target.new_number or change.new_line) if new_side else change.old_line
    return (change.file, change.hunk, index), number, _comment_line(target.text, syntax)


# --- level 1: renaming a local the fix introduces -----------------------------------------

# fmt: off
_NOT_A_TYPE = frozenset((
    "return", "throw", "new", "else", "case", "goto", "package", "import", "yield", "await",
    "delete", "typeof", "instanceof", "in", "of", "do", "assert", "throws", "extends",
    "implements", "sizeof", "default", "using", "namespace", "typedef", "struct", "class",
    "enum", "interface", "record", "union",
))
# fmt: on
_C_DECLARATION = re.compile(
    r"^\s*(?:for\s*\(\s*)?(?:final\s+)?"
    r"(?P<type>[A-Za-z_$][\w$.]*(?:<[^;=()]*>)?(?:\[\])*)\s+"
    r"(?P<name>[a-z_$][\w$]*)\s*(?:=(?!=)|;|:(?!:))"
)
_GO_DECLARATION = re.compile(r"^\s*(?P<name>[a-z_]\w*)\s*:=")
_PYTHON_ASSIGNMENT = re.compile(r"^\s+(?P<name>[a-z_]\w*)\s*(?::[^=]+)?=(?!=)")
_TYPE_BODY = re.compile(r"\b(?:class|interface|enum|record|struct|union|namespace)\b")
_ANONYMOUS_CLASS = re.compile(r"\bnew\b[^;]*\)$")
_CODE_BLOCK = re.compile(
    r"(?:\)|->|=>|\b(?:else|try|finally|do))$|\)\s*throws\b|^(?:\}\s*)?"
    r"(?:if|for|while|switch|select|else|try|catch|finally|do|func|function)\b"
)


def _declared_name(code: str, syntax: _Syntax) -> str | None:
    if syntax.family == "python":
        match = _PYTHON_ASSIGNMENT.match(code)
        if match is None or match["name"].startswith("__") or keyword.iskeyword(match["name"]):
            return None
        return match["name"]
    match = _GO_DECLARATION.match(code)
    if match:
        return match["name"]
    match = _C_DECLARATION.match(code)
    if match and match["type"] not in _NOT_A_TYPE:
        return match["name"]
    return None


def _block_scope(side: list[_SideLine], at: int) -> tuple[int, int] | None:
    """The first and last line of the ``{ … }`` code block around ``side[at]``, if the hunk
    shows all of it and it is not the body of a type."""
    depth = 0
    for k in range(at - 1, -1, -1):
        code = side[k].code
        for position in range(len(code) - 1, -1, -1):
            if code[position] == "}":
                depth += 1
            elif code[position] == "{" and depth > 0:
                depth -= 1
            elif code[position] == "{":
                opener = code[:position].strip() or (side[k - 1].code.strip() if k else "")
                if (
                    _TYPE_BODY.search(opener)
                    or _ANONYMOUS_CLASS.search(opener)
                    or not _CODE_BLOCK.search(opener)
                ):
                    return None
                last = _block_end(side, k, position)
                return None if last is None else (k, last)
    return None


def _block_end(side: list[_SideLine], line: int, position: int) -> int | None:
    depth = 0
    for k in range(line, len(side)):
        code = side[k].code[position:] if k == line else side[k].code
        for char in code:
            depth += (char == "{") - (char == "}")
            if depth == 0:
                return k
    return None


def _function_scope(side: list[_SideLine], at: int) -> tuple[int, int] | None:
    """The first and last line of the Python function around ``side[at]``, if the hunk shows
    all of it (up to the next line indented no deeper than its ``def``)."""
    level = len(_indentation(side[at].line.text))
    for k in range(at - 1, -1, -1):
        code = side[k].code
        depth = len(_indentation(code))
        if not _has_code(code) or depth >= level:
            continue
        if re.match(r"\s*class\b", code):
            return None
        level = depth
        if re.match(r"\s*(?:async\s+)?def\b", code):
            for end in range(at + 1, len(side)):
                if _has_code(side[end].code) and len(_indentation(side[end].code)) <= depth:
                    return k, end - 1
            return None
    return None


@dataclass(frozen=True)
class _Rename:
    file: int
    old: str
    new: str
    lines: dict[LineKey, str]


def _find_rename(reference: _Reference) -> _Rename | None:
    taken = set(re.findall(r"[\w$]+", reference.text))
    for file_index, file in enumerate(reference.files):
        syntax = _syntax_of(file.path)
        if syntax is None or syntax.family == "script":
            continue
        sides = [_side(hunk, syntax, ("context", "added")) for hunk in file.hunks]
        for side in sides:
            for line in side:
                if line.line.kind != "added":
                    continue
                name = _declared_name(line.code, syntax)
                if name is None:
                    continue
                lines = _renamed_lines(file, sides, syntax, name)
                if lines is not None:
                    new = _new_name(name, syntax, taken)
                    renamed = {
                        (file_index, hunk, index): text.replace(_MASK, new)
                        for (hunk, index), text in lines.items()
                    }
                    return _Rename(file_index, name, new, renamed)
    return None


def _new_name(name: str, syntax: _Syntax, taken: set[str]) -> str:
    base = f"{name}_value" if syntax.family == "python" or "_" in name else f"{name}Value"
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}{number}", number + 1
    return candidate


def _renamed_lines(
    file: FileDiff, sides: list[list[_SideLine]], syntax: _Syntax, name: str
) -> dict[tuple[int, int], str] | None:
    """Every added line that mentions ``name``, with each mention replaced by a NUL to fill
    in, or None when renaming it could change behaviour."""
    mention = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    scope_of = _function_scope if syntax.family == "python" else _block_scope
    lines: dict[tuple[int, int], str] = {}
    for hunk_index, (hunk, side) in enumerate(zip(file.hunks, sides, strict=True)):
        if any(line.kind == "removed" and mention.search(line.text) for line in hunk.lines):
            return None
        scopes = [
            scope
            for k, line in enumerate(side)
            if line.line.kind == "added"
            and _declared_name(line.code, syntax) == name
            and (scope := scope_of(side, k)) is not None
        ]
        declarations = [
            k
            for k, line in enumerate(side)
            if line.line.kind == "added" and _declared_name(line.code, syntax) == name
        ]
        for k, line in enumerate(side):
            raw = [m.start() for m in mention.finditer(line.line.text)]
            if not raw:
                continue
            code = [m.start() for m in mention.finditer(line.code)]
            in_scope = any(
                first <= k <= last and any(first <= d <= k for d in declarations)
                for first, last in scopes
            )
            if line.line.kind != "added" or raw != code or not in_scope:
                return None
            if any(_unsafe_mention(line.code, start, len(name)) for start in code):
                return None
            text = line.line.text
            for start in reversed(code):
                text = text[:start] + _MASK + text[start + len(name) :]
            lines[(hunk_index, side[k].index)] = text
    return lines


def _unsafe_mention(code: str, start: int, length: int) -> bool:
    """A mention that is not a plain use of the local: an attribute, a call, a keyword
    argument, an object key, or an object shorthand alone on its line."""
    before, after = code[:start].rstrip(), code[start + length :].lstrip()
    return (
        before.endswith(".")
        or after.startswith("(")
        or (before.endswith(("(", ",")) and re.match(r"=(?!=)", after) is not None)
        or (before.endswith(("{", ",")) and re.match(r":(?!:)", after) is not None)
        or (before.endswith(("{", ",")) and after.startswith(("}", ",")))
        or (not before and after in ("", ","))
    )


# --- level 3: mutations -----------------------------------------------------------------

_INVERSE = {
    "==": "!=",
    "!=": "==",
    "<": ">=",
    ">=": "<",
    ">": "<=",
    "<=": ">",
    "&&": "||",
    "||": "&&",
    "and": "or",
    "or": "and",
}
_SPACED_COMPARISON = r"(?<=\s)(?:<=|>=|<|>)(?=\s)"
_OPERATORS = {
    "c": re.compile(rf"==|!=|&&|\|\||{_SPACED_COMPARISON}"),
    "python": re.compile(rf"==|!=|{_SPACED_COMPARISON}|\b(?:and|or)\b"),
    "script": re.compile(r"==|!=|&&|\|\|"),
}
_INTEGER = re.compile(r"(?<![\w$.])\d+(?=[lLuU]?(?![\w$.]))")
_BOOLEANS = {
    "c": re.compile(r"\b(?:true|false)\b"),
    "python": re.compile(r"\b(?:True|False)\b"),
    "script": re.compile(r"\b(?:true|false)\b"),
}
_PYTHON_IF = re.compile(r"\s*(?:el)?if\s+")

Mutation = Callable[[str, str, _Syntax], tuple[str, str] | None]


def _invert_operator(code: str, text: str, syntax: _Syntax) -> tuple[str, str] | None:
    match = _OPERATORS[syntax.family].search(code)
    if match is None:
        return None
    old, new = match.group(), _INVERSE[match.group()]
    return text[: match.start()] + new + text[match.end() :], f"`{old}` inverted to `{new}`"


def _negate_if(code: str, text: str, syntax: _Syntax) -> tuple[str, str] | None:
    if syntax.family == "python":
        match = _PYTHON_IF.match(code)
        body = code.rstrip(" \t" + _MASK)
        if match is None or not body.endswith(":"):
            return None
        start, end = match.end(), len(body) - 1
        while end > start and text[end - 1] in " \t":
            end -= 1
        if end == start:
            return None
        return (
            f"{text[:start]}not ({text[start:end]}){text[end:]}",
            "`if` condition negated",
        )
    match = re.search(r"\bif\s*\(", code) if syntax.family == "c" else None
    if match is None:
        return None
    depth = 0
    for close in range(match.end() - 1, len(code)):
        depth += (code[close] == "(") - (code[close] == ")")
        if depth == 0:
            start = match.end()
            return (
                f"{text[:start]}!({text[start:close]}){text[close:]}",
                "`if` condition negated",
            )
    return None


def _alter_integer(code: str, text: str, syntax: _Syntax) -> tuple[str, str] | None:
    match = _INTEGER.search(code)
    if match is None:
        return None
    old = int(match.group())
    return (
        f"{text[: match.start()]}{old + 1}{text[match.end() :]}",
        f"integer {match.group()} changed to {old + 1}",
    )


def _flip_boolean(code: str, text: str, syntax: _Syntax) -> tuple[str, str] | None:
    match = _BOOLEANS[syntax.family].search(code)
    if match is None:
        return None
    old = match.group()
    new = {"true": "false", "false": "true", "True": "False", "False": "True"}[old]
    return f"{text[: match.start()]}{new}{text[match.end() :]}", f"`{old}` flipped to `{new}`"


_MUTATIONS: tuple[Mutation, ...] = (_invert_operator, _negate_if, _alter_integer, _flip_boolean)


def _first_mutation(reference: _Reference) -> tuple[LineKey, str, str] | None:
    """The preferred mutation's first added line: its key, new text and a description."""
    candidates: list[tuple[LineKey, _SideLine, _Syntax, str]] = []
    for file_index, file in enumerate(reference.files):
        syntax = _syntax_of(file.path)
        if syntax is None:
            continue
        for hunk_index, hunk in enumerate(file.hunks):
            for line in _side(hunk, syntax, ("context", "added")):
                if line.line.kind == "added" and _has_code(line.code):
                    candidates.append(
                        ((file_index, hunk_index, line.index), line, syntax, file.path)
                    )
    for mutation in _MUTATIONS:
        for key, line, syntax, path in candidates:
            mutated = mutation(line.code, line.line.text, syntax)
            if mutated is not None:
                text, what = mutated
                return key, text, f"{what} on line {line.line.new_number} of {path}"
    return None


# --- the levels ----------------------------------------------------------------------------


def _reference_fix(reference: _Reference) -> Rung:
    return Rung(0, reference.text, ())


def _equivalent_rewrite(reference: _Reference) -> Rung | Skipped:
    place = next(
        (
            found
            for change in reference.changes
            if (found := _file_comment_key(reference, change, new_side=True)) is not None
        ),
        None,
    )
    if place is None:
        paths = ", ".join(reference.files[f].path for f in reference.changed_files())
        return Skipped(1, NO_COMMENT_PLACE.format(paths=paths))
    key, number, comment = place
    edits = _Edits(comments={key: comment})
    operators = [f"comment added before line {number} of {reference.files[key[0]].path}"]
    rename = _find_rename(reference)
    if rename is not None:
        edits.replaced.update(rename.lines)
        path = reference.files[rename.file].path
        operators.append(f"local `{rename.old}` renamed to `{rename.new}` in {path}")
    return Rung(1, reference.render(edits), tuple(operators))


def _reverted(reference: _Reference, change: _Change) -> str:
    path = reference.files[change.file].path
    total = len(reference.changes)
    return f"change {change.number} of {total} reverted ({path}, at old line {change.old_line})"


def _partial_fix(reference: _Reference) -> Rung | Skipped:
    firsts = {reference.file_changes(f)[0].number for f in reference.changed_files()}
    droppable = [
        change
        for change in reference.changes
        if change.number not in firsts
        and not reference.files[change.file].is_new
        and not reference.files[change.file].is_deleted
    ]
    if not droppable:
        if len(reference.changes) == 1:
            return Skipped(2, ONE_CHANGE)
        return Skipped(2, ONE_CHANGE_PER_FILE.format(files=len(reference.changed_files())))
    dropped = droppable[-min(len(droppable), max(1, len(reference.changes) // 2)) :]
    edits = _Edits(reverted={change.number for change in dropped})
    return Rung(2, reference.render(edits), tuple(_reverted(reference, c) for c in dropped))


def _wrong_fix(reference: _Reference) -> Rung | Skipped:
    mutation = _first_mutation(reference)
    if mutation is not None:
        key, text, described = mutation
        return Rung(3, reference.render(_Edits(replaced={key: text})), (described,))
    if len(reference.changes) < 2:
        return Skipped(3, NOTHING_TO_MUTATE_ONE_CHANGE)
    for change in reference.changes:
        if reference.files[change.file].is_deleted:
            continue
        edits = _Edits(reverted={change.number})
        operators = [_reverted(reference, change)]
        if len(reference.file_changes(change.file)) == 1:
            place = _file_comment_key(reference, change, new_side=False)
            if place is None:
                continue
            key, number, comment = place
            edits.comments[key] = comment
            path = reference.files[change.file].path
            operators.append(f"comment added before line {number} of {path}")
        return Rung(3, reference.render(edits), tuple(operators))
    return Skipped(3, NOTHING_TO_MUTATE_NO_REVERT)


def _no_fix(reference: _Reference) -> Rung | Skipped:
    edits = _Edits(reverted={change.number for change in reference.changes})
    total = len(reference.changes)
    operators = [f"all {total} changes reverted" if total > 1 else "the one change reverted"]
    for file_index in reference.changed_files():
        file = reference.files[file_index]
        if file.is_deleted:
            return Skipped(4, DELETES_FILE.format(path=file.path))
        if _syntax_of(file.path) is None:
            return Skipped(4, UNKNOWN_SYNTAX.format(path=file.path))
        place = next(
            (
                found
                for change in reference.file_changes(file_index)
                if (found := _file_comment_key(reference, change, new_side=False)) is not None
            ),
            None,
        )
        if place is None:
            return Skipped(4, NO_PLACE_IN_FILE.format(path=file.path))
        key, number, comment = place
        edits.comments[key] = comment
        operators.append(f"comment added before line {number} of {file.path}")
    return Rung(4, reference.render(edits), tuple(operators))


_BUILDERS: dict[int, Callable[[_Reference], Rung | Skipped]] = {
    0: _reference_fix,
    1: _equivalent_rewrite,
    2: _partial_fix,
    3: _wrong_fix,
    4: _no_fix,
}


def build_ladder(
    reference_diff: str, *, levels: Iterable[int] = (0, 1, 2, 3, 4)
) -> list[Rung | Skipped]:
    """The rungs of ``reference_diff``'s ladder at ``levels``, in level order.

    Raises :class:`sejury_web.diffs.DiffError` if the reference does not parse, and
    ``ValueError`` for a level that is not one of :data:`LEVELS`.
    """
    wanted = sorted(set(levels))
    unknown = [level for level in wanted if level not in LEVELS]
    if unknown:
        raise ValueError(UNKNOWN_LEVELS.format(levels=", ".join(map(str, unknown))))
    reference = _Reference(reference_diff)
    if not reference.changes:
        return [
            _reference_fix(reference) if level == 0 else Skipped(level, NO_CHANGE)
            for level in wanted
        ]
    return [_BUILDERS[level](reference) for level in wanted]
