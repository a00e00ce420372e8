"""``ingest_ray``: the local ingest's stages with the per-document work mapped over Ray.

Ray runs, over batches, the same functions the local ingest runs: file hashing, parsing and
boilerplate candidate keys (map over files); the corpus document frequency of candidate keys
(map + reduce by key); strip, chunk and exact keys with the chrome decision broadcast, and the
MinHash signatures and band keys of each group (map over documents); then LSH banding (shuffle by
band key) and candidate verification (shuffles by group, texts travelling with the pairs), see
:mod:`chunkdedup.distributed.edges`. The driver is the index's single writer: it writes the workers'
results through the same ``Store`` methods, in the same transactional batches, as the local ingest,
and runs the same ``update_clusters``, whose leader clustering walks the verified edges from Ray by
the rule it walks the store's band neighbours with. So the index is the one local ingest writes,
field for field.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from chunkdedup.config import Config
from chunkdedup.dedup.near import update_clusters
from chunkdedup.distributed import stages
from chunkdedup.distributed.edges import NearPass, near_edges_on_ray
from chunkdedup.distributed.session import cluster_cpus, import_ray, ray_session
from chunkdedup.embed import Embedder
from chunkdedup.parse import InputFile
from chunkdedup.parse.discover import survey
from chunkdedup.pipeline import (
    STORE_BATCH,
    IngestReport,
    Progress,
    config_fingerprint,
    decide_chrome,
    prune_missing,
    refresh_contexts,
    refresh_stale_keys,
    run_totals,
    scratch_copy,
    store_file,
)
from chunkdedup.store import Store, textindex
from chunkdedup.store.index import Index
from chunkdedup.types import FileResult, FileStatus

_FILES_PER_BLOCK = 64
_DOCS_PER_BATCH = 16


@dataclass(slots=True)
class _Clock:
    """Wall seconds per stage, for the report (``totals["engine"]["seconds"]``)."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start


def ingest_ray(
    paths: Sequence[str | Path],
    index: str | Path,
    *,
    manifest: str | Path | None = None,
    config: Config | None = None,
    address: str | None = None,
    parallelism: int | None = None,
    progress: Progress | None = None,
    lock_timeout: float = 30.0,
    prune: bool = False,
    dry_run: bool = False,
    embedder: Embedder | None = None,
    reembed: bool = False,
    text_engine: str | None = None,
) -> IngestReport:
    """Ingest files into an index like :func:`chunkdedup.ingest`, with the per-document stages on Ray.

    Uses the Ray this process is connected to; else connects to ``address`` (``"auto"``,
    ``"ray://host:10001"``); else starts a local Ray with ``parallelism`` (default: every core)
    CPUs and shuts it down afterwards. ``parallelism`` also caps the concurrent map tasks.
    ``prune``, ``dry_run``, ``embedder``, ``reembed`` and ``text_engine`` mean what they mean for
    :func:`chunkdedup.ingest` (a dry run works on a scratch copy of the index, as locally).

    Example:
        >>> report = ingest_ray(["docs/"], "index.sqlite", parallelism=8)  # doctest: +SKIP
        >>> report.totals["canonical_chunks"], report.totals["engine"]["seconds"]  # doctest: +SKIP
    """
    import_ray()  # a missing extra fails before the index is touched
    textindex.require(text_engine)
    run = partial(
        _ingest,
        paths,
        manifest=manifest,
        config=config,
        address=address,
        parallelism=parallelism,
        progress=progress,
        lock_timeout=lock_timeout,
        prune=prune,
        embedder=embedder,
        reembed=reembed,
        text_engine=text_engine,
    )
    if not dry_run:
        return run(index, dry_run=False)
    with scratch_copy(index) as scratch:
        return replace(run(scratch, dry_run=True), run_id=None, dry_run=True)


