"""The chunk side of the index: sources, exact-key groups, clusters (canonicals) and variants.

Three levels, each derived from the one below by a rule on the data:

* ``sources``: one row per chunk (document, page, offsets), with its exact-key ``group_id``;
* ``groups``: one row per exact key; its text and order are those of its smallest source;
* ``canonicals``: one row per cluster of groups (its id is the leader group's id); the text is the
  leader's, the sources are those of every member group (relation ``exact`` for the leader's,
  ``near``/``semantic`` with the member's similarity for the others).

Every write keeps the three levels consistent with each other inside the caller's transaction. A
group whose existence or order changed is marked ``dirty`` so its cluster is re-decided.
"""

from __future__ import annotations

import itertools
import json
import operator
import sqlite3
import struct
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chunkdedup.normalize import key_hash
from chunkdedup.store.schema import CLEAN_TEXT
from chunkdedup.types import Assignment, GroupRow, KeyedChunk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Each group's first source (by document, page, offset), its count, and its end.
_FIRST_SOURCES = (
    'SELECT group_id, doc_id, page, start, n, "end"'
    ' FROM (SELECT group_id, doc_id, page, start, "end", COUNT(*) OVER (PARTITION BY group_id) AS n,'
    " ROW_NUMBER() OVER (PARTITION BY group_id ORDER BY doc_id, page, start) AS rn"
    " FROM sources WHERE group_id IN ({})) WHERE rn = 1"
)
_GROUP_STATE = (
    "SELECT id, rep_doc, rep_page, rep_start, canonical_id, text, n_sources FROM groups WHERE id IN ({})"
)
_CANONICAL_STATE = "SELECT id, signature, updated_run FROM canonicals WHERE id IN ({})"
_TOMBSTONES = "SELECT canonical_id, run_id, signature, updated_run FROM tombstones WHERE canonical_id IN ({})"
_CANONICAL_COUNTS = (
    "SELECT canonical_id, COUNT(*) FROM sources WHERE canonical_id IN ({}) GROUP BY canonical_id"
)
_CANONICAL_SOURCES = (
    'SELECT canonical_id, doc_id, page, start, "end", relation, similarity, group_id FROM sources'
    " WHERE canonical_id IN ({}) ORDER BY canonical_id, doc_id, page, start"
)


#: Groups a batch makes, with their source rows (doc_id, page, start, end, relation, similarity), sorted.
Born = Mapping[str, Sequence[tuple[Any, ...]]]
_NONE_BORN: Born = {}

#: Clean page texts at hand, by (doc_id, page): a batch's own pages, so its spans are sliced in memory.
Pages = Mapping[tuple[str, int], str]
_NO_PAGES: Pages = {}
_NO_SIGNED: Mapping[str, bytes] = {}


#: the band rows with their groups' ids (bands name a group by its integer key, migration 0012)
_BAND_ROWS = "(SELECT b.band_key AS band_key, g.id AS group_id FROM bands b JOIN groups g ON g.gid = b.gid)"


def _id_statements(
    sql: str, ids: Sequence[str] | Sequence[int], params: Sequence[object] = ()
) -> Iterator[tuple[str, list[object]]]:
    """``sql`` (one ``{}`` placeholder list) and its arguments (``params``, then the ids) for every 500
    of ``ids``."""
    for i in range(0, len(ids), 500):
        part = list(ids[i : i + 500])
        yield sql.format(",".join("?" * len(part))), [*params, *part]


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


#: staging tables for one-statement writes (:func:`staged_rows`): name and columns
_GROUP_STAGE = (
    "group_stage",
    "id TEXT, text TEXT, n_sources INTEGER, rep_doc TEXT, rep_page INTEGER, rep_start INTEGER,"
    " canonical_id TEXT, signed BLOB",
)
#: the columns of a new group's row, as refresh_groups writes them (the stage's, in its order)
_GROUP_COLUMNS = "id, text, n_sources, rep_doc, rep_page, rep_start, canonical_id, signed"
_ID_STAGE = ("id_stage", "id TEXT")
_BAND_STAGE = ("group_bands", "id TEXT, gid INTEGER, band_key INTEGER")  # groups' own band rows


def pack_bands(keys: Sequence[int]) -> bytes:
    """A group's band keys as its ``signed`` value: signed 64-bit little-endian integers, in order."""
    return struct.pack(f"<{len(keys)}q", *keys)


def packed_band_keys(ids: Sequence[str], keys: npt.NDArray[np.int64]) -> dict[str, bytes]:
    """Each group's ``signed`` value from its band keys (``keys[i]``: those of ``ids[i]``), as
    :func:`pack_bands` packs them, from one array."""
    import numpy as np

    packed = np.ascontiguousarray(keys, dtype="<i8")
    return {gid: packed[i].tobytes() for i, gid in enumerate(ids)}


