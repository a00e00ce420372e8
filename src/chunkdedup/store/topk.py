"""An exact top-k of ``groups_fts`` for OR-ed terms, without scoring the rows only common terms hold.

FTS5's ``ORDER BY bm25`` scores every row holding any term: a question holding "within" (in 478k of
1M chunks) scores nearly every row. Yet a common term adds little: FTS5's ``bm25()`` adds, per phrase
of the MATCH expression, ``idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl))``, which is below
``idf * (k1 + 1)`` whatever the row (k1 = 1.2, b = 0.75; ``idf`` clamped to 1e-6 once a term sits in
half the rows or more). So when the terms split into rare ones R and common ones C (by how many rows
hold each), a row holding only C terms scores below ``sum over C of idf * (k1 + 1)``; if the k-th
best full score among the rows holding an R term is above that bound, the top k is among them.

:func:`top_groups` finds it in three reads, none of them walking the rows of a C term but to count
them: the rows' count of each term (FTS5's own idf input); FTS5's score of every R row for the R
terms alone (an R-only MATCH: cost proportional to R's rows), which bounds each row's full score
within the C bound and keeps as candidates the rows that may reach the k-th; and, for those few
candidates only, their size in tokens and each term's count in them (``highlight()`` per term, by
rowid: no scoring, so no walk of the term's rows). Each candidate's full score is then FTS5's
``bm25()`` replayed in Python, operation for operation in its order, so the floats are bit for bit
FTS5's: every candidate's replayed R-only score is checked against FTS5's own, and any difference
(another SQLite's arithmetic) gives None, as does every case the bound does not settle. None means:
run the full query (:func:`~chunkdedup.store.fulltext.search_groups`).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from chunkdedup.store import reads
from chunkdedup.store.core import Store
from chunkdedup.store.fulltext import Bm25Row

_K1 = 1.2
_B = 0.75
#: relative slack between two float sums of the same terms in another order (the real bound is
#: n * 2**-53 for n terms: ~1e-13 for a thousand terms)
_SLACK = 1e-9
_BATCH = 500
#: a term's count in each candidate row: highlight() copies the text, one char(1) before each
#: instance (one-token terms: instances never overlap). _WALK reads the term's rows and keeps the
#: candidates ("+": not a rowid constraint); _LOOKUP seeks each candidate (FTS5 parses the MATCH
#: again per rowid: ~45 us, against ~0.1 us a row walked)
_COUNT = "length(highlight(groups_fts, 0, char(1), '')) - length(text)"
_WALK = (
    f"SELECT rowid, {_COUNT} FROM groups_fts WHERE groups_fts MATCH ?1"
    " AND +rowid IN (SELECT value FROM json_each(?2))"
)
_LOOKUP = (
    f"SELECT rowid, {_COUNT} FROM groups_fts WHERE groups_fts MATCH ?1"
    " AND rowid IN (SELECT value FROM json_each(?2))"
)
_WALK_RATIO = 200
#: terms FTS5's unicode61 tokenizer keeps as one token, whatever the Unicode tables of either side
_ASCII_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Split:
    """When a term counts as common: held by more than ``common`` of the rows, and the common
    terms' rows outnumber the rare terms' ``gain`` times and ``min_rows`` (else the full query costs
    about the same: ~1 ms a thousand rows). ``max_candidates`` caps the rows whose full score is
    replayed (each costs a lookup per term)."""

    common: float = 0.05
    gain: float = 2.0
    min_rows: int = 20_000
    max_candidates: int = 4000

    def __post_init__(self) -> None:
        if not 0.0 < self.common < 1.0:
            raise ValueError(f"common must be in (0, 1), got {self.common!r}")
        if self.gain < 0.0:
            raise ValueError(f"gain must be >= 0, got {self.gain!r}")
        if self.min_rows < 0:
            raise ValueError(f"min_rows must be >= 0, got {self.min_rows!r}")
        if self.max_candidates < 1:
            raise ValueError(f"max_candidates must be >= 1, got {self.max_candidates!r}")


#: the split :class:`~chunkdedup.query.retrieve.Fts5Retriever` uses unless told otherwise
DEFAULT_SPLIT = Split()


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (big-endian, 7 bits a byte, high bit set on all but the last byte; FTS5
    writes no 9-byte ones for counts this size)."""
    out: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out


def fts5_totals(conn: sqlite3.Connection) -> list[int]:
    """FTS5's totals record of ``groups_fts``: its rows, then its tokens per column (empty when the
    table holds none yet)."""
    block = conn.execute("SELECT block FROM groups_fts_data WHERE id = 1").fetchone()
    return _varints(block[0]) if block is not None else []


def _quote(term: str) -> str:
    return '"' + term + '"'


def _idf(rows: int, hits: int) -> float:
    """FTS5's ``fts5Bm25GetData``: the idf of a phrase held by ``hits`` of ``rows`` rows."""
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    return idf if idf > 0.0 else 1e-6