def _ingest(
    paths: Sequence[str | Path],
    index: str | Path,
    *,
    manifest: str | Path | None,
    config: Config | None,
    address: str | None,
    parallelism: int | None,
    progress: Progress | None,
    lock_timeout: float,
    prune: bool,
    embedder: Embedder | None,
    reembed: bool,
    text_engine: str | None,
    dry_run: bool,
) -> IngestReport:
    cfg = config or Config()
    found = survey(paths, manifest, cfg.parse)
    inputs = found.inputs
    tick = progress or (lambda stage, done, total: None)
    clock = _Clock()
    with (
        ray_session(address, parallelism) as ray,
        Store.open(index, create=True) as store,
        store.writer(lock_timeout),
    ):
        workers = parallelism or cluster_cpus(ray)
        run_id = store.begin_run(
            [str(Path(p).resolve()) for p in paths],
            str(Path(manifest).resolve()) if manifest else None,
            cfg.to_dict(),
        )
        if text_engine is not None:
            textindex.set_engine(store, text_engine)
        if prune:  # first, as locally: a moved corpus takes over its ids
            prune_missing(store, inputs, run_id)
        with clock("parse (Ray map)"):
            parsed = _parse_dataset(ray, store, inputs, cfg, workers)
        with clock("parse (store)"):
            results, parsed_docs = _store_parsed(store, parsed, len(inputs), cfg, run_id, tick)
            results += found.unread  # entries of the folders that are not read, each with why
        fingerprint = config_fingerprint(cfg)
        with clock("boilerplate"):
            refresh_stale_keys(store, fingerprint, cfg, tick)
            stored = {d for r in results if r.status == FileStatus.INGESTED for d in r.doc_ids}
            # The Ray reduce sees only this run's documents: it decides when they are all there are.
            fresh = set(store.doc_ids()) == stored
            counts = _unit_counts(parsed, cfg, workers) if fresh and cfg.boilerplate.enabled else None
            decide_chrome(store, cfg, counts, store.unit_total() if counts is not None else None)
        if cfg.near.enabled and store.meta("near_hashing") is None:
            # A new index: record the near settings first, so the signatures written below are kept.
            update_clusters(store, cfg, run_id)
        textindex.defer_fts(store)
        with clock("chunk + sign (Ray map, store)"):
            chunked, signed = _chunk(ray, store, parsed, parsed_docs, fingerprint, cfg, run_id, workers, tick)
            refresh_contexts(store, cfg, run_id)
        passes: list[NearPass | None] = []
        spent: list[float] = []

        def ray_edges() -> dict[tuple[str, str], float] | None:
            start = time.perf_counter()
            passes.append(near_edges_on_ray(ray, store, cfg.near, workers, clock))
            spent.append(time.perf_counter() - start)
            return passes[0].edges if passes[0] is not None else None

        with clock("cluster (local)"):
            near = update_clusters(
                store, cfg, run_id, tick, near_edges=ray_edges, embedder=embedder, reembed=reembed
            )
        clock.seconds["cluster (local)"] -= sum(spent)  # the near-edge stages, timed on their own
        text = None
        if not dry_run:
            with clock("text index (driver)"):
                text = textindex.sync(store, tick)
        view = Index(store)
        report_totals = run_totals(results, view.stats(), chunked, near, text, signed=signed)
        report_totals["engine"] = {
            "name": "ray",
            "workers": workers,
            "chrome_counts": "ray" if counts is not None else "store",
            # where the near tier's banding and verification ran ("ray", or "store" after a fallback);
            # None: nothing to re-cluster
            "near_edges": ("ray" if passes[0] is not None else "store") if passes else None,
            # the Ray near pass: group texts shipped, candidate pairs verified (those with a group
            # not edged yet; the edges of the others are kept in the index)
            "near_pass": (
                {"groups_shipped": passes[0].shipped, "pairs_verified": passes[0].verified}
                if passes and passes[0] is not None
                else None
            ),
            "seconds": {k: round(v, 3) for k, v in clock.seconds.items()},
        }
        report = IngestReport(run_id, tuple(results), report_totals, tuple(view.boilerplate(limit=10)))
        store.finish_run(run_id, report_totals)
    return report


