"""Boilerplate statistics: each document's keys (``doc_keys``), the units each key is counted in, the
corpus chrome and each document's chrome keys, and the lines stripping removed (``stripped``, ``bp_keys``).
"""

from __future__ import annotations

from collections.abc import Sequence

from chunkdedup.normalize import key_id
from chunkdedup.store import keyunits
from chunkdedup.store.batches import Tables, execute_for_ids, rows_for_ids
from chunkdedup.store.connection import Connection
from chunkdedup.store.schema import DOC_UNIT, MetaKey
from chunkdedup.types import DocumentKeys, KeyedDocument, StrippedLine

#: :meth:`BoilerplateTables.unit_total`: the documents without a family, and the distinct families
#: (read from ``document_rows``: through the ``documents`` view its join to ``paths`` hides the index
#: by family, 1M documents with families 4.5 s, not 24 ms)
_UNIT_TOTAL = (
    "SELECT (SELECT COUNT(*) FROM document_rows) - (SELECT COUNT(*) FROM document_rows WHERE family > '')"
    " + (SELECT COUNT(DISTINCT family) FROM document_rows WHERE family > '')"
)

#: meta keys: the chrome must be decided again / the boilerplate settings it was decided under
_CHROME_STALE: MetaKey = "chrome_stale"
_CHROME_SETTINGS: MetaKey = "chrome_settings"


class BoilerplateTables(Tables):
    """The boilerplate keys of the documents, their unit counts, the corpus chrome and the stripped lines.
    ``db``: the index's connection (the meta rows that say whether the chrome is current)."""

    def __init__(self, db: Connection) -> None:
        super().__init__(db.conn)
        self.db = db

    def set_many_doc_keys(self, items: Sequence[tuple[str, DocumentKeys]]) -> None:
        """Documents' candidate keys (``counted=1``) and the other keys strip() could remove (0); the
        corpus chrome is to be decided again (:meth:`chrome_decided`)."""
        ids = [doc_id for doc_id, _ in items]
        self.keys_change(ids)  # their units may change too
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

    def keys_change(self, doc_ids: Sequence[str]) -> None:
        """The keys or the unit of ``doc_ids`` are about to change or go: the chrome is to be decided
        again, and their counted keys recounted (:mod:`~chunkdedup.store.keyunits`)."""
        if doc_ids:
            self.db.set_meta(_CHROME_STALE, "1")
        keyunits.mark_docs(self.conn, doc_ids)

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
            f"SELECT k.khash, COUNT(DISTINCT {DOC_UNIT}) AS n FROM doc_keys k JOIN documents d USING(doc_id)"
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
            self.db.set_meta(_CHROME_SETTINGS, settings)
            self.db.delete_meta(_CHROME_STALE)

    def chrome_decided(self, settings: str) -> bool:
        """Whether the stored chrome was decided under ``settings`` and no document's keys or unit
        changed since (each change marks it stale in its own transaction, so a killed run leaves it
        stale): then deciding it again, a pass over every key, would give it again."""
        return self.db.meta(_CHROME_STALE) is None and self.db.meta(_CHROME_SETTINGS) == settings

    def doc_chrome_ids(self, doc_ids: Sequence[str]) -> dict[str, frozenset[int]]:
        """The chrome keys each of ``doc_ids`` holds among its strippable keys (a document holding
        none is left out)."""
        found: dict[str, set[int]] = {}
        sql = "SELECT k.doc_id, k.khash FROM doc_keys k JOIN chrome USING(khash) WHERE k.doc_id IN ({})"
        for doc_id, khash in rows_for_ids(self.conn, sql, sorted(set(doc_ids))):
            found.setdefault(doc_id, set()).add(khash)
        return {doc_id: frozenset(ids) for doc_id, ids in found.items()}

    def put_stripped(self, docs: Sequence[KeyedDocument]) -> None:
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
