"""The one reader of JSON that people give: bundles, SWE-bench files, Label Studio exports,
API bodies.

``json.loads`` reads anything Python can hold, and some things it cannot: 50,000 nested
brackets raise ``RecursionError`` (not a ``ValueError``, so every ``except ValueError`` lets
it through as a crash), ``NaN`` and ``Infinity`` are read though they are not JSON, ``1e999``
becomes an infinite float, and an integer of more than 4,300 digits a bare ``ValueError``
with no place. :func:`json_loads` and :class:`JsonDecoder` (whose ``raw_decode`` reads one
value of a longer text) refuse each of them as a syntax error is refused: a
:class:`json.JSONDecodeError` (here :class:`JsonRefused`) with the message, the line and the
column, so every caller's handling of a syntax error handles these too, in the same words.

Nesting is limited to :data:`MAX_DEPTH` levels, far above real data (a Label Studio export
nests 6 deep, a SWE-bench record 3) and far below Python's recursion limit, so what is read
can be written, dumped and walked again deeper in a call stack without reaching it. The
limit is checked on every value read, not left to the stack: a value 900 levels deep parses
at the top of a short stack and would fail later, elsewhere.

A string holding a NUL (``\\u0000``) or an unpaired surrogate is refused too, unless the
caller reports it itself (``unstorable=True``, with :func:`unstorable_text`): PostgreSQL
cannot store the first, UTF-8 cannot encode the second, and either would fail the import
later, at the database, instead of at its line.
"""

import json
import re
import sys
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 100
TOO_DEEP = "nested too deeply (more than {limit} levels)"
TOO_LARGE = "the number {value} is too large"
NOT_JSON_CONSTANT = "{name} is not valid JSON"

# Outside strings: a string (skipped whole), a bracket, a number or a constant.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[{]|[\]}]|-?[0-9][0-9.eE+-]*|NaN|-?Infinity')

PairsHook = Callable[[list[tuple[str, Any]]], Any]

NUL_TEXT = "a NUL character (\\u0000)"
SURROGATE_TEXT = "an unpaired surrogate (\\ud800–\\udfff), which is not Unicode"
UNSTORABLE = "a string holds {what}"
_SURROGATE = re.compile("[\ud800-\udfff]")
# Where such a string is in the text: the escape (a NUL's, or any surrogate's).
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def unstorable_text(value: Any) -> str | None:
    """What makes a JSON value unstorable, if anything: a NUL or an unpaired surrogate in one
    of its strings (keys included). Walked without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return NUL_TEXT
            if _SURROGATE.search(item):  # not item.encode(): a copy of a huge string
                return SURROGATE_TEXT
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


class JsonRefused(json.JSONDecodeError):
    """Text that is JSON in form but is not read: nested too deeply, a number too large, a
    constant JSON does not have. ``msg``, ``lineno`` and ``colno`` as for a syntax error."""


class _Refused(ValueError):
    """Raised inside the parser by a hook; turned into :class:`JsonRefused` with its place."""

    def __init__(self, message: str, token: str) -> None:
        super().__init__(message)
        self.token = token


def _shorten(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _constant(name: str) -> Any:
    raise _Refused(NOT_JSON_CONSTANT.format(name=name), name)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Refused(TOO_LARGE.format(value=_shorten(text)), text)
    return value


def _token_at(text: str, start: int, wanted: Callable[[str], bool]) -> int:
    """The position of the first token from ``start`` (strings skipped whole) that
    ``wanted`` accepts; ``start`` when there is none."""
    for match in _TOKEN.finditer(text, start):
        if wanted(match.group()):
            return match.start()
    return start


def _too_deep_at(text: str, start: int) -> int:
    """The position of the bracket that opens level ``MAX_DEPTH + 1``."""
    depth = 0
    for match in _TOKEN.finditer(text, start):
        bracket = match.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif bracket in ("]", "}"):
            depth -= 1
    return start


def _deeper_than_limit(value: Any) -> bool:
    """Whether ``value`` nests more than :data:`MAX_DEPTH` arrays and objects (walked level
    by level, not recursively)."""
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return True
        inner: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            inner.extend(child for child in children if isinstance(child, dict | list))
        level = inner
    return False


class JsonDecoder(json.JSONDecoder):
    """``json.JSONDecoder`` with the refusals above; ``object_pairs_hook`` as json's."""

    def __init__(
        self, *, object_pairs_hook: PairsHook | None = None, unstorable: bool = False
    ) -> None:
        super().__init__(
            object_pairs_hook=object_pairs_hook,
            parse_constant=_constant,
            parse_float=_finite_float,
        )
        self.unstorable = unstorable

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        try:
            value, end = super().raw_decode(s, idx)
        except json.JSONDecodeError:
            raise
        except RecursionError:
            raise JsonRefused(TOO_DEEP.format(limit=MAX_DEPTH), s, _too_deep_at(s, idx)) from None
        except _Refused as refused:
            pos = _token_at(s, idx, refused.token.__eq__)
            raise JsonRefused(str(refused), s, pos) from None
        except ValueError:  # an integer of more digits than Python converts
            digits = sys.get_int_max_str_digits()
            pos = _token_at(s, idx, lambda token: len(token.lstrip("-")) > digits)
            number = _TOKEN.match(s, pos)
            shown = _shorten(number.group()) if number else "given"
            raise JsonRefused(TOO_LARGE.format(value=shown), s, pos) from None
        if _deeper_than_limit(value):
            raise JsonRefused(TOO_DEEP.format(limit=MAX_DEPTH), s, _too_deep_at(s, idx))
        if not self.unstorable and (what := unstorable_text(value)):
            escape = _UNSTORABLE_ESCAPE.search(s, idx, end)
            raise JsonRefused(UNSTORABLE.format(what=what), s, escape.start() if escape else idx)
        return value, end


def json_loads(
    text: str, *, object_pairs_hook: PairsHook | None = None, unstorable: bool = False
) -> Any:
    """``text`` as one JSON value, like ``json.loads``; raises :class:`json.JSONDecodeError`
    (a syntax error, or :class:`JsonRefused`) with the line and column. ``unstorable``: the
    caller checks strings itself (:func:`unstorable_text`)."""
    decoder = JsonDecoder(object_pairs_hook=object_pairs_hook, unstorable=unstorable)
    return decoder.decode(text)
