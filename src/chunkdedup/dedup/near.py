"""The near-duplicate and semantic tiers on the index: sign (and embed) new groups, then re-decide
the clusters of every group a change touched, whole connected components at a time.

Near edges (shingle Jaccard >= ``near.threshold``) and semantic edges (embedding cosine >=
``semantic.threshold``) feed one leader clustering. A near edge always outranks a semantic one (its
similarity enters as ``1 + jaccard``), so a group joins a near leader when it has one and a
semantic leader only otherwise; the number/date guard applies to both.

Incremental equals fresh: a group's cluster depends only on the groups connected to it by verified
edges (shingle Jaccard >= threshold) and on their order (smallest (doc_id, page, start)), and leader
clustering is a rule on exactly those (see :mod:`chunkdedup.dedup.lsh`). So re-clustering the
components that hold a dirty group (new, removed, or whose order moved) gives what a fresh ingest
would: the same canonicals, sources, merges and variants.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from chunkdedup.config import Config, NearConfig, SemanticConfig
from chunkdedup.dedup.lsh import band_keys, leader_cluster
from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.dedup.semantic import neighbour_pairs
from chunkdedup.embed import Embedder, get_embedder
from chunkdedup.errors import ConfigError
from chunkdedup.normalize import exact_key, key_hash
from chunkdedup.store import Store
from chunkdedup.store.chunk_tables import Assignment, GroupRow

_SIGN_BATCH = 4096
_MAX_DIFF = 20

Edges = dict[tuple[str, str], tuple[str, float]]
"""Decided edges among groups: ``(a, b)``, ``a < b`` -> (``"near"`` or ``"semantic"``, similarity)."""
NearEdges = Mapping[tuple[str, str], float]
"""Verified near edges: ``(a, b)``, ``a < b`` -> shingle Jaccard (at least ``near.threshold``)."""


@dataclass(frozen=True, slots=True)
class NearStats:
    """What one pass did: groups signed, groups re-clustered, merges and variants among them."""

    signed: int
    reclustered: int
    merged: int
    variants: int


def _fingerprints(config: NearConfig) -> tuple[str, str]:
    """(hashing settings, clustering settings): a change to the first re-signs every group."""
    d = asdict(config)
    hashing = {k: d[k] for k in ("num_perm", "shingle_words", "seed", "bands", "rows")}
    return key_hash(json.dumps(hashing, sort_keys=True)), key_hash(json.dumps(d, sort_keys=True))


def start_hashing(store: Store, config: NearConfig) -> None:
    """On an index with no groups and no signature settings yet, record ``config``'s: there is nothing
    to re-sign, and the chunk phase's signatures of its new groups are kept for good."""
    if not config.enabled or store.meta("near_hashing") is not None:
        return
    if not store.chunks.has_groups():
        with store.transaction():
            store.set_meta("near_hashing", _fingerprints(config)[0])


def near_hashing(config: NearConfig) -> str:
    """The fingerprint of ``config``'s hashing settings, as the index records it (``near_hashing``):
    signatures made with other settings are dropped by the next cluster pass."""
    return _fingerprints(config)[0]


def word_diff(member: str, leader: str) -> tuple[str, ...]:
    """Words only in the member (``+``) or only in the leader (``-``), sorted, at most 20."""
    a, b = Counter(member.split()), Counter(leader.split())
    out = [f"-{w}" for w in sorted((b - a).elements())] + [f"+{w}" for w in sorted((a - b).elements())]
    return tuple(out[:_MAX_DIFF])


