"""The BM25 text engine of an index: SQLite FTS5 inside the file (default), or tantivy beside it.

FTS5 scores every row that holds any query term, so its latency grows with the posting lists: at
1M chunks a question takes hundreds of milliseconds. tantivy (optional extra ``[tantivy]``) ranks
with block-max WAND and answers the same question in a few milliseconds. The SQLite file stays the
single source of truth: the tantivy folder ``INDEX.tantivy`` beside it is derived from the
``groups`` table and can be deleted at any time (the next ingest or ``chunkdedup text-index``
rebuilds it), as SQLite's own ``INDEX-wal`` file sits beside the index.

Keeping the folder in step: while the engine is ``tantivy`` (meta ``text_engine``), triggers on
``groups`` append the changed group's key to ``text_log`` inside the same transaction as the change
itself. :func:`sync` replays the log into tantivy (delete the key, add the group's current text if it
still exists), commits tantivy, then trims the log in SQLite. A crash between the two commits
replays the same keys next time, which is idempotent; so the folder never loses a change. Every
ingest and removal ends with a sync, so queries see the text of the last finished run (during a
run, text added by it becomes searchable when the run ends; removed text is already filtered out
by the query's lookup of the groups it retrieves).

Example:
    >>> with Store.open("index.sqlite") as store:  # doctest: +SKIP
    ...     set_engine(store, "tantivy")
    ...     sync(store)
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from chunkdedup.errors import ConfigError, MissingExtraError
from chunkdedup.figures import number_density
from chunkdedup.store import Store
from chunkdedup.store.fts_prebuild import DEFERRED_FTS, FtsPrebuild

ENGINES = ("fts5", "tantivy")
#: From about this many texts (exact-key groups) FTS5's p95 per question passes ~200 ms on 2 cores:
#: ``serve_pages.py``'s /query rows measured p95 70-110 ms at 19k texts and 1.0-1.8 s at 479k, ~3 ms
#: more per thousand texts (benchmarks/README.md); tantivy answers the same in milliseconds. The
#: overview page and ``chunkdedup query`` say so from here on (:func:`slow_fts5`).
SLOW_FTS5_GROUPS = 50_000
_BATCH = 10_000
_HEAP = 256 * 1024 * 1024  # the tantivy writer's memory budget (split between its threads)
#: ``text_built`` of a folder built with today's fields (``text``, ``gid`` and ``figures``); a folder
#: built before (``"1"``: no ``figures``) is rebuilt by the next :func:`sync`, and read meanwhile
FOLDER_BUILT = "2"


@dataclass(frozen=True, slots=True)
class SyncStats:
    """What one :func:`sync` did: ``rebuilt`` (every group re-indexed) or ``replayed`` log entries."""

    engine: str
    rebuilt: bool
    groups: int


def folder(index: str | Path) -> Path:
    """The tantivy folder of an index file: ``INDEX.tantivy`` beside it."""
    p = Path(index)
    return p.with_name(p.name + ".tantivy")


def engine(store: Store) -> str:
    """The index's text engine (``fts5`` unless set otherwise)."""
    return store.meta("text_engine") or "fts5"


def slow_fts5(engine_name: str, groups: int) -> bool:
    """Whether an index on ``engine_name`` holding ``groups`` texts is one FTS5 answers slowly (and
    tantivy quickly): the engine is fts5 and the texts are :data:`SLOW_FTS5_GROUPS` or more."""
    return engine_name == "fts5" and groups >= SLOW_FTS5_GROUPS


def tantivy_command(index: str | Path) -> str:
    """The command that moves an index to tantivy: an ingest of its inputs again with
    ``--text-index tantivy`` (unchanged files are kept; the engine is kept by later runs)."""
    return f"chunkdedup ingest PATHS --index {shlex.quote(str(index))} --text-index tantivy"


