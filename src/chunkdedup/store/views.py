"""The typed read API of ``chunkdedup serve``: small, indexed, paginated reads for the web view.

Every list is read a page at a time (``LIMIT``/``OFFSET`` over a primary key or an index, or a
keyset start), so a page of the view costs the same on an index of a thousand chunks as on one of
a million; totals are ``COUNT`` over an indexed range. Rows come back as frozen records with
``to_json()``.

Example:
    >>> with Store.open("index.sqlite", readonly=True) as store:  # doctest: +SKIP
    ...     docs = IndexViews(store).documents(limit=20)
    ...     [d.doc_id for d in docs.items]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chunkdedup.store.core import Store
from chunkdedup.store.rows import (
    CanonicalRow,
    DocumentFacets,
    DocumentRow,
    FacetCount,
    FileProblem,
    KeySummary,
    MergeRow,
    PageText,
    RunRow,
    Slice,
    SourceRow,
    StatusCount,
    StrippedRow,
    VariantRow,
)
from chunkdedup.store.schema import (
    CANONICAL_TEXT,
    CLEAN_TEXT,
    PENDING_DOCUMENTS,
    RAW_TEXT,
    holds,
    in_clusters,
)

#: the columns the documents table sorts by: a sort's name -> its column of ``documents``
DOCUMENT_SORTS = {
    "doc": "doc_id", "title": "title", "pages": "n_pages", "state": "state", "family": "family",
    "department": "department", "effective": "effective_date",
}


#: a document whose id or title holds the text (parameters 1 and 2: the text twice)
_TITLE = "COALESCE(title, '')"
_HOLDS_TEXT = f"({holds('doc_id')} OR {holds(_TITLE)})"


class IndexViews:
    """Paginated, indexed reads over an open (read-only) :class:`Store`: the overview, documents and
    their pages, boilerplate keys, a canonical's sources, merges and variants. An index's
    :attr:`~chunkdedup.store.index.IndexReader.views`; its whole-list reads are built on these."""

    def __init__(self, store: Store) -> None:
        self.conn = store.conn
        self._writer_running = store.writer_running

    # -- overview -----------------------------------------------------------------------------
    def file_statuses(self) -> tuple[StatusCount, ...]:
        rows = self.conn.execute("SELECT status, COUNT(*) FROM files GROUP BY status ORDER BY status")
        return tuple(StatusCount(r[0], int(r[1])) for r in rows)

    def document_states(self) -> tuple[StatusCount, ...]:
        """How many documents are in each state (by state; none listed with no document)."""
        return tuple(StatusCount(state, n) for state, n in sorted(self._state_counts().items()) if n)

    def _state_counts(self) -> dict[str, int]:
        """Documents per state: the pending through the partial index that holds only them, the indexed
        as every other one (a write leaves a document pending or indexed; the rows are counted through
        the smallest index, not scanned by state: 1M documents 22 ms, not 4.4 s)."""
        row = self.conn.execute(
            f"SELECT (SELECT COUNT(*) FROM {PENDING_DOCUMENTS}),"
            " (SELECT COUNT(*) FROM document_rows)"
        ).fetchone()
        pending, total = int(row[0]), int(row[1])
        return {"indexed": total - pending, "pending": pending}

    def problems(self, *, limit: int, offset: int = 0) -> Slice[FileProblem]:
        """Skipped and failed input files with their reasons, by path."""
        where = "FROM files WHERE status IN ('skipped', 'failed')"
        total = int(self.conn.execute(f"SELECT COUNT(*) {where}").fetchone()[0])
        rows = self.conn.execute(
            f"SELECT path, status, reason {where} ORDER BY path LIMIT ? OFFSET ?", (limit, offset)
        )
        return Slice(tuple(FileProblem(*r) for r in rows), total, limit, offset)

    def runs(self, *, limit: int) -> tuple[RunRow, ...]:
        """The last ``limit`` runs, newest first. A run marked 'running' while no writer holds the index's
        lock was killed (SIGKILL, a machine that went down): it reads as 'failed', as the next writer
        marks it."""
        rows = self.conn.execute(
            "SELECT id, started, finished, status FROM runs ORDER BY id DESC LIMIT ?", (limit,)
        ).fetchall()
        killed = any(r[3] == "running" for r in rows) and not self._writer_running()
        return tuple(
            RunRow(r[0], r[1], r[2], "failed" if killed and r[3] == "running" else r[3]) for r in rows
        )

    # -- documents ----------------------------------------------------------------------------
    _DOC_COLUMNS = "doc_id, file_path, title, n_pages, state, family, department, effective_date, metadata"

    @staticmethod
    def _document(r: Sequence[Any]) -> DocumentRow:
        meta = json.loads(r[8]) if r[8] else {}
        return DocumentRow(r[0], r[1], r[2], int(r[3]), r[4], r[5], r[6], r[7], meta)

    def documents(
        self, *, limit: int = -1, offset: int = 0, state: str | None = None, family: str | None = None,
        department: str | None = None, text: str | None = None, sort: str = "doc", descending: bool = False,
    ) -> Slice[DocumentRow]:
        """Documents (``limit`` -1: all), by id or by another column of :data:`DOCUMENT_SORTS` (``sort``;
        the id breaks ties, those without a value come last; any but the id reads every matching row),
        ``descending`` or not. Kept: those in ``state`` (e.g. ``pending``), of ``family``, of
        ``department``, and those whose id or title holds ``text`` (ASCII case aside). ``ValueError``
        for an unknown ``sort``."""
        if sort not in DOCUMENT_SORTS:
            raise ValueError(f"documents sort by one of {', '.join(DOCUMENT_SORTS)}, not {sort!r}")
        kept: list[str] = []
        args: list[object] = []
        for column, value in (("state", state), ("family", family), ("department", department)):
            if value:
                kept.append(f"{column} = ?")
                args.append(value)
        if text:
            kept.append(_HOLDS_TEXT)
            args += [text, text]
        where = f"WHERE {' AND '.join(kept)}" if kept else ""
        counted = self._state_counts() if state and len(kept) == 1 else {}
        if state in counted:
            total = counted[state]
        else:
            total = int(self.conn.execute(f"SELECT COUNT(*) FROM documents {where}", args).fetchone()[0])
        way = "DESC" if descending else "ASC"
        column = DOCUMENT_SORTS[sort]
        # a document without the value last, whichever way the rest is sorted
        unset = f"COALESCE({column}, '') = ''"
        order = f"doc_id {way}" if column == "doc_id" else f"{unset}, {column} {way}, doc_id"
        rows = self.conn.execute(
            f"SELECT {self._DOC_COLUMNS} FROM documents {where} ORDER BY {order} LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return Slice(tuple(self._document(r) for r in rows), total, limit, offset)

    def document_facets(self, *, most: int = 20) -> DocumentFacets:
        """The ``most`` most common families and departments, each with its count of documents (read
        from their indexes)."""
        facets = []
        for column in ("family", "department"):
            rows = self.conn.execute(
                f"SELECT {column}, COUNT(*) AS n FROM document_rows WHERE {column} IS NOT NULL"
                f" GROUP BY {column} ORDER BY n DESC, {column} LIMIT ?",
                (most,),
            )
            facets.append(tuple(FacetCount(r[0], int(r[1])) for r in rows))
        return DocumentFacets(*facets)

    def document(self, doc_id: str) -> DocumentRow | None:
        row = self.conn.execute(f"SELECT {self._DOC_COLUMNS} FROM documents WHERE doc_id=?", (doc_id,))
        found = row.fetchone()
        return None if found is None else self._document(found)

    def pages(self, doc_id: str, *, first: int, limit: int) -> tuple[PageText, ...]:
        """Up to ``limit`` pages of a document from page number ``first`` on."""
        rows = self.conn.execute(
            f"SELECT page, has_text, {RAW_TEXT}, {CLEAN_TEXT}, ocr_confidence FROM pages"
            " WHERE doc_id=? AND page>=? ORDER BY page LIMIT ?",
            (doc_id, first, limit),
        )
        return tuple(PageText(int(r[0]), bool(r[1]), r[2], r[3], r[4]) for r in rows)

    def page_chunks(self, doc_id: str, page: int) -> tuple[SourceRow, ...]:
        """The chunks of one page in text order (the sources primary key)."""
        rows = self.conn.execute(
            'SELECT doc_id, page, start, "end", group_id, canonical_id, relation, similarity FROM sources'
            " WHERE doc_id=? AND page=? ORDER BY start",
            (doc_id, page),
        )
        return tuple(SourceRow(*r) for r in rows)

    def stripped(self, doc_id: str) -> tuple[StrippedRow, ...]:
        """The keys stripped from one document (its stripped rows, by the primary key)."""
        rows = self.conn.execute(
            "SELECT doc_id, khash, scope, pages, lines, example FROM stripped WHERE doc_id=?"
            " ORDER BY khash, scope",
            (doc_id,),
        )
        return tuple(StrippedRow(*r) for r in rows)

    # -- boilerplate --------------------------------------------------------------------------
    def boilerplate(self, *, limit: int = -1) -> tuple[KeySummary, ...]:
        """Every stripped key, most widespread first (documents, then pages), ties by key and scope;
        the example is the one of the first document (``limit`` -1: all).

        One pass over ``stripped`` (its rows: documents x keys stripped in each; a few per document):
        the caller keeps the result while the index is unchanged (see :mod:`chunkdedup.web.app`).
        """
        rows = self.conn.execute(
            """
            SELECT a.khash, k.key, a.scope, a.docs, a.pages, a.lines, a.example FROM (
                SELECT khash, scope, COUNT(*) AS docs, SUM(pages) AS pages, SUM(lines) AS lines,
                       MIN(doc_id) AS first, example   -- SQLite: example of the row with MIN(doc_id)
                FROM stripped GROUP BY khash, scope
            ) a JOIN bp_keys k USING(khash)
            ORDER BY a.docs DESC, a.pages DESC, k.key, a.scope LIMIT ?
            """,
            (limit,),
        )
        return tuple(KeySummary(*r) for r in rows)

    def key(self, khash: int) -> tuple[KeySummary, ...]:
        """One key's summary per scope it is stripped in (none: the key is not stripped anywhere)."""
        rows = self.conn.execute(
            """
            SELECT s.khash, k.key, s.scope, COUNT(*), SUM(s.pages), SUM(s.lines),
                   (SELECT e.example FROM stripped e WHERE e.khash = s.khash AND e.scope = s.scope
                    ORDER BY e.doc_id LIMIT 1)
            FROM stripped s JOIN bp_keys k USING(khash) WHERE s.khash = ?
            GROUP BY s.scope ORDER BY s.scope
            """,
            (khash,),
        )
        return tuple(KeySummary(*r) for r in rows)

    def key_documents(self, khash: int, *, limit: int, offset: int = 0) -> Slice[StrippedRow]:
        """The documents a key is stripped from, by document id (the ``stripped_key`` index)."""
        total = int(self.conn.execute("SELECT COUNT(*) FROM stripped WHERE khash=?", (khash,)).fetchone()[0])
        rows = self.conn.execute(
            "SELECT doc_id, khash, scope, pages, lines, example FROM stripped WHERE khash=?"
            " ORDER BY doc_id, scope LIMIT ? OFFSET ?",
            (khash, limit, offset),
        )
        return Slice(tuple(StrippedRow(*r) for r in rows), total, limit, offset)

    # -- canonicals ---------------------------------------------------------------------------
    def canonical(self, canonical_id: str) -> CanonicalRow | None:
        row = self.conn.execute(
            f"SELECT c.id, {CANONICAL_TEXT}, c.n_sources, c.updated_run FROM canonicals c WHERE c.id=?",
            (canonical_id,),
        ).fetchone()
        return None if row is None else CanonicalRow(*row)

    def sources(self, canonical_id: str, *, limit: int, offset: int = 0) -> Slice[SourceRow]:
        """Every source of a canonical by (doc, page, start)."""
        count = "SELECT COUNT(*) FROM cluster_sources WHERE canonical_id=?"
        total = int(self.conn.execute(count, (canonical_id,)).fetchone()[0])
        rows = self.conn.execute(
            'SELECT doc_id, page, start, "end", group_id, canonical_id, relation, similarity,'
            " (SELECT p.ocr_confidence FROM pages p WHERE p.doc_id = s.doc_id AND p.page = s.page)"
            " FROM cluster_sources s WHERE canonical_id=? ORDER BY doc_id, page, start LIMIT ? OFFSET ?",
            (canonical_id, limit, offset),
        )
        return Slice(tuple(SourceRow(*r) for r in rows), total, limit, offset)

    def groups(self, canonical_id: str, *, limit: int, offset: int = 0) -> Slice[MergeRow]:
        """A page of :meth:`merges`, with how many groups the canonical has."""
        sql = f"SELECT COUNT(*) FROM groups g WHERE {in_clusters('g', 1)}"
        total = int(self.conn.execute(sql, (canonical_id,)).fetchone()[0])
        return Slice(self.merges(canonical_id, limit=limit, offset=offset), total, limit, offset)

    def merges(self, canonical_id: str, *, limit: int = -1, offset: int = 0) -> tuple[MergeRow, ...]:
        """The exact-key groups merged into a canonical, in source order (leader first): relation,
        similarity and the words that differ (``limit`` -1: all)."""
        rows = self.conn.execute(
            "SELECT id, relation, similarity, differing, n_sources, text FROM groups g"
            f" WHERE {in_clusters('g', 1)} ORDER BY"
            " (SELECT d.doc_id FROM document_rows d WHERE d.dkey = g.rep_dkey), rep_page, rep_start"
            " LIMIT ?2 OFFSET ?3",
            (canonical_id, limit, offset),
        )
        return tuple(MergeRow(r[0], r[1], r[2], tuple(json.loads(r[3])), int(r[4]), r[5]) for r in rows)

    def variants(self, canonical_id: str, *, limit: int = -1) -> tuple[VariantRow, ...]:
        """Canonicals kept apart from this one by a guard, with their text, the reason (``number`` for
        the number/date guard, else the meaning guard's) and the tokens or words that differ, by id
        (``limit`` -1: all)."""
        rows = self.conn.execute(
            f"""
            SELECT other, {CANONICAL_TEXT}, similarity, differing, reason FROM (
                SELECT gb.canonical_id AS other, v.similarity, v.differing, v.reason FROM groups ga
                JOIN variants v ON v.a = ga.id JOIN groups gb ON gb.id = v.b WHERE {in_clusters('ga', 1)}
                UNION ALL
                SELECT ga.canonical_id, v.similarity, v.differing, v.reason FROM groups gb
                JOIN variants v ON v.b = gb.id JOIN groups ga ON ga.id = v.a WHERE {in_clusters('gb', 1)}
            ) JOIN canonicals c ON c.id = other
            WHERE other != ?1 ORDER BY other, similarity DESC LIMIT ?2
            """,
            (canonical_id, limit),
        )
        return tuple(VariantRow(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4]) for r in rows)
