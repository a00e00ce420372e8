"""The review queue: near pairs for a person to read side by side, and the decisions read from it.

A decision is an override of the guards for one pair of exact-key groups (``merge``: merged whatever
the guards say; ``apart``: a variant with reason ``override``), kept in the index (``overrides``)
and honoured by the next cluster pass beside ``[near] always_merge`` / ``keep_apart``. Writing one
marks both groups dirty, so the next ingest re-decides their components (and nothing else).

A decision names two distinct groups the index holds: :meth:`ReviewQueue.decide` refuses any other.
The table is read defensively all the same (a row written by hand, or by another program): a row
whose ids are not text or whose decision is unknown is skipped with a warning (``chunkdedup check``
reports it as damage), and a decision whose groups are gone is stale (kept, as the texts may come
back, but never printed as config).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from chunkdedup.store.core import Store
from chunkdedup.store.rows import Slice
from chunkdedup.store.schema import holds, in_cluster
from chunkdedup.visible import shown

Decision = Literal["merge", "apart"]
#: which pairs the queue lists
Kind = Literal["merges", "variants"]
#: merges nearest the threshold first, or the largest clusters first
Order = Literal["threshold", "size"]

__all__ = [
    "REVIEWER_CHARS", "Decision", "KeptDecisions", "Kind", "Order", "Override", "PairRow", "PairSide",
    "ReviewQueue", "reviewer",
]

logger = logging.getLogger(__name__)

#: the decisions the ``overrides`` table keeps (its CHECK constraint)
DECISIONS: tuple[Decision, ...] = ("merge", "apart")


@dataclass(frozen=True, slots=True)
class Override:
    """A person's decision on the pair of groups ``a`` < ``b``: when it was made (UTC, ISO 8601; ``None``
    for a decision an older version kept) and by whom (``None`` where the reviewer gave no name)."""

    a: str
    b: str
    decision: Decision
    decided_at: str | None = None
    decided_by: str | None = None


@dataclass(frozen=True, slots=True)
class KeptDecisions:
    """The ``overrides`` table as read: ``held``, the decisions on two groups the index holds;
    ``stale``, those naming a group the index no longer holds (they apply again if its text comes
    back); ``damaged``, how many rows were skipped (ids not text, or a decision not merge/apart)."""

    held: tuple[Override, ...]
    stale: tuple[Override, ...]
    damaged: int


@dataclass(frozen=True, slots=True)
class PairSide:
    """Where one group of a pair was first found: its document, page, the document's effective date
    and family (``None`` where the manifest gives none), and how many places hold its text."""

    doc: str | None
    page: int
    effective_date: str | None
    family: str | None
    sources: int

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.doc, "page": self.page, "effective_date": self.effective_date,
                "family": self.family, "sources": self.sources}


@dataclass(frozen=True, slots=True)
class PairRow:
    """A near pair of the queue: the earlier group ``a`` (the leader a merge joined, or the group a
    variant could have joined) and ``b``, both texts, why they are merged or kept apart (``relation``:
    ``near``/``semantic`` for a merge, the guard's reason for a variant), the words that differ, the
    size of ``a``'s cluster (exact-key groups), the decision already taken, if any, and where each
    was first found (``a_side``, ``b_side``: current and older versions told apart by their dates)."""

    a: str
    b: str
    a_text: str
    b_text: str
    relation: str
    similarity: float
    differing: tuple[str, ...]
    cluster_groups: int
    decision: Decision | None
    a_side: PairSide
    b_side: PairSide
    decided_at: str | None = None
    decided_by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a, "b": self.b, "a_text": self.a_text, "b_text": self.b_text,
            "relation": self.relation, "similarity": self.similarity, "differing": list(self.differing),
            "cluster_groups": self.cluster_groups, "decision": self.decision,
            "a_side": self.a_side.to_json(), "b_side": self.b_side.to_json(),
            "decided_at": self.decided_at, "decided_by": self.decided_by,
        }


#: the longest reviewer's name kept
REVIEWER_CHARS = 80


def reviewer(by: str | None) -> str | None:
    """A reviewer's name as kept: stripped, ``None`` when empty; ``ValueError`` for one longer than
    :data:`REVIEWER_CHARS` or holding a control character."""
    if by is None or not by.strip():
        return None
    by = by.strip()
    if len(by) > REVIEWER_CHARS or any(not ch.isprintable() for ch in by):
        raise ValueError(
            f"a reviewer's name is one line of at most {REVIEWER_CHARS} printable characters, got {shown(by)}"
        )
    return by


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


#: a row of ``overrides`` whose decision is one of :data:`DECISIONS` (the rest is damage)
_KNOWN = "o.decision IN ('merge', 'apart')"
#: every row, and whether both its groups are in the index
_OVERRIDES = """
    SELECT o.a, o.b, o.decision,
           EXISTS(SELECT 1 FROM groups g WHERE g.id = o.a)
           AND EXISTS(SELECT 1 FROM groups g WHERE g.id = o.b), o.decided_at, o.decided_by
    FROM overrides o ORDER BY o.a, o.b
"""

def _sides(a: str, b: str) -> tuple[str, str]:
    """The columns that say where each of a pair's groups (aliased ``a`` and ``b``) was first found
    (columns 10-19 of a queue row) and when and by whom its decision was made (20-21), and the joins
    they read."""
    columns = f"""
    da.doc_id, {a}.rep_page, da.effective_date, da.family, {a}.n_sources,
    db.doc_id, {b}.rep_page, db.effective_date, db.family, {b}.n_sources, o.decided_at, o.decided_by
    """
    joins = f"""
    LEFT JOIN document_rows da ON da.dkey = {a}.rep_dkey LEFT JOIN document_rows db ON db.dkey = {b}.rep_dkey
    """
    return columns, joins


_MERGE_SIDES, _MERGE_JOINS = _sides("l", "m")
_MERGES = f"""
    SELECT l.id, m.id, l.text, m.text, m.relation, m.similarity, m.differing,
           (SELECT COUNT(*) FROM groups g WHERE {in_cluster("g", "m.canonical_id")}), o.decision,
           {_MERGE_SIDES}
    FROM groups m JOIN groups l ON l.id = m.canonical_id {_MERGE_JOINS}
    LEFT JOIN overrides o ON o.a = MIN(l.id, m.id) AND o.b = MAX(l.id, m.id) AND {_KNOWN}
"""
_VARIANT_SIDES, _VARIANT_JOINS = _sides("ga", "gb")
_VARIANTS = f"""
    SELECT v.a, v.b, ga.text, gb.text, v.reason, v.similarity, v.differing,
           (SELECT COUNT(*) FROM groups g WHERE {in_cluster("g", "ga.canonical_id")}), o.decision,
           {_VARIANT_SIDES}
    FROM variants v JOIN groups ga ON ga.id = v.a JOIN groups gb ON gb.id = v.b {_VARIANT_JOINS}
    LEFT JOIN overrides o ON o.a = MIN(v.a, v.b) AND o.b = MAX(v.a, v.b) AND {_KNOWN}
"""


class ReviewQueue:
    """The review queue and its decisions (``Index.review``): the merges and version pairs a person
    reviews, and the overrides they keep."""

    __slots__ = ("store",)

    def __init__(self, store: Store) -> None:
        self.store = store

    def decide(self, a: str, b: str, decision: Decision, by: str | None = None) -> None:
        """Keep ``decision`` for the pair of groups ``a`` and ``b``, with the time (UTC) and ``by`` (the
        reviewer's name, where given), and mark both dirty (the next ingest re-decides their
        components). ``ValueError`` (and nothing kept) unless ``a`` and ``b`` are two groups the index
        holds, ``decision`` is ``merge`` or ``apart`` and ``by`` is a short line of text."""
        self.decide_all([(a, b)], decision, by)

    def decide_all(self, pairs: Sequence[tuple[str, str]], decision: Decision, by: str | None = None) -> None:
        """:meth:`decide` for every pair of ``pairs`` (a reviewer's bulk decision), in one transaction:
        every decision is kept, or none (a ``ValueError`` naming the first pair refused)."""
        by = reviewer(by)
        at = datetime.now(UTC).isoformat(timespec="seconds")
        with self.store.writer(), self.store.transaction() as c:
            rows = []
            for a, b in pairs:
                refused = self.refusal(a, b, decision)
                if refused is not None:
                    raise ValueError(refused)
                rows.append((*_pair(a, b), decision, at, by))
            c.executemany(
                "INSERT OR REPLACE INTO overrides(a, b, decision, decided_at, decided_by)"
                " VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            self.store.groups.mark_dirty(sorted({g for row in rows for g in row[:2]}))

    def forget(self, a: str, b: str) -> None:
        """Drop the decision on the pair ``a``, ``b`` (the guards decide it again at the next ingest).
        A kept decision is dropped even when its groups are gone (stale); with none kept, ``ValueError``
        unless ``a`` and ``b`` are two groups the index holds."""
        self.forget_all([(a, b)])

    def forget_all(self, pairs: Sequence[tuple[str, str]]) -> None:
        """:meth:`forget` for every pair of ``pairs``, in one transaction: all dropped, or none."""
        with self.store.writer(), self.store.transaction() as c:
            held: set[str] = set()
            for a, b in pairs:
                lo, hi = _pair(a, b)
                kept = c.execute("SELECT 1 FROM overrides WHERE a=? AND b=?", (lo, hi)).fetchone()
                refused = None if kept is not None else self.pair_refusal(a, b)
                if refused is not None:
                    raise ValueError(refused)
                c.execute("DELETE FROM overrides WHERE a=? AND b=?", (lo, hi))
                held.update(self._held(lo, hi))
            self.store.groups.mark_dirty(sorted(held))

    def refusal(self, a: str, b: str, decision: str) -> str | None:
        """Why ``decision`` on ``a`` and ``b`` cannot be kept, in one line; ``None`` when it can."""
        if decision not in DECISIONS:
            return f"a decision is 'merge' or 'apart', got {shown(decision)}"
        return self.pair_refusal(a, b)

    def pair_refusal(self, a: str, b: str) -> str | None:
        """Why ``a`` and ``b`` are no pair a decision can name (the same id twice, a group the index
        does not hold), in one line; ``None`` when they are."""
        if a == b:
            return f"a decision names two different groups, got {shown(a)} twice: pick a pair of the queue"
        held = self._held(a, b)
        missing = [g for g in (a, b) if g not in held]
        if not missing:
            return None
        return (
            f"the index holds no group {shown(missing[0])}: a decision names two group ids of the index "
            "(as the review queue and `chunkdedup show` print them); reload the review page"
        )

    def _held(self, *ids: str) -> list[str]:
        """Those of ``ids`` that are groups of the index."""
        marks = ", ".join("?" * len(ids))
        return [r[0] for r in self.store.conn.execute(f"SELECT id FROM groups WHERE id IN ({marks})", ids)]

    def overrides(self) -> tuple[Override, ...]:
        """Every decision kept in the index, by pair (a damaged row is skipped with a warning)."""
        rows, _ = self._rows()
        return tuple(o for o, _ in rows)

    def kept(self) -> KeptDecisions:
        """The decisions kept in the index, told apart: on groups it holds, stale, damaged."""
        rows, damaged = self._rows()
        held = tuple(o for o, ok in rows if ok)
        return KeptDecisions(held, tuple(o for o, ok in rows if not ok), damaged)

    def pairs(
        self, kind: Kind, *, order: Order = "threshold", reason: str | None = None,
        limit: int = 50, offset: int = 0, doc: str | None = None, family: str | None = None,
        similarity: tuple[float | None, float | None] = (None, None), text: str | None = None,
    ) -> Slice[PairRow]:
        """One page of the queue: ``merges`` (near and semantic copies with the leader they joined) or
        ``variants`` (pairs a guard kept apart; ``reason`` keeps one reason), nearest the threshold first
        (``order="threshold"``: the lowest similarity) or the largest clusters first (``"size"``).
        ``doc`` keeps the pairs either of whose texts stands in that document, ``family`` those either
        side of which was first found in a document of that family, ``similarity`` those whose
        similarity lies in ``(low, high)`` (either end ``None``: open; both ends included), ``text``
        those either of whose texts holds it (case aside for ASCII letters)."""
        if kind not in ("merges", "variants"):
            raise ValueError(f"kind is 'merges' or 'variants', got {kind!r}")
        sql, a, b = (_MERGES, "l", "m") if kind == "merges" else (_VARIANTS, "ga", "gb")
        where: list[str] = ["m.rel IS NOT NULL"] if kind == "merges" else []
        args: list[object] = []
        if reason:
            where.append("m.relation = ?" if kind == "merges" else "v.reason = ?")
            args.append(reason)
        if doc:
            where.append(
                "EXISTS(SELECT 1 FROM source_rows s JOIN document_rows d ON d.dkey = s.dkey"
                f" WHERE s.gid IN ({a}.gid, {b}.gid) AND d.doc_id = ?)"
            )
            args.append(doc)
        if family:
            where.append("(da.family = ? OR db.family = ?)")
            args += [family, family]
        low, high = similarity
        column = "m.similarity" if kind == "merges" else "v.similarity"
        if low is not None:
            where.append(f"{column} >= ?")
            args.append(low)
        if high is not None:
            where.append(f"{column} <= ?")
            args.append(high)
        if text:
            where.append(f"({holds(a + '.text')} OR {holds(b + '.text')})")
            args += [text, text]
        if where:
            sql += " WHERE " + " AND ".join(where)
        total = self.store.conn.execute(f"SELECT COUNT(*) FROM ({sql})", args).fetchone()[0]
        by = "6 ASC, 1, 2" if order == "threshold" else "8 DESC, 6 ASC, 1, 2"
        rows = self.store.conn.execute(f"{sql} ORDER BY {by} LIMIT ? OFFSET ?", [*args, limit, offset])
        items = tuple(
            PairRow(
                r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6])), r[7], r[8],
                PairSide(*r[9:14]), PairSide(*r[14:19]), r[19], r[20],
            )
            for r in rows
        )
        return Slice(items, total, limit, offset)

    def _rows(self) -> tuple[list[tuple[Override, bool]], int]:
        """Each well-formed decision with whether both its groups are held, and how many rows were
        skipped with a warning: ids not text or a decision not merge/apart (a row written by hand or
        by another program; the table's types do not stop a blob, and a table rebuilt without them
        takes anything)."""
        rows: list[tuple[Override, bool]] = []
        damaged: list[tuple[object, object, object]] = []
        for a, b, decision, held, at, by in self.store.conn.execute(_OVERRIDES):
            if isinstance(a, str) and isinstance(b, str) and decision in DECISIONS:
                at, by = (v if isinstance(v, str) else None for v in (at, by))
                rows.append((Override(a, b, decision, at, by), bool(held) and a != b))
            else:
                damaged.append((a, b, decision))
        if damaged:
            logger.warning(
                "skipped %d damaged review decision(s) in the index (first: a=%s, b=%s, decision=%s): "
                "ids must be text and the decision merge or apart; `chunkdedup check` counts them",
                len(damaged), *(shown(v) for v in damaged[0]),
            )
        return rows, len(damaged)
