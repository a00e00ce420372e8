"""Parquet shards: one document per row, from its ``text``, ``id`` and other columns (as JSONL)."""

from __future__ import annotations

import io
import json
from functools import partial

from chunkdedup.errors import ParseError
from chunkdedup.normalize import bytes_hash
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.jsonl import gather_records, record_from_mapping


class ParquetParser:
    """Parquet files (``pip install 'chunkdedup[parquet]'``); unusable rows are skipped with a note."""

    def parse(self, data: bytes) -> Extraction:
        """Read every row group; a row's id is its ``id`` column, else ``@`` and its 1-based row number."""
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ParseError("reading Parquet needs pyarrow: pip install 'chunkdedup[parquet]'") from None
        try:
            table = pq.read_table(io.BytesIO(data))
        except Exception as e:  # pyarrow raises several types for damaged files
            raise ParseError(
                f"not a readable Parquet file ({e}): the file is damaged or not Parquet"
            ) from None
        if "text" not in table.column_names:
            raise ParseError(f"no 'text' column (columns: {', '.join(table.column_names)})")

        def build(row: dict[str, object], number: int) -> Extracted:
            if row.get("id") is not None and not isinstance(row["id"], str | int):
                row["id"] = str(row["id"])
            digest = bytes_hash(json.dumps(row, sort_keys=True, default=str).encode("utf-8"))
            return record_from_mapping(row, number, digest)

        rows = enumerate(table.to_pylist(), start=1)
        return gather_records(((n, partial(build, row, n)) for n, row in rows), noun="row", unit="row")
