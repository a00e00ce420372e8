"""The near-duplicate tier on the index: sign new groups, then re-decide the clusters of every
group a change touched, whole connected components at a time.

Incremental equals fresh: a group's cluster depends only on the groups connected to it by verified
edges (shingle Jaccard >= threshold) and on their order (smallest (doc_id, page, start)), and leader
clustering is a rule on exactly those (see :mod:`chunkdedup.dedup.lsh`). So re-clustering the
components that hold a dirty group (new, removed, or whose order moved) gives what a fresh ingest
would: the same canonicals, sources, merges and variants.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from chunkdedup.chunk_tables import Assignment, GroupRow
from chunkdedup.config import NearConfig
from chunkdedup.dedup.lsh import band_keys, leader_cluster
from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.normalize import exact_key, key_hash
from chunkdedup.store import Store

_SIGN_BATCH = 4096
_MAX_DIFF = 20


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


def word_diff(member: str, leader: str) -> tuple[str, ...]:
    """Words only in the member (``+``) or only in the leader (``-``), sorted, at most 20."""
    a, b = Counter(member.split()), Counter(leader.split())
    out = [f"-{w}" for w in sorted((b - a).elements())] + [f"+{w}" for w in sorted((a - b).elements())]
    return tuple(out[:_MAX_DIFF])


def update_near(
    store: Store, config: NearConfig, run_id: int, tick: Callable[[str, int, int], None] | None = None
) -> NearStats:
    """Sign unsigned groups and re-cluster the components of dirty groups (one transaction each step)."""
    progress = tick or (lambda stage, done, total: None)
    tables = store.chunks
    hashing, settings = _fingerprints(config)
    with store.transaction():
        if store.meta("near_hashing") != hashing:
            tables.clear_signatures()
            store.set_meta("near_hashing", hashing)
        if store.meta("near_settings") != settings:
            store.conn.execute("INSERT OR IGNORE INTO dirty(group_id) SELECT id FROM groups")
            store.set_meta("near_settings", settings)
    signed = _sign(store, config, progress) if config.enabled else 0
    dirty = tables.dirty_ids()
    if not dirty:
        return NearStats(signed, 0, 0, 0)
    if config.enabled:
        rows, edges, sims = _components(store, dirty, config)
    else:
        rows, edges, sims = tables.group_rows(dirty), [], []
    assignments, variants = _decide(rows, edges, sims, config)
    with store.transaction():
        tables.apply(assignments, variants, run_id)
    progress("near", len(rows), len(rows))
    merged = sum(a.relation != "exact" for a in assignments)
    return NearStats(signed, len(rows), merged, len(variants))


def _sign(store: Store, config: NearConfig, progress: Callable[[str, int, int], None]) -> int:
    hasher = MinHasher.from_config(config)
    done = 0
    total = int(store.conn.execute("SELECT COUNT(*) FROM groups WHERE signature IS NULL").fetchone()[0])
    while batch := store.chunks.unsigned_groups(_SIGN_BATCH):
        sigs = hasher.signatures([exact_key(text) for _, text in batch])
        keys = band_keys(sigs, config.bands, config.rows).view(np.int64)
        with store.transaction():
            store.chunks.set_signatures(
                (gid, sigs[i].tobytes(), keys[i].tolist()) for i, (gid, _) in enumerate(batch)
            )
        done += len(batch)
        progress("sign", done, total)
    return done


def _components(
    store: Store, dirty: Sequence[str], config: NearConfig
) -> tuple[list[GroupRow], list[tuple[str, str]], list[float]]:
    """Every group connected to a dirty one by verified edges, and those edges."""
    hasher = MinHasher.from_config(config)
    texts: dict[str, np.ndarray] = {}

    def shingles(gid: str) -> np.ndarray:
        if gid not in texts:
            row = store.chunks.group_rows([gid])
            texts[gid] = hasher.shingles(exact_key(row[0].text)) if row else np.empty(0, np.uint64)
        return texts[gid]

    seen = set(dirty)
    frontier = sorted(seen)
    edges: dict[tuple[str, str], float] = {}
    while frontier:
        gid = frontier.pop()
        for other in store.chunks.band_neighbours(gid):
            pair = (gid, other) if gid < other else (other, gid)
            if pair in edges:
                continue
            sim = jaccard(shingles(gid), shingles(other))
            if sim >= config.threshold:
                edges[pair] = sim
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
    pairs = sorted(edges)
    return store.chunks.group_rows(sorted(seen)), pairs, [edges[p] for p in pairs]


def _decide(
    rows: Sequence[GroupRow], edges: Sequence[tuple[str, str]], sims: Sequence[float], config: NearConfig
) -> tuple[list[Assignment], list[tuple[str, str, float, tuple[str, ...]]]]:
    index = {row.id: i for i, row in enumerate(rows)}
    ranked = sorted(range(len(rows)), key=lambda i: (rows[i].order, rows[i].id))
    order = np.empty(len(rows), dtype=np.int64)
    order[np.asarray(ranked, dtype=np.int64)] = np.arange(len(rows), dtype=np.int64)
    edge_array = np.asarray([(index[a], index[b]) for a, b in edges], dtype=np.int64).reshape(-1, 2)
    keys = [exact_key(row.text) for row in rows]
    result = leader_cluster(order, edge_array, np.asarray(sims, dtype=np.float64), keys, guard=config.guard)
    assignments = []
    for i, row in enumerate(rows):
        leader = int(result.leader[i])
        if leader == i:
            assignments.append(Assignment(row.id, row.id, "exact", 1.0))
        else:
            sim = float(result.similarity[i])
            diff = word_diff(keys[i], keys[leader])
            assignments.append(Assignment(row.id, rows[leader].id, "near", sim, diff))
    variants = [
        (rows[v.a].id, rows[v.b].id, float(v.similarity), tuple(v.differing)) for v in result.variants
    ]
    return assignments, variants
