"""LSH banding, candidate verification and leader clustering: pure functions over arrays.

The near tier in four steps, each a function of the previous one's arrays:

1. :func:`band_keys`: cut each MinHash signature into ``bands`` bands of ``rows`` values and hash
   each band to a uint64 whose top 8 bits are the band index, so keys of different bands never
   collide, by construction, when they share one table.
2. :func:`candidate_pairs`: items sharing a key in any band. A bucket of ``s`` items gives
   ``s * (s - 1) / 2`` pairs; above ``max_bucket`` items a bucket gives only the star from its
   smallest item index to every other member (exact copies are merged before this tier, so such
   buckets are rare: a template paragraph repeated with small edits in thousands of documents).
3. :func:`verified_edges`: the candidates whose exact shingle Jaccard reaches the threshold.
4. :func:`leader_cluster`: the clusters.

**The leader rule.** Items are visited by rank (``order[i]``, e.g. the rank of the item's smallest
(doc_id, page, start); the caller computes it, ranks must be distinct). When item ``i`` is visited,
its candidate leaders are its verified neighbours that rank earlier and are leaders. ``i`` joins the
one with the highest similarity whose number/date guard passes (:func:`chunkdedup.dedup.guard.guard_diff`
is empty, or the guard is off); ties go to the earlier rank. Every candidate leader whose guard
fails is recorded as a :class:`Variant`. If ``i`` joins nobody it is a leader. There is no
transitive closure: in a chain A~B~C with A !~ C, C never joins A.

**Linkage.** ``linkage="leader"`` (the default) is the rule above: a member matches its leader, but
two members of one leader may be further apart than the threshold (radius, not diameter).
``linkage="complete"`` adds one condition: ``i`` may join leader ``L`` only if it also has a passing
verified edge to every member that joined ``L`` before it (members join in rank order, so this is
still a rule on the data). Every pair in a cluster then has a verified edge at or above the threshold
with the guard passing; among the leaders that qualify the choice and the tie rule are unchanged,
and variants are recorded as under the leader rule (candidate leaders whose guard fails). Both
rules have every property below; an item costs ``O(degree)`` under either.

The result depends only on the verified edges, the ranks and the keys, never on item indices or
arrival order, and an item's fate depends only on items of its connected component: clustering any
union of components alone gives the same clusters as clustering everything. :func:`components`
labels them, so a caller re-clusters only the components a change touched.

Example:
    >>> import numpy as np
    >>> edges = np.array([[0, 1], [1, 2]])            # A~B, B~C, not A~C
    >>> sims = np.array([0.9, 0.9])
    >>> c = leader_cluster(np.array([0, 1, 2]), edges, sims, ["a", "b", "c"])
    >>> c.leader.tolist()
    [0, 0, 2]
    >>> star = np.array([[0, 1], [0, 2]])             # B~A, C~A, not B~C
    >>> leader_cluster(np.array([0, 1, 2]), star, sims, ["a", "b", "c"]).leader.tolist()
    [0, 0, 0]
    >>> leader_cluster(np.array([0, 1, 2]), star, sims, ["a", "b", "c"], linkage="complete").leader.tolist()
    [0, 0, 2]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chunkdedup.dedup.guard import guard_fingerprints, numeric_tokens, token_diff
from chunkdedup.dedup.minhash import intersection_size
from chunkdedup.jit import kernel, python

__all__ = [
    "LINKAGES",
    "Clustering",
    "Merge",
    "Variant",
    "band_keys",
    "candidate_pairs",
    "components",
    "guard_edges",
    "leader_cluster",
    "leader_cluster_checked",
    "set_keys",
    "verified_edges",
    "verified_edges_flat",
]

U32Array = npt.NDArray[np.uint32]
U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]
F64Array = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_U64 = np.uint64
_BAND_BITS = 8
_MAX_BANDS = 1 << _BAND_BITS
_HASH_MASK = _U64((1 << (64 - _BAND_BITS)) - 1)
_SET_TAG = _U64((_MAX_BANDS - 1) << (64 - _BAND_BITS))  # a shingle set's one key: no band has this tag
_SET_KEY_SEED = _U64(0x94D049BB133111EB)
_BAND_BLOCK = 1 << 15  # signature rows per banding step: bounds the uint64 temporaries (~4 MB)
_PAIR_MERGE = 1 << 22  # accumulated pair codes before deduplicating them
_VERIFY_BLOCK = 1 << 16  # pairs per verification step: bounds the concatenated shingles
LINKAGES = ("leader", "complete")
"""The values of ``linkage`` (see the module docstring)."""
#: adjacency slots (twice the edges) up to which the leader walk runs in Python, not numba: the
#: same result, and an incremental run's few components cost less than numba's start-up
PYTHON_WALK_SLOTS = 1 << 15
#: edges up to which the guard checks every edge's tokens instead of comparing compiled fingerprints
PYTHON_GUARD_EDGES = 1 << 13


# ---------------------------------------------------------------------------------------------
# Banding
# ---------------------------------------------------------------------------------------------


def _fmix(h: U64Array) -> U64Array:
    """murmur3's 64-bit finaliser, vectorised (uint64 arithmetic wraps)."""
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> _U64(33))


