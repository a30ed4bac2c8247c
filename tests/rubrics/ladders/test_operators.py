"""The quality ladder's degradation operators, on hand-made diffs and on real reference fixes.

Every rung is checked the same way (:func:`assert_valid_rung`): it parses, touches exactly
the reference's files, has recounted headers, keeps the reference's pre-image and line
endings, and differs from the reference in the way its level says. Hand-made git diffs
are also applied with ``git apply --check`` to the original files rebuilt from their
pre-images.
"""

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from rubrics.ladders.operators import (
    COMMENT,
    DELETES_FILE,
    LEVELS,
    NO_CHANGE,
    NO_COMMENT_PLACE,
    NOTHING_TO_MUTATE_ONE_CHANGE,
    ONE_CHANGE,
    ONE_CHANGE_PER_FILE,
    UNKNOWN_SYNTAX,
    Rung,
    Skipped,
    build_ladder,
)
from sejury_web.diffs import DiffError, ParsedDiff, parse_diff
from tests.helpers import LE2019_BUNDLE

RENAMED = re.compile(r"local `(\w+)` renamed to `(\w+)`")
Change = tuple[str, int, tuple[str, ...], tuple[str, ...]]  # path, old line, removed, added

MULTI_FILE = """\
diff --git a/src/main/java/org/example/Range.java b/src/main/java/org/example/Range.java
index 1111111..2222222 100644
--- a/src/main/java/org/example/Range.java
+++ b/src/main/java/org/example/Range.java
@@ -10,5 +10,8 @@ public class Range {
     public boolean contains(double value) {
-        return value > lower && value < upper;
+        if (Double.isNaN(value)) {
+            return false;
+        }
+        return value >= lower && value <= upper;
     }
\x20
     public double length() {
@@ -30,7 +33,8 @@ public class Range {
     public double clamp(double value) {
-        return Math.max(lower, Math.min(upper, value));
+        double bounded = Math.min(upper, value);
+        return Math.max(lower, bounded);
     }
\x20
     public Range shift(double delta) {
-        return new Range(lower + delta, upper + delta);
+        return new Range(lower + delta, upper + delta, 0);
     }
diff --git a/src/main/java/org/example/RangeUtils.java b/src/main/java/org/example/RangeUtils.java
index 3333333..4444444 100644
--- a/src/main/java/org/example/RangeUtils.java
+++ b/src/main/java/org/example/RangeUtils.java
@@ -5,6 +5,6 @@ public final class RangeUtils {
     public static Range union(Range a, Range b) {
-        if (a == null) {
+        if (a == null || b == null) {
             return b;
         }
         return a.span(b);
     }
"""

ONE_LINE = """\
diff --git a/src/Foo.java b/src/Foo.java
index 5555555..6666666 100644
--- a/src/Foo.java
+++ b/src/Foo.java
@@ -41,7 +41,7 @@ class Foo {
         }
         int index = this.plot.getIndexOf(this);
         CategoryDataset dataset = this.plot.getDataset(index);
-        if (dataset != null) {
+        if (dataset == null) {
             return result;
         }
         int seriesCount = dataset.getRowCount();
"""

# As Defects4J's fixes come: git headers with LF, the body with the file's CRLF.
CRLF = (
    "diff --git a/source/org/jfree/data/time/TimeSeries.java"
    " b/source/org/jfree/data/time/TimeSeries.java\n"
    "index 72bb2ea..795d791 100644\n"
    "--- a/source/org/jfree/data/time/TimeSeries.java\n"
    "+++ b/source/org/jfree/data/time/TimeSeries.java\n"
    "@@ -1054,8 +1054,10 @@ public class TimeSeries extends Series {\n"
    '             throw new IllegalArgumentException("Requires start <= end.");\r\n'
    "         }\r\n"
    "         TimeSeries copy = (TimeSeries) super.clone();\r\n"
    "+        copy.minY = Double.NaN;\r\n"
    "+        copy.maxY = Double.NaN;\r\n"
    "         copy.data = new java.util.ArrayList();\r\n"
    "-        if (this.data.size() > 0) {\r\n"
    "+        if (this.data.size() > 1) {\r\n"
    "             for (int index = start; index <= end; index++) {\r\n"
    "                 copy.add(this.data.get(index));\r\n"
    "             }\r\n"
)

