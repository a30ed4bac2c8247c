"""SWE-bench's instances as the Hugging Face hub distributes them: Parquet files.

``princeton-nlp/SWE-bench`` (and its Lite, Verified and BM25 retrieval variants) are
Parquet files on the hub (``data/test-00000-of-00001.parquet``), one row an instance, one
column a field, every column a string (``FAIL_TO_PASS`` and ``PASS_TO_PASS`` too: JSON
arrays written as text). :func:`parquet_items` yields each row as the record a JSON Lines
file would give, numbered by row (from 1), reading a few rows at a time: a BM25 dataset's
``text`` column is some 60 KB a row.

A value JSON has no form for is given as text (a timestamp as ISO 8601), or refused with
its row and column (binary data).

Parquet compresses: a small file can hold gigabytes. Before a row is read, the sizes its
metadata gives (which the reader checks against every page it decompresses) are summed over
the columns to read: over ``SEJURY_BUNDLE_MAX_BYTES`` (the limit of the records the import
makes) the file is refused. Columns in ``skip`` (the BM25 datasets' ``text``, 150 MB of the
test split) are not read at all; each record names them, as null, so that what is left out
is said.
"""

import datetime
import decimal
from collections.abc import Iterator
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings

from rubrics.swebench.read import Item, SourceError, SourceErrors

PARQUET_MAGIC = b"PAR1"
NOT_PARQUET = "not a readable Parquet file: {error}"
BINARY = "binary data ({size:,} bytes) where a SWE-bench field holds text"
TOO_LARGE = (
    "its columns hold {size:,} bytes once uncompressed, over the import's size limit of "
    "{limit:,} bytes (SEJURY_BUNDLE_MAX_BYTES): import the instances in several parts"
)
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


def _uncompressed(parquet: pq.ParquetFile, columns: list[str]) -> int:
    """The bytes of ``columns`` once uncompressed, as the file's metadata gives them."""
    metadata, total = parquet.metadata, 0
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            if chunk.path_in_schema.split(".")[0] in columns:
                total += chunk.total_uncompressed_size
    return total


def parquet_items(
    stream: IO[bytes], file: str, errors: SourceErrors, *, skip: tuple[str, ...] = ()
) -> Iterator[Item]:
    """The rows of a Parquet file as records, each with its row number; problems to
    ``errors`` (``line`` is the row). Columns in ``skip`` are not read: null in each."""
    stream.seek(0)
    try:
        parquet = pq.ParquetFile(stream)
        names = parquet.schema_arrow.names
        columns = [name for name in names if name not in skip]
        skipped = dict.fromkeys(name for name in names if name in skip)
        size, limit = _uncompressed(parquet, columns), settings.SEJURY_BUNDLE_MAX_BYTES
        if size > limit:
            message = TOO_LARGE.format(size=size, limit=limit)
            errors.append(SourceError(None, None, message, file=file))
            return
        batches = parquet.iter_batches(batch_size=ROWS_AT_ONCE, columns=columns)
        row = 0
        for batch in batches:
            for data in batch.to_pylist():
                row += 1
                record: dict[str, Any] = dict(skipped)
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
