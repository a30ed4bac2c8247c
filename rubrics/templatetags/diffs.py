"""``{% diff_view text %}``: a unified diff rendered as a diff, with syntax highlighting.

A long diff shows its first ``PAGE_LINES`` lines and a link to the rest, loaded on demand
(``rubrics.long_diffs`` says how the link stays as private as the page).
"""

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlencode

from django import template
from django.template import Context
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

from rubrics.long_diffs import CHUNK_LINES, PAGE_LINES, diff_keep, diff_token
from sejury_web.diffs import DiffError, DiffLine, FileDiff, ParsedDiff, parse_diff

register = template.Library()

# Files with more diff lines than this start collapsed.
COLLAPSE_FILE_LINES = 60
# Past this many lines in one diff, lines are shown without highlighting (it costs time).
HIGHLIGHT_MAX_LINES = 4000

_FORMATTER = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=256)
def _lexer_for(path: str) -> Lexer:
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


@dataclass
class RenderedLine:
    kind: str
    old_number: int | None
    new_number: int | None
    html: SafeString


@dataclass
class RenderedHunk:
    header: str
    recounted: bool
    lines: list[RenderedLine]
    continued: bool = False  # its first lines were shown above


@dataclass
class RenderedFile:
    file: FileDiff
    hunks: list[RenderedHunk]
    collapsed: bool
    continued: bool = False  # the file began above


@dataclass
class MoreLines:
    """What is left of a diff after the lines shown: a link to load it, when possible."""

    url: str | None  # None without a user to sign the link for
    shown: int  # lines shown so far, from the top
    remaining: int
    next_count: int  # how many the link loads
    total: int


def _render_line(line: DiffLine, lexer: Lexer, budget: list[int]) -> RenderedLine:
    if line.kind == "no_newline" or budget[0] <= 0:
        html = escape(line.text)
    else:
        budget[0] -= 1
        # Pygments escapes the text it formats.
        html = mark_safe(highlight(line.text, lexer, _FORMATTER).rstrip("\n"))  # noqa: S308
    return RenderedLine(line.kind, line.old_number, line.new_number, html)


def render_lines(
    parsed: ParsedDiff, start: int, end: int, *, collapse_files: bool
) -> list[RenderedFile]:
    """The files of ``parsed`` cut to its diff lines ``start`` to ``end`` (0-based, counted
    across files and hunks), highlighted up to ``HIGHLIGHT_MAX_LINES`` from the top."""
    budget = [max(0, HIGHLIGHT_MAX_LINES - start)]
    files: list[RenderedFile] = []
    position = 0  # the index of the hunk's first line in the whole diff
    for f in parsed.files:
        hunks: list[RenderedHunk] = []
        continued = position < start  # the file's first lines were shown above
        lexer = _lexer_for(f.path)
        for hunk in f.hunks:
            first, past = position, position + len(hunk.lines)
            position = past
            if past <= start or first >= end:
                continue
            lo, hi = max(start - first, 0), min(end - first, len(hunk.lines))
            hunks.append(
                RenderedHunk(
                    header=hunk.header,
                    recounted=not hunk.counts_match_header,
                    lines=[_render_line(line, lexer, budget) for line in hunk.lines[lo:hi]],
                    continued=lo > 0,
                )
            )
        if hunks:
            files.append(
                RenderedFile(
                    file=f,
                    hunks=hunks,
                    collapsed=collapse_files and f.line_count > COLLAPSE_FILE_LINES,
                    continued=continued,
                )
            )
        if position >= end:
            break
    return files


def more_lines(
    text: str, parsed: ParsedDiff, shown_until: int, user_id: int | None
) -> MoreLines | None:
    """The link to the lines of ``text`` after ``shown_until``, or None if none are left."""
    total = parsed.line_count
    remaining = total - shown_until
    if remaining <= 0:
        return None
    url = None
    if user_id is not None:
        token = diff_token(diff_keep(text), user_id)
        url = f"{reverse('rubrics:diff_more')}?{urlencode({'t': token, 'from': shown_until})}"
    return MoreLines(url, shown_until, remaining, min(remaining, CHUNK_LINES), total)


def diff_chunk(text: str, *, start: int, user_id: int) -> dict[str, object]:
    """The context of ``components/_diff_chunk.html``: ``CHUNK_LINES`` lines of ``text``
    from ``start``, and the link to the next ones."""
    parsed = parse_diff(text)  # the text was shown as a diff: it parses
    end = start + CHUNK_LINES
    return {
        "files": render_lines(parsed, start, end, collapse_files=False),
        "more": more_lines(text, parsed, min(end, parsed.line_count), user_id),
        "first": start + 1,
        "last": min(end, parsed.line_count),
        "total": parsed.line_count,
    }


def _user_id(context: Context) -> int | None:
    request = context.get("request")
    user = getattr(request, "user", None)
    return user.pk if user is not None and user.is_authenticated else None


@register.inclusion_tag("components/_diff.html", takes_context=True)
def diff_view(context: Context, text: str, collapse_files: bool = True) -> dict[str, object]:
    """A diff: its first ``PAGE_LINES`` lines, and a link that loads the rest on demand."""
    try:
        parsed = parse_diff(text)
    except DiffError as exc:
        lines = text.splitlines()
        shown = "\n".join(lines[:PAGE_LINES])
        return {"error": str(exc), "raw": shown, "raw_hidden": max(0, len(lines) - PAGE_LINES)}
    return {
        "files": render_lines(parsed, 0, PAGE_LINES, collapse_files=collapse_files),
        "parsed": parsed,
        "more": more_lines(text, parsed, PAGE_LINES, _user_id(context)),
    }
