"""Level 3, *wrong fix*: one added line is mutated.

The mutation is, in this order of preference (the first kind that applies anywhere wins,
then the first line where it applies, then the first place in that line): invert a
comparison or boolean operator (``==``/``!=``, ``<``/``>=``, ``>``/``<=`` when spaced as
comparisons, not generics, ``&&``/``||``, Python ``and``/``or``), negate an ``if``
condition (``if (!(c))``; ``if not (c):``), add one to an integer literal, flip a boolean
literal (``true``/``false``, ``True``/``False``). Only code is mutated, never strings or
comments, and only in files of known type.

When no line can be mutated and the fix has several changes, the first (core) change is
reverted and the rest kept; if that leaves its file with no change,
:data:`~.comments.COMMENT` stands in for it (so the file is still touched). Otherwise
skipped. (A fix that only inverts a comparison gets back its bug's line: wrong by
behaviour, though not by text, as level 4 is.)
"""

import re
from collections.abc import Callable

from .comments import comment_place
from .reference import Edits, LineKey, Reference
from .rungs import Rung, Skipped
from .syntax import MASK, SideLine, Syntax, has_code, side_lines, syntax_of

NOTHING_TO_MUTATE = (
    "no added line holds a comparison, a boolean operator, an `if`, an integer or a boolean"
    " literal in code of a known language"
)
NOTHING_TO_MUTATE_ONE_CHANGE = NOTHING_TO_MUTATE + ", and the fix is one change"
NOTHING_TO_MUTATE_NO_REVERT = (
    NOTHING_TO_MUTATE + ", and no change can be reverted while its file stays touched"
)


def wrong_fix(reference: Reference) -> Rung | Skipped:
    """Level 3: the preferred mutation, else the first change reverted."""
    mutation = _first_mutation(reference)
    if mutation is not None:
        key, text, described = mutation
        return Rung(3, reference.render(Edits(replaced={key: text})), (described,))
    if len(reference.changes) < 2:
        return Skipped(3, NOTHING_TO_MUTATE_ONE_CHANGE)
    for change in reference.changes:
        if reference.files[change.file].is_deleted:
            continue
        edits = Edits(reverted={change.number})
        operators = [reference.reverted(change)]
        if len(reference.file_changes(change.file)) == 1:
            place = comment_place(reference, change, new_side=False)
            if place is None:
                continue
            key, number, comment = place
            edits.comments[key] = comment
            path = reference.files[change.file].path
            operators.append(f"comment added before line {number} of {path}")
        return Rung(3, reference.render(edits), tuple(operators))
    return Skipped(3, NOTHING_TO_MUTATE_NO_REVERT)


# The mutations, in order of preference.

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

Mutation = Callable[[str, str, Syntax], tuple[str, str] | None]


def _invert_operator(code: str, text: str, syntax: Syntax) -> tuple[str, str] | None:
    match = _OPERATORS[syntax.family].search(code)
    if match is None:
        return None
    old, new = match.group(), _INVERSE[match.group()]
    return text[: match.start()] + new + text[match.end() :], f"`{old}` inverted to `{new}`"


def _negate_if(code: str, text: str, syntax: Syntax) -> tuple[str, str] | None:
    if syntax.family == "python":
        match = _PYTHON_IF.match(code)
        body = code.rstrip(" \t" + MASK)
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


def _alter_integer(code: str, text: str, syntax: Syntax) -> tuple[str, str] | None:
    match = _INTEGER.search(code)
    if match is None:
        return None
    old = int(match.group())
    return (
        f"{text[: match.start()]}{old + 1}{text[match.end() :]}",
        f"integer {match.group()} changed to {old + 1}",
    )


def _flip_boolean(code: str, text: str, syntax: Syntax) -> tuple[str, str] | None:
    match = _BOOLEANS[syntax.family].search(code)
    if match is None:
        return None
    old = match.group()
    new = {"true": "false", "false": "true", "True": "False", "False": "True"}[old]
    return f"{text[: match.start()]}{new}{text[match.end() :]}", f"`{old}` flipped to `{new}`"


_MUTATIONS: tuple[Mutation, ...] = (_invert_operator, _negate_if, _alter_integer, _flip_boolean)


def _first_mutation(reference: Reference) -> tuple[LineKey, str, str] | None:
    """The preferred mutation's first added line: its key, new text and a description."""
    candidates: list[tuple[LineKey, SideLine, Syntax, str]] = []
    for file_index, file in enumerate(reference.files):
        syntax = syntax_of(file.path)
        if syntax is None:
            continue
        for hunk_index, hunk in enumerate(file.hunks):
            for line in side_lines(hunk, syntax, ("context", "added")):
                if line.line.kind == "added" and has_code(line.code):
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
