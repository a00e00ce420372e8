"""The canonical level of the index: each cluster's canonical re-derived from its sources (representative
text, count, signature), its tombstone when it goes, kept in the leader group's row
(:mod:`~chunkdedup.store.canonical_rows`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from chunkdedup.normalize import key_hash
from chunkdedup.store.batches import Tables
from chunkdedup.store.canonical_rows import CANONICAL_ROW_STATE, CANONICAL_STATE, PENDING, put_canonicals
from chunkdedup.store.page_spans import Pages, span_texts
from chunkdedup.store.schema import SIGNATURE_BYTES

_TOMBSTONES = "SELECT canonical_id, run_id, signature, updated_run FROM tombstones WHERE canonical_id IN ({})"

_CANONICAL_COUNTS = (
    "SELECT canonical_id, COUNT(*) FROM cluster_sources WHERE canonical_id IN ({}) GROUP BY canonical_id"
)

_CANONICAL_SOURCES = (
    'SELECT canonical_id, doc_id, page, start, "end", relation, similarity, group_id FROM cluster_sources'
    " WHERE canonical_id IN ({}) ORDER BY canonical_id, doc_id, page, start"
)

#: no page at hand: a canonical's text is read from its group or its page
NO_PAGES: Pages = {}

#: Groups a batch makes, with their source rows (doc_id, page, start, end, relation, similarity), sorted.
Born = Mapping[str, Sequence[tuple[Any, ...]]]

_NONE_BORN: Born = {}


class CanonicalTables(Tables):
    """The canonicals: re-derived from their sources whenever a write touches them."""

    def refresh(
        self,
        ids: Sequence[str],
        run_id: int,
        pages: Pages = NO_PAGES,
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
        state = {r[0]: r[1:] for r in self._batched(CANONICAL_STATE, ids)}
        pending = {cid for cid, row in state.items() if row[0] == PENDING}  # groups just made: none yet
        for cid in pending:
            del state[cid]
        if c.execute("SELECT 1 FROM canonical_rows LIMIT 1").fetchone() is not None:
            state.update((r[0], r[1:]) for r in self._batched(CANONICAL_ROW_STATE, ids))
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
        spans = span_texts(c, [sources[cid][0][:4] for cid in sliced], pages)
        texts.update(zip(sliced, spans, strict=True))
        # each canonical is deleted, inserted, updated or unchanged: a few statements for the whole batch
        deleted: list[tuple[Any, ...]] = []
        inserted: list[tuple[Any, ...]] = []
        updated: list[tuple[Any, ...]] = []
        cleared: list[str] = []
        for cid in ids:
            rows = sources.get(cid)
            if not rows:
                if cid in state:
                    deleted.append((cid, run_id, *state[cid][:2]))
                elif cid in pending:
                    cleared.append(cid)
                continue
            text = texts[cid]
            # a tuple is a JSON list, as a list is; kept in SIGNATURE_BYTES (migrations 0025, 0035)
            signature = bytes.fromhex(key_hash(json.dumps([text, rows])))[:SIGNATURE_BYTES]
            old = state[cid][0] if cid in state else None
            # the text is kept once, in the leader group, when it is the leader's (CANONICAL_TEXT)
            stored = None if cid in leader_first else text
            if old is None:
                was = gone.get(cid)  # re-made unchanged: it keeps its last-change run
                last = was[1] if was is not None and was[0] == signature and was[1] is not None else run_id
                inserted.append((cid, stored, len(rows), signature, last))
            elif old != signature:
                updated.append((cid, stored, len(rows), signature, run_id))
            elif state[cid][2] == 0:  # unchanged, in canonical_rows: to its group's row if there is one now
                updated.append((cid, stored, len(rows), signature, state[cid][1]))
        c.executemany(
            "INSERT OR REPLACE INTO tombstones(canonical_id, run_id, signature, updated_run)"
            " VALUES (?, ?, ?, ?)",
            deleted,
        )
        c.executemany(
            "DELETE FROM tombstones WHERE canonical_id=?", [(r[0],) for r in inserted if r[0] in entombed]
        )
        where = {cid: 1 for cid in pending} | {k: v[2] for k, v in state.items()}
        put_canonicals(c, inserted + updated, [*(r[0] for r in deleted), *cleared], where)
