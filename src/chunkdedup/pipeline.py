"""``ingest``: the stages, readable top to bottom.

1. discover inputs; parse new and changed files; store their pages and boilerplate candidate keys;
2. prune files gone from the input (``prune=True``);
3. decide corpus chrome from the document frequencies kept in the store;
4. strip, chunk and exact-dedup every document that is new, changed, chunked under another config,
   or whose chrome keys changed, one transaction per batch.

Because every decision is a rule on the stored data (never on arrival order), ingesting a corpus in
batches, removing documents, or ingesting it at once give the same index.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkdedup import boilerplate
from chunkdedup.chunk import chunk_document
from chunkdedup.config import Config
from chunkdedup.context import CONTEXT_FORMAT, document_context
from chunkdedup.dedup.exact import KeyedChunk, KeyedDocument, key_chunk
from chunkdedup.dedup.minhash import MinHasher
from chunkdedup.dedup.near import NearStats, sign_new_groups, start_hashing, update_clusters
from chunkdedup.embed import Embedder, get_embedder
from chunkdedup.errors import InputError
from chunkdedup.normalize import canonical_id, key_hash
from chunkdedup.parse import InputFile, input_fingerprint, parse_file
from chunkdedup.parse.discover import survey
from chunkdedup.store import DOC_KEYS_FORMAT, Store, textindex
from chunkdedup.store.index import Index
from chunkdedup.store.index_errors import SQLITE_FAILURES, index_error
from chunkdedup.types import BoilerplateKey, FileResult, FileStatus, Page, ParsedFile

#: progress(stage, done, total)
Progress = Callable[[str, int, int], None]

#: documents (or files) written per transaction, at most: each commit syncs the WAL and re-walks the
#: B-trees it touches, so 32 a transaction spent a fifth of a fresh ingest committing
STORE_BATCH = 1024
#: page text (characters) held for one transaction, at most: a batch of large documents commits early,
#: so memory stays bounded whatever the documents' sizes
STORE_BATCH_CHARS = 64 * 1024 * 1024
#: exact keys (characters) the chunk phase keeps for the cluster pass, at most: past it the pass keys
#: the group texts again instead of holding every key of a large run in memory
KEY_CACHE_CHARS = 256 * 1024 * 1024


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
class _Run:
    """One ingest run's inputs and switches."""

    inputs: list[InputFile]
    paths: Sequence[str | Path]
    manifest: str | Path | None
    config: Config
    prune: bool
    progress: Progress | None
    lock_timeout: float
    embedder: Embedder | None
    reembed: bool
    text_engine: str | None
    #: entries of the folder arguments that are not read (unsupported, hidden, unlistable, ...)
    unread: Sequence[FileResult] = ()


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
) -> IngestReport:
    """Ingest files into an index; with ``dry_run`` nothing is written to ``index``.

    ``embedder`` overrides ``config.semantic.embedder`` when the semantic tier is enabled;
    ``reembed`` drops the vectors of an index embedded with another model. ``text_engine``
    (``fts5`` or ``tantivy``, see :mod:`chunkdedup.store.textindex`) switches the index's BM25 engine;
    ``None`` keeps the one it has.

    Example:
        >>> report = ingest(["docs/"], "index.sqlite", manifest="docs/manifest.jsonl")  # doctest: +SKIP
        >>> report.totals["canonical_chunks"]  # doctest: +SKIP
    """
    cfg = config or Config()
    found = survey(paths, manifest, cfg.parse)
    run = _Run(
        found.inputs,
        paths,
        manifest,
        cfg,
        prune,
        progress,
        lock_timeout,
        embedder,
        reembed,
        text_engine,
        found.unread,
    )
    textindex.require(text_engine)  # a bad name or a missing extra fails before the index is touched
    try:
        if not dry_run:
            return _run(run, Path(index), dry_run=False)
        with scratch_copy(index) as scratch:
            return _run(run, scratch, dry_run=True)
    except SQLITE_FAILURES as e:  # a damaged index, a full disk, an I/O error: each named, with the way out
        raise index_error(index, e) from e


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
    """Remove every indexed file that is not among ``inputs`` (``--prune``), one transaction each."""
    keep = {str(i.path) for i in inputs}
    for path in store.file_paths():
        if path not in keep:
            with store.transaction():
                store.remove_file(path, run_id)


def _run(run: _Run, index: Path, *, dry_run: bool) -> IngestReport:
    cfg = run.config
    tick = run.progress or (lambda stage, done, total: None)
    with Store.open(index, create=True) as store, store.writer(run.lock_timeout):
        run_id = store.begin_run(
            [str(Path(p).resolve()) for p in run.paths],
            str(Path(run.manifest).resolve()) if run.manifest else None,
            cfg.to_dict(),
        )
        if run.text_engine is not None:
            textindex.set_engine(store, run.text_engine)
        if run.prune:  # first, so a moved corpus takes over its ids instead of colliding with itself
            prune_missing(store, run.inputs, run_id)
        results = _parse_phase(store, run.inputs, cfg, run_id, tick) + list(run.unread)
        fingerprint = config_fingerprint(cfg)
        refresh_stale_keys(store, fingerprint, cfg, tick)
        decide_chrome(store, cfg)
        textindex.defer_fts(store)
        start_hashing(store, cfg.near)
        keys: dict[str, str] = {}
        chunked, signed = _chunk_phase(store, fingerprint, cfg, run_id, tick, keys)
        near = update_clusters(
            store, cfg, run_id, tick, embedder=run.embedder, reembed=run.reembed, known=keys
        )
        text = textindex.sync(store, tick) if not dry_run else None
        view = Index(store)
        summary = run_totals(results, view.stats(), chunked, near, text, signed=signed)
        report = IngestReport(
            None if dry_run else run_id, tuple(results), summary, tuple(view.boilerplate(limit=10)), dry_run
        )
        store.finish_run(run_id, summary)
    return report


