"""``ingest``: the one ingest sequence, readable top to bottom (:func:`ingest_with`).

1. discover inputs; parse and key new and changed files (on the executor); store their pages and
   boilerplate candidate keys;
2. prune files gone from the input (``prune=True``);
3. decide corpus chrome from the document frequencies kept in the store;
4. strip, chunk, exact-key and sign every document that is new, changed, chunked under another
   config, or whose chrome keys changed (on the executor); store each batch in one transaction;
5. write the documents' contexts; re-decide the near clusters of every group a change touched (the
   executor may compute the verified near edges); build the text index.

The per-document stages are pure functions (:mod:`chunkdedup.ingestion.stages`) whose results are written in
input order, so every :class:`~chunkdedup.ingestion.executors.Executor` (this process, a process pool, Ray)
writes the same index. Because every decision is a rule on the stored data (never on arrival
order), ingesting a corpus in batches, removing documents, or ingesting it at once give the same
index too.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkdedup.config import Config
from chunkdedup.dedup.settings import NUMPY_CHARS, NUMPY_KEYS, near_hashing
from chunkdedup.errors import ConfigError
from chunkdedup.index import Index
from chunkdedup.ingestion.clusters import (
    CLUSTER_PAGE_CACHE_KIB,
    HeldBands,
    NearKeyer,
    start_hashing,
    update_clusters,
)
from chunkdedup.ingestion.collector import collect_young, collector_paused
from chunkdedup.ingestion.context import CONTEXT_FORMAT, document_contexts
from chunkdedup.ingestion.executors import Executor, LocalExecutor, StageClock
from chunkdedup.ingestion.files import StoreQueue, prune_missing, store_file
from chunkdedup.ingestion.report import (
    ClusterPass,
    FileCounts,
    IngestReport,
    RemovedFile,
    RunTotals,
    TextIndexTotals,
    emptied_notes,
    manifest_notes,
)
from chunkdedup.ingestion.sliced import AtHand, store_sliced
from chunkdedup.ingestion.stages import (
    ChunkedBatch,
    ChunkJob,
    ParsedInput,
    ParseJob,
    chunk_documents,
    fingerprint_inputs,
    is_unchanged,
    parse_inputs,
)
from chunkdedup.ingestion.warmup import CHUNK_KERNELS, PARSE_KERNELS, Warmup
from chunkdedup.normalize import key_hash
from chunkdedup.parse import InputFile
from chunkdedup.parse.discover import survey
from chunkdedup.parse.ocr import AWAITING_OCR, ocr_ready
from chunkdedup.parse.registry import from_print
from chunkdedup.parse.slices import sliceable
from chunkdedup.store import DOC_KEYS_FORMAT, Store, copy_index, textindex, vectorindex
from chunkdedup.store.index_errors import SQLITE_FAILURES, index_error
from chunkdedup.store.run_tables import recorded_config_of
from chunkdedup.text import boilerplate
from chunkdedup.types import FileResult, FileStatus, KnownFile, Page

if TYPE_CHECKING:
    from chunkdedup.embed import Embedder

logger = logging.getLogger(__name__)

#: progress(stage, done, total)
Progress = Callable[[str, int, int], None]
#: documents given otherwise than as files (:func:`chunkdedup.ingestion.memory.ingest_records`), stored in
#: the parse phase: (store, config, run id, progress, pages at hand by doc id) -> their results
SourcePhase = Callable[[Store, Config, int, Progress, dict[str, tuple[Page, ...]]], list[FileResult]]

#: documents (or files) written per transaction, at most: each commit syncs the WAL and re-walks the
#: B-trees it touches, so 32 a transaction spent a fifth of a fresh ingest committing. The chunk
#: phase's commits grow with the index (its group and cluster indexes are keyed by hash, so a batch
#: dirties most of their pages): at 1M chunks 1,024 a transaction spent 20.7 s in 49 commits, 4,096
#: 10.6 s in 13 (cProfile, same corpus); STORE_BATCH_CHARS still bounds the text a batch holds
STORE_BATCH = 4096
#: page text (characters) held for one transaction, at most: a batch of large documents commits early,
#: so memory stays bounded whatever the documents' sizes
STORE_BATCH_CHARS = 64 * 1024 * 1024
#: page text (characters) the parse phase stores a transaction, at most: a quarter of a chunk
#: batch's, so a pool's workers parse the next files while the writer stores these (at one batch of
#: 64 MB, ten 6.7 MB shards were stored only once all were parsed)
PARSE_BATCH_CHARS = STORE_BATCH_CHARS // 4
#: page text (characters) the parse phase hands to the chunk phase as parsed, at most: those documents'
#: pages are not read back and decompressed (50k records: 0.8-1.0 s of CPU); the rest are read back
AT_HAND_CHARS = 128 * 1024 * 1024
#: documents handed so, at most: a page and its tuple cost some 200 bytes beyond its text, so a
#: million tiny records held so were over 300 MB until the chunk phase took them
AT_HAND_DOCS = 65_536
#: files per parse job: a few, so a pool's round trips stay cheap next to the parsing
PARSE_JOB_FILES = 8
#: input bytes per parse job, at most (a larger file is a job of its own): the results are taken in
#: input order, so one job of eight large shards would keep the writer and the other workers waiting
#: for it (ten 6.7 MB JSONL shards in jobs of eight: the parse phase took 7.1 s on two workers
#: against 5.0 s in one process)
PARSE_JOB_BYTES = 4 * 1024 * 1024


def config_fingerprint(config: Config) -> str:
    """A hash of the settings that decide a document's chunks (so a change re-chunks it)."""
    relevant = {
        "boilerplate": config.to_dict()["boilerplate"],
        "chunk": config.to_dict()["chunk"],
        "dedup": config.to_dict()["dedup"],
    }
    return key_hash(json.dumps(relevant, sort_keys=True))


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """How to run an ingest (everything but the inputs, the index and the executor).

    ``manifest``: a JSONL file of per-file metadata; ``prune``: remove indexed files no longer among
    the inputs; ``dry_run``: do the work on a scratch copy and write nothing; ``progress(stage, done,
    total)``: called as stages advance; ``lock_timeout``: seconds to wait for the writer lock;
    ``config``: ``None`` builds with the config the index was last built with (the defaults for a new
    index), so a setting that changes what the index holds (the semantic tier, chunk sizes, the
    guards) never flips because a run did not repeat it; a config that differs from the recorded one
    is taken, and the report names each setting it changed.
    ``embedder`` overrides ``config.semantic.embedder`` when the semantic tier is enabled; ``reembed``
    drops the vectors of an index embedded with another model; ``text_engine`` (``fts5`` or
    ``tantivy``, see :mod:`chunkdedup.store.textindex`) switches the index's BM25 engine (``None``
    keeps the one it has). ``kernels``: whether the stages take the compiled kernels: ``None`` where
    a stage is large enough, taking the NumPy twins while numba's cache is cold and a process of its
    own compiles them (:class:`~chunkdedup.ingestion.warmup.Warmup`); ``True`` at any size; ``False``
    never. The index is the same either way.
    """

    manifest: str | Path | None = None
    config: Config | None = None
    prune: bool = False
    dry_run: bool = False
    progress: Progress | None = None
    lock_timeout: float = 30.0
    embedder: Embedder | None = None
    reembed: bool = False
    text_engine: str | None = None
    kernels: bool | None = None


