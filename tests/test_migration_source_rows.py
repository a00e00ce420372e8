"""Migration 0025: an index whose sources held their group's id, cluster, relation and similarity in each
row, and whose documents held their file's path, is rewritten to rows that name their group and their
file by integer keys, and answers as it did."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from chunkdedup import Index, ingest
from conftest import BEFORE_0025, POLICY

_QUESTIONS = ("refund within thirty days", "privacy cookies", "shipping address change")


def _answers(index: Path) -> tuple[list[Any], list[Any], list[Any]]:
    with Index.open(index) as ix:
        export = list(ix.export())
        hits = [[(h.id, h.text, [(c.doc, c.page, c.text) for c in h.citations]) for h in ix.query(q, k=5)]
                for q in _QUESTIONS]
        stats = {k: v for k, v in ix.stats().to_json().items() if k != "index_bytes"}  # the file's size moves
    return export, hits, [stats]


def _sources(index: Path) -> list[tuple[Any, ...]]:
    """Every source row and every document row, as the tables (or their views) give them."""
    conn = sqlite3.connect(index)
    try:
        # a document's content hash as an index keeps it since 0042: its first 16 hex digits
        rows = conn.execute("SELECT * FROM documents ORDER BY doc_id")
        documents = [(*r[:2], r[2][:16], *r[3:]) for r in rows]
        return [*conn.execute("SELECT * FROM sources ORDER BY doc_id, page, start"),
                *documents,
                # the signature's first 8 bytes, all an index keeps since migration 0035
                *conn.execute("SELECT id, n_sources, substr(signature, 1, 8), updated_run FROM canonicals"
                              " ORDER BY id"),
                *conn.execute("SELECT canonical_id, run_id, substr(signature, 1, 8), updated_run"
                              " FROM tombstones ORDER BY canonical_id")]
    finally:
        conn.close()


def test_an_index_with_the_old_sources_migrates_and_answers_as_before(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    ingest([POLICY / "current", POLICY / "history"], index)  # near copies and versions too
    before = _answers(index)
    rows = _sources(index)
    assert {r[6] for r in rows if len(r) == 8} >= {"exact", "near"}
    assert all(isinstance(r[2], str) and len(r[2]) == 16 for r in rows if len(r) == 13)  # content hashes
    assert all(isinstance(r[2], bytes) for r in rows if len(r) == 4 and r[2] is not None)  # signatures
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0025)
    conn.close()
    assert _sources(index) != rows  # hex signatures
    assert [r for r in _sources(index) if len(r) != 4] == [r for r in rows if len(r) != 4]
    assert _answers(index) == before  # opening migrates it
    conn = sqlite3.connect(index)
    try:
        names = {r[0]: r[1] for r in conn.execute("SELECT name, type FROM sqlite_master")}
        applied = {r[0] for r in conn.execute("SELECT name FROM migrations")}
    finally:
        conn.close()
    assert names["sources"] == "view" and names["source_rows"] == "table"
    assert names["documents"] == "view" and names["document_rows"] == "table"
    assert "sources_canonical" not in names and "sources_group" not in names
    assert "0025_source_rows" in applied
    assert _sources(index) == rows
    assert_runs_as_fresh(index, tmp_path)


def assert_runs_as_fresh(index: Path, tmp_path: Path) -> None:
    """A migrated index of site-policy's current and history takes an incremental run (a new file) and
    then answers as a fresh index of the same inputs does."""
    more = tmp_path / "more"
    more.mkdir()
    (more / "note.md").write_text("# Refunds\n\nRefunds are paid within thirty days of a request.\n")
    fresh = tmp_path / "fresh.sqlite"
    for at in (fresh, index):
        ingest([POLICY / "current", POLICY / "history", more], at)
    assert _answers(index)[:2] == _answers(fresh)[:2]