SVN = (
    "Index: source/org/jfree/chart/renderer/category/AbstractCategoryItemRenderer.java\n"
    "===================================================================\n"
    "--- source/org/jfree/chart/renderer/category/AbstractCategoryItemRenderer.java"
    "\t(revision 2266)\n"
    "+++ source/org/jfree/chart/renderer/category/AbstractCategoryItemRenderer.java"
    "\t(revision 2264)\n"
    "@@ -1794,7 +1794,7 @@\n"
    "         }\r\n"
    "         int index = this.plot.getIndexOf(this);\r\n"
    "         CategoryDataset dataset = this.plot.getDataset(index);\r\n"
    "+        if (dataset == null) {\r\n"
    "-        if (dataset != null) {\r\n"
    "             return result;\r\n"
    "         }\r\n"
    "         int seriesCount = dataset.getRowCount();\r\n"
)

PYTHON = """\
diff --git a/pkg/stats.py b/pkg/stats.py
index 7777777..8888888 100644
--- a/pkg/stats.py
+++ b/pkg/stats.py
@@ -1,7 +1,10 @@
 def mean(values):
-    return sum(values) / len(values)
+    count = len(values)
+    if count == 0 and not values:
+        return None
+    return sum(values) / count
\x20
\x20
 def spread(values, strict=False):
     low, high = min(values), max(values)
-    return high - low
+    return high - low if strict else abs(high - low)
"""

DELETION_ONLY = """\
diff --git a/lib/cache.js b/lib/cache.js
index 9999999..aaaaaaa 100644
--- a/lib/cache.js
+++ b/lib/cache.js
@@ -20,10 +20,7 @@ function get(key) {
   const entry = store[key];
   if (!entry) {
     return undefined;
   }
-  if (entry.expires < now()) {
-    delete store[key];
-  }
   return entry.value;
 }
\x20
"""

NEW_FILE = """\
diff --git a/src/util/Checks.java b/src/util/Checks.java
new file mode 100644
index 0000000..bbbbbbb
--- /dev/null
+++ b/src/util/Checks.java
@@ -0,0 +1,9 @@
+package util;
+
+public final class Checks {
+    private Checks() {}
+
+    public static boolean positive(int value) {
+        return value > 0;
+    }
+}
diff --git a/src/Main.java b/src/Main.java
index ccccccc..ddddddd 100644
--- a/src/Main.java
+++ b/src/Main.java
@@ -3,6 +3,6 @@ public class Main {
     public static void main(String[] args) {
         int n = args.length;
-        if (n > 0) {
+        if (util.Checks.positive(n)) {
             System.out.println(n);
         }
     }
"""

NO_NEWLINE = """\
diff --git a/bin/run.sh b/bin/run.sh
index eeeeeee..fffffff 100644
--- a/bin/run.sh
+++ b/bin/run.sh
@@ -1,4 +1,5 @@
 #!/bin/sh
 set -e
-retries=3
-exec app --retries "$retries"
\\ No newline at end of file
+retries=5
+[ "$DEBUG" = 1 ] && set -x
+exec app --retries "$retries"
\\ No newline at end of file
"""

# ``git diff -U0``: hunks without context, a side of zero lines numbered from the line before.
NO_CONTEXT = """\
diff --git a/src/Calc.java b/src/Calc.java
index 1212121..3434343 100644
--- a/src/Calc.java
+++ b/src/Calc.java
@@ -12,0 +13,2 @@ class Calc {
+        if (b == 0)
+            throw new ArithmeticException();
@@ -20 +22 @@ class Calc {
-        return a % b;
+        return Math.floorMod(a, b);
@@ -30,2 +31,0 @@ class Calc {
-        // legacy
-        log();
"""

