r"""Lenient parsing of unified diffs, as real repair tools emit them.

Accepted: ``git diff``, ``diff -u`` and SVN diffs (``Index:`` headers), CRLF line endings,
``\ No newline at end of file`` markers, text before and after the diff, and hunk headers
whose line counts disagree with their bodies. Counts are recomputed from the body, as
``git apply --recount`` does: a hunk's body runs for as long as its lines start with
``' '``, ``'+'``, ``'-'`` or ``'\'`` (an empty line counts as context), and ends at anything
else (the next ``@@``, ``diff``, ``Index:``, or a ``---``/``+++`` pair).

The stored text is never rewritten; parsing serves validation, rendering, and the
normalized hash that recognizes duplicate patches.
"""

import hashlib
import re
from dataclasses import dataclass, field
from typing import Literal

# Line numbers of at most 18 digits: anything longer is not a hunk header but garbage.
HUNK_HEADER = re.compile(r"^@@ -(\d{1,18})(?:,(\d{1,18}))? \+(\d{1,18})(?:,(\d{1,18}))? @@ ?(.*)$")
GIT_HEADER = re.compile(r"^diff --git (?:\"?a/)?(.+?)\"? (?:\"?b/)?(.+?)\"?$")
# git headers that make a file entry meaningful without any hunk.
GIT_EXTENDED_HEADERS = (
    "new file mode",
    "deleted file mode",
    "old mode",
    "new mode",
    "rename from",
    "rename to",
    "copy from",
    "copy to",
    "Binary files",
    "GIT binary patch",
)

NOT_A_DIFF = "not a unified diff: no file header (diff --git, Index: or ---/+++) and no hunk"
NO_HUNKS = "not a unified diff: file headers but no hunk (@@ -a,b +c,d @@)"
HUNK_WITHOUT_FILE = "hunk header on diff line {line} has no file header before it"
EMPTY_HUNK = "hunk header on diff line {line} is followed by no diff lines"

LineKind = Literal["context", "added", "removed", "no_newline"]


class DiffError(ValueError):
    """The text is not a unified diff; the message says why and where."""


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str  # without the prefix character and the line ending
    old_number: int | None
    new_number: int | None


@dataclass
class Hunk:
    header_line: int  # 1-based line of the ``@@`` header in the diff text
    old_start: int
    new_start: int
    header_old_count: int
    header_new_count: int
    section: str
    lines: list[DiffLine] = field(default_factory=list)

    @property
    def old_count(self) -> int:
        return sum(1 for line in self.lines if line.kind in ("context", "removed"))

    @property
    def new_count(self) -> int:
        return sum(1 for line in self.lines if line.kind in ("context", "added"))

    @property
    def counts_match_header(self) -> bool:
        return (self.old_count, self.new_count) == (self.header_old_count, self.header_new_count)

    @property
    def header(self) -> str:
        """The hunk header with recounted line counts."""
        section = f" {self.section}" if self.section else ""
        return (
            f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@{section}"
        )


@dataclass
class FileDiff:
    old_path: str | None  # None for /dev/null (a new file)
    new_path: str | None  # None for /dev/null (a deleted file)
    header_lines: list[str] = field(default_factory=list)
    hunks: list[Hunk] = field(default_factory=list)
    has_minus_plus: bool = False

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or "(unknown file)"

    @property
    def is_new(self) -> bool:
        return self.old_path is None and self.has_minus_plus

    @property
    def is_deleted(self) -> bool:
        return self.new_path is None and self.has_minus_plus

    @property
    def added(self) -> int:
        return sum(1 for h in self.hunks for line in h.lines if line.kind == "added")

    @property
    def removed(self) -> int:
        return sum(1 for h in self.hunks for line in h.lines if line.kind == "removed")

    @property
    def line_count(self) -> int:
        return sum(len(h.lines) for h in self.hunks)


@dataclass
class ParsedDiff:
    files: list[FileDiff]

    @property
    def hunks(self) -> list[Hunk]:
        return [hunk for f in self.files for hunk in f.hunks]

    @property
    def recounted_hunks(self) -> int:
        """How many hunk headers disagreed with their bodies."""
        return sum(1 for hunk in self.hunks if not hunk.counts_match_header)

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    @property
    def line_count(self) -> int:
        return sum(f.line_count for f in self.files)


