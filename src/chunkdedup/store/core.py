"""The index: one SQLite file (WAL) holding documents, pages, boilerplate statistics, canonical
chunks with their sources, ingest runs, and an FTS5 table kept in sync by triggers.

:class:`Store` is the one object a caller opens: the connection (:mod:`~chunkdedup.store.connection`:
opening, migrations, the writer lock, transactions, meta) and the table families it holds, one class
of its own module each, built by composition (a family is given the connection and the other families
it needs; none inherits another):

- ``store.runs`` (:mod:`~chunkdedup.store.run_tables`): the runs;
- ``store.boilerplate`` (:mod:`~chunkdedup.store.boilerplate_tables`): document keys, unit counts,
  chrome, stripped lines;
- ``store.documents`` (:mod:`~chunkdedup.store.document_tables`): files, documents, pages, contexts, a
  chunked batch's write;
- ``store.groups`` (:mod:`~chunkdedup.store.chunk_tables`): sources, groups, clusters and variants;
- ``store.canonicals`` (:mod:`~chunkdedup.store.canonical_tables`): each cluster's canonical,
  re-derived from its sources whenever a write touches it;
- ``store.bands`` (:mod:`~chunkdedup.store.band_tables`): band rows, their neighbours, near edges;
- ``store.embeddings`` (:mod:`~chunkdedup.store.embedding_tables`): vectors and semantic edges.

:mod:`~chunkdedup.store.batches` holds the IN-list batcher and the staging tables they all write through.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from chunkdedup.store.band_tables import BandTables
from chunkdedup.store.boilerplate_tables import BoilerplateTables
from chunkdedup.store.canonical_tables import CanonicalTables
from chunkdedup.store.chunk_tables import GroupTables
from chunkdedup.store.connection import DOC_KEYS_FORMAT as DOC_KEYS_FORMAT
from chunkdedup.store.connection import NEW_FILE_PAGE_BYTES as NEW_FILE_PAGE_BYTES
from chunkdedup.store.connection import Connection
from chunkdedup.store.connection import _statements as _statements
from chunkdedup.store.connection import writer_active as writer_active
from chunkdedup.store.document_tables import DocumentTables
from chunkdedup.store.document_tables import document_row as document_row
from chunkdedup.store.embedding_tables import EmbeddingTables
from chunkdedup.store.run_tables import RunTables
from chunkdedup.store.schema import MetaKey

#: The indexes of groups a first ingest builds after its chunk phase (:meth:`Store.defer_indexes`):
#: the chunk phase of an index with no groups reads none of them (the cluster pass reads the unsigned
#: groups through it). The index by cluster is not deferred: it holds only groups another leads (migration
#: 0030), none while a first ingest's chunk phase writes.
DEFERRED_INDEXES = ("groups_unsigned",)
_DEFERRED_INDEXES: MetaKey = "deferred_indexes"


class Store(Connection):
    """An open index file and its table families. Use :meth:`open`; close it (or use ``with``) when done.

    Example:
        >>> with Store.open("index.sqlite") as store:  # doctest: +SKIP
        ...     print(store.documents.file_paths())
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_fd: int | None) -> None:
        super().__init__(path, conn, lock_fd)
        self.runs = RunTables(self)
        self.boilerplate = BoilerplateTables(self)
        self.bands = BandTables(conn)
        self.embeddings = EmbeddingTables(conn)
        self.canonicals = CanonicalTables(conn)
        self.groups = GroupTables(conn, self.bands, self.canonicals)
        self.documents = DocumentTables(self, self.boilerplate, self.groups)

    def defer_indexes(self) -> bool:
        """On an index with no groups yet, drop the indexes of groups that the chunk phase does not
        read (:data:`DEFERRED_INDEXES`): :meth:`build_deferred_indexes` makes them again, as they
        were, once all groups are written. Each batch of a first ingest inserts its groups at random
        places of each of them, so every batch rewrote most of their pages. True when they are
        deferred (now, or still, by a run that was killed: the next chunk phase builds them). Queries
        meanwhile read the groups without them (slower, the same rows)."""
        if self.meta(_DEFERRED_INDEXES) is not None:
            return True
        if self.groups.has_groups():
            return False
        with self.transaction():
            self.drop_keeping_sql("index", DEFERRED_INDEXES, _DEFERRED_INDEXES)
        return True

    def build_deferred_indexes(self) -> bool:
        """Make the indexes :meth:`defer_indexes` dropped (one sort of the groups each, one
        transaction). True when there were any."""
        if self.meta(_DEFERRED_INDEXES) is None:
            return False
        with self.transaction():
            self.make_again("index", _DEFERRED_INDEXES)
        return True
