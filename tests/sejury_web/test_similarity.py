import json
import random

import pytest
import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from sejury_web.diffs import DiffError
from sejury_web.similarity import (
    BAD_BETA,
    BAD_CHAR_ORDER,
    bleu,
    changed_lines,
    chrf,
    code_changes,
    edit_similarity,
    is_condition,
    is_test_path,
    scope_of,
    tokenize_13a,
)
from tests.helpers import DEMO_BUNDLE

PAIRS = [
    ("return items.size() / pageSize;", "return items.size() / pageSize;"),  # identical
    ("alpha beta gamma", "delta epsilon zeta"),  # disjoint words, some shared letters
    ("xyz", "abc"),  # nothing in common at all
    ("", "int to = from + pageSize;"),  # empty hypothesis
    ("int to = from + pageSize;", ""),  # empty reference
    ("", ""),
    ("   ", "a"),  # whitespace only
    ("a", "a"),  # shorter than every n-gram order above 1
    ("if (fp == NULL) { return -1; }", "if (fp == NULL)\n\treturn -1;"),
    ("const [key, value = ''] = pair.split('=');", "const eq = pair.indexOf('=');"),
    ('text = unicodedata.normalize("NFKD", text)', 'text.encode("ascii", "ignore")'),
    ("let len = width.checked_mul(height)?;", "let len = width * height * 4;"),
    ("slugify(\"Crème Brûlée\") == 'crème-brûlée'", 'slugify("Creme Brulee") == "creme-brulee"'),
    ("日本語のテキスト、句読点。", "日本語 の テキスト"),
    ("emoji 🎉 party 🎉", "emoji 🎉"),
    ("a &amp; b &lt;c&gt; &quot;d&quot;", 'a & b <c> "d"'),  # 13a unescapes entities
    ("1-2 3.4, 5,6 x.y a,b -7", "1 - 2 3.4 , 5,6"),  # 13a digit rules
    ("wrapped-\nline<skipped> end .", "wrappedline end."),
    ("a a a a a a", "a a"),  # clipped counts
]


def _demo_lines() -> list[str]:
    lines: list[str] = []
    for record in map(json.loads, DEMO_BUNDLE.read_text(encoding="utf-8").splitlines()):
        diff = record.get("diff") or record.get("reference_patch") or ""
        lines += [line[1:] for line in diff.splitlines() if line[:1] in "+- "]
    return lines


def _random_pairs(count: int) -> list[tuple[str, str]]:
    rng = random.Random(20240901)  # noqa: S311 (seeded: the same pairs on every run)
    lines = _demo_lines()
    pairs = []
    for _ in range(count):
        hypothesis = "\n".join(rng.sample(lines, rng.randint(1, 5)))
        reference = "\n".join(rng.sample(lines, rng.randint(1, 5)))
        if rng.random() < 0.25:  # overlapping pairs, so that high scores are covered too
            reference = hypothesis[: len(hypothesis) // 2] + reference
        pairs.append((hypothesis, reference))
    return pairs


@pytest.mark.parametrize(("hypothesis", "reference"), PAIRS + _random_pairs(300))
def test_chrf_and_bleu_agree_with_sacrebleu(hypothesis: str, reference: str) -> None:
    expected_chrf = sacrebleu.sentence_chrf(hypothesis, [reference]).score
    expected_bleu = sacrebleu.sentence_bleu(hypothesis, [reference]).score
    assert chrf(hypothesis, reference) == pytest.approx(expected_chrf, abs=1e-6)
    assert bleu(hypothesis, reference) == pytest.approx(expected_bleu, abs=1e-6)


@pytest.mark.parametrize(("hypothesis", "reference"), PAIRS)
def test_tokenize_13a_is_sacrebleus_tokenizer(hypothesis: str, reference: str) -> None:
    tokenizer = Tokenizer13a()
    for text in (hypothesis, reference):
        assert tokenize_13a(text) == tokenizer(text.rstrip()).split()


@pytest.mark.parametrize(("char_order", "beta"), [(1, 1), (3, 2), (6, 3), (8, 1)])
def test_chrf_orders_and_betas_agree_with_sacrebleu(char_order: int, beta: int) -> None:
    for hypothesis, reference in PAIRS + _random_pairs(20):
        expected = sacrebleu.sentence_chrf(
            hypothesis, [reference], char_order=char_order, beta=beta
        ).score
        assert chrf(hypothesis, reference, char_order=char_order, beta=beta) == pytest.approx(
            expected, abs=1e-6
        )


def test_chrf_and_bleu_of_identical_texts_are_100_and_of_empty_texts_0() -> None:
    line = "int to = Math.min(from + pageSize, items.size());"
    assert chrf(line, line) == pytest.approx(100)
    assert bleu(line, line) == pytest.approx(100)
    # Nothing to compare is no match: sacrebleu's convention, kept.
    assert chrf("", "") == bleu("", "") == 0.0


def test_chrf_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError, match=BAD_CHAR_ORDER.format(value=0)):
        chrf("a", "a", char_order=0)
    with pytest.raises(ValueError, match=BAD_BETA.format(value=0)):
        chrf("a", "a", beta=0)


def test_edit_similarity() -> None:
    # kitten → sitting: substitute k→s, e→i, insert g: distance 3; the longer has 7
    # characters, so 100 · (1 - 3/7) = 57.142857…
    assert edit_similarity("kitten", "sitting") == pytest.approx(100 * (1 - 3 / 7))
    assert edit_similarity("sitting", "kitten") == pytest.approx(57.142857, abs=1e-6)
    assert edit_similarity("", "") == 100.0
    assert edit_similarity("", "abc") == 0.0
    assert edit_similarity("same", "same") == 100.0


