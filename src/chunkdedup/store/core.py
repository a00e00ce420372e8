"""The index: one SQLite file (WAL) holding documents, pages, boilerplate statistics, canonical
chunks with their sources, ingest runs, and an FTS5 table kept in sync by triggers.

:class:`Store` is the one object a caller opens; each table family is a class of its own module:

- :mod:`~chunkdedup.store.connection`: opening, migrations, the writer lock, transactions, meta;
- :mod:`~chunkdedup.store.run_tables`: the runs;
- :mod:`~chunkdedup.store.document_tables`: files, documents, pages, contexts, a chunked batch's write;
- :mod:`~chunkdedup.store.boilerplate_tables`: document keys, unit counts, chrome, stripped lines;
- :mod:`~chunkdedup.store.chunk_tables`: sources, groups, canonicals and variants, with
  :mod:`~chunkdedup.store.band_tables` (bands, near edges) and :mod:`~chunkdedup.store.embedding_tables`
  (vectors, semantic edges) (``Store.chunks``);
- :mod:`~chunkdedup.store.batches`: the IN-list batcher and the staging tables they all write through.
"""

from __future__ import annotations

from chunkdedup.store.connection import DEFERRED_INDEXES as DEFERRED_INDEXES
from chunkdedup.store.connection import DOC_KEYS_FORMAT as DOC_KEYS_FORMAT
from chunkdedup.store.connection import NEW_FILE_PAGE_BYTES as NEW_FILE_PAGE_BYTES
from chunkdedup.store.connection import _statements as _statements
from chunkdedup.store.connection import writer_active as writer_active
from chunkdedup.store.document_tables import DocumentTables
from chunkdedup.store.document_tables import document_row as document_row
from chunkdedup.store.run_tables import RunTables


class Store(DocumentTables, RunTables):
    """An open index file. Use :meth:`open`; close it (or use ``with``) when done.

    Example:
        >>> with Store.open("index.sqlite") as store:  # doctest: +SKIP
        ...     print(store.file_paths())
    """
