"""The near and semantic tiers on an index: sign (and embed) new groups, then re-decide the clusters
of every group a change touched, whole connected components at a time, with the pure steps of
:mod:`chunkdedup.dedup.near` (verified edges, components, leader clustering) over the store's rows."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from chunkdedup.config import Config, NearConfig, SemanticConfig
from chunkdedup.dedup.settings import NUMPY_KEYS, near_edge_settings, near_fingerprints
from chunkdedup.store import Store
from chunkdedup.store.band_tables import fold_keys
from chunkdedup.store.review import ReviewQueue
from chunkdedup.store.settings import StoredEmbedder

# The array stack (NumPy, the MinHash and LSH steps, embedders) is imported where a pass has groups
# to sign, embed or re-cluster: a run that changed nothing checks the settings and leaves, in a
# tenth of a second less.
if TYPE_CHECKING:
    import numpy as np

    from chunkdedup.dedup.near import Edges, NearEdges
    from chunkdedup.embed import Embedder
    from chunkdedup.store.chunk_tables import BandTable

_SIGN_BATCH = 4096
#: the writer's page cache while the cluster pass runs, KiB (``PAGE_CACHE_KIB``, 256 MiB, the rest of
#: the run): the pass writes its band rows in key order and reads the few groups on an edge, and the
#: cache the chunk phase filled was a quarter of a GB of a 1M-record ingest's peak in this pass (its
#: cluster seconds 11.7 at 256 MiB, 10.7 at 32: benchmarks/README.md, memory.py)
CLUSTER_PAGE_CACHE_KIB = 32 * 1024
#: dirty groups whose band neighbours one join reads
_NEIGHBOUR_BLOCK = 4096
#: all neighbours from one scan of the bands once at least 1/this of the groups are dirty (the scan costs
#: about 23 us a group, the joins about 53 us a dirty one, at 100k chunks)
_WHOLE_SCAN_SHARE = 2


class HeldBands:
    """The band keys of a first ingest's groups, held from the chunk phase to the cluster pass, which
    writes them into the empty bands in one ordered insert and reads the band neighbours from them
    (:meth:`~chunkdedup.store.band_tables.BandTables.put_first_bands`). The chunk phase writes each
    new group signed: a run stopped before its cluster pass leaves signed groups and empty bands, and
    the next cluster pass writes their rows, signing their texts again (:class:`NearKeyer`)."""

    def __init__(self, hashing: str) -> None:
        self.hashing = hashing  # the hashing settings the keys were made under
        self._ids: list[str] = []
        self._keys: list[np.ndarray] = []
        self._seen: set[str] = set()

    def add(self, ids: Sequence[str], keys: np.ndarray) -> int:
        """Hold the band keys of groups ``ids`` (``keys[i]``: those of ``ids[i]``) not held yet;
        returns how many were new."""
        new = [i for i, gid in enumerate(ids) if gid not in self._seen]
        if new:
            self._seen.update(ids[i] for i in new)
            self._ids.extend(ids[i] for i in new)
            # folded as the index keeps them (32 bits a key): half the memory, the same band rows
            self._keys.append(fold_keys(keys[new] if len(new) < len(ids) else keys))
        return len(new)

    def take(self) -> tuple[list[str], np.ndarray] | None:
        """The held ids and their keys (``None`` if none), emptying the holder."""
        if not self._ids:
            return None
        import numpy as np

        ids, keys = self._ids, np.concatenate(self._keys)
        self._ids, self._keys, self._seen = [], [], set()
        return ids, keys


class NearKeyer:
    """The store's :class:`~chunkdedup.store.band_tables.BandKeyer`: a group's band keys signed again
    from its text, as the chunk phase signed its exact key (:func:`~chunkdedup.dedup.near.sign_keys`),
    under ``config``'s hashing settings. A few texts are signed by the NumPy path (no numba start-up)."""

    def __init__(self, config: NearConfig) -> None:
        self.config = config
        self.hashing = near_fingerprints(config)[0]

    def keys(self, texts: Sequence[str]) -> np.ndarray:
        from chunkdedup.dedup.minhash import MinHasher
        from chunkdedup.dedup.near import sign_keys
        from chunkdedup.normalize import exact_key

        hasher = MinHasher.from_config(self.config, compiled=len(texts) > NUMPY_KEYS)
        return sign_keys(hasher, [exact_key(t) for t in texts], self.config)