def ingest(
    paths: Sequence[str | Path],
    index: str | Path,
    *,
    manifest: str | Path | None = None,
    config: Config | None = None,
    prune: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
    lock_timeout: float = 30.0,
    embedder: Embedder | None = None,
    reembed: bool = False,
    text_engine: str | None = None,
    workers: int | None = 1,
    kernels: bool | None = None,
) -> IngestReport:
    """Ingest files into an index; with ``dry_run`` nothing is written to ``index``.

    The keywords are those of :class:`IngestOptions`; ``workers`` > 1 (``None``: one per core but the
    writer's) runs the per-document stages in that many processes
    (:class:`~chunkdedup.ingestion.executors.LocalExecutor`), with the same result.

    Example:
        >>> report = ingest(["docs/"], "index.sqlite", manifest="docs/manifest.jsonl")  # doctest: +SKIP
        >>> report.totals["canonical_chunks"]  # doctest: +SKIP
    """
    options = IngestOptions(
        manifest, config, prune, dry_run, progress, lock_timeout, embedder, reembed, text_engine, kernels
    )
    return ingest_with(paths, index, options, LocalExecutor(workers))


def ingest_with(
    paths: Sequence[str | Path],
    index: str | Path,
    options: IngestOptions,
    executor: Executor,
    *,
    source: SourcePhase | None = None,
) -> IngestReport:
    """The one ingest sequence, its per-document stages run by ``executor`` (entered here when the
    caller has not entered it): parse and key -> store -> chrome from the stored unit counts ->
    strip, chunk, key and sign -> store -> contexts -> near edges and clusters -> text index.
    ``source`` stores documents given in memory before the files
    (:func:`chunkdedup.ingestion.memory.ingest_records`).

    Example:
        >>> from chunkdedup import IngestOptions, LocalExecutor, ingest_with
        >>> ingest_with(["docs/"], "index.sqlite", IngestOptions(), LocalExecutor(4))  # doctest: +SKIP
    """
    cfg, changed = run_config(index, options.config)
    found = survey(paths, options.manifest, cfg.parse)
    textindex.require(options.text_engine)  # a bad name or a missing extra fails before the index is touched
    notes = manifest_notes(found.unlisted, options.manifest) + changed
    run = _Run(found.inputs, paths, options, cfg, found.unread, notes, source)
    started = time.perf_counter()
    dry = " (a dry run: nothing is written)" if options.dry_run else ""
    logger.info("ingest into %s starts: %d input files%s", index, len(found.inputs), dry)
    try:
        with executor, collector_paused():
            if not options.dry_run:
                report = _run(run, Path(index), executor)
            else:
                with scratch_copy(index) as scratch:
                    report = replace(_run(run, scratch, executor), run_id=None, dry_run=True)
    except SQLITE_FAILURES as e:  # a damaged index, a full disk, an I/O error: each named, with the way out
        raise index_error(index, e) from e
    log_report(report, index, time.perf_counter() - started)
    return report


