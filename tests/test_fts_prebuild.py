"""A first ingest builds its deferred FTS5 tables in a thread beside the cluster pass and copies them in:
the same rows as an in-place 'rebuild', seen by the writer's own connection, and a failed or unused
build changes nothing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.store import Store, textindex
from chunkdedup.store.fts_prebuild import DEFERRED_FTS, FtsPrebuild
from conftest import POLICY, POLICY_MANIFEST

SHADOWS = ("data", "idx", "docsize", "config")


def _shadow_rows(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """Every shadow table's rows (the contexts' table has no ``_docsize``: migration 0038)."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return {
        f"{t.name}_{s}": conn.execute(f"SELECT * FROM {t.name}_{s} ORDER BY 1, 2").fetchall()
        for t in DEFERRED_FTS
        for s in SHADOWS
        if f"{t.name}_{s}" in tables
    }


def _rebuilt(index: Path, tmp_path: Path) -> dict[str, list[tuple[object, ...]]]:
    """The FTS5 shadow rows of a copy of ``index`` whose tables are rebuilt in place, then merged into
    one segment each."""
    copy = tmp_path / "rebuilt.sqlite"
    with Store.open(index) as store:
        store.conn.execute(f"VACUUM INTO '{copy}'")
    conn = sqlite3.connect(copy)
    for t in DEFERRED_FTS:
        conn.execute(f"INSERT INTO {t.name}({t.name}) VALUES('rebuild')")
        conn.execute(f"INSERT INTO {t.name}({t.name}) VALUES('optimize')")
    conn.commit()
    rows = _shadow_rows(conn)
    conn.close()
    return rows


def _deferred_again(store: Store) -> None:
    """Put a built index back in the deferred state of a first ingest: triggers dropped, tables empty."""
    with store.transaction() as c:
        store.drop_keeping_sql("trigger", textindex.ROW_TRIGGERS, "deferred_triggers")
        store.set_meta("fts_deferred", "1")
        for t in DEFERRED_FTS:
            c.execute(f"INSERT INTO {t.name}({t.name}) VALUES('delete-all')")


def test_the_prebuilt_tables_are_the_rebuilt_ones(policy_index: Path, tmp_path: Path) -> None:
    """The policy corpus (near merges and variants: the cluster pass rewrites groups while the build
    reads them) ends with the rows an in-place rebuild writes, and FTS5's own check passes."""
    with Store.open(policy_index) as store:
        conn = store.conn
        assert store.meta("fts_deferred") is None
        for t in DEFERRED_FTS:
            conn.execute(f"INSERT INTO {t.name}({t.name}, rank) VALUES('integrity-check', 1)")
        got = _shadow_rows(conn)
        assert conn.execute("SELECT COUNT(*) FROM groups WHERE canonical_id != id").fetchone()[0] > 0
    assert got["groups_fts_data"] and got["contexts_fts_data"] and "contexts_fts_docsize" not in got
    assert got == _rebuilt(policy_index, tmp_path)


def test_the_writers_connection_sees_the_installed_tables(policy_index: Path, tmp_path: Path) -> None:
    """FTS5 caches its view of a table per connection; the copy comes from another connection, so the
    writer's connection, which read the empty tables before, reads the installed ones after."""
    index = tmp_path / "i.sqlite"
    shutil.copy(policy_index, index)
    match = "SELECT COUNT(*) FROM groups_fts WHERE groups_fts MATCH 'privacy'"
    with Store.open(index) as store, store.writer():
        before = store.conn.execute(match).fetchone()[0]
        _deferred_again(store)
        assert store.conn.execute(match).fetchone()[0] == 0  # the writer's view: empty tables
        with textindex.prebuilt_fts(store) as build:
            assert build is not None
            textindex.sync(store, prebuilt=build)
        assert build.error is None
        assert store.meta("fts_deferred") is None
        assert store.conn.execute(match).fetchone()[0] == before > 0
        store.conn.execute("INSERT INTO groups_fts(groups_fts, rank) VALUES('integrity-check', 1)")
    assert textindex.ROW_TRIGGERS[0] in {
        r[0] for r in sqlite3.connect(index).execute("SELECT name FROM sqlite_master WHERE type='trigger'")
    }


def test_a_failed_build_is_rebuilt_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy_index: Path
) -> None:
    """A build that fails (a full temp folder) installs nothing; the sync rebuilds as before."""

    def full(self: FtsPrebuild) -> None:
        self._error = sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(FtsPrebuild, "_build", full)
    index = tmp_path / "i.sqlite"
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    with Store.open(index) as store:
        assert store.meta("fts_deferred") is None
        assert _shadow_rows(store.conn) == _shadow_rows(sqlite3.connect(policy_index))


def test_a_build_left_uninstalled_is_stopped_and_the_mark_stays(policy_index: Path, tmp_path: Path) -> None:
    """Leaving the block without a sync (the cluster pass failed) stops the build and writes nothing:
    the index stays deferred, and the next sync rebuilds in place."""
    index = tmp_path / "i.sqlite"
    shutil.copy(policy_index, index)
    with Store.open(index) as store, store.writer():
        _deferred_again(store)
        with pytest.raises(KeyboardInterrupt), textindex.prebuilt_fts(store) as build:
            assert build is not None
            raise KeyboardInterrupt
        assert not build._thread.is_alive()
        assert store.meta("fts_deferred") == "1"
        assert store.conn.execute("SELECT COUNT(*) FROM groups_fts_docsize").fetchone()[0] == 0
        textindex.sync(store)
        assert store.meta("fts_deferred") is None
        assert _shadow_rows(store.conn) == _shadow_rows(sqlite3.connect(policy_index))


def test_nothing_is_built_when_nothing_is_deferred(policy_index: Path) -> None:
    with Store.open(policy_index) as store, store.writer(), textindex.prebuilt_fts(store) as build:
        assert build is None


def _segments(conn: sqlite3.Connection, table: str) -> int:
    """How many segments an FTS5 table's index has (its ``_idx`` shadow table: a row per segment leaf)."""
    return int(conn.execute(f"SELECT COUNT(DISTINCT segid) FROM {table}_idx").fetchone()[0])


@pytest.mark.parametrize("built", ["in a thread", "in place"])
def test_a_first_ingest_leaves_one_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, built: str
) -> None:
    """30k records fill FTS5's in-memory term table more than once, so a rebuild alone leaves several
    segments; the first ingest leaves one (42 bytes a tiny record instead of 48), on both paths."""
    if built == "in place":
        monkeypatch.setattr(FtsPrebuild, "install", lambda self: False)
    docs = tmp_path / "docs"
    docs.mkdir()
    words = [f"term{i}" for i in range(5000)]
    with (docs / "r.jsonl").open("w") as f:
        for i in range(30_000):
            text = " ".join(words[(i * 7 + j * 13) % len(words)] for j in range(8 + i % 5))
            f.write(f'{{"id": "r{i}", "text": "{text} n{i}"}}\n')
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    conn = sqlite3.connect(index)
    rebuilt = sqlite3.connect(":memory:")
    conn.backup(rebuilt)
    rebuilt.execute("INSERT INTO groups_fts(groups_fts) VALUES('rebuild')")
    assert _segments(rebuilt, "groups_fts") > 1  # what the ingest would leave without the merge
    assert _segments(conn, "groups_fts") == 1
    assert _segments(conn, "contexts_fts") == 1
