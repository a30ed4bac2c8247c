"""What the offline model, which is NOT an LLM, answers to the rubric prompts of ``prompts``:
a draft read off the reference diff (``rubric.draft``) and suggestions read off the
disagreements' labels (``rubric.revise``).

The draft's text is a rubric the judge reads, so it is not marked line by line: its revision
0 is written by ``llm:offline/…`` (``selectors.OFFLINE_AUTHOR_PREFIX``), and the rubric's
pages say once, beside the rubric and outside its text, that the offline heuristic wrote it.
A suggestion of ``rubric.revise`` is marked (``say``): it lands among a reviewer's words.

Each rule is described by its docstring and registered with ``@offline_rule`` at import
(``RubricsConfig.ready()`` imports this module). A rule reads the request's ``inputs``,
never its messages; the terms (*changes*, *scope*, *condition line*…) are defined in
``sejury_web.llm.offline``. Change a rule and bump ``OFFLINE_MODEL`` there: it is part of
the cache key.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from rubrics.rubric_text import MAX_TEXT
from sejury_web.llm.offline import Inputs, offline_rule, say
from sejury_web.llm.offline.patches import Patch, quote_lines, read_patch
from sejury_web.similarity import CodeChange, is_condition

from .prompts import DRAFT_PURPOSE, REVISE_PURPOSE

# Suggestions that would make the rubric longer than MAX_TEXT are left out.

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


def _variant(inputs: Inputs) -> str:
    variant = inputs.require("variant", str)
    if variant not in ("templated", "free_form"):
        raise inputs.bad("variant", "'templated' or 'free_form'")
    return str(variant)


# -- drafting ---------------------------------------------------------------------------------


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _places(reference: Patch) -> str:
    """The files and scopes of the changes, as "`a.py` (`f()`, `g()`) and `b.py`"."""
    parts = []
    for path in reference.files:
        scopes = dict.fromkeys(
            f"`{c.scope}`" for c in reference.changes if c.path == path and c.scope
        )
        parts.append(f"`{path}`" + (f" ({', '.join(scopes)})" if scopes else ""))
    return " and ".join(parts)


def _change_detail(change: CodeChange) -> str:
    where = f"In `{change.path}`" + (f", in `{change.scope}`" if change.scope else "")
    if change.removed and change.added:
        return f"{where}: replace {quote_lines(change.removed)} with {quote_lines(change.added)}."
    if change.added:
        return f"{where}: add {quote_lines(change.added)}."
    return f"{where}: remove {quote_lines(change.removed)}."


def templated_draft(bug: dict[str, Any], reference: Patch) -> dict[str, Any]:
    """The templated draft: a skeleton read off the reference diff."""
    key = str(bug.get("key") or "(no key)")
    listed = ", ".join(f"`{path}`" for path in reference.test_files)
    tests = f" The reference also updates the tests in {listed}." if listed else ""
    if reference.error:
        title = "could not be read" if not reference.readable else "changes no non-test code"
        return {
            "root_cause": f"Bug `{key}`: no skeleton, as {reference.error}.{tests}",
            "requirements": [
                {
                    "title": f"The reference fix {title}",
                    "detail": (
                        f"{_sentence(reference.error)}: write the requirements from the bug "
                        "description."
                    ),
                }
            ],
            "acceptable_solutions": ["A change to non-test code that fixes the bug."],
            "unacceptable_solutions": ["A patch that changes only tests."],
        }
    removed = [line for c in reference.changes for line in c.removed if is_condition(line)]
    added = [line for c in reference.changes for line in c.added if is_condition(line)]
    conditions = (
        f" It changes the condition lines {quote_lines(removed) or '(none)'} → "
        f"{quote_lines(added) or '(none)'}."
        if removed or added
        else " It changes no condition line."
    )
    scopes = ", ".join(f"`{scope}`" for scope in reference.scopes) or _places(reference)
    unacceptable = [
        "A patch that changes only tests, or weakens them, instead of the code.",
        f"A patch that does not change {scopes}, where the reference fix is.",
    ]
    if len(reference.changes) > 1:
        count = len(reference.changes)
        unacceptable.append(f"A patch that makes only some of the {count} changes above.")
    if removed or added:
        unacceptable.append(
            "Suppressing the error (catching or ignoring it, skipping the input, loosening "
            "a check) instead of fixing the condition."
        )
    return {
        "root_cause": (
            f"Bug `{key}`: the reference fix changes {_places(reference)}.{conditions}{tests} "
            "This skeleton is read off the diff; state the actual root cause from the report."
        ),
        "requirements": [
            {
                "title": f"Change `{change.scope or change.path}` near line {change.line}",
                "detail": _change_detail(change),
            }
            for change in reference.changes
        ],
        "acceptable_solutions": [
            f"A change to {scopes} that behaves like the reference, written differently.",
            "Extra test, comment or formatting changes alongside the fix.",
        ],
        "unacceptable_solutions": unacceptable,
    }


def free_form(draft: dict[str, Any]) -> str:
    """The templated draft as Markdown prose and bullets, without the template's headings."""

    def bullets(texts: list[str]) -> list[str]:
        return [f"- {text}" for text in texts]

    details = [requirement["detail"] for requirement in draft["requirements"]]
    return "\n".join(
        [
            draft["root_cause"],
            "",
            "A valid patch does all of this:",
            "",
            *bullets(details),
            "",
            "Fine:",
            "",
            *bullets(draft["acceptable_solutions"]),
            "",
            "Not valid:",
            "",
            *bullets(draft["unacceptable_solutions"]),
            "",
        ]
    )