def _bm25(freqs: Sequence[int], idfs: Sequence[float], size: int, avgdl: float) -> float:
    """FTS5's ``fts5Bm25Function`` for one row, its phrases in MATCH order (lower is better)."""
    score = 0.0
    for f, idf in zip(freqs, idfs, strict=True):
        score += idf * ((f * (_K1 + 1.0)) / (f + _K1 * (1 - _B + _B * size / avgdl)))
    return -1.0 * score


def top_groups(
    store: Store, terms: Sequence[str], limit: int, split: Split | None = None
) -> tuple[Bm25Row, ...] | None:
    """Exactly :func:`~chunkdedup.store.fulltext.search_groups` for the terms quoted and OR-ed (the
    same groups, order and ``bm25`` floats), or None when this path cannot prove it (see the module)."""
    split = split or DEFAULT_SPLIT
    if limit <= 0 or limit > split.max_candidates or not terms:
        return None  # the candidates are at least ``limit``
    if any(_ASCII_WORD.fullmatch(t) is None for t in terms):
        return None
    if store.conn.in_transaction:
        return _top(store, terms, limit, split)
    with reads.snapshot(store):  # its reads must see one state of the index, as one statement does
        return _top(store, terms, limit, split)


def _top(store: Store, terms: Sequence[str], limit: int, split: Split) -> tuple[Bm25Row, ...] | None:
    conn = store.conn
    totals = fts5_totals(conn)
    if len(totals) < 2 or totals[0] <= 0:
        return None
    rows, tokens = totals[0], totals[1]
    count = "SELECT COUNT(*) FROM groups_fts WHERE groups_fts MATCH ?"
    hits = [int(conn.execute(count, (_quote(t),)).fetchone()[0]) for t in terms]
    common = [h > split.common * rows for h in hits]
    rare_rows = sum(h for h, c in zip(hits, common, strict=True) if not c)
    common_rows = sum(h for h, c in zip(hits, common, strict=True) if c)
    if rare_rows == 0 or common_rows <= split.gain * rare_rows or common_rows < split.min_rows:
        return None
    avgdl = float(tokens) / float(rows)
    idfs = [_idf(rows, h) for h in hits]
    bound = sum(idf * (_K1 + 1.0) for idf, c in zip(idfs, common, strict=True) if c) * (1.0 + _SLACK)
    rare = [i for i, c in enumerate(common) if not c]
    # Every row holding an R term, scored by FTS5 for the R terms alone (s = -b). A row's full score
    # lies in [s (1 - slack), s (1 + slack) + bound], so one whose top cannot reach the k-th best
    # bottom is out of the top k, tied rows included; the rest are the candidates.
    found = conn.execute(
        "WITH f AS MATERIALIZED (SELECT rowid AS r, bm25(groups_fts) AS b FROM groups_fts"
        " WHERE groups_fts MATCH ?1),"
        " k AS (SELECT b FROM f ORDER BY b LIMIT 1 OFFSET ?2 - 1)"
        " SELECT f.r, f.b FROM f, k WHERE -f.b * (1.0 + ?3) + ?4 >= -k.b * (1.0 - ?3)"
        " LIMIT ?5",
        (" OR ".join(_quote(terms[i]) for i in rare), limit, _SLACK, bound, split.max_candidates + 1),
    ).fetchall()
    if not found or len(found) > split.max_candidates:
        return None  # fewer than k rows hold an R term, or too many candidates to replay
    partial = {int(r): float(b) for r, b in found}
    keys = sorted(partial)
    sizes: dict[int, int] = {}
    freqs = {r: [0] * len(terms) for r in keys}
    groups: dict[int, str] = {}
    for lo in range(0, len(keys), _BATCH):
        part = keys[lo : lo + _BATCH]
        marks = ",".join("?" * len(part))
        for r, sz in conn.execute(f"SELECT id, sz FROM groups_fts_docsize WHERE id IN ({marks})", part):
            sizes[int(r)] = _varints(sz)[0]
        for r, gid in conn.execute(f"SELECT gid, id FROM groups WHERE gid IN ({marks})", part):
            groups[int(r)] = gid
    scope = json.dumps(keys)
    for i, t in enumerate(terms):
        sql = _WALK if hits[i] <= _WALK_RATIO * len(keys) else _LOOKUP
        for r, n in conn.execute(sql, (_quote(t), scope)):
            freqs[int(r)][i] = int(n)
    if len(sizes) != len(keys):
        return None
    scored: list[tuple[float, int]] = []
    rare_idfs = [idfs[i] for i in rare]
    for r in keys:
        if _bm25([freqs[r][i] for i in rare], rare_idfs, sizes[r], avgdl) != partial[r]:
            return None  # the replay is not FTS5's arithmetic here: trust only FTS5
        scored.append((_bm25(freqs[r], idfs, sizes[r], avgdl), r))
    scored.sort()
    kth = scored[min(limit, len(scored)) - 1][0]
    if not -kth > bound:
        return None  # a row holding only common terms might reach the top k
    # as search_groups: the rows up to the k-th score, joined to their groups, by (bm25, id)
    top = sorted((b, groups[r]) for b, r in scored if b <= kth and r in groups)
    return tuple(Bm25Row(g, b) for b, g in top[:limit])
