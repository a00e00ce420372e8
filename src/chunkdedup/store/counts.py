"""The whole-index counts of :meth:`~chunkdedup.index.Index.stats`, kept as one small row.

Counting them scans the largest indexes of the file (at 1M chunks: 1.5 s on a cold OS cache, 0.17 s
warm), so the end of each write stores them and a reader reads that row instead. They are never stale:

- every write transaction (:meth:`Store.transaction <chunkdedup.store.core.Store.transaction>`) deletes
  the row in the transaction itself, so a committed state that holds a changed table holds no counts
  (a reader in WAL sees either the old tables with their counts or the new ones without; a killed or
  failed writer leaves the counts deleted as soon as it committed anything);
- the successful end of a writer that wrote (:meth:`Store.writer <chunkdedup.store.core.Store.writer>`)
  stores them again, counted from the tables in the transaction that stores them;
- the row is stamped with the newest run's id, and a reader uses it only while that is still the newest
  run: an older chunkdedup writes without deleting the row, but each of its writes begins a run.

A reader without a usable row (an index of an older version, or one being written) counts the tables as
before; reading never writes. A write that bypasses ``Store.transaction`` (raw SQL on the file) is not
seen: such a writer deletes the row itself (:func:`forget`).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass, fields

from chunkdedup.store.canonical_rows import CANONICAL_COUNT
from chunkdedup.store.schema import PENDING_DOCUMENTS, ROWLESS_PAGE, MetaKey

#: the meta key of the stored counts, and the form of its value (a change to the fields bumps it)
META_KEY: MetaKey = "counts"
FORMAT = 1


@dataclass(frozen=True, slots=True)
class IndexCounts:
    """Rows of the index's tables, as :meth:`Index.stats` reports them."""

    documents: int
    pending_documents: int
    pages: int
    pages_without_text: int
    lines_running: int
    lines_chrome: int
    boilerplate_keys: int
    sources: int
    groups: int
    canonicals: int
    variants: int


def _one(conn: sqlite3.Connection, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0] or 0)


def count(conn: sqlite3.Connection) -> IndexCounts:
    """The counts from the tables (each scan uses the table's smallest index)."""
    stripped = dict(conn.execute("SELECT scope, SUM(lines) FROM stripped GROUP BY scope").fetchall())
    return IndexCounts(
        documents=_one(conn, "SELECT COUNT(*) FROM document_rows"),
        pending_documents=_one(conn, f"SELECT COUNT(*) FROM {PENDING_DOCUMENTS}"),
        # the tables, not the views: a view joins each row to its document
        pages=_one(conn, "SELECT COUNT(*) FROM page_rows")
        + _one(conn, f"SELECT COUNT(*) FROM document_rows d WHERE {ROWLESS_PAGE}"),
        # a scanned page read by OCR has text, though no text layer
        pages_without_text=_one(
            conn, "SELECT COUNT(*) FROM page_rows WHERE has_text=0 AND ocr_confidence IS NULL"
        ),
        lines_running=int(stripped.get("running") or 0),
        lines_chrome=int(stripped.get("chrome") or 0),
        boilerplate_keys=_one(conn, "SELECT COUNT(DISTINCT khash) FROM stripped"),
        sources=_one(conn, "SELECT COUNT(*) FROM source_rows"),
        groups=_one(conn, "SELECT COUNT(*) FROM groups"),
        canonicals=_one(conn, CANONICAL_COUNT),
        variants=_one(conn, "SELECT COUNT(*) FROM variants"),
    )


def stored(conn: sqlite3.Connection) -> IndexCounts | None:
    """The stored counts, or None when there are none this reader may use (none stored, a write since,
    another form): one statement, so the row and the newest run are read in one snapshot."""
    row = conn.execute(
        "SELECT value, (SELECT MAX(id) FROM runs) FROM meta WHERE key=?", (META_KEY,)
    ).fetchone()
    if row is None:
        return None
    try:
        value = json.loads(row[0])
        if value["format"] != FORMAT or value["run"] != row[1]:
            return None
        numbers = value["counts"]
        names = [f.name for f in fields(IndexCounts)]
        if sorted(numbers) != sorted(names) or not all(type(numbers[n]) is int for n in names):
            return None
        return IndexCounts(**{n: numbers[n] for n in names})
    except (ValueError, TypeError, KeyError):
        return None


def keep(conn: sqlite3.Connection) -> IndexCounts:
    """Count the tables and store the counts; call inside the transaction that is to hold them."""
    counts = count(conn)
    run = conn.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    value = json.dumps({"format": FORMAT, "run": run, "counts": asdict(counts)}, sort_keys=True)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (META_KEY, value))
    return counts


def forget(conn: sqlite3.Connection) -> None:
    """Delete the stored counts; call inside a write transaction, before its first change."""
    conn.execute("DELETE FROM meta WHERE key=?", (META_KEY,))
