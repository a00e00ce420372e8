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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from chunkdedup.store.core import Store
from chunkdedup.store.schema import CANONICAL_TEXT, CLEAN_TEXT, RAW_TEXT
from chunkdedup.types import MetaValue


class _Jsonable(Protocol):
    def to_json(self) -> dict[str, Any]: ...


T = TypeVar("T", bound=_Jsonable)


@dataclass(frozen=True, slots=True)
class Slice(Generic[T]):
    """One page of a longer list: the rows, how many there are in all, and where this page starts."""

    items: tuple[T, ...]
    total: int
    limit: int
    offset: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.items)
        return end if end < self.total else None

    @property
    def prev_offset(self) -> int | None:
        return max(0, self.offset - self.limit) if self.offset > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "items": [i.to_json() for i in self.items],
            "total": self.total,
            "limit": self.limit,
            "offset": self.offset,
        }


@dataclass(frozen=True, slots=True)
class StatusCount:
    """How many input files ended in one status (ingested, unchanged, skipped, failed)."""

    status: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "count": self.count}


@dataclass(frozen=True, slots=True)
class FileProblem:
    """An input file that was skipped or failed, with the reason the ingest gave."""

    path: str
    status: str
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RunRow:
    """One ingest run: when, and how it ended."""

    id: int
    started: str
    finished: str | None
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "started": self.started, "finished": self.finished, "status": self.status}


@dataclass(frozen=True, slots=True)
class DocumentRow:
    """One indexed document: where it came from, its pages, its state and metadata."""

    doc_id: str
    path: str
    title: str | None
    pages: int
    state: str
    family: str | None
    department: str | None
    effective_date: str | None
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "doc": self.doc_id,
            "path": self.path,
            "title": self.title,
            "pages": self.pages,
            "state": self.state,
            "family": self.family,
            "department": self.department,
            "effective_date": self.effective_date,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True)
class PageText:
    """A page as parsed and as stripped (``clean_text`` is the raw text where stripping changed nothing);
    ``ocr_confidence`` is set on a page read by OCR."""

    page: int
    has_text: bool
    raw_text: str
    clean_text: str
    ocr_confidence: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"page": self.page, "has_text": self.has_text, "raw_text": self.raw_text,
                "clean_text": self.clean_text, "ocr": self.ocr_confidence is not None,
                "ocr_confidence": self.ocr_confidence}


@dataclass(frozen=True, slots=True)
class SourceRow:
    """One chunk of a document: its span of a clean page, its exact-key group and its canonical
    (``ocr_confidence``: its page was read by OCR; read for a canonical's sources)."""

    doc_id: str
    page: int
    start: int
    end: int
    group_id: str
    canonical_id: str
    relation: str
    similarity: float
    ocr_confidence: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "doc": self.doc_id,
            "page": self.page,
            "start": self.start,
            "end": self.end,
            "group": self.group_id,
            "canonical": self.canonical_id,
            "relation": self.relation,
            "similarity": self.similarity,
        }
        if self.ocr_confidence is not None:
            out |= {"ocr": True, "ocr_confidence": self.ocr_confidence}
        return out


@dataclass(frozen=True, slots=True)
class StrippedRow:
    """A boilerplate key stripped from one document: scope, pages and lines, the first page's text."""

    doc_id: str
    khash: int
    scope: str
    pages: int
    lines: int
    example: str

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.doc_id, "khash": self.khash, "scope": self.scope, "pages": self.pages,
                "lines": self.lines, "example": self.example}


@dataclass(frozen=True, slots=True)
class KeySummary:
    """A stripped boilerplate key over the corpus: documents, pages and lines, and an example."""

    khash: int
    key: str
    scope: str
    documents: int
    pages: int
    lines: int
    example: str

    def to_json(self) -> dict[str, Any]:
        return {"khash": self.khash, "key": self.key, "scope": self.scope, "documents": self.documents,
                "pages": self.pages, "lines": self.lines, "example": self.example}


@dataclass(frozen=True, slots=True)
class CanonicalRow:
    """A canonical chunk's text, its number of sources and the run that last changed it."""

    id: str
    text: str
    n_sources: int
    updated_run: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "sources": self.n_sources, "updated_run": self.updated_run}


@dataclass(frozen=True, slots=True)
class GroupRow:
    """An exact-key group of a canonical: how it joined (exact leader, near, semantic), its copies."""

    group_id: str
    relation: str
    similarity: float
    differing: tuple[str, ...]
    copies: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group_id, "relation": self.relation, "similarity": self.similarity,
                "differing": list(self.differing), "copies": self.copies, "text": self.text}


@dataclass(frozen=True, slots=True)
class VariantRow:
    """A canonical kept apart from another by a guard: its text, the tokens or words differing, and
    why (``number`` for the number/date guard, else the meaning guard's reason)."""

    other_id: str
    other_text: str
    similarity: float
    differing: tuple[str, ...]
    reason: str = "number"

    def to_json(self) -> dict[str, Any]:
        return {"other": self.other_id, "text": self.other_text, "similarity": self.similarity,
                "differing": list(self.differing), "reason": self.reason}