DELETED_FILE = """\
diff --git a/src/Old.java b/src/Old.java
deleted file mode 100644
index 5656565..0000000
--- a/src/Old.java
+++ /dev/null
@@ -1,3 +0,0 @@
-class Old {
-    int size = 3;
-}
diff --git a/src/New.java b/src/New.java
index 7878787..9090909 100644
--- a/src/New.java
+++ b/src/New.java
@@ -1,3 +1,3 @@
 class New {
-    int size = 2;
+    int size = 4;
 }
"""

UNKNOWN_TYPE = """\
diff --git a/docs/notes.txt b/docs/notes.txt
index 1313131..2424242 100644
--- a/docs/notes.txt
+++ b/docs/notes.txt
@@ -1,2 +1,2 @@
 Notes
-limit is 3
+limit is 4
"""

# (name, diff, ``git apply`` options, or None when git is not the judge of this style)
HAND_MADE = [
    ("multi-file", MULTI_FILE, []),
    ("one-line", ONE_LINE, []),
    ("crlf", CRLF, []),
    ("svn", SVN, ["-p0"]),
    ("python", PYTHON, []),
    ("deletion-only", DELETION_ONLY, []),
    ("new-file", NEW_FILE, []),
    ("no-newline", NO_NEWLINE, []),
    ("no-context", NO_CONTEXT, ["--unidiff-zero"]),
    ("deleted-file", DELETED_FILE, []),
    ("unknown-type", UNKNOWN_TYPE, []),
]


def _changes(parsed: ParsedDiff) -> list[Change]:
    """Each maximal run of removed/added lines: where it starts in the old file, and what."""
    found: list[Change] = []
    for file in parsed.files:
        for hunk in file.hunks:
            old = hunk.old_start + (hunk.header_old_count == 0)
            removed: list[str] = []
            added: list[str] = []
            start = old
            for line in [*hunk.lines, None]:
                if line is not None and line.kind == "no_newline":
                    continue
                if line is None or line.kind == "context":
                    if removed or added:
                        found.append((file.path, start, tuple(removed), tuple(added)))
                    removed, added = [], []
                    start = old + 1
                elif not (removed or added):
                    start = old
                if line is None:
                    break
                if line.kind == "removed":
                    removed.append(line.text)
                elif line.kind == "added":
                    added.append(line.text)
                old += line.kind in ("context", "removed")
    return found


def _is_comment(text: str) -> bool:
    return text.strip().startswith(("//", "#", "/*", "*"))


def _is_ladder_comment(text: str) -> bool:
    return text.strip() in (f"// {COMMENT}", f"# {COMMENT}")


def _code(parsed: ParsedDiff, renames: dict[str, str]) -> list[tuple[str, str, str]]:
    """The non-comment lines, without whitespace, with renamed identifiers mapped back."""
    code = []
    for file in parsed.files:
        for hunk in file.hunks:
            for line in hunk.lines:
                if line.kind == "no_newline" or _is_comment(line.text):
                    continue
                text = line.text
                for new, old in renames.items():
                    text = re.sub(rf"(?<![\w$]){new}(?![\w$])", old, text)
                code.append((file.path, line.kind, "".join(text.split())))
    return code


def _body_lines(diff: str) -> list[str]:
    lines = diff.split("\n")
    return [
        lines[hunk.header_line + i]
        for hunk in parse_diff(diff).hunks
        for i, line in enumerate(hunk.lines)
        if line.kind != "no_newline"
    ]