def _parse_phase(
    store: Store, inputs: list[InputFile], cfg: Config, run_id: int, tick: Progress
) -> list[FileResult]:
    results: list[FileResult] = []
    parsed: list[tuple[InputFile, str | None, ParsedFile | None]] = []
    chars = 0

    def flush() -> None:
        with store.transaction():
            for inp, h, pf in parsed:
                results.append(store_file(store, inp, h, pf, cfg, run_id))
        parsed.clear()

    for n, inp in enumerate(inputs):
        tick("parse", n, len(inputs))
        path = str(inp.path)
        try:
            h: str | None = input_fingerprint(inp)
        except OSError as e:
            parsed.append((inp, None, ParsedFile(path, (), FileStatus.FAILED, f"cannot read: {e}")))
            continue
        if h == store.file_hash(path) and store.docs_of_file(path):
            parsed.append((inp, h, None))
        else:
            pf = parse_file(inp, cfg.parse)
            chars += sum(len(p.text) for d in pf.documents for p in d.pages)
            parsed.append((inp, h, pf))
        if len(parsed) >= STORE_BATCH or chars >= STORE_BATCH_CHARS:
            flush()
            chars = 0
    if parsed:
        flush()
    tick("parse", len(inputs), len(inputs))
    return results


def store_file(
    store: Store,
    inp: InputFile,
    h: str | None,
    pf: ParsedFile | None,
    cfg: Config,
    run_id: int,
    keys: Sequence[boilerplate.DocumentKeys] | None = None,
) -> FileResult:
    """Write one file's outcome; its documents go in pending chunking, with their boilerplate
    candidate keys (``keys[i]`` for ``pf.documents[i]`` when a worker computed them already)."""
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
    for doc in pf.documents:
        owner = store.doc_owner(doc.doc_id)
        if owner is not None and owner != path:
            taken = (
                f"document id {doc.doc_id!r} is already taken by {owner}: rename one of them, "
                f"or remove the other with `chunkdedup remove` / --prune"
            )
            store.put_file(path, None, str(FileStatus.FAILED), taken, run_id)
            return FileResult(path, FileStatus.FAILED, (), taken)
    new_ids = {d.doc_id for d in pf.documents}
    for old in store.docs_of_file(path):
        if old not in new_ids:
            store.remove_document(old, run_id)
    store.put_documents(
        [
            (doc, keys[i] if keys is not None else boilerplate.document_keys(doc.pages, cfg.boilerplate))
            for i, doc in enumerate(pf.documents)
        ],
        run_id,
    )
    notes = "; ".join(pf.notes) or None
    store.put_file(path, h, str(FileStatus.INGESTED), notes, run_id)
    return FileResult(path, FileStatus.INGESTED, tuple(d.doc_id for d in pf.documents), notes)


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


def decide_chrome(
    store: Store, cfg: Config, counts: Mapping[int, int] | None = None, total: int | None = None
) -> None:
    """Store the corpus-chrome keys; ``counts`` (units per key) and ``total`` default to the store's."""
    bp = cfg.boilerplate
    chrome: dict[int, int] = {}
    if bp.enabled:
        total = store.unit_total() if total is None else total
        counts = store.key_unit_counts(bp.min_units) if counts is None else counts
        chrome = {k: n for k, n in counts.items() if boilerplate.is_chrome(n, total, bp)}
    with store.transaction():
        store.set_chrome(chrome)


def _chunk_phase(
    store: Store, fingerprint: str, cfg: Config, run_id: int, tick: Progress, kept: dict[str, str]
) -> tuple[int, int]:
    """Strip, chunk and key the documents to chunk, a batch a transaction; each batch's new groups are
    signed from the keys at hand, and their exact keys are kept in ``kept`` (group id -> key) for the
    cluster pass while they fit in :data:`KEY_CACHE_CHARS`. Returns (documents chunked, groups signed)."""
    todo = store.docs_to_chunk(fingerprint)
    chrome = store.chrome_ids()
    hasher = MinHasher.from_config(cfg.near) if cfg.near.enabled else None
    signed = 0
    budget = KEY_CACHE_CHARS
    i = 0
    while i < len(todo):
        with store.transaction():
            docs: list[KeyedDocument] = []
            chars = 0
            while i < len(todo) and len(docs) < STORE_BATCH and chars < STORE_BATCH_CHARS:
                docs.append(chunk_pages(todo[i], store.load_pages(todo[i]), chrome, cfg))
                chars += sum(len(p.text) for p in docs[-1].clean)
                i += 1
            store.replace_chunks(docs, fingerprint, run_id)
            if hasher is not None:
                keys = {k.canonical_id: k.key for d in docs for k in d.keyed}
                signed += sign_new_groups(store, keys, cfg.near, hasher)
                if budget > 0:
                    budget -= sum(map(len, keys.values()))
                    kept.update(keys)
        tick("chunk", i, len(todo))
    if budget <= 0:
        kept.clear()  # partial: the cluster pass would still key most groups again
    refresh_contexts(store, cfg, run_id)
    return len(todo), signed


