"""A first ingest builds FTS5 once at the end instead of through the triggers: the same table, the same
ranking, and a run killed in between leaves a mark the next run completes."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.store import Store
from chunkdedup.store.textindex import ROW_TRIGGERS
from conftest import POLICY, POLICY_MANIFEST

QUERIES = ("privacy", "account termination", "copyright infringement notice", "export controls")


def _ranked(index: Path) -> list[list[tuple[str, float]]]:
    with Store.open(index) as store:
        conn = store.conn
        # the FTS table must hold exactly the groups' texts, nothing stale, nothing missing
        conn.execute("INSERT INTO groups_fts(groups_fts, rank) VALUES('integrity-check', 1)")
        conn.execute("INSERT INTO contexts_fts(contexts_fts, rank) VALUES('integrity-check', 1)")
        contexts = conn.execute("SELECT COUNT(*) FROM contexts").fetchone()[0]
        assert contexts > 0
        assert conn.execute("SELECT COUNT(*) FROM contexts_fts WHERE contexts_fts MATCH 'github'"
                            ).fetchone()[0] > 0
        assert store.meta("fts_deferred") is None
        return [
            conn.execute(
                "SELECT g.id, round(bm25(groups_fts), 9) FROM groups_fts"
                " JOIN groups g ON g.gid = groups_fts.rowid WHERE groups_fts MATCH ? ORDER BY 2, 1",
                (q,),
            ).fetchall()
            for q in QUERIES
        ]


def test_a_deferred_build_ranks_as_the_triggers_do(tmp_path: Path, policy_index: Path) -> None:
    """A fresh ingest (deferred) ranks every query like one fed by the triggers (the second batch of
    two, written row by row into a non-empty index)."""
    part = tmp_path / "part"
    shutil.copytree(POLICY / "current", part / "current")
    shutil.copy(POLICY / "LICENSE.md", part / "LICENSE.md")
    index = tmp_path / "two.sqlite"
    ingest([part], index, manifest=POLICY_MANIFEST)
    shutil.copytree(POLICY / "history", part / "history")
    ingest([part], index, manifest=POLICY_MANIFEST)
    fresh = _ranked(policy_index)
    assert all(fresh) and _ranked(index) == fresh


def test_a_killed_deferred_run_is_completed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "i.sqlite"

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("chunkdedup.pipeline.update_clusters", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY / "current"], index)
    conn = sqlite3.connect(index)
    assert conn.execute("SELECT value FROM meta WHERE key='fts_deferred'").fetchone() == ("1",)
    assert conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0] > 0
    assert _triggers(conn) == {}  # dropped while deferred
    conn.close()
    monkeypatch.undo()
    ingest([POLICY / "current"], index)
    assert all(_ranked(index))
    conn = sqlite3.connect(index)
    try:
        assert _triggers(conn) == _TRIGGERS_OF_A_NEW_INDEX  # made again as the migrations made them
    finally:
        conn.close()


def _triggers(conn: sqlite3.Connection) -> dict[str, str]:
    marks = ",".join("?" * len(ROW_TRIGGERS))
    rows = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE type='trigger' AND name IN ({marks})",
                        ROW_TRIGGERS)
    return dict(rows.fetchall())


def _new_index_triggers() -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        Store.open(Path(tmp) / "i.sqlite", create=True).close()
        conn = sqlite3.connect(Path(tmp) / "i.sqlite")
        try:
            return _triggers(conn)
        finally:
            conn.close()


_TRIGGERS_OF_A_NEW_INDEX = _new_index_triggers()


def test_a_fresh_ingest_leaves_the_row_triggers_as_the_schema_has_them(tmp_path: Path) -> None:
    assert sorted(_TRIGGERS_OF_A_NEW_INDEX) == sorted(ROW_TRIGGERS)
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    conn = sqlite3.connect(index)
    try:
        assert _triggers(conn) == _TRIGGERS_OF_A_NEW_INDEX
        assert conn.execute("SELECT COUNT(*) FROM meta WHERE key IN ('fts_deferred', 'deferred_triggers')"
                            ).fetchone()[0] == 0
    finally:
        conn.close()