@offline_rule(DRAFT_PURPOSE)
def draft(inputs: Inputs) -> dict[str, Any]:
    """A skeleton read off the reference diff (the bug text is not analysed).

    Root cause: the files and scopes the fix changes, its condition lines (removed →
    added), whether it updates tests, and a reminder to state the real cause. Requirements:
    one per change, titled "Change `<scope or file>` near line N", its detail naming the
    file and scope and quoting up to 3 removed and 3 added lines (bracket-only lines
    skipped, each cut at 100 characters, "…" marks a cut). Acceptable: a change to the
    same scopes that behaves like the reference; extra test, comment or formatting
    changes. Unacceptable: test-only patches; patches that leave the reference's scopes
    untouched; only some of several changes; and, when the reference changes a condition
    line, suppressing the error instead of fixing the condition. An unreadable or
    test-only reference gives one requirement saying so. ``free_form``: the same content
    as Markdown prose and bullets, without the template's headings.
    """
    bug = inputs.require("bug", dict)
    reference = read_patch(inputs.require("reference_diff", str))
    variant = _variant(inputs)
    skeleton = templated_draft(bug, reference)
    return skeleton if variant == "templated" else {"rubric": free_form(skeleton)}


# -- revising ---------------------------------------------------------------------------------


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
    """The rubric with offline suggestions, and the rationale (see ``revise``)."""
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


@offline_rule(REVISE_PURPOSE)
def revise(inputs: Inputs) -> dict[str, Any]:
    """The current rubric (``rubric``, its structure) with suggestions read off the
    ``disagreements``' labels alone (no diff is read, nothing is judged).

    Everything of the rubric is kept word for word; then, for each disagreement in order:
    humans VALID, judge INVALID: each failed requirement (``passed: false``; an index not
    in the rubric is skipped and said so) gets, appended to its detail, the sentence
    "[marker] Humans judged patch "<key>", which fails this requirement, valid: the
    requirement may be stricter than a valid fix needs — review it." (one per patch: two
    patches on one requirement give two sentences; the key is quoted with "…", not `…`,
    which the ``judge.rubric`` rule would read as code); and one acceptable solution
    "[marker] A fix like patch "<key>", which the humans judged valid and the rubric judge
    did not; a human noted: "<first note>"." (the note part only when a note is given;
    notes on one line, cut at 200 characters). Humans INVALID, judge VALID: one
    unacceptable solution "[marker] A patch like "<key>", which the humans judged invalid
    and the rubric let through; a human noted: "<first note>"; disagreement themes: <a, b>."
    (each part only when given). Other label pairs change nothing. A sentence or item
    already in the rubric is not added again, so revising the result with the same
    disagreements changes nothing; one that would make the Markdown longer than 50,000
    characters is left out. ``free_form`` (``{"text"}``): the same items as bullets of a
    section "## Offline suggestions (not an LLM)" appended to the text once (later
    bullets go at the end of that section), a failed requirement as "[marker]
    Requirement <n> of the judge's checks: humans judged patch "<key>", which fails it,
    valid: …". ``rationale``: marked, one line per disagreement saying what was added
    for it, then what was left out (too long; ``left_out`` disagreements not shown).
    """
    inputs.require("reference_diff", str, type(None))
    templated = _variant(inputs) == "templated"
    rubric = inputs.require("rubric", dict)
    if templated:
        if not isinstance(rubric.get("root_cause"), str):
            raise inputs.bad("rubric.root_cause", "str")
        inputs.objects("rubric.requirements", rubric.get("requirements"))
        for key in ("acceptable", "unacceptable"):
            if not all(isinstance(item, str) for item in rubric.get(key) or []):
                raise inputs.bad(f"rubric.{key}", "strs")
    elif not isinstance(rubric.get("text"), str):
        raise inputs.bad("rubric.text", "str")
    disagreements = inputs.objects("disagreements", inputs.require("disagreements", list))
    left_out = inputs.values.get("left_out") or 0
    if not isinstance(left_out, int) or isinstance(left_out, bool):
        raise inputs.bad("left_out", "int")
    return revise_rubric(rubric, disagreements, templated=templated, left_out=left_out)