def assert_valid_rung(reference: str, rung: Rung) -> None:
    """The invariants every rung keeps, and the difference its level makes."""
    ref, got = parse_diff(reference), parse_diff(rung.diff)
    assert [f.path for f in got.files] == [f.path for f in ref.files]
    assert [bool(f.hunks) for f in got.files] == [bool(f.hunks) for f in ref.files]
    if all(raw.endswith("\r") for raw in _body_lines(reference)):
        assert all(raw.endswith("\r") for raw in _body_lines(rung.diff))

    # Same pre-image: each kept old-side line is the reference's line at that number.
    old_lines = {
        (f.path, line.old_number): line.text
        for f in ref.files
        for hunk in f.hunks
        for line in hunk.lines
        if line.kind in ("context", "removed")
    }
    for f, ref_file in zip(got.files, ref.files, strict=True):
        # A hunk's new start moves by what the earlier hunks now add or remove, compared with
        # the reference's (whose own numbers are kept, consistent or not).
        ref_hunks = {hunk.old_start: hunk for hunk in ref_file.hunks}
        got_delta = 0
        for hunk in f.hunks:
            for line in hunk.lines:
                if line.kind in ("context", "removed"):
                    assert old_lines[(f.path, line.old_number)] == line.text
            if rung.level == 0:
                continue
            assert hunk.counts_match_header
            ref_hunk = ref_hunks[hunk.old_start]
            ref_delta = sum(
                h.new_count - h.old_count for h in ref_file.hunks if h.old_start < hunk.old_start
            )
            new_first = hunk.new_start + (hunk.header_new_count == 0)
            ref_new_first = ref_hunk.new_start + (ref_hunk.header_new_count == 0)
            assert new_first - ref_new_first == got_delta - ref_delta
            got_delta += hunk.new_count - hunk.old_count

    ref_changes, got_changes = _changes(ref), _changes(got)
    changed_files = {path for path, *_ in ref_changes}
    if rung.level == 0:
        assert rung.diff == reference
        assert rung.operators == ()
    elif rung.level == 1:
        renames = {new: old for old, new in RENAMED.findall(" ".join(rung.operators))}
        assert rung.diff != reference
        assert _code(got, renames) == _code(ref, {})
        comments = [t for *_, added in got_changes for t in added if _is_ladder_comment(t)]
        ref_comments = [t for *_, added in ref_changes for t in added if _is_ladder_comment(t)]
        assert len(comments) == len(ref_comments) + 1
    elif rung.level == 2:
        assert got_changes
        assert set(got_changes) < set(ref_changes)
        assert {path for path, *_ in got_changes} == changed_files
    elif rung.level == 3:
        _assert_wrong_fix(ref_changes, got_changes)
    else:
        assert all(not removed for _, _, removed, _ in got_changes)
        assert all(_is_ladder_comment(t) for *_, added in got_changes for t in added)
        assert sorted(path for path, *_ in got_changes) == sorted(changed_files)


def _assert_wrong_fix(ref_changes: list[Change], got_changes: list[Change]) -> None:
    """One added line mutated, or one change reverted (its file then keeps a comment)."""
    if len(got_changes) == len(ref_changes) and all(
        g[:3] == r[:3] and len(g[3]) == len(r[3])
        for g, r in zip(got_changes, ref_changes, strict=True)
    ):
        differing = [
            (g_line, r_line)
            for g, r in zip(got_changes, ref_changes, strict=True)
            for g_line, r_line in zip(g[3], r[3], strict=True)
            if g_line != r_line
        ]
        assert len(differing) == 1
        return
    comments = [c for c in got_changes if all(_is_ladder_comment(t) for t in c[3]) and not c[2]]
    kept = [c for c in got_changes if c not in comments]
    assert len(comments) <= 1
    assert len(kept) == len(ref_changes) - 1
    assert set(kept) < set(ref_changes)


