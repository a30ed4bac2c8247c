"""The line diff of two rubric texts (``rubrics.review.textdiff``), built on Levenshtein's
opcodes, where its minimal edit script would render worse than a unified diff.

The escaping, the word marks of a simple edit and the context rows are tested with the
review pages (``test_views.test_line_diff_marks_changed_words_and_escapes``)."""

import Levenshtein
import pytest

from rubrics.review import textdiff
from rubrics.review.textdiff import DiffRow, line_diff


def shown(rows: list[DiffRow]) -> list[tuple[str, int | None, int | None, str]]:
    return [(row.kind, row.old_number, row.new_number, str(row.html)) for row in rows]


def test_levenshtein_diffs_lists_of_lines_and_of_tokens() -> None:
    # What the module relies on (Levenshtein 0.27.5): opcodes over lists of hashable items,
    # in SequenceMatcher's 5-tuple form, and ratio over lists.
    assert Levenshtein.opcodes(["a", "b", "c"], ["b", "c", "d"]) == [
        ("delete", 0, 1, 0, 0),
        ("equal", 1, 3, 0, 2),
        ("insert", 3, 3, 2, 3),
    ]
    assert Levenshtein.opcodes([], []) == []
    assert Levenshtein.ratio(["old", "b", "word"], ["new", "b", "word"]) == pytest.approx(2 / 3)
    with pytest.raises(TypeError):
        Levenshtein.opcodes([["a list"]], [["is not hashable"]])


def test_a_hunk_of_interleaved_opcodes_shows_its_removed_lines_then_its_added_ones() -> None:
    # Levenshtein writes s p a m → p a r k as delete s, equal p a, insert r, replace m → k:
    # an insert and a replace side by side. Rendered opcode by opcode, the rows would go
    # added r, removed m, added k; as one hunk they go removed m, added r, added k.
    assert Levenshtein.opcodes(list("spam"), list("park"))[2:] == [
        ("insert", 3, 3, 2, 3),
        ("replace", 3, 4, 3, 4),
    ]
    diff = line_diff("s\np\na\nm\n", "p\na\nr\nk\n")
    assert shown(diff.rows) == [
        ("removed", 1, None, "s"),
        ("context", 2, 1, "p"),
        ("context", 3, 2, "a"),
        ("removed", 4, None, "m"),
        ("added", None, 3, "r"),
        ("added", None, 4, "k"),
    ]
    assert (diff.added, diff.removed) == (2, 2)


DRAFT = """## Requirements

1. **Fold accents:** é becomes e.
2. **Keep the separator:** the separator argument is honoured.
3. **Test it:** a test covers "Crème Brûlée".
"""


def test_after_a_deleted_requirement_each_renumbered_one_pairs_with_itself() -> None:
    # Deleting requirement 2 renumbers requirement 3: both draft lines 4 and 5 differ from
    # revision line 4, so one is substituted and one deleted at the same cost. Levenshtein
    # substitutes first (the unrelated requirement 2 for the new 2.); the lines are paired
    # by their words instead, and only the number of requirement 3 is marked.
    revision = DRAFT.replace(DRAFT.splitlines()[3] + "\n", "").replace("3. **Test", "2. **Test")
    lines = DRAFT.splitlines(), revision.splitlines()
    assert Levenshtein.opcodes(*lines)[1:] == [("replace", 3, 4, 3, 4), ("delete", 4, 5, 4, 4)]

    diff = line_diff(DRAFT, revision)

    assert [row for row in shown(diff.rows) if row[0] != "context"] == [
        ("removed", 4, None, "2. **Keep the separator:** the separator argument is honoured."),
        ("removed", 5, None, "<del>3</del>. **Test it:** a test covers &quot;Crème Brûlée&quot;."),
        ("added", None, 4, "<ins>2</ins>. **Test it:** a test covers &quot;Crème Brûlée&quot;."),
    ]
    assert (diff.added, diff.removed) == (1, 2)


def test_past_the_pairing_limit_lines_pair_as_levenshtein_substituted_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(textdiff, "MAX_PAIRING_CELLS", 1)
    revision = DRAFT.replace(DRAFT.splitlines()[3] + "\n", "").replace("3. **Test", "2. **Test")

    rows = [row for row in shown(line_diff(DRAFT, revision).rows) if row[0] != "context"]

    # Requirement 2 paired with the renumbered 3: too unlike for word marks, shown whole.
    assert [html for *_, html in rows] == [
        "2. **Keep the separator:** the separator argument is honoured.",
        "3. **Test it:** a test covers &quot;Crème Brûlée&quot;.",
        "2. **Test it:** a test covers &quot;Crème Brûlée&quot;.",
    ]


def test_a_line_levenshtein_substitutes_though_unchanged_is_shown_as_context() -> None:
    # a b → b c: two substitutions cost 2, as much as deleting a and adding c, and
    # Levenshtein takes the substitutions. Rendered as they are, "b" would be removed and
    # added again; it is shown unchanged between the deletion and the addition, as
    # SequenceMatcher's diff showed it.
    assert Levenshtein.opcodes(["a", "b"], ["b", "c"]) == [("replace", 0, 2, 0, 2)]
    diff = line_diff("a\nb\n", "b\nc\n")
    assert shown(diff.rows) == [
        ("removed", 1, None, "a"),
        ("context", 2, 1, "b"),
        ("added", None, 2, "c"),
    ]
    assert (diff.added, diff.removed) == (1, 1)
    # Three deleted and three added lines around one unchanged line: substitutions cost 4,
    # a deletion plus an addition each 6; the unchanged line still shows as context.
    diff = line_diff("d1\nd2\nd3\nkeep\n", "keep\ni1\ni2\ni3\n")
    assert [row.kind for row in diff.rows] == ["removed"] * 3 + ["context"] + ["added"] * 3
    assert (diff.rows[3].old_number, diff.rows[3].new_number) == (4, 1)


def test_unrelated_lines_are_not_word_marked_though_they_share_their_spaces() -> None:
    # Over every token (words, spaces, punctuation), these two share most of their spaces
    # and the "- " and ".": a token ratio of 0.68, enough for marks, which would then cover
    # every word. Over their words alone ("the", "is" in common) the ratio is 0.35.
    old, new = (
        "- Retry the request when the cache is cold.",
        "- Fail the build if the lock file is stale.",
    )
    diff = line_diff(f"{old}\n", f"{new}\n")
    assert shown(diff.rows) == [("removed", 1, None, old), ("added", None, 1, new)]
    # A rewording keeps most words and is marked.
    diff = line_diff("The slug drops accented letters.\n", "The slug folds accented letters.\n")
    assert [str(row.html) for row in diff.rows] == [
        "The slug <del>drops</del> accented letters.",
        "The slug <ins>folds</ins> accented letters.",
    ]


def test_a_swap_pairs_one_line_and_shows_the_other_whole() -> None:
    # Lines keep their order when paired: of two swapped requirements one pairs with its
    # renumbered self (on a tie, the one that moved up), the other shows whole.
    diff = line_diff(
        "1. **A:** alpha one.\n2. **B:** beta two.\n", "1. **B:** beta two.\n2. **A:** alpha one.\n"
    )
    assert [str(row.html) for row in diff.rows] == [
        "1. **A:** alpha one.",
        "<del>2</del>. **B:** beta two.",
        "<ins>1</ins>. **B:** beta two.",
        "2. **A:** alpha one.",
    ]
