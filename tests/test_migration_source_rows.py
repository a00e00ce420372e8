"""Migration 0025: an index whose sources held their group's id, cluster, relation and similarity in each
row, and whose documents held their file's path, is rewritten to rows that name their group and their
file by integer keys, and answers as it did."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from chunkdedup import Index, ingest
from conftest import POLICY

#: the sources table as migrations 0001-0024 left it, filled from the rows and their groups
_AS_BEFORE = """
CREATE TABLE sources_before(
    doc_id TEXT NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL,
    "end" INTEGER NOT NULL, group_id TEXT NOT NULL, canonical_id TEXT NOT NULL,
    relation TEXT NOT NULL, similarity REAL NOT NULL,
    PRIMARY KEY(doc_id, page, start)) WITHOUT ROWID;
INSERT INTO sources_before SELECT * FROM sources;
DROP VIEW sources;
DROP TABLE source_rows;
ALTER TABLE sources_before RENAME TO sources;
CREATE INDEX sources_canonical ON sources(canonical_id, doc_id, page, start);
CREATE INDEX sources_group ON sources(group_id, doc_id, page, start);
CREATE TABLE documents_before(
    doc_id TEXT PRIMARY KEY, file_path TEXT NOT NULL, content_hash TEXT NOT NULL,
    unit TEXT NOT NULL, metadata TEXT NOT NULL, department TEXT, family TEXT,
    effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
    config_hash TEXT, run_id INTEGER NOT NULL, title TEXT);
INSERT INTO documents_before SELECT * FROM documents;
DROP VIEW documents;
DROP TABLE document_rows;
DROP TABLE paths;
ALTER TABLE documents_before RENAME TO documents;
CREATE INDEX documents_file ON documents(file_path);
CREATE INDEX documents_state ON documents(state);
CREATE INDEX documents_family ON documents(family) WHERE family IS NOT NULL;
CREATE INDEX documents_department ON documents(department) WHERE department IS NOT NULL;
DELETE FROM migrations WHERE name = '0025_source_rows';
"""

_QUESTIONS = ("refund within thirty days", "privacy cookies", "shipping address change")


def _answers(index: Path) -> tuple[list[Any], list[Any], list[Any]]:
    with Index.open(index) as ix:
        export = list(ix.export())
        hits = [[(h.id, h.text, [(c.doc, c.page, c.text) for c in h.citations]) for h in ix.query(q, k=5)]
                for q in _QUESTIONS]
        stats = {k: v for k, v in ix.stats().to_json().items() if k != "index_bytes"}  # the file's size moves
    return export, hits, [stats]


def _sources(index: Path) -> list[tuple[Any, ...]]:
    """Every source row and every document row, as the tables (or their views) give them."""
    conn = sqlite3.connect(index)
    try:
        return [*conn.execute("SELECT * FROM sources ORDER BY doc_id, page, start"),
                *conn.execute("SELECT * FROM documents ORDER BY doc_id")]
    finally:
        conn.close()


def test_an_index_with_the_old_sources_migrates_and_answers_as_before(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    ingest([POLICY / "current", POLICY / "history"], index)  # near copies and versions too
    before = _answers(index)
    rows = _sources(index)
    assert {r[6] for r in rows if len(r) == 8} >= {"exact", "near"}
    assert all(isinstance(r[2], str) and len(r[2]) == 32 for r in rows if len(r) == 13)  # content hashes
    conn = sqlite3.connect(index)
    conn.executescript(_AS_BEFORE)
    conn.close()
    assert _sources(index) == rows
    assert _answers(index) == before  # opening migrates it
    conn = sqlite3.connect(index)
    try:
        names = {r[0]: r[1] for r in conn.execute("SELECT name, type FROM sqlite_master")}
        applied = {r[0] for r in conn.execute("SELECT name FROM migrations")}
    finally:
        conn.close()
    assert names["sources"] == "view" and names["source_rows"] == "table"
    assert names["documents"] == "view" and names["document_rows"] == "table"
    assert "sources_canonical" not in names and "sources_group" not in names
    assert "0025_source_rows" in applied
    assert _sources(index) == rows
    # and it takes an incremental run as a fresh index does
    more = tmp_path / "more"
    more.mkdir()
    (more / "note.md").write_text("# Refunds\n\nRefunds are paid within thirty days of a request.\n")
    fresh = tmp_path / "fresh.sqlite"
    for at in (fresh, index):
        ingest([POLICY / "current", POLICY / "history", more], at)
    assert _answers(index)[:2] == _answers(fresh)[:2]
