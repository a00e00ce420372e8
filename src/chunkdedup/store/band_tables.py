"""MinHash bands and the verified near edges: the band rows the near tier reads its candidate pairs from,
and the edges the Ray path keeps between runs.

A group's band keys are a function of its exact key and the hashing settings, and its exact key does not
change while it exists (its id is that key's hash), so they are not kept in its row (migration 0041:
``signed`` is 1 once its band rows are written or staged, NULL before). Where the store needs the band
rows a group has (to drop them with it, to find its band neighbours), it asks the :class:`BandKeyer` the
run opens the store with (:attr:`BandTables.keyer`): the near tier's own signing of the group's text.
A keyer of other hashing settings than the index's (a run that changes them, and signs every group
again), or none (a write outside an ingest run), cannot name the old rows: a drop then clears every
signature and band, as that run's cluster pass would, and the next cluster pass signs every group again.
"""

from __future__ import annotations

import itertools
import operator
import sqlite3
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from chunkdedup.store.batches import Tables, rows_for_ids, staged_rows

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class BandKeyer(Protocol):
    """Signs texts as the near tier does: what a run gives the store so it can name a group's band rows."""

    #: the fingerprint of the hashing settings it signs with (the index records its own: ``near_hashing``)
    hashing: str

    def keys(self, texts: Sequence[str]) -> npt.NDArray[np.int64]:
        """Each text's band keys, ``(len(texts), bands)``, as the chunk phase signs a chunk of it."""
        ...

#: the band rows with their groups' ids (bands name a group by its integer key, migration 0012)
_BAND_ROWS = "(SELECT b.band_key AS band_key, g.id AS group_id FROM bands b JOIN groups g ON g.gid = b.gid)"

_BAND_STAGE = ("group_bands", "id TEXT, gid INTEGER, band_key INTEGER")  # groups' own band rows



#: A band key as the index keeps it (migration 0022): the low 32 bits of the 64-bit key the near tier
#: computes, as a signed integer. SQLite stores it in 4 bytes instead of 8, which took the band rows
#: and the groups' kept keys of 100k one-chunk records from 43 to 30 MB. Every row a key names is kept
#: under its folded key, so no pair of groups sharing a key is lost; keys that differ only above the
#: low 32 bits share a folded one (at 1M groups, about 30k such pairs of random keys among 16M), and
#: their pairs are candidates that the exact verification turns down, as it does any other.
_FOLD_MASK = 0xFFFFFFFF
_FOLD_SIGN = 0x80000000


def fold_key(key: int) -> int:
    """A 64-bit band key as the index keeps it (folding a folded key changes nothing)."""
    return ((key & _FOLD_MASK) ^ _FOLD_SIGN) - _FOLD_SIGN