def fts5_rows(store: Store) -> int:
    """How many texts ``groups_fts`` holds, from FTS5's own totals record (one row read, no count)."""
    from chunkdedup.store.topk import fts5_totals  # the query-side reads, only when asked

    totals = fts5_totals(store.conn)
    return totals[0] if totals else 0


def pending(store: Store) -> int:
    """Changes not yet in the tantivy folder (0 for fts5, whose table moves with each transaction)."""
    if engine(store) != "tantivy":
        return 0
    if store.meta("text_built") != FOLDER_BUILT:
        return int(store.conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0])
    return int(store.conn.execute("SELECT COUNT(DISTINCT gid) FROM text_log").fetchone()[0])


def import_tantivy() -> ModuleType:
    try:
        import tantivy
    except ImportError:
        raise MissingExtraError("the tantivy text engine", "tantivy", "tantivy") from None
    return tantivy


def require(name: str | None) -> None:
    """Check a requested engine before anything is written: a known name, its extra installed."""
    if name is not None and name not in ENGINES:
        raise ConfigError(f"text engine must be one of {', '.join(ENGINES)}, got {name!r}")
    if name == "tantivy":
        import_tantivy()


def set_engine(store: Store, name: str) -> bool:
    """Choose the index's text engine; True when it changed. The caller holds the writer lock.

    Switching to tantivy marks the folder for a full build (by the next :func:`sync`); switching to
    fts5 deletes the folder (FTS5 is always maintained, so nothing needs building).
    """
    require(name)
    if name == engine(store):
        return False
    with store.transaction():
        store.set_meta("text_engine", name)
        store.set_meta("text_built", "0")
        store.conn.execute("DELETE FROM text_log")
    if name == "fts5":
        shutil.rmtree(folder(store.path), ignore_errors=True)
    return True


def _schema(tantivy: ModuleType) -> Any:
    sb = tantivy.SchemaBuilder()
    # en_stem: lowercase, split on non-alphanumerics, English Snowball stems (as FTS5's porter)
    sb.add_text_field("text", stored=False, tokenizer_name="en_stem", index_option="freq")
    sb.add_integer_field("gid", stored=False, indexed=True, fast=True)
    # the text's share of figures (number_density), read for a question that asks for an amount
    sb.add_float_field("figures", stored=False, indexed=False, fast=True)
    return sb.build()


def _document(tantivy: ModuleType, gid: int, text: str) -> Any:
    return tantivy.Document(text=text, gid=gid, figures=number_density(text))


#: The row triggers that feed FTS5 (groups and document contexts) and the tantivy change log. While
#: FTS5 is deferred they are dropped, not just idle: a trigger whose WHEN clause is false still runs its
#: subquery on every row (45k groups of a first ingest: 3.7 s of inserts with them, 2.0 s without).
ROW_TRIGGERS = (
    "contexts_ad", "contexts_ai", "contexts_au",
    "groups_ad", "groups_ai", "groups_au", "groups_log_ad", "groups_log_ai", "groups_log_au",
)


def defer_fts(store: Store) -> bool:
    """On an index with no groups yet, stop feeding FTS5 row by row: :func:`sync` builds it once.

    The row triggers are dropped and their SQL kept in meta, to be made again by :func:`sync` as they
    were; a tantivy folder is then rebuilt from the groups (nothing is logged meanwhile). True when
    FTS5 is deferred (now, or still, by a run that was killed). The caller holds the writer lock;
    queries during the run see the groups already indexed (none, on a new index).
    """
    if store.meta("fts_deferred") is not None:
        return True
    if store.groups.has_groups():
        return False
    with store.transaction():
        store.drop_keeping_sql("trigger", ROW_TRIGGERS, "deferred_triggers")
        store.set_meta("fts_deferred", "1")
        store.set_meta("text_built", "0")
    return True