@contextmanager
def _phase(clock: StageClock, stage: str) -> Iterator[None]:
    """``clock(stage)``, logged: the phase's start at DEBUG, its end with its wall seconds at INFO."""
    logger.debug("%s phase starts", stage)
    start = time.perf_counter()
    with clock(stage):
        yield
    logger.info("%s phase done in %.2f s", stage, time.perf_counter() - start)


def log_report(report: IngestReport, index: str | Path, seconds: float) -> None:
    """Log the end of a run with its totals (INFO), and what its report says a person should read
    (failed files, files ingested with a note, the run's notes) at WARNING."""
    t = report.totals
    files = ", ".join(f"{n} {status}" for status, n in t.files.to_json().items() if n) or "none found"
    logger.info(
        "ingest into %s done in %.2f s (run %s): files %s; %d documents chunked, %d removed; "
        "%d raw chunks -> %d canonical",
        index, seconds, report.run_id, files, t.documents_chunked, t.documents_removed,
        t.stats.raw_chunks, t.stats.canonical_chunks,
    )
    for f in report.files:
        if f.status == FileStatus.FAILED:
            logger.warning("failed %s: %s", f.path, f.reason)
        elif f.status == FileStatus.INGESTED and f.reason:
            logger.warning("note %s: %s", f.path, f.reason)
        elif f.status == FileStatus.SKIPPED:
            logger.debug("skipped %s: %s", f.path, f.reason)
    for note in report.notes:
        logger.warning("note: %s", note)


@dataclass(frozen=True, slots=True)
class _Run:
    """One ingest run's inputs and options."""

    inputs: list[InputFile]
    paths: Sequence[str | Path]
    options: IngestOptions
    #: the config the run builds with (:func:`run_config`)
    config: Config
    #: entries of the folder arguments that are not read (unsupported, hidden, unlistable, ...)
    unread: Sequence[FileResult] = ()
    #: what the report says of the run as a whole (inputs the manifest does not list)
    notes: tuple[str, ...] = ()
    #: documents given in memory, stored before the files
    source: SourcePhase | None = None


@contextmanager
def scratch_copy(index: str | Path) -> Iterator[Path]:
    """A temporary copy of ``index`` (or a fresh path when it does not exist yet), removed afterwards:
    a dry run does the real work there, so it shows exactly what a run would do."""
    with tempfile.TemporaryDirectory(prefix="chunkdedup-dry-") as tmp:
        scratch = Path(tmp) / "dry-run.sqlite"
        if Path(index).exists():
            copy_index(Path(index), scratch)
        yield scratch


def recorded_config(index: str | Path) -> Config | None:
    """The config ``index`` was last built with (``None``: no index yet, or no finished run)."""
    if not Path(index).exists() or Path(index).stat().st_size == 0:
        return None
    # read as it is: an older index is not migrated (a dry run leaves it so), and one another first
    # ingest is creating right now holds no run yet
    return recorded_config_of(index)


def run_config(index: str | Path, given: Config | None) -> tuple[Config, tuple[str, ...]]:
    """The config a run builds ``index`` with, and a note naming each setting that differs from the
    one it was last built with (none for a new index, or when ``given`` is ``None``: the recorded
    config, else the defaults)."""
    recorded = recorded_config(index)
    if given is None:
        return recorded or Config(), ()
    if recorded is None:
        return given, ()
    diffs = _setting_changes(recorded.to_dict(), given.to_dict())
    if not diffs:
        return given, ()
    shown = "; ".join(diffs[:12]) + (f"; and {len(diffs) - 12} more" if len(diffs) > 12 else "")
    return given, (
        f"settings changed from the index's last run ({shown}): what they decide is built again; "
        "an ingest without a config keeps the index's own",
    )


