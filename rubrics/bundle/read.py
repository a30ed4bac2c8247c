"""Reading a bundle's lines: decoding, JSON, storable text, and the fields of a record.

Nothing here knows the record kinds: :func:`read_lines` yields a file's lines one at a time
(never the whole file), :func:`parse_line` turns one into a :class:`Record`, and
:func:`fields_errors` checks an object against a kind's :class:`FieldSpec` map (a record's
fields, or those of an object nested in it).

An object that names a field twice (``{"key": "B1", "key": "B2"}``) is refused: JSON parsers
disagree on which value wins, so the file does not say what it means.

Size limits
-----------
Every free text a record carries has a limit (:data:`MAX_DIFF` and the others below), so
that one line cannot make a page of tens of megabytes or a worker hold a huge string. The
limits sit far above real data and far below abuse. In ``defects4j-le2019`` (``../shared``)
the largest description is 2.9 KB, the largest reference fix 4.0 KB (99 lines), the largest
candidate diff 1.9 KB, the largest metadata 2.3 KB; GitHub caps an issue's or a comment's
body at 65,536 characters. So: a diff (a patch's or the reference fix) of 1,000,000
characters (about 25,000 lines, far more than a reviewer reads; pages show its first lines
and load the rest on demand), a description of 200,000 (three GitHub issues), a label's
note or a revision's justification of 20,000 (a few pages of prose), metadata of 100,000
characters once written as JSON. Shorter fields (keys, titles, names) had their limits
already. Limits count characters, as the error says.
"""

import io
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from sejury_web.json_reader import json_loads, unstorable_text

NOT_UTF8 = "not valid UTF-8 (byte {byte} of the line)"
INVALID_JSON = "invalid JSON: {error}"
NOT_AN_OBJECT = "a record must be a JSON object, got {type}"
MISSING_FIELD = "missing required field"
UNKNOWN_FIELD = "unknown field for a {kind} record (allowed: {allowed})"
WRONG_TYPE = "expected {expected}, got {got}"
EMPTY_VALUE = "must not be empty"
TOO_LONG_VALUE = "longer than {limit:,} characters"
BAD_TEXT = "contains {what}, which cannot be stored"
BAD_KEY = "a key must not contain '/' or start or end with whitespace"
DUPLICATE_NAME = "the name {name!r} is given twice in one object; a JSON object names a field once"


@dataclass(frozen=True)
class BundleError:
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line is not None else []
        if self.field:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class ErrorSink(Protocol):
    """Where errors go: a list, or an import's capped error list."""

    def append(self, error: BundleError, /) -> None: ...


@dataclass
class Record:
    line: int
    data: dict[str, Any]
    # What validation derived (a parsed diff's hash, a resolved reference), for the write.
    derived: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FieldSpec:
    types: tuple[type, ...]
    required: bool = False
    nullable: bool = False
    non_empty: bool = False
    max_length: int | None = None
    check: Callable[[Any], str | None] | None = None  # returns an error message or None

    def validate(self, value: Any) -> str | None:
        if value is None:
            return (
                None if self.nullable else WRONG_TYPE.format(expected=self.describe(), got="null")
            )
        # bool is an int in Python; JSON keeps them apart, and so do we.
        if isinstance(value, bool) and bool not in self.types:
            return WRONG_TYPE.format(expected=self.describe(), got=json_type(value))
        if not isinstance(value, self.types):
            return WRONG_TYPE.format(expected=self.describe(), got=json_type(value))
        if self.non_empty and isinstance(value, str) and not value.strip():
            return EMPTY_VALUE
        if self.max_length is not None and isinstance(value, str) and len(value) > self.max_length:
            return TOO_LONG_VALUE.format(limit=self.max_length)
        return self.check(value) if self.check else None

    def describe(self) -> str:
        names = [_TYPE_NAMES[t] for t in self.types]
        if self.nullable:
            names.append("null")
        return " or ".join(names)


_TYPE_NAMES: dict[type, str] = {
    str: "a string",
    dict: "an object",
    list: "an array",
    bool: "true or false",
}