class IndexViews:
    """Paginated, indexed reads over an open (read-only) :class:`Store` for the web view."""

    def __init__(self, store: Store) -> None:
        self.conn = store.conn

    # -- overview -----------------------------------------------------------------------------
    def file_statuses(self) -> tuple[StatusCount, ...]:
        rows = self.conn.execute("SELECT status, COUNT(*) FROM files GROUP BY status ORDER BY status")
        return tuple(StatusCount(r[0], int(r[1])) for r in rows)

    def document_states(self) -> tuple[StatusCount, ...]:
        rows = self.conn.execute("SELECT state, COUNT(*) FROM documents GROUP BY state ORDER BY state")
        return tuple(StatusCount(r[0], int(r[1])) for r in rows)

    def problems(self, *, limit: int, offset: int = 0) -> Slice[FileProblem]:
        """Skipped and failed input files with their reasons, by path."""
        where = "FROM files WHERE status IN ('skipped', 'failed')"
        total = int(self.conn.execute(f"SELECT COUNT(*) {where}").fetchone()[0])
        rows = self.conn.execute(
            f"SELECT path, status, reason {where} ORDER BY path LIMIT ? OFFSET ?", (limit, offset)
        )
        return Slice(tuple(FileProblem(*r) for r in rows), total, limit, offset)

    def runs(self, *, limit: int) -> tuple[RunRow, ...]:
        rows = self.conn.execute(
            "SELECT id, started, finished, status FROM runs ORDER BY id DESC LIMIT ?", (limit,)
        )
        return tuple(RunRow(*r) for r in rows)

    # -- documents ----------------------------------------------------------------------------
    _DOC_COLUMNS = "doc_id, file_path, title, n_pages, state, family, department, effective_date, metadata"

    @staticmethod
    def _document(r: Sequence[Any]) -> DocumentRow:
        meta = json.loads(r[8]) if r[8] else {}
        return DocumentRow(r[0], r[1], r[2], int(r[3]), r[4], r[5], r[6], r[7], meta)

    def documents(self, *, limit: int, offset: int = 0, state: str | None = None) -> Slice[DocumentRow]:
        """Documents by id (``state``: only those in it, e.g. ``pending``)."""
        where, args = ("WHERE state = ?", (state,)) if state else ("", ())
        total = int(self.conn.execute(f"SELECT COUNT(*) FROM documents {where}", args).fetchone()[0])
        rows = self.conn.execute(
            f"SELECT {self._DOC_COLUMNS} FROM documents {where} ORDER BY doc_id LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return Slice(tuple(self._document(r) for r in rows), total, limit, offset)

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
    def boilerplate(self) -> tuple[KeySummary, ...]:
        """Every stripped key, most widespread first (documents, then pages), ties by key and scope;
        the example is the one of the first document.

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
            ORDER BY a.docs DESC, a.pages DESC, k.key, a.scope
            """
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
        """Every source of a canonical by (doc, page, start) (the ``sources_canonical`` index)."""
        total = int(self.conn.execute("SELECT COUNT(*) FROM sources WHERE canonical_id=?", (canonical_id,))
                    .fetchone()[0])
        rows = self.conn.execute(
            'SELECT doc_id, page, start, "end", group_id, canonical_id, relation, similarity,'
            " (SELECT p.ocr_confidence FROM pages p WHERE p.doc_id = s.doc_id AND p.page = s.page)"
            " FROM sources s WHERE canonical_id=? ORDER BY doc_id, page, start LIMIT ? OFFSET ?",
            (canonical_id, limit, offset),
        )
        return Slice(tuple(SourceRow(*r) for r in rows), total, limit, offset)

    def groups(self, canonical_id: str, *, limit: int, offset: int = 0) -> Slice[GroupRow]:
        """The exact-key groups merged into a canonical, in source order (leader first)."""
        total = int(self.conn.execute("SELECT COUNT(*) FROM groups WHERE canonical_id=?", (canonical_id,))
                    .fetchone()[0])
        rows = self.conn.execute(
            "SELECT id, relation, similarity, differing, n_sources, text FROM groups WHERE canonical_id=?"
            " ORDER BY rep_doc, rep_page, rep_start LIMIT ? OFFSET ?",
            (canonical_id, limit, offset),
        )
        items = tuple(GroupRow(r[0], r[1], r[2], tuple(json.loads(r[3])), int(r[4]), r[5]) for r in rows)
        return Slice(items, total, limit, offset)

    def variants(self, canonical_id: str, *, limit: int) -> tuple[VariantRow, ...]:
        """Canonicals the number/date guard kept apart from this one, with their text."""
        rows = self.conn.execute(
            f"""
            SELECT other, {CANONICAL_TEXT}, similarity, differing, reason FROM (
                SELECT gb.canonical_id AS other, v.similarity, v.differing, v.reason FROM groups ga
                JOIN variants v ON v.a = ga.id JOIN groups gb ON gb.id = v.b WHERE ga.canonical_id = ?1
                UNION ALL
                SELECT ga.canonical_id, v.similarity, v.differing, v.reason FROM groups gb
                JOIN variants v ON v.b = gb.id JOIN groups ga ON ga.id = v.a WHERE gb.canonical_id = ?1
            ) JOIN canonicals c ON c.id = other
            WHERE other != ?1 ORDER BY other, similarity DESC LIMIT ?2
            """,
            (canonical_id, limit),
        )
        return tuple(VariantRow(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4]) for r in rows)