def update_clusters(
    store: Store,
    config: Config,
    run_id: int,
    tick: Callable[[str, int, int], None] | None = None,
    *,
    embedder: Embedder | None = None,
    reembed: bool = False,
    near_edges: Callable[[], NearEdges | None] | None = None,
    known: Mapping[str, str] | None = None,
) -> NearStats:
    """Sign (and embed) new groups and re-cluster the components of dirty groups.

    ``embedder`` overrides ``config.semantic.embedder`` (tests pass a deterministic one). An index
    embedded with another model is refused unless ``reembed``. ``near_edges``, called once after
    signing when there is something to re-cluster, returns every verified near edge of the index
    (the Ray path computes them on the cluster); ``None`` from it, or no ``near_edges``, means the
    edges come from the store's band neighbours, verified here. ``known`` (group id -> exact key) are
    keys the caller computed already (the chunk phase's), so their texts are not keyed again.
    """
    progress = tick or (lambda stage, done, total: None)
    tables = store.chunks
    near, sem = config.near, config.semantic
    hashing, settings = _fingerprints(near)
    model = (embedder or get_embedder(sem.embedder, batch_size=sem.batch_size)) if sem.enabled else None
    with store.transaction():
        if store.meta("near_hashing") != hashing:
            tables.clear_signatures()
            store.set_meta("near_hashing", hashing)
        semantic = json.dumps([sem.enabled, sem.threshold if sem.enabled else None])
        if store.meta("near_settings") != settings or store.meta("semantic_settings") != semantic:
            tables.mark_all_dirty()
            if store.meta("near_settings") != settings:
                store.chunks.clear_near_edges()  # kept for the old threshold or bands
            store.set_meta("near_settings", settings)
            store.set_meta("semantic_settings", semantic)
            tables.clear_semantic_edges()  # recomputed below for every vector
            store.delete_meta("semantic_edges_for")
        if model is not None:
            _check_embedder(store, model, reembed)
    # each group's exact key, computed once in this pass (signing, verification and the guard need it)
    keys: dict[str, str] = dict(known or {})
    signed = _sign(store, near, progress, keys) if near.enabled else 0
    with store.transaction():
        tables.merge_bands()  # the band rows signed in the chunk phase and just now
    if model is not None:
        _embed(store, model, sem, progress)
    dirty = tables.dirty_ids()
    if not dirty:
        return NearStats(signed, 0, 0, 0)
    if near.enabled or model is not None:
        given = near_edges() if near_edges is not None and near.enabled else None
        rows, edges = _components(store, dirty, near, keys, semantic=model is not None, given=given)
    else:
        rows, edges = tables.group_rows(dirty), {}
    assignments, variants = _decide(rows, edges, near.guard, near.linkage, keys)
    with store.transaction():
        tables.apply(assignments, variants, run_id)
    progress("cluster", len(rows), len(rows))
    merged = sum(a.relation != "exact" for a in assignments)
    return NearStats(signed, len(rows), merged, len(variants))


def _check_embedder(store: Store, model: Embedder, reembed: bool) -> None:
    name, dim = store.meta("embedder_name"), store.meta("embedder_dim")
    if reembed and name is not None:
        store.chunks.clear_embeddings()
        name = dim = None
    if name is None:
        store.set_meta("embedder_name", model.name)
        store.set_meta("embedder_dim", str(model.dim))
    elif (name, dim) != (model.name, str(model.dim)):
        raise ConfigError(
            f"index {store.path} is embedded with {name} (dim {dim}), not {model.name} (dim {model.dim}): "
            f"use --embedder {name}, or re-embed everything with --embedder {model.name} --reembed"
        )


def _embed(
    store: Store, model: Embedder, config: SemanticConfig, progress: Callable[[str, int, int], None]
) -> None:
    """Embed groups that have no vector yet, then find their semantic edges against every vector."""
    tables = store.chunks
    new: list[str] = []
    total = tables.unembedded_count()
    while batch := tables.unembedded_groups(config.batch_size):
        vectors = np.asarray(model.embed_batch([text for _, text in batch]), dtype="<f4")
        with store.transaction():
            tables.set_embeddings((gid, vectors[i].tobytes()) for i, (gid, _) in enumerate(batch))
        new.extend(gid for gid, _ in batch)
        progress("embed", len(new), total)
    ids, blobs = tables.embeddings()
    # after a settings change (no edges recorded for them) every vector's edges are recomputed;
    # otherwise only the new vectors' edges, against all
    full = store.meta("semantic_edges_for") != str(config.threshold)
    position = {gid: i for i, gid in enumerate(ids)}
    queries = list(range(len(ids))) if full else [position[g] for g in new]
    if not queries:
        return
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), -1)
    pairs, cosines = neighbour_pairs(
        np.asarray(queries, dtype=np.int64), matrix, config.threshold, block=config.block
    )
    with store.transaction():
        tables.put_semantic_edges(
            (ids[int(a)], ids[int(b)], float(c)) for (a, b), c in zip(pairs, cosines, strict=True)
        )
        store.set_meta("semantic_edges_for", str(config.threshold))


def sign_keys(hasher: MinHasher, keys: Sequence[str], config: NearConfig) -> tuple[np.ndarray, np.ndarray]:
    """Signatures (uint32) and band keys (int64, as stored) of exact keys: one pure step that the
    local pass and a distributed worker share."""
    sigs = hasher.signatures(keys)
    return sigs, band_keys(sigs, config.bands, config.rows).view(np.int64)


def _key(keys: dict[str, str], gid: str, text: str) -> str:
    """The exact key of group ``gid`` (text ``text``), from ``keys`` or computed into it."""
    key = keys.get(gid)
    if key is None:
        key = keys[gid] = exact_key(text)
    return key


