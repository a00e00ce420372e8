"""Parquet shards: one document per row, from its ``text``, ``id`` and other columns (as JSONL)."""

from __future__ import annotations

import io
import json

from chunkdedup.errors import ParseError
from chunkdedup.normalize import bytes_hash
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.jsonl import record_from_mapping


class ParquetParser:
    """Parquet files (``pip install 'chunkdedup[parquet]'``); unusable rows are skipped with a note."""

    def parse(self, data: bytes) -> Extraction:
        """Read every row group; a row's id is its ``id`` column, else its 1-based row number."""
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
        records: list[Extracted] = []
        notes: list[str] = []
        seen: dict[str, int] = {}
        for number, row in enumerate(table.to_pylist(), start=1):
            if row.get("id") is not None and not isinstance(row["id"], str | int):
                row["id"] = str(row["id"])
            digest = bytes_hash(json.dumps(row, sort_keys=True, default=str).encode("utf-8"))
            try:
                record = record_from_mapping(row, number, digest)
            except ParseError as e:
                notes.append(f"row {number}: {e.reason}")
                continue
            rid = record.record_id or ""
            if rid in seen:
                raise ParseError(
                    f"record id {rid!r} is used on rows {seen[rid]} and {number}: give each a unique id"
                )
            seen[rid] = number
            records.append(record)
        if not records:
            raise ParseError(f"no usable row; first problem: {notes[0]}" if notes else "no rows")
        return Extraction(documents=tuple(records), notes=tuple(notes))
