"""``ingest_records``: documents given in memory, through the one ingest sequence.

The records of one call are one *source* (``memory:NAME`` in the index), as the records of a JSONL
file are one file: a call stores the documents that are new or changed, leaves the unchanged ones as
they are, and removes the source's documents it no longer gives. Everything after storing (chrome,
chunks, clusters, the text index) is the ingest's own sequence
(:func:`chunkdedup.ingestion.sequence.ingest_with`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from chunkdedup.config import Config
from chunkdedup.errors import ConfigError, InputError
from chunkdedup.ingestion.executors import LocalExecutor
from chunkdedup.ingestion.files import StoreQueue, store_file
from chunkdedup.ingestion.report import IngestReport
from chunkdedup.ingestion.sequence import IngestOptions, Progress, ingest_with, run_config
from chunkdedup.parse import InputFile
from chunkdedup.parse.base import shown
from chunkdedup.parse.memory import InputRecord, memory_documents, source_fingerprint, source_path
from chunkdedup.store import Store
from chunkdedup.text import boilerplate
from chunkdedup.types import Document, FileResult, FileStatus, KnownFile, Page, ParsedFile

__all__ = ["InputRecord", "Mode", "ingest_records"]

#: ``replace``: a call's records are the whole source (those it no longer gives are removed);
#: ``upsert``: they are added or replaced, the source's other documents stay.
Mode = Literal["replace", "upsert"]


def ingest_records(
    records: Iterable[InputRecord],
    index: str | Path,
    *,
    source: str = "memory",
    options: IngestOptions | None = None,
    mode: Mode = "replace",
    remove: Sequence[str] = (),
) -> IngestReport:
    """Ingest in-memory documents into ``index`` as the source ``source``.

    ``mode="replace"``: the source's documents are exactly the ones given, a document given before
    and not now is removed (give each collection its own ``source``). ``mode="upsert"``: the records
    are added or replace the documents of their ids, the source's other documents stay, and those
    named in ``remove`` go (an id the source does not hold is an ``InputError``). Either way an
    unchanged document is not chunked again. Ids must be unique within a call and not taken by
    another source or file. ``options`` as for :func:`chunkdedup.ingest` (``manifest`` and ``prune``
    do not apply and are refused).

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
    if mode == "replace" and remove:
        raise ConfigError("remove= is for mode='upsert': a 'replace' call removes what it does not give")
    path = source_path(source)
    records = list(records)
    parse = run_config(index, opts.config)[0].parse
    docs, notes = memory_documents(path, records, parse.max_page_chars)
    given = {r.id for r in records}  # a record without text is named too: an upsert removes it
    both = sorted(given.intersection(remove))
    if both:
        raise InputError(f"document(s) {shown(both)} are both given and to be removed: give or remove each")

    def phase(
        store: Store, cfg: Config, run_id: int, tick: Progress, at_hand: dict[str, tuple[Page, ...]]
    ) -> list[FileResult]:
        known = store.documents.known_file(path)
        kept = _kept(known, path, given, remove) if mode == "upsert" else ()
        return [_store_source(store, cfg, run_id, tick, at_hand, path, docs, notes, known, kept)]

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
    known: KnownFile,
    kept: tuple[str, ...] = (),
) -> FileResult:
    """Store the source as the parse phase stores a file: unchanged as a whole, or its new and
    changed documents (with their boilerplate candidate keys) and its removed ones gone; the
    ``kept`` ones (an upsert's documents it does not name) stay as they are. ``known``: what the
    index held of the source before (:meth:`DocumentTables.known_file`)."""
    tick("documents", 0, len(docs))
    hashes = {row[1]: row[0] for row in known.documents} if kept else {}
    pairs = [(d.doc_id, d.content_hash) for d in docs] + [(d, hashes[d]) for d in kept]
    fingerprint = source_fingerprint(pairs)
    if known.content_hash == fingerprint:
        tick("documents", len(docs), len(docs))
        return FileResult(path, FileStatus.UNCHANGED, tuple(row[1] for row in known.documents))
    if not docs and not kept:
        with store.transaction():
            gone = store.documents.remove_file(path, run_id)
        reason = "; ".join(notes) or "no documents given"
        return FileResult(path, FileStatus.SKIPPED, (), f"{reason}; removed {len(gone)} document(s)")
    last = store.runs.last_config()
    same_parse = last is None or last.to_dict()["parse"] == cfg.to_dict()["parse"]
    stored = known.document_hashes()
    keys = tuple(
        None if d.content_hash in stored else boilerplate.document_keys(d.pages, cfg.boilerplate)
        for d in docs
    )
    order = tuple(sorted({d.doc_id for d in docs}.union(kept))) if kept else ()
    parsed = ParsedFile(path, docs, FileStatus.INGESTED, notes=notes, kept=kept, order=order)
    with store.transaction():
        queue = StoreQueue()
        inp = InputFile(Path(path), path)
        result = store_file(store, inp, fingerprint, parsed, cfg, run_id, keys, same_parse, None, queue)
        store.documents.put_documents(queue.documents, run_id)
    if result.status == FileStatus.INGESTED:
        at_hand.update((d.doc_id, d.pages) for d in docs)
    tick("documents", len(docs), len(docs))
    return result


def _kept(known: KnownFile, path: str, given: set[str], remove: Sequence[str]) -> tuple[str, ...]:
    """The source's stored documents an upsert leaves as they are: neither given nor removed."""
    stored = [row[1] for row in known.documents]
    missing = sorted(set(remove).difference(stored))
    if missing:
        raise InputError(
            f"no such document(s) in the source {shown(path)}: {shown(missing)}; nothing was changed"
        )
    gone = set(remove)
    return tuple(d for d in stored if d not in given and d not in gone)
