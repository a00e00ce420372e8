"""The semantic tier: exact cosine neighbours, the leader rule with the number/date guard, calibration."""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup.dedup.lsh import leader_cluster
from chunkdedup.dedup.semantic import calibration, cluster, neighbour_pairs
from chunkdedup.embed import HashEmbedder

F32 = npt.NDArray[np.float32]


def _brute(query: set[int], v: F32, threshold: float) -> dict[tuple[int, int], float]:
    w = v.astype(np.float64)
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    d = np.round(np.clip(w @ w.T, -1.0, 1.0), 9)
    n = v.shape[0]
    return {
        (i, j): float(d[i, j])
        for i in range(n)
        for j in range(i + 1, n)
        if (i in query or j in query) and d[i, j] >= threshold
    }


@st.composite
def unit_vectors(draw: st.DrawFn) -> F32:
    n = draw(st.integers(0, 40))
    dim = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim))
    if n > 1:  # exact copies, so cosines of exactly 1.0 occur
        copies = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=5))
        for src, dst in copies:
            v[dst] = v[src]
    v[np.linalg.norm(v, axis=1) == 0] = 1.0
    unit: F32 = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return unit


@settings(max_examples=150, deadline=None)
@given(v=unit_vectors(), data=st.data())
def test_neighbour_pairs_equals_brute_force(v: F32, data: st.DataObject) -> None:
    n = v.shape[0]
    query = data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=n)) if n else []
    threshold = data.draw(st.sampled_from([-0.5, 0.0, 0.5, 0.9, 0.99, 1.0]))
    block = data.draw(st.integers(1, 16))
    pairs, cos = neighbour_pairs(np.array(query, dtype=np.int64), v, threshold, block=block)
    expected = _brute(set(query), v, threshold)
    got = {(int(i), int(j)): float(c) for (i, j), c in zip(pairs, cos, strict=True)}
    assert got.keys() == expected.keys()
    for key, c in got.items():
        assert c == pytest.approx(expected[key], abs=1e-9)
    assert pairs.dtype == np.int64 and cos.dtype == np.float64
    assert pairs.shape == (len(expected), 2)
    assert [tuple(p) for p in pairs.tolist()] == sorted(expected)  # sorted, i < j, no duplicates


@settings(max_examples=60, deadline=None)
@given(v=unit_vectors(), cut=st.integers(0, 40))
def test_incremental_queries_equal_fresh(v: F32, cut: int) -> None:
    """Pairs among old items plus the new items' pairs are exactly the pairs of a fresh run."""
    n = v.shape[0]
    cut = min(cut, n)
    fresh, _ = neighbour_pairs(np.arange(n), v, 0.5, block=7)
    old, _ = neighbour_pairs(np.arange(cut), v[:cut], 0.5, block=7)
    new, _ = neighbour_pairs(np.arange(cut, n), v, 0.5, block=7)
    assert {tuple(p) for p in fresh.tolist()} == {tuple(p) for p in old.tolist()} | {
        tuple(p) for p in new.tolist()
    }


def test_neighbour_pairs_at_model_dimension() -> None:
    """384-d rows with perturbed copies: the float32 screen loses nothing near the threshold."""
    rng = np.random.default_rng(7)
    v = rng.normal(size=(600, 384))
    v[1::3] = v[0::3] + rng.uniform(0.05, 1.5, size=(200, 1)) * rng.normal(size=(200, 384))
    v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    for threshold in (0.8, 0.9, 0.95, 0.99):
        pairs, _ = neighbour_pairs(np.arange(0, 600, 2), v, threshold, block=128)
        expected = _brute(set(range(0, 600, 2)), v, threshold)
        assert {(int(i), int(j)) for i, j in pairs} == set(expected)
        assert 0 < len(expected) < 200


def test_equal_vectors_reach_a_threshold_of_one() -> None:
    v = HashEmbedder(dim=384).embed_batch(["alpha beta gamma"] * 3 + ["delta"])
    pairs, cos = neighbour_pairs([0, 1, 2, 3], v, 1.0)
    assert pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert cos.tolist() == [1.0, 1.0, 1.0]


