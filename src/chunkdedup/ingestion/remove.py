"""Removing documents by id: their sources go, and what depends on them is decided again (the
corpus chrome, the documents whose chrome moved, the clusters of the groups they touched, the text
index) by the ingest sequence itself, the removal standing in for its parse phase.

Removal costs what the removed records hold: a JSONL or Parquet file that keeps other records is
marked to be read again at the next ingest, not read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chunkdedup.config import Config
from chunkdedup.errors import InputError
from chunkdedup.ingestion.executors import LocalExecutor
from chunkdedup.ingestion.report import RemovalReport
from chunkdedup.ingestion.sequence import IngestOptions, Progress, ingest_with
from chunkdedup.store import Store
from chunkdedup.types import FileResult, Page


def remove_documents(
    index: str | Path, doc_ids: Sequence[str], *, lock_timeout: float = 30.0
) -> RemovalReport:
    """Remove documents (only their sources) and decide again what depended on them: the ingest
    sequence (:func:`~chunkdedup.ingestion.sequence.ingest_with`) with a removal in place of the
    parse phase, under the config of the index's last ingest run (so the other documents keep their
    chunking) and its embedder.

    Example:
        >>> remove_documents("policies.sqlite", ["privacy/old.md"]).canonicals_touched  # doctest: +SKIP
        12
    """
    with Store.open(index) as store:
        cfg = store.runs.last_config() or Config()
        _refuse_missing(store, index, doc_ids)
        recorded = store.settings.embedder()
    embedder = None
    if cfg.semantic.enabled and recorded is not None:
        from chunkdedup.embed import get_embedder

        embedder = get_embedder(recorded.name)
    touched: list[int] = []

    def removal(
        store: Store, config: Config, run_id: int, tick: Progress, at_hand: dict[str, tuple[Page, ...]]
    ) -> list[FileResult]:
        owners = _refuse_missing(store, index, doc_ids)  # again, under the writer lock
        with store.transaction():
            touched.append(store.documents.remove_documents(doc_ids, run_id))
            files = sorted(set(owners.values()))
            kept = store.documents.files_with_documents(files)
            for path in files:
                if path in kept:  # a JSONL/Parquet file keeps other records: re-read it next time
                    store.documents.reread_file(path)
                else:
                    store.documents.forget_file(path)
        return []

    options = IngestOptions(config=cfg, lock_timeout=lock_timeout, embedder=embedder)
    report = ingest_with([], index, options, LocalExecutor(), source=removal)
    return RemovalReport(tuple(doc_ids), touched[0], report.totals.documents_chunked)


def _refuse_missing(store: Store, index: str | Path, doc_ids: Sequence[str]) -> dict[str, str]:
    """The file of each of ``doc_ids``; an InputError naming those the index does not hold."""
    owners = store.documents.doc_owners(doc_ids)
    missing = [d for d in doc_ids if d not in owners]
    if missing:
        raise InputError(
            f"no such document(s) in {index}: {missing}; the `doc` fields of `chunkdedup export` name them"
        )
    return owners


__all__ = ["remove_documents"]
