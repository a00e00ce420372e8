"""``ingest``: the one ingest sequence, readable top to bottom (:func:`ingest_with`).

1. discover inputs; parse and key new and changed files (on the executor); store their pages and
   boilerplate candidate keys;
2. prune files gone from the input (``prune=True``);
3. decide corpus chrome from the document frequencies kept in the store;
4. strip, chunk, exact-key and sign every document that is new, changed, chunked under another
   config, or whose chrome keys changed (on the executor); store each batch in one transaction;
5. write the documents' contexts; re-decide the near clusters of every group a change touched (the
   executor may compute the verified near edges); build the text index.

The per-document stages are pure functions (:mod:`chunkdedup.stages`) whose results are written in
input order, so every :class:`~chunkdedup.execute.Executor` (this process, a process pool, Ray)
writes the same index. Because every decision is a rule on the stored data (never on arrival
order), ingesting a corpus in batches, removing documents, or ingesting it at once give the same
index too.
"""

from __future__ import annotations

import gc
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chunkdedup import boilerplate
from chunkdedup.clusters import HeldBands, NearStats, start_hashing, update_clusters
from chunkdedup.config import Config
from chunkdedup.context import CONTEXT_FORMAT, document_contexts
from chunkdedup.dedup.settings import NUMPY_CHARS, NUMPY_KEYS, near_hashing
from chunkdedup.errors import ConfigError, InputError
from chunkdedup.execute import Executor, LocalExecutor, StageClock
from chunkdedup.index import Index
from chunkdedup.normalize import key_hash
from chunkdedup.parse import InputFile
from chunkdedup.parse.discover import survey
from chunkdedup.parse.memory import MEMORY_PREFIX
from chunkdedup.stages import (
    ChunkedBatch,
    ChunkJob,
    ParsedInput,
    ParseJob,
    chunk_documents,
    fingerprint_inputs,
    is_unchanged,
    parse_inputs,
)
from chunkdedup.store import DOC_KEYS_FORMAT, Store, textindex, vectorindex
from chunkdedup.store.index_errors import SQLITE_FAILURES, index_error
from chunkdedup.types import BoilerplateKey, Document, FileResult, FileStatus, KnownFile, Page, ParsedFile

if TYPE_CHECKING:
    from chunkdedup.embed import Embedder

