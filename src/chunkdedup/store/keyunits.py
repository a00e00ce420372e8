"""Units per boilerplate candidate key, kept between runs so a run recounts only the keys it changed.

Deciding the corpus chrome needs, for every counted candidate key, the number of distinct units
(families, else documents) whose documents hold it. Counting them all is a pass over every
``doc_keys`` row joined to its document (50k one-chunk records: 0.1-0.2 s), which an incremental run
that changed 1% of the documents would pay in full. So:

- ``key_units`` holds the count of every key counted in at least ``min_units`` units, as of the
  boilerplate settings stamped in meta (:data:`SETTINGS_KEY`); a key below ``min_units`` has no row;
- while it is stamped, every write that changes a document's counted keys or its unit (its keys are
  rewritten with it: :meth:`BoilerplateTables.set_many_doc_keys`,
  :meth:`DocumentTables.remove_document`) marks the keys the document held and holds in
  ``stale_keys``, in the same transaction;
- :func:`counts` recounts the marked keys only, stores their counts and clears the marks in one
  transaction; under other settings (or none stamped: a new index) it counts every key once.

So the counts always equal a full count of the tables (``tests/test_ingest.py`` compares them after
edits, additions, removals and unit changes), and a killed run leaves marks that the next one recounts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from chunkdedup.store.chunk_tables import execute_for_ids, rows_for_ids
from chunkdedup.store.schema import DOC_UNIT, MetaKey

#: meta key: the boilerplate settings the kept counts are of (absent: none kept)
SETTINGS_KEY: MetaKey = "key_units_settings"

_COUNT_ALL = (
    f"SELECT k.khash, COUNT(DISTINCT {DOC_UNIT}) AS n FROM doc_keys k JOIN documents d USING(doc_id)"
    " WHERE k.counted = 1 GROUP BY k.khash HAVING n >= ?"
)
_COUNT_SOME = (
    f"SELECT k.khash, COUNT(DISTINCT {DOC_UNIT}) FROM doc_keys k JOIN documents d USING(doc_id)"
    " WHERE k.counted = 1 AND k.khash IN ({}) GROUP BY k.khash"
)


def kept(conn: sqlite3.Connection) -> bool:
    """Whether counts are kept (so changed keys must be marked)."""
    return conn.execute("SELECT 1 FROM meta WHERE key=?", (SETTINGS_KEY,)).fetchone() is not None


def mark_docs(conn: sqlite3.Connection, doc_ids: Sequence[str]) -> None:
    """Mark the counted keys the documents hold now (call before their keys are deleted or rewritten,
    and :func:`mark_keys` with the new ones after), when counts are kept."""
    if doc_ids and kept(conn):
        conn.executemany(
            "INSERT OR IGNORE INTO stale_keys(khash) SELECT khash FROM doc_keys WHERE doc_id=? AND counted=1",
            [(d,) for d in doc_ids],
        )


def mark_keys(conn: sqlite3.Connection, khashes: Sequence[int]) -> None:
    """Mark keys (a document's new counted keys), when counts are kept."""
    if khashes and kept(conn):
        conn.executemany("INSERT OR IGNORE INTO stale_keys(khash) VALUES (?)", [(k,) for k in khashes])


def counts(conn: sqlite3.Connection, min_units: int, settings: str) -> dict[int, int]:
    """Units per counted key, for keys in at least ``min_units`` units: the kept counts with the marked
    keys recounted, or (under other settings than the kept ones) every key counted. Stores what it
    counted; call inside a write transaction."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (SETTINGS_KEY,)).fetchone()
    if row is not None and row[0] == settings:
        stale = [r[0] for r in conn.execute("SELECT khash FROM stale_keys ORDER BY khash")]
        fresh = [(k, n) for k, n in rows_for_ids(conn, _COUNT_SOME, stale) if n >= min_units]
        execute_for_ids(conn, "DELETE FROM key_units WHERE khash IN ({})", stale)
    else:
        conn.execute("DELETE FROM key_units")
        fresh = [(r[0], r[1]) for r in conn.execute(_COUNT_ALL, (min_units,))]
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (SETTINGS_KEY, settings))
    conn.executemany("INSERT INTO key_units(khash, units) VALUES (?, ?)", fresh)
    conn.execute("DELETE FROM stale_keys")
    return {r[0]: r[1] for r in conn.execute("SELECT khash, units FROM key_units")}


__all__ = ["SETTINGS_KEY", "counts", "kept", "mark_docs", "mark_keys"]
