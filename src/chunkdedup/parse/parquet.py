"""Parquet shards: one document per row, from its ``text``, ``id`` and other columns (as JSONL).

A whole read (:class:`ParquetParser`) and a read of a batch of rows at a time (:func:`rows`, for a
large file: :mod:`chunkdedup.parse.slices`) build each row alike (:func:`row_record`)."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from chunkdedup.errors import ParseError
from chunkdedup.normalize import bytes_hash
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.jsonl import gather_records, record_from_mapping

#: what a Parquet file's records are called in its notes: (noun, unit)
NAMES = ("row", "row")
#: the read buffer of a file read a batch of rows at a time (:func:`rows`)
_BUFFER_BYTES = 1 << 20


class ParquetParser:
    """Parquet files (``pip install 'chunkdedup[parquet]'``); unusable rows are skipped with a note."""

    def parse(self, data: bytes) -> Extraction:
        """Read every row group; a row's id is its ``id`` column, else ``@`` and its 1-based row number."""
        pq = _pyarrow()
        try:
            with pq.ParquetFile(io.BytesIO(data)) as f:
                _check_columns(f.schema_arrow.names)
                table = f.read()
        except ParseError:
            raise
        except Exception as e:  # pyarrow raises several types for damaged files
            raise _damaged(e) from None
        items = ((n, partial(row_record, row, n)) for n, row in enumerate(table.to_pylist(), start=1))
        noun, unit = NAMES
        return gather_records(items, noun=noun, unit=unit)


def row_record(row: dict[str, object], number: int) -> Extracted:
    """One row as a record: its content hash is its values' (the row's JSON, keys sorted). A NaN id
    (a pandas float column's missing value) is a missing id, as a null is."""
    found = row.get("id")
    if isinstance(found, float) and math.isnan(found):
        row["id"] = None
    elif found is not None and not isinstance(found, str | int):
        row["id"] = str(found)
    digest = bytes_hash(json.dumps(row, sort_keys=True, default=str).encode("utf-8"))
    return record_from_mapping(row, number, digest)


def readable(path: Path) -> bool:
    """Whether pyarrow is installed and reads ``path``'s footer (else a whole read says why not)."""
    try:
        import pyarrow.parquet as pq

        pq.ParquetFile(path).close()
    except Exception:  # pyarrow raises several types for damaged files
        return False
    return True


def rows(path: Path, batch: int) -> Iterator[tuple[int, dict[str, object]]]:
    """A :func:`readable` file's rows with their 1-based numbers, decoded ``batch`` rows at a time:
    the rows a whole read gives, holding one batch of them at once."""
    pq = _pyarrow()
    # read through a 1 MiB buffer, one column at a time: a row group's column chunks are decoded as
    # the batches need them, not read whole first (1M tiny rows in one row group: 148 -> 82 MB held)
    with pq.ParquetFile(path, buffer_size=_BUFFER_BYTES, pre_buffer=False) as f:
        _check_columns(f.schema_arrow.names)
        number = 0
        batches = f.iter_batches(batch_size=batch, use_threads=False)
        while True:
            try:  # a damaged page is the file's fault, as a whole read says, not the disk's
                part = next(batches, None)
            except Exception as e:  # pyarrow raises several types for damaged files
                raise _damaged(e) from None
            if part is None:
                return
            for row in part.to_pylist():
                number += 1
                yield number, row


def _check_columns(names: list[str]) -> None:
    if "text" not in names:
        raise ParseError(f"no 'text' column (columns: {', '.join(names)})")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:  # which of two 'text' (or 'id') columns is meant is the writer's to say
        raise ParseError(f"columns named more than once: {', '.join(repeated)}; give each column one name")


def _damaged(e: Exception) -> ParseError:
    return ParseError(f"not a readable Parquet file ({e}): the file is damaged or not Parquet")


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ParseError("reading Parquet needs pyarrow: pip install 'chunkdedup[parquet]'") from None
    return pq


__all__ = ["NAMES", "ParquetParser", "readable", "row_record", "rows"]
