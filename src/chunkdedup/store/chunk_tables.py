"""The chunk side of the index: sources, exact-key groups, clusters (canonicals) and variants.

Three levels, each derived from the one below by a rule on the data:

* ``sources``: one row per chunk (document, page, offsets), with its exact-key ``group_id``; stored
  in ``source_rows``, which names the group by its integer key, and read through the ``sources``
  view, which adds the group's id, cluster, relation and similarity (migration 0025);
* ``groups``: one row per exact key; its text and order are those of its smallest source;
* ``canonicals``: one per cluster of groups (its id is the leader group's id), kept in the leader's
  row (:mod:`~chunkdedup.store.canonical_rows`); the text is the leader's, the sources are those of
  every member group (relation ``exact`` for the leader's, ``near``/``semantic`` with the member's
  similarity for the others).

Every write keeps the three levels consistent with each other inside the caller's transaction. A
group whose existence or order changed is marked ``dirty`` so its cluster is re-decided.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from typing import Any

from chunkdedup.store.band_tables import BandRows as BandRows
from chunkdedup.store.band_tables import BandTable as BandTable
from chunkdedup.store.band_tables import BandTables
from chunkdedup.store.band_tables import pack_bands as pack_bands
from chunkdedup.store.batches import Tables, document_keys, has_row_triggers
from chunkdedup.store.batches import execute_for_ids as execute_for_ids
from chunkdedup.store.batches import insert_rows as insert_rows
from chunkdedup.store.batches import rows_for_ids as rows_for_ids
from chunkdedup.store.batches import staged_rows as staged_rows
from chunkdedup.store.canonical_rows import PENDING, keep_canonicals_of
from chunkdedup.store.canonical_tables import NO_PAGES, Born, CanonicalTables
from chunkdedup.store.connection import Connection
from chunkdedup.store.page_spans import (
    Pages,
    share_whole_pages,
    span_texts,
    texts_back_for_documents,
    texts_back_for_groups,
)
from chunkdedup.store.schema import MetaKey, in_cluster
from chunkdedup.types import Assignment, GroupRow, KeyedChunk

#: Each group's first source (by document, page, offset), its count, and its end.
_FIRST_SOURCES = (
    'SELECT group_id, doc_id, page, start, n, "end"'
    ' FROM (SELECT group_id, doc_id, page, start, "end", COUNT(*) OVER (PARTITION BY group_id) AS n,'
    " ROW_NUMBER() OVER (PARTITION BY group_id ORDER BY doc_id, page, start) AS rn"
    " FROM sources WHERE group_id IN ({})) WHERE rn = 1"
)

_GROUP_STATE = (
    "SELECT g.id, d.doc_id, g.rep_page, g.rep_start, g.canonical_id, g.text, g.n_sources"
    # LEFT: a group whose first document's row is missing reads as moved, and is written again
    " FROM groups g LEFT JOIN document_rows d ON d.dkey = g.rep_dkey WHERE g.id IN ({})"
)





_NO_SIGNED: Mapping[str, int] = {}

_NO_GIDS: Mapping[str, int] = {}

_NONE_BORN: Born = {}


#: staging tables for one-statement writes (:func:`staged_rows`): name and columns
_GROUP_STAGE = (
    "group_stage",
    "id TEXT, text TEXT, n_sources INTEGER, rep_dkey INTEGER, rep_page INTEGER, rep_start INTEGER,"
    " canon TEXT, signed INTEGER, gid INTEGER, csig BLOB, crun INTEGER, cn INTEGER",
)

#: the columns of a new group's row, as refresh_groups writes them (the stage's, in its order); its
#: ``gid`` is given by replace_sources, whose source rows name it
_GROUP_COLUMNS = "id, text, n_sources, rep_dkey, rep_page, rep_start, canon, signed, gid, csig, crun, cn"

_ID_STAGE = ("id_stage", "id TEXT")

#: The indexes of groups a first ingest builds after its chunk phase (:meth:`GroupTables.defer_indexes`):
#: the chunk phase of an index with no groups reads none of them (the cluster pass reads the unsigned
#: groups through it). The index by cluster is not deferred: it holds only groups another leads (migration
#: 0030), none while a first ingest's chunk phase writes.
DEFERRED_INDEXES = ("groups_unsigned",)
_DEFERRED_INDEXES: MetaKey = "deferred_indexes"




def _common(stored: Iterator[str], ids: Sequence[str]) -> list[str]:
    """The ids of ``ids`` that ``stored`` yields, both sorted: one merge of the two."""
    out: list[str] = []
    at = next(stored, None)
    for gid in ids:
        while at is not None and at < gid:
            at = next(stored, None)
        if at is None:
            break
        if at == gid:
            out.append(gid)
    return out


class GroupTables(Tables):
    """Reads and writes of sources, groups and variants. Given the index's connection (``db``: meta and
    transactions, for the indexes a first ingest defers), the band family (a gone group's band rows go
    with it, its band neighbours become dirty) and the canonical family (each write re-derives the
    canonicals it touched)."""

    def __init__(self, db: Connection, bands: BandTables, canonicals: CanonicalTables) -> None:
        super().__init__(db.conn)
        self.db = db
        self.bands = bands
        self.canonicals = canonicals

    def defer_indexes(self) -> bool:
        """On an index with no groups yet, drop the indexes of groups that the chunk phase does not
        read (:data:`DEFERRED_INDEXES`): :meth:`build_deferred_indexes` makes them again, as they
        were, once all groups are written. Each batch of a first ingest inserts its groups at random
        places of each of them, so every batch rewrote most of their pages. True when they are
        deferred (now, or still, by a run that was killed: the next chunk phase builds them). Queries
        meanwhile read the groups without them (slower, the same rows)."""
        if self.db.meta(_DEFERRED_INDEXES) is not None:
            return True
        if self.has_groups():
            return False
        with self.db.transaction():
            self.db.drop_keeping_sql("index", DEFERRED_INDEXES, _DEFERRED_INDEXES)
        return True

    def build_deferred_indexes(self) -> bool:
        """Make the indexes :meth:`defer_indexes` dropped (one sort of the groups each, one
        transaction). True when there were any."""
        if self.db.meta(_DEFERRED_INDEXES) is None:
            return False
        with self.db.transaction():
            self.db.make_again("index", _DEFERRED_INDEXES)
        return True

    def docs_with_sources(self, doc_ids: Sequence[str]) -> list[str]:
        """Those of ``doc_ids`` that have sources (were chunked before), sorted."""
        sql = (
            "SELECT d.doc_id FROM document_rows d WHERE d.doc_id IN ({})"
            " AND EXISTS (SELECT 1 FROM source_rows s WHERE s.dkey = d.dkey)"
        )
        return sorted({r[0] for r in self._batched(sql, sorted(set(doc_ids)))})

    def replace_sources(
        self,
        doc_ids: Sequence[str],
        chunks: Sequence[KeyedChunk],
        run_id: int,
        pages: Pages = NO_PAGES,
        signed: Mapping[str, int] = _NO_SIGNED,
        keys: Mapping[str, int] | None = None,
    ) -> int:
        """Replace the sources of ``doc_ids`` by ``chunks`` (chunks of those documents), then re-derive
        every group and canonical they touched, once for the whole batch. ``pages``: the clean texts of
        the batch's pages as just stored (their spans are sliced from them, not read back). ``keys``:
        the documents' row keys (:func:`document_keys`), when the caller has read them; else read here.

        A new source joins its group's current cluster (a new group is its own). A group that keeps a
        source keeps its bands and cluster, even if all its old sources were among those replaced;
        one left with none is dropped. Returns how many canonicals the old sources belonged to.
        """
        c = self.conn
        ids = sorted(set(doc_ids))
        if keys is None:
            keys = document_keys(c, ids)  # source rows name their document by its row's key
        dkeys = sorted(keys[d] for d in ids if d in keys)
        old = list(
            rows_for_ids(
                c,
                "SELECT DISTINCT g.id, g.canonical_id FROM source_rows s JOIN groups g ON g.gid = s.gid"
                " WHERE s.dkey IN ({})",
                dkeys,
            )
        )
        texts_back_for_documents(c, dkeys)  # before the sources a page may read its text through go
        execute_for_ids(c, "DELETE FROM source_rows WHERE dkey IN ({})", dkeys)
        new_groups = sorted({k.canonical_id for k in chunks})
        current: dict[str, str] = {}
        gids: dict[str, int] = {}
        for gid, group_id, canonical_id in self._batched(
            "SELECT gid, id, canonical_id FROM groups WHERE id IN ({})", new_groups
        ):
            current[group_id] = canonical_id
            gids[group_id] = gid
        # a group this batch makes gets its integer key here, in id order (as its insert would give it),
        # so that its source rows can name it before its row is written
        top = int(c.execute("SELECT COALESCE(MAX(gid), 0) FROM groups").fetchone()[0])
        gids.update((g, top + i) for i, g in enumerate((g for g in new_groups if g not in current), 1))
        c.executemany(
            'INSERT INTO source_rows(dkey, page, start, "end", gid) VALUES (?, ?, ?, ?, ?)',
            [(keys[k.chunk.doc_id], k.chunk.page, k.chunk.start, k.chunk.end, gids[k.canonical_id])
             for k in chunks],
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
        group_ids = sorted({r[0] for r in old} | set(new_groups))
        lost = self.refresh_groups(group_ids, pages, born, signed, gids, run_id)
        canonicals = old_canonicals | set(current.values()) | lost | set(new_groups)
        self.canonicals.refresh(sorted(canonicals), run_id, pages, born)
        share_whole_pages(c, [k.chunk for k in chunks], pages, keys)
        return len(old_canonicals)

    def refresh_groups(
        self,
        ids: Sequence[str],
        pages: Pages = NO_PAGES,
        born: Born = _NONE_BORN,
        signed: Mapping[str, int] = _NO_SIGNED,
        gids: Mapping[str, int] = _NO_GIDS,
        run_id: int = 0,
    ) -> set[str]:
        """Re-derive groups from their sources; mark new, moved, reworded or emptied ones dirty.

        Returns the canonical ids that lost a group (their cluster must be refreshed too). Reads are
        batched (each group's first source in one query, its text sliced from its page, see
        :func:`~chunkdedup.store.page_spans.span_texts`), and a group whose text, count and first
        source are unchanged is not written.
        ``born``: groups not in the index yet, with every source row they have (sorted), not read.
        ``signed``: the ``signed`` values (1) of new groups of a first ingest whose band keys the run
        holds, written with their rows (:meth:`put_first_bands` writes their band rows). ``gids``: the
        integer keys the new groups' source rows name (:meth:`replace_sources` gives them).
        """
        c = self.conn
        stored = [g for g in ids if g not in born]
        rows = list(self._batched(_FIRST_SOURCES, stored))
        rows.extend((g, *born[g][0][:3], len(born[g]), born[g][0][3]) for g in ids if g in born)
        texts = span_texts(c, [(r[1], r[2], r[3], r[5]) for r in rows], pages)
        first = {r[0]: (*r[1:5], text) for r, text in zip(rows, texts, strict=True)}
        old = {r[0]: r[1:] for r in self._batched(_GROUP_STATE, stored)}
        # a group names its first source's document by the document row's key (migration 0033)
        keys = document_keys(c, sorted({v[0] for v in first.values()}))
        lost: set[str] = set()
        reworded: list[str] = []  # groups whose text changes
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
                # a new group leads its own cluster: ``canon`` is NULL (migration 0030)
                # its canonical's columns as CanonicalTables.refresh writes them, the signature still to be
                # made (PENDING): the row is written at its size, not grown in place (canonical_rows)
                key, canonical = keys[doc_id], (PENDING, run_id, n)
                inserts.append((gid, text, n, key, page, start, None, signed.get(gid), gids[gid], *canonical))
                dirty.append(gid)
                continue
            if (was[4], was[5], tuple(was[:3])) != (text, n, (doc_id, page, start)):
                updates.append((text, n, keys[doc_id], page, start, gid))
            if was[4] != text:
                reworded.append(gid)
            if tuple(was[:3]) != (doc_id, page, start) or was[4] != text:
                dirty.append(gid)  # its order moved, or its words (the meaning guard reads their case)
        self._drop_groups(gone)
        texts_back_for_groups(c, reworded)  # before the words a page may read change
        # one statement each (see staged_rows): the text-index triggers then write the FTS5 index once
        # per batch, not once per row
        if inserts:
            insert_rows(c, _GROUP_STAGE, "groups", _GROUP_COLUMNS, inserts)
        if updates and not has_row_triggers(c, "groups"):
            c.executemany(
                "UPDATE groups SET text=?, n_sources=?, rep_dkey=?, rep_page=?, rep_start=? WHERE id=?",
                updates,
            )
        elif updates:
            with staged_rows(c, _GROUP_STAGE, [(u[5], *u[:5], *[None] * 6) for u in updates]) as stage:
                c.execute(
                    "UPDATE groups SET text=s.text, n_sources=s.n_sources, rep_dkey=s.rep_dkey,"
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
            f"INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups g WHERE {in_cluster('g', '?1')}"
            " AND id != ?2",
            [(canonical_id, gid) for gid, canonical_id in gone],
        )
        self.bands.drop_bands([gid for gid, _ in gone])
        c.executemany(
            "INSERT OR IGNORE INTO dirty(group_id) SELECT b FROM semantic_edges WHERE a=?1"
            " UNION SELECT a FROM semantic_edges WHERE b=?1",
            ids,
        )
        with staged_rows(c, _ID_STAGE, ids) as stage:  # one statement: the FTS5 index is written once
            keep_canonicals_of(c, stage)  # before the rows that hold them go
            c.execute(f"DELETE FROM groups WHERE id IN (SELECT id FROM {stage})")
        c.executemany("DELETE FROM embeddings WHERE group_id=?", ids)
        c.executemany("DELETE FROM semantic_edges WHERE a=?1 OR b=?1", ids)
        c.executemany("DELETE FROM near_edges WHERE a=?", ids)
        c.executemany("DELETE FROM near_edges WHERE b=?", ids)
        c.executemany("DELETE FROM variants WHERE a=?1 OR b=?1", ids)  # a gone group is no one's version
        c.executemany("DELETE FROM dirty WHERE group_id=?", ids)

    def has_groups(self) -> bool:
        return self.conn.execute("SELECT 1 FROM groups LIMIT 1").fetchone() is not None

    def group_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0])

    def mark_dirty(self, ids: Iterable[str]) -> None:
        """These groups' clusters are to be re-decided by the next cluster pass."""
        self.conn.executemany("INSERT OR IGNORE INTO dirty(group_id) VALUES (?)", [(g,) for g in ids])

    def mark_all_dirty(self) -> None:
        """Every group's cluster is to be re-decided (the clustering settings changed)."""
        self.conn.execute("INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups")

    def dirty_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT group_id FROM dirty ORDER BY group_id")]

    def group_texts(self, ids: Sequence[str]) -> dict[str, str]:
        return dict(self._batched("SELECT id, text FROM groups WHERE id IN ({})", ids))

    def group_text_blocks(self, size: int) -> Iterator[list[tuple[str, str]]]:
        """Every group's ``(id, text)``, in id order, ``size`` rows a block: one scan."""
        cursor = self.conn.execute("SELECT id, text FROM groups ORDER BY id")
        while rows := cursor.fetchmany(size):
            yield [(r[0], r[1]) for r in rows]

    def group_rows(self, ids: Sequence[str], *, keyed: Container[str] = ()) -> list[GroupRow]:
        """The groups of ``ids`` still in the index, sorted by id; the text of those in ``keyed`` (whose
        exact key the caller holds) is not read."""
        # the text is read only where it is not keyed (at a first ingest: hardly anywhere; 478k groups
        # read 4.8 -> 2.6 s)
        sql = (
            "SELECT g.id, {}, d.doc_id, g.rep_page, g.rep_start, g.canonical_id"
            " FROM groups g JOIN document_rows d ON d.dkey = g.rep_dkey"
        )
        unkeyed = [g for g in ids if g not in keyed]
        where = " WHERE g.id IN ({})"
        out = [
            GroupRow(r[0], r[1], (r[2], r[3], r[4]), r[5])
            for r in self._batched(sql.format("g.text") + where, unkeyed)
        ]
        if len(unkeyed) < len(ids):
            rows = self._batched(sql.format("NULL") + where, [g for g in ids if g in keyed])
            out.extend(GroupRow(r[0], None, (r[2], r[3], r[4]), r[5]) for r in rows)
        return sorted(out, key=lambda g: g.id)

    def existing_groups(self, ids: Sequence[str]) -> list[str]:
        """Those of ``ids`` (sorted) still in the index, in their order: from one scan of the ids when
        they are half the groups or more, else 500 a statement."""
        if len(ids) * 2 < self.group_count():
            held = {r[0] for r in self._batched("SELECT id FROM groups WHERE id IN ({})", ids)}
            return [gid for gid in ids if gid in held]
        # both sorted (the index of ids: byte order, as str's for UTF-8): one merge, no set of either
        return _common((r[0] for r in self.conn.execute("SELECT id FROM groups ORDER BY id")), ids)

    def apply(
        self,
        assignments: Sequence[Assignment],
        variants: Sequence[tuple[str, str, float, tuple[str, ...], str]],
        run_id: int,
        *,
        every_dirty: bool = False,
        alone: Sequence[str] = (),
    ) -> None:
        """Write decided clusters for a set of groups (whole components), their variants, and
        refresh every canonical that gained or lost a group; the groups stop being dirty.

        ``every_dirty``: the groups are exactly the dirty ones (a first ingest's), so the dirty table
        is emptied in one statement instead of a delete per group. ``alone``: groups of the set (in the
        index) that lead themselves, given by id rather than as assignments (a first ingest's are most
        of its groups: no row is made for those whose state is already that)."""
        c = self.conn
        ids = [a.group_id for a in assignments]
        state = "SELECT id, canonical_id, relation, similarity, differing FROM groups"
        own = " WHERE canon IS NOT NULL OR rel IS NOT NULL OR similarity != 1.0 OR diff IS NOT NULL"
        if len(ids) + len(alone) == self.group_count():  # every group (a first ingest's)
            # one scan keeps in C the groups that lead only themselves (most of them); the others are
            # read (479k groups: 3.3 s of 500-id queries)
            now: dict[str, tuple[Any, ...]] = {gid: (gid, "exact", 1.0, "[]") for gid in ids}
            now.update((r[0], tuple(r[1:])) for r in c.execute(state + own))
            assigned = set(ids)
            moved = [gid for gid in now if gid not in assigned]  # alone, led by another group until now
            del assigned
        else:
            now = {r[0]: tuple(r[1:]) for r in self._batched(state + " WHERE id IN ({})", [*ids, *alone])}
            moved = [gid for gid in alone if now[gid] != (gid, "exact", 1.0, "[]")]
        # Sources read their cluster through their group (the ``sources`` view): a group whose
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
        changed += [(gid, "exact", 1.0, "[]", gid) for gid in moved]
        touched = {row[0] for row in changed} | {now[row[4]][0] for row in changed if row[4] in now}
        c.executemany(
            "UPDATE groups SET canon = NULLIF(?1, id), rel = NULLIF(?2, 'exact'), similarity = ?3,"
            " diff = NULLIF(?4, '[]') WHERE id = ?5",
            changed,
        )
        if c.execute("SELECT 1 FROM variants LIMIT 1").fetchone() is not None:  # none on a first ingest
            c.executemany("DELETE FROM variants WHERE a=? OR b=?", [(g, g) for g in (*ids, *alone)])
        c.executemany(
            "INSERT OR REPLACE INTO variants(a, b, similarity, differing, reason) VALUES (?, ?, ?, ?, ?)",
            [(a, b, s, json.dumps(list(d)), why) for a, b, s, d, why in variants],
        )
        if every_dirty:
            c.execute("DELETE FROM dirty")
        else:  # a statement per id: one staged DELETE ... IN was slower (478k ids: 1.15 vs 0.77 s)
            c.executemany("DELETE FROM dirty WHERE group_id=?", [(g,) for g in (*ids, *alone)])
        self.canonicals.refresh(sorted(touched), run_id)
