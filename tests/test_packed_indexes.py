"""A first ingest writes its id indexes in no order (a group's id is a hash; each batch's documents and
groups land all over them), so it writes them again at its end, packed: rebuilding them then frees
nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from chunkdedup import Index, ingest
from chunkdedup.store.connection import PACKED_AFTER_FIRST_INGEST


def _index_pages(index: Path) -> dict[str, int]:
    """Pages of each index of the packed tables (SQLite's ``dbstat``)."""
    conn = sqlite3.connect(index)
    try:
        names = [
            r[0]
            for r in conn.execute(
                f"SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN"
                f" ({','.join('?' * len(PACKED_AFTER_FIRST_INGEST))})",
                PACKED_AFTER_FIRST_INGEST,
            )
        ]
        count = "SELECT COUNT(*) FROM dbstat WHERE name = ?"
        return {n: conn.execute(count, (n,)).fetchone()[0] for n in names}
    finally:
        conn.close()


def _rebuilt(index: Path, copy: Path) -> dict[str, int]:
    shutil.copy(index, copy)
    conn = sqlite3.connect(copy)
    for table in PACKED_AFTER_FIRST_INGEST:
        conn.execute(f"REINDEX {table}")
    conn.commit()
    conn.close()
    return _index_pages(copy)


def test_a_first_ingest_leaves_its_id_indexes_packed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    with (docs / "r.jsonl").open("w") as f:
        for i in range(30_000):
            text = " ".join(f"w{(i * 7919 + j * 104729) % 30011}" for j in range(3 + i % 9))
            f.write(json.dumps({"id": f"r{i}", "text": text}) + "\n")
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    pages = _index_pages(index)
    assert pages["sqlite_autoindex_groups_1"] > 10
    assert pages == _rebuilt(index, tmp_path / "copy.sqlite")  # nothing left to pack
    with Index.open(index) as ix:
        assert ix.stats().documents == 30_000
        assert len(ix.query("w1234 w5678", k=3)) == 3
