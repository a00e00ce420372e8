"""The store: every SQL statement of chunkdedup lives in this package.

- :mod:`~chunkdedup.store.core`: :class:`Store`, an open index file with every table family below;
- :mod:`~chunkdedup.store.connection`: the connection (open, writer lock, migrations, transactions, meta);
- :mod:`~chunkdedup.store.run_tables`: the ingest and removal runs;
- :mod:`~chunkdedup.store.document_tables`: files, documents, pages and document contexts;
- :mod:`~chunkdedup.store.boilerplate_tables`: boilerplate keys, their unit counts, chrome, stripped lines;
- :mod:`~chunkdedup.store.schema`: the named migrations;
- :mod:`~chunkdedup.store.chunk_tables`: clusters (sources, groups, canonicals, variants);
- :mod:`~chunkdedup.store.band_tables`: MinHash bands and the kept near edges;
- :mod:`~chunkdedup.store.embedding_tables`: embeddings and semantic edges;
- :mod:`~chunkdedup.store.batches`: the IN-list batcher and the staging tables;
- :mod:`~chunkdedup.store.textindex`: the text engines (FTS5, tantivy);
- :mod:`~chunkdedup.store.vectorindex`: the approximate vector index (usearch HNSW folder);
- :mod:`~chunkdedup.store.index`: the typed reads of :class:`chunkdedup.index.Index` (stats, canonicals,
  merges, variants, boilerplate, export records);
- :mod:`~chunkdedup.store.counts`: the whole-index counts each write stores for readers (stats);
- :mod:`~chunkdedup.store.reads`: query-time reads of documents and clusters (filters, versions,
  citations), and the read snapshot a delta is taken in;
- :mod:`~chunkdedup.store.fulltext`: text search reads (FTS5 BM25, tantivy keys, document contexts);
- :mod:`~chunkdedup.store.topk`: FTS5's exact top k without scoring the rows only common terms hold;
- :mod:`~chunkdedup.store.vectors`: the stored embeddings, by id or streamed in blocks;
- :mod:`~chunkdedup.store.evaluation`: what ``eval`` and ``audit`` read (last run, figures, calibration);
- :mod:`~chunkdedup.store.views`: the paginated, indexed reads of the web view (``chunkdedup serve``);
- :mod:`~chunkdedup.store.index_errors`: what a damaged, full or locked index file means for the user.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chunkdedup.store.core import DOC_KEYS_FORMAT, Store, copy_index, writer_active

# Imported on first use (PEP 562): the error module (chunkdedup.store.index_errors) is read by the CLI's
# error handling, and `chunkdedup COMMAND --help` must not load numpy and numba through the core.
_CORE = frozenset({"DOC_KEYS_FORMAT", "Store", "copy_index", "writer_active"})


def __getattr__(name: str) -> Any:
    if name in _CORE:
        value = getattr(import_module("chunkdedup.store.core"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'chunkdedup.store' has no attribute {name!r}")


__all__ = ["DOC_KEYS_FORMAT", "Store", "copy_index", "writer_active"]
