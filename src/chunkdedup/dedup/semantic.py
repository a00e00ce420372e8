"""The semantic tier: cosine neighbours of embedded items, clustered by the near tier's leader rule.

Pure functions over arrays; the embedder (:mod:`chunkdedup.embed`) and the store live elsewhere.

1. :func:`neighbour_pairs`: every pair (query item, any item) whose cosine reaches the threshold,
   exact, by blocked matrix products: a block of query rows against a block of all rows at a time,
   so memory stays at ``block * block`` float32 (64 MB at the default 4096) whatever ``n`` is.
   Incremental runs pass only the new items as queries; a fresh run passes all of them and the
   blocks below the diagonal are skipped.
2. The merge decision is :func:`chunkdedup.dedup.lsh.leader_cluster` over these edges, with the
   cosines as similarities and the same number/date guard: two texts that differ in a number, an
   amount or a date are versions however close their vectors are (a sentence embedding barely moves
   when "30 days" becomes "45 days"), and become a ``Variant``, not a merge. :func:`cluster` does
   both steps for a fresh run; an incremental run feeds the edges of the touched components to
   ``leader_cluster`` itself, exactly as the near tier does.
3. :func:`calibration`: histograms of the cosines of pairs an audit judged duplicates and of pairs
   it judged distinct, with the share of each at or above every bin edge, to choose a threshold.

**The threshold is model-specific.** A cosine of 0.95 means "nearly the same text" for
all-MiniLM-L6-v2 (a close paraphrase of one sentence scores ~0.9-0.95, an unrelated text ~0 to 0.3), but
other models spread their cosines differently. Calibrate by auditing a sample: merged pairs (true
duplicates) and unmerged candidate pairs around the threshold, then pick the lowest edge where the
unmerged share above it is acceptably small.

**Why exact blocked numpy and not an ANN index (usearch).** The search is exact, so incremental
equals fresh and two runs agree, and it is cheap next to embedding. Measured here on 2 busy cores:
50,000 384-d vectors against each other take 17 s (365 MB peak RSS), 1,000 new ones against 50,000
take 0.9 s, while embedding those 50,000 chunks with all-MiniLM-L6-v2 takes 1.5-2.5 hours (6-20
chunks/s). The search grows with n^2 and stays a few percent of the embedding time up to ~1M
chunks; an approximate index would trade recall and determinism for time this tier does not spend.

Example:
    >>> import numpy as np
    >>> v = np.array([[1, 0], [0.99, 0.141], [0, 1]], dtype=np.float32)
    >>> v /= np.linalg.norm(v, axis=1, keepdims=True)
    >>> pairs, cos = neighbour_pairs(np.arange(3), v, 0.95)
    >>> pairs.tolist(), cos.round(3).tolist()
    ([[0, 1]], [0.99])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from chunkdedup.dedup.lsh import Clustering, leader_cluster

__all__ = ["Calibration", "calibration", "cluster", "neighbour_pairs"]

I64Array = npt.NDArray[np.int64]
F64Array = npt.NDArray[np.float64]
F32Array = npt.NDArray[np.float32]

_NORM_TOLERANCE = 1e-3
# float32 products of unit vectors are off by a few ulps: screen with this slack, then decide on the
# float64 cosine, so a pair of equal vectors passes a threshold of exactly 1.0.
_SCREEN_SLACK = 1e-4
_DECIMALS = 9


def _unit_rows(vectors: npt.ArrayLike) -> F32Array:
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError(f"vectors must be a 2-D (n, dim) array, got shape {v.shape}")
    if v.shape[0]:
        norms = np.linalg.norm(v, axis=1)
        bad = np.flatnonzero(np.abs(norms - 1.0) > _NORM_TOLERANCE)
        if bad.size:
            raise ValueError(
                f"vectors must have L2 norm 1 (an Embedder's contract); row {int(bad[0])} has norm "
                f"{float(norms[bad[0]]):.4f}: divide each row by its norm"
            )
    return v


def _cosines(v: F32Array, i: I64Array, j: I64Array) -> F64Array:
    """float64 cosines of row pairs, rounded to 9 decimals: float32 rows carry ~7 significant digits,
    and the rounding makes the cosine of two equal rows exactly 1.0."""
    a, b = v[i].astype(np.float64), v[j].astype(np.float64)
    dots = np.einsum("kd,kd->k", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    cos: F64Array = np.round(np.clip(dots, -1.0, 1.0), _DECIMALS)
    return cos


def neighbour_pairs(
    query_ids: npt.ArrayLike, vectors_all: npt.ArrayLike, threshold: float, block: int = 4096
) -> tuple[I64Array, F64Array]:
    """Every pair ``(i, j)``, ``i < j``, of a query item and any other item with cosine >= ``threshold``.

    ``vectors_all`` is ``(n, dim)`` with unit rows; ``query_ids`` are indices into it (duplicates
    ignored). A pair of two query items is returned once. Returns ``pairs`` ``(m, 2)`` int64 sorted
    by ``(i, j)`` and their cosines: float64, computed from the float32 rows, rounded to 9 decimals
    (so equal rows have cosine exactly 1.0 and a threshold of 1.0 finds exact copies).

    Example:
        >>> v = np.eye(3, dtype=np.float32)[[0, 0, 1, 2]]    # items 0 and 1 are equal
        >>> neighbour_pairs([3], v, 0.9)[0].tolist(), neighbour_pairs([1], v, 0.9)[0].tolist()
        ([], [[0, 1]])
    """
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [-1, 1] (a cosine), got {threshold}")
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    v = _unit_rows(vectors_all)
    n = v.shape[0]
    q = np.unique(np.asarray(query_ids, dtype=np.int64).reshape(-1))
    if q.size and (q[0] < 0 or q[-1] >= n):
        raise ValueError(f"query_ids name items outside [0, {n}): pass row indices of vectors_all")
    is_query = np.zeros(n, dtype=np.bool_)
    is_query[q] = True
    # A column block made only of query items that all precede the query block gives no pair this
    # block keeps (the pair was found from the other side): prefix sums tell which blocks to skip.
    query_before = np.concatenate(([0], np.cumsum(is_query)))
    found_i: list[I64Array] = []
    found_j: list[I64Array] = []
    screen = np.float32(threshold - _SCREEN_SLACK)
    for qlo in range(0, q.size, block):
        rows = q[qlo : qlo + block]
        left = v[rows]
        for clo in range(0, n, block):
            chi = min(clo + block, n)
            if chi <= rows[0] and query_before[chi] - query_before[clo] == chi - clo:
                continue
            a, b = np.nonzero(left @ v[clo:chi].T >= screen)
            i, j = rows[a], b.astype(np.int64) + clo
            keep = (i != j) & ~(is_query[j] & (j < i))
            found_i.append(i[keep])
            found_j.append(j[keep])
    if not found_i:
        return np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.float64)
    i, j = np.concatenate(found_i), np.concatenate(found_j)
    cos = _cosines(v, i, j)
    keep = cos >= threshold
    lo, hi, cos = np.minimum(i, j)[keep], np.maximum(i, j)[keep], cos[keep]
    order = np.lexsort((hi, lo))
    return np.stack((lo[order], hi[order]), axis=1), cos[order]


def cluster(
    order: npt.ArrayLike, vectors: npt.ArrayLike, keys: Sequence[str], threshold: float, guard: bool = True
) -> Clustering:
    """Fresh semantic clustering: :func:`neighbour_pairs` over all items, then the leader rule with the
    number/date guard (:func:`chunkdedup.dedup.lsh.leader_cluster`). ``Merge.similarity`` and
    ``Variant.similarity`` are cosines.

    Example:
        >>> keys = ["refunds within 30 days", "refunds within 45 days", "refunds within 30 days"]
        >>> v = np.ones((3, 4), dtype=np.float32) / 2           # one vector for all three
        >>> c = cluster(np.arange(3), v, keys, 0.95)
        >>> c.leader.tolist(), c.variants[0].differing
        ([0, 1, 0], ('-30', '+45'))
    """
    rank = np.asarray(order, dtype=np.int64).reshape(-1)
    pairs, cos = neighbour_pairs(np.arange(rank.size), vectors, threshold)
    return leader_cluster(rank, pairs, cos, keys, guard=guard)


@dataclass(frozen=True, slots=True)
class Calibration:
    """Histogram data for choosing a cosine threshold.

    ``edges`` has ``bins + 1`` ascending values; ``merged[k]``/``unmerged[k]`` count the cosines of
    each kind in ``[edges[k], edges[k+1])`` (the last bin includes 1.0). ``merged_at_or_above[k]`` and
    ``unmerged_at_or_above[k]`` count those ``>= edges[k]``: at threshold ``edges[k]`` the first is the
    duplicates kept merged, the second the distinct pairs that would be merged by mistake.
    """

    edges: F64Array
    merged: I64Array
    unmerged: I64Array
    merged_at_or_above: I64Array
    unmerged_at_or_above: I64Array

    def rows(self) -> list[tuple[float, float, int, int]]:
        """``(low, high, merged, unmerged)`` per bin, highest cosines first (for a printed table)."""
        return [
            (float(self.edges[k]), float(self.edges[k + 1]), int(self.merged[k]), int(self.unmerged[k]))
            for k in range(self.merged.size - 1, -1, -1)
        ]


def calibration(
    cosines_merged: npt.ArrayLike, cosines_unmerged: npt.ArrayLike, bins: int = 20, low: float | None = None
) -> Calibration:
    """Histograms of the cosines of pairs judged duplicates (``merged``) and judged distinct.

    The bins split ``[low, 1]`` evenly; ``low`` defaults to the smallest cosine given, floored to a
    multiple of 0.05 (0.0 when nothing is given). Cosines are clipped to ``[-1, 1]`` (float rounding);
    values below ``low`` are counted in neither histogram.

    Example:
        >>> c = calibration([0.99, 0.97, 0.96], [0.91, 0.955], bins=2, low=0.9)
        >>> c.edges.tolist(), c.merged.tolist(), c.unmerged.tolist()
        ([0.9, 0.95, 1.0], [0, 3], [1, 1])
        >>> c.unmerged_at_or_above.tolist()
        [2, 1]
    """
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    merged = np.clip(np.asarray(cosines_merged, dtype=np.float64).reshape(-1), -1.0, 1.0)
    unmerged = np.clip(np.asarray(cosines_unmerged, dtype=np.float64).reshape(-1), -1.0, 1.0)
    if low is None:
        both = np.concatenate((merged, unmerged))
        low = float(np.floor(both.min() * 20.0) / 20.0) if both.size else 0.0
    if not -1.0 <= low < 1.0:
        raise ValueError(f"low must be in [-1, 1), got {low}")
    edges = np.linspace(low, 1.0, bins + 1)
    m_hist = np.histogram(merged, bins=edges)[0].astype(np.int64)
    u_hist = np.histogram(unmerged, bins=edges)[0].astype(np.int64)
    return Calibration(
        edges=edges,
        merged=m_hist,
        unmerged=u_hist,
        merged_at_or_above=np.cumsum(m_hist[::-1])[::-1].astype(np.int64),
        unmerged_at_or_above=np.cumsum(u_hist[::-1])[::-1].astype(np.int64),
    )
