"""Reading an index: stats, documents, one canonical with its sources, merges and variants, stripped
boilerplate, and export records, each as a typed row of :mod:`~chunkdedup.store.rows`.

:class:`IndexReader` holds every read; :class:`chunkdedup.index.Index`, the door a caller opens,
adds the query to it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Self

from chunkdedup.errors import ChunkdedupError, IndexError_, MigrationPendingError
from chunkdedup.store import Store, counts, reads, vectors, writer_active
from chunkdedup.store.batches import in_lists
from chunkdedup.store.evaluation import EvaluationReads
from chunkdedup.store.review import ReviewQueue
from chunkdedup.store.rows import (
    DocumentRow,
    FamilyCounts,
    IndexStats,
    MergeRow,
    SlowTextEngine,
    TextEngine,
    VariantRow,
)
from chunkdedup.store.schema import CANONICAL_TEXT, in_clusters
from chunkdedup.store.vectors import StoredEmbedder, VectorBatch
from chunkdedup.store.views import IndexViews
from chunkdedup.types import BoilerplateKey, CanonicalChunk, ChunkRef, Citation, ExportRecord


class IndexReader:
    """A read view over a :class:`Store`: every read of :class:`chunkdedup.index.Index` but the query.

    Example:
        >>> with IndexReader.open("index.sqlite") as ix:  # doctest: +SKIP
        ...     print(ix.stats()["canonical_chunks"])
    """

    def __init__(self, store: Store) -> None:
        self._store: Store | None = store
        self._text_handle: Any = None
        self._vector_handle: Any = None

    @property
    def store(self) -> Store:
        """The store this view reads; an :class:`~chunkdedup.errors.IndexError_` once it is closed."""
        if self._store is None:
            raise IndexError_("this Index is closed: open it again (`with Index.open(path) as ix:`)")
        return self._store

    def text_handle(self) -> Any:
        """The open ``tantivy.Index`` of this index's text folder, or None when the index uses FTS5,
        the folder is missing (it is derived: the next ingest rebuilds it) or tantivy is not installed;
        BM25 then runs on FTS5, which every index maintains."""
        from chunkdedup.store import textindex

        if self._text_handle is None and textindex.engine(self.store) == "tantivy":
            path = textindex.folder(self.store.path)
            try:
                tantivy = textindex.import_tantivy()
            except ChunkdedupError:
                return None
            if (path / "meta.json").exists():
                self._text_handle = tantivy.Index.open(str(path))
        return self._text_handle

    def vector_handle(self) -> Any:
        """The open HNSW folder of this index (:class:`~chunkdedup.store.vectorindex.AnnHandle`), or
        None when it is missing, stale (another embedder, an older run: the next ingest syncs it) or
        usearch is not installed; vector search is then exact. Checked again on every call, so a
        sync by an ingest is seen by the next question."""
        from chunkdedup.store import vectorindex

        self._vector_handle = vectorindex.load(self.store, self._vector_handle)
        return self._vector_handle

    @classmethod
    def open(cls, path: str | Path, *, migrate: bool = True) -> Self:
        """Open an index to read. An index from an older chunkdedup gets its new schema laid out
        once (under the writer lock, as an ingest would), then is opened read-only; with
        ``migrate=False`` (a read-only server) that is an error saying how to upgrade it."""
        try:
            return cls(Store.open(path, readonly=True))
        except MigrationPendingError:
            if not migrate:
                raise
            Store.open(path).close()
            return cls(Store.open(path, readonly=True))

    def close(self) -> None:
        """Close the index (a second close does nothing); every later read says it is closed."""
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def views(self) -> IndexViews:
        """The paginated reads of this index (the web view's): a page of documents, of a canonical's
        sources or groups, a document's pages and chunks, a boilerplate key's documents, the overview."""
        return IndexViews(self.store)

    @property
    def path(self) -> Path:
        """The index file."""
        return self.store.path

    @property
    def evaluation(self) -> EvaluationReads:
        """The reads an evaluation makes (the last ingest run, the funnel, calibration pairs, vectors)."""
        return EvaluationReads(self.store)

    @property
    def review(self) -> ReviewQueue:
        """The review queue: merges and version pairs to review, and the decisions kept."""
        return ReviewQueue(self.store)

    def stats(self) -> IndexStats:
        """Counts a person can act on: documents, pages, stripped lines, chunks before and after dedup.

        The whole-index counts come from the row the last write stored (:mod:`~chunkdedup.store.counts`),
        or from the tables when there is none to use (an index of an older version, one being written).
        """
        c = counts.stored(self.store.conn) or counts.count(self.store.conn)
        return IndexStats(
            documents=c.documents, pending_documents=c.pending_documents, pages=c.pages,
            pages_without_text=c.pages_without_text, lines_running=c.lines_running,
            lines_chrome=c.lines_chrome, boilerplate_keys=c.boilerplate_keys, raw_chunks=c.sources,
            after_exact=c.groups, canonical_chunks=c.canonicals, variant_pairs=c.variants,
            index_bytes=_database_bytes(self.store), last_run=self.last_finished_run(),
            text_engine=self._text_engine(),
        )

    def _text_engine(self) -> TextEngine:
        """The BM25 engine, the changes its tantivy folder still lacks, and the folder's size."""
        from chunkdedup.store import textindex

        name = textindex.engine(self.store)
        if name == "fts5":
            return TextEngine(name)
        folder = textindex.folder(self.store.path)
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0
        return TextEngine(name, textindex.pending(self.store), size)

    def slow_text_engine(self, texts: int | None = None) -> SlowTextEngine | None:
        """The advice to move to tantivy when this index is on FTS5 with enough texts that FTS5 answers
        slowly (:func:`~chunkdedup.store.textindex.slow_fts5`), else None. ``texts``: the count to judge
        by (the overview's ``after_exact``); by default FTS5's own totals record (one row read)."""
        from chunkdedup.store import textindex

        n = textindex.fts5_rows(self.store) if texts is None else texts
        if not textindex.slow_fts5(textindex.engine(self.store), n):
            return None
        return SlowTextEngine(n, textindex.tantivy_command(self.store.path))

    def last_finished_run(self) -> int | None:
        """The newest finished run's id: the watermark of ``export --changes-since`` and of a sync."""
        return reads.last_finished_run(self.store)

    def snapshot(self) -> AbstractContextManager[None]:
        """One read transaction: every read inside sees the same committed state, whatever a writer
        commits meanwhile (a delta, its watermark and a check that agree)."""
        return reads.snapshot(self.store)

    def metadata_keys(self) -> frozenset[str]:
        """Every metadata key some document has."""
        return reads.metadata_keys(self.store)

    @staticmethod
    def writer_active(path: str | Path) -> bool:
        """Whether an ingest is writing the index at ``path`` now (it holds the writer lock)."""
        return writer_active(path)

    def documents(self) -> list[DocumentRow]:
        """Every document, by id: its path, pages, state, recognised fields and metadata."""
        return list(self.views.documents().items)

    def boilerplate(self, limit: int | None = None) -> list[BoilerplateKey]:
        """Stripped keys, most widespread first, each with an example from the first document."""
        keys = self.views.boilerplate(limit=-1 if limit is None else limit)
        return [BoilerplateKey(k.key, k.example, k.scope, k.documents, k.pages) for k in keys]

    def canonical(self, chunk_id: str) -> CanonicalChunk | None:
        sql = f"SELECT {CANONICAL_TEXT} FROM canonicals c WHERE c.id=?"
        row = self.store.conn.execute(sql, (chunk_id,)).fetchone()
        if row is None:
            return None
        return CanonicalChunk(chunk_id, row[0], tuple(self._sources(chunk_id)))

    def _sources(self, chunk_id: str) -> Iterator[ChunkRef]:
        rows = self.store.conn.execute(
            'SELECT doc_id, page, start, "end", relation, similarity FROM cluster_sources'
            " WHERE canonical_id=? ORDER BY doc_id, page, start",
            (chunk_id,),
        )
        for r in rows:
            yield ChunkRef(r[0], r[1], r[2], r[3], r[4], r[5])

    def merges(self, chunk_id: str) -> list[MergeRow]:
        """The exact-key groups merged into a canonical: relation, similarity and the words that differ."""
        return list(self.views.merges(chunk_id))

    def variants(self, chunk_id: str) -> list[VariantRow]:
        """Canonicals kept apart from this one by a guard, with their text, the reason (``number`` for
        the number/date guard, else the meaning guard's) and the tokens or words that differ."""
        return list(self.views.variants(chunk_id))

    def family_report(self) -> list[FamilyCounts]:
        """Per document family: canonical chunks kept, exact-key groups merged as near copies, and
        groups kept apart from a near neighbour by a guard (versions)."""
        rows = self.store.conn.execute(
            """
            SELECT COALESCE(d.family, '(no family)'),
                   SUM(g.relation = 'exact'), SUM(g.relation = 'near'), SUM(g.relation = 'semantic'),
                   SUM(g.id IN (SELECT a FROM variants UNION SELECT b FROM variants))
            FROM groups g JOIN document_rows d ON d.dkey = g.rep_dkey
            GROUP BY 1 ORDER BY 1
            """
        )
        return [FamilyCounts(*r) for r in rows]

    def metadata(self, doc_id: str) -> dict[str, Any]:
        row = self.store.conn.execute("SELECT metadata FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
        return {} if row is None else dict(json.loads(row[0]))

    def export(self, *, since_run: int | None = None) -> Iterator[dict[str, Any]]:
        """Stream export records as the JSON objects ``export`` writes, ordered by id: the
        ``to_json()`` of each :meth:`records` record (``id``, ``text``, ``sources``)."""
        for rec in self.records(since_run=since_run):
            yield rec.to_json()

    def records(self, *, since_run: int | None = None) -> Iterator[ExportRecord]:
        """Stream typed export records, ordered by id; with ``since_run`` only canonicals changed after
        it. Each source is a :class:`Citation` (``doc``, ``page``, ``start``, ``end``, ``relation``,
        ``similarity``, ``metadata``). Uses its own cursor; document metadata is cached per document.

        Example:
            >>> [r.sources[0].doc for r in IndexReader.open("corpus.sqlite").records()]  # doctest: +SKIP
        """

        meta: dict[str, dict[str, Any]] = {}
        ocr = self._ocr_pages()
        conn = self.store.conn
        sql = f"SELECT c.id, {CANONICAL_TEXT} FROM canonicals c"
        args: tuple[Any, ...] = ()
        order = " ORDER BY c.id"  # the groups' rows in id order, through the index by id
        if since_run is not None:
            sql += " WHERE c.updated_run > ?"
            args = (since_run,)
            # the groups' rows in their order, the few changed ones sorted (migration 0037: the rows
            # of the index by id read one by one were 7x a delta's time at 100k canonicals)
            order = " ORDER BY +c.id"
        cursor = conn.execute(sql + order, args)
        while batch := cursor.fetchmany(512):
            for cid, text in batch:
                yield self._record(cid, text, meta, ocr)

    def _ocr_pages(self) -> dict[tuple[str, int], float]:
        """The OCR confidence of every page read by OCR, by (doc, page) (the partial index
        ``pages_ocr``: empty, and read at once, for an index without scans)."""
        rows = self.store.conn.execute(
            "SELECT doc_id, page, ocr_confidence FROM pages WHERE ocr_confidence IS NOT NULL"
        )
        return {(doc, page): conf for doc, page, conf in rows}

    def _record(
        self, chunk_id: str, text: str, meta: dict[str, dict[str, Any]], ocr: dict[tuple[str, int], float]
    ) -> ExportRecord:
        """The export record of canonical ``chunk_id`` (text ``text``); ``meta`` caches documents'
        metadata across records; ``ocr`` holds the OCR confidence of scanned pages."""
        sources = []
        for ref, own, differs in self._export_sources(chunk_id):
            if ref.doc_id not in meta:
                meta[ref.doc_id] = self.metadata(ref.doc_id)
            sources.append(
                Citation(
                    ref.doc_id, ref.page, ref.start, ref.end, ref.relation, ref.similarity,
                    meta[ref.doc_id], text=own, differs=differs,
                    ocr_confidence=ocr.get((ref.doc_id, ref.page)),
                )
            )
        return ExportRecord(chunk_id, text, tuple(sources))

    def _export_sources(self, chunk_id: str) -> Iterator[tuple[ChunkRef, str | None, tuple[str, ...]]]:
        """A canonical's sources, each with its own words and the words that differ from the
        canonical's when it joined as a near or semantic copy (``None`` and ``()`` for a source of
        the leader group). A group's text is its first source's copy; a later copy is read from its
        page (exact keys ignore case, spacing and generated ids: its words may be its own)."""
        # over the tables, not cluster_sources: a source's group and document are at hand, each found
        # by key (a group led by another stores its cluster: canon)
        rows = self.store.conn.execute(
            'SELECT d.doc_id, s.page, s.start, s."end", g.relation, g.similarity, g.canon IS NOT NULL,'
            " (g.rep_dkey, g.rep_page, g.rep_start) = (s.dkey, s.page, s.start), g.text, g.differing"
            " FROM groups g JOIN source_rows s ON s.gid = g.gid JOIN document_rows d ON d.dkey = s.dkey"
            f" WHERE {in_clusters('g', 1)} ORDER BY d.doc_id, s.page, s.start",
            (chunk_id,),
        ).fetchall()
        for doc, page, start, end, relation, similarity, other, rep, text, differing in rows:
            ref = ChunkRef(doc, page, start, end, relation, similarity)
            if not other:
                yield ref, None, ()
                continue
            own = text if rep else reads.page_span(self.store, doc, page, start, end)
            yield ref, own, tuple(json.loads(differing))

    def record(self, chunk_id: str) -> ExportRecord | None:
        """One canonical as :meth:`records` exports it (None when the index has no such id): its text
        and every source, each near or semantic copy with its own words and the words that differ.

        Example:
            >>> IndexReader.open("corpus.sqlite").record("c3a5c26f1f1ed0beedd513b35")  # doctest: +SKIP
        """
        sql = f"SELECT {CANONICAL_TEXT} FROM canonicals c WHERE c.id=?"
        row = self.store.conn.execute(sql, (chunk_id,)).fetchone()
        return None if row is None else self._record(chunk_id, row[0], {}, self._ocr_pages())

    def records_citing(self, doc_ids: Sequence[str]) -> list[ExportRecord]:
        """The export records (as :meth:`records` gives them, ordered by id) of the canonicals with a
        source among ``doc_ids``. The canonicals are found through the sources of those documents
        (the ``sources`` primary key), so the cost follows the documents and what they cite, not the
        size of the index.

        Example:
            >>> [r.id for r in IndexReader.open("corpus.sqlite").records_citing(["a.md"])]  # doctest: +SKIP
        """
        conn = self.store.conn
        found: set[str] = set()
        docs = list(dict.fromkeys(doc_ids))
        for part, marks in in_lists(docs):
            sql = f"SELECT DISTINCT canonical_id FROM sources WHERE doc_id IN ({marks})"
            found.update(r[0] for r in conn.execute(sql, part))
        return self.records_of(sorted(found))

    def records_of(self, chunk_ids: Sequence[str]) -> list[ExportRecord]:
        """The export records of those of ``chunk_ids`` the index holds, ordered by id (an id it no
        longer holds is left out); each found by its key, not by a scan."""
        conn = self.store.conn
        ids = sorted(set(chunk_ids))
        ocr = self._ocr_pages_citing(ids)
        meta: dict[str, dict[str, Any]] = {}
        out = []
        for cid in ids:
            row = conn.execute(f"SELECT {CANONICAL_TEXT} FROM canonicals c WHERE c.id=?", (cid,)).fetchone()
            if row is not None:
                out.append(self._record(cid, row[0], meta, ocr))
        return out

    def _ocr_pages_citing(self, chunk_ids: Sequence[str]) -> dict[tuple[str, int], float]:
        """As :meth:`_ocr_pages`, for the documents these canonicals cite only."""
        conn = self.store.conn
        docs: set[str] = set()
        for part, marks in in_lists(chunk_ids):
            # no DISTINCT: the set takes each once, and SQLite reads the view's two parts by index
            # instead of gathering them to be scanned
            sql = f"SELECT doc_id FROM cluster_sources WHERE canonical_id IN ({marks})"
            docs.update(r[0] for r in conn.execute(sql, part))
        out: dict[tuple[str, int], float] = {}
        ordered = sorted(docs)
        for part, marks in in_lists(ordered):
            rows = conn.execute(
                "SELECT doc_id, page, ocr_confidence FROM pages WHERE ocr_confidence IS NOT NULL"
                f" AND doc_id IN ({marks})",
                part,
            )
            out.update(((doc, page), conf) for doc, page, conf in rows)
        return out

    def embedder(self) -> StoredEmbedder | None:
        """The embedder whose vectors the index holds (its recorded name and dimension), or ``None``
        for an index built without one."""
        return vectors.stored_embedder(self.store)

    def canonical_vectors(self, chunk_ids: Sequence[str]) -> VectorBatch:
        """The stored vectors of these canonicals (float32 little-endian blobs, keyed by canonical
        id; a canonical without a vector is left out). A canonical's vector is its leader group's."""
        keys: list[str] = []
        blobs: list[bytes] = []
        for batch in vectors.vectors_of(self.store, list(dict.fromkeys(chunk_ids))):
            keys += batch.keys
            blobs += batch.vectors
        return VectorBatch(tuple(keys), tuple(blobs))

    def deleted_since(self, run: int) -> list[str]:
        """Ids of canonicals deleted after ``run`` and not present now.

        Before the first run nothing existed, so a delta from there (``--changes-since 0``) deletes
        nothing: a consumer cannot hold an id that was made and removed after its watermark.
        """
        first = self.store.conn.execute("SELECT MIN(id) FROM runs").fetchone()[0]
        if first is None or run < first:
            return []
        rows = self.store.conn.execute(  # a lookup by id a tombstone, not a list of every canonical
            "SELECT canonical_id FROM tombstones t WHERE run_id > ? AND NOT EXISTS"
            " (SELECT 1 FROM canonicals c WHERE c.id = t.canonical_id) ORDER BY canonical_id",
            (run,),
        )
        return [r[0] for r in rows]


def _database_bytes(store: Store) -> int:
    """The database's size as of the last commit (pages times page size): what the file holds once its
    write-ahead log is checkpointed. The file plus the log overstates it while a log holds the pages of
    a run (each page again, once per change), and the log is emptied when the last connection closes
    (1M chunks: 3.10 GB reported so for a 2.25 GB file)."""
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    size = store.conn.execute("PRAGMA page_size").fetchone()[0]
    return int(pages) * int(size)
