r"""Match-based similarity of patches: the baselines of SE-Jury (paper 000), and what a
patch changes where, the building blocks of the offline heuristic model.

Pure functions, no Django. ``chrf`` and ``bleu`` reproduce sacrebleu's sentence-level
``sentence_chrf`` and ``sentence_bleu`` with their defaults (checked against sacrebleu in
the tests, which is why sacrebleu stays a test-only dependency). Scopes and conditions
are recognized by regular expressions, not parsed: good enough to name where a change is.
"""

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import Levenshtein

from sejury_web.diffs import parse_diff

BAD_CHAR_ORDER = "chrf: char_order must be at least 1, got {value}"
BAD_BETA = "chrf: beta must be positive, got {value}"

BLEU_MAX_ORDER = 4

# Directory names that hold tests in the common layouts: Python/JS ``tests/``, Maven and
# Gradle ``src/test/``, Jest ``__tests__/``, Go ``testdata/``, RSpec ``spec/``.
TEST_DIRECTORIES = frozenset({"test", "tests", "__tests__", "testdata", "spec", "specs"})
TEST_FILE_NAME = re.compile(
    r"""^(?:
        test_.+                       # pytest, C: test_conf.c, test_slugify.py
      | .+_tests?\.[^.]+              # Go, Rust, C++, Ruby: cache_test.go, conf_tests.rs
      | .+_spec\.rb                   # RSpec
      | conftest\.py                  # pytest fixtures
      | Test[A-Z0-9_].*\.[^.]+        # JUnit and NUnit, prefix style: TestPaginator.java
      | .+Tests?\.[^.]+               # JUnit, Kotlin, C#, Swift: PaginatorTest.java
      | .+\.(?:test|spec)\.[^.]+      # Jest, Mocha, Jasmine: parse.test.js, app.spec.ts
    )$""",
    re.VERBOSE,
)


@dataclass
class ChangedLines:
    """The lines a diff removes and adds, stripped, blank ones dropped, in diff order."""

    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # paths touched, first mention first

    @property
    def all(self) -> list[str]:
        """Removed lines, then added lines."""
        return self.removed + self.added


def is_test_path(path: str) -> bool:
    """Whether ``path`` names a test file, by the conventions of common ecosystems.

    A path is a test path when one of its directories is ``test``, ``tests``,
    ``__tests__``, ``testdata``, ``spec`` or ``specs`` (any case; also a .NET project
    directory ending in ``.Tests``), or when its file name is ``test_*``, ``*_test.*``,
    ``*_tests.*``, ``*_spec.rb``, ``conftest.py``, ``Test<Upper>*.*``, ``*Test.*``,
    ``*Tests.*``, ``*.test.*`` or ``*.spec.*``. ``Contest.java`` and ``latest.py`` are not
    (the class-name rules need a capital T).
    """
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if not parts:
        return False
    for directory in parts[:-1]:
        lowered = directory.lower()
        if lowered in TEST_DIRECTORIES or lowered.endswith((".tests", ".test")):
            return True
    return TEST_FILE_NAME.match(parts[-1]) is not None


def changed_lines(diff_text: str, *, exclude_tests: bool = False) -> ChangedLines:
    """The removed and added lines of a unified diff; raises ``DiffError`` if it is none.

    With ``exclude_tests``, files for which :func:`is_test_path` holds are left out.
    """
    result = ChangedLines()
    for file in parse_diff(diff_text).files:
        if exclude_tests and is_test_path(file.path):
            continue
        if file.path not in result.files:
            result.files.append(file.path)
        for hunk in file.hunks:
            for line in hunk.lines:
                text = line.text.strip()
                if not text:
                    continue
                if line.kind == "removed":
                    result.removed.append(text)
                elif line.kind == "added":
                    result.added.append(text)
    return result


