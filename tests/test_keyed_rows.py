"""Migration 0029: canonicals and document rows kept in their key's B-tree (WITHOUT ROWID) instead of a
rowid table plus a unique index repeating the key, and the index by state holding pending documents only.
An index in the layout before migrates, answers as it did and takes an incremental run as a fresh one."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index, ingest
from chunkdedup.store.migrations import DOCUMENTS_VIEW
from chunkdedup.store.schema import PENDING_DOCUMENTS
from conftest import BEFORE_0031, POLICY, stop_at_chunk_write
from test_migration_source_rows import _answers, _sources, assert_runs_as_fresh

#: The two tables as migrations 0001-0028 left them (rowid tables, their keys in unique indexes).
BEFORE_0029 = BEFORE_0031 + """
DROP VIEW documents;
CREATE TABLE document_rows_old(
    doc_id TEXT PRIMARY KEY, fkey INTEGER NOT NULL, content_hash TEXT NOT NULL,
    unit TEXT NOT NULL, metadata TEXT, department TEXT, family TEXT,
    effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
    config_hash TEXT, run_id INTEGER NOT NULL, title TEXT);
INSERT INTO document_rows_old SELECT * FROM document_rows;
DROP TABLE document_rows;
ALTER TABLE document_rows_old RENAME TO document_rows;
CREATE INDEX documents_file ON document_rows(fkey);
CREATE INDEX documents_state ON document_rows(state);
CREATE INDEX documents_family ON document_rows(family) WHERE family IS NOT NULL;
CREATE INDEX documents_department ON document_rows(department) WHERE department IS NOT NULL;
""" + DOCUMENTS_VIEW + """
CREATE TABLE canonicals_old(
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT,
    n_sources INTEGER NOT NULL, signature TEXT NOT NULL, updated_run INTEGER NOT NULL);
INSERT INTO canonicals_old(id, text, n_sources, signature, updated_run)
    SELECT id, text, n_sources, signature, updated_run FROM canonicals ORDER BY id DESC;
DROP TABLE canonicals;
ALTER TABLE canonicals_old RENAME TO canonicals;
DELETE FROM migrations WHERE name = '0029_keyed_rows';
"""


def _layout(index: Path) -> dict[str, Any]:
    conn = sqlite3.connect(index)
    try:
        sql = dict(conn.execute("SELECT name, sql FROM sqlite_master"))
        # pending documents are read from their rows: since 0039 a row without a config key is pending
        stored = "state" in {r[1] for r in conn.execute("PRAGMA table_info(document_rows)")}
        pending = "documents WHERE state='pending'" if stored else PENDING_DOCUMENTS
        plan = " ".join(str(r[-1]) for r in conn.execute(f"EXPLAIN QUERY PLAN SELECT doc_id FROM {pending}"))
        # canonicals are kept in their leader groups' rows since 0037, the others by id in canonical_rows
        by_id = "canonical_rows" if "canonical_rows" in sql else "canonicals"
        return {
            "without_rowid": {
                "canonicals": "WITHOUT ROWID" in (sql[by_id] or ""),
                "document_rows": "WITHOUT ROWID" in (sql["document_rows"] or ""),
            },
            "autoindexes": sorted(n for n in sql if n.startswith("sqlite_autoindex_")),
            "state_indexes": sorted(n for n in sql if n in ("documents_state", "documents_pending")),
            "pending_plan": plan,
        }
    finally:
        conn.close()


def test_a_fresh_index_keeps_canonicals_by_their_keys(tmp_path: Path) -> None:
    """Canonicals stay in their id's B-tree (since 0037 those not in a group's row); document rows, kept
    so by 0029, have an integer key since 0031 (what their sources and contexts name them by), their id
    in a unique index."""
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    layout = _layout(index)
    assert layout["without_rowid"] == {"canonicals": True, "document_rows": False}
    assert not any(n.startswith("sqlite_autoindex_canonicals") for n in layout["autoindexes"])
    assert "sqlite_autoindex_document_rows_1" in layout["autoindexes"]
    assert layout["state_indexes"] == ["documents_pending"]
    assert "documents_pending" in layout["pending_plan"]  # the partial index answers the one question asked


def test_an_index_with_rowid_canonicals_and_documents_migrates_and_answers_as_before(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    ingest([POLICY / "current", POLICY / "history"], index)  # near copies and versions too
    before = _answers(index)
    rows = _sources(index)
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0029)
    conn.close()
    old = _layout(index)
    assert old["without_rowid"] == {"canonicals": False, "document_rows": False}
    assert {"sqlite_autoindex_canonicals_1", "sqlite_autoindex_document_rows_1"} <= set(old["autoindexes"])
    assert _sources(index) == rows  # the same rows in the old layout
    assert _answers(index) == before  # opening migrates it
    new = _layout(index)
    assert new["without_rowid"] == {"canonicals": True, "document_rows": False}  # keyed by dkey (0031)
    assert new["state_indexes"] == ["documents_pending"]
    assert _sources(index) == rows
    assert_runs_as_fresh(index, tmp_path)


def test_document_states_are_counted_without_a_scan_by_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The overview's and the document list's counts by state (pending through the partial index,
    indexed as the rest) are those of grouping the rows by state, with documents in both states."""
    import chunkdedup.ingestion.sequence as pipeline

    index = tmp_path / "stopped.sqlite"
    monkeypatch.setattr(pipeline, "STORE_BATCH", 8)
    stop_at_chunk_write(monkeypatch, 3)  # the third chunk write fails: pending documents are left
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY / "current"], index)
    monkeypatch.undo()
    conn = sqlite3.connect(index)
    try:
        grouped = dict(conn.execute("SELECT state, COUNT(*) FROM documents GROUP BY state"))
    finally:
        conn.close()
    assert grouped.get("pending", 0) > 0 and grouped.get("indexed", 0) > 0
    with Index.open(index, migrate=False) as ix:
        views = ix.views
        assert {s.status: s.count for s in views.document_states()} == grouped
        for state, n in grouped.items():
            listed = views.documents(state=state, limit=5)
            assert listed.total == n and all(d.state == state for d in listed.items)
        assert views.documents(state="gone").total == 0
