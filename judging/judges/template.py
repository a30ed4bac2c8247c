"""A written judge's prompt template: text with named data blocks, ``{{ candidate_patch }}``.

The syntax is this and nothing more: ``{{`` a block's name ``}}``, spaces allowed inside the
braces. No expression, filter, loop or escape: the text is a lead's, and it is only ever
split at its placeholders, never executed. Each block is replaced by the data it names,
between tags (the system message says that what is between tags is data, not instructions).
A template must show the candidate patch; one naming an unknown block, or with a ``{{`` that
is never closed, is refused with the block's line and column.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

# The blocks, in the order the error messages list them, each with what it shows.
BLOCKS: dict[str, str] = {
    "bug": "the bug: its key, title and description",
    "reference_fix": "the developers' reference fix, as a unified diff",
    "rubric": "the rubric of the run's context (golden, draft or free-form)",
    "candidate_patch": "the candidate patch, as a unified diff",
    "test_evidence": "the patch's test results (FAIL_TO_PASS, PASS_TO_PASS), where it has them",
}
CANDIDATE = "candidate_patch"

PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)

EMPTY_TEMPLATE = "the template is empty"
UNKNOWN_BLOCK = "unknown block {name!r} at line {line}, column {column}; the blocks are {known}"
UNCLOSED = "a '{{{{' at line {line}, column {column} is never closed by '}}}}'"
NO_CANDIDATE = (
    "the template never shows the candidate patch: put {{{{ candidate_patch }}}} where the "
    "model should read it"
)


class TemplateError(ValueError):
    """The template cannot be used; the message names the block and where it is."""


@dataclass(frozen=True)
class Placeholder:
    name: str
    start: int  # offset of "{{" in the template
    end: int  # offset just past "}}"


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def template_placeholders(text: str) -> list[Placeholder]:
    """The template's placeholders in order; ``TemplateError`` for an unknown block or an
    unclosed ``{{`` (the first, by position), for an empty template, and for one that never
    shows the candidate patch."""
    if not text.strip():
        raise TemplateError(EMPTY_TEMPLATE)
    found = []
    cursor = 0
    for match in PLACEHOLDER.finditer(text):
        name = match.group(1).strip()
        if "{{" in match.group(1):  # "{{ a {{ b }}": the first "{{" is never closed
            raise TemplateError(UNCLOSED.format(**_where(text, match.start())))
        if name not in BLOCKS:
            known = ", ".join(BLOCKS)
            raise TemplateError(
                UNKNOWN_BLOCK.format(name=name, known=known, **_where(text, match.start()))
            )
        found.append(Placeholder(name, match.start(), match.end()))
        cursor = match.end()
    opening = text.find("{{", cursor)
    if opening != -1:
        raise TemplateError(UNCLOSED.format(**_where(text, opening)))
    if not any(placeholder.name == CANDIDATE for placeholder in found):
        raise TemplateError(NO_CANDIDATE)
    return found


def _where(text: str, offset: int) -> dict[str, int]:
    line, column = _position(text, offset)
    return {"line": line, "column": column}


def template_blocks(text: str) -> tuple[str, ...]:
    """The blocks a (valid) template shows, each once, in order of first use."""
    return tuple(dict.fromkeys(p.name for p in template_placeholders(text)))


def template_render(text: str, blocks: Mapping[str, str]) -> str:
    """The template with each placeholder replaced by ``blocks[name]``: a plain split at the
    placeholders, so nothing in the template or the data is ever interpreted."""
    parts = []
    cursor = 0
    for placeholder in template_placeholders(text):
        parts.append(text[cursor : placeholder.start])
        parts.append(blocks[placeholder.name])
        cursor = placeholder.end
    parts.append(text[cursor:])
    return "".join(parts)
