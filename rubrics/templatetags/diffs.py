"""``{% diff_view text %}``: a unified diff rendered as a diff, with syntax highlighting."""

from dataclasses import dataclass
from functools import lru_cache

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

from sejury_web.diffs import DiffError, DiffLine, FileDiff, Hunk, parse_diff

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


@dataclass
class RenderedFile:
    file: FileDiff
    hunks: list[RenderedHunk]
    collapsed: bool


def _render_line(line: DiffLine, lexer: Lexer, budget: list[int]) -> RenderedLine:
    if line.kind == "no_newline" or budget[0] <= 0:
        html = escape(line.text)
    else:
        budget[0] -= 1
        # Pygments escapes the text it formats.
        html = mark_safe(highlight(line.text, lexer, _FORMATTER).rstrip("\n"))  # noqa: S308
    return RenderedLine(line.kind, line.old_number, line.new_number, html)


def _render_hunk(hunk: Hunk, lexer: Lexer, budget: list[int]) -> RenderedHunk:
    return RenderedHunk(
        header=hunk.header,
        recounted=not hunk.counts_match_header,
        lines=[_render_line(line, lexer, budget) for line in hunk.lines],
    )


@register.inclusion_tag("components/_diff.html")
def diff_view(text: str, collapse_files: bool = True) -> dict[str, object]:
    try:
        parsed = parse_diff(text)
    except DiffError as exc:
        return {"error": str(exc), "raw": text}
    budget = [HIGHLIGHT_MAX_LINES]
    files = [
        RenderedFile(
            file=f,
            hunks=[_render_hunk(h, _lexer_for(f.path), budget) for h in f.hunks],
            collapsed=collapse_files and f.line_count > COLLAPSE_FILE_LINES,
        )
        for f in parsed.files
    ]
    return {"files": files, "parsed": parsed}
