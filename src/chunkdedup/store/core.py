"""The index: one SQLite file (WAL) holding documents, pages, boilerplate statistics, canonical
chunks with their sources, ingest runs, and an FTS5 table kept in sync by triggers.

Readers work while an ingest runs (WAL). Writers take an exclusive ``flock`` on the index file for
the whole run: a second writer waits up to ``lock_timeout`` seconds, then fails with a clear message.
Every write happens inside :meth:`Store.transaction`, so a run killed at any moment leaves the last
committed state, and re-running completes it. Each write transaction also deletes the stored whole-index
counts, and the successful end of a writer stores them again (:mod:`~chunkdedup.store.counts`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkdedup.config import Config
from chunkdedup.errors import IndexBusyError, MigrationPendingError, SchemaError
from chunkdedup.normalize import key_id, running_lines
from chunkdedup.store import counts, keyunits
from chunkdedup.store.checkpointer import WalCheckpointer
from chunkdedup.store.chunk_tables import (
    ChunkTables,
    execute_for_ids,
    insert_rows,
    pack_bands,
    packed_band_keys,
    rows_for_ids,
)
from chunkdedup.store.index_errors import SQLITE_FAILURES, index_error
from chunkdedup.store.pagetext import PageCodec
from chunkdedup.store.readonly import read_uri
from chunkdedup.store.schema import CLEAN_TEXT, MIGRATIONS, RAW_TEXT
from chunkdedup.types import (
    ContextSource,
    Document,
    DocumentKeys,
    KeyedDocument,
    KnownFile,
    Page,
    StrippedLine,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: The page cache of each connection, KiB.
PAGE_CACHE_KIB = 256 * 1024
#: The SQLite page size of a new index file (SQLite's default is 4 KiB). Rows of 1-4 KB (a page's or a
#: group's text) leave much of a 4 KiB B-tree page unused: 50k one-chunk records took 272 MB at 4 KiB,
#: 245 at 8 KiB, 236 at 16 KiB and 234 at 32 KiB (the same index, VACUUMed at each size).
NEW_FILE_PAGE_BYTES = 16384
#: While a writer holds the index, the WAL is folded into the file once it reaches this many bytes
#: (SQLite's default is 1,000 pages). A write transaction of an ingest touches thousands of pages spread
#: over the B-trees, so with the default every commit checkpoints (and syncs the file); with 256 MiB
#: (64k pages of 4 KiB, 16k of 16 KiB) a page written by many commits is copied back once. It is the
#: safety net: a thread beside the writer checkpoints from 32 MiB on (:mod:`~chunkdedup.store.checkpointer`),
#: so the writer's commits rarely copy anything back themselves.
WRITER_AUTOCHECKPOINT_BYTES = 256 << 20
#: The indexes of groups a first ingest builds after its chunk phase (:meth:`Store.defer_indexes`):
#: the chunk phase of an index with no groups reads none of them (the cluster pass reads groups by
#: canonical, the unsigned and the unverified groups through them). 1M chunks: chunk phase 95 -> 80 s,
#: cluster phase 52 -> 44 s, the three made in 1.1 s (``benchmarks/README.md``).
DEFERRED_INDEXES = ("groups_canonical", "groups_unedged", "groups_unsigned")
_DEFERRED_INDEXES = "deferred_indexes"
#: The format of the doc_keys rows :meth:`Store.set_many_doc_keys` writes: they also hold each document's
#: strippable keys (migration 0004). An index whose meta records an older one has every document's keys
#: recomputed once (``pipeline.refresh_stale_keys``); a new index starts at this one.
DOC_KEYS_FORMAT = "2"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    """An open index file. Use :meth:`open`; close it (or use ``with``) when done."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_fd: int | None) -> None:
        self.path = path
        self.conn = conn
        self.chunks = ChunkTables(conn)
        self._lock_fd = lock_fd
        self._locked = False
        self._open_run: int | None = None  # begun, not finished: marked 'failed' if the writer leaves
        self._has_meta = True  # False while the migrations of a new file have not made `meta` yet
        self._wrote = False  # a write transaction began while this writer held the lock
        self.codec = PageCodec({}, self._read_dict)
        # every read of page text goes through page_text() (schema.RAW_TEXT, CLEAN_TEXT)
        conn.create_function("page_text", 1, self._decode, deterministic=True)
        # migration 0018's (typeshed's aggregate protocol has finalize() return int only)
        conn.create_aggregate("band_keys", 1, _BandKeys)  # type: ignore[arg-type]

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, *, create: bool = False, readonly: bool = False) -> Store:
        """Open (or with ``create=True`` create) an index file and bring its schema up to date."""
        p = Path(path)
        if not p.exists() and not create:
            raise SchemaError(f"index {p} does not exist: run `chunkdedup ingest PATH --index {p}` first")
        if p.exists() and p.is_dir():
            raise SchemaError(f"index {p} is a folder: give the path of an index file")
        try:
            if readonly:
                conn = sqlite3.connect(read_uri(p), uri=True, isolation_level=None)
            else:
                conn = sqlite3.connect(p, isolation_level=None)
        except sqlite3.Error as e:
            raise index_error(p, e) from None
        try:
            if not readonly and conn.execute("PRAGMA page_count").fetchone()[0] == 0:
                # both before the first table; incremental: pages freed by a run go back (reclaim)
                conn.execute(f"PRAGMA page_size = {NEW_FILE_PAGE_BYTES}")
                conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            conn.execute("PRAGMA busy_timeout = 30000")
            # SQLite's default page cache is 2 MB: on a multi-GB index every B-tree step of the
            # per-document refreshes misses it. Up to 256 MiB (allocated only as pages are used):
            # a 100k-chunk ingest took 65 s instead of 80 s, measured in both orders.
            conn.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")
            if not readonly:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            store = cls(p, conn, None if readonly else os.open(p, os.O_RDONLY))
            if readonly:
                store._migrate(readonly)
            else:
                with store.writer():  # two first ingests must not both lay out the schema
                    store._migrate(readonly)
            store.codec = PageCodec(
                dict(store.conn.execute("SELECT dict_id, data FROM text_dicts").fetchall()), store._read_dict
            )
        except (*SQLITE_FAILURES, OSError) as e:
            conn.close()
            raise index_error(p, e) from None
        return store

    def _migrate(self, readonly: bool) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        self._has_meta = "meta" in tables
        if tables and "migrations" not in tables:
            raise SchemaError(
                f"{self.path} is an SQLite file but not a chunkdedup index: give another --index path"
            )
        if not tables and readonly:
            raise SchemaError(f"index {self.path} is empty: run `chunkdedup ingest` first")
        known = [name for name, _ in MIGRATIONS]
        applied: list[str] = []
        if "migrations" in tables:
            applied = [r[0] for r in self.conn.execute("SELECT name FROM migrations ORDER BY name")]
        newer = sorted(set(applied) - set(known))
        if newer:
            raise SchemaError(
                f"index {self.path} was written by a newer chunkdedup (migrations {newer}): "
                "upgrade chunkdedup"
            )
        pending = [(n, sql) for n, sql in MIGRATIONS if n not in applied]
        if pending and readonly:
            raise MigrationPendingError(
                f"index {self.path} was written by an older chunkdedup and needs migrations "
                f"{[n for n, _ in pending]}: open it writable once to apply them (any ingest into it, e.g. "
                f"`chunkdedup ingest PATH --index {self.path}`, or Index.open), then read it again"
            )
        for name, sql in pending:
            with self.transaction():
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied TEXT)"
                )
                for statement in _statements(sql):
                    self.conn.execute(statement)
                self.conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, _now()))
            self._has_meta = True  # the first migration makes it
        if not tables:  # a new index: nothing in it was written in an older format
            with self.transaction():
                self.set_meta("doc_keys_format", DOC_KEYS_FORMAT)

    @staticmethod
    def copy(src: Path, dst: Path) -> None:
        """A consistent copy of an index file (SQLite's backup API), for dry runs. The file is copied as
        it is, even one that an older chunkdedup wrote: opening the copy migrates the copy."""
        try:
            source = sqlite3.connect(read_uri(src), uri=True)
        except sqlite3.Error as e:
            raise index_error(src, e) from None
        try:
            target = sqlite3.connect(dst)
            try:
                source.backup(target)
            finally:
                target.close()
        except SQLITE_FAILURES as e:
            raise index_error(src, e) from None
        finally:
            source.close()

    def _decode(self, value: str | bytes | None) -> str | None:
        return self.codec.decode(value)

    def _keep_dict(self) -> None:
        """Store the dictionary new page text is compressed with, in the transaction that writes such
        text (a rolled-back transaction that trained it must not leave later frames undecodable)."""
        active = self.codec.active
        if active is not None:
            self.conn.execute("INSERT OR IGNORE INTO text_dicts(dict_id, data) VALUES (?, ?)", active)

    def _read_dict(self, dict_id: int) -> bytes | None:
        """A dictionary another connection stored after this one read them (a reader opened before the
        writer trained it sees the committed row on a connection of its own)."""
        conn = sqlite3.connect(read_uri(self.path), uri=True)
        try:
            row = conn.execute("SELECT data FROM text_dicts WHERE dict_id=?", (dict_id,)).fetchone()
        finally:
            conn.close()
        return bytes(row[0]) if row is not None else None

    def close(self) -> None:
        self.conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # after the connection, so SQLite's own locks are never dropped early
            self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- locking and transactions --------------------------------------------------------------
    @contextlib.contextmanager
    def writer(self, timeout: float = 30.0) -> Iterator[None]:
        """Hold the index's single-writer lock; wait up to ``timeout`` seconds for it (re-entrant)."""
        if self._locked:
            yield
            return
        if self._lock_fd is None:
            raise SchemaError(f"index {self.path} was opened read-only: it cannot be written")
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise IndexBusyError(
                        f"index {self.path} is being written by another process (waited {timeout:g} s): "
                        "wait for that ingest to finish, then run again"
                    ) from None
                time.sleep(0.05)
        self._locked = True
        self._wrote = False
        page_bytes = int(self.conn.execute("PRAGMA page_size").fetchone()[0])
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {WRITER_AUTOCHECKPOINT_BYTES // page_bytes}")
        checkpointer = WalCheckpointer(self.path)
        try:
            with checkpointer:  # the WAL copied back beside the writer, not inside its commits
                yield
            if self._wrote and not self.conn.in_transaction:
                self._keep_counts()
        finally:
            try:
                self._abandon_run()
                self.conn.execute("PRAGMA wal_autocheckpoint = 1000")
                if not self.conn.in_transaction:
                    self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # readers are never waited for
            finally:
                self._locked = False
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def keep_counts(self) -> None:
        """Count the tables and store the whole-index counts :meth:`Index.stats` reads, under the
        writer lock. The end of every writer that wrote does it; an index last written by an older
        chunkdedup has none until then (its readers count the tables).

        Example:
            >>> with Store.open("index.sqlite") as store:  # doctest: +SKIP
            ...     store.keep_counts()
        """
        with self.writer():
            with self.transaction() as c:
                counts.keep(c)
            self._wrote = False  # these are the counts of what the writer wrote

    def _keep_counts(self) -> None:
        """After a writer's writes. A failure leaves the counts deleted (each write deleted them), which
        readers take as "count the tables": the writes themselves stand."""
        with contextlib.suppress(*SQLITE_FAILURES):
            self.keep_counts()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception. Its first statement deletes the
        stored whole-index counts: no committed state holds counts its tables may have left behind."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self._wrote = True
            if self._has_meta:
                counts.forget(self.conn)
            yield self.conn
        except BaseException:
            # SQLite may have rolled back already (a full disk does): a failing ROLLBACK must not
            # hide the error that caused it behind a second traceback.
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- meta ----------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key=?", (key,))

    # -- schema objects a first ingest makes once ----------------------------------------------
    def drop_keeping_sql(self, kind: str, names: Sequence[str], key: str) -> None:
        """Drop the schema objects ``names`` of ``kind`` ('index', 'trigger') that exist, their SQL kept
        in meta ``key`` for :meth:`make_again`. Within the caller's transaction."""
        marks = ",".join("?" * len(names))
        rows = self.conn.execute(
            f"SELECT name, sql FROM sqlite_master WHERE type=? AND name IN ({marks}) ORDER BY name",
            (kind, *names),
        ).fetchall()
        for name, _ in rows:
            self.conn.execute(f"DROP {kind.upper()} {name}")
        self.set_meta(key, json.dumps(rows))

    def make_again(self, kind: str, key: str) -> None:
        """Make the schema objects :meth:`drop_keeping_sql` dropped under meta ``key``, as they were.
        Within the caller's transaction."""
        for name, sql in json.loads(self.meta(key) or "[]"):
            self.conn.execute(f"DROP {kind.upper()} IF EXISTS {name}")
            self.conn.execute(sql)
        self.delete_meta(key)

    def defer_indexes(self) -> bool:
        """On an index with no groups yet, drop the indexes of groups that the chunk phase does not
        read (:data:`DEFERRED_INDEXES`): :meth:`build_deferred_indexes` makes them again, as they
        were, once all groups are written. Each batch of a first ingest inserts its groups at random
        places of each of them, so every batch rewrote most of their pages. True when they are
        deferred (now, or still, by a run that was killed: the next chunk phase builds them). Queries
        meanwhile read the groups without them (slower, the same rows)."""
        if self.meta(_DEFERRED_INDEXES) is not None:
            return True
        if self.chunks.has_groups():
            return False
        with self.transaction():
            self.drop_keeping_sql("index", DEFERRED_INDEXES, _DEFERRED_INDEXES)
        return True

    def build_deferred_indexes(self) -> bool:
        """Make the indexes :meth:`defer_indexes` dropped (one sort of the groups each, one
        transaction). True when there were any."""
        if self.meta(_DEFERRED_INDEXES) is None:
            return False
        with self.transaction():
            self.make_again("index", _DEFERRED_INDEXES)
        return True

    # -- runs ----------------------------------------------------------------------------------
    def begin_run(self, paths: Sequence[str], manifest: str | None, config: dict[str, Any]) -> int:
        """Record a new run as 'running'. Under the writer lock (every ingest and remove), an earlier
        run still marked 'running' is marked 'failed', finished now: the lock proves it is not alive (a
        process killed with SIGKILL, or a machine that went down, could not mark its own run)."""
        with self.transaction() as c:
            if self._locked:
                c.execute("UPDATE runs SET finished=?, status='failed' WHERE status='running'", (_now(),))
            cur = c.execute(
                "INSERT INTO runs(started, status, paths, manifest, config) VALUES (?, 'running', ?, ?, ?)",
                (_now(), json.dumps(list(paths)), manifest, json.dumps(config, sort_keys=True)),
            )
            assert cur.lastrowid is not None
            self._open_run = cur.lastrowid
            return cur.lastrowid

    def reclaim(self) -> None:
        """Give the file's free pages back (a run's staging rows, replaced pages): a first ingest of 50k
        records left 3 MB of them. A no-op on an index made before auto_vacuum was set (its free pages
        are reused by later writes)."""
        # the pragma frees a page each time the statement is stepped; execute() steps it once,
        # executescript() until it is done. Outside a transaction: executescript commits first.
        if not self.conn.in_transaction:
            self.conn.executescript("PRAGMA incremental_vacuum;")

    def finish_run(self, run_id: int, summary: dict[str, Any]) -> None:
        with self.transaction() as c:
            c.execute(
                "UPDATE runs SET finished=?, status='done', summary=? WHERE id=?",
                (_now(), json.dumps(summary, sort_keys=True), run_id),
            )
        self._open_run = None

    def _abandon_run(self) -> None:
        """A run that was begun and never finished (an exception left the writer) is marked 'failed',
        so ``runs`` never shows a dead run as 'running'. Best effort: the index may be what broke."""
        run_id, self._open_run = self._open_run, None
        if run_id is None:
            return
        with contextlib.suppress(sqlite3.Error):
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self.conn.execute("UPDATE runs SET finished=?, status='failed' WHERE id=?", (_now(), run_id))

    def last_config(self) -> Config | None:
        """The config of the last ingest run that finished, if any."""
        row = self.conn.execute(
            "SELECT config FROM runs WHERE status='done' AND paths != '[]' ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else Config.from_dict(json.loads(row[0]), source=f"{self.path} (last run)")

    def runs(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT id, started, finished, status, paths, manifest FROM runs ORDER BY id"
        )
        return [
            {
                "id": r[0],
                "started": r[1],
                "finished": r[2],
                "status": r[3],
                "paths": json.loads(r[4]),
                "manifest": r[5],
            }
            for r in rows
        ]

    # -- files and documents -------------------------------------------------------------------
    def file_hash(self, path: str) -> str | None:
        row = self.conn.execute("SELECT content_hash FROM files WHERE path=?", (path,)).fetchone()
        return None if row is None else row[0]

    def put_file(
        self, path: str, content_hash: str | None, status: str, reason: str | None, run_id: int
    ) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files(path, content_hash, status, reason, run_id) VALUES (?, ?, ?, ?, ?)",
            (path, content_hash, status, reason, run_id),
        )

    def file_paths(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT path FROM files ORDER BY path")]

    def forget_file(self, path: str) -> None:
        """Drop a file's row (its last document was removed)."""
        self.conn.execute("DELETE FROM files WHERE path=?", (path,))

    def reread_file(self, path: str) -> None:
        """Make the next ingest parse the file again (a JSONL/Parquet file that keeps other records)."""
        self.conn.execute("UPDATE files SET content_hash=NULL WHERE path=?", (path,))

    def known_file(self, path: str) -> KnownFile:
        """What the index holds of a file: its content hash while it has documents, and its documents'
        ``(content hash, doc id, pages)`` rows (as read: an unchanged file needs none of them)."""
        rows = self.conn.execute(
            "SELECT content_hash, doc_id, n_pages FROM documents WHERE file_path=? ORDER BY doc_id", (path,)
        ).fetchall()
        return KnownFile(self.file_hash(path) if rows else None, tuple(rows))

    def has_documents(self) -> bool:
        """Whether the index holds any document (a first ingest's index holds none)."""
        return self.conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None

    def known_hash(self, path: str) -> str | None:
        """:meth:`known_file`'s content hash alone (two index lookups): enough to tell an unchanged file."""
        has = self.conn.execute("SELECT 1 FROM documents WHERE file_path=? LIMIT 1", (path,)).fetchone()
        return self.file_hash(path) if has is not None else None

    def docs_of_file(self, path: str) -> list[str]:
        rows = self.conn.execute("SELECT doc_id FROM documents WHERE file_path=? ORDER BY doc_id", (path,))
        return [r[0] for r in rows]

    def doc_owner(self, doc_id: str) -> str | None:
        row = self.conn.execute("SELECT file_path FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
        return None if row is None else row[0]

    def doc_owners(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """The file of each of ``doc_ids`` the index holds (one statement per 500 ids)."""
        sql = "SELECT doc_id, file_path FROM documents WHERE doc_id IN ({})"
        return dict(rows_for_ids(self.conn, sql, sorted(set(doc_ids))))

    def changed_documents(self, docs: Sequence[Document]) -> set[str]:
        """The ids of ``docs`` not stored exactly as they are (content hash, metadata, place): an
        unchanged record of a JSONL or Parquet file that changed elsewhere is not among them."""
        ids = sorted({doc.doc_id for doc in docs})
        stored = {r[0]: tuple(r[1:]) for r in rows_for_ids(self.conn, _DOCUMENT_ROWS, ids)}
        # a row is made only to be compared with a stored one (a first ingest's documents: none)
        return {d.doc_id for d in docs if d.doc_id not in stored or stored[d.doc_id] != document_row(d)}

    def put_documents(self, items: Sequence[tuple[Document, DocumentKeys]], run_id: int) -> None:
        """Store parsed documents (pages and boilerplate candidate keys) as pending chunking, a few
        statements for the whole batch.

        A new version of a stored document first loses its old sources, so no source ever points
        into page text that is being replaced.
        """
        if not items:
            return
        c = self.conn
        rows = {doc.doc_id: document_row(doc) for doc, _ in items}
        ids = [doc.doc_id for doc, _ in items]
        changed = self.chunks.docs_with_sources(ids)
        if changed:
            self.chunks.replace_sources(changed, (), run_id)
        # A chunked document's new version is written over its rows, not deleted and inserted again:
        # a row keeps its place, and the indexes of unchanged columns (the file, the family, the
        # department, the page key) are not written (an edited record dirtied one leaf of each, at
        # random). The others (new ones: every document of a first ingest) are inserted as they were.
        over = set(changed)
        doc_rows = [(doc.doc_id, *rows[doc.doc_id], run_id) for doc, _ in items]
        inserted = [r for r in doc_rows if r[0] not in over]
        rewritten = [r for r in doc_rows if r[0] in over]
        c.executemany(_REPLACE_DOCUMENT, inserted)
        c.executemany(_UPSERT_DOCUMENT, rewritten)
        c.executemany(_MOVE_DOCUMENT, [(r[1], r[5], r[6], r[0], r[1], r[5], r[6]) for r in rewritten])
        execute_for_ids(c, "DELETE FROM pages WHERE doc_id IN ({})", [r[0] for r in inserted])
        c.executemany(
            "DELETE FROM pages WHERE doc_id=? AND page NOT IN (SELECT value FROM json_each(?))",
            [(d.doc_id, json.dumps([p.number for p in d.pages])) for d, _ in items if d.doc_id in over],
        )
        codec = self.codec
        codec.learn(p.text for doc, _ in items for p in doc.pages)  # read only until it is trained
        self._keep_dict()
        page_rows = [
            (doc.doc_id, p.number, int(p.has_text_layer), codec.encode(p.text))
            for doc, _ in items
            for p in doc.pages
        ]
        c.executemany(
            "INSERT INTO pages(doc_id, page, has_text, raw_text, clean_text) VALUES (?, ?, ?, ?, NULL)",
            [r for r in page_rows if r[0] not in over],
        )
        over_pages = [r for r in page_rows if r[0] in over]
        c.executemany(_UPSERT_PAGE, over_pages)
        c.executemany(
            "UPDATE pages SET has_text=? WHERE doc_id=? AND page=? AND has_text IS NOT ?",
            [(r[2], r[0], r[1], r[2]) for r in over_pages],
        )
        self.set_many_doc_keys([(doc.doc_id, keys) for doc, keys in items])

    def set_many_doc_keys(self, items: Sequence[tuple[str, DocumentKeys]]) -> None:
        """Documents' candidate keys (``counted=1``) and the other keys strip() could remove (0); the
        corpus chrome is to be decided again (:meth:`chrome_decided`)."""
        if items:
            self.set_meta(_CHROME_STALE, "1")
        ids = [doc_id for doc_id, _ in items]
        keyunits.mark_docs(self.conn, ids)  # their units may change too
        execute_for_ids(self.conn, "DELETE FROM doc_keys WHERE doc_id IN ({})", ids)
        rows: list[tuple[int, str, int]] = []
        for doc_id, keys in items:
            # each key hashed once (a one-line record's only key is both)
            hashes = {key_id(k): 0 for k in keys.strippable - keys.candidates} | {
                key_id(k): 1 for k in keys.candidates
            }
            rows.extend((h, doc_id, counted) for h, counted in sorted(hashes.items()))
        self.conn.executemany("INSERT INTO doc_keys(khash, doc_id, counted) VALUES (?, ?, ?)", rows)
        keyunits.mark_keys(self.conn, sorted({r[0] for r in rows if r[2] == 1}))

    def remove_document(self, doc_id: str, run_id: int) -> int:
        """Remove a document and only its sources; returns how many canonicals it touched."""
        touched = self.chunks.drop_doc_sources(doc_id, run_id)
        self.set_meta(_CHROME_STALE, "1")  # its units and keys no longer count
        keyunits.mark_docs(self.conn, [doc_id])
        for table in ("pages", "doc_keys", "doc_chrome", "stripped", "contexts", "documents"):
            self.conn.execute(f"DELETE FROM {table} WHERE doc_id=?", (doc_id,))
        return touched

    def remove_file(self, path: str, run_id: int) -> list[str]:
        docs = self.docs_of_file(path)
        for doc_id in docs:
            self.remove_document(doc_id, run_id)
        self.conn.execute("DELETE FROM files WHERE path=?", (path,))
        return docs

    # -- document context ----------------------------------------------------------------------
    def context_sources(self, doc_ids: Sequence[str]) -> list[ContextSource]:
        """What the contexts of these documents are made from (ids not in the index are left out)."""
        out: list[ContextSource] = []
        for lo in range(0, len(doc_ids), 500):
            part = list(doc_ids[lo : lo + 500])
            marks = ",".join("?" * len(part))
            running: dict[str, list[str]] = {}
            for doc_id, example in self.conn.execute(
                f"SELECT doc_id, example FROM stripped WHERE scope='running' AND doc_id IN ({marks})"
                " ORDER BY doc_id, pages DESC, khash",
                part,
            ):
                running.setdefault(doc_id, []).append(example)
            rows = self.conn.execute(
                f"SELECT doc_id, file_path, metadata, title FROM documents WHERE doc_id IN ({marks})"
                " ORDER BY doc_id",
                part,
            )
            # most records hold no metadata: "{}" is not parsed (50k json.loads of it: 0.12-0.14 s)
            out.extend(
                ContextSource(
                    d,
                    path,
                    {} if meta == "{}" else json.loads(meta),
                    title,
                    running_lines(running.get(d, ())),
                )
                for d, path, meta, title in rows
            )
        return out

    def docs_without_context(self, run_id: int, chunked: Sequence[str] | None = None) -> list[str]:
        """Documents with no context yet, or chunked (so perhaps stripped anew) in run ``run_id``.

        ``chunked``: the documents run ``run_id`` stored or chunked (every one whose row names the run),
        when the caller knows them. Then, when every document has a context (as many contexts as
        documents: a context is only written for a document and removed with it), they are the answer,
        and the documents are not scanned (an incremental run's contexts: 40 ms of a 50k-document join).
        """
        if chunked is not None and _count(self.conn, "documents") == _count(self.conn, "contexts"):
            return sorted(set(chunked))
        rows = self.conn.execute(
            "SELECT d.doc_id FROM documents d LEFT JOIN contexts c USING(doc_id)"
            " WHERE c.doc_id IS NULL OR d.run_id = ? ORDER BY d.doc_id",
            (run_id,),
        )
        return [r[0] for r in rows]

    def put_contexts(self, rows: Sequence[tuple[str, str]]) -> None:
        """Set ``(doc_id, context text)`` rows; an unchanged text is not re-indexed. One statement for
        all of them (FTS5 triggers: see :func:`~chunkdedup.store.chunk_tables.staged_rows`)."""
        if not rows:
            return
        insert_rows(
            self.conn,
            _CONTEXT_STAGE,
            "contexts",
            "doc_id, text",
            rows,
            " ON CONFLICT(doc_id) DO UPDATE SET text=excluded.text WHERE text IS NOT excluded.text",
        )

    def load_pages(self, doc_id: str, *, clean: bool = False) -> tuple[Page, ...]:
        """A document's pages as parsed, or (``clean``) as stripped; a stripped page of a document not
        chunked yet reads as its raw text."""
        column = CLEAN_TEXT if clean else RAW_TEXT
        rows = self.conn.execute(
            f"SELECT page, {column}, has_text FROM pages WHERE doc_id=? ORDER BY page",
            (doc_id,),
        )
        return tuple(Page(r[0], r[1] or "", bool(r[2])) for r in rows)

    def doc_ids(self, *, stale_config: str | None = None) -> list[str]:
        """All document ids, or the indexed ones chunked under another config than ``stale_config``
        (none, without a scan, when every indexed one is known to be chunked under it:
        :meth:`set_chunked_config`)."""
        if stale_config is None:
            rows = self.conn.execute("SELECT doc_id FROM documents ORDER BY doc_id")
        elif self.chunked_under(stale_config):
            return []
        else:
            rows = self.conn.execute(
                "SELECT doc_id FROM documents WHERE state='indexed' AND config_hash IS NOT ? ORDER BY doc_id",
                (stale_config,),
            )
        return [r[0] for r in rows]

    # -- boilerplate statistics ----------------------------------------------------------------
    def unit_total(self) -> int:
        """The distinct units of the documents (``COUNT(DISTINCT unit)``), counted on the family index:
        a unit is ``family:F`` for a document with a family F, else ``doc:ID`` (``Document.unit``), so
        the units are the distinct families plus the documents with none (a scan of every document's
        row for its unit took 20 ms of an incremental run at 50k documents; this, about 3)."""
        return int(self.conn.execute(_UNIT_TOTAL).fetchone()[0])

    def kept_key_unit_counts(self, min_units: int, settings: str) -> dict[int, int]:
        """:meth:`key_unit_counts`, from the counts kept under the boilerplate ``settings`` with only
        the keys changed since recounted (:mod:`~chunkdedup.store.keyunits`); stores them (call inside
        a write transaction)."""
        return keyunits.counts(self.conn, min_units, settings)

    def key_unit_counts(self, min_units: int) -> dict[int, int]:
        """Units (families or documents) per candidate key, for keys in at least ``min_units``."""
        rows = self.conn.execute(
            "SELECT k.khash, COUNT(DISTINCT d.unit) AS n FROM doc_keys k JOIN documents d USING(doc_id)"
            " WHERE k.counted = 1 GROUP BY k.khash HAVING n >= ?",
            (min_units,),
        )
        return {r[0]: r[1] for r in rows}

    def set_chrome(self, chrome: dict[int, int], settings: str | None = None) -> None:
        """The corpus-chrome keys; ``settings`` (a stamp of the boilerplate settings they were decided
        under) records them as current until a document's keys change (:meth:`chrome_decided`)."""
        self.conn.execute("DELETE FROM chrome")
        self.conn.executemany("INSERT INTO chrome(khash, units) VALUES (?, ?)", sorted(chrome.items()))
        if settings is not None:
            self.set_meta(_CHROME_SETTINGS, settings)
            self.delete_meta(_CHROME_STALE)

    def chrome_decided(self, settings: str) -> bool:
        """Whether the stored chrome was decided under ``settings`` and no document's keys or unit
        changed since (each change marks it stale in its own transaction, so a killed run leaves it
        stale): then deciding it again, a pass over every key, would give it again."""
        return self.meta(_CHROME_STALE) is None and self.meta(_CHROME_SETTINGS) == settings

    def doc_chrome_ids(self, doc_ids: Sequence[str]) -> dict[str, frozenset[int]]:
        """The chrome keys each of ``doc_ids`` holds among its strippable keys (a document holding
        none is left out)."""
        found: dict[str, set[int]] = {}
        sql = "SELECT k.doc_id, k.khash FROM doc_keys k JOIN chrome USING(khash) WHERE k.doc_id IN ({})"
        for doc_id, khash in rows_for_ids(self.conn, sql, sorted(set(doc_ids))):
            found.setdefault(doc_id, set()).add(khash)
        return {doc_id: frozenset(ids) for doc_id, ids in found.items()}

    def docs_to_chunk(self, config_hash: str) -> list[str]:
        """Pending documents, documents chunked under another config, and documents whose chrome
        keys (their strippable keys that are chrome now, counted or not) differ from those they were
        stripped with. When every indexed document is known to be chunked under ``config_hash``
        (:meth:`set_chunked_config`), the pending ones are read by their index, not every document."""
        params: tuple[str, ...] = ()
        mine = "SELECT doc_id FROM documents WHERE state='pending'"
        if not self.chunked_under(config_hash):
            mine += " OR config_hash IS NOT ?"
            params = (config_hash,)
        rows = self.conn.execute(
            f"""
            {mine}
            UNION
            SELECT k.doc_id FROM doc_keys k JOIN chrome USING(khash)
              LEFT JOIN doc_chrome dc ON dc.doc_id=k.doc_id AND dc.khash=k.khash WHERE dc.doc_id IS NULL
            UNION
            SELECT dc.doc_id FROM doc_chrome dc LEFT JOIN chrome c USING(khash) WHERE c.khash IS NULL
            ORDER BY 1
            """,
            params,
        )
        return [r[0] for r in rows]

    def set_chunked_config(self, config_hash: str) -> None:
        """Record that every indexed document is chunked under ``config_hash`` (after a chunk phase
        chunked every document :meth:`docs_to_chunk` gave for it). :meth:`replace_chunks` under
        another config forgets it in the same transaction, so a killed run never leaves it wrong."""
        self.set_meta(_CHUNKED_CONFIG, config_hash)

    def chunked_under(self, config_hash: str) -> bool:
        """Whether every indexed document is known to be chunked under ``config_hash``."""
        return self.meta(_CHUNKED_CONFIG) == config_hash

    # -- chunks and canonicals -----------------------------------------------------------------
    def replace_chunks(
        self,
        docs: Sequence[KeyedDocument],
        config_hash: str,
        run_id: int,
        band_keys: Sequence[tuple[Sequence[str], npt.NDArray[np.int64]]] = (),
    ) -> None:
        """Replace documents' cleaned text, sources and stripped lines; mark them indexed.

        The groups and canonicals their old and new sources touch are re-derived once for the whole
        batch (a transaction's worth of documents), not once per document. ``band_keys``: (group ids,
        their band keys) of a first ingest's batch: a new group is written with its ``signed`` value
        (:meth:`ChunkTables.put_first_bands` writes the band rows).
        """
        c = self.conn
        if self.meta(_CHUNKED_CONFIG) not in (None, config_hash):
            self.delete_meta(_CHUNKED_CONFIG)
        # A page stripping left as it was keeps no second copy: clean_text NULL reads as raw_text
        # (CLEAN_TEXT), which on most pages of most corpora is the whole page. strip() returns a page
        # it removed no line from as it was, so a page without stripped lines is such a page.
        changed = {(d.doc_id, s.page) for d in docs for s in d.stripped}
        self._keep_dict()
        # a document stripped of nothing (most): all its pages' clean text NULL, a statement per 500
        execute_for_ids(
            c,
            "UPDATE pages SET clean_text = NULL WHERE doc_id IN ({}) AND clean_text IS NOT NULL",
            [d.doc_id for d in docs if not d.stripped],
        )
        c.executemany(
            "UPDATE pages SET clean_text = ? WHERE doc_id=? AND page=?",
            [
                (self.codec.encode(p.text) if (d.doc_id, p.number) in changed else None, d.doc_id, p.number)
                for d in docs
                if d.stripped
                for p in d.clean
            ],
        )
        pages = {(d.doc_id, p.number): p.text for d in docs for p in d.clean}
        keyed = [k for d in docs for k in d.keyed]
        signed = {g: v for ids, keys in band_keys for g, v in packed_band_keys(ids, keys).items()}
        self.chunks.replace_sources([d.doc_id for d in docs], keyed, run_id, pages, signed)
        self._put_stripped(docs)
        ids = [d.doc_id for d in docs]
        execute_for_ids(c, "DELETE FROM doc_chrome WHERE doc_id IN ({})", ids)
        execute_for_ids(
            c,
            "INSERT INTO doc_chrome(doc_id, khash)"
            " SELECT doc_id, khash FROM doc_keys JOIN chrome USING(khash) WHERE doc_id IN ({})",
            ids,
        )
        execute_for_ids(
            c,
            "UPDATE documents SET state='indexed', config_hash=?, run_id=? WHERE doc_id IN ({})",
            ids,
            (config_hash, run_id),
        )

    def _put_stripped(self, docs: Sequence[KeyedDocument]) -> None:
        """The documents' stripped lines, in place of their old ones: three statements for the batch
        (a DELETE and an INSERT per document before: 0.2 s of statements alone for 50k records)."""
        rows: list[tuple[str, int, str, int, int, str]] = []
        keys: list[tuple[int, str]] = []
        for d in docs:
            groups: dict[tuple[str, str], list[StrippedLine]] = {}
            for s in d.stripped:
                groups.setdefault((s.key, s.scope), []).append(s)
            for (key, scope), lines in sorted(groups.items()):
                first_page = lines[0].page
                example = "\n".join(ln.line for ln in lines if ln.page == first_page)
                khash = key_id(key)
                rows.append((d.doc_id, khash, scope, len({ln.page for ln in lines}), len(lines), example))
                keys.append((khash, key))
        c = self.conn
        execute_for_ids(c, "DELETE FROM stripped WHERE doc_id IN ({})", [d.doc_id for d in docs])
        c.executemany("INSERT OR IGNORE INTO bp_keys(khash, key) VALUES (?, ?)", keys)
        c.executemany(
            "INSERT INTO stripped(doc_id, khash, scope, pages, lines, example) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )


#: a stored document's row, as :func:`document_row` makes it (the doc id first)
_DOCUMENT_ROWS = (
    "SELECT doc_id, file_path, content_hash, unit, metadata, department, family, effective_date, n_pages,"
    " title FROM documents WHERE doc_id IN ({})"
)


#: :meth:`Store.put_documents`: a document row (pending chunking), new or replacing the old one
_REPLACE_DOCUMENT = (
    "INSERT OR REPLACE INTO documents(doc_id, file_path, content_hash, unit, metadata, department,"
    " family, effective_date, n_pages, title, state, config_hash, run_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, ?)"
)
#: the row written over the old one (a chunked document's): the indexed columns (file, department,
#: family) are set by _MOVE_DOCUMENT, only where they changed
_UPSERT_DOCUMENT = (
    "INSERT INTO documents(doc_id, file_path, content_hash, unit, metadata, department, family,"
    " effective_date, n_pages, title, state, config_hash, run_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', NULL, ?)"
    " ON CONFLICT(doc_id) DO UPDATE SET content_hash=excluded.content_hash, unit=excluded.unit,"
    " metadata=excluded.metadata, effective_date=excluded.effective_date, n_pages=excluded.n_pages,"
    " title=excluded.title, state='pending', config_hash=NULL, run_id=excluded.run_id"
)
_MOVE_DOCUMENT = (
    "UPDATE documents SET file_path=?, department=?, family=? WHERE doc_id=?"
    " AND (file_path IS NOT ? OR department IS NOT ? OR family IS NOT ?)"
)
#: a page's row, new or written over the old one (its text to be cleaned again); has_text is set
#: apart, where it changed (the partial index pages_without_text is written only then)
_UPSERT_PAGE = (
    "INSERT INTO pages(doc_id, page, has_text, raw_text, clean_text) VALUES (?, ?, ?, ?, NULL)"
    " ON CONFLICT(doc_id, page) DO UPDATE SET raw_text=excluded.raw_text, clean_text=NULL"
)

#: :meth:`Store.unit_total`: the documents without a family, and the distinct families
_UNIT_TOTAL = (
    "SELECT (SELECT COUNT(*) FROM documents WHERE family IS NULL OR family = '')"
    " + (SELECT COUNT(DISTINCT family) FROM documents WHERE family > '')"
)

#: the staging table of :meth:`Store.put_contexts`
_CONTEXT_STAGE = ("context_stage", "doc_id TEXT, text TEXT")

#: meta keys: the chrome must be decided again / the boilerplate settings it was decided under
_CHROME_STALE = "chrome_stale"
_CHROME_SETTINGS = "chrome_settings"
#: meta key: the config hash every indexed document is chunked under, when known (set_chunked_config)
_CHUNKED_CONFIG = "chunked_config"


def document_row(doc: Document) -> tuple[Any, ...]:
    """What ``documents`` holds of a parsed document (but its id, state and runs), in the column order
    of ``put_documents`` (``benchmarks/ingest_floor.py`` writes the same rows)."""
    return (
        doc.path,
        doc.content_hash,
        doc.unit,
        json.dumps(dict(doc.metadata), sort_keys=True) if doc.metadata else "{}",
        doc.department,
        doc.family,
        doc.effective_date.isoformat() if doc.effective_date else None,
        len(doc.pages),
        doc.title,
    )


def _count(conn: sqlite3.Connection, table: str) -> int:
    """A table's rows (``table``: one of this module's names, never user input)."""
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


class _BandKeys:
    """SQL aggregate ``band_keys(band_key)``: a group's band keys packed as its ``signed`` value
    (:func:`~chunkdedup.store.chunk_tables.pack_bands`), NULL over no rows."""

    def __init__(self) -> None:
        self.keys: list[int] = []

    def step(self, key: int) -> None:
        self.keys.append(key)

    def finalize(self) -> bytes | None:
        return pack_bands(self.keys) if self.keys else None


def writer_active(path: str | Path) -> bool:
    """True while a process holds the index's single-writer lock (an ingest or a remove is running).

    Call it before opening the index in this process: closing a second descriptor of an SQLite file
    would drop the POSIX locks an open connection of this process holds on it.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _statements(sql: str) -> Iterator[str]:
    """Split a migration script into statements, keeping trigger bodies whole."""
    buf: list[str] = []
    for line in sql.splitlines():
        if line.strip().startswith("--"):
            continue
        buf.append(line)
        joined = "\n".join(buf).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            yield joined
            buf = []
    rest = "\n".join(buf).strip()
    if rest:
        yield rest