def _original_files(reference: str) -> dict[str, str | None]:
    """Each file as it was before the fix: its hunks' pre-images at their line numbers, with
    filler lines between (None for a file the fix creates)."""
    raw = reference.split("\n")
    files: dict[str, str | None] = {}
    for f in parse_diff(reference).files:
        if f.old_path is None:
            files[f.path] = None
            continue
        lines: dict[int, str] = {}
        ends_without_newline = None
        for hunk in f.hunks:
            previous = None
            for i, line in enumerate(hunk.lines):
                if line.kind in ("context", "removed") and line.old_number is not None:
                    lines[line.old_number] = raw[hunk.header_line + i][1:]
                    previous = line.old_number
                elif line.kind == "no_newline" and previous is not None:
                    if hunk.lines[i - 1].kind in ("context", "removed"):
                        ends_without_newline = previous
                else:
                    previous = None
        last = max(lines, default=0)
        files[f.old_path] = "".join(
            lines.get(n, f"filler {n}") + ("" if n == ends_without_newline else "\n")
            for n in range(1, last + 1)
        )
    return files


def _git_repo(repo: Path, reference: str) -> Path:
    """A new git repository holding the reference's original files.

    Without git's template (sample hooks and the like, which ``git apply`` never reads): a
    test that makes a hundred repositories spends half the time on them.
    """
    subprocess.run(["git", "init", "-q", "--template=", str(repo)], check=True)
    for path, text in _original_files(reference).items():
        if text is not None:
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_bytes(text.encode())
    return repo