@contextlib.contextmanager
def prebuilt_fts(store: Store) -> Iterator[FtsPrebuild | None]:
    """While the block runs, build the deferred FTS5 tables (:func:`defer_fts`) from what the index
    holds now, in a thread (:mod:`~chunkdedup.store.fts_prebuild`); :func:`sync` given the build
    installs it instead of rebuilding in place. ``None`` when nothing is deferred. The caller holds
    the writer lock and changes no group text, group ``gid`` or document context inside the block
    (the cluster pass changes none). A build not installed is stopped when the block ends.

    Example:
        >>> with prebuilt_fts(store) as fts:  # doctest: +SKIP
        ...     update_clusters(store, cfg, run_id)
        ...     sync(store, prebuilt=fts)
    """
    if store.meta("fts_deferred") is None or store.conn.in_transaction:
        yield None
        return
    build = FtsPrebuild.start(store)
    try:
        yield build
    finally:
        build.close()


def _build_deferred_fts(store: Store, prebuilt: FtsPrebuild | None = None) -> None:
    """The deferred FTS5 tables of the groups and of the contexts: ``prebuilt``'s copied in, or one
    'rebuild' each; then the row triggers made again and the mark cleared (one transaction)."""
    if store.meta("fts_deferred") is None:
        return
    conn = store.conn
    installed = prebuilt is not None and prebuilt.install()
    with store.transaction():
        if not installed:
            for t in DEFERRED_FTS:  # as the build makes them (fts_prebuild): one segment each
                conn.execute(f"INSERT INTO {t.name}({t.name}) VALUES('rebuild')")
                conn.execute(f"INSERT INTO {t.name}({t.name}) VALUES('optimize')")
        store.make_again("trigger", "deferred_triggers")
        store.delete_meta("fts_deferred")


def sync(
    store: Store,
    progress: Callable[[str, int, int], None] | None = None,
    *,
    prebuilt: FtsPrebuild | None = None,
) -> SyncStats:
    """Build a deferred FTS5 table (:func:`defer_fts`; ``prebuilt``: the build :func:`prebuilt_fts`
    made, installed instead), and bring the tantivy folder up to the index's groups. Needs the
    writer lock."""
    _build_deferred_fts(store, prebuilt)
    name = engine(store)
    if name != "tantivy":
        return SyncStats(name, False, 0)
    tick = progress or (lambda stage, done, total: None)
    tantivy = import_tantivy()
    path = folder(store.path)
    conn = store.conn
    upto = int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM text_log").fetchone()[0])
    rebuild = store.meta("text_built") != FOLDER_BUILT or not (path / "meta.json").exists()
    if rebuild:
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        ix = tantivy.Index(_schema(tantivy), path=str(path))
        total = int(conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0])
        writer = ix.writer(_HEAP)
        done = 0
        for gid, text in conn.execute("SELECT gid, text FROM groups ORDER BY gid"):
            writer.add_document(_document(tantivy, int(gid), text))
            done += 1
            if done % _BATCH == 0:
                tick("text index", done, total)
        n = done
    else:
        ix = tantivy.Index.open(str(path))
        changed = [
            int(r[0])
            for r in conn.execute("SELECT DISTINCT gid FROM text_log WHERE seq <= ? ORDER BY gid", (upto,))
        ]
        writer = ix.writer(_HEAP)
        for lo in range(0, len(changed), 500):
            part = changed[lo : lo + 500]
            for gid in part:
                writer.delete_documents_by_term("gid", gid)
            marks = ",".join("?" * len(part))
            for gid, text in conn.execute(f"SELECT gid, text FROM groups WHERE gid IN ({marks})", part):
                writer.add_document(_document(tantivy, int(gid), text))
            tick("text index", min(lo + 500, len(changed)), len(changed))
        n = len(changed)
    writer.commit()
    writer.wait_merging_threads()
    with store.transaction():
        conn.execute("DELETE FROM text_log WHERE seq <= ?", (upto,))
        store.set_meta("text_built", FOLDER_BUILT)
    return SyncStats(name, rebuild, n)
