"""Removing documents by id: their sources go, and what depends on them is decided again (the
corpus chrome, the documents whose chrome moved, the clusters of the groups they touched, the text
index), by the same phases as an ingest.

Removal costs what the removed records hold: a JSONL or Parquet file that keeps other records is
marked to be read again at the next ingest, not read here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from chunkdedup.config import Config
from chunkdedup.errors import InputError
from chunkdedup.ingestion.clusters import update_clusters
from chunkdedup.ingestion.executors import LocalExecutor
from chunkdedup.ingestion.report import RemovalReport
from chunkdedup.ingestion.sequence import chunk_phase, config_fingerprint, decide_chrome
from chunkdedup.store import Store, textindex
from chunkdedup.store.vectors import recorded_embedder


def remove_documents(
    index: str | Path, doc_ids: Sequence[str], *, lock_timeout: float = 30.0
) -> RemovalReport:
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
        rechunked, _ = chunk_phase(store, fingerprint, cfg, run_id, lambda *a: None, keys, LocalExecutor())
        recorded = recorded_embedder(store)
        embedder = None
        if cfg.semantic.enabled and recorded is not None:
            from chunkdedup.embed import get_embedder

            embedder = get_embedder(recorded.name)
        update_clusters(store, cfg, run_id, embedder=embedder, known=keys)
        textindex.sync(store)
        store.reclaim()
        summary = RemovalReport(tuple(doc_ids), touched, rechunked)
        store.finish_run(run_id, summary.to_json())
    return summary


__all__ = ["remove_documents"]
