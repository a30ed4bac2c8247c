"""A line-level diff of two rubric texts, as rows ready to render as HTML.

Rubrics are short Markdown texts (a few dozen lines), so every line is shown, unchanged ones
included: a reviewer reads a diff of a rubric as the rubric with its changes marked. Within
a changed line, the words that differ are wrapped in ``<del>``/``<ins>``.
"""

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Words and the runs of space or punctuation between them, so that marks fall on whole words.
TOKEN = re.compile(r"\w+|\s+|[^\w\s]+")
# Below this similarity (difflib's ratio over tokens) a changed line is shown unmarked.
MIN_WORD_MARK_RATIO = 0.4


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "context", "added", "removed" (the patch diffs' row classes), or "skip"
    old_number: int | None
    new_number: int | None
    html: SafeString


@dataclass(frozen=True)
class TextDiff:
    rows: list[DiffRow]
    added: int
    removed: int

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def _marked(old: str, new: str) -> tuple[SafeString, SafeString] | None:
    """Both lines escaped, with the words only one of them has marked; None when the lines
    have too little in common for word marks to help (the whole line is the change)."""
    old_tokens, new_tokens = TOKEN.findall(old), TOKEN.findall(new)
    matcher = SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    if matcher.ratio() < MIN_WORD_MARK_RATIO:
        return None
    opcodes = matcher.get_opcodes()
    old_html: list[str] = []
    new_html: list[str] = []
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        old_part = escape("".join(old_tokens[i1:i2]))
        new_part = escape("".join(new_tokens[j1:j2]))
        # Spaces between two changes belong to the change: one mark, not a row of them.
        between = 0 < index < len(opcodes) - 1 and not "".join(old_tokens[i1:i2]).strip()
        if tag == "equal" and not between:
            old_html.append(old_part)
            new_html.append(new_part)
            continue
        if old_part:
            old_html.append(f"<del>{old_part}</del>")
        if new_part:
            new_html.append(f"<ins>{new_part}</ins>")
    # Every piece went through escape(); only the marks are ours. Adjacent marks are merged.
    old_marked = "".join(old_html).replace("</del><del>", "")
    new_marked = "".join(new_html).replace("</ins><ins>", "")
    return mark_safe(old_marked), mark_safe(new_marked)  # noqa: S308


def _around_changes(rows: list[DiffRow], context: int) -> list[DiffRow]:
    """Only the rows within ``context`` lines of a change; a ``skip`` row stands for the rest."""
    changed = [i for i, row in enumerate(rows) if row.kind != "context"]
    keep = {i for c in changed for i in range(c - context, c + context + 1)}
    shown: list[DiffRow] = []
    for i, row in enumerate(rows):
        if i in keep:
            shown.append(row)
        elif not shown or shown[-1].kind != "skip":
            shown.append(DiffRow("skip", None, None, mark_safe("…")))
    return shown


def line_diff(old_text: str, new_text: str, *, context: int | None = None) -> TextDiff:
    """The line diff of ``old_text`` → ``new_text``, changed words marked; every line shown,
    or, with ``context``, only the lines near a change."""
    old_lines = old_text.replace("\r\n", "\n").rstrip("\n").split("\n") if old_text else []
    new_lines = new_text.replace("\r\n", "\n").rstrip("\n").split("\n") if new_text else []
    matcher = SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    rows: list[DiffRow] = []
    added = removed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                line = escape(old_lines[i1 + offset])
                rows.append(DiffRow("context", i1 + offset + 1, j1 + offset + 1, line))
            continue
        olds, news = old_lines[i1:i2], new_lines[j1:j2]
        removed += len(olds)
        added += len(news)
        old_html = [escape(line) for line in olds]
        new_html = [escape(line) for line in news]
        if tag == "replace":
            # Pair the lines of a replaced block in order; the surplus stays whole.
            for k in range(min(len(olds), len(news))):
                marked = _marked(olds[k], news[k])
                if marked:
                    old_html[k], new_html[k] = marked
        rows += [DiffRow("removed", i1 + k + 1, None, html) for k, html in enumerate(old_html)]
        rows += [DiffRow("added", None, j1 + k + 1, html) for k, html in enumerate(new_html)]
    if context is not None:
        rows = _around_changes(rows, context)
    return TextDiff(rows=rows, added=added, removed=removed)
