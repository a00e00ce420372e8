"""``ingest_records``: documents given in memory, through the one ingest sequence.

The records of one call are one *source* (``memory:NAME`` in the index), as the records of a JSONL
file are one file: a call stores the documents that are new or changed, leaves the unchanged ones as
they are, and removes the source's documents it no longer gives. Everything after storing (chrome,
chunks, clusters, the text index) is the ingest's own sequence
(:func:`chunkdedup.ingestion.sequence.ingest_with`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from chunkdedup.config import Config
from chunkdedup.errors import ConfigError
from chunkdedup.ingestion.executors import LocalExecutor
from chunkdedup.ingestion.files import StoreQueue, store_file
from chunkdedup.ingestion.report import IngestReport
from chunkdedup.ingestion.sequence import IngestOptions, Progress, ingest_with
from chunkdedup.parse import InputFile
from chunkdedup.parse.memory import InputRecord, memory_documents, source_fingerprint, source_path
from chunkdedup.store import Store
from chunkdedup.text import boilerplate
from chunkdedup.types import Document, FileResult, FileStatus, Page, ParsedFile

__all__ = ["InputRecord", "ingest_records"]


def ingest_records(
    records: Iterable[InputRecord],
    index: str | Path,
    *,
    source: str = "memory",
    options: IngestOptions | None = None,
) -> IngestReport:
    """Ingest in-memory documents into ``index`` as the source ``source``.

    The source's documents are exactly the ones given: a document given before and not now is
    removed (give each collection its own ``source``); an unchanged one is not chunked again. Ids
    must be unique within a call and not taken by another source or file. ``options`` as for
    :func:`chunkdedup.ingest` (``manifest`` and ``prune`` do not apply and are refused).

    Example:
        >>> from chunkdedup.ingestion.memory import InputRecord, ingest_records
        >>> docs = [InputRecord.of("refunds.md", "Refunds within 30 days.", {"family": "refunds"})]
        >>> ingest_records(docs, "policies.sqlite", source="crm").totals["documents"]  # doctest: +SKIP
    """
    opts = options or IngestOptions()
    if opts.manifest is not None or opts.prune:
        raise ConfigError(
            "ingest_records takes no manifest and no prune: give the metadata on each InputRecord, "
            "and the source's whole set of documents on each call"
        )
    path = source_path(source)
    docs, notes = memory_documents(path, records, opts.config.parse.max_page_chars)

    def phase(
        store: Store, cfg: Config, run_id: int, tick: Progress, at_hand: dict[str, tuple[Page, ...]]
    ) -> list[FileResult]:
        return [_store_source(store, cfg, run_id, tick, at_hand, path, docs, notes)]

    return ingest_with([], index, opts, LocalExecutor(1), source=phase)


def _store_source(
    store: Store,
    cfg: Config,
    run_id: int,
    tick: Progress,
    at_hand: dict[str, tuple[Page, ...]],
    path: str,
    docs: tuple[Document, ...],
    notes: tuple[str, ...],
) -> FileResult:
    """Store the source as the parse phase stores a file: unchanged as a whole, or its new and
    changed documents (with their boilerplate candidate keys) and its removed ones gone."""
    tick("documents", 0, len(docs))
    fingerprint = source_fingerprint(docs)
    if store.known_hash(path) == fingerprint:
        tick("documents", len(docs), len(docs))
        return FileResult(path, FileStatus.UNCHANGED, tuple(store.docs_of_file(path)))
    if not docs:
        with store.transaction():
            gone = store.remove_file(path, run_id)
        reason = "; ".join(notes) or "no documents given"
        return FileResult(path, FileStatus.SKIPPED, (), f"{reason}; removed {len(gone)} document(s)")
    last = store.last_config()
    same_parse = last is None or last.to_dict()["parse"] == cfg.to_dict()["parse"]
    stored = store.known_file(path).document_hashes()
    keys = tuple(
        None if d.content_hash in stored else boilerplate.document_keys(d.pages, cfg.boilerplate)
        for d in docs
    )
    parsed = ParsedFile(path, docs, FileStatus.INGESTED, notes=notes)
    with store.transaction():
        queue = StoreQueue()
        inp = InputFile(Path(path), path)
        result = store_file(store, inp, fingerprint, parsed, cfg, run_id, keys, same_parse, None, queue)
        store.put_documents(queue.documents, run_id)
    if result.status == FileStatus.INGESTED:
        at_hand.update((d.doc_id, d.pages) for d in docs)
    tick("documents", len(docs), len(docs))
    return result