def json_type(value: Any) -> str:
    """What a JSON value is, in the words of an error message (``a string``, ``an array``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    return "an object"


def check_key(value: str) -> str | None:
    if "/" in value or value != value.strip():
        return BAD_KEY
    return None


MAX_DIFF = 1_000_000
MAX_DESCRIPTION = 200_000
MAX_NOTE = 20_000
MAX_METADATA = 100_000
METADATA_TOO_LONG = "longer than {limit:,} characters written as JSON"


def check_metadata(value: dict[str, Any]) -> str | None:
    """Metadata is free-form: its size is that of its JSON."""
    if len(json.dumps(value, ensure_ascii=False)) > MAX_METADATA:
        return METADATA_TOO_LONG.format(limit=MAX_METADATA)
    return None


METADATA_FIELD = FieldSpec((dict,), check=check_metadata)
KEY_FIELD = FieldSpec((str,), required=True, non_empty=True, max_length=200, check=check_key)


def fields_errors(
    data: Mapping[str, Any],
    fields: Mapping[str, FieldSpec],
    *,
    unknown: str,
    ignore: frozenset[str] = frozenset(),
) -> list[tuple[str, str]]:
    """``(field, message)`` for each unknown, missing or invalid field of ``data``.

    ``unknown`` is the message for a field that ``fields`` does not list; names in
    ``ignore`` (a record's ``kind``) are neither checked nor unknown.
    """
    errors = [
        (shorten(name), unknown) for name in data if name not in ignore and name not in fields
    ]
    for name, spec in fields.items():
        if name not in data:
            if spec.required:
                errors.append((name, MISSING_FIELD))
            continue
        message = spec.validate(data[name])
        if message:
            errors.append((name, message))
    return errors


def shorten(value: object, limit: int = 80) -> str:
    """``value`` as text, cut to ``limit`` characters, for echoing user input in errors."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Repeated(dict[str, Any]):
    """An object that named a field more than once; ``repeated`` lists those names."""

    repeated: list[str]


def names_given_twice(pairs: list[tuple[str, Any]]) -> list[str]:
    """The names a JSON object's ``pairs`` give more than once (json keeps the last)."""
    seen: set[str] = set()
    twice = []
    for name, _ in pairs:
        if name in seen:
            twice.append(name)
        seen.add(name)
    return twice


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    flagged = _Repeated(obj)
    flagged.repeated = names_given_twice(pairs)
    return flagged


def _repeated_names(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(path, name)`` of each name given twice in an object; the path says where
    (``key``, ``metadata.x``, ``revisions[0].text``)."""
    if isinstance(value, dict):
        if isinstance(value, _Repeated):
            yield from ((f"{path}.{name}" if path else name, name) for name in value.repeated)
        for name, item in value.items():
            yield from _repeated_names(item, f"{path}.{name}" if path else name)
    elif isinstance(value, list):
        for number, item in enumerate(value):
            yield from _repeated_names(item, f"{path}[{number}]")


def read_lines(source: IO[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """``(line number, byte offset, bytes)`` of each line of ``source``, one at a time.

    Reads from where ``source`` stands; a leading UTF-8 byte order mark is dropped. The
    bytes keep their line end; :func:`line_text` drops it. Once given, a line is the
    caller's alone (a generator, or ``enumerate``, would hold it until the next): a caller
    that drops it after :func:`line_text` holds a huge line twice at most, not three times.
    """
    return _Lines(source)


class _Lines:
    def __init__(self, source: IO[bytes]) -> None:
        self.readline = source.readline
        self.number = 0
        self.offset = 0

    def __iter__(self) -> "_Lines":
        return self

    def __next__(self) -> tuple[int, int, bytes]:
        raw = self.readline()
        if not raw:
            raise StopIteration
        self.number += 1
        start = self.offset
        self.offset += len(raw)
        if self.number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw, start = raw[3:], start + 3
        return self.number, start, raw


def line_text(number: int, raw: bytes, errors: ErrorSink) -> str | None:
    """A line's text without its line end (decoded without copying the bytes first), or
    None for a blank line or one that is not UTF-8 (added to ``errors``)."""
    end = len(raw)
    if raw.endswith(b"\n"):
        end -= 1
    if end and raw[end - 1] == 0x0D:  # "\r"
        end -= 1
    try:
        text = str(memoryview(raw)[:end], "utf-8")
    except UnicodeDecodeError as exc:
        errors.append(BundleError(number, None, NOT_UTF8.format(byte=exc.start + 1)))
        return None
    return None if not text or text.isspace() else text


def parse_line(number: int, raw: bytes, errors: ErrorSink) -> Record | None:
    """The record on a line, or None for a blank line or one with errors (added to
    ``errors``)."""
    text = line_text(number, raw, errors)
    return None if text is None else parse_text(number, text, errors)


def parse_text(number: int, text: str, errors: ErrorSink) -> Record | None:
    """The record of a line's text (:func:`line_text`), or None when it has errors (added
    to ``errors``). Holds the text and what it parsed, nothing more: a huge value is refused
    for its length afterwards, by the kind's fields."""
    try:
        # Each field that holds an unstorable string is reported by its name, below.
        obj = json_loads(text, object_pairs_hook=_object, unstorable=True)
    except json.JSONDecodeError as exc:  # the line is the record's: say only the column
        message = INVALID_JSON.format(error=f"{exc.msg} (column {exc.colno})")
        errors.append(BundleError(number, None, message))
        return None
    if not isinstance(obj, dict):
        errors.append(BundleError(number, None, NOT_AN_OBJECT.format(type=json_type(obj))))
        return None
    repeated = list(_repeated_names(obj))
    for path, name in repeated:
        message = DUPLICATE_NAME.format(name=shorten(name))
        errors.append(BundleError(number, shorten(path), message))
    bad = [(name, what) for name, value in obj.items() if (what := unstorable_text([name, value]))]
    for name, what in bad:
        errors.append(BundleError(number, shorten(name), BAD_TEXT.format(what=what)))
    if repeated or bad:
        return None
    return Record(line=number, data=obj)


def read_records(data: bytes, errors: list[BundleError]) -> Iterator[Record]:
    """Yield each non-blank line's object; report undecodable lines to ``errors``."""
    for number, _, raw in read_lines(io.BytesIO(data)):
        if (record := parse_line(number, raw, errors)) is not None:
            yield record