def unpack_bands(blob: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(blob) // 8}q", blob)


def _own_rows(groups: Iterable[tuple[str, int, bytes]]) -> list[tuple[str, int, int]]:
    """The band rows ``(id, gid, band key)`` that signed groups ``(id, gid, signed)`` keep keys of."""
    return [(i, g, k) for i, g, blob in groups for k in unpack_bands(blob)]


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


#: band rows per statement of put_first_bands: 998 variables, within SQLite's oldest limit (999)
_BAND_ROWS_PER_INSERT = 499


def _band_insert(rows: int) -> str:
    """An INSERT of ``rows`` band rows, (band key, gid) each."""
    return "INSERT INTO bands(band_key, gid) VALUES " + ",".join(["(?, ?)"] * rows)


@dataclass(frozen=True, slots=True)
class BandTable:
    """Band rows as :meth:`ChunkTables.put_first_bands` wrote them: ``keys[r]``, ``gids[r]`` sorted by
    (band key, gid), and each gid's group id."""

    keys: npt.NDArray[np.int64]
    gids: npt.NDArray[np.int64]
    ids: Mapping[int, str]


class BandRows:
    """A set of band rows (:meth:`ChunkTables.band_rows`): its groups, its rows in blocks, its buckets."""

    def __init__(self, conn: sqlite3.Connection, table: str) -> None:
        self._conn = conn
        self._table = table  # _BAND_ROWS or "temp.near_touched": never user input

    def group_ids(self) -> list[str]:
        """The distinct groups of the rows, sorted."""
        sql = f"SELECT DISTINCT group_id FROM {self._table} ORDER BY group_id"
        return [r[0] for r in self._conn.execute(sql)]

    def blocks(self, size: int) -> Iterator[list[tuple[int, str]]]:
        """The ``(band_key, group_id)`` rows, ``size`` a block."""
        cursor = self._conn.execute(f"SELECT band_key, group_id FROM {self._table}")
        while rows := cursor.fetchmany(size):
            yield [(r[0], r[1]) for r in rows]

    def bucket_count(self) -> int:
        return int(self._conn.execute(f"SELECT COUNT(DISTINCT band_key) FROM {self._table}").fetchone()[0])


class ChunkTables:
    """Reads and writes of sources, groups, canonicals, bands and variants on one connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- sources -------------------------------------------------------------------------------
    def drop_doc_sources(self, doc_id: str, run_id: int) -> int:
        """Delete a document's sources; re-derive its groups and canonicals. Returns canonicals touched."""
        if self.conn.execute("SELECT 1 FROM sources WHERE doc_id=? LIMIT 1", (doc_id,)).fetchone() is None:
            return 0  # a new document (or one never chunked): nothing to re-derive
        return self.replace_sources([doc_id], (), run_id)

    def docs_with_sources(self, doc_ids: Sequence[str]) -> list[str]:
        """Those of ``doc_ids`` that have sources (were chunked before), sorted."""
        return sorted({r[0] for r in self._batched("SELECT DISTINCT doc_id FROM sources WHERE doc_id IN ({})",
                                                    sorted(set(doc_ids)))})

    def replace_sources(
        self,
        doc_ids: Sequence[str],
        chunks: Sequence[KeyedChunk],
        run_id: int,
        pages: Pages = _NO_PAGES,
        signed: Mapping[str, bytes] = _NO_SIGNED,
    ) -> int:
        """Replace the sources of ``doc_ids`` by ``chunks`` (chunks of those documents), then re-derive
        every group and canonical they touched, once for the whole batch. ``pages``: the clean texts of
        the batch's pages as just stored (their spans are sliced from them, not read back).

        A new source joins its group's current cluster (a new group is its own). A group that keeps a
        source keeps its bands and cluster, even if all its old sources were among those replaced;
        one left with none is dropped. Returns how many canonicals the old sources belonged to.
        """
        c = self.conn
        ids = sorted(set(doc_ids))
        old = list(
            self._batched("SELECT DISTINCT group_id, canonical_id FROM sources WHERE doc_id IN ({})", ids)
        )
        execute_for_ids(c, "DELETE FROM sources WHERE doc_id IN ({})", ids)
        new_groups = sorted({k.canonical_id for k in chunks})
        current = dict(self._batched("SELECT id, canonical_id FROM groups WHERE id IN ({})", new_groups))
        c.executemany(
            'INSERT INTO sources(doc_id, page, start, "end", group_id, canonical_id, relation, similarity)'
            " VALUES (?, ?, ?, ?, ?, ?, 'exact', 1.0)",
            [
                (
                    k.chunk.doc_id,
                    k.chunk.page,
                    k.chunk.start,
                    k.chunk.end,
                    k.canonical_id,
                    current.get(k.canonical_id, k.canonical_id),
                )
                for k in chunks
            ],
        )
        # A group this batch makes (none of that id existed) has these chunks for all its sources, and
        # is its own canonical: its rows are known here, not read back (most groups of a first ingest)
        born: dict[str, list[tuple[Any, ...]]] = {}
        for k in chunks:
            if k.canonical_id not in current:
                ch = k.chunk
                row = (ch.doc_id, ch.page, ch.start, ch.end, "exact", 1.0)
                born.setdefault(k.canonical_id, []).append(row)
        for rows in born.values():
            rows.sort()  # by (doc_id, page, start): the order of the sources' key
        old_canonicals = {r[1] for r in old}
        lost = self.refresh_groups(sorted({r[0] for r in old} | set(new_groups)), pages, born, signed)
        self._copy_group_relation([g for g in new_groups if g in current])  # a born group is exact
        canonicals = old_canonicals | set(current.values()) | lost | set(new_groups)
        self.refresh_canonicals(sorted(canonicals), run_id, pages, born)
        return len(old_canonicals)

    def _copy_group_relation(self, group_ids: Sequence[str]) -> None:
        """New sources of a group that is a near member carry the member's relation and similarity."""
        self.conn.executemany(
            "UPDATE sources SET relation=(SELECT relation FROM groups g WHERE g.id=sources.group_id),"
            " similarity=(SELECT similarity FROM groups g WHERE g.id=sources.group_id) WHERE group_id=?",
            [(g,) for g in group_ids],
        )

    # -- groups --------------------------------------------------------------------------------
    def refresh_groups(
        self,
        ids: Sequence[str],
        pages: Pages = _NO_PAGES,
        born: Born = _NONE_BORN,
        signed: Mapping[str, bytes] = _NO_SIGNED,
    ) -> set[str]:
        """Re-derive groups from their sources; mark new, moved, reworded or emptied ones dirty.

        Returns the canonical ids that lost a group (their cluster must be refreshed too). Reads are
        batched (each group's first source in one query, its text sliced from its page, see
        :meth:`span_texts`), and a group whose text, count and first source are unchanged is not written.
        ``born``: groups not in the index yet, with every source row they have (sorted), not read.
        ``signed``: the ``signed`` values (band keys) of new groups of a first ingest, written with
        their rows (:meth:`put_first_bands` writes their band rows).
        """
        c = self.conn
        stored = [g for g in ids if g not in born]
        rows = list(self._batched(_FIRST_SOURCES, stored))
        rows.extend((g, *born[g][0][:3], len(born[g]), born[g][0][3]) for g in ids if g in born)
        texts = self.span_texts([(r[1], r[2], r[3], r[5]) for r in rows], pages)
        first = {r[0]: (*r[1:5], text) for r, text in zip(rows, texts, strict=True)}
        old = {r[0]: r[1:] for r in self._batched(_GROUP_STATE, stored)}
        lost: set[str] = set()
        gone: list[tuple[str, str]] = []
        inserts: list[tuple[object, ...]] = []
        updates: list[tuple[object, ...]] = []
        dirty: list[str] = []
        for gid in ids:
            now, was = first.get(gid), old.get(gid)
            if now is None:
                if was is not None:
                    gone.append((gid, was[3]))
                    lost.add(was[3])
                continue
            doc_id, page, start, n, text = now
            if was is None:
                inserts.append((gid, text, n, doc_id, page, start, gid, signed.get(gid)))
                dirty.append(gid)
                continue
            if (was[4], was[5], tuple(was[:3])) != (text, n, (doc_id, page, start)):
                updates.append((text, n, doc_id, page, start, gid))
            if tuple(was[:3]) != (doc_id, page, start) or was[4] != text:
                dirty.append(gid)  # its order moved, or its words (the meaning guard reads their case)
        self._drop_groups(gone)
        # one statement each (see staged_rows): the text-index triggers then write the FTS5 index once
        # per batch, not once per row
        if inserts:
            insert_rows(c, _GROUP_STAGE, "groups", _GROUP_COLUMNS, inserts)
        if updates and not has_row_triggers(c, "groups"):
            c.executemany(
                "UPDATE groups SET text=?, n_sources=?, rep_doc=?, rep_page=?, rep_start=? WHERE id=?",
                updates,
            )
        elif updates:
            with staged_rows(c, _GROUP_STAGE, [(u[5], *u[:5], u[5], None) for u in updates]) as stage:
                c.execute(
                    "UPDATE groups SET text=s.text, n_sources=s.n_sources, rep_doc=s.rep_doc,"
                    f" rep_page=s.rep_page, rep_start=s.rep_start FROM {stage} s WHERE groups.id = s.id"
                )
        self.mark_dirty(dirty)
        return lost

    def _drop_groups(self, gone: Sequence[tuple[str, str]]) -> None:
        """Drop groups ``(id, canonical id)``, one statement of each kind for all of them: first their
        cluster-mates and band and semantic neighbours become dirty, then their rows go (the dirty
        marks of the gone groups themselves last: one group's drop would have marked another's)."""
        if not gone:
            return
        c = self.conn
        ids = [(gid,) for gid, _ in gone]
        c.executemany(
            "INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups WHERE canonical_id=? AND id != ?",
            [(canonical_id, gid) for gid, canonical_id in gone],
        )
        with staged_rows(c, _BAND_STAGE, self._own_bands([gid for gid, _ in gone])) as own:
            c.execute(
                "INSERT OR IGNORE INTO dirty(group_id) SELECT DISTINCT g2.id FROM " + own + " b1"
                " CROSS JOIN bands b2 ON b2.band_key = b1.band_key AND b2.gid != b1.gid"
                " CROSS JOIN groups g2 ON g2.gid = b2.gid"
            )
            c.execute(f"DELETE FROM bands WHERE (band_key, gid) IN (SELECT band_key, gid FROM {own})")
        c.executemany(
            "INSERT OR IGNORE INTO dirty(group_id) SELECT b FROM semantic_edges WHERE a=?1"
            " UNION SELECT a FROM semantic_edges WHERE b=?1",
            ids,
        )
        with staged_rows(c, _ID_STAGE, ids) as stage:  # one statement: the FTS5 index is written once
            c.execute(f"DELETE FROM groups WHERE id IN (SELECT id FROM {stage})")
        c.executemany("DELETE FROM embeddings WHERE group_id=?", ids)
        c.executemany("DELETE FROM semantic_edges WHERE a=?1 OR b=?1", ids)
        c.executemany("DELETE FROM near_edges WHERE a=?", ids)
        c.executemany("DELETE FROM near_edges WHERE b=?", ids)
        c.executemany("DELETE FROM variants WHERE a=?1 OR b=?1", ids)  # a gone group is no one's version
        c.executemany("DELETE FROM dirty WHERE group_id=?", ids)

    def _own_bands(self, ids: Sequence[str]) -> list[tuple[str, int, int]]:
        """The band rows ``(id, gid, band key)`` of the signed groups of ``ids``, from their ``signed``
        values (the rows a group has in bands once merged: no index of bands by group is kept)."""
        sql = "SELECT id, gid, signed FROM groups WHERE id IN ({}) AND signed IS NOT NULL"
        return _own_rows(self._batched(sql, sorted(set(ids))))

    def span_texts(self, spans: Sequence[tuple[str, int, int, int]], pages: Pages = _NO_PAGES) -> list[str]:
        """The text of each span ``(doc_id, page, start, end)`` of a clean page: sliced from ``pages``
        when the page is there, else from the stored page, read once for all its spans (a canonical's
        ``substr`` over its page read the page once per span: quadratic in a large page)."""
        out = [""] * len(spans)
        order = sorted(range(len(spans)), key=lambda i: spans[i][:2])
        page_key: tuple[str, int] | None = None
        text = ""
        for i in order:
            doc_id, page, start, end = spans[i]
            if (doc_id, page) != page_key:
                page_key = (doc_id, page)
                held = pages.get(page_key)
                if held is None:
                    row = self.conn.execute(
                        f"SELECT {CLEAN_TEXT} FROM pages WHERE doc_id=? AND page=?", page_key
                    ).fetchone()
                    held = (row[0] if row is not None else None) or ""
                text = held
            out[i] = text[start:end]
        return out

    def _batched(self, sql: str, ids: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        return rows_for_ids(self.conn, sql, ids)

    def has_groups(self) -> bool:
        return self.conn.execute("SELECT 1 FROM groups LIMIT 1").fetchone() is not None

    def has_bands(self) -> bool:
        """Whether any band row is stored or staged."""
        c = self.conn
        tables = ("bands", "band_stage")
        return any(c.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() is not None for t in tables)

    def signed_without_bands(self) -> bool:
        """Whether groups are signed while no band row is stored or staged (a first ingest stopped
        between its chunk phase and its cluster pass); a scan of the groups only when bands are empty."""
        if self.has_bands():
            return False
        found = self.conn.execute("SELECT 1 FROM groups WHERE signed IS NOT NULL LIMIT 1")
        return found.fetchone() is not None

    def group_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0])

    def unsigned_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM groups WHERE signed IS NULL").fetchone()[0])

    def unembedded_count(self) -> int:
        sql = "SELECT COUNT(*) FROM groups WHERE id NOT IN (SELECT group_id FROM embeddings)"
        return int(self.conn.execute(sql).fetchone()[0])

    def mark_dirty(self, ids: Iterable[str]) -> None:
        """These groups' clusters are to be re-decided by the next cluster pass."""
        self.conn.executemany("INSERT OR IGNORE INTO dirty(group_id) VALUES (?)", [(g,) for g in ids])

    def mark_all_dirty(self) -> None:
        """Every group's cluster is to be re-decided (the clustering settings changed)."""
        self.conn.execute("INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups")

    def clear_semantic_edges(self) -> None:
        self.conn.execute("DELETE FROM semantic_edges")

    def unsigned_groups(self, limit: int) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT id, text FROM groups WHERE signed IS NULL ORDER BY id LIMIT ?", (limit,)
        )
        return [(r[0], r[1]) for r in rows]

    def unsigned_among(self, ids: Sequence[str]) -> list[str]:
        """The groups of ``ids`` that exist and have no signature, sorted."""
        sql = "SELECT id FROM groups WHERE id IN ({}) AND signed IS NULL"
        return sorted(r[0] for r in self._batched(sql, ids))

    def sign_groups(self, rows: Iterable[tuple[str, Sequence[int]]]) -> None:
        """Keep groups' band keys (their ``signed`` value) and stage their band rows, from (group id,
        band keys) (two statements for all of them; the MinHash signature itself is not kept: the band
        rows are what the near tier reads, after :meth:`merge_bands`). A group signed again gets the
        same bands (a function of its text and the hashing settings, and a change of those clears
        every band first), so its band rows are kept, not deleted and written again."""
        c = self.conn
        rows = list(rows)
        c.executemany("UPDATE groups SET signed=? WHERE id=?", [(pack_bands(b), gid) for gid, b in rows])
        # appended to the stage, merged into bands in key order by merge_bands
        c.executemany(
            "INSERT INTO band_stage(group_id, band_key) VALUES (?, ?)",
            [(gid, b) for gid, bands in rows for b in bands],
        )

    def put_first_bands(self, ids: Sequence[str], keys: npt.NDArray[np.int64]) -> BandTable | None:
        """Into empty bands and an empty stage (a first ingest): the band rows of the groups ``ids``
        still in the index (``keys[i]``: the band keys of group ``ids[i]``) and of every other group
        with a ``signed`` value (its keys: a run stopped between its chunk phase and its cluster pass
        left it so), written in key order from memory; a group of ``ids`` with no ``signed`` value
        gets its keys as one. Returns the rows as written, for the cluster pass to read its band
        neighbours from; ``None`` when bands or the stage hold rows (nothing is written: the caller
        signs through the stage).

        The stage's way (a row per group and band into ``band_stage``, then an SQL sort of all of
        them into bands, then a scan of bands for the neighbours) sorted 7.7M rows of a 1M-chunk
        corpus in SQLite; here NumPy sorts them and one ordered insert writes them."""
        import numpy as np

        c = self.conn
        if self.has_bands():
            return None
        where = dict(c.execute("SELECT id, gid FROM groups"))  # from the index of ids alone
        unsigned = {r[0] for r in c.execute("SELECT gid FROM groups WHERE signed IS NULL")}
        # each held group's gid (-1: dropped since, no row), and for each gid, sorted, the last of its
        # places in ids (a group named twice has the same keys twice): NumPy, not a dict per group
        found = np.fromiter((where.get(g, -1) for g in ids), np.int64, len(ids))
        places = np.flatnonzero(found >= 0)[::-1]
        gids, last = np.unique(found[places], return_index=True)
        places = places[last]
        held = dict(zip(gids.tolist(), [ids[i] for i in places.tolist()], strict=True))  # gid -> id
        rows = np.asarray(keys, np.int64)[places]
        if len(where) - len(unsigned) > len(held.keys() - unsigned):  # signed groups not held
            sql = "SELECT id, gid, signed FROM groups WHERE signed IS NOT NULL"
            others = [(gid, gid_id, blob) for gid_id, gid, blob in c.execute(sql) if gid not in held]
            extra = np.array([np.frombuffer(blob, "<i8") for _, _, blob in others], np.int64)
            gids = np.concatenate((gids, np.array([g for g, _, _ in others], np.int64)))
            rows = np.concatenate((rows, extra.reshape(len(others), rows.shape[1])))
            held.update((g, gid_id) for g, gid_id, _ in others)
            in_order = np.argsort(gids, kind="stable")
            gids, rows = gids[in_order], rows[in_order]
        owner = np.repeat(gids, rows.shape[1]) if rows.size else np.empty(0, np.int64)
        flat = rows.reshape(-1)
        by_key = np.argsort(flat, kind="stable")  # (band key, gid): the rows were in gid order
        flat, owner = flat[by_key], owner[by_key]
        if flat.size:  # a key repeated within a group's bands is one row (the table's key)
            first = np.ones(flat.size, bool)
            first[1:] = (flat[1:] != flat[:-1]) | (owner[1:] != owner[:-1])
            flat, owner = flat[first], owner[first]
        # many rows a statement: a statement per row spent most of the insert stepping and resetting
        # it (722k rows: 1.24-1.45 -> 0.35-0.38 s at 499 a statement)
        values = np.stack((flat, owner), axis=1).reshape(-1).tolist()
        step = 2 * _BAND_ROWS_PER_INSERT
        whole = len(values) // step * step
        parts = (values[i : i + step] for i in range(0, whole, step))
        c.executemany(_band_insert(_BAND_ROWS_PER_INSERT), parts)
        if whole < len(values):
            c.execute(_band_insert((len(values) - whole) // 2), values[whole:])
        del values
        # the keys of held groups not signed yet (their rows were written with them, most of a first
        # ingest's: an UPDATE of every group rewrote the whole table, 45k groups 0.4-0.6 s)
        packed = np.ascontiguousarray(rows, dtype="<i8")
        c.executemany(
            "UPDATE groups SET signed=? WHERE gid=?",
            ((packed[i].tobytes(), g) for i, g in enumerate(gids.tolist()) if g in unsigned),
        )
        return BandTable(flat, owner, held)

    def merge_bands(self) -> int:
        """Move the staged band rows into bands, sorted by key, and empty the stage: one pass over the
        B-tree, each leaf written once, instead of a random leaf per row. Rows of a group dropped since
        are left out (the join), and a group made again under the same id has the same key, so the
        same bands (a change of the hashing settings empties the stage with the bands). Returns how
        many rows it moved."""
        c = self.conn
        moved = c.execute(
            "INSERT OR IGNORE INTO bands(band_key, gid) SELECT s.band_key, g.gid"
            " FROM band_stage s JOIN groups g ON g.id = s.group_id ORDER BY 1, 2"
        )
        c.execute("DELETE FROM band_stage")
        return int(moved.rowcount)

    def clear_signatures(self) -> None:
        """Drop every signature and band (the MinHash settings changed); every group becomes dirty."""
        self.conn.execute("UPDATE groups SET signed=NULL")
        self.conn.execute("DELETE FROM bands")
        self.conn.execute("DELETE FROM band_stage")
        self.clear_near_edges()
        self.conn.execute("INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups")

    # -- verified near edges kept between runs (the Ray path) ------------------------------------
    def clear_near_edges(self) -> None:
        """Forget every kept edge (the near settings changed): every group is to verify again."""
        self.conn.execute("DELETE FROM near_edges")
        self.conn.execute("UPDATE groups SET edged=0 WHERE edged=1")

    def unedged_count(self) -> int:
        """Groups whose edges are not kept yet (new since the last Ray near pass, or never on Ray)."""
        return int(self.conn.execute("SELECT COUNT(*) FROM groups WHERE edged=0").fetchone()[0])

    def keep_near_edges(self, edges: Iterable[tuple[str, str, float]]) -> None:
        """Store verified edges ``(a, b, jaccard)``, ``a < b``, found by a pass over every pair with
        a group not edged yet; those groups are edged from now on."""
        self.conn.executemany("INSERT OR REPLACE INTO near_edges(a, b, similarity) VALUES (?, ?, ?)", edges)
        self.conn.execute("UPDATE groups SET edged=1 WHERE edged=0")

    def unedged_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT id FROM groups WHERE edged = 0")]

    def group_text_blocks(self, size: int) -> Iterator[list[tuple[str, str]]]:
        """Every group's ``(id, text)``, in id order, ``size`` rows a block: one scan."""
        cursor = self.conn.execute("SELECT id, text FROM groups ORDER BY id")
        while rows := cursor.fetchmany(size):
            yield [(r[0], r[1]) for r in rows]

    @contextmanager
    def band_rows(self, touched_only: bool) -> Iterator[BandRows]:
        """The ``(band_key, group_id)`` rows to band: all of them, or (``touched_only``) those of the
        buckets that a group not edged yet falls in, what an incremental pass re-bands (held in a temp
        table for the duration)."""
        if not touched_only:
            yield BandRows(self.conn, _BAND_ROWS)
            return
        c = self.conn
        c.execute("DROP TABLE IF EXISTS temp.near_touched")
        unedged = c.execute("SELECT id, gid, signed FROM groups WHERE edged = 0 AND signed IS NOT NULL")
        with staged_rows(c, _BAND_STAGE, _own_rows(unedged.fetchall())) as own:
            c.execute(
                f"CREATE TEMP TABLE near_touched AS SELECT band_key, group_id FROM {_BAND_ROWS}"
                f" WHERE band_key IN (SELECT band_key FROM {own})"
            )
        try:
            yield BandRows(self.conn, "temp.near_touched")
        finally:
            self.conn.execute("DROP TABLE IF EXISTS temp.near_touched")

    def group_texts(self, ids: Sequence[str]) -> dict[str, str]:
        return dict(self._batched("SELECT id, text FROM groups WHERE id IN ({})", ids))

    def near_edges(self) -> dict[tuple[str, str], float]:
        """Every kept edge, ``(a, b)`` with ``a < b`` -> Jaccard."""
        rows = self.conn.execute("SELECT a, b, similarity FROM near_edges")
        return {(a, b): sim for a, b, sim in rows}

    # -- embeddings (semantic tier) ------------------------------------------------------------
    def unembedded_groups(self, limit: int) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT id, text FROM groups WHERE id NOT IN (SELECT group_id FROM embeddings)"
            " ORDER BY id LIMIT ?",
            (limit,),
        )
        return [(r[0], r[1]) for r in rows]

    def set_embeddings(self, rows: Iterable[tuple[str, bytes]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO embeddings(group_id, vector) VALUES (?, ?)", rows)

    def embeddings(self) -> tuple[list[str], list[bytes]]:
        """Every stored vector, ordered by group id."""
        rows = self.conn.execute("SELECT group_id, vector FROM embeddings ORDER BY group_id").fetchall()
        return [r[0] for r in rows], [r[1] for r in rows]

    def put_semantic_edges(self, edges: Iterable[tuple[str, str, float]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO semantic_edges(a, b, cosine) VALUES (?, ?, ?)", edges)

    def semantic_neighbours(self, gid: str) -> list[tuple[str, float]]:
        rows = self.conn.execute(
            "SELECT b, cosine FROM semantic_edges WHERE a=?1 UNION SELECT a, cosine FROM semantic_edges"
            " WHERE b=?1 ORDER BY 1",
            (gid,),
        )
        return [(r[0], r[1]) for r in rows]

    def clear_embeddings(self) -> None:
        """Drop every vector and semantic edge (another embedder or threshold); every group becomes dirty."""
        self.conn.execute("DELETE FROM embeddings")
        self.conn.execute("DELETE FROM semantic_edges")
        self.conn.execute("INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups")

    def dirty_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT group_id FROM dirty ORDER BY group_id")]

    def band_neighbour_map(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The band neighbours (sorted) of each of ``ids``: the groups holding any of its band keys
        (its kept keys, read for all of them; then the rows of those keys and the ids of their groups,
        500 a statement each). Staging 16 rows a group for one join cost twice as much (1k groups)."""
        own = self._own_bands(ids)
        holders: dict[int, list[int]] = {}
        keys = sorted({key for _, _, key in own})
        sql = "SELECT band_key, gid FROM bands WHERE band_key IN ({})"
        for key, gid in rows_for_ids(self.conn, sql, keys):
            holders.setdefault(key, []).append(gid)
        near: dict[str, set[int]] = {i: set() for i in ids}
        for i, gid, key in own:
            near[i].update(other for other in holders.get(key, ()) if other != gid)
        found = sorted({g for gids in near.values() for g in gids})
        names = dict(rows_for_ids(self.conn, "SELECT gid, id FROM groups WHERE gid IN ({})", found))
        return {i: sorted(names[g] for g in gids if g in names) for i, gids in near.items()}

    def all_band_neighbours(self) -> dict[str, list[str]]:
        """The band neighbours (sorted) of every group that has any, from one scan of the bands: a
        window count keeps the rows of the buckets holding two or more groups (a small share), so no
        join runs per group. Cheaper than :meth:`band_neighbour_map` once most groups are asked for
        (a first ingest: 100k chunks, 2.6 -> 1.1 s)."""
        c = self.conn
        rows = c.execute(
            "SELECT band_key, gid FROM (SELECT band_key, gid, count(*) OVER (PARTITION BY band_key) AS n"
            " FROM bands) WHERE n > 1 ORDER BY band_key, gid"
        )
        near: dict[int, set[int]] = {}
        for _, bucket_rows in itertools.groupby(rows, key=operator.itemgetter(0)):
            bucket = [gid for _, gid in bucket_rows]
            for a in bucket:
                near.setdefault(a, set()).update(bucket)
        ids = dict(rows_for_ids(c, "SELECT gid, id FROM groups WHERE gid IN ({})", sorted(near)))
        return {ids[a]: sorted(ids[b] for b in found if b != a) for a, found in near.items()}

    def band_neighbours(self, gid: str) -> list[str]:
        return self.band_neighbour_map([gid])[gid]

    def group_rows(self, ids: Sequence[str], *, keyed: Container[str] = ()) -> list[GroupRow]:
        """The groups of ``ids`` still in the index, sorted by id; the text of those in ``keyed`` (whose
        exact key the caller holds) is not read."""
        # the text is read only where it is not keyed (at a first ingest: hardly anywhere; 478k groups
        # read 4.8 -> 2.6 s)
        sql = "SELECT id, {}, rep_doc, rep_page, rep_start, canonical_id FROM groups"
        unkeyed = [g for g in ids if g not in keyed]
        where = " WHERE id IN ({})"
        out = [
            GroupRow(r[0], r[1], (r[2], r[3], r[4]), r[5])
            for r in self._batched(sql.format("text") + where, unkeyed)
        ]
        if len(unkeyed) < len(ids):
            rows = self._batched(sql.format("NULL") + where, [g for g in ids if g in keyed])
            out.extend(GroupRow(r[0], None, (r[2], r[3], r[4]), r[5]) for r in rows)
        return sorted(out, key=lambda g: g.id)

    # -- clusters ------------------------------------------------------------------------------
    def apply(
        self,
        assignments: Sequence[Assignment],
        variants: Sequence[tuple[str, str, float, tuple[str, ...], str]],
        run_id: int,
        *,
        every_dirty: bool = False,
    ) -> None:
        """Write decided clusters for a set of groups (whole components), their variants, and
        refresh every canonical that gained or lost a group; the groups stop being dirty.

        ``every_dirty``: the groups are exactly the dirty ones (a first ingest's), so the dirty table
        is emptied in one statement instead of a delete per group."""
        c = self.conn
        ids = [a.group_id for a in assignments]
        state = "SELECT id, canonical_id, relation, similarity, differing FROM groups"
        if len(ids) == self.group_count():  # every group (a first ingest's)
            # one scan keeps in C the groups that lead only themselves (most of them); the others are
            # read (479k groups: 3.3 s of 500-id queries)
            now: dict[str, tuple[Any, ...]] = {gid: (gid, "exact", 1.0, "[]") for gid in ids}
            now.update(
                (r[0], tuple(r[1:]))
                for r in c.execute(
                    state + " WHERE canonical_id != id OR relation != 'exact' OR similarity != 1.0"
                    " OR differing != '[]'"
                )
            )
        else:
            now = {r[0]: tuple(r[1:]) for r in self._batched(state + " WHERE id IN ({})", ids)}
        # Sources mirror their group's cluster (replace_sources copies it to new ones): a group whose
        # cluster is unchanged (most of a fresh run's: leaders of themselves) is not rewritten, and
        # the canonicals to refresh are those a rewritten group leaves or joins (every other one is
        # as its sources are: each write of sources refreshes the canonicals it touches).
        # most groups differ from their leader in nothing (leaders of themselves): "[]" without json
        decided = [
            (a.canonical_id, a.relation, a.similarity, json.dumps(list(a.differing)) if a.differing else "[]",
             a.group_id)
            for a in assignments
        ]
        changed = [row for row in decided if now.get(row[4]) != row[:4]]
        touched = {row[0] for row in changed} | {now[row[4]][0] for row in changed if row[4] in now}
        c.executemany(
            "UPDATE groups SET canonical_id=?, relation=?, similarity=?, differing=? WHERE id=?", changed
        )
        c.executemany(
            "UPDATE sources SET canonical_id=?, relation=?, similarity=? WHERE group_id=?",
            [(cid, rel, sim, gid) for cid, rel, sim, _, gid in changed],
        )
        if c.execute("SELECT 1 FROM variants LIMIT 1").fetchone() is not None:  # none on a first ingest
            c.executemany("DELETE FROM variants WHERE a=? OR b=?", [(g, g) for g in ids])
        c.executemany(
            "INSERT OR REPLACE INTO variants(a, b, similarity, differing, reason) VALUES (?, ?, ?, ?, ?)",
            [(a, b, s, json.dumps(list(d)), why) for a, b, s, d, why in variants],
        )
        if every_dirty:
            c.execute("DELETE FROM dirty")
        else:  # a statement per id: one staged DELETE ... IN was slower (478k ids: 1.15 vs 0.77 s)
            c.executemany("DELETE FROM dirty WHERE group_id=?", [(g,) for g in ids])
        self.refresh_canonicals(sorted(touched), run_id)

    def refresh_canonicals(
        self,
        ids: Sequence[str],
        run_id: int,
        pages: Pages = _NO_PAGES,
        born: Born = _NONE_BORN,
    ) -> None:
        """Re-derive each canonical from its sources: representative text, count, signature.

        A canonical that changes gets ``updated_run = run_id``; one deleted and re-made unchanged within
        the run (its tombstone of this run has the same signature) keeps its last-change run.
        ``born``: groups just made, with their source rows; such a canonical whose sources are only its
        own group's (an index-only count says so) is not read back.
        """
        c = self.conn
        sources: dict[str, list[tuple[Any, ...]]] = {}
        leader_first: set[str] = set()  # canonicals whose first source is their leader group's
        state = {r[0]: r[1:] for r in self._batched(_CANONICAL_STATE, ids)}
        # A group stored before under the id of a canonical, and gone, may have left members citing
        # it; they can only if that canonical has a row (a source cites a canonical that exists), so
        # only then are a born group's sources counted (on a first ingest: hardly ever)
        own = [cid for cid in ids if cid in born]
        counted = dict(self._batched(_CANONICAL_COUNTS, [cid for cid in own if cid in state]))
        for cid in own:
            if cid not in state or counted.get(cid) == len(born[cid]):
                sources[cid] = list(born[cid])
                leader_first.add(cid)
        read = [cid for cid in ids if cid not in sources]
        for r in self._batched(_CANONICAL_SOURCES, read):
            rows_of = sources.setdefault(r[0], [])
            if not rows_of and r[7] == r[0]:
                leader_first.add(r[0])
            rows_of.append(tuple(r[1:7]))
        # tombstones of this run: (signature, last-change run) of canonicals deleted earlier in it
        tombs = list(self._batched(_TOMBSTONES, ids))
        gone = {r[0]: r[2:] for r in tombs if r[1] == run_id}
        entombed = {r[0] for r in tombs}
        made = [cid for cid in ids if sources.get(cid)]
        # a canonical's text is its first source's span: sliced from a page at hand, else, when that
        # source is its leader group's first, the group's text (the cluster pass refreshes canonicals
        # with no page at hand: 45k page reads and decompressions for 50k records), else the page's
        led = [cid for cid in made if cid in leader_first and sources[cid][0][:2] not in pages]
        texts: dict[str, str] = dict(self._batched("SELECT id, text FROM groups WHERE id IN ({})", led))
        sliced = [cid for cid in made if cid not in texts]
        spans = self.span_texts([sources[cid][0][:4] for cid in sliced], pages)
        texts.update(zip(sliced, spans, strict=True))
        # each canonical is deleted, inserted, updated or unchanged: a few statements for the whole batch
        deleted: list[tuple[Any, ...]] = []
        inserted: list[tuple[Any, ...]] = []
        updated: list[tuple[Any, ...]] = []
        for cid in ids:
            rows = sources.get(cid)
            if not rows:
                if cid in state:
                    deleted.append((cid, run_id, *state[cid]))
                continue
            text = texts[cid]
            signature = key_hash(json.dumps([text, rows]))  # a tuple is a JSON list, as a list is
            old = state[cid][0] if cid in state else None
            # the text is kept once, in the leader group, when it is the leader's (CANONICAL_TEXT)
            stored = None if cid in leader_first else text
            if old is None:
                was = gone.get(cid)  # re-made unchanged: it keeps its last-change run
                last = was[1] if was is not None and was[0] == signature and was[1] is not None else run_id
                inserted.append((cid, stored, len(rows), signature, last))
            elif old != signature:
                updated.append((stored, len(rows), signature, run_id, cid))
        c.executemany("DELETE FROM canonicals WHERE id=?", [(r[0],) for r in deleted])
        c.executemany(
            "INSERT OR REPLACE INTO tombstones(canonical_id, run_id, signature, updated_run)"
            " VALUES (?, ?, ?, ?)",
            deleted,
        )
        c.executemany(
            "INSERT INTO canonicals(id, text, n_sources, signature, updated_run) VALUES (?, ?, ?, ?, ?)",
            inserted,
        )
        c.executemany(
            "DELETE FROM tombstones WHERE canonical_id=?", [(r[0],) for r in inserted if r[0] in entombed]
        )
        c.executemany(
            "UPDATE canonicals SET text=?, n_sources=?, signature=?, updated_run=? WHERE id=?", updated
        )
