"""Page text is stored once where stripping left a page as it was, in a rowid table (migration 0009),
and an index written before that migrates with every page's raw and clean text intact."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chunkdedup import Index, ingest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _pages(index: Path) -> list[tuple[str, int, str, str]]:
    with Index.open(index) as ix:
        docs = [d["doc"] for d in ix.documents()]
        return [
            (d, raw.number, raw.text, clean.text)
            for d in docs
            for raw, clean in zip(ix.store.load_pages(d), ix.store.load_pages(d, clean=True), strict=True)
        ]


def test_unchanged_pages_keep_one_copy_and_an_old_index_migrates(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([DATA / "sec-10q" / "docs"], index)  # some pages stripped, others left as they were
    before = _pages(index)
    exported = list(Index.open(index).export())
    conn = sqlite3.connect(index)
    stored, total = conn.execute("SELECT COUNT(clean_text), COUNT(*) FROM pages").fetchone()
    assert 0 < stored < total
    changed = sum(raw != clean for _, _, raw, clean in before)
    assert stored == changed  # a second copy exactly where stripping changed the page
    # rewrite the table as the code before 0009 kept it: WITHOUT ROWID, clean text always written
    with conn:
        conn.execute(
            "CREATE TABLE old_pages(doc_id TEXT NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,"
            " raw_text TEXT NOT NULL, clean_text TEXT, PRIMARY KEY(doc_id, page)) WITHOUT ROWID"
        )
        conn.execute(
            "INSERT INTO old_pages SELECT doc_id, page, has_text, raw_text, COALESCE(clean_text, raw_text)"
            " FROM pages"
        )
        conn.execute("DROP TABLE pages")
        conn.execute("ALTER TABLE old_pages RENAME TO pages")
        conn.execute("DELETE FROM migrations WHERE name = '0009_pages_rowid'")
    conn.close()
    assert _pages(index) == before  # Index.open migrates
    conn = sqlite3.connect(index)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'pages'").fetchone()[0]
    assert "WITHOUT ROWID" not in sql
    assert conn.execute("SELECT COUNT(clean_text) FROM pages").fetchone()[0] == changed
    conn.close()
    assert list(Index.open(index).export()) == exported
    ingest([DATA / "sec-10q" / "docs"], index)  # unchanged input: nothing to redo
    assert _pages(index) == before
