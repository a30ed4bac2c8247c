import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sejury_web.diffs import (
    EMPTY_HUNK,
    HUNK_WITHOUT_FILE,
    NO_HUNKS,
    NOT_A_DIFF,
    DiffError,
    normalized_diff_hash,
    parse_diff,
)

GIT_DIFF = """\
diff --git a/src/calc.py b/src/calc.py
index 3b18e51..a9c3f2d 100644
--- a/src/calc.py
+++ b/src/calc.py
@@ -10,4 +10,5 @@ def total(items):
     result = 0
-    for i in range(1, len(items)):
+    for i in range(len(items)):
+        # start at the first item
         result += items[i]
     return result
"""

SVN_DIFF = """\
Index: source/org/jfree/Foo.java
===================================================================
--- source/org/jfree/Foo.java\t(revision 2266)
+++ source/org/jfree/Foo.java\t(working copy)
@@ -1794,7 +1794,7 @@
         int index = this.plot.getIndexOf(this);
-        if (dataset != null) {
+        if (dataset == null) {
             return result;
"""


def test_git_diff_is_parsed_with_paths_counts_and_line_numbers() -> None:
    parsed = parse_diff(GIT_DIFF)
    (f,) = parsed.files
    assert (f.old_path, f.new_path) == ("src/calc.py", "src/calc.py")
    (hunk,) = f.hunks
    assert (hunk.old_count, hunk.new_count) == (4, 5)
    assert hunk.counts_match_header
    assert hunk.section == "def total(items):"
    assert [line.kind for line in hunk.lines] == [
        "context", "removed", "added", "added", "context", "context",
    ]  # fmt: skip
    assert (hunk.lines[1].old_number, hunk.lines[1].new_number) == (11, None)
    assert (hunk.lines[3].old_number, hunk.lines[3].new_number) == (None, 12)
    assert (hunk.lines[4].old_number, hunk.lines[4].new_number) == (12, 13)
    assert (parsed.added, parsed.removed) == (2, 1)


def test_svn_diff_with_wrong_hunk_counts_is_recounted() -> None:
    parsed = parse_diff(SVN_DIFF)
    (f,) = parsed.files
    assert f.path == "source/org/jfree/Foo.java"
    (hunk,) = f.hunks
    assert (hunk.header_old_count, hunk.header_new_count) == (7, 7)
    assert (hunk.old_count, hunk.new_count) == (3, 3)
    assert not hunk.counts_match_header
    assert parsed.recounted_hunks == 1
    assert hunk.header == "@@ -1794,3 +1794,3 @@"


def test_crlf_line_endings_are_accepted_and_hash_like_lf() -> None:
    crlf = GIT_DIFF.replace("\n", "\r\n")
    parsed = parse_diff(crlf)
    assert all(not line.text.endswith("\r") for line in parsed.hunks[0].lines)
    assert normalized_diff_hash(parsed) == normalized_diff_hash(parse_diff(GIT_DIFF))


def test_no_newline_marker_is_kept_but_not_counted() -> None:
    text = (
        "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n"
        "+new\n\\ No newline at end of file\n"
    )
    (hunk,) = parse_diff(text).hunks
    assert [line.kind for line in hunk.lines] == ["removed", "no_newline", "added", "no_newline"]
    assert (hunk.old_count, hunk.new_count) == (1, 1)
    assert hunk.counts_match_header


def test_several_files_of_a_plain_diff_u_are_split_at_each_header_pair() -> None:
    text = (
        "--- a/one.c\t2020-01-01\n+++ b/one.c\t2020-01-02\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n"
        "--- a/two.c\n+++ b/two.c\n@@ -5 +5 @@\n-d\n+e\n"
    )
    parsed = parse_diff(text)
    assert [f.path for f in parsed.files] == ["one.c", "two.c"]
    assert [f.line_count for f in parsed.files] == [3, 2]


def test_diff_r_tree_prefixes_are_dropped_like_p1() -> None:
    text = "--- Chart1b/src/A.java\n+++ Chart1b_Patch1/src/A.java\n@@ -1 +1 @@\n-a\n+b\n"
    (f,) = parse_diff(text).files
    assert (f.old_path, f.new_path) == ("src/A.java", "src/A.java")


def test_new_and_deleted_files() -> None:
    text = (
        "diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
        "@@ -0,0 +1,2 @@\n+a\n+b\n"
        "diff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-a\n"
    )
    new, old = parse_diff(text).files
    assert new.is_new
    assert new.new_path == "new.py"
    assert old.is_deleted
    assert old.old_path == "old.py"


