"""``benchmarks/ingest_floor.py``'s floor makes the ingest's decisions: on a small corpus of
``benchmarks/scale.py`` (families of versions, running headers, chrome, exact and near copies, number
variants) it counts the same chunks, groups, canonicals, variants and stripped lines as ``ingest()``."""

from __future__ import annotations

import importlib.util
import sqlite3
from pathlib import Path
from types import ModuleType

from chunkdedup import Index, ingest
from export_reference import REPO, scale_module


def _floor_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "_chunkdedup_floor", REPO / "benchmarks" / "ingest_floor.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_floor_counts_equal_the_ingest(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    scale_module().write_corpus(corpus, 1_000, seed=5)
    ingest([corpus], tmp_path / "index.sqlite", workers=1)
    with Index.open(tmp_path / "index.sqlite") as ix:
        stats = ix.stats()
    result = _floor_module().floor(corpus, tmp_path / "floor.sqlite")
    counts = result["counts"]
    for key in ("documents", "pages", "raw_chunks", "after_exact", "canonical_chunks", "variant_pairs"):
        assert counts[key] == stats[key], key
    assert counts["lines_stripped"] == sum(stats["lines_stripped"].values()) > 0
    assert set(result["seconds"]) == {key for key, _ in _floor_module().FLOOR_STAGES}
    conn = sqlite3.connect(tmp_path / "floor.sqlite")
    try:
        (groups,) = conn.execute("SELECT COUNT(*) FROM groups").fetchone()
        (text,) = conn.execute("SELECT text FROM groups WHERE gid = 1").fetchone()
        word = next(w for w in text.split() if w.isalpha())
        (hits,) = conn.execute("SELECT COUNT(*) FROM groups_fts WHERE groups_fts MATCH ?", (word,)).fetchone()
        floor_keys = conn.execute("SELECT id, signed FROM groups ORDER BY id").fetchall()
    finally:
        conn.close()
    assert groups == stats["after_exact"] and hits > 0
    # each group marked signed, as the ingest marks it
    conn = sqlite3.connect(tmp_path / "index.sqlite")
    try:
        assert conn.execute("SELECT id, signed FROM groups ORDER BY id").fetchall() == floor_keys
    finally:
        conn.close()
    assert {signed for _, signed in floor_keys} == {1}  # every group signed (its keys in bands)
