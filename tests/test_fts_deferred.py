"""A first ingest builds FTS5 once at the end instead of through the triggers: the same table, the same
ranking, and a run killed in between leaves a mark the next run completes."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.store import Store
from conftest import POLICY, POLICY_MANIFEST

QUERIES = ("privacy", "account termination", "copyright infringement notice", "export controls")


def _ranked(index: Path) -> list[list[tuple[str, float]]]:
    with Store.open(index) as store:
        conn = store.conn
        # the FTS table must hold exactly the groups' texts, nothing stale, nothing missing
        conn.execute("INSERT INTO groups_fts(groups_fts, rank) VALUES('integrity-check', 1)")
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
    conn.close()
    monkeypatch.undo()
    ingest([POLICY / "current"], index)
    assert all(_ranked(index))
