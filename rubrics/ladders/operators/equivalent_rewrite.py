"""Level 1, *equivalent rewrite*: behaviour kept; exposes a judge that only matches text.

- :data:`~.comments.COMMENT` is added before the first added line of the first change of a
  file of known type (before the change itself if it only removes lines);
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
"""

import keyword
import re
from dataclasses import dataclass

from sejury_web.diffs import FileDiff

from .comments import comment_place
from .reference import Edits, LineKey, Reference
from .rungs import Rung, Skipped
from .syntax import MASK, SideLine, Syntax, has_code, indentation, side_lines, syntax_of

NO_COMMENT_PLACE = (
    "no change of {paths} takes a comment line (no known comment syntax, or only places inside"
    " a string or a continued line): no equivalent rewrite can be made"
)


def equivalent_rewrite(reference: Reference) -> Rung | Skipped:
    """Level 1: the comment before the first change that takes one, and a local renamed."""
    place = next(
        (
            found
            for change in reference.changes
            if (found := comment_place(reference, change, new_side=True)) is not None
        ),
        None,
    )
    if place is None:
        paths = ", ".join(reference.files[f].path for f in reference.changed_files())
        return Skipped(1, NO_COMMENT_PLACE.format(paths=paths))
    key, number, comment = place
    edits = Edits(comments={key: comment})
    operators = [f"comment added before line {number} of {reference.files[key[0]].path}"]
    rename = _find_rename(reference)
    if rename is not None:
        edits.replaced.update(rename.lines)
        path = reference.files[rename.file].path
        operators.append(f"local `{rename.old}` renamed to `{rename.new}` in {path}")
    return Rung(1, reference.render(edits), tuple(operators))


# Renaming a local the fix introduces.

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


def _declared_name(code: str, syntax: Syntax) -> str | None:
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


def _block_scope(side: list[SideLine], at: int) -> tuple[int, int] | None:
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


def _block_end(side: list[SideLine], line: int, position: int) -> int | None:
    depth = 0
    for k in range(line, len(side)):
        code = side[k].code[position:] if k == line else side[k].code
        for char in code:
            depth += (char == "{") - (char == "}")
            if depth == 0:
                return k
    return None


def _function_scope(side: list[SideLine], at: int) -> tuple[int, int] | None:
    """The first and last line of the Python function around ``side[at]``, if the hunk shows
    all of it (up to the next line indented no deeper than its ``def``)."""
    level = len(indentation(side[at].line.text))
    for k in range(at - 1, -1, -1):
        code = side[k].code
        depth = len(indentation(code))
        if not has_code(code) or depth >= level:
            continue
        if re.match(r"\s*class\b", code):
            return None
        level = depth
        if re.match(r"\s*(?:async\s+)?def\b", code):
            for end in range(at + 1, len(side)):
                if has_code(side[end].code) and len(indentation(side[end].code)) <= depth:
                    return k, end - 1
            return None
    return None


@dataclass(frozen=True)
class _Rename:
    file: int
    old: str
    new: str
    lines: dict[LineKey, str]


def _find_rename(reference: Reference) -> _Rename | None:
    taken = set(re.findall(r"[\w$]+", reference.text))
    for file_index, file in enumerate(reference.files):
        syntax = syntax_of(file.path)
        if syntax is None or syntax.family == "script":
            continue
        sides = [side_lines(hunk, syntax, ("context", "added")) for hunk in file.hunks]
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
                        (file_index, hunk, index): text.replace(MASK, new)
                        for (hunk, index), text in lines.items()
                    }
                    return _Rename(file_index, name, new, renamed)
    return None


def _new_name(name: str, syntax: Syntax, taken: set[str]) -> str:
    base = f"{name}_value" if syntax.family == "python" or "_" in name else f"{name}Value"
    candidate, number = base, 2
    while candidate in taken:
        candidate, number = f"{base}{number}", number + 1
    return candidate


def _renamed_lines(
    file: FileDiff, sides: list[list[SideLine]], syntax: Syntax, name: str
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
                text = text[:start] + MASK + text[start + len(name) :]
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