def _sign(
    store: Store, config: NearConfig, progress: Callable[[str, int, int], None], keys: dict[str, str]
) -> int:
    hasher = MinHasher.from_config(config)
    done = 0
    total = store.chunks.unsigned_count()
    while batch := store.chunks.unsigned_groups(_SIGN_BATCH):
        sigs, bands = sign_keys(hasher, [_key(keys, gid, text) for gid, text in batch], config)
        with store.transaction():
            store.chunks.set_signatures(
                (gid, sigs[i].tobytes(), bands[i].tolist()) for i, (gid, _) in enumerate(batch)
            )
        done += len(batch)
        progress("sign", done, total)
    return done


def _components(
    store: Store,
    dirty: Sequence[str],
    config: NearConfig,
    keys: dict[str, str],
    *,
    semantic: bool,
    given: NearEdges | None = None,
) -> tuple[list[GroupRow], Edges]:
    """Every group connected to a dirty one by verified near edges or semantic edges, and those edges
    with their relation and similarity (a pair with both keeps the near edge).

    Near candidates are the store's band neighbours, verified here by shingle Jaccard, or, when
    ``given``, the verified edges computed elsewhere (the Ray path): the same rule either way."""
    semantic_lookup = store.chunks.semantic_neighbours if semantic else None
    if not config.enabled:
        seen, edges = connect(dirty, lambda gid: (), lambda a, b: 0.0, config.threshold, semantic_lookup)
    elif given is not None:
        adjacency: dict[str, list[str]] = {}
        for a, b in given:
            adjacency.setdefault(a, []).append(b)
            adjacency.setdefault(b, []).append(a)
        seen, edges = connect(
            dirty,
            lambda gid: sorted(adjacency.get(gid, ())),
            lambda a, b: given[(a, b) if a < b else (b, a)],
            config.threshold,
            semantic_lookup,
        )
    else:
        hasher = MinHasher.from_config(config)
        texts: dict[str, np.ndarray] = {}

        def shingles(gid: str) -> np.ndarray:
            if gid not in texts:
                if gid in keys:  # signed in this pass: its text need not be read again
                    texts[gid] = hasher.shingles(keys[gid])
                else:
                    row = store.chunks.group_rows([gid])
                    key = _key(keys, gid, row[0].text) if row else None
                    texts[gid] = hasher.shingles(key) if key is not None else np.empty(0, np.uint64)
            return texts[gid]

        # the dirty groups' neighbours in one read; a group reached beyond them is read on its own
        known = store.chunks.band_neighbour_map(dirty)

        def neighbours(gid: str) -> list[str]:
            found = known.get(gid)
            return found if found is not None else store.chunks.band_neighbours(gid)

        seen, edges = connect(
            dirty,
            neighbours,
            lambda a, b: jaccard(shingles(a), shingles(b)),
            config.threshold,
            semantic_lookup,
        )
    return store.chunks.group_rows(seen), edges


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


def _decide(
    rows: Sequence[GroupRow], edges: Edges, guard: bool, linkage: str, keys: dict[str, str]
) -> tuple[list[Assignment], list[tuple[str, str, float, tuple[str, ...]]]]:
    """Leader clustering over the edges; a near edge weighs ``1 + jaccard`` so it outranks any cosine."""
    index = {row.id: i for i, row in enumerate(rows)}
    ranked = sorted(range(len(rows)), key=lambda i: (rows[i].order, rows[i].id))
    order = np.empty(len(rows), dtype=np.int64)
    order[np.asarray(ranked, dtype=np.int64)] = np.arange(len(rows), dtype=np.int64)
    pairs = sorted(edges)
    edge_array = np.asarray([(index[a], index[b]) for a, b in pairs], dtype=np.int64).reshape(-1, 2)
    weights = [1.0 + edges[p][1] if edges[p][0] == "near" else edges[p][1] for p in pairs]

    def edge(a: str, b: str) -> tuple[str, float]:
        return edges[(a, b) if a < b else (b, a)]

    row_keys = [_key(keys, row.id, row.text) for row in rows]
    result = leader_cluster(
        order, edge_array, np.asarray(weights, dtype=np.float64), row_keys, guard=guard, linkage=linkage
    )
    assignments = []
    for i, row in enumerate(rows):
        leader = int(result.leader[i])
        if leader == i:
            assignments.append(Assignment(row.id, row.id, "exact", 1.0))
        else:
            relation, sim = edge(row.id, rows[leader].id)
            diff = word_diff(row_keys[i], row_keys[leader])
            assignments.append(Assignment(row.id, rows[leader].id, relation, sim, diff))
    variants = [
        (rows[v.a].id, rows[v.b].id, edge(rows[v.a].id, rows[v.b].id)[1], tuple(v.differing))
        for v in result.variants
    ]
    return assignments, variants
