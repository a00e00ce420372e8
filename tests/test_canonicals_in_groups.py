"""Migration 0037: a canonical is kept in the row of the group whose id it has (its leader), not in a row
of its own; ``canonical_rows`` keeps one only while no group has its id (its leader went and its members
have not been decided again). The ``canonicals`` view reads both, and every reader answers as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from chunkdedup import Index, ingest
from chunkdedup.store import Store
from chunkdedup.store.canonical_rows import CANONICAL_COUNT, PENDING
from conftest import BEFORE_0037, POLICY
from test_meaning import CLAUSE, TAIL
from test_migration_source_rows import _answers, _sources, assert_runs_as_fresh


def _kept(index: Path) -> dict[str, Any]:
    conn = sqlite3.connect(index)
    try:
        return {
            "in_groups": conn.execute("SELECT COUNT(*) FROM groups WHERE csig IS NOT NULL").fetchone()[0],
            "pending": conn.execute("SELECT COUNT(*) FROM groups WHERE csig = ?", (PENDING,)).fetchone()[0],
            "rows": conn.execute("SELECT id, text, n_sources FROM canonical_rows ORDER BY id").fetchall(),
            "view": conn.execute("SELECT type FROM sqlite_master WHERE name = 'canonicals'").fetchone()[0],
            # a group keeps a canonical in its row if and only if it leads its own cluster (what the
            # count of canonicals from indexes alone rests on: CANONICAL_COUNT)
            "misplaced": conn.execute(
                "SELECT COUNT(*) FROM groups g WHERE (g.canon IS NULL) != (g.csig IS NOT NULL)"
            ).fetchone()[0],
            "counted": conn.execute(CANONICAL_COUNT).fetchone()[0]
            == conn.execute("SELECT COUNT(*) FROM canonicals").fetchone()[0],
        }
    finally:
        conn.close()


def _records(index: Path) -> list[dict[str, Any]]:
    with Index.open(index) as ix:
        return list(ix.export())


def test_a_fresh_index_keeps_each_canonical_in_its_leaders_row(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    ingest([POLICY / "current", POLICY / "history"], index)  # near copies and versions: led groups
    kept = _kept(index)
    expected = {"in_groups": len(_records(index)), "pending": 0, "rows": [], "view": "view"}
    assert kept == {**expected, "misplaced": 0, "counted": True}


def test_a_canonical_whose_leader_goes_is_kept_until_its_members_are_decided_again(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    first = CLAUSE.format(verb="may", which="first") + TAIL
    second = first.replace("party keeps", "party retains")
    (folder / "a.txt").write_text(first, encoding="utf-8")
    (folder / "c.txt").write_text(second, encoding="utf-8")
    (folder / "z.txt").write_text("A note of its own, which no other document copies.", encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    leader, alone = _records(index)  # one near cluster, led by a.txt's group, and z.txt's
    assert [s["doc"] for s in leader["sources"]] == ["a.txt", "c.txt"]
    with Store.open(index) as store:  # the two leaders' documents go, and no cluster pass follows
        run_id = store.conn.execute("SELECT MAX(id) FROM runs").fetchone()[0] + 1
        with store.transaction():
            store.documents.remove_documents(["a.txt", "z.txt"], run_id)
        entombed = "SELECT canonical_id FROM tombstones WHERE run_id = ?"
        gone = store.conn.execute(entombed, (run_id,)).fetchall()
    assert gone == [(alone["id"],)]  # a canonical left with no source is entombed
    kept = _kept(index)
    assert kept["rows"] == [(leader["id"], second, 1)]  # its text now its one member's words
    assert kept["counted"] and kept["misplaced"] == 0
    (orphan,) = _records(index)
    assert orphan["id"] == leader["id"] and orphan["text"] == second
    assert [s["doc"] for s in orphan["sources"]] == ["c.txt"]
    (folder / "a.txt").unlink()
    (folder / "z.txt").unlink()
    ingest([folder], index, prune=True)  # the member's cluster is decided again: it leads itself
    assert _kept(index)["rows"] == []
    fresh = tmp_path / "fresh.sqlite"
    ingest([folder], fresh)
    assert [(r["id"], r["text"]) for r in _records(index)] == [(r["id"], r["text"]) for r in _records(fresh)]
    # the leader comes back: its group is made again under its id and takes its canonical's row
    (folder / "a.txt").write_text(first, encoding="utf-8")
    ingest([folder], index)
    kept = _kept(index)
    assert (kept["rows"], kept["pending"], kept["misplaced"], kept["counted"]) == ([], 0, 0, True)
    assert [r["id"] for r in _records(index)] == [leader["id"]]


def test_an_index_with_a_table_of_canonicals_migrates_and_answers_as_before(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    ingest([POLICY / "current", POLICY / "history"], index)
    before, rows = _answers(index), _sources(index)
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0037)
    conn.close()
    assert _sources(index) == rows  # the same rows in the old layout
    assert _answers(index) == before  # opening migrates it
    assert _sources(index) == rows
    kept = _kept(index)
    assert (kept["rows"], kept["pending"], kept["view"]) == ([], 0, "view")
    assert_runs_as_fresh(index, tmp_path)