# Lines that are comments (or docstring openings) are never definitions nor conditions.
COMMENT = re.compile(r"^\s*(?://|/\*|\*|#|--|\"\"\"|''')")
CLASS_DEFINITION = re.compile(
    r"^\s*(?:[\w@]+\s+)*?(?:class|struct|interface|enum|trait|impl|record|object)"
    r"(?:<[^>]*>)?\s+(?:[\w:<>, ]+\s+for\s+)?([A-Za-z_$][\w$]*)"
)
FUNCTION_DEFINITIONS = (
    re.compile(r"^\s*(?:async\s+)?def\s+(\w+)"),  # Python
    re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe)\s+)*fn\s+(\w+)"),  # Rust
    re.compile(r"^\s*func\s+(?:\([^)]*\)\s*)?(\w+)"),  # Go
    re.compile(r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([\w$]+)"),  # JS
    # C, C++, Java, C#: type words, a name, parameters, and no statement after them.
    re.compile(
        r"^\s*(?!(?:return|if|else|elif|for|while|switch|case|do|new|throw|catch|sizeof|await"
        r"|yield|delete|defer|go|assert|raise|print|not|and|or|in|with|lambda)\b)"
        r"(?:[\w$<>\[\],.*&:~]+\s+)+[*&]*([A-Za-z_$][\w$]*)\s*\([^;]*\)\s*"
        r"(?:const\s*)?(?:throws\s+[\w.,\s]+)?\{?\s*$"
    ),
)
CONDITION = re.compile(
    r"\b(?:if|elif|else\s+if|while|for|switch|case|return|and|or|not)\b"
    r"|\?[^:;]*:|==|!=|<=|>=|\s[<>]\s|&&|\|\|"
)


def scope_of(line: str) -> str | None:
    """The function (as ``name()``) or class-like type that ``line`` defines, if any."""
    if COMMENT.match(line):
        return None
    for pattern in FUNCTION_DEFINITIONS:
        match = pattern.match(line)
        if match:
            return f"{match.group(1)}()"
    match = CLASS_DEFINITION.match(line)
    return match.group(1) if match else None


def is_condition(line: str) -> bool:
    """Whether a code line tests something: a branch, loop, return, ``?:``, comparison or
    boolean operator (comments are not)."""
    return not COMMENT.match(line) and CONDITION.search(line) is not None


@dataclass
class CodeChange:
    """The changed lines (stripped, non-blank) of one hunk within one scope."""

    path: str
    scope: str | None  # the nearest definition above, else the hunk header's, else None
    line: int  # the old line that the first changed line removes or is inserted before
    section: str  # the hunk header's text after ``@@``
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return self.removed + self.added


@dataclass
class CodeChanges:
    """What a diff changes in non-test files, and which test files it touches."""

    changes: list[CodeChange] = field(default_factory=list)
    test_files: list[str] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(change.path for change in self.changes))

    @property
    def lines(self) -> list[str]:
        return [line for change in self.changes for line in change.lines]

    @property
    def scopes(self) -> list[str]:
        return list(dict.fromkeys(c.scope for c in self.changes if c.scope))


def code_changes(diff_text: str) -> CodeChanges:
    """The non-test changes of a diff, one per hunk and scope; raises ``DiffError``.

    A hunk that spans two functions gives two changes, so that a patch fixing only one of
    them shows as incomplete. Blank lines do not count.
    """
    result = CodeChanges()
    for file in parse_diff(diff_text).files:
        if is_test_path(file.path):
            result.test_files.append(file.path)
            continue
        for hunk in file.hunks:
            scope = scope_of(hunk.section)
            current: CodeChange | None = None
            old_next = hunk.old_start  # the old line an added line is inserted before
            for line in hunk.lines:
                defined = scope_of(line.text)
                if defined and defined != scope:
                    scope, current = defined, None
                number = line.old_number or old_next
                if line.old_number is not None:
                    old_next = line.old_number + 1
                text = line.text.strip()
                if line.kind not in ("added", "removed") or not text:
                    continue
                if current is None:
                    current = CodeChange(file.path, scope, number, hunk.section)
                    result.changes.append(current)
                (current.removed if line.kind == "removed" else current.added).append(text)
    return result


def _char_ngrams(text: str, order: int) -> list[Counter[str]]:
    # chrF ignores whitespace: n-grams run across word boundaries of the squeezed text.
    squeezed = "".join(text.split())
    return [
        Counter(squeezed[i : i + n] for i in range(len(squeezed) - n + 1))
        for n in range(1, order + 1)
    ]