@dataclass(frozen=True, slots=True)
class NearStats:
    """What one pass did: groups signed, groups re-clustered, merges and variants among them."""

    signed: int
    reclustered: int
    merged: int
    variants: int


def start_hashing(store: Store, config: NearConfig) -> None:
    """On an index with no groups and no signature settings yet, record ``config``'s: there is nothing
    to re-sign, and the chunk phase's signatures of its new groups are kept for good."""
    if not config.enabled:
        return
    stamp = store.settings.stamp("near_hashing", near_fingerprints(config)[0])
    if stamp.stored is None and not store.groups.has_groups():
        with store.transaction():
            store.settings.done(stamp)


def update_clusters(
    store: Store,
    config: Config,
    run_id: int,
    tick: Callable[[str, int, int], None] | None = None,
    *,
    embedder: Embedder | None = None,
    reembed: bool = False,
    near_edges: Callable[[], NearEdges | None] | None = None,
    known: dict[str, str] | Mapping[str, str] | None = None,
    held: HeldBands | None = None,
    compiled: bool | None = None,
) -> NearStats:
    """Sign (and embed) new groups and re-cluster the components of dirty groups.

    ``embedder`` overrides ``config.semantic.embedder`` (tests pass a deterministic one). An index
    embedded with another model is refused unless ``reembed``. ``near_edges``, called once after
    signing when there is something to re-cluster, returns every verified near edge of the index
    (the Ray path computes them on the cluster); ``None`` from it, or no ``near_edges``, means the
    edges come from the store's band neighbours, verified here. ``known`` (group id -> exact key) are
    keys the caller computed already (the chunk phase's), so their texts are not keyed again.
    ``held``: the band keys of a first ingest's groups (see :class:`HeldBands`). ``compiled``: whether
    signing, verification, the guards and the walk take the compiled kernels (``None``: by the number
    of groups; ``False``: their NumPy and CPython twins, the same clusters).
    """
    progress = tick or (lambda stage, done, total: None)
    near, sem = config.near, config.semantic
    hashing, settings = near_fingerprints(near)
    model = None
    if sem.enabled:
        from chunkdedup.embed import get_embedder

        model = embedder or get_embedder(sem.embedder, batch_size=sem.batch_size)
    recorded = store.settings
    with store.transaction():
        signing = recorded.stamp("near_hashing", hashing)
        if signing.changed:  # every signature and edge dropped
            store.bands.clear_signatures()
            recorded.done(signing)
        deciding = recorded.stamp("near_settings", settings)
        semantic = json.dumps([sem.enabled, sem.threshold if sem.enabled else None])
        semantic_deciding = recorded.stamp("semantic_settings", semantic)
        if deciding.changed or semantic_deciding.changed:
            store.groups.mark_all_dirty()
            verified = recorded.stamp("near_edge_settings", near_edge_settings(near))
            if deciding.changed and verified.changed and not signing.changed:
                store.bands.clear_near_edges()  # kept for the old threshold or bands
            store.embeddings.clear_semantic_edges()  # recomputed below for every vector
            recorded.forget("semantic_edges_for")
            recorded.done(deciding, verified, semantic_deciding)
        if model is not None:
            _check_embedder(store, model, reembed)
    # each group's exact key, computed once (signing, verification and the guard need it): the
    # caller's keys, extended in place (a copy of a million-key dict is memory for nothing)
    keys: dict[str, str] = known if isinstance(known, dict) else dict(known or {})
    first = held.take() if held is not None and near.enabled else None
    table = None
    if first is not None and held is not None and not recorded.stamp("near_hashing", held.hashing).changed:
        with store.transaction():  # keys made under other settings are dropped: _sign redoes them
            table = store.bands.put_first_bands(*first)
            if table is None:  # bands were not empty: these go through the stage as any other
                store.bands.sign_groups(zip(first[0], first[1].tolist(), strict=True))
    elif near.enabled and store.bands.signed_without_bands():
        # a first ingest stopped after its chunk phase: its groups are signed, their band rows unwritten
        import numpy as np

        with store.transaction():
            table = store.bands.put_first_bands([], np.empty((0, near.bands), np.int64))
    del first
    signed = _sign(store, near, progress, keys, compiled) if near.enabled else 0
    with store.transaction():
        if store.bands.merge_bands() or signed:  # the band rows signed in the chunk phase and just now
            table = None  # bands hold more rows than the table: neighbours come from the store
    if model is not None:
        _embed(store, model, sem, progress)
    dirty = store.groups.dirty_ids()
    if not dirty:
        return NearStats(signed, 0, 0, 0)
    if near.enabled or model is not None:
        given = near_edges() if near_edges is not None and near.enabled else None
        seen, edges = _components(
            store, dirty, near, keys, semantic=model is not None, given=given, table=table, compiled=compiled
        )
    else:
        seen, edges = dirty, {}
    del table
    from chunkdedup.dedup.near import decide

    # a group on no edge leads itself (leader clustering joins only along edges, and the overrides name
    # near pairs): only the groups on an edge are read and decided (at a first ingest of a million
    # tiny records, a few thousand: their rows, not a million, are held)
    on_edges = {gid for pair in edges for gid in pair}
    rows = store.groups.group_rows(sorted(on_edges), keyed=keys)
    alone = store.groups.existing_groups([gid for gid in seen if gid not in on_edges])

    texts: dict[str, str] = {}
    # a person's decisions from the review queue, beside the config's
    decided = ReviewQueue(store).overrides()
    always_merge = (*near.always_merge, *((o.a, o.b) for o in decided if o.decision == "merge"))
    keep_apart = (*near.keep_apart, *((o.a, o.b) for o in decided if o.decision == "apart"))
    judged = bool(near.meaning) or near.numbering or bool(always_merge) or bool(keep_apart)
    if judged and edges:  # the meaning guard reads the texts of the groups on an edge
        texts = store.groups.group_texts([row.id for row in rows if row.text is None and row.id in on_edges])
    assignments, variants = decide(
        rows, edges, near.guard, near.linkage, keys,
        texts=texts, meaning=near.meaning, numbering=near.numbering,
        always_merge=always_merge, keep_apart=keep_apart, compiled=compiled,
    )
    with store.transaction():
        # dirty and seen are sorted by id: equal lists are the same groups
        store.groups.apply(assignments, variants, run_id, every_dirty=list(seen) == dirty, alone=alone)
    progress("cluster", len(seen), len(seen))
    merged = sum(a.relation != "exact" for a in assignments)
    return NearStats(signed, len(seen), merged, len(variants))


