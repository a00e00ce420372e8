"""Migration 0035: a canonical's change signature is kept in 8 bytes. An index with 16-byte signatures
migrates to their first 8, and a run over unchanged input then changes no canonical (none is sent again by
``export --changes-since``), while an edit still changes the canonicals it touches."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chunkdedup import Index, ingest
from conftest import BEFORE_0035, POLICY


def _signatures(index: Path) -> dict[str, bytes]:
    conn = sqlite3.connect(index)
    try:
        return dict(conn.execute("SELECT id, signature FROM canonicals"))
    finally:
        conn.close()


def _changed_since(index: Path, run: int) -> list[str]:
    with Index.open(index) as ix:
        return [r["id"] for r in ix.export(since_run=run)]


def test_signatures_are_eight_bytes_and_an_old_index_keeps_its_canonicals_unchanged(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for f in sorted((POLICY / "current").rglob("*.md"))[:6]:
        (docs / f.name).write_bytes(f.read_bytes())
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    short = _signatures(index)
    assert short and {type(v) for v in short.values()} == {bytes} and {len(v) for v in short.values()} == {8}
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0035)
    conn.close()
    assert {len(v) for v in _signatures(index).values()} == {16}
    with Index.open(index) as ix:  # migrates
        last = ix.last_finished_run()
    assert _signatures(index) == short and last is not None
    ingest([docs], index)  # nothing changed: no canonical changes
    assert _changed_since(index, last) == []
    first = sorted(docs.iterdir())[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n\nA new closing paragraph about refunds.\n",
                     encoding="utf-8")
    with Index.open(index) as ix:
        last = ix.last_finished_run()
    assert last is not None
    ingest([docs], index)
    assert _changed_since(index, last)  # an edit changes what it touches