#: progress(stage, done, total)
Progress = Callable[[str, int, int], None]
#: documents given otherwise than as files (:func:`chunkdedup.ingest_memory.ingest_records`), stored in
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
#: files per parse job: a few, so a pool's round trips stay cheap next to the parsing
PARSE_JOB_FILES = 8
#: input bytes per parse job, at most (a larger file is a job of its own): the results are taken in
#: input order, so one job of eight large shards would keep the writer and the other workers waiting
#: for it (ten 6.7 MB JSONL shards in jobs of eight: the parse phase took 7.1 s on two workers
#: against 5.0 s in one process)
PARSE_JOB_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class IngestReport:
    """What one ingest run did: every input file's outcome, totals, and the top stripped keys."""

    run_id: int | None
    files: tuple[FileResult, ...]
    totals: dict[str, Any]
    top_stripped: tuple[BoilerplateKey, ...] = ()
    dry_run: bool = False
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "files": [
                {
                    "path": f.path,
                    "doc": f.doc_ids[0] if len(f.doc_ids) == 1 else list(f.doc_ids),
                    "status": str(f.status),
                    "reason": f.reason,
                }
                for f in self.files
            ],
            "totals": self.totals,
            "boilerplate": [
                {
                    "key": b.key,
                    "example": b.example,
                    "scope": b.scope,
                    "documents": b.doc_count,
                    "pages": b.page_count,
                }
                for b in self.top_stripped
            ],
            "notes": list(self.notes),
        }


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
    ``embedder`` overrides ``config.semantic.embedder`` when the semantic tier is enabled; ``reembed``
    drops the vectors of an index embedded with another model; ``text_engine`` (``fts5`` or
    ``tantivy``, see :mod:`chunkdedup.store.textindex`) switches the index's BM25 engine (``None``
    keeps the one it has).
    """

    manifest: str | Path | None = None
    config: Config = field(default_factory=Config)
    prune: bool = False
    dry_run: bool = False
    progress: Progress | None = None
    lock_timeout: float = 30.0
    embedder: Embedder | None = None
    reembed: bool = False
    text_engine: str | None = None


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
) -> IngestReport:
    """Ingest files into an index; with ``dry_run`` nothing is written to ``index``.

    The keywords are those of :class:`IngestOptions`; ``workers`` > 1 (``None``: one per core but the
    writer's) runs the per-document stages in that many processes
    (:class:`~chunkdedup.execute.LocalExecutor`), with the same result.

    Example:
        >>> report = ingest(["docs/"], "index.sqlite", manifest="docs/manifest.jsonl")  # doctest: +SKIP
        >>> report.totals["canonical_chunks"]  # doctest: +SKIP
    """
    options = IngestOptions(
        manifest, config or Config(), prune, dry_run, progress, lock_timeout, embedder, reembed, text_engine
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
    (:func:`chunkdedup.ingest_memory.ingest_records`).

    Example:
        >>> from chunkdedup import IngestOptions, LocalExecutor, ingest_with
        >>> ingest_with(["docs/"], "index.sqlite", IngestOptions(), LocalExecutor(4))  # doctest: +SKIP
    """
    found = survey(paths, options.manifest, options.config.parse)
    textindex.require(options.text_engine)  # a bad name or a missing extra fails before the index is touched
    notes = _manifest_notes(found.unlisted, options.manifest)
    run = _Run(found.inputs, paths, options, found.unread, notes, source)
    try:
        with executor, collector_paused():
            if not options.dry_run:
                return _run(run, Path(index), executor)
            with scratch_copy(index) as scratch:
                report = _run(run, scratch, executor)
                return replace(report, run_id=None, dry_run=True)
    except SQLITE_FAILURES as e:  # a damaged index, a full disk, an I/O error: each named, with the way out
        raise index_error(index, e) from e


def _a_few(names: Sequence[str]) -> str:
    """The first three names, and how many more."""
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _manifest_notes(unlisted: Sequence[str], manifest: str | Path | None) -> tuple[str, ...]:
    """What a person should know of the inputs the manifest does not list: read, with no metadata (no
    family, department or date, so they are no version of anything and no department filter finds
    them). Named, a few of them."""
    if not unlisted:
        return ()
    shown, n = _a_few(unlisted), len(unlisted)
    return (
        f"{n} input file{'s are' if n > 1 else ' is'} not in the manifest {manifest} and carr"
        f"{'y' if n > 1 else 'ies'} no metadata (no family, department or date): {shown}; add "
        f"{'them' if n > 1 else 'it'} to the manifest, or leave {'them' if n > 1 else 'it'} out of the paths",
    )


def _emptied_notes(emptied: Sequence[str]) -> tuple[str, ...]:
    """What a person should know of documents boilerplate stripping emptied: nothing of them is
    indexed (a document that is only a shared notice, or a template whose lines all count as chrome)."""
    if not emptied:
        return ()
    shown, n = _a_few(emptied), len(emptied)
    return (
        f"{n} document{'s' if n > 1 else ''} lost every line to boilerplate stripping and "
        f"{'have' if n > 1 else 'has'} no chunk: {shown}; `chunkdedup boilerplate` lists what was "
        "stripped ([boilerplate] always_keep keeps a line)",
    )


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (as it was after it).

    An ingest holds millions of live objects (rows, keys, held band ids), and makes few cycles: a
    50k-record run left 910 cyclic objects for one collection at its end. With the collector on, its
    3,352 passes (20 of them full) took 2.0-2.3 s of the 20.7-23.8 s of CPU such a run used (process
    time between ``gc.callbacks``, two runs); at 1M chunks 23,821 passes took 11.8 s of 170.8 s.
    Off, the 50k run's peak memory did not grow (597 MB). Reference counting frees everything else as
    it goes, and each written batch frees its own cycles (:func:`collect_young`). It is the
    process's collector: other threads of the caller run without it for as long as the block lasts.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def collect_young() -> None:
    """Free the cycles a written batch left (its parsers' and results'): one collection of what was
    made since the last one, while :func:`collector_paused` holds the collector off. What is still
    alive moves to an older generation and is not looked at again; the cost is one look at each new
    object. A run of the 20 SEC filings left 6,912 cyclic objects (a PDF reader's pages point back
    to it) for the end of the run without these; 10,000 PDFs would have held them all."""
    gc.collect(0)


@dataclass(frozen=True, slots=True)
class _Run:
    """One ingest run's inputs and options."""

    inputs: list[InputFile]
    paths: Sequence[str | Path]
    options: IngestOptions
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
            Store.copy(Path(index), scratch)
        yield scratch


def prune_missing(store: Store, inputs: Sequence[InputFile], run_id: int) -> None:
    """Remove every indexed file that is not among ``inputs`` (``--prune``), one transaction each;
    documents given in memory (``memory:NAME``) are no file and stay."""
    keep = {str(i.path) for i in inputs}
    for path in store.file_paths():
        if path not in keep and not path.startswith(MEMORY_PREFIX):
            with store.transaction():
                store.remove_file(path, run_id)


def _run(run: _Run, index: Path, executor: Executor) -> IngestReport:
    opts = run.options
    cfg = opts.config
    tick = opts.progress or (lambda stage, done, total: None)
    clock = StageClock()
    with Store.open(index, create=True) as store, store.writer(opts.lock_timeout):
        run_id = store.begin_run(
            [str(Path(p).resolve()) for p in run.paths],
            str(Path(opts.manifest).resolve()) if opts.manifest else None,
            cfg.to_dict(),
        )
        if opts.text_engine is not None:
            textindex.set_engine(store, opts.text_engine)
        if opts.prune:  # first, so a moved corpus takes over its ids instead of colliding with itself
            prune_missing(store, run.inputs, run_id)
        with clock("parse"):
            at_hand: dict[str, tuple[Page, ...]] = {}
            given = run.source(store, cfg, run_id, tick, at_hand) if run.source is not None else []
            results = given + _parse_phase(store, run.inputs, cfg, run_id, tick, executor, at_hand)
            results += run.unread
        fingerprint = config_fingerprint(cfg)
        with clock("boilerplate"):
            refresh_stale_keys(store, fingerprint, cfg, tick)
            decide_chrome(store, cfg)
        textindex.defer_fts(store)
        start_hashing(store, cfg.near)
        keys: dict[str, str] = {}
        held = HeldBands(near_hashing(cfg.near)) if cfg.near.enabled else None
        emptied: list[str] = []
        with clock("chunk"):
            chunked, signed = _chunk_phase(
                store, fingerprint, cfg, run_id, tick, keys, executor, held, at_hand, emptied
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
            with clock("cluster"):
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
                )
            with clock("text index"):
                text = textindex.sync(store, tick, prebuilt=fts) if not opts.dry_run else None
        with clock("vector index"):  # derived, as the text folder: the HNSW graph beside the file
            vectors = vectorindex.sync(store, run=run_id, progress=tick) if not opts.dry_run else None
        store.reclaim()
        view = Index(store)
        summary = run_totals(results, view.stats().to_json(), chunked, near, text, signed=signed)
        # where the near tier's edges came from: the executor's pass, the store's band neighbours,
        # or nowhere (nothing to re-cluster)
        engine = executor.engine_totals()
        engine["near_edges"] = (executor.name if edges[0] else "store") if edges else None
        engine["seconds"] = clock.rounded()
        summary["engine"] = engine
        if vectors is not None and vectors.built:
            summary["vector_index"] = vectors.to_json()
        top = tuple(view.boilerplate(limit=10))
        notes = run.notes + _emptied_notes(sorted(emptied))
        report = IngestReport(run_id, tuple(results), summary, top, opts.dry_run, notes)
        store.finish_run(run_id, summary)
    return report


def _parse_phase(
    store: Store,
    inputs: list[InputFile],
    cfg: Config,
    run_id: int,
    tick: Progress,
    executor: Executor,
    at_hand: dict[str, tuple[Page, ...]] | None = None,
) -> list[FileResult]:
    """Parse and key the new and changed files on the executor; store them in input order, at most
    ``STORE_BATCH`` files or ``PARSE_BATCH_CHARS`` of page text a transaction. The pages of the
    documents of the files stored go to ``at_hand`` (by doc id), up to ``AT_HAND_CHARS`` of text."""
    results: list[FileResult] = []
    pending: list[ParsedInput] = []
    chars = 0
    room = AT_HAND_CHARS
    # Under other parse settings than the last run's, nothing parsed before is known: every file is
    # parsed and every document stored again (its pages may be cut otherwise now).
    last = store.last_config()
    same_parse = last is None or last.to_dict()["parse"] == cfg.to_dict()["parse"]

    # the stored doc ids of each changed file, from what the parse job was given (a file's documents
    # change only when that file is stored: the same ids at its flush), so they are not read again
    stored: dict[str, tuple[str, ...]] = {}

    def flush() -> None:
        nonlocal room
        with store.transaction():
            # the files' new and changed documents are stored together, once every file is decided
            queue = StoreQueue()
            for p in pending:
                ids = stored.pop(str(p.input.path), None)
                result = store_file(
                    store, p.input, p.content_hash, p.parsed, cfg, run_id, p.keys, same_parse, ids, queue
                )
                results.append(result)
                if at_hand is None or p.parsed is None or result.status != FileStatus.INGESTED:
                    continue
                # a stored document's pages are these (an unchanged one's too: the same content hash)
                for doc in p.parsed.documents:
                    size = sum(len(pg.text) for pg in doc.pages)
                    if size <= room:
                        at_hand[doc.doc_id] = doc.pages
                        room -= size
            store.put_documents(queue.documents, run_id)
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
    first = not store.has_documents()
    unchanged = [
        not first and is_unchanged(h, store.known_hash(str(i.path)))
        for i, h in zip(inputs, hashes, strict=True)
    ]
    todo = [i for i in range(len(inputs)) if not unchanged[i]]

    def known(inp: InputFile) -> KnownFile:
        if first:
            stored[str(inp.path)] = ()
            return KnownFile()
        if not same_parse:
            return KnownFile()
        held = store.known_file(str(inp.path))
        stored[str(inp.path)] = tuple(row[1] for row in held.documents)
        return held

    def jobs() -> Iterator[ParseJob]:
        # a run of a few small files keys its pages on the str path (the same keys, no numba start-up)
        # until the files read pass NUMPY_CHARS bytes; a larger run uses the compiled walk from the start
        loaded = 0 if len(todo) <= NUMPY_KEYS else NUMPY_CHARS + 1
        for part in job_parts(todo, sizes):
            files = tuple((inputs[i], known(inputs[i])) for i in part)
            loaded += sum(sizes[i] for i in part) if loaded <= NUMPY_CHARS else 0
            yield ParseJob(files, cfg, tuple(hashes[i] for i in part), compiled=loaded > NUMPY_CHARS)

    tick("parse", 0, len(inputs))
    parsed = (p for batch in executor.map(parse_inputs, jobs()) for p in batch)
    for done, (inp, h, same) in enumerate(zip(inputs, hashes, unchanged, strict=True), start=1):
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


@dataclass(slots=True)
class StoreQueue:
    """The documents of one transaction's files, stored together once every file is decided
    (:func:`store_file`): a statement set for the batch, not for each file (10k one-page files paid
    ~15 statements each). ``owners``: the file of each queued file's documents, so a later file of
    the same transaction is told one of its ids is taken as if the earlier file were stored."""

    documents: list[tuple[Document, boilerplate.DocumentKeys]] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)


