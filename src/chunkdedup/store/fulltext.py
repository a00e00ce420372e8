"""Text search reads: BM25 over ``groups_fts``, the tantivy folder's ``gid`` keys, the document
contexts' ``contexts_fts``, and the group/document links context ranking needs.

The statements keep their shapes on purpose (see each function): query latency depends on them.
The callers in :mod:`chunkdedup.query` formulate the MATCH expressions and rank; this module only
reads. Id lists go through the one batcher (:func:`~chunkdedup.store.batches.in_lists`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from chunkdedup.store.batches import in_lists
from chunkdedup.store.core import Store

#: the FTS5 tables a term can be looked up in (:func:`fts_matches`)
FtsTable = Literal["groups_fts", "contexts_fts"]


@dataclass(frozen=True, slots=True)
class Bm25Row:
    """One exact-key group FTS5 found: its id and SQLite's ``bm25()`` (lower is better, as stored)."""

    group_id: str
    bm25: float


@dataclass(frozen=True, slots=True)
class ContextDoc:
    """A document context's FTS5 key (``contexts.dkey``, the ``contexts_fts`` rowid) and its document."""

    dkey: int
    doc_id: str


@dataclass(frozen=True, slots=True)
class GroupDoc:
    """An exact-key group and a document holding one of its sources."""

    group_id: str
    doc_id: str


# -- groups_fts ------------------------------------------------------------------------------------
#: the matching rows and their scores, computed once per statement (FTS5 scores each row it yields)
_SCORED = (
    "WITH f AS MATERIALIZED (SELECT rowid AS r, bm25(groups_fts) AS b FROM groups_fts"
    " WHERE groups_fts MATCH ?1)"
)


def search_groups(
    store: Store, match: str, limit: int, groups: Sequence[str] | None = None
) -> tuple[Bm25Row, ...]:
    """The best ``limit`` groups for an FTS5 MATCH expression, ordered by (bm25, id); among
    ``groups`` only when given (the scores stay those of the whole index)."""
    if groups is None:
        # Only the rows up to the limit-th score need their id (the tie-break): joining every match
        # to groups cost more than scoring them (1M chunks, ~50k matches: ~170 -> ~65 ms).
        rows = store.conn.execute(
            f"{_SCORED} SELECT g.id, f.b FROM f JOIN groups g ON g.gid = f.r"
            " WHERE f.b <= COALESCE((SELECT b FROM f ORDER BY b LIMIT 1 OFFSET ?2 - 1), 1e308)"
            " ORDER BY f.b, g.id LIMIT ?2",
            (match, limit),
        )
        return tuple(Bm25Row(r[0], r[1]) for r in rows)
    # "+": a filter on the joined rows; as a rowid constraint FTS5 re-runs the MATCH per id
    rows = store.conn.execute(
        "SELECT g.id, bm25(groups_fts) AS b FROM groups_fts"
        " JOIN groups g ON g.gid = groups_fts.rowid"
        " WHERE groups_fts MATCH ? AND +g.id IN (SELECT value FROM json_each(?)) ORDER BY b, g.id LIMIT ?",
        (match, json.dumps(list(groups)), limit),
    )
    return tuple(Bm25Row(r[0], r[1]) for r in rows)


def search_gids(store: Store, match: str, limit: int, gids: Sequence[int]) -> tuple[Bm25Row, ...]:
    """The best ``limit`` of these groups (by ``groups.gid``, the ``groups_fts`` rowid) for an FTS5
    MATCH expression, ordered by (bm25, id); the scores stay those of the whole index.

    The matches are walked and only the given rows scored ("+": a filter on the yielded rows; as a
    rowid constraint FTS5 parses and runs the MATCH again per id, ~1 ms each for a few OR-ed terms at
    1M chunks, against ~0.2 us a row walked).
    """
    if limit <= 0 or not gids:
        return ()
    rows = store.conn.execute(
        "SELECT g.id, f.b FROM (SELECT rowid AS r, bm25(groups_fts) AS b FROM groups_fts"
        " WHERE groups_fts MATCH ?1 AND +rowid IN (SELECT value FROM json_each(?2))) f"
        " JOIN groups g ON g.gid = f.r ORDER BY f.b, g.id LIMIT ?3",
        (match, json.dumps(list(gids)), limit),
    )
    return tuple(Bm25Row(r[0], r[1]) for r in rows)


# -- the tantivy folder's keys -----------------------------------------------------------------------
def group_gids(store: Store, ids: Sequence[str]) -> tuple[int, ...]:
    """The integer keys (``groups.gid``, tantivy's ``gid`` field) of these group ids still present."""
    gids: list[int] = []
    for part, marks in in_lists(ids):
        rows = store.conn.execute(f"SELECT gid FROM groups WHERE id IN ({marks})", part)
        gids.extend(int(r[0]) for r in rows)
    return tuple(gids)


def gid_group_ids(store: Store, gids: Sequence[int]) -> tuple[tuple[int, str], ...]:
    """``(gid, group id)`` of these integer keys still present (a key tantivy still holds for a group
    removed since its last sync is left out)."""
    out: list[tuple[int, str]] = []
    for part, marks in in_lists(gids):
        rows = store.conn.execute(f"SELECT gid, id FROM groups WHERE gid IN ({marks})", part)
        out.extend((r[0], r[1]) for r in rows)
    return tuple(out)