def _strip_cr(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def _header_path(raw: str) -> str | None:
    """The path of a ``---``/``+++``/``Index:`` line, without timestamp or revision."""
    path = raw.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"') and len(path) > 1:
        path = path[1:-1]
    if path == "/dev/null":
        return None
    return path


def _strip_git_prefixes(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Drop the leading directory that names the two trees being compared, as ``-p1`` does.

    ``a/x`` and ``b/x`` (git), or ``Chart1b/x`` and ``Chart1b_Patch1/x`` (``diff -r``), both
    become ``x``; identical paths (SVN) are kept as they are.
    """
    if old is not None and new is not None:
        if old != new and "/" in old and "/" in new:
            old_rest, new_rest = old.split("/", 1)[1], new.split("/", 1)[1]
            if old_rest == new_rest:
                return old_rest, new_rest
        return old, new
    if old is not None and old.startswith("a/"):
        return old[2:], new
    if new is not None and new.startswith("b/"):
        return old, new[2:]
    return old, new


def _is_minus_plus(lines: list[str], i: int) -> bool:
    return (
        lines[i].startswith("--- ")
        and i + 1 < len(lines)
        and _strip_cr(lines[i + 1]).startswith("+++ ")
    )


def parse_diff(text: str) -> ParsedDiff:
    """Parse a unified diff; raise :class:`DiffError` if ``text`` is not one."""
    lines = [_strip_cr(line) for line in text.split("\n")]
    if lines and lines[-1] == "":
        lines.pop()
    files: list[FileDiff] = []
    current: FileDiff | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        git = GIT_HEADER.match(line)
        if git:
            current = FileDiff(old_path=git.group(1), new_path=git.group(2), header_lines=[line])
            files.append(current)
            i += 1
            continue
        if line.startswith("Index: "):
            path = _header_path(line[len("Index: ") :])
            current = FileDiff(old_path=path, new_path=path, header_lines=[line])
            files.append(current)
            i += 1
            continue
        if _is_minus_plus(lines, i):
            old, new = _strip_git_prefixes(_header_path(line[4:]), _header_path(lines[i + 1][4:]))
            if current is None or current.has_minus_plus or current.hunks:
                current = FileDiff(old_path=old, new_path=new)
                files.append(current)
            else:
                current.old_path, current.new_path = old, new
            current.has_minus_plus = True
            current.header_lines += [line, lines[i + 1]]
            i += 2
            continue
        header = HUNK_HEADER.match(line)
        if header:
            if current is None:
                raise DiffError(HUNK_WITHOUT_FILE.format(line=i + 1))
            hunk, i = _parse_hunk(lines, i, header)
            current.hunks.append(hunk)
            continue
        if current is not None and not current.hunks:
            current.header_lines.append(line)
        # Anything else (a commit message, a trailer) lies outside the diff proper.
        i += 1

    if not files:
        raise DiffError(NOT_A_DIFF)
    if not any(f.hunks for f in files) and not any(
        h.startswith(GIT_EXTENDED_HEADERS) for f in files for h in f.header_lines
    ):
        raise DiffError(NO_HUNKS)
    return ParsedDiff(files=files)


def _parse_hunk(lines: list[str], start: int, header: re.Match[str]) -> tuple[Hunk, int]:
    hunk = Hunk(
        header_line=start + 1,
        old_start=int(header.group(1)),
        header_old_count=int(header.group(2)) if header.group(2) is not None else 1,
        new_start=int(header.group(3)),
        header_new_count=int(header.group(4)) if header.group(4) is not None else 1,
        section=header.group(5).strip(),
    )
    old_no, new_no = hunk.old_start, hunk.new_start
    i = start + 1
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and _is_minus_plus(lines, i):
            break  # the next file of a plain ``diff -u`` of several files
        prefix = line[:1]
        if prefix in (" ", ""):
            hunk.lines.append(DiffLine("context", line[1:], old_no, new_no))
            old_no, new_no = old_no + 1, new_no + 1
        elif prefix == "-":
            hunk.lines.append(DiffLine("removed", line[1:], old_no, None))
            old_no += 1
        elif prefix == "+":
            hunk.lines.append(DiffLine("added", line[1:], None, new_no))
            new_no += 1
        elif prefix == "\\":
            hunk.lines.append(DiffLine("no_newline", line[1:].strip(), None, None))
        else:
            break
        i += 1
    # Blank lines that end a hunk beyond its header's counts separate it from what
    # follows; within the counts they are context lines whose space was trimmed.
    old_count, new_count = hunk.old_count, hunk.new_count
    while (
        hunk.lines
        and hunk.lines[-1].kind == "context"
        and lines[i - 1] == ""
        and (old_count > hunk.header_old_count or new_count > hunk.header_new_count)
    ):
        hunk.lines.pop()
        i -= 1
        old_count, new_count = old_count - 1, new_count - 1
    if not any(line.kind != "no_newline" for line in hunk.lines):
        raise DiffError(EMPTY_HUNK.format(line=start + 1))
    return hunk, i


def normalized_diff_hash(parsed: ParsedDiff) -> str:
    """SHA-256 of what a diff changes: per file, its path, and per change, where it is made
    in the old file and the lines it removes and adds.

    Headers, context lines, line endings and trailing whitespace are left out, so two tools'
    renderings of the same change (with more or less context) hash alike; the same lines
    changed at another place do not.
    """
    digest = hashlib.sha256()
    for f in parsed.files:
        digest.update(f"F {f.old_path or '/dev/null'} -> {f.new_path or '/dev/null'}\n".encode())
        if not f.hunks:
            for header in f.header_lines:
                if header.startswith(GIT_EXTENDED_HEADERS):
                    digest.update(f"H {header.rstrip()}\n".encode())
        for hunk in f.hunks:
            # A hunk with no old lines names the line *after which* it inserts.
            old_line = hunk.old_start + (1 if hunk.old_count == 0 else 0)
            in_change = False
            for line in hunk.lines:
                if line.kind in ("added", "removed"):
                    if not in_change:  # a run of changes starts here in the old file
                        digest.update(f"@{old_line}\n".encode())
                        in_change = True
                    sign = "+" if line.kind == "added" else "-"
                    text = line.text.rstrip().encode("utf-8", "surrogatepass")
                    digest.update(sign.encode() + text + b"\n")
                elif line.kind == "context":
                    in_change = False
                if line.kind in ("context", "removed"):
                    old_line += 1
    return digest.hexdigest()