def test_neighbour_pairs_rejects_bad_input() -> None:
    v = np.eye(3, dtype=np.float32)
    with pytest.raises(ValueError, match="L2 norm 1"):
        neighbour_pairs([0], v * 2, 0.9)
    with pytest.raises(ValueError, match="outside"):
        neighbour_pairs([3], v, 0.9)
    with pytest.raises(ValueError, match="threshold"):
        neighbour_pairs([0], v, 1.5)
    with pytest.raises(ValueError, match="2-D"):
        neighbour_pairs([0], v[0], 0.9)


# ---------------------------------------------------------------------------------------------
# The merge decision: lsh.leader_cluster over cosine edges, with the number/date guard
# ---------------------------------------------------------------------------------------------

KEYS = [
    "refunds are accepted within 30 days of purchase.",
    "refunds are accepted within 45 days of purchase.",
    "Refunds are accepted, within 30 days of purchase!",
]


def _number_blind(texts: list[str]) -> F32:
    """A model that barely sees numbers (sentence embeddings move little when 30 becomes 45), taken
    to the limit: the hash embedder over the texts with every digit run masked."""
    return HashEmbedder(dim=64).embed_batch([re.sub(r"\d+", "#", t) for t in texts])


def test_guard_keeps_number_variants_apart_at_cosine_one() -> None:
    v = _number_blind(KEYS)
    pairs, cos = neighbour_pairs(np.arange(3), v, 0.95)
    assert pairs.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert cos.tolist() == [1.0, 1.0, 1.0]  # the vectors cannot tell "30 days" from "45 days"
    c = cluster(np.arange(3), v, KEYS, threshold=0.95)
    assert c.leader.tolist() == [0, 1, 0]  # 45 days stays its own canonical; the re-cased copy merges
    assert [(m.member, m.leader) for m in c.merges] == [(2, 0)]
    assert c.merges[0].similarity == pytest.approx(1.0)  # the similarity recorded is the cosine
    assert [(x.a, x.b, x.differing) for x in c.variants] == [(0, 1, ("-30", "+45")), (1, 2, ("+30", "-45"))]
    # cluster() is exactly leader_cluster over neighbour_pairs' edges
    same = leader_cluster(np.arange(3), pairs, cos, KEYS)
    assert same.leader.tolist() == c.leader.tolist() and same.variants == c.variants


def test_without_the_guard_the_vectors_alone_would_merge_them() -> None:
    c = cluster(np.arange(3), _number_blind(KEYS), KEYS, threshold=0.95, guard=False)
    assert c.leader.tolist() == [0, 0, 0]


def test_cluster_follows_rank_not_index() -> None:
    v = _number_blind(KEYS)
    c = cluster(np.array([2, 1, 0]), v, KEYS, threshold=0.95)  # item 2 visits first and leads
    assert c.leader.tolist() == [2, 1, 2]


# ---------------------------------------------------------------------------------------------
# Calibration
# ---------------------------------------------------------------------------------------------


def test_calibration_histograms_and_tails() -> None:
    merged = [0.99, 0.985, 0.97, 0.96, 1.0000001]  # float rounding above 1 is clipped into the top bin
    unmerged = [0.5, 0.91, 0.955, 0.96]
    c = calibration(merged, unmerged, bins=10, low=0.9)
    assert c.edges[0] == pytest.approx(0.9) and c.edges[-1] == 1.0 and c.edges.size == 11
    assert int(c.merged.sum()) == 5 and int(c.unmerged.sum()) == 3  # 0.5 lies below low
    assert c.merged_at_or_above[0] == 5 and c.unmerged_at_or_above[0] == 3
    assert np.all(np.diff(c.merged_at_or_above) <= 0)
    k95 = int(np.argmin(np.abs(c.edges - 0.95)))
    assert (int(c.merged_at_or_above[k95]), int(c.unmerged_at_or_above[k95])) == (5, 2)
    rows = c.rows()
    assert rows[0][1] == 1.0 and rows[-1][0] == pytest.approx(0.9) and len(rows) == 10
    assert sum(r[2] for r in rows) == 5


def test_calibration_default_low_and_empty() -> None:
    c = calibration([0.97], [0.83], bins=4)
    assert c.edges[0] == pytest.approx(0.8)
    empty = calibration([], [], bins=2)
    assert empty.edges.tolist() == [0.0, 0.5, 1.0] and empty.merged.tolist() == [0, 0]
    with pytest.raises(ValueError, match="bins"):
        calibration([], [], bins=0)