def _git_apply_check(repo: Path, diffs: list[str], options: list[str]) -> None:
    """Check that git accepts every diff in ``repo`` (made by ``_git_repo``)."""
    for diff in diffs:
        done = subprocess.run(
            ["git", "apply", "--check", *options, "-"],
            input=diff.encode(),
            cwd=repo,
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode() + diff


def _by_level(diff: str) -> dict[int, Rung | Skipped]:
    return {r.level: r for r in build_ladder(diff)}


def _rung(diff: str, level: int) -> Rung:
    built = _by_level(diff)[level]
    assert isinstance(built, Rung), built
    return built


@pytest.mark.parametrize(("name", "diff", "options"), HAND_MADE, ids=[h[0] for h in HAND_MADE])
def test_every_rung_keeps_the_invariants_and_applies(
    name: str, diff: str, options: list[str], tmp_path: Path
) -> None:
    for reference_hunk in parse_diff(diff).hunks:
        assert reference_hunk.counts_match_header, f"{name}: the hand-made diff is miscounted"
    ladder = build_ladder(diff)
    assert [r.level for r in ladder] == list(LEVELS)
    rungs = [r for r in ladder if isinstance(r, Rung)]
    for rung in rungs:
        assert_valid_rung(diff, rung)
    _git_apply_check(_git_repo(tmp_path, diff), [r.diff for r in rungs], options)


def test_multi_file_ladder() -> None:
    rungs = _by_level(MULTI_FILE)
    assert all(isinstance(r, Rung) for r in rungs.values())
    assert rungs[1] == Rung(
        1,
        rungs[1].diff,
        (
            "comment added before line 11 of src/main/java/org/example/Range.java",
            "local `bounded` renamed to `boundedValue` in src/main/java/org/example/Range.java",
        ),
    )
    assert "+        // Handle the case reported in the bug.\n+        if (Double" in rungs[1].diff
    assert "+        return Math.max(lower, boundedValue);" in rungs[1].diff
    # Four changes: the later half of those that are not their file's first is reverted.
    assert rungs[2] == Rung(
        2,
        rungs[2].diff,
        (
            "change 2 of 4 reverted (src/main/java/org/example/Range.java, at old line 31)",
            "change 3 of 4 reverted (src/main/java/org/example/Range.java, at old line 35)",
        ),
    )
    assert "@@ -30," not in rungs[2].diff  # the hunk left with no change is dropped
    assert rungs[3].operators == (
        "`>=` inverted to `<` on line 14 of src/main/java/org/example/Range.java",
    )
    assert "+        return value < lower && value <= upper;" in rungs[3].diff
    assert rungs[4].operators == (
        "all 4 changes reverted",
        "comment added before line 11 of src/main/java/org/example/Range.java",
        "comment added before line 6 of src/main/java/org/example/RangeUtils.java",
    )


def test_later_hunks_new_start_follows_the_earlier_hunks() -> None:
    level_1 = _rung(MULTI_FILE, 1).diff
    # The comment adds a line to the first hunk: the second one starts one line later.
    assert "@@ -10,5 +10,9 @@ public class Range {" in level_1
    assert "@@ -30,7 +34,8 @@ public class Range {" in level_1
    level_4 = _rung(NO_CONTEXT, 4).diff
    assert "@@ -12,0 +13,1 @@ class Calc {" in level_4
    assert level_4.count("@@ -") == 1
    level_2 = _rung(NO_CONTEXT, 2).diff
    assert "@@ -20,1 +22,1 @@" in level_2
    assert "@@ -30," not in level_2


def test_one_line_fix() -> None:
    rungs = _by_level(ONE_LINE)
    assert rungs[2] == Skipped(2, ONE_CHANGE)
    assert rungs[3] == Rung(3, rungs[3].diff, ("`==` inverted to `!=` on line 44 of src/Foo.java",))
    assert rungs[4] == Rung(
        4,
        rungs[4].diff,
        ("the one change reverted", "comment added before line 44 of src/Foo.java"),
    )
    assert "\n         if (dataset != null) {\n" in rungs[4].diff


def test_crlf_and_svn_headers_are_kept_line_by_line() -> None:
    for diff in (CRLF, SVN):
        header_lines = [line for line in diff.split("\n") if not line.endswith("\r")]
        for rung in build_ladder(diff):
            if isinstance(rung, Rung):
                kept = rung.diff.split("\n")
                assert kept[: len(header_lines) - 2] == header_lines[:-2]
    assert "+        // Handle the case reported in the bug.\r\n" in _rung(CRLF, 1).diff
    level_2 = _rung(CRLF, 2).diff
    assert "         if (this.data.size() > 0) {\r\n" in level_2
    assert "@@ -1054,8 +1054,10 @@ public class TimeSeries extends Series {\n" in level_2
    assert _rung(SVN, 4).diff.startswith("Index: source/org/jfree/")


def test_python_rename_and_mutations() -> None:
    rungs = _by_level(PYTHON)
    assert rungs[1].operators == (
        "comment added before line 2 of pkg/stats.py",
        "local `count` renamed to `count_value` in pkg/stats.py",
    )
    assert "+    # Handle the case reported in the bug.\n+    count_value = len(values)" in (
        rungs[1].diff
    )
    assert "+    return sum(values) / count_value\n" in rungs[1].diff
    assert rungs[3].operators == ("`==` inverted to `!=` on line 3 of pkg/stats.py",)
    assert rungs[2].operators == ("change 2 of 2 reverted (pkg/stats.py, at old line 7)",)


def test_deletion_only_fix() -> None:
    rungs = _by_level(DELETION_ONLY)
    assert rungs[1].operators == ("comment added before line 24 of lib/cache.js",)
    assert "+  // Handle the case reported in the bug.\n-  if (entry.expires" in rungs[1].diff
    assert rungs[2] == Skipped(2, ONE_CHANGE)
    assert rungs[3] == Skipped(3, NOTHING_TO_MUTATE_ONE_CHANGE)
    assert isinstance(rungs[4], Rung)


def test_created_file_keeps_being_created() -> None:
    """A created file is one change: level 2 keeps it, level 4 creates it holding only the
    comment, level 1 comments its first line and level 3 may mutate it."""
    rungs = _by_level(NEW_FILE)
    assert rungs[2] == Skipped(2, ONE_CHANGE_PER_FILE.format(files=2))
    assert rungs[3].operators == ("`>` inverted to `<=` on line 7 of src/util/Checks.java",)
    level_4 = rungs[4].diff
    assert "new file mode 100644" in level_4
    assert "@@ -0,0 +1,1 @@\n+// Handle the case reported in the bug.\ndiff --git" in level_4


def test_no_newline_markers_follow_their_lines() -> None:
    rungs = _by_level(NO_NEWLINE)
    assert rungs[3].operators == ("`&&` inverted to `||` on line 4 of bin/run.sh",)
    level_4 = rungs[4].diff
    assert level_4.endswith(
        '+# Handle the case reported in the bug.\n retries=3\n exec app --retries "$retries"\n'
        "\\ No newline at end of file\n"
    )
    assert "renamed" not in " ".join(rungs[1].operators)  # no declarations in shell


def test_deleted_and_unknown_files() -> None:
    deleted = _by_level(DELETED_FILE)
    assert deleted[4] == Skipped(4, DELETES_FILE.format(path="src/Old.java"))
    assert deleted[1].operators == ("comment added before line 2 of src/New.java",)
    assert deleted[2] == Skipped(2, ONE_CHANGE_PER_FILE.format(files=2))
    unknown = _by_level(UNKNOWN_TYPE)
    assert unknown[1] == Skipped(1, NO_COMMENT_PLACE.format(paths="docs/notes.txt"))
    assert unknown[3] == Skipped(3, NOTHING_TO_MUTATE_ONE_CHANGE)
    assert unknown[4] == Skipped(4, UNKNOWN_SYNTAX.format(path="docs/notes.txt"))


def _java_diff(added: list[str], context_after: str = "    }") -> str:
    body = "".join(f"+{line}\n" for line in added)
    return (
        "--- a/src/T.java\n+++ b/src/T.java\n"
        f"@@ -1,3 +1,{3 + len(added)} @@\n"
        "     void run() {\n"
        f"{body}"
        "         finish();\n"
        f" {context_after}\n"
        " }\n"
    )


def test_mutations_leave_strings_and_comments_alone() -> None:
    diff = _java_diff(
        [
            '        String label = "a == b"; // x < y && z',
            "        total += 0x1F + 2.5;",
            "        limit = 10;",
        ]
    )
    level_3 = _rung(diff, 3)
    assert level_3.operators == ("integer 10 changed to 11 on line 4 of src/T.java",)
    assert '+        String label = "a == b"; // x < y && z\n' in level_3.diff
    assert "+        limit = 11;\n" in level_3.diff


def test_mutation_kind_is_preferred_over_line_order() -> None:
    diff = _java_diff(
        ["        int k = 2;", "        if (ready) {", "        }", "        done = true;"]
    )
    level_3 = _rung(diff, 3)
    assert level_3.operators == ("`if` condition negated on line 3 of src/T.java",)
    assert "+        if (!(ready)) {\n" in level_3.diff
    generic = _java_diff(["        List<String> names = new ArrayList<>();", "        ok = false;"])
    assert _rung(generic, 3).operators == ("`false` flipped to `true` on line 3 of src/T.java",)


def test_python_if_is_negated() -> None:
    diff = (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n"
        " def f(values):\n+    if values:  # any?\n     go()\n"
    )
    level_3 = _rung(diff, 3)
    assert "+    if not (values):  # any?\n" in level_3.diff


@pytest.mark.parametrize(
    ("added", "context_after"),
    [
        # named in a context line of the file
        (["        int total = 0;", "        total++;"], "    } // total"),
        # a field of the class, not a local of a method
        (["    int total = 0;"], "    }"),
        # used before its declaration: another `total`
        (["        total++;", "        int total = 0;"], "    }"),
        # called, or read as an attribute
        (["        int total = 0;", "        this.total = total;"], "    }"),
        # mentioned in a string
        (["        int total = 0;", '        log("total");'], "    }"),
    ],
)
def test_no_rename_when_it_could_change_behaviour(added: list[str], context_after: str) -> None:
    diff = _java_diff(added, context_after)
    if added == ["    int total = 0;"]:
        diff = diff.replace("     void run() {\n", " class T {\n", 1)
    assert "renamed" not in " ".join(_rung(diff, 1).operators)


def test_rename_needs_the_whole_scope_in_view() -> None:
    visible = _java_diff(["        int total = 0;", "        total++;"])
    assert _rung(visible, 1).operators[1] == "local `total` renamed to `totalValue` in src/T.java"
    unclosed = (
        "--- a/src/T.java\n+++ b/src/T.java\n@@ -1,2 +1,4 @@\n     void run() {\n"
        "+        int total = 0;\n+        total++;\n         finish();\n"
    )
    assert "renamed" not in " ".join(_rung(unclosed, 1).operators)


def test_levels_are_chosen_and_the_ladder_is_deterministic() -> None:
    assert [r.level for r in build_ladder(MULTI_FILE, levels=[3, 1, 3])] == [1, 3]
    assert build_ladder(PYTHON) == build_ladder(PYTHON)
    with pytest.raises(ValueError, match="unknown ladder levels 5"):
        build_ladder(MULTI_FILE, levels=[5])
    with pytest.raises(DiffError):
        build_ladder("not a diff")
    mode_only = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    assert build_ladder(mode_only)[1:] == [Skipped(level, NO_CHANGE) for level in (1, 2, 3, 4)]


def _le2019_references() -> list[tuple[str, str]]:
    if not LE2019_BUNDLE.is_file():
        pytest.skip(f"{LE2019_BUNDLE} is absent (a fresh clone has no ../shared)")
    records = [json.loads(line) for line in LE2019_BUNDLE.read_text().splitlines() if line]
    return [(r["key"], r["reference_patch"]) for r in records if r["kind"] == "bug"]


# What the operators make of the 100 Defects4J fixes of Le et al. (built, or why skipped).
LE2019_LADDERS = {
    (0, "built"): 100,
    (1, "built"): 100,
    (2, "built"): 48,
    (2, ONE_CHANGE): 49,
    (2, ONE_CHANGE_PER_FILE.format(files=2)): 3,
    (3, "built"): 83,
    (3, NOTHING_TO_MUTATE_ONE_CHANGE): 17,
    (4, "built"): 100,
}


def test_real_reference_fixes(tmp_path: Path) -> None:
    tally: Counter[tuple[int, str]] = Counter()
    operators: Counter[str] = Counter()
    for key, reference in _le2019_references():
        rungs = build_ladder(reference)
        built = [r for r in rungs if isinstance(r, Rung)]
        for rung in rungs:
            tally[(rung.level, "built" if isinstance(rung, Rung) else rung.reason)] += 1
        for rung in built:
            assert_valid_rung(reference, rung)
            operators.update(re.sub(r" (on|before|at|in) .*|\d+", "", op) for op in rung.operators)
        options = ["-p0"] if reference.startswith("Index:") else []
        repo = _git_repo(tmp_path / key, reference)
        _git_apply_check(repo, [reference], [*options, "--recount"])
        _git_apply_check(repo, [r.diff for r in built[1:]], options)
    print(dict(tally), dict(operators), sep="\n")  # pytest -s shows them
    assert dict(tally) == LE2019_LADDERS
    assert sum(n for op, n in operators.items() if op.startswith("local ")) == 4
    assert operators["`if` condition negated"] > 0


def test_the_comment_never_lands_inside_a_string_or_a_continued_line() -> None:
    in_string = (
        "--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,5 @@\n"
        ' def f():\n     doc = """\n+    more text\n     """\n-    return 1\n+    return 2\n'
    )
    level_1 = _rung(in_string, 1)
    assert level_1.operators == ("comment added before line 5 of m.py",)
    assert "+    # Handle the case reported in the bug.\n+    return 2\n" in level_1.diff
    continued = (
        "--- a/run.sh\n+++ b/run.sh\n@@ -1,2 +1,3 @@\n"
        " app --retries 3 \\\n+    --verbose \\\n     --quiet\n"
    )
    assert _by_level(continued)[1] == Skipped(1, NO_COMMENT_PLACE.format(paths="run.sh"))