#: documents whose context is written per transaction (a context is a short text)
CONTEXT_BATCH = 2_048


def refresh_contexts(store: Store, cfg: Config, run_id: int) -> int:
    """Write the context of every document that has none or was chunked in this run (its running
    lines may have changed); every document's when the context settings changed. Returns how many."""
    stamp = key_hash(json.dumps([CONTEXT_FORMAT, cfg.to_dict()["retrieval"]], sort_keys=True))
    todo = store.doc_ids() if store.meta("context_config") != stamp else store.docs_without_context(run_id)
    for i in range(0, len(todo), CONTEXT_BATCH):
        sources = store.context_sources(todo[i : i + CONTEXT_BATCH])
        with store.transaction():
            store.put_contexts([(s.doc_id, document_context(s, cfg.retrieval)) for s in sources])
    if store.meta("context_config") != stamp:
        with store.transaction():
            store.set_meta("context_config", stamp)
    return len(todo)


def chunk_pages(doc_id: str, pages: Sequence[Page], chrome: Collection[int], cfg: Config) -> KeyedDocument:
    """Strip, chunk and key one document.

    A pure function of its arguments, so the local loop and a distributed worker share it.
    """
    if cfg.boilerplate.enabled:
        result = boilerplate.strip(pages, chrome, cfg.boilerplate)
        clean, stripped = result.pages, result.stripped
    else:
        clean, stripped = tuple(pages), ()
    keyed = [k for k in map(key_chunk, chunk_document(doc_id, clean, cfg.chunk)) if k is not None]
    if not cfg.dedup.exact:
        keyed = [_unique(k) for k in keyed]
    return KeyedDocument(doc_id, clean, tuple(keyed), stripped)


def _unique(k: KeyedChunk) -> KeyedChunk:
    """With exact dedup off (a baseline index), every chunk is its own canonical."""
    c = k.chunk
    return KeyedChunk(c, k.key, canonical_id(f"{c.doc_id}\x00{c.page}\x00{c.start}\x00{k.key}"))


def run_totals(
    results: list[FileResult],
    stats: dict[str, Any],
    chunked: int,
    near: NearStats,
    text: textindex.SyncStats | None,
    *,
    signed: int = 0,
) -> dict[str, Any]:
    """A run's report totals (``signed``: groups signed before the cluster pass, on Ray)."""
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


def remove_documents(
    index: str | Path, doc_ids: Sequence[str], *, lock_timeout: float = 30.0
) -> dict[str, Any]:
    """Remove documents (only their sources) and re-decide boilerplate for the rest.

    The config of the index's last ingest run is used, so the other documents keep their chunking.
    """
    with Store.open(index) as store, store.writer(lock_timeout):
        cfg = store.last_config() or Config()
        missing = [d for d in doc_ids if store.doc_owner(d) is None]
        if missing:
            raise InputError(
                f"no such document(s) in {index}: {missing}; "
                "the `doc` fields of `chunkdedup export` name them"
            )
        run_id = store.begin_run([], None, cfg.to_dict())
        touched = 0
        with store.transaction():
            for doc_id in doc_ids:
                path = store.doc_owner(doc_id)
                touched += store.remove_document(doc_id, run_id)
                if path is not None and not store.docs_of_file(path):
                    store.forget_file(path)
                elif path is not None:  # a JSONL/Parquet file keeps other records: re-read it next time
                    store.reread_file(path)
        fingerprint = config_fingerprint(cfg)
        decide_chrome(store, cfg)
        keys: dict[str, str] = {}
        rechunked, _ = _chunk_phase(store, fingerprint, cfg, run_id, lambda *a: None, keys)
        recorded = store.meta("embedder_name")
        embedder = get_embedder(recorded) if cfg.semantic.enabled and recorded else None
        update_clusters(store, cfg, run_id, embedder=embedder, known=keys)
        textindex.sync(store)
        summary = {"removed": list(doc_ids), "canonicals_touched": touched, "documents_rechunked": rechunked}
        store.finish_run(run_id, summary)
    return summary


__all__ = [
    "STORE_BATCH",
    "STORE_BATCH_CHARS",
    "IngestReport",
    "Progress",
    "chunk_pages",
    "config_fingerprint",
    "decide_chrome",
    "ingest",
    "prune_missing",
    "refresh_contexts",
    "refresh_stale_keys",
    "remove_documents",
    "run_totals",
    "scratch_copy",
    "store_file",
]