def store_file(
    store: Store,
    inp: InputFile,
    h: str | None,
    pf: ParsedFile | None,
    cfg: Config,
    run_id: int,
    keys: Sequence[boilerplate.DocumentKeys | None] = (),
    keep_unchanged: bool = True,
    stored: Sequence[str] | None = None,
    queue: StoreQueue | None = None,
) -> FileResult:
    """Write one file's outcome; its new and changed documents go in pending chunking, with their
    boilerplate candidate keys (``keys[i]`` for ``pf.documents[i]`` when the parse stage computed them,
    else computed here). ``stored``: the file's stored doc ids (``Store.docs_of_file``), when the caller
    has them. ``queue``: the documents are added to it, for the caller to store with those of the other
    files of its transaction (``Store.put_documents``), instead of being stored here."""
    path = str(inp.path)
    if pf is None:
        return FileResult(path, FileStatus.UNCHANGED, tuple(store.docs_of_file(path)))
    if pf.status != FileStatus.INGESTED:
        kept = store.docs_of_file(path)
        reason: str = pf.reason or "unknown reason"
        if kept:
            reason += "; the previous version stays in the index"
        store.put_file(path, None, str(pf.status), reason, run_id)
        return FileResult(path, pf.status, tuple(kept), reason)
    owners = store.doc_owners([d.doc_id for d in pf.documents])
    claimed = queue.owners if queue is not None else {}
    for doc in pf.documents:
        # the file queued before it that holds the id, else the index's
        owner = claimed.get(doc.doc_id, owners.get(doc.doc_id))
        if owner is not None and owner != path:
            taken = (
                f"document id {doc.doc_id!r} is already taken by {owner}: rename one of them, "
                f"or remove the other with `chunkdedup remove` / --prune"
            )
            store.put_file(path, None, str(FileStatus.FAILED), taken, run_id)
            return FileResult(path, FileStatus.FAILED, (), taken)
    new_ids = {d.doc_id for d in pf.documents} | set(pf.kept)
    was = stored if stored is not None else store.docs_of_file(path)
    store.remove_documents([old for old in was if old not in new_ids], run_id)
    # a record stored exactly as it is parsed now (of a JSONL or Parquet file changed elsewhere) is
    # left as it is, with its pages, keys and chunks (unless ``keep_unchanged`` is off: the parse
    # settings changed); the ``kept`` ones were known by their bytes and place before being built
    changed = store.changed_documents(pf.documents) if keep_unchanged else {d.doc_id for d in pf.documents}
    items = [
        (doc, (keys[i] if keys else None) or boilerplate.document_keys(doc.pages, cfg.boilerplate))
        for i, doc in enumerate(pf.documents)
        if doc.doc_id in changed
    ]
    if queue is None:
        store.put_documents(items, run_id)
    else:
        queue.documents.extend(items)
        claimed.update((doc.doc_id, path) for doc in pf.documents)
    notes = "; ".join(pf.notes) or None
    store.put_file(path, h, str(FileStatus.INGESTED), notes, run_id)
    return FileResult(path, FileStatus.INGESTED, pf.doc_ids, notes)


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
    if store.meta("doc_keys_format") != DOC_KEYS_FORMAT:
        stale = store.doc_ids()
    else:
        stale = store.doc_ids(stale_config=fingerprint)
    for i in range(0, len(stale), STORE_BATCH):
        with store.transaction():
            store.set_many_doc_keys(
                [
                    (doc_id, boilerplate.document_keys(store.load_pages(doc_id), cfg.boilerplate))
                    for doc_id in stale[i : i + STORE_BATCH]
                ]
            )
        tick("boilerplate", min(i + STORE_BATCH, len(stale)), len(stale))
    if store.meta("doc_keys_format") != DOC_KEYS_FORMAT:
        with store.transaction():
            store.set_meta("doc_keys_format", DOC_KEYS_FORMAT)


