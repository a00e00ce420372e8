"""The package layout: every SQL statement lives in ``chunkdedup.store`` (issue 12).

Outside ``src/chunkdedup/store/`` no module may call ``.execute(``, ``.executemany(`` or
``.executescript(``, reach for a store's connection (``.conn``), or import ``sqlite3``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "chunkdedup"
STORE = SRC / "store"

_CALLS = frozenset({"execute", "executemany", "executescript"})


def sql_uses(source: str) -> list[str]:
    """What in a module's source reaches SQLite directly: ``line: what``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CALLS:
            found.append(f"{node.lineno}: .{node.func.attr}(")
        elif isinstance(node, ast.Attribute) and node.attr == "conn":
            found.append(f"{node.lineno}: .conn")
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.split(".")[0] == "sqlite3"]
            found += [f"{node.lineno}: import {name}" for name in names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3":
            found.append(f"{node.lineno}: from {node.module} import ...")
    return found


def _outside_store() -> dict[str, list[str]]:
    """Every module outside the store, with what in it reaches SQLite."""
    return {
        path.relative_to(SRC).as_posix(): sql_uses(path.read_text(encoding="utf-8"))
        for path in sorted(SRC.rglob("*.py"))
        if STORE not in path.parents
    }


def test_no_sql_outside_the_store() -> None:
    offenders = {name: uses for name, uses in _outside_store().items() if uses}
    assert not offenders, (
        "SQL outside chunkdedup.store: move these statements into a store module with a typed read or "
        f"write function (see store/reads.py, store/fulltext.py): {offenders}"
    )


@pytest.mark.parametrize(
    "source",
    [
        "def f(store):\n    store.conn.execute('SELECT 1')\n",
        "def f(c, rows):\n    c.executemany('INSERT INTO t VALUES (?)', rows)\n",
        "def f(c):\n    c.executescript('DELETE FROM t;')\n",
        "import sqlite3\n",
        "from sqlite3 import Connection\n",
        "def f(ix):\n    return ix.store.conn\n",
    ],
)
def test_the_check_sees_sql(source: str) -> None:
    assert sql_uses(source)


def test_the_check_ignores_words_in_text() -> None:
    assert not sql_uses('"""Call conn.execute(sql) in the store."""\nx = "import sqlite3"\n')
