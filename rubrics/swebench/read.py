"""Reading SWE-bench's files, with the place of every record and of every error.

SWE-bench's files come in three shapes, all of which the harness accepts:

- JSON Lines, one object a line (``datasets``' ``to_json``, the harness's predictions);
- one JSON array of objects (the first tutorials' ``predictions.json``);
- for predictions, one JSON object keyed by instance id.

:func:`read_items` tells them apart by the first non-blank line: if it is a JSON object by
itself, the file is JSON Lines (read a line at a time, never whole), unless that object is
the whole file and is keyed by instance id; otherwise the file is one JSON document, read
whole, whose array elements or members are yielded one by one with the line each starts on.

What cannot be read is refused with the file, the line and the column: not UTF-8, not JSON,
a name given twice in one object, a trailing comma (``[1, 2,]`` is not JSON; the error points
at the comma, and nothing is silently fixed). What can is yielded exactly as given.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from rubrics.bundle.read import BundleError, json_type, names_given_twice, shorten
from sejury_web.json_reader import JsonDecoder, json_loads

NOT_UTF8 = "not valid UTF-8"
NOT_JSON = "not valid JSON (nor JSON Lines): {error}"
TRAILING_COMMA = "a trailing comma before {closer!r} is not JSON: remove the comma"
EXTRA_DATA = "more data after the end of the JSON document"
NOT_AN_OBJECT = "a record must be a JSON object, got {type}"
NOT_A_CONTAINER = "expected JSON Lines, a JSON array of objects{keyed}; got {type}"
DUPLICATE_NAME = "the name {name!r} is given twice in one object; a JSON object names a field once"
MORE_ERRORS = "{count} more errors not shown (only the first {shown} are listed)"


@dataclass(frozen=True)
class SourceError(BundleError):
    """A problem in one of the files of a SWE-bench import: which file, where, what."""

    file: str = ""
    column: int | None = None
    row: bool = False  # ``line`` is a row of a table (Parquet), not a line of text

    def __str__(self) -> str:
        where = [self.file] if self.file else []
        if self.line is not None:
            where.append(f"{'row' if self.row else 'line'} {self.line}")
        if self.column is not None:
            where.append(f"column {self.column}")
        if self.field:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class SourceErrors:
    """An import's errors in the order found, the first ``keep`` kept, every one counted."""

    def __init__(self, keep: int) -> None:
        self.keep = max(1, keep)
        self.count = 0
        self.kept: list[SourceError] = []

    def append(self, error: SourceError) -> None:
        self.count += 1
        if len(self.kept) < self.keep:
            self.kept.append(error)

    def __len__(self) -> int:
        return self.count

    @property
    def more(self) -> int:
        return self.count - len(self.kept)


@dataclass(frozen=True)
class NamedFile:
    """An uploaded or opened file, with the name errors give it."""

    name: str
    stream: IO[bytes]


@dataclass
class Item:
    """One record of a file: the line it starts on, its object, and (in a JSON object keyed
    by instance id) the name it is given under."""

    line: int
    data: dict[str, Any]
    name: str | None = None


class _Pairs:
    """An ``object_pairs_hook`` that notes every name an object gives twice."""

    def __init__(self) -> None:
        self.repeated: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            self.repeated += names_given_twice(pairs)
        return obj

    def take(self) -> list[str]:
        repeated, self.repeated = self.repeated, []
        return repeated


def position(text: str, pos: int) -> tuple[int, int]:
    """The 1-based line and column of ``text[pos]``."""
    line = text.count("\n", 0, pos) + 1
    return line, pos - text.rfind("\n", 0, pos)


def json_error(exc: json.JSONDecodeError, file: str, *, line_offset: int = 0) -> SourceError:
    """A JSON syntax error as a :class:`SourceError`; a trailing comma says so, and where."""
    doc, pos = exc.doc, exc.pos
    if pos < len(doc) and doc[pos] in "]}":
        before = pos - 1
        while before >= 0 and doc[before] in " \t\r\n":
            before -= 1
        if before >= 0 and doc[before] == ",":
            line, column = position(doc, before)
            message = TRAILING_COMMA.format(closer=doc[pos])
            return SourceError(line + line_offset, None, message, file=file, column=column)
    line, column = position(doc, pos)
    return SourceError(
        line + line_offset, None, NOT_JSON.format(error=exc.msg), file=file, column=column
    )


# A line with something other than blanks (and the byte order mark): found without copying.
_NOT_BLANK = re.compile(rb"[^ \t\r\n\xef\xbb\xbf]")