def _table_neighbours(table: BandTable, compiled: bool = True) -> dict[str, list[str]]:
    """The band neighbours (sorted) of every group that has any, from band rows in memory: what
    :meth:`~chunkdedup.store.band_tables.BandTables.all_band_neighbours` reads from the bands."""
    from chunkdedup.dedup.lsh import bucket_pairs

    if not table.gids.size:
        return {}
    ids = table.ids
    out: dict[str, list[str]] = {}
    for a, b in bucket_pairs(table.keys, table.gids, compiled=compiled).tolist():
        out.setdefault(ids[a], []).append(ids[b])
        out.setdefault(ids[b], []).append(ids[a])
    for found in out.values():
        found.sort()
    return out


def _covers(table: BandTable, dirty: Sequence[str]) -> bool:
    """Whether every group of ``table`` is dirty (a first ingest's): then the walk from the dirty groups
    verifies every candidate pair of the table, and nothing else."""
    wanted = set(dirty)
    return all(gid in wanted for gid in table.ids.values())


def _table_edges(store: Store, table: BandTable, config: NearConfig, keys: dict[str, str]) -> Edges:
    """Every verified near edge among the band rows of ``table``, each candidate pair's shingle
    Jaccard computed in one compiled pass: the edges :func:`~chunkdedup.dedup.near.connect` finds
    walking from every group of the table (it verifies each candidate pair once, with the same
    Jaccard), without a Python call per group or pair (at 1M chunks the walk was 13 s)."""
    import numpy as np

    from chunkdedup.dedup.lsh import bucket_pairs, verified_edges_flat
    from chunkdedup.dedup.minhash import MinHasher
    from chunkdedup.dedup.near import group_key

    if not table.gids.size:
        return {}
    pairs = bucket_pairs(table.keys, table.gids)
    items = np.unique(pairs)  # the groups that have a band neighbour (most have none)
    ids = table.ids
    names = [ids[g] for g in items.tolist()]
    unread = [g for g in names if g not in keys]
    texts = {row.id: row.text or "" for row in store.groups.group_rows(unread)} if unread else {}
    hasher = MinHasher.from_config(config)
    flat, offsets = hasher.shingle_sets([group_key(keys, g, texts.get(g, "")) for g in names])
    del texts
    found, sims = verified_edges_flat(pairs, items, flat, offsets, config.threshold)
    del flat, offsets
    edges: Edges = {}
    for (a, b), sim in zip(found.tolist(), sims.tolist(), strict=True):
        x, y = ids[a], ids[b]
        edges[(x, y) if x < y else (y, x)] = ("near", sim)
    return edges


