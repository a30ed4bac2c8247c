"""SWE-bench's instances as the Hugging Face hub distributes them: Parquet files.

``princeton-nlp/SWE-bench`` (and its Lite, Verified and BM25 retrieval variants) are
Parquet files on the hub (``data/test-00000-of-00001.parquet``), one row an instance, one
column a field, every column a string (``FAIL_TO_PASS`` and ``PASS_TO_PASS`` too: JSON
arrays written as text). :func:`parquet_items` yields each row as the record a JSON Lines
file would give, numbered by row (from 1), reading a few rows at a time: a BM25 dataset's
``text`` column is some 60 KB a row.

A value JSON has no form for is given as text (a timestamp as ISO 8601), or refused with
its row and column (binary data).
"""

import datetime
import decimal
from collections.abc import Iterator
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from rubrics.swebench.read import Item, SourceError, SourceErrors

PARQUET_MAGIC = b"PAR1"
NOT_PARQUET = "not a readable Parquet file: {error}"
BINARY = "binary data ({size:,} bytes) where a SWE-bench field holds text"
ROWS_AT_ONCE = 64


def is_parquet(stream: IO[bytes]) -> bool:
    stream.seek(0)
    head = stream.read(4)
    stream.seek(0)
    return head == PARQUET_MAGIC


class _Binary(ValueError):
    def __init__(self, size: int) -> None:
        super().__init__(BINARY.format(size=size))


def _plain(value: Any) -> Any:
    """``value`` (from ``to_pylist``) as JSON would hold it."""
    if isinstance(value, dict):
        return {str(name): _plain(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raise _Binary(len(value))
    return value


def parquet_items(stream: IO[bytes], file: str, errors: SourceErrors) -> Iterator[Item]:
    """The rows of a Parquet file as records, each with its row number; problems to
    ``errors`` (``line`` is the row)."""
    stream.seek(0)
    try:
        parquet = pq.ParquetFile(stream)
        batches = parquet.iter_batches(batch_size=ROWS_AT_ONCE)
        row = 0
        for batch in batches:
            for data in batch.to_pylist():
                row += 1
                record: dict[str, Any] = {}
                for name, value in data.items():
                    try:
                        record[name] = _plain(value)
                    except _Binary as exc:
                        errors.append(SourceError(row, name, str(exc), file=file, row=True))
                        break
                else:
                    yield Item(row, record)
    except (pa.ArrowException, OSError, ValueError) as exc:
        errors.append(SourceError(None, None, NOT_PARQUET.format(error=exc), file=file))
