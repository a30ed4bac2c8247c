"""The ``rubric.revise`` rule: offline suggestions read off the disagreements' labels alone.

The rule is stated in the package docstring; change it there too, and bump
``OFFLINE_MODEL``. Nothing here reads a diff or judges a patch: each suggestion only says
that the humans and the rubric judge disagree on a patch, and where a reviewer should look.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from .patches import say

# ``rubrics.rubric_text.MAX_TEXT`` (``sejury_web`` imports no app; a test checks they match):
# the longest rubric Markdown. Suggestions that would make the rubric longer are left out.
MAX_TEXT = 50_000
NOTE_WIDTH = 200  # of a quoted note
SECTION = "## Offline suggestions (not an LLM)"

VALID, INVALID = "VALID", "INVALID"

# A patch key is quoted with "…", not `…`: the offline judge reads code spans of a
# requirement as code the patch must contain.
REQUIREMENT_NOTE = (
    'Humans judged patch "{key}", which fails this requirement, valid: the requirement may '
    "be stricter than a valid fix needs — review it."
)
FREE_FORM_REQUIREMENT_NOTE = (
    'Requirement {index} of the judge\'s checks: humans judged patch "{key}", which fails it, '
    "valid: it may be stricter than a valid fix needs — review it."
)
ACCEPTABLE = 'A fix like patch "{key}", which the humans judged valid and the rubric judge did not'
UNACCEPTABLE = 'A patch like "{key}", which the humans judged invalid and the rubric let through'
NOTED = '; a human noted: "{note}"'
THEMES = "; disagreement themes: {themes}"

_HEADING = re.compile(r"^#{1,6}\s")


def _quote(text: str) -> str:
    """A note on one line, cut at ``NOTE_WIDTH`` ("…" marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= NOTE_WIDTH else text[: NOTE_WIDTH - 1] + "…"


def _first_note(disagreement: dict[str, Any]) -> str:
    notes = [_quote(str(note)) for note in disagreement.get("notes") or []]
    return next((note for note in notes if note), "")


def _solution(template: str, key: str, disagreement: dict[str, Any], *, themes: bool) -> str:
    note = _first_note(disagreement)
    text = template.format(key=key) + (NOTED.format(note=note) if note else "")
    listed = [" ".join(str(t).split()) for t in disagreement.get("themes") or []]
    listed = [theme for theme in listed if theme]
    if themes and listed:
        text += THEMES.format(themes=", ".join(listed))
    return say(text + ".")


def _failed(disagreement: dict[str, Any]) -> list[int]:
    """The failed requirement indexes, each once, in the judge's order."""
    indexes = []
    for check in disagreement.get("requirements") or []:
        index = check.get("index") if isinstance(check, dict) else None
        failed = isinstance(check, dict) and check.get("passed") is False
        if failed and isinstance(index, int) and not isinstance(index, bool):
            indexes.append(index)
    return list(dict.fromkeys(indexes))


def markdown_size(structure: dict[str, Any]) -> int:
    """An upper bound of the length of the structure's Markdown (``rubric_markdown``)."""
    if "text" in structure:
        return len(str(structure["text"]).strip())
    size = 300 + len(str(structure.get("root_cause", "")))  # headings and the lead line
    for number, item in enumerate(structure.get("requirements") or [], start=1):
        size += (
            len(str(number))
            + 9
            + len(str(item.get("title", "")))
            + len(str(item.get("detail", "")))
        )
    for key in ("acceptable", "unacceptable"):
        size += sum(len(str(text)) + 3 for text in structure.get(key) or [])
    return size


@dataclass
class _Revision:
    """The structure being revised, and what the rationale reports."""

    structure: dict[str, Any]
    templated: bool
    changes: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)  # free form: the section's new items
    too_long: int = 0

    def fits(self, added: int) -> bool:
        """Whether ``added`` more characters keep the rubric within ``MAX_TEXT``."""
        size = markdown_size(self.structure) + added + 3
        if not self.templated:  # the section and its bullets so far
            size += len(SECTION) + 4 + sum(len(bullet) + 3 for bullet in self.bullets)
        if size <= MAX_TEXT:
            return True
        self.too_long += 1
        return False

    @property
    def _text(self) -> str:
        return str(self.structure.get("text", ""))

    def add_item(self, key: str, item: str) -> bool:
        """Add ``item`` to the solutions named by ``key`` (``acceptable``, ``unacceptable``),
        or, free form, to the section; False when it is there already or would not fit."""
        if self.templated:
            items = self.structure[key]
            if item in items or not self.fits(len(item)):
                return False
            items.append(item)
            return True
        if f"- {item}" in self._text.split("\n") or item in self.bullets:
            return False
        if not self.fits(len(item)):
            return False
        self.bullets.append(item)
        return True

    def add_note(self, index: int, key: str) -> str | None:
        """Append the review note for patch ``key`` to requirement ``index``; what the
        rationale says, or None when nothing was added."""
        if not self.templated:
            note = say(FREE_FORM_REQUIREMENT_NOTE.format(index=index, key=key))
            added = self.add_item("section", note)
            return f"a bullet on requirement {index}" if added else None
        requirements = self.structure["requirements"]
        if not 1 <= index <= len(requirements):
            return None
        requirement = requirements[index - 1]
        note = say(REQUIREMENT_NOTE.format(key=key))
        detail = str(requirement.get("detail", ""))
        if note in detail or not self.fits(len(note) + 1):
            return None
        requirement["detail"] = f"{detail} {note}" if detail.strip() else note
        return f"a review note on requirement {index}"

    def text(self) -> str:
        """The free-form text with the section of suggestions (added once, then extended)."""
        text = self._text
        if not self.bullets:
            return text
        new = [f"- {bullet}" for bullet in self.bullets]
        lines = text.rstrip().split("\n")
        if SECTION not in lines:
            return "\n".join([*lines, "", SECTION, "", *new, ""])
        start = lines.index(SECTION) + 1
        end = next((n for n in range(start, len(lines)) if _HEADING.match(lines[n])), len(lines))
        while end > start and not lines[end - 1].strip():
            end -= 1
        return "\n".join([*lines[:end], *new, *lines[end:], ""])


