"""Files, documents, pages and document contexts: what an ingest stores of each input, and what the
chunk phase reads of it and writes back (clean pages, sources, stripped lines).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from chunkdedup.normalize import running_lines
from chunkdedup.store.batches import (
    Tables,
    document_keys,
    execute_for_ids,
    in_lists,
    insert_rows,
    rows_for_ids,
)
from chunkdedup.store.boilerplate_tables import BoilerplateTables
from chunkdedup.store.chunk_tables import GroupTables
from chunkdedup.store.connection import Connection
from chunkdedup.store.page_spans import texts_back_for_documents
from chunkdedup.store.schema import (
    CLEAN_TEXT,
    DOC_CONTENT_HASH,
    DOC_UNIT,
    FILE_DKEYS,
    PENDING_DOCUMENTS,
    RAW_TEXT,
    MetaKey,
    stored_hash,
)
from chunkdedup.types import ContextSource, Document, DocumentKeys, KeyedDocument, KnownFile, Page

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class DocumentTables(Tables):
    """The files an index was given, their documents and pages, the documents' contexts, and the chunk
    phase's write of a batch of documents (:meth:`replace_chunks`). Given the index's connection
    (``db``: meta, the page codec), the boilerplate family (a document's keys and stripped lines) and the
    group family (a document's sources)."""

    def __init__(self, db: Connection, boilerplate: BoilerplateTables, groups: GroupTables) -> None:
        super().__init__(db.conn)
        self.db = db
        self.boilerplate = boilerplate
        self.groups = groups

    def file_hash(self, path: str) -> str | None:
        row = self.conn.execute("SELECT content_hash FROM files WHERE path=?", (path,)).fetchone()
        return None if row is None else row[0]

    def put_file(
        self, path: str, content_hash: str | None, status: str, reason: str | None, run_id: int
    ) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files(path, content_hash, status, reason, run_id) VALUES (?, ?, ?, ?, ?)",
            (path, content_hash, status, reason, run_id),
        )

    def files_noting(self, phrases: Sequence[str]) -> frozenset[str]:
        """The ingested files whose note holds one of ``phrases`` (what their parse could not do)."""
        if not phrases:
            return frozenset()
        held = " OR ".join("instr(reason, ?) > 0" for _ in phrases)
        rows = self.conn.execute(
            f"SELECT path FROM files WHERE status = 'ingested' AND reason IS NOT NULL AND ({held})",
            list(phrases),
        )
        return frozenset(r[0] for r in rows)

    def file_paths(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT path FROM files ORDER BY path")]

    def forget_file(self, path: str) -> None:
        """Drop a file's row (its last document was removed)."""
        self.conn.execute("DELETE FROM files WHERE path=?", (path,))

    def reread_file(self, path: str) -> None:
        """Make the next ingest parse the file again (a JSONL/Parquet file that keeps other records)."""
        self.conn.execute("UPDATE files SET content_hash=NULL WHERE path=?", (path,))

    def known_file(self, path: str) -> KnownFile:
        """What the index holds of a file: its content hash while it has documents, and its documents'
        ``(content hash, doc id, pages)`` rows (as read: an unchanged file needs none of them)."""
        rows = self.conn.execute(
            f"SELECT {DOC_CONTENT_HASH}, d.doc_id, d.n_pages FROM document_rows d"
            f" WHERE d.dkey IN {FILE_DKEYS} ORDER BY d.doc_id",
            (path,),
        ).fetchall()
        return KnownFile(self.file_hash(path) if rows else None, tuple(rows))

    def has_documents(self) -> bool:
        """Whether the index holds any document (a first ingest's index holds none)."""
        return self.conn.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None

    def known_hash(self, path: str) -> str | None:
        """:meth:`known_file`'s content hash alone (two index lookups): enough to tell an unchanged file."""
        has = self.conn.execute(f"SELECT 1 FROM {FILE_DKEYS} LIMIT 1", (path,)).fetchone()
        return self.file_hash(path) if has is not None else None

    def docs_of_file(self, path: str) -> list[str]:
        sql = f"SELECT d.doc_id FROM document_rows d WHERE d.dkey IN {FILE_DKEYS} ORDER BY d.doc_id"
        rows = self.conn.execute(sql, (path,))
        return [r[0] for r in rows]

    def doc_owner(self, doc_id: str) -> str | None:
        row = self.conn.execute("SELECT file_path FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
        return None if row is None else row[0]

    def doc_owners(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """The file of each of ``doc_ids`` the index holds (one statement per 500 ids)."""
        sql = "SELECT doc_id, file_path FROM documents WHERE doc_id IN ({})"
        return dict(rows_for_ids(self.conn, sql, sorted(set(doc_ids))))

    def changed_documents(self, docs: Sequence[Document]) -> set[str]:
        """The ids of ``docs`` not stored exactly as they are (content hash, metadata, place): an
        unchanged record of a JSONL or Parquet file that changed elsewhere is not among them."""
        ids = sorted({doc.doc_id for doc in docs})
        stored = {r[0]: tuple(r[1:]) for r in rows_for_ids(self.conn, _DOCUMENT_ROWS, ids)}
        # a row is made only to be compared with a stored one (a first ingest's documents: none)
        return {d.doc_id for d in docs if d.doc_id not in stored or stored[d.doc_id] != document_row(d)}

    def put_documents(self, items: Sequence[tuple[Document, DocumentKeys]], run_id: int) -> None:
        """Store parsed documents (pages and boilerplate candidate keys) as pending chunking, a few
        statements for the whole batch.

        A new version of a stored document first loses its old sources, so no source ever points
        into page text that is being replaced.
        """
        if not items:
            return
        c = self.conn
        rows = {doc.doc_id: document_row(doc) for doc, _ in items}
        ids = [doc.doc_id for doc, _ in items]
        changed = self.groups.docs_with_sources(ids)
        if changed:
            self.groups.replace_sources(changed, (), run_id)
        # A chunked document's new version is written over its rows, not deleted and inserted again:
        # a row keeps its place, and the indexes of unchanged columns (the file, the family, the
        # department, the page key) are not written (an edited record dirtied one leaf of each, at
        # random). The others (new ones: every document of a first ingest) are inserted as they were.
        over = set(changed)
        doc_rows = [(doc.doc_id, *rows[doc.doc_id], run_id) for doc, _ in items]
        inserted = [r for r in doc_rows if r[0] not in over]
        rewritten = [r for r in doc_rows if r[0] in over]
        paths = sorted({r[1] for r in doc_rows})  # a document row names its file by its path's key
        c.executemany("INSERT OR IGNORE INTO paths(path) VALUES (?)", [(p,) for p in paths])
        c.executemany(_REPLACE_DOCUMENT, inserted)
        c.executemany(_UPSERT_DOCUMENT, rewritten)
        c.executemany(_MOVE_DOCUMENT, [(r[1], r[5], r[6], r[0], r[1], r[5], r[6]) for r in rewritten])
        keys = document_keys(c, ids)  # a page row names its document by the row's key
        execute_for_ids(c, "DELETE FROM page_rows WHERE dkey IN ({})", sorted(keys[r[0]] for r in inserted))
        c.executemany(
            "DELETE FROM page_rows WHERE dkey=? AND page NOT IN (SELECT value FROM json_each(?))",
            [(keys[d.doc_id], json.dumps([p.number for p in d.pages])) for d, _ in items if d.doc_id in over],
        )
        codec = self.db.codec
        codec.learn(p.text for doc, _ in items for p in doc.pages)  # read only until it is trained
        self.db.keep_dict()
        page_rows = [
            (keys[doc.doc_id], p.number, int(p.has_text_layer), codec.encode(p.text), _links(p))
            for doc, _ in items
            for p in doc.pages
        ]
        rewritten_keys = {keys[d] for d in over}
        c.executemany(
            _INSERT_PAGE,
            [r for r in page_rows if r[0] not in rewritten_keys],
        )
        over_pages = [r for r in page_rows if r[0] in rewritten_keys]
        c.executemany(_UPSERT_PAGE, over_pages)
        c.executemany(
            "UPDATE page_rows SET has_text=? WHERE dkey=? AND page=? AND has_text IS NOT ?",
            [(r[2], r[0], r[1], r[2]) for r in over_pages],
        )
        _put_ocr(c, [doc for doc, _ in items], over, keys)
        _place_documents(c, sorted(keys.values()))
        self.boilerplate.set_many_doc_keys([(doc.doc_id, keys) for doc, keys in items])

    def remove_document(self, doc_id: str, run_id: int) -> int:
        """Remove a document and only its sources; returns how many canonicals it touched."""
        return self.remove_documents([doc_id], run_id)

    def remove_documents(self, doc_ids: Sequence[str], run_id: int) -> int:
        """Remove documents and only their sources, a few statements per 500 of them (their groups
        and canonicals re-derived once for all); returns how many canonicals they touched. The work
        follows what the documents hold, not the size of the files they came from."""
        ids = sorted(set(doc_ids))
        if not ids:
            return 0
        keys = document_keys(self.conn, ids)  # what their sources, pages and contexts name them by
        chunked = self.groups.docs_with_sources(ids)
        touched = self.groups.replace_sources(chunked, (), run_id, keys=keys) if chunked else 0
        self.boilerplate.keys_change(ids)  # their units and keys no longer count
        sql = "SELECT DISTINCT fkey FROM document_rows WHERE doc_id IN ({})"
        files = [r[0] for r in rows_for_ids(self.conn, sql, ids)]
        for table in ("contexts", "page_rows"):
            execute_for_ids(self.conn, f"DELETE FROM {table} WHERE dkey IN ({{}})", sorted(keys.values()))
        for table in ("doc_keys", "doc_chrome", "stripped", "document_rows"):
            execute_for_ids(self.conn, f"DELETE FROM {table} WHERE doc_id IN ({{}})", ids)
        unnamed = [  # a path no document names any more goes, with its ranges
            (f,)
            for f in sorted(set(files))
            if self.conn.execute(_FILE_HAS_DOCUMENTS, (f,)).fetchone() is None
        ]
        self.conn.executemany("DELETE FROM paths WHERE fkey=?", unnamed)
        self.conn.executemany("DELETE FROM file_docs WHERE fkey=?", unnamed)
        return touched

    def files_with_documents(self, paths: Sequence[str]) -> set[str]:
        """Those of ``paths`` that still hold a document (one index probe each)."""
        probe = f"SELECT 1 FROM {FILE_DKEYS} LIMIT 1"
        return {p for p in paths if self.conn.execute(probe, (p,)).fetchone() is not None}

    def remove_file(self, path: str, run_id: int) -> list[str]:
        docs = self.docs_of_file(path)
        self.remove_documents(docs, run_id)
        self.conn.execute("DELETE FROM files WHERE path=?", (path,))
        return docs

    def context_sources(self, doc_ids: Sequence[str]) -> list[ContextSource]:
        """What the contexts of these documents are made from (ids not in the index are left out)."""
        out: list[ContextSource] = []
        for part, marks in in_lists(doc_ids):
            running: dict[str, list[str]] = {}
            for doc_id, example in self.conn.execute(
                f"SELECT doc_id, example FROM stripped WHERE scope='running' AND doc_id IN ({marks})"
                " ORDER BY doc_id, pages DESC, khash",
                part,
            ):
                running.setdefault(doc_id, []).append(example)
            first = dict(
                self.conn.execute(
                    f"SELECT doc_id, {RAW_TEXT} FROM pages WHERE page=1 AND doc_id IN ({marks})", part
                )
            )
            rows = self.conn.execute(
                f"SELECT doc_id, file_path, metadata, title FROM documents WHERE doc_id IN ({marks})"
                " ORDER BY doc_id",
                part,
            )
            # most records hold no metadata: "{}" is not parsed (50k json.loads of it: 0.12-0.14 s)
            out.extend(
                ContextSource(
                    d,
                    path,
                    {} if meta == "{}" else json.loads(meta),
                    title,
                    running_lines(running.get(d, ())),
                    first.get(d) or "",
                )
                for d, path, meta, title in rows
            )
        return out

    def docs_without_context(self, run_id: int, chunked: Sequence[str] | None = None) -> list[str]:
        """Documents with no context yet, or chunked (so perhaps stripped anew) in run ``run_id``.

        ``chunked``: the documents run ``run_id`` stored or chunked (every one whose row names the run),
        when the caller knows them. Then, when every document has a context (as many contexts as
        documents: a context is only written for a document and removed with it), they are the answer,
        and the documents are not scanned (an incremental run's contexts: 40 ms of a 50k-document join).
        """
        if chunked is not None and _count(self.conn, "document_rows") == _count(self.conn, "contexts"):
            return sorted(set(chunked))
        rows = self.conn.execute(
            "SELECT d.doc_id FROM document_rows d LEFT JOIN contexts c ON c.dkey = d.dkey"
            " WHERE c.dkey IS NULL OR d.run_id = ? ORDER BY d.doc_id",
            (run_id,),
        )
        return [r[0] for r in rows]

    def put_contexts(self, rows: Sequence[tuple[str, str]]) -> None:
        """Set ``(doc_id, context text)`` rows; an unchanged text is not re-indexed. One statement for
        all of them (FTS5 triggers: see :func:`~chunkdedup.store.chunk_tables.staged_rows`)."""
        if not rows:
            return
        keys = document_keys(self.conn, [doc_id for doc_id, _ in rows])  # a context is keyed by its row's
        insert_rows(
            self.conn,
            _CONTEXT_STAGE,
            "contexts",
            "dkey, text",
            [(keys[doc_id], text) for doc_id, text in rows],
            " ON CONFLICT(dkey) DO UPDATE SET text=excluded.text WHERE text IS NOT excluded.text",
        )

    def load_pages(self, doc_id: str, *, clean: bool = False) -> tuple[Page, ...]:
        """A document's pages as parsed, or (``clean``) as stripped; a stripped page of a document not
        chunked yet reads as its raw text."""
        # a stripped page's text has moved: its link spans are those of the parsed text
        column = CLEAN_TEXT + ", NULL" if clean else RAW_TEXT + ", links"
        rows = self.conn.execute(
            f"SELECT page, {column}, has_text, ocr_confidence FROM pages WHERE doc_id=? ORDER BY page",
            (doc_id,),
        )
        return tuple(Page(r[0], r[1] or "", bool(r[3]), r[4], _spans(r[2])) for r in rows)

    def doc_ids(self, *, stale_config: str | None = None) -> list[str]:
        """All document ids, or the indexed ones chunked under another config than ``stale_config``
        (none, without a scan, when every indexed one is known to be chunked under it:
        :meth:`set_chunked_config`)."""
        if stale_config is None:
            rows = self.conn.execute("SELECT doc_id FROM documents ORDER BY doc_id")
        elif self.chunked_under(stale_config):
            return []
        else:
            rows = self.conn.execute(
                "SELECT doc_id FROM documents WHERE state='indexed' AND config_hash IS NOT ? ORDER BY doc_id",
                (stored_hash(stale_config),),
            )
        return [r[0] for r in rows]

    def docs_to_chunk(self, config_hash: str) -> list[str]:
        """Pending documents, documents chunked under another config, and documents whose chrome
        keys (their strippable keys that are chrome now, counted or not) differ from those they were
        stripped with. When every indexed document is known to be chunked under ``config_hash``
        (:meth:`set_chunked_config`), the pending ones are read by their index, not every document."""
        params: tuple[str | bytes, ...] = ()
        mine = f"SELECT doc_id FROM {PENDING_DOCUMENTS}"
        if not self.chunked_under(config_hash):
            mine = "SELECT doc_id FROM documents WHERE state='pending' OR config_hash IS NOT ?"
            params = (stored_hash(config_hash),)
        rows = self.conn.execute(
            f"""
            {mine}
            UNION
            SELECT k.doc_id FROM doc_keys k JOIN chrome USING(khash)
              LEFT JOIN doc_chrome dc ON dc.doc_id=k.doc_id AND dc.khash=k.khash WHERE dc.doc_id IS NULL
            UNION
            SELECT dc.doc_id FROM doc_chrome dc LEFT JOIN chrome c USING(khash) WHERE c.khash IS NULL
            ORDER BY 1
            """,
            params,
        )
        return [r[0] for r in rows]

    def set_chunked_config(self, config_hash: str) -> None:
        """Record that every indexed document is chunked under ``config_hash`` (after a chunk phase
        chunked every document :meth:`docs_to_chunk` gave for it). :meth:`replace_chunks` under
        another config forgets it in the same transaction, so a killed run never leaves it wrong."""
        self.db.set_meta(_CHUNKED_CONFIG, config_hash)

    def chunked_under(self, config_hash: str) -> bool:
        """Whether every indexed document is known to be chunked under ``config_hash``."""
        return self.db.meta(_CHUNKED_CONFIG) == config_hash

    def replace_chunks(
        self,
        docs: Sequence[KeyedDocument],
        config_hash: str,
        run_id: int,
        band_keys: Sequence[tuple[Sequence[str], npt.NDArray[np.int64]]] = (),
    ) -> None:
        """Replace documents' cleaned text, sources and stripped lines; mark them indexed.

        The groups and canonicals their old and new sources touch are re-derived once for the whole
        batch (a transaction's worth of documents), not once per document. ``band_keys``: (group ids,
        their band keys) of a first ingest's batch: a new group is written signed (``signed`` 1)
        (:meth:`~chunkdedup.store.band_tables.BandTables.put_first_bands` writes the band rows).
        """
        c = self.conn
        if self.db.meta(_CHUNKED_CONFIG) not in (None, config_hash):
            self.db.delete_meta(_CHUNKED_CONFIG)
        # A page stripping left as it was keeps no second copy: clean_text NULL reads as raw_text
        # (CLEAN_TEXT), which on most pages of most corpora is the whole page. strip() returns a page
        # it removed no line from as it was, so a page without stripped lines is such a page.
        changed = {(d.doc_id, s.page) for d in docs for s in d.stripped}
        self.db.keep_dict()
        # a document stripped of nothing (most): all its pages' clean text NULL, a statement per 500
        dkeys = document_keys(c, [d.doc_id for d in docs])
        # a page that reads its words from its group (and a rowless one: no row to set) holds them again
        texts_back_for_documents(c, sorted(dkeys[d.doc_id] for d in docs if d.stripped))
        execute_for_ids(
            c,
            "UPDATE page_rows SET clean_text = NULL WHERE dkey IN ({}) AND clean_text IS NOT NULL",
            sorted(dkeys[d.doc_id] for d in docs if not d.stripped),
        )
        c.executemany(
            "UPDATE page_rows SET clean_text = ? WHERE dkey=? AND page=?",
            [
                (self.db.codec.encode(p.text) if (d.doc_id, p.number) in changed else None, dkeys[d.doc_id],
                 p.number)
                for d in docs
                if d.stripped
                for p in d.clean
            ],
        )
        pages = {(d.doc_id, p.number): p.text for d in docs for p in d.clean}
        keyed = [k for d in docs for k in d.keyed]
        signed = {g: 1 for ids, _ in band_keys for g in ids}
        self.groups.replace_sources([d.doc_id for d in docs], keyed, run_id, pages, signed, dkeys)
        self.boilerplate.put_stripped(docs)
        ids = [d.doc_id for d in docs]
        execute_for_ids(c, "DELETE FROM doc_chrome WHERE doc_id IN ({})", ids)
        execute_for_ids(
            c,
            "INSERT INTO doc_chrome(doc_id, khash)"
            " SELECT doc_id, khash FROM doc_keys JOIN chrome USING(khash) WHERE doc_id IN ({})",
            ids,
        )
        # a document row names its config by the key of its hash (migration 0034)
        c.execute("INSERT OR IGNORE INTO configs(hash) VALUES (?)", (stored_hash(config_hash),))
        execute_for_ids(
            c,
            "UPDATE document_rows SET ckey=(SELECT ckey FROM configs WHERE hash=?), run_id=?"
            " WHERE doc_id IN ({})",
            ids,
            (stored_hash(config_hash), run_id),
        )


#: a stored document's row, as :func:`document_row` makes it (the doc id first)
_DOCUMENT_ROWS = (
    f"SELECT doc_id, file_path, content_hash, {DOC_UNIT}, metadata, department, family, effective_date,"
    " n_pages, title FROM documents d WHERE doc_id IN ({})"
)

#: a document's file (parameter 2) as ``document_rows`` keeps it: the key of its path (put first)
_PATH_KEY = "(SELECT fkey FROM paths WHERE path=?2)"

#: a document's unit (parameter 4) as ``documents`` keeps it: '' where it is its own (schema.DOC_UNIT)
_OWN_UNIT = "CASE WHEN ?4 = 'doc:' || ?1 THEN '' ELSE ?4 END"

#: :meth:`DocumentTables.put_documents`: a document row (pending chunking), new or written over the old one in
#: every column but its key (``dkey``: what its context and source rows name it by)
_REPLACE_DOCUMENT = (
    "INSERT INTO document_rows(doc_id, fkey, content_hash, unit, metadata, department,"
    " family, effective_date, n_pages, title, ckey, run_id)"
    " VALUES (?1, " + _PATH_KEY + ", stored_hash(?3), " + _OWN_UNIT + ", NULLIF(?5, '{}'), ?6, ?7, ?8, ?9,"
    " ?10, NULL, ?11)"
    " ON CONFLICT(doc_id) DO UPDATE SET fkey=excluded.fkey, content_hash=excluded.content_hash,"
    " unit=excluded.unit, metadata=excluded.metadata, department=excluded.department,"
    " family=excluded.family, effective_date=excluded.effective_date, n_pages=excluded.n_pages,"
    " title=excluded.title, ckey=NULL, run_id=excluded.run_id"
)

#: the row written over the old one (a chunked document's): the indexed columns (file, department,
#: family) are set by _MOVE_DOCUMENT, only where they changed
_UPSERT_DOCUMENT = (
    "INSERT INTO document_rows(doc_id, fkey, content_hash, unit, metadata, department, family,"
    " effective_date, n_pages, title, ckey, run_id)"
    " VALUES (?1, " + _PATH_KEY + ", stored_hash(?3), " + _OWN_UNIT + ", NULLIF(?5, '{}'), ?6, ?7, ?8, ?9,"
    " ?10, NULL, ?11)"
    " ON CONFLICT(doc_id) DO UPDATE SET content_hash=excluded.content_hash, unit=excluded.unit,"
    " metadata=excluded.metadata, effective_date=excluded.effective_date, n_pages=excluded.n_pages,"
    " title=excluded.title, ckey=NULL, run_id=excluded.run_id"
)

_MOVE_DOCUMENT = (
    "UPDATE document_rows SET fkey=(SELECT fkey FROM paths WHERE path=?), department=?, family=?"
    " WHERE doc_id=?"
    " AND (fkey IS NOT (SELECT fkey FROM paths WHERE path=?) OR department IS NOT ? OR family IS NOT ?)"
)

#: a page's row, new or written over the old one (its text to be cleaned again); has_text is set
#: apart, where it changed (the partial index pages_without_text is written only then)
_INSERT_PAGE = (
    "INSERT INTO page_rows(dkey, page, has_text, raw_text, clean_text, links) VALUES (?, ?, ?, ?, NULL, ?)"
)
_UPSERT_PAGE = (
    _INSERT_PAGE + " ON CONFLICT(dkey, page) DO UPDATE SET raw_text=excluded.raw_text, clean_text=NULL,"
    " links=excluded.links"
)


def _links(page: Page) -> str | None:
    """A page's :attr:`~chunkdedup.types.Page.links` as ``pages.links`` keeps them: a JSON list of
    ``[start, end]``, NULL for none (most pages)."""
    return json.dumps([list(span) for span in page.links], separators=(",", ":")) if page.links else None


def _spans(value: str | None) -> tuple[tuple[int, int], ...]:
    return tuple((int(s), int(e)) for s, e in json.loads(value)) if value else ()

#: the staging table of :meth:`DocumentTables.put_contexts`
_CONTEXT_STAGE = ("context_stage", "dkey INTEGER, text TEXT")

#: meta key: the config hash every indexed document is chunked under, when known (set_chunked_config)
_CHUNKED_CONFIG: MetaKey = "chunked_config"


def document_row(doc: Document) -> tuple[Any, ...]:
    """What ``documents`` holds of a parsed document (but its id, state and runs), in the column order
    of ``put_documents`` (``benchmarks/ingest_floor.py`` writes the same rows)."""
    return (
        doc.path,
        doc.content_hash,
        doc.unit,
        metadata_json(doc.metadata) if doc.metadata else "{}",
        doc.department,
        doc.family,
        doc.effective_date.isoformat() if doc.effective_date else None,
        len(doc.pages),
        doc.title,
    )


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """A document's metadata as stored: JSON, keys sorted. JSON has no NaN or infinity (SQLite's JSON
    functions refuse them, so a filter would find the index "malformed"): a non-finite number, as a
    missing value of a pandas float column is, is stored as null, as JSON writers store it.

    Example:
        >>> metadata_json({"score": float("nan"), "tags": [1.5, float("inf")]})
        '{"score": null, "tags": [1.5, null]}'
    """
    try:
        return json.dumps(dict(metadata), sort_keys=True, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(dict(metadata)), sort_keys=True)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


#: whether a file (parameter 1: its key) still has a document, through its ranges (file_docs)
_FILE_HAS_DOCUMENTS = (
    "SELECT 1 FROM file_docs r JOIN document_rows d ON d.dkey BETWEEN r.lo AND r.hi AND d.fkey = r.fkey"
    " WHERE r.fkey = ?1 LIMIT 1"
)
#: the file and key of each of these documents (by key) no range of its file holds: the range of its
#: file that starts last at or below its key (ranges of a file never overlap) ends below it
_UNPLACED = (
    "SELECT d.fkey, d.dkey FROM document_rows d WHERE d.dkey IN ({})"
    " AND COALESCE((SELECT r.hi FROM file_docs r WHERE r.fkey = d.fkey AND r.lo <= d.dkey"
    " ORDER BY r.lo DESC LIMIT 1), -1) < d.dkey"
)
#: a range that ends just below a new one of its file takes it on (?1 file, ?2 its lo, ?3 new hi)
_EXTEND = (
    "UPDATE file_docs SET hi = ?3 WHERE fkey = ?1 AND hi = ?2 - 1"
    " AND lo = (SELECT lo FROM file_docs WHERE fkey = ?1 AND lo < ?2 ORDER BY lo DESC LIMIT 1)"
)


def _place_documents(conn: sqlite3.Connection, dkeys: Sequence[int]) -> None:
    """Make the file of each of these documents (new, or moved to another file) find it: its key into
    a range of its file's (``file_docs``), the ranges that follow one another made one (a first
    ingest's batches of a file: one range)."""
    rows = sorted(rows_for_ids(conn, _UNPLACED, dkeys))
    runs: list[list[int]] = []  # [fkey, lo, hi], keys in a row of one file
    for fkey, dkey in rows:
        if runs and runs[-1][0] == fkey and runs[-1][2] == dkey - 1:
            runs[-1][2] = dkey
        else:
            runs.append([fkey, dkey, dkey])
    for fkey, lo, hi in runs:
        if conn.execute(_EXTEND, (fkey, lo, hi)).rowcount == 0:
            conn.execute("INSERT INTO file_docs(fkey, lo, hi) VALUES (?, ?, ?)", (fkey, lo, hi))


def _put_ocr(
    conn: sqlite3.Connection, docs: Sequence[Document], rewritten: set[str], keys: Mapping[str, int]
) -> None:
    """The OCR confidence of the pages read by OCR; a rewritten document's other pages lose theirs
    (both through the partial index ``pages_ocr``: a corpus without scans writes nothing). ``keys``:
    the documents' row keys."""
    conn.executemany(
        "UPDATE page_rows SET ocr_confidence = NULL WHERE dkey=? AND ocr_confidence IS NOT NULL",
        [(keys[d.doc_id],) for d in docs if d.doc_id in rewritten],
    )
    conn.executemany(
        "UPDATE page_rows SET ocr_confidence=? WHERE dkey=? AND page=?",
        [(p.ocr_confidence, keys[d.doc_id], p.number) for d in docs for p in d.pages if p.ocr],
    )


def _count(conn: sqlite3.Connection, table: str) -> int:
    """A table's rows (``table``: one of this module's names, never user input)."""
    return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