def decode(data: bytes, file: str, *, line: int = 1) -> tuple[str | None, SourceError | None]:
    """``data`` as text (a UTF-8 byte order mark dropped, without copying the bytes), or
    where it is not UTF-8."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return str(memoryview(data)[start:], "utf-8"), None
    except UnicodeDecodeError as exc:
        start = exc.start
        where = line + data.count(b"\n", 0, start)
        column = start - data.rfind(b"\n", 0, start)
        return None, SourceError(where, None, NOT_UTF8, file=file, column=column)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _keyed(value: object) -> bool:
    """A JSON object keyed by instance id: no ``instance_id`` of its own, objects as values."""
    return (
        isinstance(value, dict)
        and "instance_id" not in value
        and bool(value)
        and all(isinstance(item, dict) for item in value.values())
    )


def read_items(
    stream: IO[bytes], file: str, errors: SourceErrors, *, keyed: bool
) -> Iterator[Item]:
    """The records of ``stream`` (from its start) with their lines; problems to ``errors``.

    ``keyed``: a JSON object keyed by instance id is accepted (predictions).
    """
    stream.seek(0)
    number = 0
    for raw in _lines(stream):
        number += 1
        if _NOT_BLANK.search(raw):
            break
    else:
        return  # an empty file
    first, _ = decode(raw, file, line=number)
    del raw  # a huge line is held as its text and then its value, not also as bytes
    pairs = _Pairs()
    value: Any = None
    if first is not None:
        try:
            value = json_loads(first.removeprefix("\ufeff"), object_pairs_hook=pairs)
        except ValueError:
            value = None
        del first
    if isinstance(value, dict) and not (keyed and _keyed(value) and _rest_is_blank(stream)):
        yield from _json_lines(stream, file, errors, pairs, first_line=number, first=value)
        return
    # One JSON document: read it whole (its text, not also its bytes, while it is read).
    del value
    stream.seek(0)
    text, problem = decode(stream.read(), file)
    if text is None:
        assert problem is not None
        errors.append(problem)
        return
    yield from _document(text, file, errors, keyed=keyed)


def _lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``stream`` from where it stands. (Iterating a Django ``File`` would
    start again from its beginning.)"""
    return iter(stream.readline, b"")


def _rest_is_blank(stream: IO[bytes]) -> bool:
    """Whether nothing but blank lines follows (the stream is left where it stood)."""
    here = stream.tell()
    try:
        return all(not raw.strip() for raw in _lines(stream))
    finally:
        stream.seek(here)


def _json_lines(
    stream: IO[bytes],
    file: str,
    errors: SourceErrors,
    pairs: _Pairs,
    *,
    first_line: int,
    first: dict[str, Any],
) -> Iterator[Item]:
    """JSON Lines: the first record (already parsed), then each non-blank line."""
    if item := _checked(first, first_line, file, errors, pairs):
        yield item
    number = first_line
    for raw in _lines(stream):
        number += 1
        if not _NOT_BLANK.search(raw):
            continue
        text, problem = decode(raw, file, line=number)
        del raw  # as in read_items: the text alone, then the value alone
        if text is None:
            assert problem is not None
            errors.append(problem)
            continue
        try:
            value = json_loads(text, object_pairs_hook=pairs)
        except json.JSONDecodeError as exc:
            errors.append(json_error(exc, file, line_offset=number - 1))
            pairs.take()
            continue
        except ValueError as exc:  # a number too large for Python
            errors.append(SourceError(number, None, NOT_JSON.format(error=exc), file=file))
            continue
        del text
        if item := _checked(value, number, file, errors, pairs):
            yield item


def _checked(
    value: object,
    line: int,
    file: str,
    errors: SourceErrors,
    pairs: _Pairs,
    name: str | None = None,
) -> Item | None:
    """``value`` as an :class:`Item` if it is an object that names each field once."""
    repeated = pairs.take()
    for field_name in repeated:
        message = DUPLICATE_NAME.format(name=shorten(field_name))
        errors.append(SourceError(line, shorten(field_name), message, file=file))
    if not isinstance(value, dict):
        errors.append(
            SourceError(line, None, NOT_AN_OBJECT.format(type=json_type(value)), file=file)
        )
        return None
    return None if repeated else Item(line, value, name)


