"""Query-time reads of documents and clusters: the fields filters and versions look at, exact-key
groups, their canonicals' sources, variant pairs, page spans; and the read snapshot a delta is
taken in.

:class:`~chunkdedup.query.eligible.Eligibility` decides what a caller may see from these rows; this
module only reads. Id lists go through the one batcher (:func:`~chunkdedup.store.batches.in_lists`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chunkdedup.store.batches import in_lists, numbered
from chunkdedup.store.core import Store
from chunkdedup.store.rows import SourceRow
from chunkdedup.store.schema import CLEAN_TEXT, in_clusters
from chunkdedup.types import MetaValue


@dataclass(frozen=True, slots=True)
class DocumentFields:
    """A document's metadata (as stored) and its recognised fields."""

    doc_id: str
    metadata: dict[str, MetaValue]
    department: str | None
    family: str | None
    effective_date: str | None
    #: the next newer effective date in its family over the whole index (None: the newest, or not
    #: read; :func:`documents` reads it when asked)
    next_version: str | None = None


@dataclass(frozen=True, slots=True)
class GroupDocument:
    """An exact-key group and the fields of a document holding one of its sources."""

    group_id: str
    document: DocumentFields


@dataclass(frozen=True, slots=True)
class GroupText:
    """An exact-key group: its id, its cluster (canonical id) and its text."""

    id: str
    canonical_id: str
    text: str


def _metadata(value: str | None) -> dict[str, Any]:
    """A document's stored metadata (most documents have none: no JSON to parse)."""
    return dict(json.loads(value)) if value and value != "{}" else {}


def _fields(rows: list[Any]) -> list[DocumentFields]:
    return [DocumentFields(r[0], _metadata(r[1]), r[2], r[3], r[4], *r[5:]) for r in rows]


# -- documents ---------------------------------------------------------------------------------------
#: the document columns a filter can name its documents by (each indexed; of ``types.DOCUMENT_FIELDS``):
#: key -> column
NAMING_COLUMNS = {"doc": "doc_id", "family": "family", "department": "department"}


#: a document's next newer effective date in its family (the documents table aliased ``d``)
_NEXT_VERSION = (
    "(SELECT MIN(o.effective_date) FROM document_rows o"
    " WHERE o.family = d.family AND o.effective_date > d.effective_date)"
)


def documents_by(
    store: Store, key: str, values: Sequence[str], limit: int = -1, *, next_versions: bool = False
) -> tuple[DocumentFields, ...]:
    """The fields of the documents whose ``key`` (one of :data:`NAMING_COLUMNS`) is one of ``values``;
    at most ``limit`` of them when it is given (a caller that finds ``limit`` knows there may be
    more); with ``next_versions``, each one's next newer version's date over the whole index."""
    column = NAMING_COLUMNS[key]  # a fixed name, never user input
    after = f", {_NEXT_VERSION}" if next_versions else ""
    out: list[DocumentFields] = []
    for part, marks in in_lists(values):
        rows = store.conn.execute(
            f"SELECT doc_id, metadata, department, family, effective_date{after} FROM documents d"
            f" WHERE {column} IN ({marks}) LIMIT ?",
            [*part, limit - len(out) if limit >= 0 else -1],
        ).fetchall()
        out.extend(_fields(rows))
        if 0 <= limit <= len(out):
            break
    return tuple(out)


def documents(
    store: Store, doc_ids: Sequence[str], *, next_versions: bool = False
) -> tuple[DocumentFields, ...]:
    """The fields of these documents (ids not in the index are left out); with ``next_versions``,
    each one's next newer version's date over the whole index (one read, not its family's)."""
    return documents_by(store, "doc", doc_ids, next_versions=next_versions)


def group_documents(
    store: Store, group_ids: Sequence[str], *, metadata: bool = True
) -> tuple[GroupDocument, ...]:
    """Each distinct (group, document) of these groups' sources, with the document's fields; its
    ``metadata`` left empty unless ``metadata`` (the recognised fields are columns: a filter on them
    alone need not parse it)."""
    meta = "d.metadata" if metadata else "NULL"
    out: list[GroupDocument] = []
    for part, marks in in_lists(list(dict.fromkeys(group_ids))):
        rows = store.conn.execute(
            f"SELECT s.group_id, d.doc_id, {meta}, d.department, d.family, d.effective_date"
            " FROM (SELECT DISTINCT group_id, doc_id FROM sources"
            f" WHERE group_id IN ({marks})) AS s JOIN documents d ON d.doc_id = s.doc_id",
            part,
        )
        out.extend(
            GroupDocument(r[0], DocumentFields(r[1], _metadata(r[2]), r[3], r[4], r[5]))
            for r in rows
        )
    return tuple(out)


def document_groups(store: Store, doc_ids: Sequence[str]) -> frozenset[str]:
    """The exact-key groups holding a source in any of these documents."""
    out: set[str] = set()
    for part, marks in in_lists(doc_ids):
        rows = store.conn.execute(
            f"SELECT DISTINCT group_id FROM sources WHERE doc_id IN ({marks})", part
        )
        out.update(r[0] for r in rows)
    return frozenset(out)


