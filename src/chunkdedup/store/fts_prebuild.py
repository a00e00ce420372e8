"""A deferred FTS5 build in a thread, beside the cluster pass (a first ingest's text index).

A first ingest defers FTS5 (:func:`~chunkdedup.store.textindex.defer_fts`) and used to build it at the
very end, in the writer's connection: 1.2-1.6 s of a 50k-record ingest and 12-13 s at 1M chunks, on
one core while the other was idle. The texts it indexes are final once the chunk phase has written
them: the cluster pass that follows changes a group's cluster, signature and edges, never its
``gid`` or ``text``, and no document context. So the FTS5 tables are built from a read snapshot
taken then, in a private scratch database of a second connection, while the writer clusters; SQLite
releases the GIL for the whole ``INSERT ... SELECT``, so the build takes the other core.

Installing it copies the scratch tables' shadow tables (``_data``, ``_idx``, ``_docsize``,
``_config``) into the index's, from that second connection, in one transaction. They are the same
rows, byte for byte, that ``'rebuild'`` and then ``'optimize'`` write (the same rows inserted in rowid
order into a new table, its segments then merged into one; ``tests/test_fts_prebuild.py`` compares
them). Merged, the groups' index of 100k tiny records takes 42 bytes a record instead of 48; the merge
runs on the build's core, beside the cluster pass. It is done from the second connection, not the
writer's, on purpose: FTS5 keeps each connection's view of its index structure cached and drops it
when another connection commits (``PRAGMA data_version``); a copy through the writer's own
connection would leave its cached structure stale.

Crash safety is the deferral's: the index keeps its ``fts_deferred`` mark until the writer, after the
copy, makes the row triggers again and clears it in one transaction. A run killed before that leaves
the mark, and the next run's sync builds the tables again. A build that failed (a full temp folder,
say) is reported by :meth:`FtsPrebuild.install` as not installed, and the caller rebuilds in place.

Example (the cluster pass runs between ``start`` and ``install``, in the writer's connection):
    >>> build = FtsPrebuild.start(store)  # doctest: +SKIP
    >>> build.install()  # the tables are in the index  # doctest: +SKIP
    True
    >>> build.close()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkdedup.store.core import Store

#: The scratch connection's page cache (KiB): the FTS5 segments it writes, and the index pages read.
SCRATCH_CACHE_KIB = 64 * 1024


@dataclass(frozen=True, slots=True)
class FtsSource:
    """One external-content FTS5 table and the table and columns it indexes."""

    name: str
    content: str
    rowid: str
    column: str


#: The FTS5 tables a first ingest defers, in the order ``'rebuild'`` builds them.
DEFERRED_FTS = (
    FtsSource("groups_fts", "groups", "gid", "text"),
    FtsSource("contexts_fts", "contexts", "dkey", "text"),
)


def _uri(path: Path, mode: str) -> str:
    return f"file:{urllib.parse.quote(str(path.resolve()))}?mode={mode}"


class FtsPrebuild:
    """The deferred FTS5 tables of an index, being built from a snapshot in a thread of their own."""

    def __init__(self, path: Path, tables: tuple[tuple[FtsSource, str], ...]) -> None:
        self._path = path
        self._tables = tables
        self._conn = sqlite3.connect("", uri=True, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 30000")
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, name="chunkdedup-fts5", daemon=True)

    @classmethod
    def start(cls, store: Store) -> FtsPrebuild:
        """Start building the index's deferred FTS5 tables from what it has committed now. The caller
        holds the writer lock, is between transactions, and writes no text of the tables until
        :meth:`install` (see the module's notes)."""
        sql = dict(
            store.conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type='table'"
                f" AND name IN ({','.join('?' * len(DEFERRED_FTS))})",
                [t.name for t in DEFERRED_FTS],
            ).fetchall()
        )
        build = cls(Path(store.path), tuple((t, sql[t.name]) for t in DEFERRED_FTS))
        build._thread.start()
        return build

    def _build(self) -> None:
        c = self._conn
        try:
            c.execute(f"PRAGMA cache_size = -{SCRATCH_CACHE_KIB}")
            c.execute("PRAGMA journal_mode = OFF")  # a scratch file: nothing to roll back or keep
            c.execute("PRAGMA synchronous = OFF")
            c.execute("ATTACH ? AS src", (_uri(self._path, "ro"),))
            c.execute("BEGIN")  # one read snapshot of the index for every table
            for t, sql in self._tables:
                c.execute(sql)  # the index's own CREATE VIRTUAL TABLE: the same options
                c.execute(
                    f"INSERT INTO main.{t.name}(rowid, {t.column})"
                    f" SELECT {t.rowid}, {t.column} FROM src.{t.content} ORDER BY {t.rowid}"
                )
                c.execute(f"INSERT INTO main.{t.name}({t.name}) VALUES('optimize')")
            c.execute("COMMIT")
            c.execute("DETACH src")
        except BaseException as exc:  # reported by install(); the caller rebuilds in place
            self._error = exc
            if c.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # an interrupted build may be rolled back already
                    c.execute("ROLLBACK")

    def install(self) -> bool:
        """Wait for the build and copy its tables into the index, in one transaction of this
        connection; False (nothing written) when the build failed. The caller then makes the row
        triggers again and clears the deferral mark."""
        self._thread.join()
        if self._error is not None:
            return False
        c = self._conn
        c.execute("ATTACH ? AS dst", (_uri(self._path, "rw"),))
        try:
            c.execute("PRAGMA dst.synchronous = NORMAL")  # as the writer's connection has it
            shadows = [
                row[0]
                for t, _ in self._tables
                for row in c.execute(
                    "SELECT name FROM main.sqlite_master WHERE type='table' AND name LIKE ? ESCAPE '\\'"
                    " ORDER BY name",
                    (t.name.replace("_", "\\_") + "\\_%",),
                )
            ]
            c.execute("BEGIN IMMEDIATE")
            try:
                for name in shadows:
                    c.execute(f"DELETE FROM dst.{name}")
                    c.execute(f"INSERT INTO dst.{name} SELECT * FROM main.{name}")
                c.execute("COMMIT")
            except BaseException:
                if c.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # the error that caused it is the one to see
                        c.execute("ROLLBACK")
                raise
        finally:
            c.execute("DETACH dst")
        return True

    @property
    def error(self) -> BaseException | None:
        """Why the build failed (``None``: it did not, or has not finished)."""
        return self._error

    def close(self) -> None:
        """Stop a build still running (an interrupt) and drop the scratch database."""
        if self._thread.is_alive():
            self._conn.interrupt()
            self._thread.join()
        self._conn.close()


__all__ = ["DEFERRED_FTS", "FtsPrebuild", "FtsSource"]