def _parse_dataset(ray: ModuleType, store: Store, inputs: list[InputFile], cfg: Config, workers: int) -> Any:
    """Materialised dataset of ``(i, ParsedInput)``: hash, parse and key every file on the workers."""
    rows = []
    for i, inp in enumerate(inputs):
        path = str(inp.path)
        known = store.file_hash(path) if store.docs_of_file(path) else None
        rows.append({"i": i, "payload": pickle.dumps((inp, known), protocol=pickle.HIGHEST_PROTOCOL)})
    # Enough blocks for every worker to get several (a JSONL or Parquet shard is one row here).
    blocks = max(1, min(len(rows), max(4 * workers, -(-len(rows) // _FILES_PER_BLOCK))))
    ds = ray.data.from_items(rows, override_num_blocks=blocks) if rows else ray.data.from_items([])
    if not rows:
        return ds
    return ds.map_batches(
        stages.parse_batch,
        fn_kwargs={"config": cfg},
        batch_format="pyarrow",
        batch_size=8,
        compute=ray.data.TaskPoolStrategy(size=workers),
    ).materialize()


def _store_parsed(
    store: Store, parsed: Any, total: int, cfg: Config, run_id: int, tick: Progress
) -> tuple[list[FileResult], set[str]]:
    """Write parsed files in input order, ``STORE_BATCH`` files per transaction, as the local parse phase.

    Returns the results and the ids of every document the workers parsed (stored or refused)."""
    results: list[FileResult] = []
    parsed_docs: set[str] = set()
    pending: list[stages.ParsedInput] = []

    def flush() -> None:
        with store.transaction():
            for p in pending:
                results.append(store_file(store, p.input, p.content_hash, p.parsed, cfg, run_id, p.keys))
        pending.clear()
        tick("parse", len(results), total)

    tick("parse", 0, total)
    if total:
        for batch in parsed.iter_batches(batch_format="pyarrow", batch_size=None):
            for blob in batch.column("payload").to_pylist():
                p: stages.ParsedInput = pickle.loads(blob)
                if p.parsed is not None and p.parsed.status == FileStatus.INGESTED:
                    parsed_docs.update(d.doc_id for d in p.parsed.documents)
                pending.append(p)
                if len(pending) == STORE_BATCH:
                    flush()
    if pending:
        flush()
    return results, parsed_docs


def _unit_counts(parsed: Any, cfg: Config, workers: int) -> dict[int, int] | None:
    """Units per candidate key, for keys in at least ``min_units`` units: a map to ``(khash, unit)``
    rows, a hash shuffle by ``khash``, and a vectorised count of distinct units in each partition.

    ``None`` if a key came back from two partitions (the shuffle did not keep a key together): the
    caller then counts in the store.
    """
    pairs = parsed.map_batches(stages.unit_keys_batch, batch_format="pyarrow", batch_size=64)
    shuffled = pairs.repartition(max(1, workers), keys=["khash"])
    per_key = shuffled.map_batches(
        stages.count_units_batch,
        fn_kwargs={"min_units": cfg.boilerplate.min_units},
        batch_format="pyarrow",
        batch_size=None,
    )
    counts: dict[int, int] = {}
    for batch in per_key.iter_batches(batch_format="pyarrow", batch_size=None):
        for khash, n in zip(
            batch.column("khash").to_pylist(), batch.column("units").to_pylist(), strict=True
        ):
            if khash in counts:
                return None
            counts[khash] = n
    return counts


def _chunk(
    ray: ModuleType,
    store: Store,
    parsed: Any,
    parsed_docs: set[str],
    fingerprint: str,
    cfg: Config,
    run_id: int,
    workers: int,
    tick: Progress,
) -> tuple[int, int]:
    """Chunk and sign on the workers; write each document's chunks and its groups' signatures."""
    todo = store.docs_to_chunk(fingerprint)
    if not todo:
        return 0, 0
    wanted = set(todo)
    chrome = store.chrome_ids()
    # Documents parsed this run come from the parsed dataset; others that need re-chunking (chrome
    # or config changed) from the index. Parsed documents the index refused are skipped.
    docs = ray.data.from_items([])
    if parsed_docs:
        docs = parsed.map_batches(
            stages.documents_batch, fn_kwargs={"skip": parsed_docs - wanted}, batch_format="pyarrow"
        )
    leftover = [d for d in todo if d not in parsed_docs]
    if leftover:
        rows = [
            {"doc_id": d, "payload": pickle.dumps(store.load_pages(d), protocol=pickle.HIGHEST_PROTOCOL)}
            for d in leftover
        ]
        extra = ray.data.from_items(rows, override_num_blocks=max(1, len(rows) // _FILES_PER_BLOCK))
        docs = extra if not parsed_docs else docs.union(extra)
    # A parsed shard yields many documents: split its block so every worker gets some.
    docs = docs.repartition(target_num_rows_per_block=4 * _DOCS_PER_BATCH)
    chunked = docs.map_batches(
        stages.chunk_batch,
        fn_kwargs={"chrome": chrome, "config": cfg},
        batch_format="pyarrow",
        batch_size=_DOCS_PER_BATCH,
        compute=ray.data.TaskPoolStrategy(size=workers),
    )
    signed: set[str] = set()
    pending: list[stages.ChunkedDoc] = []
    done = 0

    def flush() -> None:
        nonlocal done
        with store.transaction():
            store.replace_chunks([rec.doc for rec in pending], fingerprint, run_id)
            rows = [r for rec in pending for r in rec.signatures if r[0] not in signed]
            store.chunks.set_signatures(rows)
            signed.update(r[0] for r in rows)
        done += len(pending)
        pending.clear()
        tick("chunk", done, len(todo))

    for batch in chunked.iter_batches(batch_format="pyarrow", batch_size=None):
        for blob in batch.column("payload").to_pylist():
            pending.append(pickle.loads(blob))
            if len(pending) == STORE_BATCH:
                flush()
    if pending:
        flush()
    return len(todo), len(signed)
