"""The near tier's banding and candidate verification on Ray: every verified near edge of an index.

Three hash shuffles, each followed by a vectorised reduce of one partition (a partition holds every
row of its keys, so per-partition results add up to the whole):

1. ``(band_key, group)`` rows by band key -> the pairs of groups sharing a bucket
   (:func:`chunkdedup.dedup.lsh.bucket_pairs`, the kernel local banding runs);
2. those pairs by their smaller group, with the ``(group, text)`` rows by group -> each pair once
   (a pair shared in several bands is deduplicated here), carrying the smaller group's text;
3. the result by the larger group, with the text rows again -> both texts of each pair, verified with
   ``MinHasher.shingle_sets`` over ``exact_key(text)`` and
   :func:`chunkdedup.dedup.lsh.verified_edges_flat`: the exact Jaccard the local pass computes
   (``jaccard`` of ``MinHasher.shingles``), bit for bit.

Texts travel with the data (a remote worker cannot read the driver's index). The driver numbers the
groups in id order (so a pair ``a < b`` of numbers is a pair of ids in order), streams the ``bands``
and ``groups`` tables into the object store in blocks, and collects the verified edges, which the
local clustering (:func:`chunkdedup.dedup.near.connect`) walks as it walks the store's band neighbours.

Verified edges are kept in the index (``near_edges``, with an ``edged`` flag on each group): a pass
bands and verifies only the pairs with a group that is not edged yet, so after the first run only the
band rows of the buckets new groups fall in, and the texts of the groups in those rows, go to Ray;
the clustering gets the kept edges plus the new ones. A dropped group takes its edges with it; a
change of the near settings forgets them all.

Rows of shuffles 2 and 3 share one schema ``(key, other, text)``: a text row is ``(group, -1, text)``;
a pair row is ``(a, b, "")`` keyed by ``a``, then ``(b, a, text of a)`` keyed by ``b``.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from chunkdedup.config import NearConfig
from chunkdedup.dedup.lsh import bucket_pairs, verified_edges_flat
from chunkdedup.dedup.minhash import MinHasher
from chunkdedup.errors import EngineError
from chunkdedup.normalize import exact_key
from chunkdedup.store import Store
from chunkdedup.store.chunk_tables import BandRows

if TYPE_CHECKING:
    import pyarrow as pa

_BAND_ROWS = 1_000_000  # band rows per block sent from the driver
_TEXT_ROWS = 20_000  # group texts per block
_ROWS_PER_PARTITION = 1_000_000  # band rows per shuffle partition: ~16 MB of keys in a reduce
_SHIFT = np.int64(2**31)  # pair code a * 2**31 + b (group numbers are below 2**31)


def _rows(key: Any, other: Any, text: Any) -> pa.Table:
    import pyarrow as pa

    return pa.table(
        {
            "key": pa.array(key, type=pa.int64()),
            "other": pa.array(other, type=pa.int64()),
            "text": pa.array(text, type=pa.large_string()),
        }
    )


def band_pairs_batch(batch: pa.Table, *, fresh: np.ndarray | None = None) -> pa.Table:
    """Reduce one band-key partition: pair rows ``(a, b, null)`` for groups sharing a bucket, ``a < b``,
    and one tally row ``(-1, distinct band keys, null)`` that lets the driver check no bucket was split.

    With ``fresh`` (sorted group numbers), only pairs with a fresh group: the others are kept already."""
    import pyarrow as pa

    keys = batch.column("band_key").to_numpy()
    pairs = bucket_pairs(keys, batch.column("gid").to_numpy())
    if fresh is not None:
        pairs = pairs[_find(fresh, pairs[:, 0])[1] | _find(fresh, pairs[:, 1])[1]]
    tally = np.unique(keys).size
    return _rows(
        np.concatenate((pairs[:, 0], [-1])),
        np.concatenate((pairs[:, 1], [tally])),
        pa.nulls(pairs.shape[0] + 1, type=pa.large_string()),
    )


def _find(sorted_values: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is (or would go) in ``sorted_values``, and whether it is there."""
    at = np.searchsorted(sorted_values, values)
    found = at < sorted_values.size
    found[found] = sorted_values[at[found]] == values[found]
    return at, found


def _tally_batch(batch: pa.Table) -> pa.Table:
    """A block's banding tally: ``buckets``, the distinct band keys its partitions reduced, and
    ``pairs``, the candidate pairs it holds."""
    import pyarrow as pa

    key = batch.column("key").to_numpy()
    buckets = batch.column("other").to_numpy()[key < 0]
    return pa.table({"buckets": [int(buckets.sum())], "pairs": [int((key >= 0).sum())]})


