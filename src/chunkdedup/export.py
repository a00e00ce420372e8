"""Export canonical chunks as JSONL or Parquet, streaming, for a user's own vector store.

With ``changes_since`` the export holds only what changed after that ingest run: each record to
upsert (``"op": "upsert"``) and each id to delete (``"op": "delete"``).
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from chunkdedup.errors import IndexBusyError, InputError, MissingExtraError
from chunkdedup.index import Index
from chunkdedup.outfile import binary_out, text_out
from chunkdedup.query.records import ExportRecord

_PARQUET_BATCH = 2048


def records(index: Index, changes_since: int | None) -> Iterator[ExportRecord]:
    """Export records; with ``changes_since`` upserts then deletions, each with an ``op``."""
    if changes_since is None:
        yield from index.records()
        return
    for rec in index.records(since_run=changes_since):
        yield replace(rec, op="upsert")
    for cid in index.deleted_since(changes_since):
        yield ExportRecord.delete(cid)


def export_index(
    index_path: str | Path, out: Path | IO[str], fmt: str = "jsonl", changes_since: int | None = None
) -> dict[str, int]:
    """Open an index and export it; a delta (``changes_since``) is refused while an ingest is running,
    since a half-done run's changes would be sent under a run id the caller then skips.

    Example:
        >>> export_index("corpus.sqlite", Path("delta.jsonl"), changes_since=3)  # doctest: +SKIP
        {'upserts': 12, 'deletes': 2}
    """
    if changes_since is not None and Path(index_path).exists() and Index.writer_active(index_path):
        raise IndexBusyError(
            f"an ingest into {index_path} is running: export --changes-since after it finishes, "
            "then use the `last_run` of `chunkdedup stats` as the next watermark"
        )
    with Index.open(index_path) as index:
        if changes_since is not None:
            last = index.stats().last_run or 0
            if changes_since > last:
                raise InputError(
                    f"--changes-since {changes_since} is past the last finished run of {index_path} "
                    f"({last}): "
                    "pass a run id you exported at (`chunkdedup stats` shows last_run)"
                )
        try:
            return write_export(index, out, fmt, changes_since)
        except BrokenPipeError:
            raise  # the reader stopped reading (`| head`): the caller's to end quietly, no error
        except OSError as e:  # standard output (a path's failures are the InputError of chunkdedup.outfile)
            if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise InputError(
                    f"no space left writing the export to standard output ({e.strerror}): free disk space, "
                    "or give an --out on another disk"
                ) from None
            raise InputError(f"cannot write the export to standard output: {e.strerror}") from None


def write_export(index: Index, out: Path | IO[str], fmt: str, changes_since: int | None) -> dict[str, int]:
    """Write the export to a path (replaced whole, or a device or FIFO written through: see
    :mod:`chunkdedup.outfile`) or a text stream; returns counts of upserts and deletes."""
    counts = {"upserts": 0, "deletes": 0}

    def counted() -> Iterator[ExportRecord]:
        for rec in records(index, changes_since):
            counts["deletes" if rec.op == "delete" else "upserts"] += 1
            yield rec

    if not isinstance(out, Path):
        if fmt == "parquet":
            raise InputError("--format parquet writes a file: give --out FILE")
        _write_jsonl(counted(), out)
        return counts
    if fmt == "parquet":
        with binary_out(out, "the export") as raw:
            _write_parquet(counted(), raw)
    else:
        with text_out(out, "the export") as fh:
            _write_jsonl(counted(), fh)
    return counts


def _write_jsonl(recs: Iterator[ExportRecord], fh: IO[str]) -> None:
    for rec in recs:
        fh.write(json.dumps(rec.to_json(), ensure_ascii=False, sort_keys=True))
        fh.write("\n")


def _write_parquet(recs: Iterator[ExportRecord], out: IO[bytes]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError("export --format parquet", "parquet", "pyarrow") from None
    source = pa.struct(
        [
            ("doc", pa.string()),
            ("page", pa.int32()),
            ("start", pa.int64()),
            ("end", pa.int64()),
            ("relation", pa.string()),
            ("similarity", pa.float64()),
            ("metadata", pa.string()),
            ("text", pa.string()),  # a near or semantic copy's own words (null: the record's text)
            ("differs", pa.list_(pa.string())),
        ]
    )
    schema = pa.schema(
        [("op", pa.string()), ("id", pa.string()), ("text", pa.string()), ("sources", pa.list_(source))]
    )
    with pq.ParquetWriter(out, schema) as writer:
        batch: list[dict[str, Any]] = []
        for rec in recs:
            # Metadata keys differ between documents: stored as a JSON object string.
            row = {
                "op": rec.op or "upsert",
                "id": rec.id,
                "text": rec.text,
                "sources": [
                    {**s.to_json(), "metadata": json.dumps(dict(s.metadata), sort_keys=True)}
                    for s in rec.sources
                ],
            }
            batch.append(row)
            if len(batch) >= _PARQUET_BATCH:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