def _apply(revision: _Revision, disagreement: dict[str, Any]) -> str:
    """Apply one disagreement; the rationale's line for it."""
    key = " ".join(str(disagreement.get("patch_key", "")).split()) or "(no key)"
    human = str(disagreement.get("human_label", "")).upper()
    judge = str(disagreement.get("judge_verdict", "")).upper()
    done: list[str] = []
    if human == VALID and judge == INVALID:
        failed = _failed(disagreement)
        for index in failed:
            note = revision.add_note(index, key)
            if note:
                done.append(note)
        item = _solution(ACCEPTABLE, key, disagreement, themes=False)
        if revision.add_item("acceptable", item):
            done.append("an acceptable solution")
        missing = [
            i
            for i in failed
            if revision.templated and not 1 <= i <= len(revision.structure["requirements"])
        ]
        if missing:
            done.append(
                "nothing for requirement(s) " + ", ".join(map(str, missing)) + ", not in the rubric"
            )
    elif human == INVALID and judge == VALID:
        item = _solution(UNACCEPTABLE, key, disagreement, themes=True)
        if revision.add_item("unacceptable", item):
            done.append("an unacceptable solution")
    else:
        return f'- patch "{key}" (humans {human or "?"}, judge {judge or "?"}): no disagreement.'
    what = "; ".join(done) if done else "nothing new (already in the rubric, or too long)"
    return f'- patch "{key}" (humans {human}, judge {judge}): {what}.'


def revise_rubric(
    rubric: dict[str, Any], disagreements: list[dict[str, Any]], *, templated: bool, left_out: int
) -> dict[str, Any]:
    """``rubric.revise``: the rubric with offline suggestions, and the rationale."""
    if templated:
        structure = {
            "root_cause": rubric["root_cause"],
            "requirements": [dict(item) for item in rubric["requirements"]],
            "acceptable": list(rubric.get("acceptable") or []),
            "unacceptable": list(rubric.get("unacceptable") or []),
        }
    else:
        structure = {"text": rubric["text"]}
    revision = _Revision(structure, templated)
    lines = [_apply(revision, disagreement) for disagreement in disagreements]
    if revision.too_long:
        count = revision.too_long
        lines.append(
            f"- {count} suggestion(s) left out: the rubric would exceed {MAX_TEXT:,} characters."
        )
    if left_out:
        lines.append(f"- {left_out} more disagreement(s) were not shown, so not read.")
    rationale = say(
        "Suggestions read off the labels of "
        f"{len(disagreements)} disagreement(s), not by an LLM; review each one:"
    )
    rationale = "\n".join([rationale, *lines]) if lines else rationale + " none."
    if not templated:
        return {"rubric": revision.text(), "rationale": rationale}
    return {
        "root_cause": structure["root_cause"],
        "requirements": structure["requirements"],
        "acceptable_solutions": structure["acceptable"],
        "unacceptable_solutions": structure["unacceptable"],
        "rationale": rationale,
    }
