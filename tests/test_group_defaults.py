"""Migration 0030: a group stores its cluster, relation and differing words only where they are not a
group's own (``canon``, ``rel``, ``diff``); ``canonical_id``, ``relation`` and ``differing`` are generated
columns over them, and the index by cluster holds only the groups another leads. Reads that name clusters
still go through an index; an index in the layout before migrates and answers as it did."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index, ingest
from conftest import BEFORE_0030, POLICY, stop_at_chunk_write, traced_statements
from test_migration_source_rows import _answers, _sources, assert_runs_as_fresh


def _columns(index: Path) -> dict[str, int]:
    """Each column of groups with its ``hidden`` flag (0 stored, 2 or 3 generated)."""
    conn = sqlite3.connect(index)
    try:
        return {r[1]: r[6] for r in conn.execute("PRAGMA table_xinfo(groups)")}
    finally:
        conn.close()


def _stored(index: Path) -> tuple[int, int, int, int, int]:
    """(groups, clusters led by another, stored canon, stored rel, index-by-cluster entries)."""
    conn = sqlite3.connect(index)
    try:
        groups, led, canon, rel = conn.execute(
            "SELECT COUNT(*), SUM(canonical_id != id), COUNT(canon), COUNT(rel) FROM groups"
        ).fetchone()
        indexed = "SELECT COUNT(*) FROM groups INDEXED BY groups_canonical WHERE canon IS NOT NULL"
        return groups, led, canon, rel, conn.execute(indexed).fetchone()[0]
    finally:
        conn.close()


def test_a_fresh_index_stores_only_what_differs_from_a_groups_own(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current", POLICY / "history"], index)  # near copies: some groups are led by another
    columns = _columns(index)
    assert {columns[c] for c in ("canonical_id", "relation", "differing")} <= {2, 3}  # generated
    assert columns["canon"] == columns["rel"] == columns["diff"] == 0
    groups, led, canon, rel, entries = _stored(index)
    assert 0 < led < groups
    assert canon == led == entries  # the cluster is stored (and indexed) only for led groups
    assert 0 < rel <= led
    conn = sqlite3.connect(index)
    try:
        # what the generated columns read is what a group's own state would be
        assert conn.execute(
            "SELECT COUNT(*) FROM groups WHERE canon IS NULL AND (canonical_id != id OR relation != 'exact'"
            " OR differing != '[]')"
        ).fetchone()[0] == 0
    finally:
        conn.close()


def _plans(index: Path, statements: list[str]) -> dict[str, str]:
    conn = sqlite3.connect(index)
    try:
        return {s: " | ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + s))
                for s in statements}
    finally:
        conn.close()


def test_reads_that_name_clusters_search_an_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every statement an incremental run and the cluster views run that names clusters (through the
    ``cluster_sources`` view or the groups' ``canon``) searches the groups, none scans them."""
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    statements = traced_statements(monkeypatch)
    ingest([POLICY / "current", POLICY / "history"], index)
    with Index.open(index) as ix:
        led = ix.store.conn.execute("SELECT canon FROM groups WHERE canon IS NOT NULL LIMIT 1").fetchone()[0]
        assert ix.canonical(led) is not None
        ix.views.sources(led, limit=5)
        ix.views.groups(led, limit=5)
        ix.variants(led)
        ix.review.pairs("merges")
        ix.review.pairs("variants")
        ix.records_citing([ix.documents()[0].doc_id])
        list(ix.export())
    monkeypatch.undo()
    named = sorted({s for s in statements if s.lstrip().startswith("SELECT")
                    and re.search(r"\b(canonical_id|canon)\s*(=|IN\b)", s)})
    assert any("cluster_sources" in s for s in named) and any("canon IN" in s for s in named)
    for sql, plan in _plans(index, named).items():
        assert "SCAN g" not in plan and "SCAN groups" not in plan, (sql, plan)


def test_an_index_with_every_groups_cluster_stored_migrates_and_answers_as_before(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    ingest([POLICY / "current", POLICY / "history"], index)
    before = _answers(index)
    rows = _sources(index)
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0030)
    conn.close()
    assert "canon" not in _columns(index) and _columns(index)["canonical_id"] == 0
    assert _sources(index) == rows  # the same rows in the old layout
    assert _answers(index) == before  # opening migrates it
    assert _columns(index)["canonical_id"] in (2, 3)
    _, led, canon, _, entries = _stored(index)
    assert led > 0 and canon == led == entries
    assert _sources(index) == rows
    assert_runs_as_fresh(index, tmp_path)


def test_an_index_stopped_with_the_old_index_by_cluster_deferred_migrates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first ingest stopped in its chunk phase by an older version left the index by cluster dropped and
    its old SQL kept to make it again: the migration makes the new one and forgets the old."""
    import chunkdedup.ingestion.sequence as pipeline

    index = tmp_path / "stopped.sqlite"
    monkeypatch.setattr(pipeline, "STORE_BATCH", 8)
    stop_at_chunk_write(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY / "current"], index)
    monkeypatch.undo()
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0030)
    held: Any = conn.execute("SELECT value FROM meta WHERE key='deferred_indexes'").fetchone()
    deferred = [["groups_canonical", "CREATE INDEX groups_canonical ON groups(canonical_id)"],
                *json.loads(held[0])]
    conn.execute("DROP INDEX groups_canonical")
    conn.execute("UPDATE meta SET value=? WHERE key='deferred_indexes'", (json.dumps(deferred),))
    conn.commit()
    conn.close()
    ingest([POLICY / "current"], index)
    conn = sqlite3.connect(index)
    try:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name='groups_canonical'").fetchone()[0]
        meta = conn.execute("SELECT value FROM meta WHERE key='deferred_indexes'").fetchone()
    finally:
        conn.close()
    assert "WHERE canon IS NOT NULL" in sql and meta is None
    fresh = tmp_path / "fresh.sqlite"
    ingest([POLICY / "current"], fresh)
    with Index.open(index) as a, Index.open(fresh) as b:
        assert list(a.export()) == list(b.export())