def _texts_of(batch: pa.Table) -> tuple[np.ndarray, np.ndarray, pa.ChunkedArray]:
    """The partition's text rows: (their mask, their keys sorted, their texts in that order)."""
    import pyarrow as pa

    is_text = batch.column("other").to_numpy() == -1
    keys = batch.column("key").to_numpy()[is_text]
    order = np.argsort(keys, kind="stable")
    return is_text, keys[order], batch.column("text").filter(pa.array(is_text)).take(pa.array(order))


def _lookup(sorted_keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions of ``wanted`` in ``sorted_keys``; a missing one means a split partition."""
    at, found = _find(sorted_keys, wanted)
    if not bool(found.all()):
        raise EngineError(
            "a group's text was not in its hash partition (Ray split a partition into two blocks): "
            "re-run without --engine ray, and report the Ray version"
        )
    return at


def attach_text_batch(batch: pa.Table) -> pa.Table:
    """Reduce one partition by the smaller group ``a``: each pair once, as ``(b, a, text of a)``."""
    import pyarrow as pa

    is_text, text_keys, texts = _texts_of(batch)
    key = batch.column("key").to_numpy()
    is_pair = ~is_text & (key >= 0)  # key -1: the banding tally, already read by the driver
    codes = np.unique(key[is_pair] * _SHIFT + batch.column("other").to_numpy()[is_pair])
    a, b = codes // _SHIFT, codes % _SHIFT
    return _rows(b, a, texts.take(pa.array(_lookup(text_keys, a))))


def verify_batch(batch: pa.Table, *, config: NearConfig) -> pa.Table:
    """Reduce one partition by the larger group ``b``: rows ``(a, b, jaccard)`` of the pairs whose
    shingle Jaccard reaches ``config.threshold`` (the shingles and Jaccard of the local pass)."""
    import pyarrow as pa

    is_text, text_keys, texts = _texts_of(batch)
    b = batch.column("key").to_numpy()[~is_text]
    a = batch.column("other").to_numpy()[~is_text]
    left = batch.column("text").filter(pa.array(~is_text)).to_pylist()
    text_of: dict[int, str] = {}
    for gid, text in zip(a.tolist(), left, strict=True):
        text_of.setdefault(gid, text)
    right = np.unique(b)
    for gid, text in zip(
        right.tolist(), texts.take(pa.array(_lookup(text_keys, right))).to_pylist(), strict=True
    ):
        text_of.setdefault(gid, text)
    items = np.asarray(sorted(text_of), dtype=np.int64)
    flat, offsets = MinHasher.from_config(config).shingle_sets([exact_key(text_of[int(g)]) for g in items])
    edges, sims = verified_edges_flat(np.stack((a, b), axis=1), items, flat, offsets, config.threshold)
    return pa.table(
        {
            "a": pa.array(edges[:, 0], type=pa.int64()),
            "b": pa.array(edges[:, 1], type=pa.int64()),
            "similarity": pa.array(sims, type=pa.float64()),
        }
    )


@dataclass(frozen=True, slots=True)
class NearPass:
    """The result of a near pass on Ray: every verified edge of the index (kept ones included), how many
    groups' texts were shipped and how many candidate pairs were verified this time."""

    edges: dict[tuple[str, str], float]
    shipped: int
    verified: int


def near_edges_on_ray(
    ray: ModuleType,
    store: Store,
    config: NearConfig,
    workers: int,
    clock: Callable[[str], AbstractContextManager[None]],
) -> NearPass | None:
    """Every verified near edge of the index, ``(a, b)`` with ``a < b`` -> Jaccard, the new ones
    computed on Ray and kept in the index (:meth:`BandTables.keep_near_edges`).

    Only pairs with a group that is not edged yet are banded and verified (on a new index, every
    pair): the band rows of the buckets such groups fall in, and the texts of the groups in those
    rows, go to Ray. ``clock(stage)`` is a context manager timing each step. ``None`` if the banding
    tally shows a bucket split across blocks (the caller then verifies from the store, as the local
    pass does).
    """
    with clock("near: read bands and texts (driver)"):
        fresh_count = store.bands.unedged_count()
        if fresh_count == 0:
            return NearPass(store.bands.near_edges(), 0, 0)
        everything = fresh_count == store.groups.group_count()
        with store.bands.band_rows(touched_only=not everything) as source:
            # groups numbered in id order, so a pair a < b of numbers is a pair of ids in order
            if everything:
                ids, texts = _put_all_texts(ray, store)
            else:
                ids = source.group_ids()
                texts = _put_texts(ray, store, ids)
            number = {gid: i for i, gid in enumerate(ids)}
            bands, band_rows = _put_bands(ray, source, number)
            fresh = None
            if not everything:
                # a fresh group with no band rows here (none in the touched buckets) has no pair to verify
                fresh = np.unique(
                    np.fromiter((number[g] for g in store.bands.unedged_ids() if g in number), dtype=np.int64)
                )
            buckets = source.bucket_count()
    edges: dict[tuple[str, str], float] = {}
    verified = 0
    if band_rows:
        partitions = max(2 * workers, -(-band_rows // _ROWS_PER_PARTITION))
        with clock("near: band (Ray shuffle)"):
            pairs = (
                bands.repartition(partitions, keys=["band_key"])
                .map_batches(
                    band_pairs_batch, fn_kwargs={"fresh": fresh}, batch_format="pyarrow", batch_size=None
                )
                .materialize()
            )
            tally = pairs.map_batches(_tally_batch, batch_format="pyarrow", batch_size=None)
            # summed here: Dataset.sum is an aggregate with a shuffle of its own (seconds of overhead)
            tallied = 0
            for b in tally.iter_batches(batch_format="pyarrow", batch_size=None):
                tallied += int(np.sum(b.column("buckets").to_numpy()))
                verified += int(np.sum(b.column("pairs").to_numpy()))
        if tallied != buckets:
            return None
        with clock("near: verify (Ray shuffle)"):
            edges = _verify(pairs, texts, partitions, config, ids)
    with clock("near: keep edges (driver)"), store.transaction():
        store.bands.keep_near_edges((a, b, sim) for (a, b), sim in sorted(edges.items()))
        every = store.bands.near_edges()
    return NearPass(every, len(ids), verified)


def _verify(
    pairs: Any, texts: Any, partitions: int, config: NearConfig, ids: list[str]
) -> dict[tuple[str, str], float]:
    """Shuffles 2 and 3: attach both texts to each candidate pair; keep those above the threshold."""
    with_left = (
        pairs.union(texts)
        .repartition(partitions, keys=["key"])
        .map_batches(attach_text_batch, batch_format="pyarrow", batch_size=None)
    )
    verified = (
        with_left.union(texts)
        .repartition(partitions, keys=["key"])
        .map_batches(verify_batch, fn_kwargs={"config": config}, batch_format="pyarrow", batch_size=None)
    )
    edges: dict[tuple[str, str], float] = {}
    for batch in verified.iter_batches(batch_format="pyarrow", batch_size=None):
        for a, b, sim in zip(
            batch.column("a").to_pylist(),
            batch.column("b").to_pylist(),
            batch.column("similarity").to_pylist(),
            strict=True,
        ):
            edges[(ids[a], ids[b])] = sim
    return edges


def _put_bands(ray: ModuleType, source: BandRows, number: dict[str, int]) -> tuple[Any, int]:
    """A dataset of the ``(band_key, gid)`` rows of ``source`` (groups by number), put block by
    block, and its row count."""
    import pyarrow as pa

    refs = []
    total = 0
    for rows in source.blocks(_BAND_ROWS):
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        gids = np.fromiter((number[r[1]] for r in rows), dtype=np.int64, count=len(rows))
        refs.append(ray.put(pa.table({"band_key": keys, "gid": gids})))
        total += len(rows)
    return ray.data.from_arrow_refs(refs) if refs else None, total


def _put_all_texts(ray: ModuleType, store: Store) -> tuple[list[str], Any]:
    """Every group id in order, and a dataset of text rows ``(number, -1, text)``: one scan, put block
    by block."""
    ids: list[str] = []
    refs = []
    for rows in store.groups.group_text_blocks(_TEXT_ROWS):
        first = len(ids)
        ids.extend(r[0] for r in rows)
        refs.append(ray.put(_text_rows(first, [r[1] for r in rows])))
    return ids, _text_dataset(ray, refs)


def _put_texts(ray: ModuleType, store: Store, ids: list[str]) -> Any:
    """A dataset of text rows ``(number, -1, text)`` of groups ``ids`` (sorted), put block by block."""
    refs = []
    for first in range(0, len(ids), _TEXT_ROWS):
        part = ids[first : first + _TEXT_ROWS]
        text = store.groups.group_texts(part)
        refs.append(ray.put(_text_rows(first, [text[g] for g in part])))
    return _text_dataset(ray, refs)


def _text_rows(first: int, texts: list[str]) -> pa.Table:
    """Text rows of groups numbered ``first``, ``first + 1``, ..."""
    return _rows(np.arange(first, first + len(texts), dtype=np.int64), np.full(len(texts), -1), texts)


def _text_dataset(ray: ModuleType, refs: list[Any]) -> Any:
    return ray.data.from_arrow_refs(refs or [ray.put(_rows([], [], []))])
