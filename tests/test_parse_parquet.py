"""Parquet shards (id, text, metadata columns) ingest like JSONL records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkdedup import FileStatus, Index, ingest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def test_parquet_rows_become_documents_with_metadata(tmp_path: Path) -> None:
    folder = tmp_path / "shards"
    folder.mkdir()
    table = pa.table(
        {
            "id": ["p1", "p2", "p3"],
            "text": ["Refunds are paid within 30 days.", "Visitors sign in at the desk.", ""],
            "department": ["finance", "facilities", "hr"],
            "effective_date": ["2025-01-01", "2024-06-30", "2024-01-01"],
        }
    )
    pq.write_table(table, folder / "part-0.parquet")
    (folder / "broken.parquet").write_bytes(b"PAR1 not really")
    index = tmp_path / "i.sqlite"
    report = ingest([folder], index)
    status = {Path(f.path).name: f for f in report.files}
    assert status["part-0.parquet"].status == FileStatus.INGESTED
    assert status["part-0.parquet"].doc_ids == ("part-0.parquet#p1", "part-0.parquet#p2")
    assert "row 3" in (status["part-0.parquet"].reason or "")  # the empty text is skipped with a note
    assert status["broken.parquet"].status == FileStatus.FAILED
    with Index.open(index) as ix:
        docs = {d["doc"]: d for d in ix.documents()}
        records = list(ix.export())
    assert docs["part-0.parquet#p1"]["metadata"]["department"] == "finance"
    assert any(r["text"] == "Refunds are paid within 30 days." for r in records)
    assert json.loads(json.dumps(records))  # exportable as is
