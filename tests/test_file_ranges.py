"""Migration 0043: a file's documents are found through the ranges of document keys they were written in
(``file_docs``), not an index of the documents by file. Whatever runs write (new files, edits, records
removed, a corpus moved to another folder, a file removed), each file finds exactly its documents, and an
index with the index by file migrates to the same answers."""

from __future__ import annotations

import itertools
import json
import shutil
import sqlite3
from pathlib import Path

from chunkdedup import ingest
from chunkdedup.ingestion.remove import remove_documents
from chunkdedup.store import Store
from conftest import BEFORE_0043, POLICY
from test_migration_source_rows import _answers


def _write(path: Path, ids: range) -> None:
    texts = {f"r{i}": f"Record {i} of {path.stem} says w{i * 31 % 97}." for i in ids}
    lines = (json.dumps({"id": k, "text": v}) for k, v in texts.items())
    path.write_text("".join(line + "\n" for line in lines))


def _files(index: Path) -> dict[str, list[str]]:
    """Each file's documents as the store finds them, checked against a scan of every document row."""
    with Store.open(index) as store:
        paths = [r[0] for r in store.conn.execute("SELECT path FROM paths ORDER BY path")]
        found = {p: store.documents.docs_of_file(p) for p in paths}
        scanned = {
            p: [r[0] for r in store.conn.execute(
                "SELECT d.doc_id FROM document_rows d JOIN paths p ON p.fkey = d.fkey WHERE p.path = ?"
                " ORDER BY d.doc_id", (p,))]
            for p in paths
        }
        assert store.documents.files_with_documents(paths) == {p for p in paths if found[p]}
        ranges = store.conn.execute("SELECT fkey, lo, hi FROM file_docs ORDER BY fkey, lo").fetchall()
        indexes = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert found == scanned
    assert "documents_file" not in indexes
    for (f, _, hi), (g, lo, _) in itertools.pairwise(ranges):
        assert f != g or hi < lo  # a file's ranges never overlap
    return {f"{Path(p).parent.name}/{Path(p).name}": docs for p, docs in found.items() if docs}


def test_each_file_finds_its_documents_whatever_the_runs_write(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "a.jsonl", range(0, 300))
    _write(docs / "b.jsonl", range(0, 200))
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    assert {k: len(v) for k, v in _files(index).items()} == {"docs/a.jsonl": 300, "docs/b.jsonl": 200}
    conn = sqlite3.connect(index)
    assert conn.execute("SELECT COUNT(*) FROM file_docs").fetchone()[0] == 2  # a range a file
    conn.close()
    _write(docs / "a.jsonl", range(100, 400))  # 100 records gone, 100 new
    _write(docs / "c.jsonl", range(0, 50))
    ingest([docs], index)
    assert {k: len(v) for k, v in _files(index).items()} == {
        "docs/a.jsonl": 300, "docs/b.jsonl": 200, "docs/c.jsonl": 50}
    remove_documents(index, [f"b.jsonl#r{i}" for i in range(0, 200, 2)])
    assert len(_files(index)["docs/b.jsonl"]) == 100
    moved = tmp_path / "moved"
    shutil.copytree(docs, moved)
    ingest([moved], index, prune=True)  # the corpus in another folder: its files take over their ids
    files = _files(index)
    assert {k: len(v) for k, v in files.items()} == {
        "moved/a.jsonl": 300, "moved/b.jsonl": 200, "moved/c.jsonl": 50}
    (moved / "c.jsonl").unlink()
    ingest([moved], index, prune=True)
    assert "moved/c.jsonl" not in _files(index)


def test_an_index_with_the_index_by_file_migrates_and_answers_as_before(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "a.jsonl", range(0, 120))
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current", docs], index)
    files, before = _files(index), _answers(index)
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0043)
    conn.close()
    assert _answers(index) == before  # opening migrates
    assert _files(index) == files
    _write(docs / "a.jsonl", range(60, 200))
    ingest([POLICY / "current", docs], index)
    assert len(_files(index)["docs/a.jsonl"]) == 140
