"""The index: one SQLite file (WAL) holding documents, pages, boilerplate statistics, canonical
chunks with their sources, ingest runs, and an FTS5 table kept in sync by triggers.

:class:`Store` is the one object a caller opens: the connection (:mod:`~chunkdedup.store.connection`:
opening, migrations, the writer lock, transactions, meta) and the table families it holds, one class
of its own module each, built by composition (a family is given the connection and the other families
it needs; none inherits another):

- ``store.settings`` (:mod:`~chunkdedup.store.settings`): what the index was built with, typed, and
  the one rule of a stage whose settings changed (redo it all);
- ``store.runs`` (:mod:`~chunkdedup.store.run_tables`): the runs;
- ``store.boilerplate`` (:mod:`~chunkdedup.store.boilerplate_tables`): document keys, unit counts,
  chrome, stripped lines;
- ``store.documents`` (:mod:`~chunkdedup.store.document_tables`): files, documents, pages, contexts, a
  chunked batch's write;
- ``store.groups`` (:mod:`~chunkdedup.store.chunk_tables`): sources, groups, clusters and variants,
  and the indexes of groups a first ingest defers;
- ``store.canonicals`` (:mod:`~chunkdedup.store.canonical_tables`): each cluster's canonical,
  re-derived from its sources whenever a write touches it;
- ``store.bands`` (:mod:`~chunkdedup.store.band_tables`): band rows, their neighbours, near edges;
- ``store.embeddings`` (:mod:`~chunkdedup.store.embedding_tables`): vectors and semantic edges.

:mod:`~chunkdedup.store.batches` holds the IN-list batcher and the staging tables they all write through.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Self

from chunkdedup.store.band_tables import BandKeyer, BandTables
from chunkdedup.store.boilerplate_tables import BoilerplateTables
from chunkdedup.store.canonical_tables import CanonicalTables
from chunkdedup.store.chunk_tables import DEFERRED_INDEXES as DEFERRED_INDEXES
from chunkdedup.store.chunk_tables import GroupTables
from chunkdedup.store.connection import DOC_KEYS_FORMAT as DOC_KEYS_FORMAT
from chunkdedup.store.connection import NEW_FILE_PAGE_BYTES as NEW_FILE_PAGE_BYTES
from chunkdedup.store.connection import Connection
from chunkdedup.store.connection import _statements as _statements
from chunkdedup.store.connection import copy_index as copy_index
from chunkdedup.store.connection import writer_active as writer_active
from chunkdedup.store.document_tables import DocumentTables
from chunkdedup.store.document_tables import document_row as document_row
from chunkdedup.store.embedding_tables import EmbeddingTables
from chunkdedup.store.run_tables import RunTables
from chunkdedup.store.settings import SettingsTables


class Store(Connection):
    """An open index file and its table families. Use :meth:`open`; close it (or use ``with``) when done.

    Example:
        >>> with Store.open("index.sqlite") as store:  # doctest: +SKIP
        ...     print(store.documents.file_paths())
    """

    def __init__(
        self, path: Path, conn: sqlite3.Connection, lock_fd: int | None, keyer: BandKeyer | None = None
    ) -> None:
        super().__init__(path, conn, lock_fd)
        self.settings = SettingsTables(self)
        self.runs = RunTables(self)
        self.boilerplate = BoilerplateTables(self)
        self.bands = BandTables(conn, keyer)
        self.embeddings = EmbeddingTables(conn)
        self.canonicals = CanonicalTables(conn)
        self.groups = GroupTables(self, self.bands, self.canonicals)
        self.documents = DocumentTables(self, self.boilerplate, self.groups)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: bool = False,
        readonly: bool = False,
        keyer: BandKeyer | None = None,
    ) -> Self:
        """Open (or with ``create=True`` create) an index file and bring its schema up to date.
        ``keyer``: the near tier's signing of a group's text, for a run that writes groups (the store
        names a group's band rows with it: :class:`~chunkdedup.store.band_tables.BandTables`)."""
        return cls.open_made(
            path, lambda p, conn, lock: cls(p, conn, lock, keyer), create=create, readonly=readonly
        )