def _check_embedder(store: Store, model: Embedder, reembed: bool) -> None:
    recorded = store.settings.embedder()
    if reembed and recorded is not None:
        store.embeddings.clear_embeddings()
        recorded = None
    if recorded is None:
        store.settings.set_embedder(StoredEmbedder(model.name, model.dim))
    else:
        use = f"use --embedder {recorded.name}"
        recorded.check(model.name, model.dim, index=store.path, spec=model.name, use=use)


def _embed(
    store: Store, model: Embedder, config: SemanticConfig, progress: Callable[[str, int, int], None]
) -> None:
    """Embed groups that have no vector yet, then find their semantic edges against every vector."""
    import numpy as np

    from chunkdedup.dedup.semantic import neighbour_pairs

    new: list[str] = []
    total = store.embeddings.unembedded_count()
    while batch := store.embeddings.unembedded_groups(config.batch_size):
        vectors = np.asarray(model.embed_batch([text for _, text in batch]), dtype="<f4")
        with store.transaction():
            store.embeddings.set_embeddings((gid, vectors[i].tobytes()) for i, (gid, _) in enumerate(batch))
        new.extend(gid for gid, _ in batch)
        progress("embed", len(new), total)
    ids, blobs = store.embeddings.embeddings()
    # after a settings change (no edges recorded for them) every vector's edges are recomputed;
    # otherwise only the new vectors' edges, against all
    stamp = store.settings.stamp("semantic_edges_for", str(config.threshold))
    position = {gid: i for i, gid in enumerate(ids)}
    queries = list(range(len(ids))) if stamp.changed else [position[g] for g in new]
    if not queries:
        return
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), -1)
    pairs, cosines = neighbour_pairs(
        np.asarray(queries, dtype=np.int64), matrix, config.threshold, block=config.block
    )
    with store.transaction():
        store.embeddings.put_semantic_edges(
            (ids[int(a)], ids[int(b)], float(c)) for (a, b), c in zip(pairs, cosines, strict=True)
        )
        store.settings.done(stamp)