def chrf(hypothesis: str, reference: str, *, char_order: int = 6, beta: int = 2) -> float:
    """Sentence chrF (Popović 2015) on 0–100, as ``sacrebleu.sentence_chrf`` computes it.

    F_beta of the character n-gram precision and recall, each averaged over the orders
    1..``char_order`` that both texts have (sacrebleu's "effective order"); whitespace is
    ignored. 0 when either text has no characters besides whitespace (also for two empty
    texts: there is nothing to compare).
    """
    if char_order < 1:
        raise ValueError(BAD_CHAR_ORDER.format(value=char_order))
    if beta <= 0:
        raise ValueError(BAD_BETA.format(value=beta))
    hyp_ngrams = _char_ngrams(hypothesis, char_order)
    ref_ngrams = _char_ngrams(reference, char_order)
    precision_sum = recall_sum = 0.0
    effective_order = 0
    for hyp, ref in zip(hyp_ngrams, ref_ngrams, strict=True):
        hyp_total, ref_total = hyp.total(), ref.total()
        if hyp_total == 0 or ref_total == 0:
            continue
        matches = sum(min(count, ref[gram]) for gram, count in hyp.items())
        precision_sum += matches / hyp_total
        recall_sum += matches / ref_total
        effective_order += 1
    if effective_order == 0:
        return 0.0
    precision, recall = precision_sum / effective_order, recall_sum / effective_order
    if precision + recall == 0:
        return 0.0
    factor = beta**2
    # The operations in sacrebleu's order, so that both agree to the last bit.
    score = (1 + factor) * precision * recall
    score /= factor * precision + recall
    return 100 * score


# mteval-v13a's tokenizer, in the order sacrebleu applies its substitutions.
_13A_RULES = (
    # Punctuation and symbols become tokens of their own: { | } ~ [ \ ] ^ _ ` space ! " # $
    # % & ( ) * + : ; < = > ? @ /
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period and comma, unless after a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # ... or unless before a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # a dash after a digit
)
_13A_ENTITIES = (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))


def tokenize_13a(line: str) -> list[str]:
    """The tokens of ``line`` under sacrebleu's default BLEU tokenizer ('13a')."""
    line = line.rstrip()
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, char in _13A_ENTITIES:
            line = line.replace(entity, char)
    line = f" {line} "
    for pattern, replacement in _13A_RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def _word_ngrams(tokens: list[str], order: int) -> Counter[tuple[str, ...]]:
    return Counter(
        tuple(tokens[i : i + n]) for n in range(1, order + 1) for i in range(len(tokens) - n + 1)
    )


def bleu(hypothesis: str, reference: str) -> float:
    """Sentence BLEU on 0–100, as ``sacrebleu.sentence_bleu`` computes it by default.

    13a tokens, n-grams up to 4 over the orders the hypothesis has (effective order),
    'exp' smoothing (an order with no match counts as precision 1/(2^k · total), k
    the number of such orders so far), brevity penalty ``exp(1 - r/c)`` when c < r. 0 when
    no n-gram matches at all, including for empty texts.
    """
    hyp_tokens, ref_tokens = tokenize_13a(hypothesis), tokenize_13a(reference)
    hyp_ngrams = _word_ngrams(hyp_tokens, BLEU_MAX_ORDER)
    ref_ngrams = _word_ngrams(ref_tokens, BLEU_MAX_ORDER)
    correct = [0] * BLEU_MAX_ORDER
    total = [0] * BLEU_MAX_ORDER
    for gram, count in hyp_ngrams.items():
        total[len(gram) - 1] += count
        correct[len(gram) - 1] += min(count, ref_ngrams[gram])
    if not any(correct):
        return 0.0
    hyp_len, ref_len = len(hyp_tokens), len(ref_tokens)
    brevity_penalty = math.exp(1 - ref_len / hyp_len) if hyp_len < ref_len else 1.0
    log_precisions: list[float] = []
    smoothing = 1.0
    for n in range(BLEU_MAX_ORDER):
        if total[n] == 0:
            break  # effective order: longer n-grams do not exist in the hypothesis
        if correct[n] == 0:
            smoothing *= 2
            log_precisions.append(math.log(100.0 / (smoothing * total[n])))
        else:
            log_precisions.append(math.log(100.0 * correct[n] / total[n]))
    return brevity_penalty * math.exp(sum(log_precisions) / len(log_precisions))


def edit_similarity(a: str, b: str) -> float:
    """``100 · (1 - levenshtein(a, b) / max(len(a), len(b)))``; 100 for two empty strings."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 100.0
    return 100.0 * (1 - Levenshtein.distance(a, b) / longest)
