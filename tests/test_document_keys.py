"""Migrations 0031-0033: a document row has an integer key (``dkey``) that its source rows, its context,
its pages and the groups it is the first source of name it by. An index in the layout before migrates
(contexts keyed again by their document's key) and answers as it did; a document's key holds through a new
version of it, and a removed document's key takes nothing of it to the document that gets that key next."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index, ingest
from chunkdedup.ingestion.remove import remove_documents
from conftest import BEFORE_0031, CONTEXTS_BY_DOC, POLICY
from test_migration_source_rows import _answers, _sources, assert_runs_as_fresh


def _columns(index: Path, table: str) -> list[str]:
    conn = sqlite3.connect(index)
    try:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


def _keys(index: Path) -> dict[str, Any]:
    """Each document's key, its context, and whether every source and context row names a document."""
    conn = sqlite3.connect(index)
    try:
        return {
            "dkeys": dict(conn.execute("SELECT doc_id, dkey FROM document_rows")),
            "contexts": dict(conn.execute(CONTEXTS_BY_DOC)),
            "orphans": conn.execute(
                "SELECT (SELECT COUNT(*) FROM source_rows WHERE dkey NOT IN (SELECT dkey FROM document_rows))"
                " + (SELECT COUNT(*) FROM contexts WHERE dkey NOT IN (SELECT dkey FROM document_rows))"
                " + (SELECT COUNT(*) FROM page_rows WHERE dkey NOT IN (SELECT dkey FROM document_rows))"
                " + (SELECT COUNT(*) FROM groups WHERE rep_dkey IS NULL"
                "    OR rep_dkey NOT IN (SELECT dkey FROM source_rows s WHERE s.gid = groups.gid))"
            ).fetchone()[0],
            "context_hits": conn.execute(
                "SELECT COUNT(*) FROM contexts_fts f JOIN contexts c ON c.dkey = f.rowid"
                " WHERE contexts_fts MATCH 'policy'"
            ).fetchone()[0],
        }
    finally:
        conn.close()


def test_a_fresh_index_names_documents_by_their_keys(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    assert _columns(index, "source_rows")[0] == "dkey" and "doc_id" not in _columns(index, "source_rows")
    assert _columns(index, "contexts") == ["dkey", "text"]
    assert _columns(index, "document_rows")[:2] == ["dkey", "doc_id"]
    assert _columns(index, "page_rows")[:2] == ["dkey", "page"]
    assert "rep_dkey" in _columns(index, "groups") and "rep_doc" not in _columns(index, "groups")
    documents = _columns(index, "document_rows")
    assert "ckey" in documents and "config_hash" not in documents
    conn = sqlite3.connect(index)
    try:  # one config: one row of configs, named by every indexed document
        assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT ckey) FROM document_rows").fetchone()[1] == 1
        hashes = conn.execute("SELECT DISTINCT typeof(config_hash), length(config_hash) FROM documents")
        assert hashes.fetchall() == [("blob", 16)]
    finally:
        conn.close()
    keys = _keys(index)
    assert keys["orphans"] == 0 and set(keys["contexts"]) == set(keys["dkeys"])
    assert keys["context_hits"] > 0


def test_an_index_naming_documents_by_id_migrates_and_answers_as_before(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current"], index)
    ingest([POLICY / "current", POLICY / "history"], index)
    before = _answers(index)
    rows = _sources(index)
    contexts = _keys(index)["contexts"]
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0031)  # contexts keyed apart from their documents (their key + 1000)
    conn.close()
    assert "doc_id" in _columns(index, "source_rows") and "doc_id" in _columns(index, "contexts")
    assert "doc_id" in _columns(index, "pages") and "rep_doc" in _columns(index, "groups")
    assert "config_hash" in _columns(index, "document_rows")
    assert _sources(index) == rows
    assert _answers(index) == before  # opening migrates it
    keys = _keys(index)
    assert keys["orphans"] == 0 and keys["contexts"] == contexts and keys["context_hits"] > 0
    assert _sources(index) == rows
    assert_runs_as_fresh(index, tmp_path)


def test_a_documents_key_holds_through_its_versions_and_goes_with_it(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, words in (("a", "Refunds are paid within thirty days"), ("b", "Shipping takes five days"),
                        ("c", "Returns need a receipt")):
        (docs / f"{name}.md").write_text(f"# {name.upper()} policy\n\n{words}. Ask the desk.\n")
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    first = _keys(index)
    (docs / "b.md").write_text("# B policy\n\nShipping takes seven days. Ask the desk.\n")
    ingest([docs], index)  # a new version of b.md: written over its row
    again = _keys(index)
    assert again["dkeys"] == first["dkeys"] and again["orphans"] == 0
    last = max(first["dkeys"], key=first["dkeys"].__getitem__)
    remove_documents(index, [last])  # the document with the highest key: its key may be given again
    (docs / Path(last).name).unlink()
    (docs / "d.md").write_text("# D policy\n\nGift cards never expire. Ask the desk.\n")
    ingest([docs], index)
    keys = _keys(index)
    assert last not in keys["dkeys"] and keys["orphans"] == 0
    assert set(keys["contexts"]) == set(keys["dkeys"])
    new = next(d for d in keys["dkeys"] if d.endswith("d.md"))
    assert keys["dkeys"][new] == first["dkeys"][last]  # the removed document's key, given again
    assert "D policy" in keys["contexts"][new]
    with Index.open(index) as ix:
        cited = {c.doc for h in ix.query("gift cards expire", k=3) for c in h.citations}
    assert any(d.endswith("d.md") for d in cited) and last not in cited


def test_a_group_whose_first_documents_row_is_missing_is_written_again(tmp_path: Path) -> None:
    """A group's first document is read through its row's key: a key naming no row (a damaged index)
    reads as a moved first source, so the next change to the group writes it again, not twice."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nRefunds are paid within thirty days. Ask the desk.\n")
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    conn = sqlite3.connect(index)
    with conn:
        conn.execute("UPDATE groups SET rep_dkey = -5")
    conn.close()
    (docs / "b.md").write_text("# A\n\nRefunds are paid within thirty days. Ask the desk.\n")
    ingest([docs], index)  # b.md's copies join a.md's groups
    assert _keys(index)["orphans"] == 0


def test_an_sqlite_older_than_the_schema_needs_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chunkdedup.errors import SchemaError

    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.34.1")
    with pytest.raises(SchemaError, match=r"3\.34\.1.*3\.35"):
        ingest([POLICY / "current"], tmp_path / "i.sqlite")
