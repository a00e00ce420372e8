"""A document's state is its chunking (migration 0039): pending while its row names no config it was
chunked under, indexed once it does. No row stores the state itself."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chunkdedup import Index, ingest
from conftest import BEFORE_0039, POLICY, stop_at_chunk_write
from test_migration_source_rows import _answers, _sources, assert_runs_as_fresh


def _states(index: Path) -> dict[str, int]:
    conn = sqlite3.connect(index)
    try:
        return dict(conn.execute("SELECT state, COUNT(*) FROM documents GROUP BY state"))
    finally:
        conn.close()


def _columns(index: Path) -> set[str]:
    conn = sqlite3.connect(index)
    try:
        return {r[1] for r in conn.execute("PRAGMA table_info(document_rows)")}
    finally:
        conn.close()


def test_a_stopped_run_leaves_pending_documents_that_the_next_run_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chunkdedup.ingestion.sequence as pipeline

    index = tmp_path / "i.sqlite"
    monkeypatch.setattr(pipeline, "STORE_BATCH", 8)
    stop_at_chunk_write(monkeypatch, 3)  # the third chunk write fails: pending documents are left
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY / "current"], index)
    monkeypatch.undo()
    assert "state" not in _columns(index)
    states = _states(index)
    assert states.get("pending", 0) > 0 and states.get("indexed", 0) > 0
    conn = sqlite3.connect(index)
    plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN SELECT COUNT(*) FROM document_rows"
                                               " WHERE ckey IS NULL"))
    conn.close()
    assert "documents_pending" in plan  # pending documents are counted through their partial index
    with Index.open(index, migrate=False) as ix:
        assert {s.status: s.count for s in ix.views.document_states()} == states
        assert ix.stats().pending_documents == states["pending"]
        pending = ix.views.documents(state="pending")
        assert pending.total == states["pending"] == len(pending.items)
        assert {d.state for d in pending.items} == {"pending"}
    ingest([POLICY / "current"], index)
    assert _states(index) == {"indexed": sum(states.values())}


def test_an_index_that_stored_states_migrates_and_runs_as_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pending documents stay pending; an indexed row that names no config (written before configs
    were kept) stays indexed and is chunked again, as it was before."""
    import chunkdedup.ingestion.sequence as pipeline

    index = tmp_path / "i.sqlite"
    monkeypatch.setattr(pipeline, "STORE_BATCH", 8)
    stop_at_chunk_write(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY / "current", POLICY / "history"], index)
    monkeypatch.undo()
    ingest([POLICY / "current", POLICY / "history"], index)
    before, rows = _answers(index), _sources(index)
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0039)
    one = conn.execute("SELECT MIN(doc_id) FROM document_rows").fetchone()[0]
    with conn:
        conn.execute("UPDATE document_rows SET ckey = NULL WHERE doc_id = ?", (one,))
    conn.close()
    assert "state" in _columns(index)
    assert _answers(index) == before  # opening migrates it
    # the one row that named no config names the empty one; every other row is as it was
    assert _sources(index) == [(*r[:10], "", *r[11:]) if len(r) == 13 and r[0] == one else r for r in rows]
    assert "state" not in _columns(index)
    conn = sqlite3.connect(index)
    assert conn.execute("SELECT config_hash FROM documents WHERE doc_id = ?", (one,)).fetchone()[0] == ""
    conn.close()
    assert _states(index) == {"indexed": len([r for r in rows if len(r) == 13])}
    assert_runs_as_fresh(index, tmp_path)
