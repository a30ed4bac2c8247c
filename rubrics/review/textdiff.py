"""A line-level diff of two rubric texts, as rows ready to render as HTML.

Rubrics are short Markdown texts (a few dozen lines), so every line is shown, unchanged ones
included: a reviewer reads a diff of a rubric as the rubric with its changes marked. Within
a changed line, the words that differ are wrapped in ``<del>``/``<ins>``.

Both levels are ``Levenshtein.opcodes`` over sequences: of lines, then of a line's tokens.
Levenshtein's edit script is minimal, not the longest-matching-blocks alignment of a
unified diff: it takes a substitution (cost 1) over a deletion plus an insertion (cost 2),
puts replace, insert and delete opcodes side by side, and substitutes lines by unrelated
ones. So:

- lines are rendered hunk by hunk, not opcode by opcode: a run of non-equal opcodes shows
  its removed lines, then its added ones, as in a unified diff;
- within a hunk, which old line became which new one is decided by word similarity (in
  order), not by where Levenshtein's tie-breaking put its substitutions; a line paired with
  none, or with one too unlike it, is shown whole;
- a line Levenshtein substituted though it is unchanged is shown as context.
"""

import re
from dataclasses import dataclass
from itertools import groupby

import Levenshtein
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Words and the runs of space or punctuation between them, so that marks fall on whole words.
TOKEN = re.compile(r"\w+|\s+|[^\w\s]+")
WORD = re.compile(r"\w+")
# Below this similarity of their words a changed line pair is shown unmarked. The similarity
# is Levenshtein.ratio over the words alone (2 × words in common, in order / words of both
# lines): over every token, two unrelated sentences would share most of their spaces and
# pass (86% of unrelated pairs of rubric lines did, against 0.2% over words).
MIN_WORD_MARK_RATIO = 0.4
# Past this many line pairs (old lines × new lines of one changed hunk), the lines are paired
# as Levenshtein substituted them, not by similarity.
MAX_PAIRING_CELLS = 200 * 200


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
    if Levenshtein.ratio(WORD.findall(old), WORD.findall(new)) < MIN_WORD_MARK_RATIO:
        return None
    old_tokens, new_tokens = TOKEN.findall(old), TOKEN.findall(new)
    opcodes = Levenshtein.opcodes(old_tokens, new_tokens)
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


def _similar_pairs(olds: list[str], news: list[str]) -> list[tuple[int, int]]:
    """The pairs (old index, new index) of the in-order pairing of ``olds`` with ``news``
    whose pairs' word similarities add up to the most, pairs below MIN_WORD_MARK_RATIO left
    out: the old line each new line most likely is, lines keeping their order."""
    old_words, new_words = [WORD.findall(o) for o in olds], [WORD.findall(n) for n in news]
    similarity = [[Levenshtein.ratio(o, n) for n in new_words] for o in old_words]
    # best[i][j]: the most similarity olds[i:] and news[j:] can pair up.
    best = [[0.0] * (len(news) + 1) for _ in range(len(olds) + 1)]
    for i in reversed(range(len(olds))):
        for j in reversed(range(len(news))):
            paired = similarity[i][j] + best[i + 1][j + 1]
            best[i][j] = max(best[i + 1][j], best[i][j + 1])
            if similarity[i][j] >= MIN_WORD_MARK_RATIO:
                best[i][j] = max(best[i][j], paired)
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(olds) and j < len(news):
        if similarity[i][j] >= MIN_WORD_MARK_RATIO and best[i][j] == (
            similarity[i][j] + best[i + 1][j + 1]
        ):
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def _hunk_pairs(
    hunk: list[tuple[str, int, int, int, int]], old_lines: list[str], new_lines: list[str]
) -> list[tuple[int, int]]:
    """Which old line of a changed hunk became which new one, as line indexes.

    Any in-order pairing of a hunk's lines is an edit script of the same cost, so which ones
    Levenshtein substitutes is its tie-breaking (it substitutes first, then deletes: after a
    deleted requirement it pairs every renumbered one with its unrelated predecessor). The
    lines are paired by word similarity instead; past ``MAX_PAIRING_CELLS`` (about 40 ms of
    work), by Levenshtein's substitutions.
    """
    (_, i1, _, j1, _), (_, _, i2, _, j2) = hunk[0], hunk[-1]
    if (i2 - i1) * (j2 - j1) > MAX_PAIRING_CELLS:
        return [
            pair
            for tag, a1, a2, b1, b2 in hunk
            if tag == "replace"  # item for item: two runs of one length
            for pair in zip(range(a1, a2), range(b1, b2), strict=True)
        ]
    pairs = _similar_pairs(old_lines[i1:i2], new_lines[j1:j2])
    return [(i1 + i, j1 + j) for i, j in pairs]


def line_diff(old_text: str, new_text: str, *, context: int | None = None) -> TextDiff:
    """The line diff of ``old_text`` → ``new_text``, changed words marked; every line shown,
    or, with ``context``, only the lines near a change."""
    old_lines = old_text.replace("\r\n", "\n").rstrip("\n").split("\n") if old_text else []
    new_lines = new_text.replace("\r\n", "\n").rstrip("\n").split("\n") if new_text else []
    rows: list[DiffRow] = []
    added = removed = 0

    def context_row(i: int, j: int) -> None:
        rows.append(DiffRow("context", i + 1, j + 1, escape(old_lines[i])))

    opcodes = Levenshtein.opcodes(old_lines, new_lines)
    # A hunk: one equal opcode, or a run of non-equal ones (Levenshtein puts replace, insert
    # and delete opcodes side by side), shown as its removed lines, then its added ones.
    for changed, run in groupby(opcodes, key=lambda opcode: opcode[0] != "equal"):
        hunk = list(run)
        (_, i1, _, j1, _), (_, _, i2, _, j2) = hunk[0], hunk[-1]
        if not changed:
            for offset in range(i2 - i1):
                context_row(i1 + offset, j1 + offset)
            continue
        pairs = _hunk_pairs(hunk, old_lines, new_lines)
        # A line Levenshtein substituted though it is unchanged (around it, a deletion and an
        # addition longer than the unchanged run between them cost no more as substitutions)
        # pairs with itself: it is shown as context, and splits the hunk.
        cuts = [(i, j) for i, j in pairs if old_lines[i] == new_lines[j]]
        start_old, start_new = i1, j1
        for cut_old, cut_new in [*cuts, (i2, j2)]:
            old_html = {i: escape(old_lines[i]) for i in range(start_old, cut_old)}
            new_html = {j: escape(new_lines[j]) for j in range(start_new, cut_new)}
            for i, j in pairs:
                if i in old_html and j in new_html:
                    marked = _marked(old_lines[i], new_lines[j])
                    if marked:
                        old_html[i], new_html[j] = marked
            rows += [DiffRow("removed", i + 1, None, html) for i, html in old_html.items()]
            rows += [DiffRow("added", None, j + 1, html) for j, html in new_html.items()]
            removed += len(old_html)
            added += len(new_html)
            if cut_old < i2:
                context_row(cut_old, cut_new)
            start_old, start_new = cut_old + 1, cut_new + 1
    if context is not None:
        rows = _around_changes(rows, context)
    return TextDiff(rows=rows, added=added, removed=removed)
