"""The near-duplicate and semantic tiers' pure steps: MinHash band keys of exact keys, the connected
components over verified edges, and the leader clustering that decides each group's cluster.

Near edges (shingle Jaccard >= ``near.threshold``) and semantic edges (embedding cosine >=
``semantic.threshold``) feed one leader clustering. A near edge always outranks a semantic one (its
similarity enters as ``1 + jaccard``), so a group joins a near leader when it has one and a
semantic leader only otherwise; the number/date guard applies to both.

Incremental equals fresh: a group's cluster depends only on the groups connected to it by verified
edges (shingle Jaccard >= threshold) and on their order (smallest (doc_id, page, start)), and leader
clustering is a rule on exactly those (see :mod:`chunkdedup.dedup.lsh`). So re-clustering the
components that hold a dirty group (new, removed, or whose order moved) gives what a fresh ingest
would: the same canonicals, sources, merges and variants.
:mod:`chunkdedup.ingestion.clusters` runs these steps
on an index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from chunkdedup.config import NearConfig
from chunkdedup.dedup.lsh import Clustering, band_keys, guard_edges, leader_cluster_checked, set_keys
from chunkdedup.dedup.meaning import judge_edges, shared_head
from chunkdedup.dedup.minhash import MinHasher
from chunkdedup.dedup.settings import NUMPY_KEYS, near_fingerprints, near_hashing, single_key_shingles
from chunkdedup.normalize import exact_key
from chunkdedup.types import Assignment, GroupRow

_MAX_DIFF = 20
__all__ = [
    "Decided",
    "Edges",
    "NearEdges",
    "Overrides",
    "connect",
    "decide",
    "group_key",
    "near_fingerprints",
    "near_hashing",
    "sign_keys",
    "word_diff",
]

Edges = dict[tuple[str, str], tuple[str, float]]
"""Decided edges among groups: ``(a, b)``, ``a < b`` -> (``"near"`` or ``"semantic"``, similarity)."""
NearEdges = Mapping[tuple[str, str], float]
"""Verified near edges: ``(a, b)``, ``a < b`` -> shingle Jaccard (at least ``near.threshold``)."""


def word_diff(member: str, leader: str) -> tuple[str, ...]:
    """Words only in the member (``+``) or only in the leader (``-``), sorted, at most 20.

    The words both texts open with, and those both close with, are in both multisets and cancel:
    only the stretch between them is counted (a near copy differs in a few places; counting every
    word of two 200-word texts was most of the cluster decision at 1M chunks).
    """
    if member == leader:
        return ()
    head = shared_head(member, leader)
    while head > 0 and not member[head - 1].isspace():  # back to a word boundary both texts share
        head -= 1
    rest_m, rest_l = member[head:], leader[head:]
    tail = shared_head(rest_m[::-1], rest_l[::-1])
    while tail > 0 and not rest_m[len(rest_m) - tail].isspace():
        tail -= 1
    a = Counter(rest_m[: len(rest_m) - tail].split())
    b = Counter(rest_l[: len(rest_l) - tail].split())
    # the words whose counts differ, from the (word, count) pairs only one side has (a set operation
    # in C; a Counter subtraction walks every word in Python): a near copy changes a few of them
    changed = {w for w, _ in a.items() ^ b.items()}
    minus = sorted(w for w in changed for _ in range(b.get(w, 0) - a.get(w, 0)))
    plus = sorted(w for w in changed for _ in range(a.get(w, 0) - b.get(w, 0)))
    out = [f"-{w}" for w in minus] + [f"+{w}" for w in plus]
    return tuple(out[:_MAX_DIFF])


def sign_keys(hasher: MinHasher, keys: Sequence[str], config: NearConfig) -> npt.NDArray[np.int64]:
    """The LSH keys of exact keys, ``(len(keys), config.bands)`` int64 as stored: one pure step that
    every path shares (the chunk phase, the cluster pass, and so the band rows Ray reads).

    A key whose shingle set is too small to reach ``config.threshold`` with any other set
    (:func:`~chunkdedup.dedup.settings.single_key_shingles`: at 0.85, up to 5 shingles) can only be
    verified against a key of the same set: its row is one key, the hash of that set
    (:func:`~chunkdedup.dedup.lsh.set_keys`), in every column, which the store keeps as one band row.
    Every other key has its MinHash band keys. The verified edges are those that band keys for every
    group give (``tests/test_single_key.py`` holds it).

    Example:
        >>> from chunkdedup.config import NearConfig
        >>> rows = sign_keys(MinHasher(), ["a b c", "a b c d e f g h i j k l"], NearConfig())
        >>> rows.shape, len(set(rows[0].tolist())), len(set(rows[1].tolist()))
        ((2, 16), 1, 16)
    """
    sigs, single, sets = hasher.sketches(keys, single_key_shingles(config.threshold))
    out = np.empty((len(keys), config.bands), dtype=np.uint64)
    many = np.flatnonzero(~single)
    out[many] = band_keys(sigs[many], config.bands, config.rows)
    del sigs
    out[single] = set_keys(sets[single])[:, None]
    return out.view(np.int64)


def group_key(keys: dict[str, str], gid: str, text: str) -> str:
    """The exact key of group ``gid`` (text ``text``), from ``keys`` or computed into it."""
    key = keys.get(gid)
    if key is None:
        key = keys[gid] = exact_key(text)
    return key


def connect(
    dirty: Sequence[str],
    candidates: Callable[[str], Iterable[str]],
    similarity: Callable[[str, str], float],
    threshold: float,
    semantic: Callable[[str], Iterable[tuple[str, float]]] | None = None,
) -> tuple[list[str], Edges]:
    """The groups connected to ``dirty`` ones (sorted) and the edges among them: one rule for every
    source of candidates.

    A near edge is a candidate pair (``candidates(gid)``: band neighbours, or already verified
    neighbours) whose ``similarity`` reaches ``threshold``; a semantic edge is a ``semantic`` neighbour
    with its cosine (capped at 1). A pair with both keeps the near edge. The result depends only on
    the edges, not on the order the groups are reached in, so any source of the same verified edges
    (the store's band table, or edges computed on Ray) gives the same components.

    Example:
        >>> near = {("a", "b"): 0.9, ("b", "c"): 0.5, ("c", "d"): 0.95}
        >>> nbrs = lambda g: sorted({x for p in near if g in p for x in p} - {g})
        >>> seen, edges = connect(["a"], nbrs, lambda a, b: near[(min(a, b), max(a, b))], 0.85)
        >>> seen, edges
        (['a', 'b'], {('a', 'b'): ('near', 0.9)})
    """
    seen = set(dirty)
    frontier = sorted(seen)
    edges: Edges = {}

    def reach(other: str) -> None:
        if other not in seen:
            seen.add(other)
            frontier.append(other)

    while frontier:
        gid = frontier.pop()
        for other in candidates(gid):
            pair = (gid, other) if gid < other else (other, gid)
            if pair in edges and edges[pair][0] == "near":
                continue
            sim = similarity(gid, other)
            if sim >= threshold:
                edges[pair] = ("near", sim)
                reach(other)
        for other, cosine in semantic(gid) if semantic is not None else ():
            pair = (gid, other) if gid < other else (other, gid)
            if pair not in edges:
                edges[pair] = ("semantic", min(cosine, 1.0))
            reach(other)
    return sorted(seen), edges


def _ranked(rows: Sequence[GroupRow]) -> list[int]:
    """Row indices sorted by (order, id): one stable sort per field, last field first (the same
    order as a sort by the tuples, whose comparisons were 3.2 of 3.3 s at 479k groups)."""
    ranked = sorted(range(len(rows)), key=[row.id for row in rows].__getitem__)
    for field in (2, 1, 0):
        ranked.sort(key=[row.order[field] for row in rows].__getitem__)
    return ranked


Decided = tuple[list[Assignment], list[tuple[str, str, float, tuple[str, ...], str]]]
"""The clusters of :func:`decide` and its variants: ``(a, b, similarity, differing, reason)``."""


def decide(
    rows: Sequence[GroupRow],
    edges: Edges,
    guard: bool,
    linkage: str,
    keys: dict[str, str],
    *,
    texts: Mapping[str, str] | None = None,
    meaning: Sequence[str] = (),
    numbering: bool = False,
    always_merge: Sequence[str | tuple[str, str]] = (),
    keep_apart: Sequence[str | tuple[str, str]] = (),
    compiled: bool | None = None,
) -> Decided:
    """Leader clustering over the edges; a near edge weighs ``1 + jaccard`` so it outranks any cosine.

    ``guard``: the number/date guard on every edge. ``meaning`` (reasons) and ``numbering``: the
    meaning guard reads ``texts`` (group id -> text, case kept; a row's own text where it has one) of
    every group on an edge (:mod:`chunkdedup.dedup.meaning`): an edge the number/date guard failed
    only in numbering passes it, and an edge whose differing words change meaning fails. Each pair's
    words are read with the earlier group (by order) first, so a variant's words say ``-`` for the
    leader's and ``+`` for the later text's. ``always_merge`` and ``keep_apart``: the overrides of
    :class:`~chunkdedup.config.NearConfig`, each entry a group id or a text, or a pair of two.
    ``compiled``: whether the guards and the walk take the compiled kernels (``None``: by the number
    of rows and edges; ``False``: the NumPy and CPython twins, while numba's cache is cold): the same
    clusters either way.
    """
    index = {row.id: i for i, row in enumerate(rows)}
    ranked = _ranked(rows)
    order = np.empty(len(rows), dtype=np.int64)
    order[np.asarray(ranked, dtype=np.int64)] = np.arange(len(rows), dtype=np.int64)
    pairs = sorted(edges)
    edge_array = np.asarray([(index[a], index[b]) for a, b in pairs], dtype=np.int64).reshape(-1, 2)
    weights = [1.0 + edges[p][1] if edges[p][0] == "near" else edges[p][1] for p in pairs]

    def edge(a: str, b: str) -> tuple[str, float]:
        return edges[(a, b) if a < b else (b, a)]

    row_keys = [keys[row.id] if row.text is None else group_key(keys, row.id, row.text) for row in rows]
    overrides = Overrides(rows, row_keys, always_merge, keep_apart) if always_merge or keep_apart else None
    result = _clustered(
        rows, order, edge_array, weights, row_keys, guard, linkage, texts or {}, meaning, numbering,
        overrides or None, compiled,
    )
    assignments = []
    for i, (row, leader) in enumerate(zip(rows, result.leader.tolist(), strict=True)):
        if leader == i:
            assignments.append(Assignment(row.id, row.id, "exact", 1.0))
        else:
            relation, sim = edge(row.id, rows[leader].id)
            diff = word_diff(row_keys[i], row_keys[leader])
            assignments.append(Assignment(row.id, rows[leader].id, relation, sim, diff))
    variants = [
        (rows[v.a].id, rows[v.b].id, edge(rows[v.a].id, rows[v.b].id)[1], tuple(v.differing), v.reason)
        for v in result.variants
    ]
    return assignments, variants


def _clustered(
    rows: Sequence[GroupRow],
    order: npt.NDArray[np.int64],
    edge_array: npt.NDArray[np.int64],
    weights: list[float],
    row_keys: list[str],
    guard: bool,
    linkage: str,
    texts: Mapping[str, str],
    meaning: Sequence[str],
    numbering: bool,
    overrides: Overrides | None,
    compiled: bool | None = None,
) -> Clustering:
    """Leader clustering over the edges, each decided by the number/date guard and then, where asked,
    by the numbering rule, the meaning guard and the overrides (see :func:`decide`)."""
    # so many groups were verified by the compiled kernels: the fingerprints cost no start-up
    kernels = (True if len(rows) > NUMPY_KEYS else None) if compiled is None else compiled
    if guard:
        passed, tokens = guard_edges(edge_array, row_keys, compiled=kernels)
    else:
        passed, tokens = np.ones(edge_array.shape[0], dtype=np.bool_), {}
    reasons: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {}
    if meaning or numbering or overrides is not None:

        def text(i: int) -> str:
            row = rows[i]
            return row.text if row.text is not None else texts[row.id]

        passed, reasons = judge_edges(
            edge_array, order, passed, text, meaning, numbering, overrides,
            compiled=kernels,
        )
    return leader_cluster_checked(
        order, edge_array, np.asarray(weights, dtype=np.float64), passed, tokens, linkage, reasons,
        compiled=compiled,
    )


class Overrides:
    """``near.always_merge`` and ``near.keep_apart`` resolved to the rows of one clustering: called
    with two row indices, ``True`` (merge), ``False`` (keep apart) or ``None`` (the guards decide).

    An entry names a group by its id or by a text with the group's exact key; a pair of entries names
    the near pairs between the groups each names. Local to one call: nothing outlives it.
    """

    __slots__ = ("_apart", "_apart_pairs", "_merge", "_merge_pairs", "_named")

    def __init__(
        self,
        rows: Sequence[GroupRow],
        keys: Sequence[str],
        always_merge: Sequence[str | tuple[str, str]],
        keep_apart: Sequence[str | tuple[str, str]],
    ) -> None:
        index: dict[str, list[int]] = {}
        for i, (row, key) in enumerate(zip(rows, keys, strict=True)):
            index.setdefault(row.id, []).append(i)
            index.setdefault(key, []).append(i)

        def named(entry: str) -> frozenset[int]:
            return frozenset(index.get(entry, ()) or index.get(exact_key(entry), ()))

        def split(entries: Sequence[str | tuple[str, str]]) -> tuple[frozenset[int], set[tuple[int, int]]]:
            single: set[int] = set()
            pairs: set[tuple[int, int]] = set()
            for entry in entries:
                if isinstance(entry, str):
                    single |= named(entry)
                else:
                    pairs |= {(min(a, b), max(a, b)) for a in named(entry[0]) for b in named(entry[1])}
            return frozenset(single), pairs

        self._merge, self._merge_pairs = split(always_merge)
        self._apart, self._apart_pairs = split(keep_apart)
        self._named = bool(self._merge or self._merge_pairs or self._apart or self._apart_pairs)

    def __bool__(self) -> bool:
        """Whether any entry names a group of this clustering."""
        return self._named

    def __call__(self, i: int, j: int) -> bool | None:
        pair = (min(i, j), max(i, j))
        if i in self._apart or j in self._apart or pair in self._apart_pairs:
            return False
        if i in self._merge or j in self._merge or pair in self._merge_pairs:
            return True
        return None