TWO_FILES = """\
diff --git a/src/calc.py b/src/calc.py
--- a/src/calc.py
+++ b/src/calc.py
@@ -10,5 +10,6 @@ def total(items):
     result = 0
-    for i in range(1, len(items)):
+    for i in range(len(items)):
+
+        # start at the first item
         result += items[i]
     return result
diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,2 +1,2 @@
 def test_total():
-    assert total([1, 2]) == 2
+    assert total([1, 2]) == 3
"""


def test_changed_lines_are_stripped_without_blanks_and_name_the_files() -> None:
    lines = changed_lines(TWO_FILES)
    assert lines.removed == ["for i in range(1, len(items)):", "assert total([1, 2]) == 2"]
    assert lines.added == [
        "for i in range(len(items)):",
        "# start at the first item",
        "assert total([1, 2]) == 3",
    ]
    assert lines.files == ["src/calc.py", "tests/test_calc.py"]
    code_only = changed_lines(TWO_FILES, exclude_tests=True)
    assert code_only.files == ["src/calc.py"]
    assert code_only.all == ["for i in range(1, len(items)):", *code_only.added]


def test_changed_lines_lets_diff_errors_through() -> None:
    with pytest.raises(DiffError):
        changed_lines("just some prose, no diff")


@pytest.mark.parametrize(
    "path",
    [
        "tests/test_slugify.py",
        "test/parse.test.js",
        "src/test/java/org/acme/paging/PaginatorTest.java",
        "pkg/cache/cache_test.go",
        "textkit/test_utils.py",
        "app/conftest.py",
        "web/src/__tests__/App.jsx",
        "web/src/app.spec.ts",
        "lib/widget.test.tsx",
        "spec/models/user_spec.rb",
        "src/TestPaginator.java",
        "src/PaginatorTests.cs",
        "MyApp.Tests/Calculator.cs",
        "Tests/Fixture.swift",
        "crates/image/tests/overflow.rs",
        "go/pkg/testdata/input.txt",
    ],
)
def test_test_paths(path: str) -> None:
    assert is_test_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/main/java/org/acme/paging/Paginator.java",
        "textkit/slugify.py",
        "src/Contest.java",  # a capital T is needed for the class-name rule
        "latest.py",
        "src/testing_utils.py",  # neither test_* nor in a test directory
        "attestation/sign.go",
        "",
    ],
)
def test_non_test_paths(path: str) -> None:
    assert not is_test_path(path)


@pytest.mark.parametrize(
    ("line", "scope"),
    [
        ("def slugify(text: str) -> str:", "slugify()"),
        ("    async def fetch(self):", "fetch()"),
        ("func (c *Cache) Get(key string) (string, bool) {", "Get()"),
        ("pub fn new(width: u32, height: u32) -> Result<Image, ImageError> {", "new()"),
        ("export async function parse(qs) {", "parse()"),
        ("int conf_load(struct conf *cf, const char *path)", "conf_load()"),
        ("    public List<T> page(int index) throws IOException {", "page()"),
        ("public final class Paginator<T> {", "Paginator"),
        ("impl Image {", "Image"),
        ("impl<T> Display for Image<T> {", "Image"),
        ("class Cache:", "Cache"),
        ("    return items.subList(from, to);", None),
        ("if (fp == NULL) {", None),
        ("for (const pair of query.split('&')) {", None),
        ('assert slugify("Crème") == "creme"', None),
        ("// func Commented(x int) {", None),
        ("test('key without value', () => {", None),
    ],
)
def test_scope_of(line: str, scope: str | None) -> None:
    assert scope_of(line) == scope


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("if (fp == NULL)", True),
        ("return (items.size() + pageSize - 1) / pageSize;", True),
        ("const key = eq === -1 ? pair : pair.slice(0, eq);", True),
        ("while x and not done:", True),
        ("ok := a >= b", True),
        ("text = text.lower()", False),
        ("c.mu.RLock()", False),
        ("List<T> items = new ArrayList<>();", False),  # generics are not comparisons
        ("# return early if empty", False),  # comments are not conditions
    ],
)
def test_is_condition(line: str, expected: bool) -> None:
    assert is_condition(line) is expected


GO_TWO_FUNCTIONS = """\
diff --git a/cache/cache.go b/cache/cache.go
--- a/cache/cache.go
+++ b/cache/cache.go
@@ -23,11 +23,15 @@ func (c *Cache) Set(key, value string) {

 // Get returns the value stored under key.
 func (c *Cache) Get(key string) (string, bool) {
+    c.mu.RLock()
+    defer c.mu.RUnlock()
     v, ok := c.items[key]
     return v, ok
 }

 // Len returns the number of stored keys.
 func (c *Cache) Len() int {
+    c.mu.RLock()
+    defer c.mu.RUnlock()
     return len(c.items)
 }
"""


def test_code_changes_split_a_hunk_by_function() -> None:
    changes = code_changes(GO_TWO_FUNCTIONS)
    assert [(c.scope, c.line, c.added) for c in changes.changes] == [
        ("Get()", 26, ["c.mu.RLock()", "defer c.mu.RUnlock()"]),
        ("Len()", 32, ["c.mu.RLock()", "defer c.mu.RUnlock()"]),
    ]
    assert changes.scopes == ["Get()", "Len()"]
    assert changes.files == ["cache/cache.go"]
    assert changes.test_files == []


def test_code_changes_leave_test_files_out_and_use_the_hunk_header() -> None:
    changes = code_changes(TWO_FILES)
    (change,) = changes.changes
    assert (change.path, change.scope, change.line) == ("src/calc.py", "total()", 11)
    assert change.removed == ["for i in range(1, len(items)):"]
    assert change.lines == [*change.removed, *change.added]
    assert changes.test_files == ["tests/test_calc.py"]
