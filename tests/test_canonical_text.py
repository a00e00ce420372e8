"""A canonical's text is kept once, in its leader group (migration 0010): a consistent index stores no
canonical text of its own, reads every canonical's text as before, and an older index migrates."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from chunkdedup import Index, remove_documents
from conftest import BEFORE_0031, STORED_CANONICAL_TEXTS


def _texts(index: Path) -> dict[str, str]:
    with Index.open(index) as ix:
        return {r.id: r.text for r in ix.records()}


def test_canonical_text_is_the_leader_groups_and_stored_once(policy_index: Path, tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    shutil.copy(policy_index, index)
    texts = _texts(index)
    conn = sqlite3.connect(index)
    stored = conn.execute(STORED_CANONICAL_TEXTS).fetchone()[0]
    total = conn.execute("SELECT COUNT(*) FROM canonicals").fetchone()[0]
    leaders = dict(conn.execute("SELECT g.id, g.text FROM groups g JOIN canonicals c ON c.id = g.id"))
    conn.close()
    assert total > 900 and stored == 0  # every canonical of a finished run reads its leader's text
    assert texts == leaders
    with Index.open(index) as ix:
        some = sorted(texts)[::97]
        assert all(ix.canonical(cid).text == texts[cid] for cid in some)  # type: ignore[union-attr]
    # a removal re-derives canonicals (new leaders, texts of other groups): still stored once
    doc = "current/acceptable-use-policies/github-acceptable-use-policies.md"
    remove_documents(index, [doc])
    conn = sqlite3.connect(index)
    assert conn.execute(STORED_CANONICAL_TEXTS).fetchone()[0] == 0
    conn.close()
    after = _texts(index)
    assert after and all(after[cid] == texts[cid] for cid in after if cid in texts)


def test_an_index_with_canonical_texts_migrates(policy_index: Path, tmp_path: Path) -> None:
    index = tmp_path / "old.sqlite"
    shutil.copy(policy_index, index)
    with Index.open(index) as ix:
        exported = list(ix.export())
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0031)  # the document rows as 0029, which runs again, takes them
    with conn:  # the table as the code before 0010 kept it: every canonical's text, NOT NULL
        conn.execute(
            "CREATE TABLE old(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,"
            " n_sources INTEGER NOT NULL, signature TEXT NOT NULL, updated_run INTEGER NOT NULL)"
        )
        conn.execute(
            "INSERT INTO old(id, text, n_sources, signature, updated_run) SELECT c.id,"
            " (SELECT g.text FROM groups g WHERE g.id = c.id), c.n_sources, c.signature, c.updated_run"
            " FROM canonicals c"
        )
        conn.execute("DROP TABLE canonicals")
        conn.execute("ALTER TABLE old RENAME TO canonicals")
        conn.execute("DELETE FROM migrations WHERE name IN ('0010_canonical_text_once', '0029_keyed_rows')")
    assert conn.execute("SELECT COUNT(text) FROM canonicals").fetchone()[0] == len(exported)
    conn.close()
    with Index.open(index) as ix:  # migrates
        assert list(ix.export()) == exported
    conn = sqlite3.connect(index)
    assert conn.execute(STORED_CANONICAL_TEXTS).fetchone()[0] == 0
    conn.close()