# -- document contexts -----------------------------------------------------------------------------
def has_contexts(store: Store) -> bool:
    """Whether the index has the document context table (migration 0008)."""
    row = store.conn.execute("SELECT 1 FROM sqlite_master WHERE name='contexts_fts'").fetchone()
    return row is not None


def context_count(store: Store) -> int:
    """How many documents have a context."""
    return int(store.conn.execute("SELECT COUNT(*) FROM contexts").fetchone()[0])


def context_match_count(store: Store, match: str) -> int:
    """How many contexts hold an FTS5 MATCH expression (counted in SQLite, nothing fetched)."""
    return int(
        store.conn.execute(
            "SELECT COUNT(*) FROM contexts_fts WHERE contexts_fts MATCH ?", (match,)
        ).fetchone()[0]
    )


def context_matches(store: Store, match: str) -> tuple[int, ...]:
    """The keys (``dkey``) of the contexts holding an FTS5 MATCH expression."""
    rows = store.conn.execute(
        "SELECT rowid FROM contexts_fts WHERE contexts_fts MATCH ?", (match,)
    ).fetchall()
    return tuple(r[0] for r in rows)


def context_lengths(store: Store, dkeys: Sequence[int]) -> dict[int, int]:
    """``dkey -> the context text's length in characters`` of these context keys."""
    out: dict[int, int] = {}
    for part, marks in in_lists(dkeys):
        sql = f"SELECT dkey, LENGTH(text) FROM contexts WHERE dkey IN ({marks})"
        out.update((r[0], int(r[1])) for r in store.conn.execute(sql, part))
    return out


def context_mean_length(store: Store) -> float:
    """The mean length of the contexts' texts in characters (0 without contexts)."""
    return float(store.conn.execute("SELECT AVG(LENGTH(text)) FROM contexts").fetchone()[0] or 0.0)


@dataclass(frozen=True, slots=True)
class TermSpread:
    """How the texts holding a term lie: ``texts`` groups hold it, ``owned`` of them have a source in a
    document whose context holds it too."""

    texts: int
    owned: int


def term_spread(store: Store, match: str) -> TermSpread:
    """:class:`TermSpread` of an FTS5 MATCH expression (one term): its ``groups_fts`` rows counted,
    and those whose group has a source in a document whose context matches it."""
    texts = int(
        store.conn.execute("SELECT COUNT(*) FROM groups_fts WHERE groups_fts MATCH ?", (match,)).fetchone()[0]
    )
    if not texts:
        return TermSpread(0, 0)
    owned = store.conn.execute(
        "SELECT COUNT(*) FROM groups_fts WHERE groups_fts MATCH ?1 AND +rowid IN ("
        " SELECT s.gid FROM contexts_fts f JOIN source_rows s ON s.dkey = f.rowid"
        " WHERE contexts_fts MATCH ?1)",
        (match,),
    ).fetchone()[0]
    return TermSpread(texts, int(owned))


def context_docs(store: Store, dkeys: Sequence[int]) -> tuple[ContextDoc, ...]:
    """The documents of these context keys, in batches of ``dkeys`` as given."""
    out: list[ContextDoc] = []
    for part, marks in in_lists(dkeys):
        sql = f"SELECT dkey, doc_id FROM document_rows WHERE dkey IN ({marks})"
        out.extend(ContextDoc(r[0], r[1]) for r in store.conn.execute(sql, part).fetchall())
    return tuple(out)


def group_source_docs(store: Store, groups: Sequence[str]) -> tuple[GroupDoc, ...]:
    """Each distinct ``(group, document)`` of these groups' sources (ids once each, in given order)."""
    out: list[GroupDoc] = []
    ids = list(dict.fromkeys(groups))
    for part, marks in in_lists(ids):
        rows = store.conn.execute(
            f"SELECT DISTINCT group_id, doc_id FROM sources WHERE group_id IN ({marks})", part
        ).fetchall()
        out.extend(GroupDoc(r[0], r[1]) for r in rows)
    return tuple(out)


def groups_of_docs(store: Store, docs: Sequence[str]) -> tuple[str, ...]:
    """The distinct exact-key groups holding a source in any of these (few) documents, unordered."""
    out: dict[str, None] = {}
    for part, marks in in_lists(docs):
        sql = f"SELECT DISTINCT group_id FROM sources WHERE doc_id IN ({marks})"
        out.update((r[0], None) for r in store.conn.execute(sql, part))
    return tuple(out)


# -- term coverage -------------------------------------------------------------------------------
def fts_tables(store: Store) -> frozenset[str]:
    """The names of the index's FTS5 tables (``*_fts``)."""
    rows = store.conn.execute("SELECT name FROM sqlite_master WHERE name LIKE '%_fts'")
    return frozenset(r[0] for r in rows)


def fts_matches(store: Store, table: FtsTable, match: str) -> bool:
    """Whether any row of ``table`` holds an FTS5 MATCH expression."""
    if table not in ("groups_fts", "contexts_fts"):
        raise ValueError(f"table must be groups_fts or contexts_fts, got {table!r}")
    row = store.conn.execute(f"SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT 1", (match,)).fetchone()
    return row is not None
