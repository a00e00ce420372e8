"""The review queue: near pairs for a person to read side by side, and the decisions read from it.

A decision is an override of the guards for one pair of exact-key groups (``merge``: merged whatever
the guards say; ``apart``: a variant with reason ``override``), kept in the index (``overrides``)
and honoured by the next cluster pass beside ``[near] always_merge`` / ``keep_apart``. Writing one
marks both groups dirty, so the next ingest re-decides their components (and nothing else).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from chunkdedup.store.core import Store
from chunkdedup.store.rows import Slice
from chunkdedup.store.schema import in_cluster

Decision = Literal["merge", "apart"]
#: which pairs the queue lists
Kind = Literal["merges", "variants"]
#: merges nearest the threshold first, or the largest clusters first
Order = Literal["threshold", "size"]

__all__ = ["Decision", "Kind", "Order", "Override", "PairRow", "ReviewQueue"]


@dataclass(frozen=True, slots=True)
class Override:
    """A person's decision on the pair of groups ``a`` < ``b``."""

    a: str
    b: str
    decision: Decision


@dataclass(frozen=True, slots=True)
class PairRow:
    """A near pair of the queue: the earlier group ``a`` (the leader a merge joined, or the group a
    variant could have joined) and ``b``, both texts, why they are merged or kept apart (``relation``:
    ``near``/``semantic`` for a merge, the guard's reason for a variant), the words that differ, the
    size of ``a``'s cluster (exact-key groups) and the decision already taken, if any."""

    a: str
    b: str
    a_text: str
    b_text: str
    relation: str
    similarity: float
    differing: tuple[str, ...]
    cluster_groups: int
    decision: Decision | None

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a, "b": self.b, "a_text": self.a_text, "b_text": self.b_text,
            "relation": self.relation, "similarity": self.similarity, "differing": list(self.differing),
            "cluster_groups": self.cluster_groups, "decision": self.decision,
        }


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


_MERGES = f"""
    SELECT l.id, m.id, l.text, m.text, m.relation, m.similarity, m.differing,
           (SELECT COUNT(*) FROM groups g WHERE {in_cluster("g", "m.canonical_id")}), o.decision
    FROM groups m JOIN groups l ON l.id = m.canonical_id
    LEFT JOIN overrides o ON o.a = MIN(l.id, m.id) AND o.b = MAX(l.id, m.id)
    WHERE m.rel IS NOT NULL
"""
_VARIANTS = f"""
    SELECT v.a, v.b, ga.text, gb.text, v.reason, v.similarity, v.differing,
           (SELECT COUNT(*) FROM groups g WHERE {in_cluster("g", "ga.canonical_id")}), o.decision
    FROM variants v JOIN groups ga ON ga.id = v.a JOIN groups gb ON gb.id = v.b
    LEFT JOIN overrides o ON o.a = MIN(v.a, v.b) AND o.b = MAX(v.a, v.b)
"""


class ReviewQueue:
    """The review queue and its decisions (``Index.review``): the merges and version pairs a person
    reviews, and the overrides they keep."""

    __slots__ = ("store",)

    def __init__(self, store: Store) -> None:
        self.store = store

    def decide(self, a: str, b: str, decision: Decision) -> None:
        """Keep ``decision`` for the pair of groups ``a`` and ``b`` and mark both dirty (the next ingest
        re-decides their components)."""
        if decision not in ("merge", "apart"):
            raise ValueError(f"a decision is 'merge' or 'apart', got {decision!r}")
        lo, hi = _pair(a, b)
        with self.store.writer(), self.store.transaction() as c:
            c.execute("INSERT OR REPLACE INTO overrides(a, b, decision) VALUES (?, ?, ?)", (lo, hi, decision))
            self.store.chunks.mark_dirty((lo, hi))

    def forget(self, a: str, b: str) -> None:
        """Drop the decision on the pair ``a``, ``b`` (the guards decide it again at the next ingest)."""
        lo, hi = _pair(a, b)
        with self.store.writer(), self.store.transaction() as c:
            c.execute("DELETE FROM overrides WHERE a=? AND b=?", (lo, hi))
            self.store.chunks.mark_dirty((lo, hi))

    def overrides(self) -> tuple[Override, ...]:
        """Every decision kept in the index, by pair."""
        rows = self.store.conn.execute("SELECT a, b, decision FROM overrides ORDER BY a, b")
        return tuple(Override(a, b, d) for a, b, d in rows)

    def pairs(
        self, kind: Kind, *, order: Order = "threshold", reason: str | None = None,
        limit: int = 50, offset: int = 0,
    ) -> Slice[PairRow]:
        """One page of the queue: ``merges`` (near and semantic copies with the leader they joined) or
        ``variants`` (pairs a guard kept apart; ``reason`` keeps one reason), nearest the threshold first
        (``order="threshold"``: the lowest similarity) or the largest clusters first (``"size"``)."""
        if kind not in ("merges", "variants"):
            raise ValueError(f"kind is 'merges' or 'variants', got {kind!r}")
        sql, args = (_MERGES, []) if kind == "merges" else (_VARIANTS, [])
        if reason:
            sql += " AND m.relation = ?" if kind == "merges" else " WHERE v.reason = ?"
            args.append(reason)
        total = self.store.conn.execute(f"SELECT COUNT(*) FROM ({sql})", args).fetchone()[0]
        by = "6 ASC, 1, 2" if order == "threshold" else "8 DESC, 6 ASC, 1, 2"
        rows = self.store.conn.execute(f"{sql} ORDER BY {by} LIMIT ? OFFSET ?", [*args, limit, offset])
        items = tuple(
            PairRow(r[0], r[1], r[2], r[3], r[4], r[5], tuple(json.loads(r[6])), r[7], r[8]) for r in rows
        )
        return Slice(items, total, limit, offset)
