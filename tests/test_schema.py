"""Migrations: an index written by an older schema is brought up to date when opened for writing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chunkdedup import Index
from chunkdedup.errors import MigrationPendingError
from chunkdedup.store.core import Store, _statements
from chunkdedup.store.migrations import MIGRATIONS


def _index_at_first_migration(path: Path) -> None:
    """An index as the 0001 schema wrote it: one cluster of two groups (a leader and a near copy)."""
    conn = sqlite3.connect(path)
    name, sql = MIGRATIONS[0]
    conn.execute("CREATE TABLE migrations(name TEXT PRIMARY KEY, applied TEXT)")
    for statement in _statements(sql):
        conn.execute(statement)
    conn.execute("INSERT INTO migrations VALUES (?, '2026-11-01T00:00:00+00:00')", (name,))
    conn.execute("INSERT INTO meta VALUES ('schema', '1')")
    for doc, text in (
        ("a.txt", "Refunds are paid within thirty days."),
        ("b.txt", "Refunds are paid promptly."),
    ):
        conn.execute(
            "INSERT INTO documents VALUES (?, ?, 'h', 'text', '{}', NULL, NULL, NULL, 1, 'ok', NULL, 1)",
            (doc, doc),
        )
        conn.execute("INSERT INTO pages VALUES (?, 1, 1, ?, ?)", (doc, text, text))
        gid = "g-" + doc
        conn.execute(
            "INSERT INTO groups(id, text, n_sources, rep_doc, rep_page, rep_start, canonical_id)"
            " VALUES (?, ?, 1, ?, 1, 0, 'g-a.txt')",
            (gid, text, doc),
        )
        conn.execute(
            "INSERT INTO sources VALUES (?, 1, 0, ?, ?, 'g-a.txt', ?, 1.0)",
            (doc, len(text), gid, "exact" if doc == "a.txt" else "near"),
        )
    conn.execute(
        "INSERT INTO canonicals(id, text, n_sources, signature, updated_run)"
        " VALUES ('g-a.txt', 'Refunds are paid within thirty days.', 2, 's', 1)"
    )
    conn.commit()
    conn.close()


def test_0002_makes_every_group_searchable(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _index_at_first_migration(path)
    with pytest.raises(MigrationPendingError, match="open it writable"):
        Store.open(path, readonly=True)
    Index.open(path).close()  # a reader lays out the new schema once
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "groups_fts" in tables and "canonicals_fts" not in tables
    assert conn.execute("SELECT COUNT(*) FROM groups WHERE gid IS NOT NULL").fetchone()[0] == 2
    conn.execute("INSERT INTO groups_fts(groups_fts) VALUES('integrity-check')")
    conn.close()
    with Index.open(path) as ix:
        # "promptly" is only in the near copy: it finds the cluster, shown in the copy's own words
        # (the canonical's words ride with the canonical's citation); asked for the canonical's words,
        # shown by its canonical text
        hits = ix.query("promptly", versions="all")
        assert [(h.id, h.text, [(c.doc, c.text) for c in h.citations]) for h in hits] == [
            ("g-a.txt", "Refunds are paid promptly.",
             [("b.txt", None), ("a.txt", "Refunds are paid within thirty days.")])
        ]
        hits = ix.query("promptly", versions="all", words="canonical")
        assert [(h.id, h.text, [(c.doc, c.text) for c in h.citations]) for h in hits] == [
            ("g-a.txt", "Refunds are paid within thirty days.",
             [("a.txt", None), ("b.txt", "Refunds are paid promptly.")])
        ]
        # where only the copy's document may be seen, the copy is shown
        hits = ix.query("promptly", versions="all", where=["doc=b.txt"])
        assert [(h.text, [c.doc for c in h.citations]) for h in hits] == [
            ("Refunds are paid promptly.", ["b.txt"])
        ]
        assert ix.query("promptly", versions="all", where=["doc=a.txt"]) == []