def family_documents(store: Store, families: Sequence[str]) -> tuple[DocumentFields, ...]:
    """The fields of every document of these families."""
    return documents_by(store, "family", families)


def metadata_keys(store: Store) -> frozenset[str]:
    """Every metadata key some document has."""
    rows = store.conn.execute("SELECT DISTINCT j.key FROM documents, json_each(documents.metadata) AS j")
    return frozenset(str(r[0]) for r in rows)


def page_span(store: Store, doc_id: str, page: int, start: int, end: int) -> str:
    """Characters ``start:end`` of a page's clean text ("" when the page is not in the index)."""
    # substr counts characters, as Python slicing does (offsets are 0-based, substr 1-based)
    row = store.conn.execute(
        f"SELECT substr({CLEAN_TEXT}, ?, ?) FROM pages WHERE doc_id=? AND page=?",
        (start + 1, end - start, doc_id, page),
    ).fetchone()
    return str(row[0] or "") if row else ""


# -- clusters ----------------------------------------------------------------------------------------
def groups(store: Store, ids: Sequence[str]) -> tuple[GroupText, ...]:
    """The exact-key groups of these ids still in the index (ids once each, in given order)."""
    out: list[GroupText] = []
    for part, marks in in_lists(list(dict.fromkeys(ids))):
        rows = store.conn.execute(
            f"SELECT id, canonical_id, text FROM groups WHERE id IN ({marks})", part
        )
        out.extend(GroupText(r[0], r[1], r[2]) for r in rows)
    return tuple(out)


def group_text(store: Store, group_id: str) -> str:
    """One group's text ("" when it is gone)."""
    row = store.conn.execute("SELECT text FROM groups WHERE id=?", (group_id,)).fetchone()
    return str(row[0]) if row else ""


def canonical_sources(store: Store, canonical_ids: Sequence[str]) -> tuple[SourceRow, ...]:
    """The sources of these canonicals, ordered by (canonical, doc, page, start) within each batch
    of ids as given."""
    out: list[SourceRow] = []
    for part, marks in in_lists(canonical_ids):
        rows = store.conn.execute(
            'SELECT doc_id, page, start, "end", group_id, canonical_id, relation, similarity'
            f" FROM cluster_sources WHERE canonical_id IN ({marks})",
            part,
        ).fetchall()
        # sorted here: SQLite's ORDER BY sorts the joined rows in a temporary B-tree (~2x the read)
        rows.sort(key=lambda r: (r[5], r[0], r[1], r[2]))
        out.extend(SourceRow(*r) for r in rows)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class VariantTables:
    """Which variant layout an index has: ``variants``, a pair at all (an index without one needs no
    look-up per candidate), and ``groups`` (pairs of groups)."""

    variants: bool
    grouped: bool


def variant_tables(store: Store) -> VariantTables:
    """Whether the index holds a variant pair, and whether it has ``groups`` (an index of any schema
    version)."""
    tables = {
        r[0]
        for r in store.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name IN ('variants', 'groups')"
        )
    }
    held = "variants" in tables and bool(store.conn.execute("SELECT 1 FROM variants LIMIT 1").fetchall())
    return VariantTables(held, "groups" in tables)


def variant_pairs(store: Store, ids: Sequence[str], *, grouped: bool) -> tuple[tuple[str, str], ...]:
    """``(id, variant id)`` both ways for these canonical ids: ``variants`` pairs exact-key groups when
    the index has ``groups`` (``grouped``; mapped to their canonicals here), else canonical ids. A
    pair within one canonical is kept (the caller drops it)."""
    out: list[tuple[str, str]] = []
    for part, _ in in_lists(ids):
        # each part of the union reads the ids: numbered parameters, bound once
        if grouped:
            pair = (
                "SELECT ga.canonical_id, gb.canonical_id FROM groups ga JOIN variants v ON v.{x} = ga.id"
                " JOIN groups gb ON gb.id = v.{y} WHERE " + in_clusters("ga", len(part))
            )
        else:
            pair = "SELECT v.{x}, v.{y} FROM variants v WHERE v.{x} IN (" + numbered(len(part)) + ")"
        sql = pair.format(x="a", y="b") + " UNION " + pair.format(x="b", y="a")
        out.extend((a, b) for a, b in store.conn.execute(sql, part))
    return tuple(out)


# -- runs and snapshots -------------------------------------------------------------------------------
def last_finished_run(store: Store) -> int | None:
    """The newest finished run's id: the watermark of ``export --changes-since``."""
    row = store.conn.execute("SELECT MAX(id) FROM runs WHERE status='done'").fetchone()
    return None if row[0] is None else int(row[0])


@contextlib.contextmanager
def snapshot(store: Store) -> Iterator[None]:
    """One read transaction: every read inside sees the same committed state (WAL), whatever a
    writer commits meanwhile."""
    store.conn.execute("BEGIN")
    try:
        yield
    finally:
        store.conn.execute("COMMIT")
