"""The connection to an index file: opening it (pragmas, the schema brought up to date by the named
migrations), the single-writer lock, transactions, the ``meta`` table, and the schema objects a first
ingest makes once.

Readers work while an ingest runs (WAL). Writers take an exclusive ``flock`` on the index file for
the whole run: a second writer waits up to ``lock_timeout`` seconds, then fails with a clear message.
Every write happens inside :meth:`Connection.transaction`, so a run killed at any moment leaves the last
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
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Self, TypeVar

from chunkdedup.errors import IndexBusyError, MigrationPendingError, SchemaError
from chunkdedup.store import counts
from chunkdedup.store.band_tables import fold_key, fold_wide_bands, pack_wide_bands
from chunkdedup.store.checkpointer import WalCheckpointer
from chunkdedup.store.index_errors import SQLITE_FAILURES, index_error
from chunkdedup.store.migrations import MIGRATIONS
from chunkdedup.store.pagetext import PageCodec
from chunkdedup.store.readonly import read_uri
from chunkdedup.store.schema import MetaKey, stored_hash

#: The page cache of each connection, KiB.
PAGE_CACHE_KIB = 256 * 1024
#: How much of the file a read-only connection maps into memory (SQLite caps it at its build's
#: maximum, 2 GiB by default; the rest of a larger file is read as usual)
READ_MAP_BYTES = 1 << 40

#: The SQLite page size of a new index file (SQLite's default is 4 KiB). Rows of 1-4 KB (a page's or a
#: group's text) leave much of a 4 KiB B-tree page unused: 50k one-chunk records took 272 MB at 4 KiB,
#: 245 at 8 KiB, 236 at 16 KiB and 234 at 32 KiB (the same index, VACUUMed at each size).
NEW_FILE_PAGE_BYTES = 16384
#: The tables whose indexes a first ingest writes out of their key order: a group's id is a hash, and
#: the documents and groups of each batch land all over the id indexes and the index of sources by
#: group, whose leaves it leaves part empty. Written again at its end (``REINDEX`` sorts the entries and
#: fills each leaf), 100k tiny records: 454 -> 445 bytes a record, for 0.25 s.
PACKED_AFTER_FIRST_INGEST = ("groups", "document_rows", "source_rows")

#: While a writer holds the index, the WAL is folded into the file once it reaches this many bytes
#: (SQLite's default is 1,000 pages). A write transaction of an ingest touches thousands of pages spread
#: over the B-trees, so with the default every commit checkpoints (and syncs the file); with 256 MiB
#: (64k pages of 4 KiB, 16k of 16 KiB) a page written by many commits is copied back once. It is the
#: safety net: a thread beside the writer checkpoints from 32 MiB on (:mod:`~chunkdedup.store.checkpointer`),
#: so the writer's commits rarely copy anything back themselves.
WRITER_AUTOCHECKPOINT_BYTES = 256 << 20

#: The oldest SQLite the schema's migrations and reads run on: generated columns (3.31) and
#: ``ALTER TABLE DROP COLUMN`` (3.35), migrations 0030, 0033, 0034.
MIN_SQLITE = (3, 35, 0)

#: The format of the doc_keys rows :meth:`BoilerplateTables.set_many_doc_keys` writes: they also hold each
#: document's strippable keys (migration 0004). An index whose meta records an older one has every
#: document's keys recomputed once (``pipeline.refresh_stale_keys``); a new index starts at this one.
DOC_KEYS_FORMAT = "2"


_C = TypeVar("_C", bound="Connection")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Connection:
    """An open index file: its connection, lock, transactions and meta, and nothing built on them (the
    table families are given it: :class:`~chunkdedup.store.core.Store` holds them); open one with
    :meth:`open`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_fd: int | None) -> None:
        self.path = path
        self.conn = conn
        self._lock_fd = lock_fd
        self._probe_fd: int | None = None  # a reader's descriptor for writer_running(), kept until close
        self._locked = False
        #: the run begun and not finished (the runs family sets it): marked 'failed' if the writer leaves
        self.open_run: int | None = None
        self._has_meta = True  # False while the migrations of a new file have not made `meta` yet
        self._wrote = False  # a write transaction began while this writer held the lock
        self.codec = PageCodec({}, self._read_dict)
        # every read of page text goes through page_text() (schema.RAW_TEXT, CLEAN_TEXT)
        conn.create_function("page_text", 1, self._decode, deterministic=True)
        # a document's content and config hashes as stored (8 bytes, or the hex an older file keeps)
        conn.create_function("stored_hash", 1, stored_hash, deterministic=True)

    @classmethod
    def open(cls, path: str | Path, *, create: bool = False, readonly: bool = False) -> Self:
        """Open (or with ``create=True`` create) an index file and bring its schema up to date."""
        return cls.open_made(path, cls, create=create, readonly=readonly)

    @staticmethod
    def open_made(
        path: str | Path,
        make: Callable[[Path, sqlite3.Connection, int | None], _C],
        *,
        create: bool = False,
        readonly: bool = False,
    ) -> _C:
        """:meth:`open`, the object made by ``make(path, connection, lock)`` (a subclass that takes more
        than the three gives them here)."""
        p = Path(path)
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise SchemaError(
                f"index {p}: Python's SQLite is {sqlite3.sqlite_version}, and the index needs 3.35 or newer"
                " (generated columns, DROP COLUMN): use a Python built with a newer SQLite"
            )
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
            if readonly:
                # a reader (a query, the web view) reads the file through a memory map: a question's
                # first reads of its candidates' rows then copy no page into the cache (1M chunks:
                # hybrid p50 ~55 -> ~45 ms on questions not asked before); writers keep plain reads
                conn.execute(f"PRAGMA mmap_size = {READ_MAP_BYTES}")
            if not readonly:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            store = make(p, conn, None if readonly else os.open(p, os.O_RDONLY))
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
        if not tables:  # a new file: the current layout at once (schema.sql), every migration recorded
            with self.transaction():
                for statement in _statements(layout_sql()):
                    self.conn.execute(statement)
                now = _now()
                self.conn.executemany("INSERT INTO migrations VALUES (?, ?)", [(n, now) for n, _ in pending])
            self._has_meta = True
            pending = []
        if pending and readonly:
            raise MigrationPendingError(
                f"index {self.path} was written by an older chunkdedup and needs migrations "
                f"{[n for n, _ in pending]}: open it writable once to apply them (any ingest into it, e.g. "
                f"`chunkdedup ingest PATH --index {self.path}`, or Index.open), then read it again"
            )
        if pending:
            _migrating(self.conn, True)
        try:
            for name, sql in pending:
                with self.transaction():
                    self.conn.execute(
                        "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied TEXT)"
                    )
                    for statement in _statements(sql):
                        self.conn.execute(statement)
                    self.conn.execute("INSERT INTO migrations VALUES (?, ?)", (name, _now()))
                self._has_meta = True  # the first migration makes it
        finally:
            if pending:
                _migrating(self.conn, False)
        if pending and tables:  # a table rebuilt by a migration (0022's bands) leaves its old pages free
            self.reclaim()
        if not tables:  # a new index: nothing in it was written in an older format
            with self.transaction():
                self.set_meta("doc_keys_format", DOC_KEYS_FORMAT)

    def _decode(self, value: str | bytes | None) -> str | None:
        return self.codec.decode(value)

    def keep_dict(self) -> None:
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
        for fd in (self._lock_fd, self._probe_fd):
            if fd is not None:
                os.close(fd)  # after the connection, so SQLite's own locks are never dropped early
        self._lock_fd = self._probe_fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    def writer_running(self) -> bool:
        """Whether a writer (an ingest or a remove, in any process) holds the index's lock now: a run
        marked 'running' while none does was killed. A reader opens a descriptor of the file for the
        probe on its first call and keeps it until :meth:`close` (closing one earlier would drop the
        POSIX locks SQLite holds for this process, as :func:`writer_active` warns)."""
        if self._locked:
            return True
        fd = self._lock_fd if self._lock_fd is not None else self._probe_fd
        if fd is None:
            try:
                fd = self._probe_fd = os.open(self.path, os.O_RDONLY)
            except OSError:  # the file cannot be probed: say nothing of its runs
                return True
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False

    @property
    def locked(self) -> bool:
        """Whether this connection holds the index's single-writer lock (:meth:`writer`)."""
        return self._locked

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

    @contextlib.contextmanager
    def page_cache(self, kib: int) -> Iterator[None]:
        """Keep at most ``kib`` KiB of pages in the connection's cache while the block runs (the pages
        beyond it are freed at once), then ``PAGE_CACHE_KIB`` again. Outside a transaction."""
        self.conn.execute(f"PRAGMA cache_size = -{int(kib)}")
        self.conn.execute("PRAGMA shrink_memory")
        # SQLite frees those pages into the C heap, where what was allocated among them holds them in
        # the process: they are given back to the system (benchmarks/README.md, memory.py)
        _trim_heap()
        try:
            yield
        finally:
            self.conn.execute(f"PRAGMA cache_size = -{PAGE_CACHE_KIB}")

    def meta(self, key: MetaKey) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: MetaKey, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def delete_meta(self, key: MetaKey) -> None:
        self.conn.execute("DELETE FROM meta WHERE key=?", (key,))

    def drop_keeping_sql(self, kind: str, names: Sequence[str], key: MetaKey) -> None:
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

    def make_again(self, kind: str, key: MetaKey) -> None:
        """Make the schema objects :meth:`drop_keeping_sql` dropped under meta ``key``, as they were.
        Within the caller's transaction."""
        for name, sql in json.loads(self.meta(key) or "[]"):
            self.conn.execute(f"DROP {kind.upper()} IF EXISTS {name}")
            self.conn.execute(sql)
        self.delete_meta(key)

    def pack_indexes(self) -> None:
        """Write the indexes of the tables a first ingest fills out of key order anew, each packed
        (:data:`PACKED_AFTER_FIRST_INGEST`); :meth:`reclaim` then gives the old pages back."""
        with self.transaction() as c:
            for table in PACKED_AFTER_FIRST_INGEST:
                c.execute(f"REINDEX {table}")

    def reclaim(self) -> None:
        """Give the file's free pages back (a run's staging rows, replaced pages): a first ingest of 50k
        records left 3 MB of them. A no-op on an index made before auto_vacuum was set (its free pages
        are reused by later writes)."""
        # the pragma frees a page each time the statement is stepped; execute() steps it once,
        # executescript() until it is done. Outside a transaction: executescript commits first.
        if not self.conn.in_transaction:
            self.conn.executescript("PRAGMA incremental_vacuum;")

    def _abandon_run(self) -> None:
        """A run that was begun and never finished (an exception left the writer) is marked 'failed',
        so ``runs`` never shows a dead run as 'running'. Best effort: the index may be what broke."""
        run_id, self.open_run = self.open_run, None
        if run_id is None:
            return
        with contextlib.suppress(sqlite3.Error):
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self.conn.execute("UPDATE runs SET finished=?, status='failed' WHERE id=?", (_now(), run_id))


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``; elsewhere nothing)."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError, TypeError):  # not glibc, or no process handle (Windows)
        return
    trim(0)