def band_keys(signatures: U32Array, bands: int, rows: int) -> U64Array:
    """Hash each band of ``rows`` signature values: ``(n, bands)`` uint64, band index in the top 8 bits.

    The first ``bands * rows`` columns of ``signatures`` are used.

    Example:
        >>> sig = np.arange(8, dtype=np.uint32).reshape(1, 8)
        >>> keys = band_keys(np.vstack([sig, sig]), bands=2, rows=4)
        >>> keys.shape, bool((keys[0] == keys[1]).all()), (keys[0] >> np.uint64(56)).tolist()
        ((2, 2), True, [0, 1])
    """
    sig = np.asarray(signatures)
    if sig.ndim != 2:
        raise ValueError(f"signatures must be a 2-D (n, num_perm) array, got shape {sig.shape}")
    if not 1 <= bands < _MAX_BANDS or rows < 1:
        raise ValueError(f"bands must be in [1, {_MAX_BANDS - 1}] and rows >= 1, got {bands} and {rows}")
    if bands * rows > sig.shape[1]:
        raise ValueError(
            f"bands * rows = {bands * rows} exceeds the signature length {sig.shape[1]}: "
            "lower bands or rows, or raise num_perm"
        )
    n = sig.shape[0]
    out = np.empty((n, bands), dtype=np.uint64)
    band = np.arange(bands, dtype=np.uint64)
    seeds = _fmix((band + _U64(1)) * _U64(0x9E3779B97F4A7C15))
    tag = band << _U64(64 - _BAND_BITS)
    for lo in range(0, n, _BAND_BLOCK):
        block = sig[lo : lo + _BAND_BLOCK, : bands * rows].reshape(-1, bands, rows)
        h = np.broadcast_to(seeds, (block.shape[0], bands)).copy()
        for r in range(rows):
            h ^= block[:, :, r].astype(np.uint64)
            h *= _U64(0x100000001B3)
            h ^= h >> _U64(29)
        out[lo : lo + block.shape[0]] = (_fmix(h) & _HASH_MASK) | tag
    return out


def set_keys(hashes: U64Array) -> U64Array:
    """The one key of each group found by its shingle set's hash (``MinHasher.sketches``): a uint64
    with the top 8 bits all set, a tag no band's key has (:func:`band_keys` takes at most 255 bands).

    Example:
        >>> keys = set_keys(np.array([5, 5, 6], np.uint64))
        >>> bool(keys[0] == keys[1]), bool(keys[0] == keys[2]), int(keys[0] >> np.uint64(56))
        (True, False, 255)
    """
    h = np.asarray(hashes, dtype=np.uint64)
    return (_fmix(h ^ _SET_KEY_SEED) & _HASH_MASK) | _SET_TAG


# ---------------------------------------------------------------------------------------------
# Candidates
# ---------------------------------------------------------------------------------------------


