"""The whole-index counts each write stores (issue 15): equal to a fresh count, never stale, and what
``chunkdedup serve``'s overview reads instead of scanning the tables."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from chunkdedup import Index, ingest, remove_documents
from chunkdedup.store import Store, copy_index, counts
from chunkdedup.web import create_app
from conftest import POLICY, POLICY_MANIFEST


def _copy(index: Path, dst: Path) -> Path:
    """A consistent copy of an index file (SQLite's backup API)."""
    target = dst / index.name
    copy_index(index, target)
    return target


def _raw(index: Path) -> sqlite3.Connection:
    return sqlite3.connect(index, isolation_level=None)


def _stored(index: Path) -> counts.IndexCounts | None:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return counts.stored(conn)
    finally:
        conn.close()


def _live(index: Path) -> counts.IndexCounts:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return counts.count(conn)
    finally:
        conn.close()


def _live_stats(index: Path) -> dict[str, Any]:
    """``Index.stats`` counted from the tables: on a copy without the stored row."""
    probe = index.with_name("live-" + index.name)
    copy_index(index, probe)
    conn = _raw(probe)
    conn.execute("DELETE FROM meta WHERE key=?", (counts.META_KEY,))
    conn.close()
    with Index.open(probe) as ix:
        out = ix.stats().to_json()
    probe.unlink()
    out.pop("index_bytes")  # of another file
    return out


def _stats(index: Path) -> dict[str, Any]:
    with Index.open(index) as ix:
        out = ix.stats().to_json()
    out.pop("index_bytes")
    return out


@pytest.fixture
def policy_copy(policy_index: Path, tmp_path: Path) -> Path:
    return _copy(policy_index, tmp_path)


def test_counts_stored_after_ingest_and_remove_equal_a_fresh_count(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    kept = _stored(index)
    assert kept is not None and kept == _live(index)
    assert kept.sources > kept.groups > 0 and kept.documents > 0
    assert _stats(index) == _live_stats(index)

    with Index.open(index) as ix:
        doc = ix.documents()[0]["doc"]
    remove_documents(index, [doc])
    after = _stored(index)
    assert after is not None and after == _live(index)
    assert after.documents == kept.documents - 1 and after.sources < kept.sources
    assert _stats(index) == _live_stats(index)

    ingest([POLICY], index, manifest=POLICY_MANIFEST)  # the record comes back
    assert _stored(index) == _live(index) == kept


@pytest.mark.parametrize("in_run", [True, False], ids=["in a run", "no run"])
def test_a_failed_writer_leaves_no_counts_and_readers_count_live(policy_copy: Path, in_run: bool) -> None:
    """A write outside a run (a migration) is not caught by the run stamp: only by the deletion."""
    before = _stored(policy_copy)
    assert before is not None
    with Index.open(policy_copy) as ix:
        doc = ix.documents()[0]["doc"]
    with Store.open(policy_copy) as store, pytest.raises(RuntimeError, match="boom"), store.writer():
        run = store.runs.begin_run([], None, {}) if in_run else 0
        with store.transaction():
            store.documents.remove_document(doc, run)
        # a reader while the writer still runs (WAL): the committed removal, no counts
        assert _stored(policy_copy) is None
        with Index.open(policy_copy) as ix:
            assert ix.stats()["documents"] == before.documents - 1
        raise RuntimeError("boom")
    assert _stored(policy_copy) is None
    live = _live(policy_copy)
    assert live.documents == before.documents - 1 and live.sources < before.sources
    with Index.open(policy_copy) as ix:
        stats = ix.stats()
    assert (stats["documents"], stats["raw_chunks"]) == (live.documents, live.sources)
    assert _stored(policy_copy) is None  # reading never writes them


def test_a_rolled_back_transaction_keeps_the_counts_valid(policy_copy: Path) -> None:
    before = _stored(policy_copy)
    with Store.open(policy_copy) as store, pytest.raises(RuntimeError), store.writer(), store.transaction():
        store.documents.remove_document(store.documents.doc_ids()[0], 0)
        raise RuntimeError("rolled back")
    assert _stored(policy_copy) == before == _live(policy_copy)


_KILLED = """
import os, signal, sys
from chunkdedup.store import Store
store = Store.open(sys.argv[1])
with store.writer():
    run = store.runs.begin_run([], None, {}) if sys.argv[2] == "1" else 0
    with store.transaction():
        store.documents.remove_document(store.documents.doc_ids()[0], run)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("in_run", [True, False], ids=["in a run", "no run"])
def test_a_killed_writer_leaves_no_stale_counts(policy_copy: Path, in_run: bool) -> None:
    before = _stored(policy_copy)
    assert before is not None
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(policy_copy), str(int(in_run))], check=False)
    assert proc.returncode == -9
    assert _stored(policy_copy) is None
    assert _stats(policy_copy)["documents"] == before.documents - 1


def test_a_write_by_an_older_version_is_not_hidden_by_the_counts(policy_copy: Path) -> None:
    """An older chunkdedup does not delete the row, but each of its writes begins a run."""
    conn = _raw(policy_copy)
    with conn:
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO runs(started, status, paths, config) VALUES ('2026-01-01', 'done', '[]', '{}')"
        )
        conn.execute("DELETE FROM variants")
    conn.close()
    assert _stored(policy_copy) is None
    assert _stats(policy_copy)["variant_pairs"] == 0


def test_an_index_of_an_older_version_shows_the_counts_and_stays_unwritten(policy_copy: Path) -> None:
    conn = _raw(policy_copy)
    conn.execute("DELETE FROM meta WHERE key=?", (counts.META_KEY,))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    bytes_before = policy_copy.read_bytes()
    stats = _stats(policy_copy)
    live = _live(policy_copy)
    assert (stats["documents"], stats["raw_chunks"], stats["after_exact"], stats["canonical_chunks"]) == (
        live.documents, live.sources, live.groups, live.canonicals,
    )
    assert _stored(policy_copy) is None
    assert policy_copy.read_bytes() == bytes_before


def test_a_malformed_row_is_ignored(policy_copy: Path) -> None:
    conn = _raw(policy_copy)
    conn.execute("UPDATE meta SET value='{\"format\": 1}' WHERE key=?", (counts.META_KEY,))
    conn.close()
    assert _stored(policy_copy) is None
    assert _stats(policy_copy) == _live_stats(policy_copy)


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The SQL every store the web app opens runs."""
    statements: list[str] = []
    opened: Callable[..., Store] = Store.open

    def open_traced(path: Any, **kw: Any) -> Store:
        store = opened(path, **kw)
        store.conn.set_trace_callback(statements.append)
        return store

    monkeypatch.setattr(Store, "open", open_traced)
    yield statements


def _overview(index: Path) -> dict[str, Any]:
    with TestClient(base_url="http://localhost", app=create_app(index, None)) as client:
        r = client.get("/?format=json")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body


def test_the_overview_of_a_fresh_index_reads_the_stored_counts(policy_copy: Path, traced: list[str]) -> None:
    body = _overview(policy_copy)
    assert traced, "the trace saw nothing"
    scans = [s for s in traced if "COUNT(*) FROM source_rows" in s or "COUNT(*) FROM groups" in s]
    assert not scans, scans
    live = _live(policy_copy)
    assert body["funnel"]["raw_chunks"] == live.sources
    assert body["funnel"]["canonical_chunks"] == live.canonicals
    assert body["documents"] == live.documents


def test_the_overview_of_an_older_index_counts_the_tables(policy_copy: Path, traced: list[str]) -> None:
    expected = _overview(policy_copy)
    conn = _raw(policy_copy)
    conn.execute("DELETE FROM meta WHERE key=?", (counts.META_KEY,))
    conn.close()
    traced.clear()
    body = _overview(policy_copy)
    assert any("COUNT(*) FROM source_rows" in s for s in traced)
    body.pop("index_bytes")
    expected.pop("index_bytes")
    assert body == expected


def test_a_writer_that_writes_nothing_keeps_the_counts(policy_copy: Path) -> None:
    before = _stored(policy_copy)
    with Store.open(policy_copy) as store, store.writer():
        pass
    assert _stored(policy_copy) == before is not None


def test_keep_counts_stores_them_for_an_index_of_an_older_version(policy_copy: Path) -> None:
    conn = _raw(policy_copy)
    conn.execute("DELETE FROM meta WHERE key=?", (counts.META_KEY,))
    conn.close()
    with Store.open(policy_copy) as store:
        store.keep_counts()
    assert _stored(policy_copy) == _live(policy_copy)
    assert _stats(policy_copy) == _live_stats(policy_copy)


def test_the_reported_size_is_the_files_once_the_run_ends(tmp_path: Path) -> None:
    """``index_bytes`` is the database's size (pages times page size), not the file plus a write-ahead
    log still holding the run's pages: what the report of an ingest says is what the file holds after
    it, and a reader during a later write sees the size as of the last commit."""
    index = tmp_path / "i.sqlite"
    report = ingest([POLICY], index, manifest=POLICY_MANIFEST)
    wal = index.with_name(index.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # the last connection checkpointed it
    assert report.totals["index_bytes"] == index.stat().st_size
    with Store.open(index) as store:
        store.conn.execute("CREATE TABLE filler(x BLOB)")
        store.conn.execute("INSERT INTO filler VALUES (zeroblob(1000000))")  # autocommit: in the log
        assert wal.stat().st_size > 1_000_000
        with Index.open(index) as ix:
            assert ix.stats()["index_bytes"] > report.totals["index_bytes"] + 900_000
            assert ix.stats()["index_bytes"] < index.stat().st_size + wal.stat().st_size