class _BandKeys:
    """SQL aggregate ``band_keys(band_key)``: a group's band keys packed as migration 0018 kept its
    ``signed`` value (:func:`~chunkdedup.store.band_tables.pack_wide_bands`; 0022 folds them), NULL
    over no rows."""

    def __init__(self) -> None:
        self.keys: list[int] = []

    def step(self, key: int) -> None:
        self.keys.append(key)

    def finalize(self) -> bytes | None:
        return pack_wide_bands(self.keys) if self.keys else None


def copy_index(src: Path, dst: Path) -> None:
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


def _migrating(conn: sqlite3.Connection, on: bool) -> None:
    """Register (``on``) or drop the SQL functions only migrations call: 0018's ``band_keys``
    aggregate, 0022's band keys folded to 32 bits."""
    # typeshed's aggregate protocol has finalize() return int only
    conn.create_aggregate("band_keys", 1, _BandKeys if on else None)  # type: ignore[arg-type]
    conn.create_function("fold_band_key", 1, fold_key if on else None, deterministic=True)
    conn.create_function("fold_band_keys", 1, fold_wide_bands if on else None, deterministic=True)


def layout_sql() -> str:
    """The layout of a new index (``schema.sql`` beside this module): every table, view, trigger and
    index as the migrations of :mod:`chunkdedup.store.schema` leave them, one comment each."""
    return resources.files("chunkdedup.store").joinpath("schema.sql").read_text(encoding="utf-8")


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
