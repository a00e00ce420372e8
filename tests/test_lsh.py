"""Banding, candidates, verification and leader clustering, on synthetic arrays and real paragraphs."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup.config import NearConfig
from chunkdedup.dedup.guard import guard_diff
from chunkdedup.dedup.lsh import (
    LINKAGES,
    Clustering,
    band_keys,
    bucket_pairs,
    candidate_pairs,
    components,
    guard_edges,
    leader_cluster,
    leader_cluster_checked,
    verified_edges,
    verified_edges_flat,
)
from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.normalize import exact_key

POLICY = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "site-policy" / "current"


# --- banding and candidates ------------------------------------------------------------------


def test_identical_signatures_are_always_candidates() -> None:
    rng = np.random.default_rng(1)
    sigs = rng.integers(0, 2**32, size=(50, 128), dtype=np.uint32)
    sigs[37] = sigs[3]
    sigs[49] = sigs[3]
    keys = band_keys(sigs, 16, 8)
    assert keys.shape == (50, 16) and keys.dtype == np.uint64
    assert (keys[3] == keys[37]).all()
    assert candidate_pairs(keys).tolist() == [[3, 37], [3, 49], [37, 49]]


def test_band_index_is_in_the_key() -> None:
    sig = np.zeros((1, 128), dtype=np.uint32)  # every band holds the same values
    keys = band_keys(sig, 16, 8)
    assert len(set(keys[0].tolist())) == 16
    assert (keys[0] >> np.uint64(56)).tolist() == list(range(16))


def test_unrelated_signatures_are_rarely_candidates() -> None:
    rng = np.random.default_rng(2)
    sigs = rng.integers(0, 2**32, size=(5000, 128), dtype=np.uint32)
    assert len(candidate_pairs(band_keys(sigs, 16, 8))) == 0


def test_one_shared_band_is_enough_and_pairs_are_unique_and_ordered() -> None:
    rng = np.random.default_rng(3)
    sigs = rng.integers(0, 2**32, size=(6, 128), dtype=np.uint32)
    sigs[5, 8:16] = sigs[0, 8:16]  # band 1 only
    sigs[4, :] = sigs[2, :]  # every band: still one pair
    pairs = candidate_pairs(band_keys(sigs, 16, 8))
    assert pairs.dtype == np.int64
    assert pairs.tolist() == [[0, 5], [2, 4]]


def test_a_giant_bucket_becomes_a_star_from_its_first_member() -> None:
    keys = np.zeros((8, 1), dtype=np.uint64)
    keys[[1, 3, 4, 6, 7], 0] = 5
    assert len(candidate_pairs(keys, max_bucket=5)) == 3 * 2 // 2 + 5 * 4 // 2
    star = candidate_pairs(keys, max_bucket=4)
    assert star.tolist() == [[0, 2], [0, 5], [1, 3], [1, 4], [1, 6], [1, 7], [2, 5]]


def test_band_keys_checks_its_shape() -> None:
    with pytest.raises(ValueError, match="exceeds the signature length"):
        band_keys(np.zeros((2, 64), dtype=np.uint32), 16, 8)


@settings(max_examples=100, deadline=None)
@given(
    keys=st.lists(st.lists(st.integers(0, 5), min_size=3, max_size=3), min_size=1, max_size=40),
    rnd=st.randoms(use_true_random=False),
)
def test_bucket_pairs_over_band_rows_equal_candidate_pairs(keys: list[list[int]], rnd: random.Random) -> None:
    """The (band key, item) rows the store and the Ray shuffle hold give the pairs of the (n, bands)
    array, in any row order and split into any hash partitions by key."""
    matrix = np.array(keys, dtype=np.uint64) + (np.arange(3, dtype=np.uint64) << np.uint64(56))
    expected = candidate_pairs(matrix, max_bucket=len(keys) + 1)
    rows = [(int(k), i) for i, row in enumerate(matrix.tolist()) for k in row]
    rnd.shuffle(rows)
    assert bucket_pairs([k for k, _ in rows], [i for _, i in rows]).tolist() == expected.tolist()
    parts = [[r for r in rows if hash(r[0]) % 3 == p] for p in range(3)]
    found = [bucket_pairs([k for k, _ in part], [i for _, i in part]) for part in parts if part]
    union = np.unique(np.concatenate(found), axis=0) if found else np.empty((0, 2), np.int64)
    assert union.reshape(-1, 2).tolist() == expected.tolist()


def test_bucket_pairs_checks_its_rows() -> None:
    assert bucket_pairs([], []).shape == (0, 2)
    assert bucket_pairs([1, 1, 1], [4, 4, 2]).tolist() == [[2, 4]]  # a repeated row is no pair
    with pytest.raises(ValueError, match="one value per row"):
        bucket_pairs([1, 2], [0])
    with pytest.raises(ValueError, match="number the items"):
        bucket_pairs([1, 1], [-1, 0])


def test_verified_edges_match_exact_jaccard() -> None:
    hasher = MinHasher()
    texts = [
        "one two three four five six seven eight nine ten",
        "one two three four five six seven eight nine eleven",
        "one two three four five six seven eight nine ten",
        "alpha beta gamma delta epsilon",
    ]
    sh = [hasher.shingles(t) for t in texts]
    pairs = np.array([[0, 1], [0, 2], [0, 3], [1, 2]])
    edges, sims = verified_edges(pairs, sh, 0.5)
    expected = [(i, j, jaccard(sh[i], sh[j])) for i, j in pairs.tolist() if jaccard(sh[i], sh[j]) >= 0.5]
    assert [(int(a), int(b), float(s)) for (a, b), s in zip(edges, sims, strict=True)] == expected
    assert len(expected) == 3


# --- leader clustering -----------------------------------------------------------------------


def test_a_chain_does_not_close() -> None:
    edges = np.array([[0, 1], [1, 2]])
    c = leader_cluster(np.array([0, 1, 2]), edges, np.array([0.9, 0.95]), ["a", "b", "c"])
    assert c.leader.tolist() == [0, 0, 2]
    assert c.similarity.tolist() == [1.0, 0.9, 1.0]
    assert [(m.member, m.leader) for m in c.merges] == [(1, 0)]


def test_the_best_passing_leader_wins_and_failing_ones_are_variants() -> None:
    keys = ["fee 30", "fee 30 x", "fee 45", "fee 30 y"]
    # 3 is near 0 (0.9), 1 (member, not a leader) and 2 (0.97, guard fails)
    edges = np.array([[0, 1], [3, 0], [3, 1], [2, 3]])
    c = leader_cluster(np.array([0, 1, 2, 3]), edges, np.array([0.99, 0.9, 0.99, 0.97]), keys)
    assert c.leader.tolist() == [0, 0, 2, 0]
    assert [(v.a, v.b, v.differing) for v in c.variants] == [(2, 3, ("+30", "-45"))]
    off = leader_cluster(np.array([0, 1, 2, 3]), edges, np.array([0.99, 0.9, 0.99, 0.97]), keys, guard=False)
    assert off.leader.tolist() == [0, 0, 2, 2]
    assert off.variants == ()


def test_ties_go_to_the_earlier_rank() -> None:
    edges = np.array([[2, 0], [2, 1]])
    c = leader_cluster(np.array([5, 3, 9]), edges, np.array([0.9, 0.9]), ["a", "b", "c"])
    assert c.leader.tolist() == [0, 1, 1]


def test_order_must_be_distinct() -> None:
    with pytest.raises(ValueError, match="distinct ranks"):
        leader_cluster(np.array([0, 0]), np.empty((0, 2), np.int64), np.empty(0), ["a", "b"])


_KEYS = ["fee 30", "fee 30 days", "fee 45", "fee", "march 1, 2024", "march 1, 2025"]


@st.composite
def graphs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    n = draw(st.integers(1, 14))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30))
    edges = np.array([p for p in pairs if p[0] != p[1]], dtype=np.int64).reshape(-1, 2)
    _, first = np.unique(np.sort(edges, axis=1), axis=0, return_index=True)
    edges = edges[np.sort(first)]
    sims = np.array(
        draw(st.lists(st.sampled_from([0.86, 0.9, 0.95]), min_size=len(edges), max_size=len(edges)))
    )
    order = np.array(draw(st.permutations(range(n))), dtype=np.int64) * 7 + 3
    keys = [draw(st.sampled_from(_KEYS)) for _ in range(n)]
    return order, edges, sims.astype(np.float64), keys


def _canonical(c: Clustering, label: list[int]) -> tuple[object, ...]:
    """A clustering in item labels (label[i] names item i), to compare across relabellings."""
    return (
        sorted((label[i], label[int(c.leader[i])], float(c.similarity[i])) for i in range(len(label))),
        [(label[m.member], label[m.leader], m.similarity) for m in c.merges],
        [(label[v.a], label[v.b], v.similarity, v.differing) for v in c.variants],
    )


@pytest.mark.parametrize("linkage", LINKAGES)
@settings(max_examples=200, deadline=None)
@given(g=graphs(), rnd=st.randoms(use_true_random=False))
def test_clustering_is_free_of_item_order(
    linkage: str, g: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]], rnd: random.Random
) -> None:
    order, edges, sims, keys = g
    n = len(keys)
    perm = list(range(n))
    rnd.shuffle(perm)  # item i becomes item perm[i]
    inv = np.argsort(perm)
    shuffled = leader_cluster(
        order[inv],
        np.array(perm, dtype=np.int64)[edges] if len(edges) else edges,
        sims,
        [keys[int(i)] for i in inv],
        linkage=linkage,
    )
    base = leader_cluster(order, edges, sims, keys, linkage=linkage)
    # Name each item by its rank, which travels with it.
    assert _canonical(base, order.tolist()) == _canonical(shuffled, order[inv].tolist())


@pytest.mark.parametrize("linkage", LINKAGES)
@settings(max_examples=200, deadline=None)
@given(g=graphs())
def test_components_cluster_alone_as_together(
    linkage: str, g: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]
) -> None:
    order, edges, sims, keys = g
    whole = leader_cluster(order, edges, sims, keys, linkage=linkage)
    labels = components(len(keys), edges)
    for label in np.unique(labels):
        items = np.flatnonzero(labels == label)
        local = np.full(len(keys), -1)
        local[items] = np.arange(items.size)
        inside = np.isin(edges[:, 0], items) if len(edges) else np.zeros(0, bool)
        part = leader_cluster(
            order[items], local[edges[inside]], sims[inside], [keys[i] for i in items], linkage=linkage
        )
        assert items[part.leader].tolist() == whole.leader[items].tolist()
        assert part.similarity.tolist() == whole.similarity[items].tolist()
        assert [(int(items[v.a]), int(items[v.b]), v.differing) for v in part.variants] == [
            (v.a, v.b, v.differing) for v in whole.variants if labels[v.a] == label
        ]


def _reference(
    order: np.ndarray, edges: np.ndarray, sims: np.ndarray, keys: list[str], linkage: str
) -> tuple[list[int], list[float], list[tuple[int, int]]]:
    """Both rules written out plainly, one item at a time: (leader, similarity, variant pairs)."""
    n = len(keys)
    sim = {}
    for (a, b), s in zip(edges.tolist(), sims.tolist(), strict=True):
        sim[(a, b)] = sim[(b, a)] = s
    passes = {p: not guard_diff(keys[p[0]], keys[p[1]]) for p in sim}
    leader, best = list(range(n)), [1.0] * n
    variants = []
    for i in sorted(range(n), key=lambda x: order[x]):
        options = []
        for j in sorted((j for j in range(n) if (i, j) in sim), key=lambda x: order[x]):
            if order[j] > order[i] or leader[j] != j:
                continue
            if not passes[(i, j)]:
                variants.append((j, i))
                continue
            cluster = [m for m in range(n) if leader[m] == j]
            if linkage == "complete" and not all(passes.get((i, m), False) for m in cluster):
                continue
            options.append((-sim[(i, j)], order[j], j))
        if options:
            _, _, leader[i] = min(options)
            best[i] = sim[(i, leader[i])]
    variants.sort(key=lambda v: (order[v[1]], order[v[0]]))
    return leader, best, variants


@pytest.mark.parametrize("linkage", LINKAGES)
@settings(max_examples=300, deadline=None)
@given(g=graphs())
def test_the_kernel_follows_the_rule_as_written(
    linkage: str, g: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]
) -> None:
    order, edges, sims, keys = g
    c = leader_cluster(order, edges, sims, keys, linkage=linkage)
    leader, best, variants = _reference(order, edges, sims, keys, linkage)
    assert c.leader.tolist() == leader
    assert c.similarity.tolist() == best
    assert [(v.a, v.b) for v in c.variants] == variants


@pytest.mark.parametrize("linkage", LINKAGES)
@settings(max_examples=300, deadline=None)
@given(g=graphs())
def test_every_member_matches_its_leader_and_complete_linkage_every_other_member(
    linkage: str, g: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]
) -> None:
    order, edges, sims, keys = g
    c = leader_cluster(order, edges, sims, keys, linkage=linkage)
    edge = {frozenset(p): s for p, s in zip(edges.tolist(), sims.tolist(), strict=True)}
    verified = {p for p in edge if not guard_diff(*(keys[i] for i in p))}
    n = len(keys)
    for i in range(n):
        if c.leader[i] != i:
            pair = frozenset((i, int(c.leader[i])))
            assert pair in verified and edge[pair] == c.similarity[i]
            assert order[c.leader[i]] < order[i] and c.leader[c.leader[i]] == c.leader[i]
    same = [(i, j) for i in range(n) for j in range(i + 1, n) if c.leader[i] == c.leader[j]]
    if linkage == "complete":
        assert all(frozenset(p) in verified for p in same)
        assert all(not guard_diff(keys[i], keys[j]) for i, j in same)


def test_complete_linkage_keeps_two_far_members_apart() -> None:
    # 1 and 2 both match leader 0, not each other; 3 matches 0, 1 and 2 but ranks after them.
    edges = np.array([[0, 1], [0, 2], [0, 3], [1, 3], [2, 3]])
    sims = np.array([0.9, 0.95, 0.88, 0.9, 0.86])
    keys = ["a", "b", "c", "d"]
    assert leader_cluster(np.arange(4), edges, sims, keys).leader.tolist() == [0, 0, 0, 0]
    c = leader_cluster(np.arange(4), edges, sims, keys, linkage="complete")
    assert c.leader.tolist() == [0, 0, 2, 0]  # 2 misses member 1; 3 prefers 0 (0.88) to 2 (0.86)
    assert [(m.member, m.leader, m.similarity) for m in c.merges] == [(1, 0, 0.9), (3, 0, 0.88)]
    with pytest.raises(ValueError, match="linkage"):
        leader_cluster(np.arange(4), edges, sims, keys, linkage="single")
    with pytest.raises(ValueError, match="linkage"):
        leader_cluster_checked(np.arange(4), edges, sims, np.ones(5, bool), {}, linkage="average")


def test_complete_linkage_picks_the_best_leader_that_qualifies() -> None:
    # Leader 0 (0.97 to 3) has member 1 that 3 misses; leader 2 (0.9 to 3) qualifies.
    edges = np.array([[0, 1], [0, 3], [2, 3]])
    sims = np.array([0.9, 0.97, 0.9])
    c = leader_cluster(np.arange(4), edges, sims, ["a", "b", "c", "d"], linkage="complete")
    assert c.leader.tolist() == [0, 0, 2, 2]
    assert c.similarity.tolist() == [1.0, 0.9, 1.0, 0.9]


def test_components_label_by_smallest_member() -> None:
    assert components(6, np.array([[5, 2], [2, 4], [0, 1]])).tolist() == [0, 0, 2, 3, 2, 2]
    assert components(3, np.empty((0, 2), np.int64)).tolist() == [0, 1, 2]


# --- recall and precision on real paragraphs -------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.,$])\d+(?![\w.,%]|\s*%)")


def _passages(min_words: int = 90, max_words: int = 220) -> list[str]:
    """Runs of consecutive real paragraphs, read in place, joined to chunk size."""
    files = sorted(POLICY.glob("**/*.md"))
    if not files:
        pytest.fail(f"real corpus missing at {POLICY}: the repo must sit beside shared/ (see README)")
    out: list[str] = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        text = text.split("---", 2)[-1] if text.startswith("---") else text
        run: list[str] = []
        for para in re.split(r"\n\s*\n", text):
            run.append(para)
            words = sum(len(p.split()) for p in run)
            if words >= min_words:
                if words <= max_words:
                    out.append("\n\n".join(run))
                run = []
    return out


def _edit(text: str, rnd: random.Random, vocabulary: list[str], edits: int) -> str:
    words = text.split(" ")
    letters = [i for i, w in enumerate(words) if w.isalpha() and len(w) > 2]
    for i in rnd.sample(letters, min(edits, len(letters))):
        words[i] = rnd.choice(vocabulary)
    out = " ".join(words)
    out = re.sub(r" ", lambda _: "\n" if rnd.random() < 0.1 else " ", out)  # re-wrap
    return out.upper() if rnd.random() < 0.3 else out  # re-case


@pytest.mark.parametrize("linkage", LINKAGES)
def test_recall_precision_and_no_version_merges_on_real_paragraphs(linkage: str) -> None:
    cfg = NearConfig()
    rnd = random.Random(7)
    passages = _passages()
    base_keys = sorted({exact_key(p) for p in passages})
    vocabulary = sorted({w for k in base_keys for w in k.split() if w.isalpha() and len(w) > 3})
    assert len(base_keys) >= 150
    texts = list(base_keys)
    kind = ["base"] * len(texts)
    parent = list(range(len(texts)))
    for b, key in enumerate(base_keys):
        for _ in range(2):  # two edited copies per passage
            texts.append(_edit(key, rnd, vocabulary, rnd.randint(1, 3)))
            kind.append("copy")
            parent.append(b)
        if _NUMBER.search(key):  # a version: one number changed, nothing else
            texts.append(_NUMBER.sub(lambda m: str(int(m.group()) + 1), key, count=1))
            kind.append("version")
            parent.append(b)
    keys = [exact_key(t) for t in texts]
    n = len(keys)
    hasher = MinHasher.from_config(cfg)
    shingles = [hasher.shingles(k) for k in keys]

    # Brute-force truth over every pair.
    true_pairs = set()
    similar = {}
    for i in range(n):
        for j in range(i + 1, n):
            s = jaccard(shingles[i], shingles[j])
            if s >= cfg.threshold:
                similar[(i, j)] = s
                if not guard_diff(keys[i], keys[j]):
                    true_pairs.add((i, j))
    versions = [(parent[v], v) for v in range(n) if kind[v] == "version" and (parent[v], v) in similar]
    assert len(true_pairs) >= 200
    assert len(versions) >= 20

    pairs = candidate_pairs(band_keys(hasher.signatures(keys), cfg.bands, cfg.rows))
    edges, sims = verified_edges(pairs, shingles, cfg.threshold)
    order = np.arange(n)  # passages first, then their copies: the "smallest (doc, page, start)"
    c = leader_cluster(order, edges, sims, keys, guard=cfg.guard, linkage=linkage)

    found = sum(c.leader[i] == c.leader[j] for i, j in true_pairs)
    recall = found / len(true_pairs)
    correct = sum((min(m.member, m.leader), max(m.member, m.leader)) in true_pairs for m in c.merges)
    precision = correct / len(c.merges)
    same = [(i, j) for i in range(n) for j in range(i + 1, n) if c.leader[i] == c.leader[j]]
    pairwise = sum(p in true_pairs for p in same) / len(same)
    print(
        f"{linkage}: items {n}, true pairs {len(true_pairs)}, recall {recall:.4f}, merge precision"
        f" {precision:.4f}, pairwise precision {pairwise:.4f} over {len(same)}"
    )
    assert precision >= 0.99
    if linkage == "leader":
        assert recall >= 0.95
    else:
        # Two edited copies of one passage are often both within 0.85 of it but not of each other:
        # every same-cluster pair then cannot be a true pair without losing one. Complete linkage
        # must be exact and come close to the best any such partition can do.
        assert pairwise == 1.0
        best = _best_exact_partition(n, true_pairs)
        print(f"best exact partition: recall {best / len(true_pairs):.4f}")
        assert found >= 0.97 * best
    version_items = {v for _, v in versions}
    assert not [
        m for m in c.merges if m.member in version_items or guard_diff(keys[m.member], keys[m.leader])
    ]
    recorded = {(v.a, v.b) for v in c.variants}
    leaders_with_versions = [(b, v) for b, v in versions if c.leader[b] == b]
    assert all((b, v) in recorded for b, v in leaders_with_versions)
    assert all(v.differing for v in c.variants)


def _best_exact_partition(n: int, true_pairs: set[tuple[int, int]]) -> int:
    """The most true pairs a partition can hold with every same-cluster pair true (per component,
    by branch and bound: each item joins a clique it fully matches or starts one)."""
    labels = components(n, np.array(sorted(true_pairs), dtype=np.int64).reshape(-1, 2))
    return sum(_best_cliques(np.flatnonzero(labels == x).tolist(), true_pairs) for x in np.unique(labels))


def _best_cliques(nodes: list[int], true_pairs: set[tuple[int, int]]) -> int:
    best = 0

    def grow(k: int, groups: list[list[int]], held: int) -> None:
        nonlocal best
        rest = len(nodes) - k
        if held + rest * (len(nodes) - 1) <= best:
            return
        if rest == 0:
            best = held
            return
        x = nodes[k]
        for g in groups:
            if all((min(x, y), max(x, y)) in true_pairs for y in g):
                g.append(x)
                grow(k + 1, groups, held + len(g) - 1)
                g.pop()
        groups.append([x])
        grow(k + 1, groups, held)
        groups.pop()

    grow(0, [], 0)
    return best


# --- the flat, keyless paths (what the streamed benchmark uses) ----------------------------------


@pytest.mark.parametrize("linkage", LINKAGES)
@settings(max_examples=200, deadline=None)
@given(g=graphs())
def test_leader_cluster_checked_equals_leader_cluster(
    linkage: str, g: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]
) -> None:
    order, edges, sims, keys = g
    # Both directions and a repeat of each edge: the verdicts must follow their edges.
    doubled = np.concatenate((edges, edges[:, ::-1])) if len(edges) else edges
    doubled_sims = np.concatenate((sims, sims))
    passed, tokens = guard_edges(doubled, keys)
    assert passed.tolist() == [not guard_diff(keys[a], keys[b]) for a, b in doubled.tolist()]
    checked = leader_cluster_checked(order, doubled, doubled_sims, passed, tokens, linkage=linkage)
    assert _canonical(checked, list(range(len(keys)))) == _canonical(
        leader_cluster(order, edges, sims, keys, linkage=linkage), list(range(len(keys)))
    )


def test_guard_edges_reads_only_the_keys_it_needs() -> None:
    keys = {10: "pay within 30 days", 11: "pay within 30 days now", 12: "pay within 45 days"}
    passed, tokens = guard_edges(np.array([[10, 11], [12, 10]]), keys)
    assert passed.tolist() == [True, False]
    assert tokens == {10: ("30",), 12: ("45",)}
    empty, none = guard_edges(np.empty((0, 2), np.int64), keys)
    assert empty.size == 0 and none == {}


def test_leader_cluster_checked_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="verdicts"):
        leader_cluster_checked(np.array([0, 1]), np.array([[0, 1]]), np.array([0.9]), np.ones(2, bool), {})
    with pytest.raises(ValueError, match="distinct ranks"):
        leader_cluster_checked(
            np.array([0, 0]), np.empty((0, 2), np.int64), np.empty(0), np.ones(0, bool), {}
        )


def test_verified_edges_flat_equals_verified_edges() -> None:
    mh = MinHasher(shingle_words=2)
    rng = random.Random(5)
    keys = [" ".join(rng.choice("abcdef") for _ in range(rng.randrange(0, 12))) for _ in range(60)]
    pairs = np.array([(i, j) for i in range(60) for j in range(i + 1, 60)], dtype=np.int64)
    want = verified_edges(pairs, [mh.shingles(k) for k in keys], 0.3)
    # Only some items' sets, under other ids: ids are looked up, rows need not be items.
    ids = np.arange(60, dtype=np.int64) * 3 + 100
    flat, offsets = mh.shingle_sets(keys)
    edges, sims = verified_edges_flat(ids[pairs], ids, flat, offsets, 0.3)
    assert edges.tolist() == ids[want[0]].tolist()
    assert sims.tolist() == want[1].tolist()
    with pytest.raises(ValueError, match="missing from items"):
        verified_edges_flat(np.array([[100, 101]]), ids, flat, offsets, 0.3)
    with pytest.raises(ValueError, match="offsets"):
        verified_edges_flat(pairs, ids, flat, offsets[:-1], 0.3)


# --- the Python walk and the exact guard give the compiled path's clustering ---------------------


def _both_paths(
    order: np.ndarray, edges: np.ndarray, sims: np.ndarray, keys: list[str], linkage: str
) -> tuple[Clustering, Clustering]:
    """``leader_cluster`` with the Python walk and exact guard, then with the numba walk and the
    compiled fingerprints (thresholds patched, so the same graph takes both paths)."""
    from unittest import mock

    from chunkdedup.dedup import lsh

    plain = leader_cluster(order, edges, sims, keys, linkage=linkage)
    with mock.patch.object(lsh, "PYTHON_WALK_SLOTS", -1), mock.patch.object(lsh, "PYTHON_GUARD_EDGES", -1):
        compiled = leader_cluster(order, edges, sims, keys, linkage=linkage)
    return plain, compiled


@pytest.mark.parametrize("linkage", LINKAGES)
@settings(max_examples=300, deadline=None)
@given(g=graphs())
def test_the_python_walk_gives_the_kernels_clustering(
    linkage: str, g: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]
) -> None:
    plain, compiled = _both_paths(*g, linkage)
    assert plain.leader.dtype == compiled.leader.dtype == np.int64
    np.testing.assert_array_equal(plain.leader, compiled.leader)
    np.testing.assert_array_equal(plain.similarity, compiled.similarity)
    assert plain.merges == compiled.merges and plain.variants == compiled.variants


@pytest.mark.parametrize("linkage", LINKAGES)
def test_the_python_walk_on_a_large_random_graph(linkage: str) -> None:
    rng = np.random.default_rng(3)
    n = 3000
    edges = rng.integers(0, n, size=(9000, 2))
    sims = rng.choice([0.86, 0.9, 0.93, 0.97], size=len(edges))
    keys = [str(rng.choice(_KEYS)) for _ in range(n)]
    plain, compiled = _both_paths(rng.permutation(n).astype(np.int64), edges, sims, keys, linkage)
    np.testing.assert_array_equal(plain.leader, compiled.leader)
    np.testing.assert_array_equal(plain.similarity, compiled.similarity)
    assert plain.variants == compiled.variants and len(plain.merges) > 100


@settings(max_examples=100, deadline=None)
@given(g=graphs())
def test_the_guard_path_chosen_by_the_caller_gives_the_same_clustering(
    g: tuple[np.ndarray, np.ndarray, np.ndarray, list[str]],
) -> None:
    """``compiled=True`` compares fingerprints at any size, ``compiled=False`` checks every edge's
    tokens: the clustering is the one the size-chosen paths give."""
    plain, compiled = _both_paths(*g, "leader")
    for chosen, want in ((True, compiled), (False, plain)):
        got = leader_cluster(*g, compiled=chosen)
        np.testing.assert_array_equal(got.leader, want.leader)
        assert got.merges == want.merges and got.variants == want.variants