def decide_chrome(store: Store, cfg: Config) -> None:
    """Store the corpus-chrome keys, decided from the units per key the store counts (unless no
    document's keys or unit changed since they were decided under these settings)."""
    bp = cfg.boilerplate
    settings = key_hash(json.dumps(cfg.to_dict()["boilerplate"], sort_keys=True))
    if store.chrome_decided(settings):
        return
    with store.transaction():
        chrome: dict[int, int] = {}
        if bp.enabled:
            total = store.unit_total()
            counts = store.kept_key_unit_counts(bp.min_units, settings)  # the changed keys recounted
            chrome = {k: n for k, n in counts.items() if boilerplate.is_chrome(n, total, bp)}
        store.set_chrome(chrome, settings)


def _chunk_phase(
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
) -> tuple[int, int]:
    """Strip, chunk, key and sign the documents to chunk on the executor, a batch a job; write each
    batch in one transaction, in order. The exact keys of the groups go to ``kept`` (group id -> key):
    the cluster pass holds the key of every group it re-decides anyway (the guard and the word
    differences need them), and these need not be computed again. Into an index with no bands yet (a
    first ingest) the band keys go to ``bands``, for the cluster pass to write; else to the stage.
    ``at_hand``: pages of documents as this run's parse phase stored them (taken from it as they are
    used), not read back. On an index with no groups, the group indexes it does not read are made
    once at its end (:meth:`Store.defer_indexes`). ``emptied`` collects the documents whose every
    line boilerplate stripping removed (no chunk left). Returns (documents chunked, groups signed)."""
    held_pages = at_hand if at_hand is not None else {}
    store.defer_indexes()  # on an index with no groups: built once, below
    todo = store.docs_to_chunk(fingerprint)
    hashing = near_hashing(cfg.near) if cfg.near.enabled else None

    # a chunk job holds a quarter of a transaction's documents and text, so several workers share a
    # batch and the jobs in flight hold a bounded amount of text; results are written a batch at a time
    job_docs, job_chars = max(1, STORE_BATCH // 4), max(1, STORE_BATCH_CHARS // 4)

    def jobs() -> Iterator[ChunkJob]:
        # a run of a few documents signs with the NumPy paths (the same band keys, no numba start-up),
        # until its text passes NUMPY_CHARS; a larger run uses the kernels from the start
        loaded = 0 if len(todo) <= NUMPY_KEYS else NUMPY_CHARS + 1
        i = 0
        while i < len(todo):
            docs: list[tuple[str, tuple[Page, ...]]] = []
            chars = 0
            while i < len(todo) and len(docs) < job_docs and chars < job_chars:
                pages = held_pages.pop(todo[i], None) or store.load_pages(todo[i])
                docs.append((todo[i], pages))
                chars += sum(len(p.text) for p in pages)
                i += 1
            loaded += chars
            chrome = store.doc_chrome_ids([doc_id for doc_id, _ in docs])
            yield ChunkJob(
                tuple(docs), tuple(chrome.get(d, _NONE) for d, _ in docs), cfg, compiled=loaded > NUMPY_CHARS
            )

    signed = done = 0
    held: list[ChunkedBatch] = []
    # band keys are kept only when the index's are made with these settings (else the cluster pass
    # drops them all and signs every group again); a first ingest's are held for the cluster pass
    keep_bands = hashing is not None and store.meta("near_hashing") == hashing
    first = keep_bands and bands is not None and not store.chunks.has_bands()

    def write() -> None:
        nonlocal signed, done
        docs = [d for batch in held for d in batch.documents]
        # a first ingest writes each new group with its band keys (its band rows: the cluster pass)
        new_keys = [(b.band_ids, b.band_keys) for b in held if b.band_keys is not None] if first else []
        with store.transaction():
            store.replace_chunks(docs, fingerprint, run_id, new_keys)
            if keep_bands and not first:
                given = {g: keys for batch in held if batch.band_keys is not None
                         for g, keys in zip(batch.band_ids, batch.band_keys.tolist(), strict=True)}
                unsigned = store.chunks.unsigned_among(sorted(given))
                store.chunks.sign_groups((gid, given[gid]) for gid in unsigned)
                signed += len(unsigned)
        if first and bands is not None:
            for batch in held:
                if batch.band_keys is not None:
                    signed += bands.add(batch.band_ids, batch.band_keys)
        if hashing is not None:
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
    if not store.chunked_under(fingerprint):
        with store.transaction():
            store.set_chunked_config(fingerprint)  # every document to chunk under it was
    refresh_contexts(store, cfg, run_id, todo)
    store.build_deferred_indexes()
    return len(todo), signed


_NONE: frozenset[int] = frozenset()

#: documents whose context is written per transaction (a context is a short text)
CONTEXT_BATCH = 2_048


def refresh_contexts(store: Store, cfg: Config, run_id: int, chunked: Sequence[str] | None = None) -> int:
    """Write the context of every document that has none or was chunked in this run (its running
    lines may have changed; ``chunked``: those, when the caller knows them); every document's when the
    context settings changed. Returns how many."""
    stamp = key_hash(json.dumps([CONTEXT_FORMAT, cfg.to_dict()["retrieval"]], sort_keys=True))
    if store.meta("context_config") != stamp:
        todo = store.doc_ids()
    else:
        todo = store.docs_without_context(run_id, chunked)
    for i in range(0, len(todo), CONTEXT_BATCH):
        sources = store.context_sources(todo[i : i + CONTEXT_BATCH])
        with store.transaction():
            contexts = document_contexts(sources, cfg.retrieval)
            store.put_contexts([(s.doc_id, text) for s, text in zip(sources, contexts, strict=True)])
    if store.meta("context_config") != stamp:
        with store.transaction():
            store.set_meta("context_config", stamp)
    return len(todo)


def run_totals(
    results: list[FileResult],
    stats: dict[str, Any],
    chunked: int,
    near: NearStats,
    text: textindex.SyncStats | None,
    *,
    signed: int = 0,
) -> dict[str, Any]:
    """A run's report totals (``signed``: groups signed in the chunk phase, before the cluster pass)."""
    by_status = {str(s): 0 for s in FileStatus}
    for r in results:
        by_status[str(r.status)] += 1
    totals: dict[str, Any] = {"files": by_status, "documents_chunked": chunked, **stats}
    totals["cluster_pass"] = {
        "signed": near.signed + signed,
        "reclustered": near.reclustered,
        "merged": near.merged,
        "variants": near.variants,
    }
    if text is not None and text.engine != "fts5":
        totals["text_index"] = {"engine": text.engine, "rebuilt": text.rebuilt, "groups": text.groups}
    return totals


def build_vector_index(index: str | Path, *, lock_timeout: float = 30.0) -> vectorindex.AnnSync:
    """Build or update the index's approximate vector folder (``INDEX.vectors``, the ``[ann]`` extra)
    whatever its size; an ingest does so by itself from :data:`~chunkdedup.config.ANN_MIN_VECTORS`.

    Example:
        >>> build_vector_index("big.sqlite").count  # doctest: +SKIP
        1000000
    """
    vectorindex.import_usearch()  # a missing extra says which to install, before the lock is taken
    with Store.open(index) as store, store.writer(lock_timeout):
        if store.meta("embedder_name") is None:
            raise ConfigError(
                f"index {index} has no embeddings: ingest with --embedder first "
                "(e.g. chunkdedup ingest DOCS --index FILE --embedder minilm)"
            )
        return vectorindex.sync(store, min_vectors=0)


def remove_documents(
    index: str | Path, doc_ids: Sequence[str], *, lock_timeout: float = 30.0
) -> dict[str, Any]:
    """Remove documents (only their sources) and re-decide boilerplate for the rest.

    The config of the index's last ingest run is used, so the other documents keep their chunking.
    """
    with Store.open(index) as store, store.writer(lock_timeout):
        cfg = store.last_config() or Config()
        owners = store.doc_owners(doc_ids)
        missing = [d for d in doc_ids if d not in owners]
        if missing:
            raise InputError(
                f"no such document(s) in {index}: {missing}; "
                "the `doc` fields of `chunkdedup export` name them"
            )
        run_id = store.begin_run([], None, cfg.to_dict())
        with store.transaction():
            touched = store.remove_documents(doc_ids, run_id)
            files = sorted(set(owners.values()))
            kept = store.files_with_documents(files)
            for path in files:
                if path in kept:  # a JSONL/Parquet file keeps other records: re-read it next time
                    store.reread_file(path)
                else:
                    store.forget_file(path)
        fingerprint = config_fingerprint(cfg)
        decide_chrome(store, cfg)
        keys: dict[str, str] = {}
        rechunked, _ = _chunk_phase(store, fingerprint, cfg, run_id, lambda *a: None, keys, LocalExecutor())
        recorded = store.meta("embedder_name")
        embedder = None
        if cfg.semantic.enabled and recorded:
            from chunkdedup.embed import get_embedder

            embedder = get_embedder(recorded)
        update_clusters(store, cfg, run_id, embedder=embedder, known=keys)
        textindex.sync(store)
        vectorindex.sync(store, run=run_id)
        store.reclaim()
        summary = {"removed": list(doc_ids), "canonicals_touched": touched, "documents_rechunked": rechunked}
        store.finish_run(run_id, summary)
    return summary


__all__ = [
    "PARSE_JOB_BYTES",
    "PARSE_JOB_FILES",
    "STORE_BATCH",
    "STORE_BATCH_CHARS",
    "IngestOptions",
    "IngestReport",
    "Progress",
    "StoreQueue",
    "build_vector_index",
    "config_fingerprint",
    "decide_chrome",
    "ingest",
    "ingest_with",
    "prune_missing",
    "refresh_contexts",
    "refresh_stale_keys",
    "remove_documents",
    "run_totals",
    "scratch_copy",
    "store_file",
]