def fold_keys(keys: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """:func:`fold_key` of every key of an array (int64 or uint64), as int32."""
    import numpy as np

    given = np.asarray(keys)
    if given.dtype == np.int32:  # folded already (a first ingest's held keys): no copy through int64
        return given
    return given.astype(np.int64, copy=False).astype(np.int32)


def pack_bands(keys: Sequence[int]) -> bytes:
    """A group's band keys as migrations 0022-0040 kept them in its ``signed`` value (0041 keeps a mark):
    folded (:func:`fold_key`) 32-bit little-endian integers, in order; a group whose keys are all one
    key (a small shingle set's, see :func:`chunkdedup.dedup.near.sign_keys`) kept it once."""
    folded = [fold_key(k) for k in keys]
    if len(set(folded)) == 1:
        folded = folded[:1]
    return struct.pack(f"<{len(folded)}i", *folded)


def _one_key(rows: npt.NDArray[np.int32]) -> npt.NDArray[np.bool_]:
    """Which rows of folded band keys are one key repeated (a small shingle set's, see
    :func:`chunkdedup.dedup.near.sign_keys`): such a group keeps one band row."""
    import numpy as np

    return (rows == rows[:, :1]).all(axis=1) if rows.size else np.zeros(len(rows), np.bool_)


def pack_wide_bands(keys: Sequence[int]) -> bytes:
    """Band keys as migration 0018 packed them (64-bit, before 0022 folded them)."""
    return struct.pack(f"<{len(keys)}q", *keys)


def fold_wide_bands(blob: bytes | None) -> bytes | None:
    """A ``signed`` value of 64-bit keys (0018) as 0022 keeps it (:func:`pack_bands`)."""
    if blob is None or isinstance(blob, int):
        return blob
    return pack_bands(struct.unpack(f"<{len(blob) // 8}q", blob))


def _own_rows(groups: Sequence[tuple[str, int]], keys: npt.NDArray[np.int32]) -> list[tuple[str, int, int]]:
    """The band rows ``(id, gid, band key)`` of groups ``(id, gid)`` whose folded keys are ``keys[i]``
    (a key repeated within a group's bands is one row)."""
    return [(i, g, k) for (i, g), row in zip(groups, keys.tolist(), strict=True) for k in dict.fromkeys(row)]



#: band rows per statement of put_first_bands: 998 variables, within SQLite's oldest limit (999)
_BAND_ROWS_PER_INSERT = 499



def _interleaved(keys: npt.NDArray[np.int32], gids: npt.NDArray[np.int64], lo: int, hi: int) -> list[int]:
    """The values of band rows ``lo:hi`` for :func:`_band_insert`: key, gid, key, gid..."""
    import numpy as np

    out = np.empty(2 * (hi - lo), np.int64)
    out[0::2] = keys[lo:hi]
    out[1::2] = gids[lo:hi]
    return list(out.tolist())


def _sorted_rows(
    rows: npt.NDArray[np.int32], gids: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """The band rows of groups ``gids`` (``rows[i]``: the folded keys of ``gids[i]``, gids in
    ``[0, 2**31)``) as (band key, gid) sorted, a repeated pair once (a key repeated within a group's
    bands is one row, the table's key): one int64 a row, the key in its high half, sorted in place
    (1M groups: 16M rows in 128 MB, where an order, the keys and the gids each taken through it,
    then both filtered, held ~600 MB at once). A group whose keys are one key (a small shingle set's)
    gives one row from the start, not 16 to drop after the sort (1M tiny records: 5.5M rows, not 16M)."""
    import sys

    import numpy as np

    single = _one_key(rows)
    many = np.flatnonzero(~single)
    wide = many.size * rows.shape[1]
    packed = np.empty(wide + rows.shape[0] - many.size, np.int64)
    spread = packed[:wide].reshape(-1, rows.shape[1])
    spread[:] = rows[many]
    spread <<= 32
    spread += gids[many].reshape(-1, 1)  # a gid is non-negative: the low half, without a carry
    del many, spread
    alone = np.flatnonzero(single)
    packed[wide:] = rows[alone, 0]
    packed[wide:] <<= 32
    packed[wide:] += gids[alone]
    del alone, single
    packed.sort()
    if packed.size > 1:
        repeated = packed[1:] == packed[:-1]
        if repeated.any():
            packed = np.delete(packed, np.flatnonzero(repeated) + 1)
        del repeated
    high = 1 if sys.byteorder == "little" else 0
    keys = packed.view(np.int32)[high::2].copy()
    np.bitwise_and(packed, 0xFFFFFFFF, out=packed)  # the gids, in place
    return keys, packed


def _band_insert(rows: int, table: str = "bands") -> str:
    """An INSERT of ``rows`` band rows, (band key, gid) each."""
    return f"INSERT INTO {table}(band_key, gid) VALUES " + ",".join(["(?, ?)"] * rows)


#: A first ingest's band rows go into this scratch table of the shape of ``bands``, in key order, and
#: from it into the empty ``bands`` in one ``INSERT ... SELECT *``, which SQLite makes as a bulk load
#: (its transfer optimization) that fills each leaf: rows inserted in key order leave each leaf of a
#: key-ordered table a third empty (100k tiny records: bands 80 -> 70 bytes a record, the copy 0.1 s).
_BAND_FILL = (
    "CREATE TEMP TABLE IF NOT EXISTS band_fill(band_key INTEGER NOT NULL, gid INTEGER NOT NULL,"
    " PRIMARY KEY(band_key, gid)) WITHOUT ROWID"
)



@dataclass(frozen=True, slots=True)
class BandTable:
    """Band rows as :meth:`BandTables.put_first_bands` wrote them: ``keys[r]``, ``gids[r]`` sorted by
    (band key, gid), and each gid's group id."""

    keys: npt.NDArray[np.int32]
    gids: npt.NDArray[np.int64]
    ids: Mapping[int, str]



class BandRows:
    """A set of band rows (:meth:`BandTables.band_rows`): its groups, its rows in blocks, its buckets."""

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



class BandTables(Tables):
    """The band rows and their neighbours, and the kept near edges. ``keyer``: signs a group's text as
    the near tier does (see the module's notes), given when the store is opened for a run
    (:meth:`Store.open <chunkdedup.store.core.Store.open>`); ``None`` for a store that names no band rows
    (a reader, a write outside an ingest run)."""

    def __init__(self, conn: sqlite3.Connection, keyer: BandKeyer | None = None) -> None:
        super().__init__(conn)
        self.keyer = keyer

    def _signed_rows(self, groups: Sequence[tuple[str, int, str]]) -> list[tuple[str, int, int]]:
        """The band rows ``(id, gid, band key)`` of signed groups ``(id, gid, text)``."""
        if not groups:
            return []
        keys = fold_keys(self._keyer().keys([text for _, _, text in groups]))
        return _own_rows([(i, g) for i, g, _ in groups], keys)

    def _keyer(self) -> BandKeyer:
        if self.keyer is None:
            raise RuntimeError("the store needs a band keyer to name band rows: Store.open(..., keyer=)")
        return self.keyer

    def _keyer_current(self) -> bool:
        """Whether the keyer signs as the index's groups were signed (its hashing settings)."""
        found = self.conn.execute("SELECT value FROM meta WHERE key = 'near_hashing'").fetchone()
        return self.keyer is not None and (found is None or found[0] == self.keyer.hashing)

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

    def unsigned_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM groups WHERE signed IS NULL").fetchone()[0])

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
        """Mark groups signed and stage their band rows, from (group id, band keys) (two statements for
        all of them; the MinHash signature itself is not kept: the band rows are what the near tier
        reads, after :meth:`merge_bands`). A group signed again gets the
        same bands (a function of its text and the hashing settings, and a change of those clears
        every band first), so its band rows are kept, not deleted and written again."""
        c = self.conn
        rows = list(rows)
        c.executemany("UPDATE groups SET signed=1 WHERE id=?", [(gid,) for gid, _ in rows])
        # appended to the stage, merged into bands in key order by merge_bands
        c.executemany(
            "INSERT INTO band_stage(group_id, band_key) VALUES (?, ?)",
            [(gid, b) for gid, bands in rows for b in dict.fromkeys(map(fold_key, bands))],
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
        unsigned = {r[0] for r in c.execute("SELECT gid FROM groups WHERE signed IS NULL")}
        # each held group's gid at the last of its places in ids (-1 elsewhere, and for a group dropped
        # since: no row), from the index of ids alone; the places are looked up by the held ids' own
        # strings (a dict of the groups' ids read back was ~200 MB at 1M groups)
        place = {gid: i for i, gid in enumerate(ids)}
        found = np.full(len(ids), -1, np.int64)
        count = 0
        for group_id, gid in c.execute("SELECT id, gid FROM groups"):
            count += 1
            i = place.get(group_id)
            if i is not None:
                found[i] = gid
        del place
        # for each gid, sorted, its place in ids (a group named twice has the same keys twice)
        places = np.flatnonzero(found >= 0)[::-1]
        gids, last = np.unique(found[places], return_index=True)
        places = places[last]
        held = dict(zip(gids.tolist(), [ids[i] for i in places.tolist()], strict=True))  # gid -> id
        rows = fold_keys(np.asarray(keys)[places])
        if count - len(unsigned) > len(held.keys() - unsigned):  # signed groups not held
            sql = "SELECT id, gid, text FROM groups WHERE signed IS NOT NULL"
            others = [(gid, gid_id, text) for gid_id, gid, text in c.execute(sql) if gid not in held]
            extra = fold_keys(self._keyer().keys([text for _, _, text in others]))
            gids = np.concatenate((gids, np.array([g for g, _, _ in others], np.int64)))
            rows = np.concatenate((rows, extra.reshape(len(others), rows.shape[1])))
            held.update((g, gid_id) for g, gid_id, _ in others)
            in_order = np.argsort(gids, kind="stable")
            gids, rows = gids[in_order], rows[in_order]
        flat, owner = _sorted_rows(rows, gids)
        # many rows a statement: a statement per row spent most of the insert stepping and resetting
        # it (722k rows: 1.24-1.45 -> 0.35-0.38 s at 499 a statement). The values become Python ints a
        # statement at a time: all at once, 1M groups' 16M rows were 32M ints, over a GB.
        step = _BAND_ROWS_PER_INSERT
        whole = flat.size // step * step
        parts = (_interleaved(flat, owner, i, i + step) for i in range(0, whole, step))
        c.execute(_BAND_FILL)
        c.execute("DELETE FROM temp.band_fill")
        fill = "temp.band_fill"
        c.executemany(_band_insert(step, fill), parts)
        if whole < flat.size:
            c.execute(_band_insert(flat.size - whole, fill), _interleaved(flat, owner, whole, flat.size))
        c.execute("INSERT INTO bands SELECT * FROM temp.band_fill")
        c.execute("DROP TABLE temp.band_fill")
        # the keys of held groups not signed yet (their rows were written with them, most of a first
        # ingest's: an UPDATE of every group rewrote the whole table, 45k groups 0.4-0.6 s)
        if unsigned:
            mine = np.flatnonzero(np.isin(gids, np.fromiter(unsigned, np.int64, len(unsigned))))
            c.executemany("UPDATE groups SET signed=1 WHERE gid=?", [(g,) for g in gids[mine].tolist()])
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
        unedged = c.execute("SELECT id, gid, text FROM groups WHERE edged = 0 AND signed IS NOT NULL")
        with staged_rows(c, _BAND_STAGE, self._signed_rows(unedged.fetchall())) as own:
            c.execute(
                f"CREATE TEMP TABLE near_touched AS SELECT band_key, group_id FROM {_BAND_ROWS}"
                f" WHERE band_key IN (SELECT band_key FROM {own})"
            )
        try:
            yield BandRows(self.conn, "temp.near_touched")
        finally:
            self.conn.execute("DROP TABLE IF EXISTS temp.near_touched")

    def near_edges(self) -> dict[tuple[str, str], float]:
        """Every kept edge, ``(a, b)`` with ``a < b`` -> Jaccard."""
        rows = self.conn.execute("SELECT a, b, similarity FROM near_edges")
        return {(a, b): sim for a, b, sim in rows}

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

    def drop_bands(self, ids: Sequence[str]) -> None:
        """The band rows of groups ``ids`` go, their band neighbours first marked dirty (one statement
        of each for all of them)."""
        c = self.conn
        if not self._keyer_current():
            # signed under other settings (this run signs every group again: its cluster pass clears
            # them), or no keyer (a write outside an ingest run): these groups' rows cannot be named;
            # every signature and band is cleared now, nothing is left behind, and the next cluster
            # pass signs every group again
            if c.execute("SELECT 1 FROM groups WHERE signed IS NOT NULL LIMIT 1").fetchone() is not None:
                self.clear_signatures()
            return
        with staged_rows(c, _BAND_STAGE, self._own_bands(ids)) as own:
            c.execute(
                "INSERT OR IGNORE INTO dirty(group_id) SELECT DISTINCT g2.id FROM " + own + " b1"
                " CROSS JOIN bands b2 ON b2.band_key = b1.band_key AND b2.gid != b1.gid"
                " CROSS JOIN groups g2 ON g2.gid = b2.gid"
            )
            c.execute(f"DELETE FROM bands WHERE (band_key, gid) IN (SELECT band_key, gid FROM {own})")

    def _own_bands(self, ids: Sequence[str]) -> list[tuple[str, int, int]]:
        """The band rows ``(id, gid, band key)`` of the signed groups of ``ids``, signed again from their
        texts (the rows a group has in bands once merged: no index of bands by group is kept)."""
        sql = "SELECT id, gid, text FROM groups WHERE id IN ({}) AND signed IS NOT NULL"
        return self._signed_rows(list(self._batched(sql, sorted(set(ids)))))
