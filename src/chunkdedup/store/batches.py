"""The IN-list batcher and the staging tables every table family writes through: a statement per 500
ids (:func:`rows_for_ids`, :func:`execute_for_ids`), and rows written in one statement from a temp table
where triggers keep the text index (:func:`staged_rows`, :func:`insert_rows`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

T = TypeVar("T")


#: ids bound in one statement, at most: well under SQLite's variable limit (32,766)
IN_LIST = 500


def in_lists(ids: Sequence[T]) -> Iterator[tuple[list[T], str]]:
    """``ids`` in parts of at most :data:`IN_LIST`, each with its placeholder list (``?,?,?``): the one
    batcher every ``IN (...)`` read and write goes through."""
    for i in range(0, len(ids), IN_LIST):
        part = list(ids[i : i + IN_LIST])
        yield part, ",".join("?" * len(part))


def document_keys(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> dict[str, int]:
    """``doc_id -> dkey`` (the document row's integer key, migration 0031) of these documents; an id
    with no row is left out."""
    return dict(rows_for_ids(conn, "SELECT doc_id, dkey FROM document_rows WHERE doc_id IN ({})", doc_ids))


def numbered(count: int, first: int = 1) -> str:
    """A placeholder list of ``count`` numbered parameters from ``first`` (``?1,?2,?3``): one that a
    statement reads more than once binds its values once."""
    return ",".join(f"?{i}" for i in range(first, first + count))


def _id_statements(
    sql: str, ids: Sequence[str] | Sequence[int], params: Sequence[object] = ()
) -> Iterator[tuple[str, list[object]]]:
    """``sql`` (one ``{}`` placeholder list) and its arguments (``params``, then the ids) for every
    :data:`IN_LIST` of ``ids``."""
    for part, marks in in_lists(ids):
        yield sql.format(marks), [*params, *part]



def rows_for_ids(
    conn: sqlite3.Connection, sql: str, ids: Sequence[str] | Sequence[int]
) -> Iterator[tuple[Any, ...]]:
    """Rows of ``sql`` (one ``{}`` placeholder list) for ``ids``, 500 ids per statement."""
    for statement, args in _id_statements(sql, ids):
        yield from conn.execute(statement, args)



def execute_for_ids(
    conn: sqlite3.Connection, sql: str, ids: Sequence[str] | Sequence[int], params: Sequence[object] = ()
) -> None:
    """A write ``sql`` (``params``, then one ``{}`` placeholder list) for ``ids``, 500 ids per
    statement: one statement per id (``executemany``) spent twice as long stepping and resetting it
    (50k documents' ``UPDATE documents``: 0.12 -> 0.08 s; their pages' clean text 0.08 -> 0.03 s)."""
    for statement, args in _id_statements(sql, ids, params):
        conn.execute(statement, args)



@contextmanager
def staged_rows(
    conn: sqlite3.Connection, stage: tuple[str, str], rows: Sequence[tuple[object, ...]]
) -> Iterator[str]:
    """``rows`` in a temp table (``stage``: its name and columns), emptied again on exit; yields its
    qualified name, for one ``INSERT ... SELECT`` / ``UPDATE ... FROM`` / ``DELETE ... IN`` over them.

    A table with FTS5 triggers must be written this way, not with ``executemany``: FTS5 flushes its
    pending terms to a new segment at every statement's savepoint, so one statement per row wrote a
    segment per row (500 group deletes: 350 ms, against 47 ms as one statement).
    """
    name, columns = stage
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name}({columns})")
    conn.execute(f"DELETE FROM temp.{name}")
    marks = ",".join("?" * len(columns.split(",")))
    try:
        # in one transaction (a savepoint: inside the caller's, if any): outside one, every row was a
        # transaction of its own (16k band rows of 1k groups: 0.5 s)
        conn.execute("SAVEPOINT staged_rows")
        try:
            conn.executemany(f"INSERT INTO temp.{name} VALUES ({marks})", rows)
        except BaseException:
            with suppress(sqlite3.Error):  # no savepoint is left open (nor a transaction it began)
                conn.execute("ROLLBACK TO staged_rows")
                conn.execute("RELEASE staged_rows")
            raise
        conn.execute("RELEASE staged_rows")
        yield f"temp.{name}"
    finally:
        conn.execute(f"DELETE FROM temp.{name}")



def has_row_triggers(conn: sqlite3.Connection, table: str) -> bool:
    """Whether any trigger runs on ``table``'s rows (none while FTS5 is deferred: a first ingest).
    Without one, rows are written with ``executemany`` directly: the temp table of
    :func:`staged_rows` only saves FTS5 a segment per statement (45k groups of a first ingest spent
    0.25 s filling it, and the ``INSERT ... SELECT`` from it as long as the rows' own inserts)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type='trigger' AND tbl_name=? LIMIT 1", (table,))
    return found.fetchone() is not None



def insert_rows(
    conn: sqlite3.Connection,
    stage: tuple[str, str],
    table: str,
    columns: str,
    rows: Sequence[tuple[object, ...]],
    conflict: str = "",
) -> None:
    """``INSERT INTO table(columns)`` of ``rows`` (``conflict``: an ``ON CONFLICT`` clause): with
    ``executemany`` where no trigger runs on ``table`` (:func:`has_row_triggers`), else in one
    statement from ``stage`` (:func:`staged_rows`; its columns are ``columns``, in that order)."""
    if not has_row_triggers(conn, table):
        marks = ",".join("?" * len(columns.split(",")))
        conn.executemany(f"INSERT INTO {table}({columns}) VALUES ({marks}){conflict}", rows)
        return
    with staged_rows(conn, stage, rows) as name:
        # WHERE true: an upsert's ON CONFLICT after a SELECT needs it to parse
        sql = f"INSERT INTO {table}({columns}) SELECT {columns} FROM {name} WHERE true ORDER BY rowid"
        conn.execute(sql + conflict)



class Tables:
    """Reads and writes of some tables on one connection: the one base of every table family (a family
    reaches another only through the reference it is given, never by inheriting it)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _batched(self, sql: str, ids: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        return rows_for_ids(self.conn, sql, ids)
