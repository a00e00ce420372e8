"""A first ingest builds FTS5 once at the end instead of through the triggers: the same table, the same
ranking, and a run killed in between leaves a mark the next run completes."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.store import Store
from chunkdedup.store.textindex import ROW_TRIGGERS
from conftest import POLICY, POLICY_MANIFEST, new_index_schema_sql, schema_sql, traced_statements

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

    monkeypatch.setattr("chunkdedup.ingestion.sequence.update_clusters", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest([POLICY / "current"], index)
    conn = sqlite3.connect(index)
    assert conn.execute("SELECT value FROM meta WHERE key='fts_deferred'").fetchone() == ("1",)
    assert conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0] > 0
    assert _triggers(index) == {}  # dropped while deferred
    conn.close()
    monkeypatch.undo()
    ingest([POLICY / "current"], index)
    assert all(_ranked(index))
    assert _triggers(index) == _TRIGGERS_OF_A_NEW_INDEX  # made again as the migrations made them


def _triggers(index: Path) -> dict[str, str]:
    return schema_sql(index, "trigger", ROW_TRIGGERS)


_TRIGGERS_OF_A_NEW_INDEX = new_index_schema_sql("trigger", ROW_TRIGGERS)


def test_a_fresh_ingest_leaves_the_row_triggers_as_the_schema_has_them(tmp_path: Path) -> None:
    assert sorted(_TRIGGERS_OF_A_NEW_INDEX) == sorted(ROW_TRIGGERS)
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    assert _triggers(index) == _TRIGGERS_OF_A_NEW_INDEX
    conn = sqlite3.connect(index)
    try:
        assert conn.execute("SELECT COUNT(*) FROM meta WHERE key IN ('fts_deferred', 'deferred_triggers')"
                            ).fetchone()[0] == 0
    finally:
        conn.close()


def test_an_incremental_run_writes_the_indexed_tables_once_per_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FTS5 writes its pending terms out at every statement that fires its triggers: a change must
    reach ``groups`` and ``contexts`` in a few statements per batch (here one file of records), not one
    per row (which wrote one segment per row: 500 group deletes took 350 ms instead of 47)."""
    rng = random.Random(5)
    words = [f"w{a}{b}" for a in "abcdefghij" for b in "klmnopqrst"]

    def record(i: int, title: str) -> str:  # distinct prose: nothing in it is chrome
        text = " ".join(" ".join(rng.sample(words, 12)).capitalize() + "." for _ in range(6))
        return json.dumps({"id": f"r{i:02d}", "title": f"{title} {rng.choice(words)}", "text": text})

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = [record(i, "Policy") for i in range(40)]
    (corpus / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = tmp_path / "index.sqlite"
    ingest([corpus], index)
    for i in range(0, 40, 2):  # half the records change: their groups go, new ones come, titles move
        lines[i] = record(i, "Handbook")
    (corpus / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    statements = traced_statements(monkeypatch)
    report = ingest([corpus], index)
    monkeypatch.undo()
    assert report.totals["documents_chunked"] == 20

    def flushes(table: str) -> int:
        """How many pages FTS5 wrote for ``table``'s index: each flush of its pending terms writes at
        least a leaf and the structure record."""
        return sum(1 for s in statements if s.startswith(f"-- REPLACE INTO 'main'.'{table}_fts_data'"))

    assert 1 <= flushes("groups") <= 8, flushes("groups")
    assert 1 <= flushes("contexts") <= 4, flushes("contexts")
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh)
    question = (
        "SELECT g.id, round(bm25(groups_fts), 9) FROM groups_fts JOIN groups g ON g.gid = groups_fts.rowid"
        " WHERE groups_fts MATCH 'wak OR wbl OR wcm' ORDER BY 2, 1"
    )
    with Store.open(index) as store, Store.open(fresh) as other:
        store.conn.execute("INSERT INTO groups_fts(groups_fts, rank) VALUES('integrity-check', 1)")
        store.conn.execute("INSERT INTO contexts_fts(contexts_fts, rank) VALUES('integrity-check', 1)")
        hits = store.conn.execute(question).fetchall()
        assert len(hits) > 5
        assert hits == other.conn.execute(question).fetchall()


def test_rows_are_staged_only_while_triggers_feed_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first ingest (FTS5 deferred: no row trigger) inserts groups and contexts straight into their
    tables; a later one, whose triggers feed FTS5, through a staged statement per batch (a statement
    per row would write a segment per row). Both end with the FTS5 tables whole (``_ranked``)."""
    part = tmp_path / "part"
    shutil.copytree(POLICY / "current", part / "current")
    index = tmp_path / "i.sqlite"
    statements = traced_statements(monkeypatch)
    ingest([part], index, manifest=POLICY_MANIFEST)
    first = list(statements)
    statements.clear()
    shutil.copytree(POLICY / "history", part / "history")
    ingest([part], index, manifest=POLICY_MANIFEST)
    later = list(statements)
    monkeypatch.undo()

    def writes(sql: list[str], table: str, staged: bool) -> int:
        into = [s for s in sql if s.lstrip().startswith(f"INSERT INTO {table}(")]
        return sum(("FROM temp." in s) == staged for s in into)

    for table in ("groups", "contexts"):
        assert writes(first, table, staged=False) > 0 and writes(first, table, staged=True) == 0
        assert writes(later, table, staged=True) > 0 and writes(later, table, staged=False) == 0
    assert all(_ranked(index))