class _Lines:
    """Line numbers of positions in a text, counted forward only once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1

    def at(self, pos: int) -> int:
        if pos < self.pos:
            return position(self.text, pos)[0]
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _document(text: str, file: str, errors: SourceErrors, *, keyed: bool) -> Iterator[Item]:
    """The elements of a JSON array, or the members of a JSON object keyed by instance id
    (a lone object: one record), each with the line it starts on."""
    pairs = _Pairs()
    decoder = JsonDecoder(object_pairs_hook=pairs)
    lines = _Lines(text)
    pos = _skip_space(text, 0)
    opener = text[pos] if pos < len(text) else ""
    try:
        if opener == "[":
            yield from _array(text, pos, decoder, lines, file, errors, pairs)
        elif opener == "{":
            value, end = decoder.raw_decode(text, pos)
            if keyed and _keyed(value):
                pairs.take()
                del value  # read again member by member: not held whole beside them
                yield from _members(text, pos, decoder, lines, file, errors, pairs)
            elif item := _checked(value, lines.at(pos), file, errors, pairs):
                yield item
            _expect_end(text, end, file, errors)
        else:
            value, _ = decoder.raw_decode(text, pos)
            what = ", or a JSON object keyed by instance id" if keyed else ""
            line, column = position(text, pos)
            message = NOT_A_CONTAINER.format(keyed=what, type=json_type(value))
            errors.append(SourceError(line, None, message, file=file, column=column))
    except json.JSONDecodeError as exc:
        errors.append(json_error(exc, file))
    except ValueError as exc:  # a number too large for Python
        errors.append(SourceError(None, None, NOT_JSON.format(error=exc), file=file))


def _expect_end(text: str, end: int, file: str, errors: SourceErrors) -> None:
    end = _skip_space(text, end)
    if end < len(text):
        line, column = position(text, end)
        errors.append(SourceError(line, None, EXTRA_DATA, file=file, column=column))


def _separator(text: str, pos: int, closer: str) -> tuple[int, bool]:
    """After a value: the position of the next one and whether the container goes on."""
    pos = _skip_space(text, pos)
    if pos < len(text) and text[pos] == closer:
        return pos + 1, False
    if pos < len(text) and text[pos] == ",":
        after = _skip_space(text, pos + 1)
        if after < len(text) and text[after] == closer:
            raise json.JSONDecodeError("trailing comma", text, after)
        return after, True
    expected = f"Expecting ',' delimiter or {closer!r}"
    raise json.JSONDecodeError(expected, text, pos)


def _array(
    text: str,
    start: int,
    decoder: json.JSONDecoder,
    lines: _Lines,
    file: str,
    errors: SourceErrors,
    pairs: _Pairs,
) -> Iterator[Item]:
    pos = _skip_space(text, start + 1)
    going = not (pos < len(text) and text[pos] == "]")
    end = pos + 1
    while going:
        value, end = decoder.raw_decode(text, pos)
        if item := _checked(value, lines.at(pos), file, errors, pairs):
            yield item
        pos, going = _separator(text, end, "]")
        end = pos
    _expect_end(text, end, file, errors)


def _members(
    text: str,
    start: int,
    decoder: json.JSONDecoder,
    lines: _Lines,
    file: str,
    errors: SourceErrors,
    pairs: _Pairs,
) -> Iterator[Item]:
    """The members of an object (already known to be valid JSON) as named items."""
    pos = _skip_space(text, start + 1)
    seen: set[str] = set()
    going = not (pos < len(text) and text[pos] == "}")
    while going:
        name, end = decoder.raw_decode(text, pos)
        line = lines.at(pos)
        colon = _skip_space(text, end)
        value, end = decoder.raw_decode(text, _skip_space(text, colon + 1))
        if name in seen:
            errors.append(
                SourceError(
                    line, shorten(name), DUPLICATE_NAME.format(name=shorten(name)), file=file
                )
            )
            pairs.take()
        elif item := _checked(value, line, file, errors, pairs, name=name):
            yield item
        seen.add(name)
        pos, going = _separator(text, end, "}")


def read_json(stream: IO[bytes], file: str, errors: SourceErrors) -> Any:
    """A whole JSON document (a results report), or None with the problem in ``errors``."""
    stream.seek(0)
    data = stream.read()
    text, problem = decode(data, file)
    if text is None:
        assert problem is not None
        errors.append(problem)
        return None
    pairs = _Pairs()
    try:
        value = json_loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        errors.append(json_error(exc, file))
        return None
    except ValueError as exc:
        errors.append(SourceError(None, None, NOT_JSON.format(error=exc), file=file))
        return None
    for name in pairs.take():
        message = DUPLICATE_NAME.format(name=shorten(name))
        errors.append(SourceError(None, shorten(name), message, file=file))
    return value