@kernel
def _bucket_pairs(order: I64Array, starts: I64Array, sizes: I64Array, n: int, max_bucket: int) -> I64Array:
    """Pair codes ``lo * n + hi`` of every bucket (a run ``order[start:start+size]`` of equal keys)."""
    total = 0
    for b in range(starts.size):
        s = sizes[b]
        total += s * (s - 1) // 2 if s <= max_bucket else s - 1
    out = np.empty(total, np.int64)
    k = 0
    for b in range(starts.size):
        lo = starts[b]
        s = sizes[b]
        if s <= max_bucket:
            for p in range(lo, lo + s):
                i = order[p]
                for q in range(p + 1, lo + s):
                    j = order[q]
                    out[k] = min(i, j) * n + max(i, j)
                    k += 1
        else:  # a star from the smallest member
            hub = order[lo]
            for p in range(lo + 1, lo + s):
                hub = min(hub, order[p])
            for p in range(lo, lo + s):
                j = order[p]
                if j != hub:
                    out[k] = hub * n + j
                    k += 1
    return out


def _bucket_codes(
    column: npt.NDArray[np.integer], items: I64Array, n: int, max_bucket: int, compiled: bool = True
) -> I64Array:
    """Pair codes ``lo * n + hi`` of the items (``items[i]`` in ``[0, n)``) sharing a key in ``column``
    (``compiled=False``: the kernel's own Python function, the same codes)."""
    if column.size < 2 or bool((column[1:] >= column[:-1]).all()):  # sorted already (the store's rows)
        ordered, placed = column, items  # no order to apply: at 16M rows, two arrays of 128 MB fewer
    else:
        order = np.argsort(column).astype(np.int64, copy=False)
        ordered, placed = column[order], items[order]
        del order
    # the runs of equal keys of two rows or more, from one byte a row: not a start and a size for
    # every bucket (most rows are a bucket of their own: at 16M rows, five arrays of 128 MB)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return np.empty(0, dtype=np.int64)
    step = np.diff(same.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    del same
    starts = np.flatnonzero(step == 1)
    sizes = np.flatnonzero(step == -1) - starts + 1
    del step
    pairs = _bucket_pairs if compiled else python(_bucket_pairs)
    codes: I64Array = pairs(placed, starts.astype(np.int64), sizes.astype(np.int64), n, max_bucket)
    return codes


def bucket_pairs(keys: npt.ArrayLike, items: npt.ArrayLike, *, compiled: bool = True) -> I64Array:
    """Unique pairs ``(a, b)``, ``a < b``, of items sharing a key, from rows ``(keys[r], items[r])``.

    The banding step over a table of (band key, item) rows, as the store keeps them (keys of
    different bands never collide), rather than an ``(n, bands)`` array: a hash partition of such
    rows holds every row of its keys, so the pairs of all partitions are the pairs of the whole
    table. Every bucket gives all its pairs (no ``max_bucket`` star), as the store's band join does.
    Items are non-negative ids below ``2**31``; the result is sorted, shape ``(m, 2)``, int64.
    ``compiled=False`` pairs the buckets in CPython (the same pairs, no numba start-up).

    Example:
        >>> bucket_pairs([5, 5, 7, 7, 7, 9], [30, 10, 10, 20, 30, 20]).tolist()
        [[10, 20], [10, 30], [20, 30]]
    """
    column = np.asarray(keys).reshape(-1)
    ids = np.asarray(items, dtype=np.int64).reshape(-1)
    if column.size != ids.size:
        raise ValueError(f"keys and items must have one value per row, got {column.size} and {ids.size}")
    if ids.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if int(ids.min()) < 0 or int(ids.max()) >= 2**31:
        raise ValueError("items must be ids in [0, 2**31): number the items first")
    n = int(ids.max()) + 1
    codes = np.unique(_bucket_codes(column, ids, n, max(2, ids.size), compiled))
    pairs = np.stack((codes // n, codes % n), axis=1)
    kept: I64Array = pairs[pairs[:, 0] != pairs[:, 1]]  # a repeated (key, item) row is no pair
    return kept


def candidate_pairs(keys: U64Array, max_bucket: int = 2000) -> I64Array:
    """Unique pairs ``(i, j)``, ``i < j``, sharing a band key in any band: shape ``(m, 2)``, int64, sorted.

    A bucket larger than ``max_bucket`` contributes only the star from its smallest item index.

    Example:
        >>> keys = np.array([[1, 7], [1, 8], [2, 8], [3, 9]], dtype=np.uint64)
        >>> candidate_pairs(keys).tolist()
        [[0, 1], [1, 2]]
    """
    k = np.asarray(keys)
    if k.ndim != 2:
        raise ValueError(f"keys must be a 2-D (n, bands) array, got shape {k.shape}")
    if max_bucket < 2:
        raise ValueError(f"max_bucket must be >= 2, got {max_bucket}")
    n = k.shape[0]
    if n >= 2**31:
        raise ValueError(f"at most 2**31 items fit the pair codes, got {n}")
    found: list[I64Array] = []
    pending = 0
    items = np.arange(n, dtype=np.int64)
    for b in range(k.shape[1]):
        codes = _bucket_codes(np.ascontiguousarray(k[:, b]), items, n, max_bucket)
        if codes.size == 0:
            continue
        found.append(np.unique(codes))
        pending += codes.size
        if pending > _PAIR_MERGE and len(found) > 1:
            found = [np.unique(np.concatenate(found))]
            pending = found[0].size
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    codes = np.unique(np.concatenate(found)) if len(found) > 1 else found[0]
    return np.stack((codes // n, codes % n), axis=1)


# ---------------------------------------------------------------------------------------------
# Verification
# ---------------------------------------------------------------------------------------------


@kernel
def _pair_jaccard(flat: U64Array, offsets: I64Array, left: I64Array, right: I64Array) -> F64Array:
    """Exact Jaccard of sorted unique sets ``flat[offsets[x]:offsets[x+1]]`` for each pair (left, right)."""
    out = np.empty(left.size, np.float64)
    for p in range(left.size):
        i = offsets[left[p]]
        ie = offsets[left[p] + 1]
        j = offsets[right[p]]
        je = offsets[right[p] + 1]
        na = ie - i
        nb = je - j
        inter = intersection_size(flat[i:ie], flat[j:je])
        union = na + nb - inter
        out[p] = 1.0 if union == 0 else inter / union
    return out


def verified_edges(
    pairs: I64Array, shingles: Sequence[npt.NDArray[np.uint64]], threshold: float
) -> tuple[I64Array, F64Array]:
    """The candidate pairs whose exact shingle Jaccard is >= ``threshold``, and those similarities.

    ``shingles[i]`` is item ``i``'s sorted unique shingle array (``MinHasher.shingles``). Only the
    items named in ``pairs`` are read, one block of pairs at a time, so a lazy sequence that computes
    shingles on demand keeps memory at the candidate set. Two empty sets are identical (1.0), as in
    :func:`chunkdedup.dedup.minhash.jaccard`.

    Example:
        >>> sh = [np.array(s, np.uint64) for s in ([1, 2, 3], [1, 2, 4], [1, 2, 3])]
        >>> edges, sims = verified_edges(np.array([[0, 1], [0, 2]]), sh, 0.9)
        >>> edges.tolist(), sims.tolist()
        ([[0, 2]], [1.0])
    """
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    sims = np.empty(p.shape[0], dtype=np.float64)
    for lo in range(0, p.shape[0], _VERIFY_BLOCK):
        block = p[lo : lo + _VERIFY_BLOCK]
        items, local = np.unique(block, return_inverse=True)
        local = local.reshape(-1, 2).astype(np.int64)
        sets = [np.asarray(shingles[int(i)], dtype=np.uint64) for i in items]
        offsets = np.zeros(len(sets) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, sets), dtype=np.int64, count=len(sets)), out=offsets[1:])
        flat = np.concatenate(sets) if sets else np.empty(0, dtype=np.uint64)
        sims[lo : lo + block.shape[0]] = _pair_jaccard(flat, offsets, local[:, 0].copy(), local[:, 1].copy())
    keep = sims >= threshold
    return p[keep], sims[keep]


def verified_edges_flat(
    pairs: I64Array, items: I64Array, flat: U64Array, offsets: I64Array, threshold: float
) -> tuple[I64Array, F64Array]:
    """:func:`verified_edges` over sets already in one flat array (``MinHasher.shingle_sets``).

    Row ``r`` of ``(flat, offsets)`` is the sorted unique shingle set of item ``items[r]``; ``items``
    is sorted ascending and holds every item named in ``pairs``. One compiled pass, no Python call per
    pair or item.

    Example:
        >>> flat = np.array([1, 2, 3, 1, 2, 4, 1, 2, 3], np.uint64)
        >>> edges, sims = verified_edges_flat(
        ...     np.array([[10, 11], [10, 12]]), np.array([10, 11, 12]), flat, np.array([0, 3, 6, 9]), 0.9
        ... )
        >>> edges.tolist(), sims.tolist()
        ([[10, 12]], [1.0])
    """
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    ids = np.asarray(items, dtype=np.int64).reshape(-1)
    off = np.asarray(offsets, dtype=np.int64).reshape(-1)
    if off.size != ids.size + 1:
        raise ValueError(f"{ids.size} items need {ids.size + 1} offsets, got {off.size}")
    rows = np.searchsorted(ids, p)
    if p.size and (rows.max() >= ids.size or not bool((ids[np.minimum(rows, ids.size - 1)] == p).all())):
        raise ValueError("pairs name items missing from items: pass every paired item's set, items sorted")
    sims = _pair_jaccard(
        np.ascontiguousarray(flat, dtype=np.uint64), off, rows[:, 0].copy(), rows[:, 1].copy()
    )
    keep = sims >= threshold
    return p[keep], sims[keep]


# ---------------------------------------------------------------------------------------------
# Components and leader clustering
# ---------------------------------------------------------------------------------------------


@kernel
def _find(parent: I64Array, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@kernel
def _components_kernel(n: int, left: I64Array, right: I64Array) -> I64Array:
    parent = np.arange(n)
    for e in range(left.size):
        a = _find(parent, left[e])
        b = _find(parent, right[e])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    for x in range(n):
        parent[x] = _find(parent, x)
    return parent


def components(n: int, edges: I64Array) -> I64Array:
    """Connected-component label of each of ``n`` items: the smallest item index in its component.

    Example:
        >>> components(5, np.array([[3, 1], [1, 4]])).tolist()
        [0, 1, 2, 1, 1]
    """
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if e.size and (e.min() < 0 or e.max() >= n):
        raise ValueError(f"edges name items outside [0, {n})")
    labels: I64Array = _components_kernel(n, np.ascontiguousarray(e[:, 0]), np.ascontiguousarray(e[:, 1]))
    return labels


@dataclass(frozen=True, slots=True)
class Merge:
    """``member`` joined ``leader`` with this shingle Jaccard."""

    member: int
    leader: int
    similarity: float


@dataclass(frozen=True, slots=True)
class Variant:
    """A near-duplicate pair kept apart by a guard: ``a`` ranks before ``b`` (``a`` is the leader ``b``
    could have joined); ``differing`` is ``guard_diff(keys[a], keys[b])`` for the number/date guard
    (``reason`` ``number``), else the words the meaning guard names with its reason."""

    a: int
    b: int
    similarity: float
    differing: tuple[str, ...]
    reason: str = "number"


@dataclass(frozen=True, slots=True)
class Clustering:
    """``leader[i]`` is the leader of item ``i`` (``i`` itself for leaders); ``similarity[i]`` its Jaccard
    to the leader (1.0 for leaders). ``merges`` in member rank order; ``variants`` by (b, a) rank."""

    leader: I64Array
    similarity: F64Array
    merges: tuple[Merge, ...]
    variants: tuple[Variant, ...]


@kernel
def _walk(
    visit: I64Array,
    rank: I64Array,
    indptr: I64Array,
    nbr: I64Array,
    sim: F64Array,
    ok: BoolArray,
    complete: bool,
) -> tuple[I64Array, F64Array, I64Array]:
    """The leader rule over a CSR adjacency; returns (leader, similarity, adjacency slots of variants).

    With ``complete``, a leader qualifies only if every item already in its cluster (the leader and
    its members, all earlier by rank) is a passing neighbour of ``i``: ``hits[L]`` counts ``i``'s
    passing earlier neighbours in cluster ``L`` and is compared with ``size[L]`` (edges are unique,
    so nothing counts twice). The scratch is reset through the same neighbours, so an item costs
    ``O(degree)`` either way.
    """
    n = rank.size
    leader = np.arange(n)
    best_sim = np.ones(n)
    variants = np.empty(nbr.size, np.int64)
    size = np.ones(n if complete else 0, np.int64)
    hits = np.zeros(n if complete else 0, np.int64)
    nv = 0
    for i in visit:
        lo = indptr[i]
        hi = indptr[i + 1]
        if complete:
            for e in range(lo, hi):
                j = nbr[e]
                if ok[e] and rank[j] < rank[i]:
                    hits[leader[j]] += 1
        best = -1
        top = -1.0
        for e in range(lo, hi):
            j = nbr[e]
            if rank[j] >= rank[i] or leader[j] != j:
                continue
            if not ok[e]:
                variants[nv] = e
                nv += 1
            elif complete and hits[j] != size[j]:
                continue
            elif sim[e] > top or (sim[e] == top and best >= 0 and rank[j] < rank[best]):
                best = j
                top = sim[e]
        if complete:
            for e in range(lo, hi):
                hits[leader[nbr[e]]] = 0
        if best >= 0:
            leader[i] = best
            best_sim[i] = top
            if complete:
                size[best] += 1
    return leader, best_sim, variants[:nv]


def _undirected(
    n: int, edges: I64Array, similarity: F64Array
) -> tuple[I64Array, I64Array, F64Array, I64Array]:
    """Edges as unique (lo, hi) pairs without self-loops, with their similarities and the index of
    the input edge each came from."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    s = np.asarray(similarity, dtype=np.float64).reshape(-1)
    if s.size != e.shape[0]:
        raise ValueError(f"{e.shape[0]} edges but {s.size} similarities: pass one similarity per edge")
    if e.size and (e.min() < 0 or e.max() >= n):
        raise ValueError(f"edges name items outside [0, {n}): pass indices into order and keys")
    lo, hi = np.minimum(e[:, 0], e[:, 1]), np.maximum(e[:, 0], e[:, 1])
    real = np.flatnonzero(lo != hi)
    codes, first = np.unique(lo[real] * n + hi[real], return_index=True)
    source = real[first]
    return codes // n, codes % n, s[source], source


class _Tokens:
    """Numeric tokens of keys, each computed once per call (local: nothing outlives the call)."""

    __slots__ = ("_keys", "_seen")

    def __init__(self, keys: Sequence[str] | Mapping[int, str]) -> None:
        self._keys = keys
        self._seen: dict[int, tuple[str, ...]] = {}

    def __call__(self, i: int) -> tuple[str, ...]:
        t = self._seen.get(i)
        if t is None:
            t = self._seen[i] = numeric_tokens(self._keys[i])
        return t


def _guard_ok(
    lo: I64Array,
    hi: I64Array,
    keys: Sequence[str] | Mapping[int, str],
    tokens: _Tokens,
    compiled: bool | None = None,
) -> BoolArray:
    """Whether the guard passes on each edge: equal fingerprints pass, the rest are checked exactly.

    Up to ``PYTHON_GUARD_EDGES`` edges (or when not ``compiled``) every edge is checked exactly (the
    fingerprints only skip that check where they are equal, and equal fingerprints imply equal
    tokens): no numba start-up. ``compiled=True`` takes the fingerprints at any size (numba is up)."""
    if (lo.size <= PYTHON_GUARD_EDGES) if compiled is None else not compiled:
        return np.fromiter(
            (tokens(a) == tokens(b) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)),
            dtype=np.bool_,
            count=lo.size,
        )
    seen = np.zeros(int(max(lo.max(), hi.max())) + 1, dtype=np.bool_)
    seen[lo] = True
    seen[hi] = True
    items = np.flatnonzero(seen)
    prints = np.zeros(seen.size, dtype=np.uint64)
    prints[items] = guard_fingerprints([keys[int(i)] for i in items])
    ok: BoolArray = prints[lo] == prints[hi]
    for e in np.flatnonzero(~ok):
        ok[e] = tokens(int(lo[e])) == tokens(int(hi[e]))
    return ok


def leader_cluster(
    order: I64Array,
    edges: I64Array,
    similarity: F64Array,
    keys: Sequence[str],
    guard: bool = True,
    linkage: str = "leader",
    *,
    compiled: bool | None = None,
) -> Clustering:
    """Leader clustering of ``len(order)`` items over verified edges (see the module docstring).

    ``order[i]`` is item ``i``'s rank (distinct values; lower visits first), ``edges`` an ``(m, 2)``
    array of item pairs in either direction with ``similarity[k]`` for edge ``k``, ``keys[i]`` the
    exact key the guard reads. Items without edges are leaders at no cost; the guard runs only on
    edges. ``linkage`` is ``"leader"`` (a member matches its leader) or ``"complete"`` (a member
    matches its leader and every earlier member of its cluster). ``compiled``: whether the guard
    compares compiled fingerprints first (``None``: above ``PYTHON_GUARD_EDGES`` edges; ``True`` where
    numba is loaded already, e.g. after a compiled signing pass): the same verdicts either way.

    Example:
        >>> keys = ["refunds within 30 days", "refunds within 30 days!", "refunds within 45 days"]
        >>> edges = np.array([[0, 1], [0, 2]])
        >>> c = leader_cluster(np.array([0, 1, 2]), edges, np.array([0.9, 0.9]), keys)
        >>> c.leader.tolist(), c.variants[0].differing
        ([0, 0, 2], ('-30', '+45'))
    """
    _check_linkage(linkage)
    n = np.asarray(order).size
    if len(keys) != n:
        raise ValueError(f"order has {n} items but keys has {len(keys)}: pass one key per item")
    rank = _ranks(order)
    lo, hi, sims, _ = _undirected(n, edges, similarity)
    tokens = _Tokens(keys)
    ok = _guard_ok(lo, hi, keys, tokens, compiled) if guard and lo.size else np.ones(lo.size, dtype=np.bool_)
    return _cluster(rank, lo, hi, sims, ok, tokens, linkage == "complete")


def _check_linkage(linkage: str) -> None:
    if linkage not in LINKAGES:
        raise ValueError(f"linkage must be one of {LINKAGES}, got {linkage!r}")


def _ranks(order: I64Array) -> I64Array:
    rank = np.asarray(order, dtype=np.int64).reshape(-1)
    ranked = np.sort(rank)
    if rank.size > 1 and bool((ranked[1:] == ranked[:-1]).any()):
        raise ValueError("order must give distinct ranks: break ties by (doc_id, page, start)")
    return rank


def guard_edges(
    edges: I64Array, keys: Sequence[str] | Mapping[int, str], *, compiled: bool | None = None
) -> tuple[BoolArray, dict[int, tuple[str, ...]]]:
    """The number/date guard on each edge, without clustering: ``(passed, tokens)``.

    ``passed[k]`` is whether ``guard_diff`` of edge ``k``'s two keys is empty; ``tokens`` holds the
    ``numeric_tokens`` of every item on a failed edge (what :func:`leader_cluster_checked` needs to
    explain variants). ``keys`` needs only the items named in ``edges``, so a caller verifying in
    blocks can guard each block with that block's keys and keep nothing else. ``compiled``: as for
    :func:`leader_cluster`.

    Example:
        >>> keys = {3: "pay in 30 days", 5: "pay in 30 days.", 8: "pay in 45 days"}
        >>> passed, tokens = guard_edges(np.array([[3, 5], [3, 8]]), keys)
        >>> passed.tolist(), tokens[8]
        ([True, False], ('45',))
    """
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if e.size == 0:
        return np.ones(0, dtype=np.bool_), {}
    tokens = _Tokens(keys)
    passed = _guard_ok(e[:, 0].copy(), e[:, 1].copy(), keys, tokens, compiled)
    failed = e[~passed]
    return passed, {int(i): tokens(int(i)) for i in np.unique(failed)}


def leader_cluster_checked(
    order: I64Array,
    edges: I64Array,
    similarity: F64Array,
    passed: BoolArray,
    tokens: Mapping[int, tuple[str, ...]],
    linkage: str = "leader",
    reasons: Mapping[tuple[int, int], tuple[str, tuple[str, ...]]] | None = None,
    *,
    compiled: bool | None = None,
) -> Clustering:
    """:func:`leader_cluster` with the guard already decided per edge (:func:`guard_edges`).

    Gives what ``leader_cluster(order, edges, similarity, keys, guard=True, linkage=linkage)`` gives,
    reading no keys:
    ``passed[k]`` is edge ``k``'s guard verdict and ``tokens`` the numeric tokens of every item on a
    failed edge. Use it when the keys of millions of items cannot be held at once. ``reasons``:
    ``(i, j)`` (``i < j``) -> (reason, words) for a failed edge some other guard decided (the meaning
    guard); its variant carries them instead of a token difference. ``compiled``: whether the walk is
    the compiled kernel (``None``: above ``PYTHON_WALK_SLOTS`` adjacency slots; ``False``: CPython,
    the same clusters).

    Example:
        >>> edges = np.array([[0, 1], [0, 2]])
        >>> c = leader_cluster_checked(
        ...     np.array([0, 1, 2]), edges, np.array([0.9, 0.9]), np.array([True, False]),
        ...     {0: ("30",), 2: ("45",)},
        ... )
        >>> c.leader.tolist(), c.variants[0].differing
        ([0, 0, 2], ('-30', '+45'))
    """
    _check_linkage(linkage)
    rank = _ranks(order)
    verdicts = np.asarray(passed, dtype=np.bool_).reshape(-1)
    if verdicts.size != np.asarray(edges).reshape(-1, 2).shape[0]:
        raise ValueError(f"{verdicts.size} verdicts for {np.asarray(edges).reshape(-1, 2).shape[0]} edges")
    lo, hi, sims, source = _undirected(rank.size, edges, similarity)
    return _cluster(
        rank, lo, hi, sims, verdicts[source], tokens.__getitem__, linkage == "complete", reasons, compiled
    )


def _cluster(
    rank: I64Array,
    lo: I64Array,
    hi: I64Array,
    sims: F64Array,
    ok: BoolArray,
    tokens: Callable[[int], tuple[str, ...]],
    complete: bool,
    reasons: Mapping[tuple[int, int], tuple[str, tuple[str, ...]]] | None = None,
    compiled: bool | None = None,
) -> Clustering:
    n = rank.size
    src = np.concatenate((lo, hi))
    by_src = np.argsort(src, kind="stable")
    nbr = np.concatenate((hi, lo))[by_src]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    visit = np.argsort(rank, kind="stable")
    visit = visit[indptr[visit + 1] > indptr[visit]]  # items without edges stay leaders
    adjacent_sims = np.concatenate((sims, sims))[by_src]
    # a small graph (an incremental run's components) walks in CPython: 20-35 ms at the bound
    small = nbr.size <= PYTHON_WALK_SLOTS if compiled is None else not compiled
    walk = python(_walk) if small else _walk
    adjacent_ok = np.concatenate((ok, ok))[by_src]
    leader, best, slots = walk(visit, rank, indptr, nbr, adjacent_sims, adjacent_ok, complete)
    members = visit[leader[visit] != visit]
    merges = tuple(Merge(int(i), int(leader[i]), float(best[i])) for i in members)
    variants = _variants(slots, src[by_src], nbr, adjacent_sims, rank, tokens, reasons or {})
    return Clustering(leader, best, merges, variants)


def _variants(
    slots: I64Array,
    src: I64Array,
    nbr: I64Array,
    sims: F64Array,
    rank: I64Array,
    tokens: Callable[[int], tuple[str, ...]],
    reasons: Mapping[tuple[int, int], tuple[str, tuple[str, ...]]],
) -> tuple[Variant, ...]:
    b, a = src[slots], nbr[slots]
    ordered = np.lexsort((rank[a], rank[b]))
    out = []
    for k in ordered.tolist():
        i, j = int(a[k]), int(b[k])
        why = reasons.get((min(i, j), max(i, j)))
        if why is None:
            out.append(Variant(i, j, float(sims[slots[k]]), token_diff(tokens(i), tokens(j))))
        else:
            out.append(Variant(i, j, float(sims[slots[k]]), why[1], why[0]))
    return tuple(out)