def _sign(
    store: Store,
    config: NearConfig,
    progress: Callable[[str, int, int], None],
    keys: dict[str, str],
    compiled: bool | None = None,
) -> int:
    done = 0
    total = store.bands.unsigned_count()
    if not total:
        return 0
    from chunkdedup.dedup.minhash import MinHasher
    from chunkdedup.dedup.near import group_key, sign_keys

    # a few groups are signed by the NumPy path: the same band keys, no numba start-up
    hasher = MinHasher.from_config(config, compiled=total > NUMPY_KEYS if compiled is None else compiled)
    while batch := store.bands.unsigned_groups(_SIGN_BATCH):
        bands = sign_keys(hasher, [group_key(keys, gid, text) for gid, text in batch], config)
        with store.transaction():
            store.bands.sign_groups((gid, bands[i].tolist()) for i, (gid, _) in enumerate(batch))
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
    table: BandTable | None = None,
    compiled: bool | None = None,
) -> tuple[Sequence[str], Edges]:
    """Every group connected to a dirty one by verified near edges or semantic edges (sorted), and those
    edges with their relation and similarity (a pair with both keeps the near edge).

    Near candidates are the store's band neighbours, verified here by shingle Jaccard, or, when
    ``given``, the verified edges computed elsewhere (the Ray path): the same rule either way.
    ``table``: every band row of the index, as just written (a first ingest's), read here for the
    band neighbours instead of a scan of the bands. ``compiled``: as for :func:`update_clusters`."""
    import numpy as np

    from chunkdedup.dedup.minhash import MinHasher, jaccard
    from chunkdedup.dedup.near import connect, group_key

    semantic_lookup = store.embeddings.semantic_neighbours if semantic else None
    if not config.enabled:
        seen, edges = connect(dirty, lambda gid: (), lambda a, b: 0.0, config.threshold, semantic_lookup)
    elif (
        table is not None
        and not semantic
        and (len(dirty) > NUMPY_KEYS if compiled is None else compiled)
        and _covers(table, dirty)
    ):
        seen, edges = sorted(set(dirty)), _table_edges(store, table, config, keys)
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
        # a few dirty groups (an incremental run) are compared by the NumPy paths: the same Jaccards
        kernels = len(dirty) > NUMPY_KEYS if compiled is None else compiled
        hasher = MinHasher.from_config(config, compiled=kernels)
        texts: dict[str, np.ndarray] = {}

        def fetch(gids: Iterable[str]) -> None:
            """The shingle sets of those of ``gids`` not held yet, from one batch (the texts of the
            groups not signed in this pass read in one query)."""
            missing = [g for g in dict.fromkeys(gids) if g not in texts]
            if not missing:
                return
            unread = [g for g in missing if g not in keys]
            rows = {row.id: row.text or "" for row in store.groups.group_rows(unread)} if unread else {}
            known = [g for g in missing if g in keys or g in rows]
            for g in missing:
                texts[g] = np.empty(0, np.uint64)  # a group gone from the index: no shingles
            flat, offsets = hasher.shingle_sets([group_key(keys, g, rows.get(g, "")) for g in known])
            for i, g in enumerate(known):
                texts[g] = flat[offsets[i] : offsets[i + 1]]

        # The dirty groups' neighbours are read a block of groups at a time (one join each), taken as
        # the walk reaches them, so memory holds about one block's lists; a group reached beyond the
        # dirty ones is read with every such group the lists read so far name (below).
        # When most groups are dirty (a first ingest), every group's neighbours come from one scan of
        # the bands instead (only groups that have some are held).
        position = {gid: i for i, gid in enumerate(dirty)}
        ahead: dict[str, list[str]] = {}
        read: set[int] = set()
        everyone = (
            (store.bands.all_band_neighbours() if table is None else _table_neighbours(table, kernels))
            if len(dirty) * _WHOLE_SCAN_SHARE >= store.groups.group_count()
            else None
        )

        def block_neighbours(ids: Sequence[str]) -> dict[str, list[str]]:
            if everyone is None:
                return store.bands.band_neighbour_map(ids)
            return {gid: everyone.pop(gid, []) for gid in ids}

        # groups beyond the dirty ones that some read list names, not read yet: a walk reaching one
        # reads them all in one join (an incremental run reaches hundreds, one query each cost more)
        beyond: dict[str, None] = {}
        asked: set[str] = set()

        def note(lists: Iterable[list[str]]) -> None:
            for found in lists:
                beyond.update((g, None) for g in found if g not in position and g not in asked)

        def neighbours(gid: str) -> list[str]:
            found = ahead.pop(gid, None)
            i = position.get(gid)
            if found is not None:
                if i is None and found:  # read with a batch beyond the dirty groups
                    fetch([gid, *found])
                return found
            if i is None:
                batch = [gid, *itertools.islice((g for g in beyond if g != gid), _NEIGHBOUR_BLOCK - 1)]
                for g in batch:
                    beyond.pop(g, None)
                asked.update(batch)
                part = block_neighbours(batch)
                ahead.update(part)
                note(part.values())
                found = ahead.pop(gid)
                if found:
                    fetch([gid, *found])
                return found
            if i // _NEIGHBOUR_BLOCK in read:
                found = store.bands.band_neighbours(gid)
                if found:
                    fetch([gid, *found])
                return found
            block = i // _NEIGHBOUR_BLOCK
            read.add(block)
            start = block * _NEIGHBOUR_BLOCK
            part = block_neighbours(dirty[start : start + _NEIGHBOUR_BLOCK])
            ahead.update(part)
            note(part.values())
            # the block's groups that have neighbours, and those: the pairs the walk verifies next (a
            # group with none needs no shingles: most of a corpus's groups, most of a GiB at 1M)
            fetch(itertools.chain((g for g, found in part.items() if found), *part.values()))
            return ahead.pop(gid)

        seen, edges = connect(
            dirty,
            neighbours,
            lambda a, b: jaccard(texts[a], texts[b], compiled=kernels),
            config.threshold,
            semantic_lookup,
        )
        texts.clear()  # before the rows are read: at a million groups, each is most of a GiB
    return seen, edges