def _setting_changes(was: dict[str, Any], now: dict[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for key in sorted(set(was) | set(now)):
        a, b = was.get(key), now.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.extend(_setting_changes(a, b, f"{prefix}{key}."))
        elif a != b:
            out.append(f"{prefix}{key} {json.dumps(a)} -> {json.dumps(b)}")
    return out


def _run(run: _Run, index: Path, executor: Executor) -> IngestReport:
    opts = run.options
    cfg = run.config
    tick = opts.progress or (lambda stage, done, total: None)
    clock = StageClock()
    warm = Warmup(opts.kernels)
    keyer = NearKeyer(cfg.near)  # names a group's band rows from its text
    with Store.open(index, create=True, keyer=keyer) as store, store.writer(opts.lock_timeout):
        run_id = store.runs.begin_run(
            [str(Path(p).resolve()) for p in run.paths],
            str(Path(opts.manifest).resolve()) if opts.manifest else None,
            cfg.to_dict(),
        )
        if opts.text_engine is not None:
            textindex.set_engine(store, opts.text_engine)
        removed: list[RemovedFile] = []
        if opts.prune:  # first, so a moved corpus takes over its ids instead of colliding with itself
            removed = prune_missing(store, run.inputs, run_id)
            logger.info(
                "prune: %d files no longer among the inputs removed (%d documents)",
                len(removed), sum(len(f.doc_ids) for f in removed),
            )
        with _phase(clock, "parse"):
            at_hand: dict[str, tuple[Page, ...]] = {}
            given = run.source(store, cfg, run_id, tick, at_hand) if run.source is not None else []
            results = given + _parse_phase(store, run.inputs, cfg, run_id, tick, executor, at_hand, warm)
            results += run.unread
        fingerprint = config_fingerprint(cfg)
        with _phase(clock, "boilerplate"):
            refresh_stale_keys(store, fingerprint, cfg, tick)
            decide_chrome(store, cfg)
        first = textindex.defer_fts(store)  # a first ingest (or one that was killed): no groups before
        start_hashing(store, cfg.near)
        keys: dict[str, str] = {}
        held = HeldBands(near_hashing(cfg.near)) if cfg.near.enabled else None
        emptied: list[str] = []
        with _phase(clock, "chunk"):
            chunked, signed = chunk_phase(
                store, fingerprint, cfg, run_id, tick, keys, executor, held, at_hand, emptied, warm
            )
            at_hand.clear()  # those of documents not chunked (unchanged records of a changed file)
        edges: list[bool] = []

        def near_edges() -> dict[tuple[str, str], float] | None:
            start = time.perf_counter()
            found = executor.near_edges(store, cfg.near, clock)
            edges.append(found is not None)
            clock.seconds["cluster"] = clock.seconds.get("cluster", 0.0) - (time.perf_counter() - start)
            return found

        # A first ingest's FTS5 tables are built from the texts as the chunk phase left them, on the
        # other core while the writer clusters (the cluster pass changes no text it indexes)
        prebuild = textindex.prebuilt_fts(store) if not opts.dry_run else nullcontext()
        with prebuild as fts:
            with _phase(clock, "cluster"), store.page_cache(CLUSTER_PAGE_CACHE_KIB):
                near = update_clusters(
                    store,
                    cfg,
                    run_id,
                    tick,
                    embedder=opts.embedder,
                    reembed=opts.reembed,
                    near_edges=near_edges,
                    known=keys,
                    held=held,
                    compiled=warm.cluster_pass(),
                )
            logger.debug(
                "cluster pass: %d groups re-clustered, %d merged, %d version pairs",
                near.reclustered, near.merged, near.variants,
            )
            with _phase(clock, "text index"):
                text = textindex.sync(store, tick, prebuilt=fts) if not opts.dry_run else None
        with _phase(clock, "vector index"):  # derived, as the text folder: the HNSW graph beside the file
            vectors = vectorindex.sync(store, run=run_id, progress=tick) if not opts.dry_run else None
        if first and not opts.dry_run:  # its id indexes were written in no order: written again, packed
            store.pack_indexes()
        store.reclaim()
        view = Index(store)
        # where the near tier's edges came from: the executor's pass, the store's band neighbours,
        # or nowhere (nothing to re-cluster)
        came_from = (executor.name if edges[0] else "store") if edges else None
        engine = replace(executor.engine_totals(), near_edges=came_from, seconds=clock.rounded())
        derived = text is not None and text.engine != "fts5"  # tantivy: a folder beside the file
        summary = RunTotals(
            FileCounts.of(results, removed=len(removed)),
            chunked,
            view.stats(),
            ClusterPass(near.signed + signed, near.reclustered, near.merged, near.variants),
            engine,
            TextIndexTotals(text.engine, text.rebuilt, text.groups) if text is not None and derived else None,
            vectors if vectors is not None and vectors.built else None,
            documents_removed=sum(len(f.doc_ids) for f in removed),
        )
        top = tuple(view.boilerplate(limit=10))
        notes = run.notes + emptied_notes(sorted(emptied))
        report = IngestReport(run_id, tuple(results), summary, top, opts.dry_run, notes, tuple(removed))
        store.runs.finish_run(run_id, summary.to_json())
    return report


def _parse_phase(
    store: Store,
    inputs: list[InputFile],
    cfg: Config,
    run_id: int,
    tick: Progress,
    executor: Executor,
    at_hand: dict[str, tuple[Page, ...]] | None = None,
    warm: Warmup | None = None,
) -> list[FileResult]:
    """Parse and key the new and changed files on the executor; store them in input order, at most
    ``STORE_BATCH`` files or ``PARSE_BATCH_CHARS`` of page text a transaction. The pages of the
    documents of the files stored go to ``at_hand`` (by doc id), up to ``AT_HAND_CHARS`` of text and
    ``AT_HAND_DOCS`` documents. A large JSON Lines file is stored a slice of records at a time
    (:func:`~chunkdedup.ingestion.sliced.store_sliced`).
    ``warm``: the run's use of the compiled kernels."""
    warm = warm or Warmup()
    results: list[FileResult] = []
    pending: list[ParsedInput] = []
    chars = 0
    hand = AtHand(at_hand, AT_HAND_CHARS, AT_HAND_DOCS) if at_hand is not None else None
    # Under other parse settings than the last run's, nothing parsed before is known: every file is
    # parsed and every document stored again (its pages may be cut otherwise now).
    last = store.runs.last_config()
    same_parse = last is None or last.to_dict()["parse"] == cfg.to_dict()["parse"]

    # the stored doc ids of each changed file, from what the parse job was given (a file's documents
    # change only when that file is stored: the same ids at its flush), so they are not read again
    stored: dict[str, tuple[str, ...]] = {}
    reread: set[str] = set()

    def flush() -> None:
        with store.transaction():
            # the files' new and changed documents are stored together, once every file is decided
            queue = StoreQueue()
            for p in pending:
                ids = stored.pop(str(p.input.path), None)
                keep = same_parse and str(p.input.path) not in reread
                result = store_file(
                    store, p.input, p.content_hash, p.parsed, cfg, run_id, p.keys, keep, ids, queue
                )
                results.append(result)
                if hand is not None and p.parsed is not None and result.status == FileStatus.INGESTED:
                    # a stored document's pages are these (an unchanged one's too: the same content hash)
                    hand.offer(p.parsed.documents)
            store.documents.put_documents(queue.documents, run_id)
        pending.clear()
        collect_young()

    # The files are hashed first (on the executor) and only the changed ones parsed: what the index
    # knows of a file's documents (a read of every row of its own) is then read for those alone, not
    # for the unchanged shards that are most of an incremental run's files.
    sizes = [_size(i) for i in inputs]
    hashes: list[str | None] = [None] * len(inputs)
    if same_parse and inputs:
        parts = (tuple(inputs[i] for i in part) for part in job_parts(range(len(inputs)), sizes))
        hashes = [h for part in executor.map(fingerprint_inputs, parts) for h in part]
    # an index without documents knows no file (a first ingest: no lookup per file; a file's rows
    # are written only by its own flush, so this holds for the whole phase)
    first = not store.documents.has_documents()
    unchanged = [
        not first and is_unchanged(h, store.documents.known_hash(str(i.path)))
        for i, h in zip(inputs, hashes, strict=True)
    ]
    # a PDF whose scanned pages OCR could not read when it was ingested is read again once it can:
    # parsed though its bytes are the same, and its documents stored again though their hash is
    reread.update(store.documents.files_noting(AWAITING_OCR) if not first and same_parse else ())
    if reread and not ocr_ready(cfg.parse):
        reread.clear()
    unchanged = [same and str(i.path) not in reread for i, same in zip(inputs, unchanged, strict=True)]
    # a large JSON Lines file is parsed and stored here a slice of records at a time (store_sliced), not
    # as a parse job whose result holds every record
    sliced = {i for i in range(len(inputs)) if not unchanged[i] and sliceable(inputs[i], cfg.parse)}
    todo = [i for i in range(len(inputs)) if not unchanged[i] and i not in sliced]

    def known(inp: InputFile) -> KnownFile:
        if first:
            stored[str(inp.path)] = ()
            return KnownFile()
        if not same_parse:
            return KnownFile()
        held = store.documents.known_file(str(inp.path))
        stored[str(inp.path)] = tuple(row[1] for row in held.documents)
        return replace(held, content_hash=None) if str(inp.path) in reread else held

    def jobs() -> Iterator[ParseJob]:
        # a run of a few small files keys its pages on the str path (the same keys, no numba start-up)
        # until the files read pass NUMPY_CHARS bytes; a larger run uses the compiled walk from the start
        # (while numba's cache is cold, until the kernels are compiled: see Warmup)
        loaded = 0 if len(todo) <= NUMPY_KEYS else NUMPY_CHARS + 1
        for part in job_parts(todo, sizes):
            files = tuple((inputs[i], known(inputs[i])) for i in part)
            loaded += sum(sizes[i] for i in part) if loaded <= NUMPY_CHARS else 0
            compiled = warm.compiled(loaded > NUMPY_CHARS, PARSE_KERNELS)
            yield ParseJob(files, cfg, tuple(hashes[i] for i in part), compiled=compiled)

    logger.debug(
        "parse: %d of %d input files unchanged, %d to parse, %d read a slice at a time",
        sum(unchanged), len(inputs), len(todo), len(sliced),
    )
    tick("parse", 0, len(inputs))
    parsed = (p for batch in executor.map(parse_inputs, jobs()) for p in batch)
    for done, (inp, h, same) in enumerate(zip(inputs, hashes, unchanged, strict=True), start=1):
        if done - 1 in sliced:
            if pending:
                flush()
                chars = 0
            keep = same_parse and str(inp.path) not in reread
            held = known(inp)
            ids = stored.pop(str(inp.path), None)
            results.append(
                store_sliced(
                    store, inp, h, held, cfg, run_id, keep_unchanged=keep, stored=ids, at_hand=hand,
                    compiled=warm.compiled(True, PARSE_KERNELS),
                )
            )
            collect_young()
            continue
        p = ParsedInput(inp, h, None) if same else next(parsed)
        pending.append(p)
        if p.parsed is not None:
            chars += sum(len(pg.text) for d in p.parsed.documents for pg in d.pages)
        if len(pending) >= STORE_BATCH or chars >= PARSE_BATCH_CHARS:
            flush()
            chars = 0
        if done % PARSE_JOB_FILES == 0 or done == len(inputs):
            tick("parse", done, len(inputs))
    if pending:
        flush()
    return results


def job_parts(items: Sequence[int], sizes: Sequence[int]) -> Iterator[list[int]]:
    """``items`` (indexes into ``sizes``) in consecutive parts of at most ``PARSE_JOB_FILES`` files
    and ``PARSE_JOB_BYTES`` bytes, each part holding one file at least.

    Example:
        >>> list(job_parts([0, 1, 2, 3], [5 << 20, 1 << 20, 1 << 20, 1 << 20]))
        [[0], [1, 2, 3]]
    """
    part: list[int] = []
    held = 0
    for i in items:
        if part and (len(part) >= PARSE_JOB_FILES or held + sizes[i] > PARSE_JOB_BYTES):
            yield part
            part, held = [], 0
        part.append(i)
        held += sizes[i]
    if part:
        yield part


def _size(inp: InputFile) -> int:
    """The size of an input file in bytes (0 when it cannot be read: its parse says why)."""
    try:
        return inp.path.stat().st_size
    except OSError:
        return 0


def refresh_stale_keys(store: Store, fingerprint: str, cfg: Config, tick: Progress) -> None:
    """Documents chunked under another config get their boilerplate keys recomputed first (every
    document, once, when the index's keys were written in an older format)."""
    stamp = store.settings.stamp("doc_keys_format", DOC_KEYS_FORMAT)
    stale = store.documents.doc_ids(stale_config=None if stamp.changed else fingerprint)
    for i in range(0, len(stale), STORE_BATCH):
        with store.transaction():
            store.boilerplate.set_many_doc_keys(
                [
                    (doc_id, boilerplate.document_keys(store.documents.load_pages(doc_id), cfg.boilerplate))
                    for doc_id in stale[i : i + STORE_BATCH]
                ]
            )
        tick("boilerplate", min(i + STORE_BATCH, len(stale)), len(stale))
    if stamp.changed:
        with store.transaction():
            store.settings.done(stamp)


def decide_chrome(store: Store, cfg: Config) -> None:
    """Store the corpus-chrome keys, decided from the units per key the store counts (unless no
    document's keys or unit changed since they were decided under these settings)."""
    bp = cfg.boilerplate
    settings = key_hash(json.dumps(cfg.to_dict()["boilerplate"], sort_keys=True))
    if store.boilerplate.chrome_decided(settings):
        return
    with store.transaction():
        chrome: dict[int, int] = {}
        if bp.enabled:
            total = store.boilerplate.unit_total()
            # the changed keys recounted
            counts = store.boilerplate.kept_key_unit_counts(bp.min_units, settings)
            chrome = {k: n for k, n in counts.items() if boilerplate.is_chrome(n, total, bp)}
        store.boilerplate.set_chrome(chrome, settings)


def chunk_phase(
    store: Store,
    fingerprint: str,
    cfg: Config,
    run_id: int,
    tick: Progress,
    kept: dict[str, str],
    executor: Executor,
    bands: HeldBands | None = None,
    at_hand: dict[str, tuple[Page, ...]] | None = None,
    emptied: list[str] | None = None,
    warm: Warmup | None = None,
) -> tuple[int, int]:
    """Strip, chunk, key and sign the documents to chunk on the executor, a batch a job; write each
    batch in one transaction, in order. The exact keys of the groups go to ``kept`` (group id -> key):
    the cluster pass holds the key of every group it re-decides anyway (the guard and the word
    differences need them), and these need not be computed again. Into an index with no bands yet (a
    first ingest) the band keys go to ``bands``, for the cluster pass to write, and no key to ``kept``
    (that pass reads only the groups with a band neighbour); else to the stage.
    ``at_hand``: pages of documents as this run's parse phase stored them (taken from it as they are
    used), not read back. On an index with no groups, the group indexes it does not read are made
    once at its end (:meth:`GroupTables.defer_indexes`). ``emptied`` collects the documents whose every
    line boilerplate stripping removed (no chunk left). ``warm``: the run's use of the compiled kernels
    (:class:`~chunkdedup.ingestion.warmup.Warmup`). Returns (documents chunked, groups signed)."""
    warm = warm or Warmup()
    held_pages = at_hand if at_hand is not None else {}
    store.groups.defer_indexes()  # on an index with no groups: built once, below
    todo = store.documents.docs_to_chunk(fingerprint)
    logger.debug("chunk: %d documents to chunk", len(todo))
    hashing = near_hashing(cfg.near) if cfg.near.enabled else None

    # a chunk job holds a quarter of a transaction's documents and text, so several workers share a
    # batch and the jobs in flight hold a bounded amount of text; results are written a batch at a time
    job_docs, job_chars = max(1, STORE_BATCH // 4), max(1, STORE_BATCH_CHARS // 4)

    def jobs() -> Iterator[ChunkJob]:
        # a run of a few documents signs with the NumPy paths (the same band keys, no numba start-up),
        # until its text passes NUMPY_CHARS; a larger run uses the kernels from the start (once they are
        # compiled: see Warmup)
        loaded = 0 if len(todo) <= NUMPY_KEYS else NUMPY_CHARS + 1
        i = 0
        while i < len(todo):
            docs: list[tuple[str, tuple[Page, ...]]] = []
            chars = 0
            while i < len(todo) and len(docs) < job_docs and chars < job_chars:
                pages = held_pages.pop(todo[i], None) or store.documents.load_pages(todo[i])
                docs.append((todo[i], pages))
                chars += sum(len(p.text) for p in pages)
                i += 1
            loaded += chars
            chrome = store.boilerplate.doc_chrome_ids([doc_id for doc_id, _ in docs])
            files = store.documents.doc_owners([doc_id for doc_id, _ in docs])
            yield ChunkJob(
                tuple(docs),
                tuple(chrome.get(d, _NONE) for d, _ in docs),
                cfg,
                compiled=warm.compiled(loaded > NUMPY_CHARS, CHUNK_KERNELS),
                printed=tuple(from_print(files.get(d, d)) for d, _ in docs),
            )

    signed = done = 0
    held: list[ChunkedBatch] = []
    # band keys are kept only when the index's are made with these settings (else the cluster pass
    # drops them all and signs every group again); a first ingest's are held for the cluster pass
    keep_bands = hashing is not None and not store.settings.stamp("near_hashing", hashing).changed
    first = keep_bands and bands is not None and not store.bands.has_bands()

    def write() -> None:
        nonlocal signed, done
        docs = [d for batch in held for d in batch.documents]
        # a first ingest writes each new group with its band keys (its band rows: the cluster pass)
        new_keys = [(b.band_ids, b.band_keys) for b in held if b.band_keys is not None] if first else []
        with store.transaction():
            store.documents.replace_chunks(docs, fingerprint, run_id, new_keys)
            if keep_bands and not first:
                given = {g: keys for batch in held if batch.band_keys is not None
                         for g, keys in zip(batch.band_ids, batch.band_keys.tolist(), strict=True)}
                unsigned = store.bands.unsigned_among(sorted(given))
                store.bands.sign_groups((gid, given[gid]) for gid in unsigned)
                signed += len(unsigned)
        if first and bands is not None:
            for batch in held:
                if batch.band_keys is not None:
                    signed += bands.add(batch.band_ids, batch.band_keys)
        if hashing is not None and not first:
            # a first ingest's cluster pass reads only the groups with a band neighbour (few): their keys
            # are made from their texts there, not held for every group (1M tiny records: ~250 MB)
            kept.update((k.canonical_id, k.key) for d in docs for k in d.keyed)
        if emptied is not None:
            emptied.extend(d.doc_id for d in docs if not d.keyed and d.stripped)
        done += len(docs)
        held.clear()
        collect_young()
        tick("chunk", done, len(todo))

    held_docs = held_chars = 0
    for batch in executor.map(chunk_documents, jobs()):
        held.append(batch)
        held_docs += len(batch.documents)
        held_chars += sum(len(p.text) for d in batch.documents for p in d.clean)
        if held_docs >= STORE_BATCH or held_chars >= STORE_BATCH_CHARS:
            write()
            held_docs = held_chars = 0
    if held:
        write()
    if not store.documents.chunked_under(fingerprint):
        with store.transaction():
            store.documents.set_chunked_config(fingerprint)  # every document to chunk under it was
    refresh_contexts(store, cfg, run_id, todo)
    store.groups.build_deferred_indexes()
    return len(todo), signed


_NONE: frozenset[int] = frozenset()

#: documents whose context is written per transaction (a context is a short text)
CONTEXT_BATCH = 2_048


def refresh_contexts(store: Store, cfg: Config, run_id: int, chunked: Sequence[str] | None = None) -> int:
    """Write the context of every document that has none or was chunked in this run (its running
    lines may have changed; ``chunked``: those, when the caller knows them); every document's when the
    context settings changed. Returns how many."""
    wanted = key_hash(json.dumps([CONTEXT_FORMAT, cfg.to_dict()["retrieval"]], sort_keys=True))
    stamp = store.settings.stamp("context_config", wanted)
    documents = store.documents
    todo = documents.doc_ids() if stamp.changed else documents.docs_without_context(run_id, chunked)
    for i in range(0, len(todo), CONTEXT_BATCH):
        sources = store.documents.context_sources(todo[i : i + CONTEXT_BATCH])
        with store.transaction():
            contexts = document_contexts(sources, cfg.retrieval)
            rows = [(s.doc_id, text) for s, text in zip(sources, contexts, strict=True)]
            store.documents.put_contexts(rows)
    if stamp.changed:
        with store.transaction():
            store.settings.done(stamp)
    return len(todo)


def build_vector_index(
    index: str | Path, *, lock_timeout: float = 30.0, rebuild: bool = False
) -> vectorindex.AnnSync:
    """Build or update the index's approximate vector folder (``INDEX.vectors``, the ``[ann]`` extra)
    whatever its size; an ingest does so by itself from :data:`~chunkdedup.config.ANN_MIN_VECTORS`.
    ``rebuild``: delete the folder and build it again from the stored vectors (``chunkdedup
    vector-index --rebuild``), the way out of damage neither a question nor a sync sees.

    Example:
        >>> build_vector_index("big.sqlite").count  # doctest: +SKIP
        1000000
    """
    vectorindex.import_usearch()  # a missing extra says which to install, before the lock is taken
    with Store.open(index) as store, store.writer(lock_timeout):
        if store.settings.embedder() is None:
            raise ConfigError(
                f"index {index} has no embeddings: ingest with --embedder first "
                "(e.g. chunkdedup ingest DOCS --index FILE --embedder minilm)"
            )
        return vectorindex.sync(store, min_vectors=0, rebuild=rebuild)


__all__ = [
    "PARSE_JOB_BYTES",
    "PARSE_JOB_FILES",
    "STORE_BATCH",
    "STORE_BATCH_CHARS",
    "IngestOptions",
    "Progress",
    "build_vector_index",
    "chunk_phase",
    "config_fingerprint",
    "decide_chrome",
    "ingest",
    "ingest_with",
    "job_parts",
    "log_report",
    "refresh_contexts",
    "refresh_stale_keys",
    "scratch_copy",
]