def test_text_around_the_diff_is_ignored() -> None:
    text = "From 123 Mon Sep 17 00:00:00 2001\nSubject: fix\n\n" + GIT_DIFF + "-- \n2.39.5\n"
    parsed = parse_diff(text)
    assert len(parsed.files) == 1


def test_trailing_blank_lines_beyond_the_header_counts_are_not_context() -> None:
    text = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\n\n"
    (hunk,) = parse_diff(text).hunks
    assert (hunk.old_count, hunk.new_count) == (2, 2)


def test_blank_line_within_the_header_counts_is_context() -> None:
    text = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n\n"
    (hunk,) = parse_diff(text).hunks
    assert (hunk.old_count, hunk.new_count) == (3, 3)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("just some words\nnothing else\n", NOT_A_DIFF),
        ("", NOT_A_DIFF),
        ("@@ -1 +1 @@\n-a\n+b\n", HUNK_WITHOUT_FILE.format(line=1)),
        ("--- a/x\n+++ b/x\n", NO_HUNKS),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\nplain text\n", EMPTY_HUNK.format(line=3)),
    ],
)
def test_texts_that_are_not_diffs_are_rejected_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(DiffError) as excinfo:
        parse_diff(text)
    assert str(excinfo.value) == message


def test_git_rename_without_hunks_is_a_diff() -> None:
    text = "diff --git a/a.py b/b.py\nsimilarity index 100%\nrename from a.py\nrename to b.py\n"
    (f,) = parse_diff(text).files
    assert (f.old_path, f.new_path) == ("a.py", "b.py")


def test_hash_ignores_context_headers_and_trailing_space_but_not_changes() -> None:
    more_context = GIT_DIFF.replace("     return result\n", "     return result\n \n")
    svn_style = GIT_DIFF.replace(
        "diff --git a/src/calc.py b/src/calc.py\nindex 3b18e51..a9c3f2d 100644\n", ""
    )
    changed = GIT_DIFF.replace(
        "+    for i in range(len(items)):", "+    for i in range(0, len(items)):"
    )
    base = normalized_diff_hash(parse_diff(GIT_DIFF))
    assert normalized_diff_hash(parse_diff(more_context)) == base
    assert normalized_diff_hash(parse_diff(svn_style)) == base
    assert normalized_diff_hash(parse_diff(GIT_DIFF.replace("items[i]\n", "items[i]   \n"))) == base
    assert normalized_diff_hash(parse_diff(changed)) != base


def test_hash_tells_the_same_lines_changed_at_another_place_apart() -> None:
    here = "--- a/x.py\n+++ b/x.py\n@@ -10,2 +10,3 @@\n a\n+    if x is None: return\n b\n"
    there = here.replace("@@ -10,2 +10,3 @@", "@@ -50,2 +50,3 @@")
    no_context = "--- a/x.py\n+++ b/x.py\n@@ -10,0 +11 @@\n+    if x is None: return\n"
    assert normalized_diff_hash(parse_diff(here)) != normalized_diff_hash(parse_diff(there))
    assert normalized_diff_hash(parse_diff(here)) == normalized_diff_hash(parse_diff(no_context))


def test_many_trailing_blank_lines_are_trimmed() -> None:
    # Trimming was once quadratic: 20 s for this input. It is linear now.
    text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n" + "\n" * 40_000
    (hunk,) = parse_diff(text).hunks
    assert len(hunk.lines) == 2


def test_absurd_line_numbers_are_not_a_hunk_header() -> None:
    with pytest.raises(DiffError):
        parse_diff("--- a/x\n+++ b/x\n@@ -" + "9" * 5000 + " +1 @@\n-a\n+b\n")


def _git_numstat(text: str, tmp_path: Path) -> list[tuple[int, int]]:
    path = tmp_path / "candidate.diff"
    path.write_bytes(text.encode())
    out = subprocess.run(
        ["git", "apply", "--numstat", "--recount", str(path)],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    return [(int(a), int(r)) for a, r, _ in (line.split("\t", 2) for line in out.splitlines())]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_counts_agree_with_git_apply_recount_on_every_real_diff(
    le2019_bundle: Path, tmp_path: Path
) -> None:
    """An independent oracle: git's own recount, on 250 real, messy diffs."""
    diffs = []
    for line in le2019_bundle.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["kind"] in ("bug", "patch"):
            diffs.append(record.get("diff") or record["reference_patch"])
    assert len(diffs) == 250
    recounted = 0
    for text in diffs:
        parsed = parse_diff(text)
        recounted += parsed.recounted_hunks > 0
        ours = [(f.added, f.removed) for f in parsed.files if f.hunks]
        assert ours == _git_numstat(text, tmp_path), text[:300]
    assert recounted == 69  # as DATA.md states
