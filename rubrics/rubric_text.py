"""A rubric's structure and its Markdown: the template of paper 004, Listing 1.

A templated rubric is edited as a structure (root cause, numbered requirements with a title
and a detail, acceptable and unacceptable solutions) and stored with its Markdown rendering,
the text the judge reads and the one edit distances are measured on. A free-form rubric, or
an imported text that does not follow the template, is the Markdown alone: ``{"text": …}``.
"""

import re
from typing import Any, TypedDict

ROOT_CAUSE, REQUIREMENTS = "Root cause", "Requirements"
ACCEPTABLE, UNACCEPTABLE = "Acceptable solutions", "Unacceptable solutions"
SECTION_NAMES = frozenset(n.lower() for n in (ROOT_CAUSE, REQUIREMENTS, ACCEPTABLE, UNACCEPTABLE))
REQUIREMENTS_LEAD = "A correct patch must satisfy the following requirements:"

EMPTY_ROOT_CAUSE = "the root cause is empty"
NO_REQUIREMENTS = "a rubric needs at least one requirement"
EMPTY_REQUIREMENT = "requirement {number} has no title"
EMPTY_TEXT = "the rubric is empty"
TOO_LONG = "the rubric is longer than {limit:,} characters"
MAX_TEXT = 50_000

HEADING = re.compile(r"^#{1,6}\s*(.+?)\s*#*\s*$")
NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.*)$")
BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
# "**Title:** detail" or "**Title**: detail"
TITLED = re.compile(r"^\*\*(.+?):?\*\*:?\s*(.*)$", re.DOTALL)


class Requirement(TypedDict):
    title: str
    detail: str


class RubricStructureError(ValueError):
    pass


def _clean(text: Any) -> str:
    return str(text or "").replace("\r\n", "\n").strip()


def structure_normalize(structure: dict[str, Any], *, templated: bool) -> dict[str, Any]:
    """A validated, trimmed copy of ``structure``; ``RubricStructureError`` says what's wrong."""
    if not templated or "text" in structure:
        text = _clean(structure.get("text"))
        if not text:
            raise RubricStructureError(EMPTY_TEXT)
        if len(text) > MAX_TEXT:
            raise RubricStructureError(TOO_LONG.format(limit=MAX_TEXT))
        return {"text": text}
    root_cause = _clean(structure.get("root_cause"))
    if not root_cause:
        raise RubricStructureError(EMPTY_ROOT_CAUSE)
    requirements: list[Requirement] = []
    for number, item in enumerate(structure.get("requirements") or [], start=1):
        title, detail = _clean(item.get("title")), _clean(item.get("detail"))
        if not title and not detail:
            continue  # an empty row left in the editor
        if not title:
            raise RubricStructureError(EMPTY_REQUIREMENT.format(number=number))
        requirements.append({"title": title, "detail": detail})
    if not requirements:
        raise RubricStructureError(NO_REQUIREMENTS)
    normalized = {
        "root_cause": root_cause,
        "requirements": requirements,
        "acceptable": [t for t in map(_clean, structure.get("acceptable") or []) if t],
        "unacceptable": [t for t in map(_clean, structure.get("unacceptable") or []) if t],
    }
    if len(rubric_markdown(normalized)) > MAX_TEXT:
        raise RubricStructureError(TOO_LONG.format(limit=MAX_TEXT))
    return normalized


def rubric_markdown(structure: dict[str, Any]) -> str:
    """The Markdown of a rubric structure (Listing 1's layout)."""
    if "text" in structure:
        return str(structure["text"]).strip() + "\n"
    lines = [f"## {ROOT_CAUSE}", "", structure["root_cause"], "", f"## {REQUIREMENTS}", ""]
    lines += [REQUIREMENTS_LEAD, ""]
    for number, requirement in enumerate(structure["requirements"], start=1):
        detail = requirement["detail"].replace("\n", " ")
        lines.append(f"{number}. **{requirement['title']}:** {detail}".rstrip())
    for heading, items in ((ACCEPTABLE, "acceptable"), (UNACCEPTABLE, "unacceptable")):
        if structure.get(items):
            lines += ["", f"## {heading}", ""]
            lines += [f"- {item.replace(chr(10), ' ')}" for item in structure[items]]
    return "\n".join(lines) + "\n"


def _sections(text: str) -> dict[str, list[str]]:
    """The lines under each of the template's headings (Markdown or plain, any case)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.replace("\r\n", "\n").split("\n"):
        heading = HEADING.match(line)
        name = (heading.group(1) if heading else line).strip().strip("*: ").lower()
        if name in SECTION_NAMES:
            current = sections.setdefault(name, [])
        elif current is not None:
            current.append(line)
    return sections


def _items(lines: list[str], pattern: re.Pattern[str]) -> list[str]:
    items: list[str] = []
    for line in lines:
        match = pattern.match(line)
        if match:
            items.append(match.group(1).strip())
        elif items and line.strip():
            items[-1] += " " + line.strip()  # a wrapped item continues
    return items


def structure_from_markdown(text: str) -> dict[str, Any]:
    """The structure of a Markdown rubric that follows the template; ``{"text"}`` otherwise.

    Used for imported rubrics and LLM drafts that arrive as text, so that the structured
    editor can open them. Nothing is lost: when the text does not parse into every section
    of the template, it stays a single text.
    """
    sections = _sections(text)
    root = "\n".join(sections.get(ROOT_CAUSE.lower(), [])).strip()
    requirement_items = _items(sections.get(REQUIREMENTS.lower(), []), NUMBERED)
    if not root or not requirement_items:
        return {"text": text.strip()}
    requirements: list[Requirement] = []
    for item in requirement_items:
        titled = TITLED.match(item)
        if titled:
            requirements.append({"title": titled.group(1).strip(), "detail": titled.group(2)})
        else:
            requirements.append({"title": item, "detail": ""})
    structure = {
        "root_cause": root,
        "requirements": requirements,
        "acceptable": _items(sections.get(ACCEPTABLE.lower(), []), BULLET),
        "unacceptable": _items(sections.get(UNACCEPTABLE.lower(), []), BULLET),
    }
    # Keep the structure only if it renders back to the same text: otherwise the first save
    # in the editor would change what the author wrote.
    if rubric_markdown(structure).strip() != text.replace("\r\n", "\n").strip():
        return {"text": text.strip()}
    return structure
