r"""The reference diff as the operators edit it: its changes, and a rung's text rendered
from a set of edits.

A *change* is a maximal run of removed/added lines inside a hunk (with the ``\ No newline
at end of file`` markers among them). *Reverting* a change removes its added lines (and
their markers) and turns its removed lines into context lines; a hunk left with no change
is dropped. Hunk headers are recounted, and a hunk's new start is shifted by what the
earlier hunks of its file now add or remove. Everything else (``diff --git``, ``Index:``,
``---``/``+++`` headers, text around the diff, CRLF endings line by line) is kept as it is.

So every rung applies to the same files as the reference, and its pre-image is the
reference's: context and removed lines are never dropped or altered, only turned from
removed into context. The edits work on the raw text lines, found through the positions
:func:`sejury_web.diffs.parse_diff` gives.
"""

import re
from dataclasses import dataclass, field

from sejury_web.diffs import Hunk, LineKind, parse_diff


@dataclass(frozen=True)
class Change:
    number: int  # 1-based, in diff order
    file: int
    hunk: int
    start: int  # first line in ``hunk.lines``
    end: int  # one past the last line (markers included)
    old_line: int  # where the change starts, in the old file
    new_line: int  # and in the new one


LineKey = tuple[int, int, int]  # file, hunk, line of ``hunk.lines``


@dataclass
class Edits:
    """What a rung changes in the reference; :meth:`Reference.render` applies it."""

    reverted: set[int] = field(default_factory=set)  # change numbers
    replaced: dict[LineKey, str] = field(default_factory=dict)  # an added line's new text
    comments: dict[LineKey, str] = field(default_factory=dict)  # inserted before the line


class Reference:
    """The reference diff as raw lines, with its parse and its changes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.raw = text.split("\n")  # "\r" kept: line endings survive line by line
        self.files = parse_diff(text).files
        self.changes: list[Change] = []
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
                Change(number, file_index, hunk_index, start, i, old_line, new_line)
            )
            for index in range(start, i):
                self.change_of[(file_index, hunk_index, index)] = number

    def raw_line(self, file: int, hunk: int, index: int) -> str:
        return self.raw[self.files[file].hunks[hunk].header_line + index]

    def file_changes(self, file: int) -> list[Change]:
        return [change for change in self.changes if change.file == file]

    def changed_files(self) -> list[int]:
        return sorted({change.file for change in self.changes})

    def reverted(self, change: Change) -> str:
        """The operator that reverts ``change``, as a rung lists it."""
        path = self.files[change.file].path
        total = len(self.changes)
        return f"change {change.number} of {total} reverted ({path}, at old line {change.old_line})"

    def render(self, edits: Edits) -> str:
        """The reference with ``edits`` made: the text of a rung."""
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

    def _body(self, edits: Edits, file: int, hunk: int) -> list[tuple[LineKind, str]]:
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
