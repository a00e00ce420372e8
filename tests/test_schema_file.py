"""The layout written down once: a new index is made from ``store/schema.sql``, and replaying every
migration from an empty file gives the same tables, columns, views, triggers and indexes."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from chunkdedup.store.connection import Connection, layout_sql
from chunkdedup.store.migrations import MIGRATIONS

#: FTS5's own tables come with their virtual table; they have no comment of their own
_SHADOW = re.compile(r"_fts_(data|idx|docsize|config)$")
_CREATED = re.compile(r"^CREATE (?:VIRTUAL )?(?:TABLE|VIEW|TRIGGER|INDEX) \"?(\w+)", re.M)


def _layout(path: Path) -> dict[tuple[str, str], str]:
    """Every object of the file (type and name) and its SQL, whitespace aside."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
    finally:
        conn.close()
    return {(t, n): _plain(sql or "") for t, n, sql in rows}


def _plain(sql: str) -> str:
    text = " ".join(sql.split())
    return re.sub(r"\s*([(),])\s*", r"\1", text)


def _migrations(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY name")]
    finally:
        conn.close()


def test_a_new_index_is_the_layout_the_migrations_build(tmp_path: Path) -> None:
    new = tmp_path / "new.sqlite"
    Connection.open(new, create=True).close()
    replayed = tmp_path / "replayed.sqlite"
    conn = sqlite3.connect(replayed)  # a file that holds only the migrations table: every one replays
    conn.execute("CREATE TABLE migrations(name TEXT PRIMARY KEY, applied TEXT)")
    conn.commit()
    conn.close()
    Connection.open(replayed).close()
    assert _layout(new) == _layout(replayed)
    assert _migrations(new) == _migrations(replayed) == sorted(name for name, _ in MIGRATIONS)
    kinds = {t for t, _ in _layout(new)}
    assert kinds == {"table", "view", "trigger", "index"}


def test_every_object_of_the_layout_says_what_it_is() -> None:
    """Each statement of schema.sql follows its comment, and creates one object once."""
    text = layout_sql()
    blocks = [b.strip() for b in text.split("\n\n") if b.strip()]
    named = 0
    for block in blocks[1:]:  # the file's own header first
        lines = block.splitlines()
        comments = 0
        while lines[comments].startswith("-- "):
            comments += 1
        assert comments and lines[comments].startswith("CREATE "), block
        named += 1
    created = _CREATED.findall(text)
    assert len(created) == named == len(set(created))


def test_the_layout_holds_every_object_but_fts5s_own(tmp_path: Path) -> None:
    new = tmp_path / "new.sqlite"
    Connection.open(new, create=True).close()
    created = set(_CREATED.findall(layout_sql()))
    held = {name for _, name in _layout(new) if not _SHADOW.search(name)}
    assert created == held
