"""Shared fixtures: the real corpora in ../shared/data, ingested once per session."""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index, ingest
from chunkdedup.store.migrations import (
    CLUSTER_SOURCES_VIEW,
    CONTEXT_TRIGGERS,
    DOCUMENTS_BY_CONFIG_VIEW,
    DOCUMENTS_VIEW,
    PAGES_BY_KEY_VIEW,
    PAGES_SHARING_VIEW,
    SOURCES_VIEW,
)
from chunkdedup.store.schema import CLEAN_TEXT, PAGE_GROUP_TEXT, ROWLESS_PAGE

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEC = DATA / "sec-10q" / "docs"
NTSB = DATA / "ntsb" / "docs"
POLICY = DATA / "site-policy"
POLICY_MANIFEST = POLICY / "manifest.jsonl"


#: An index of this version made as migrations 0001-0024 left it (before 0025): the sources and documents
#: tables filled from their rows, the hashes as 32 hex digits (its canonicals are left keyed by id: 0029,
#: applied again with 0025, rebuilds them either way). ``executescript`` it.
#: Each document's context text by document id (a context is keyed by its document row's key).
CONTEXTS_BY_DOC = "SELECT d.doc_id, c.text FROM contexts c JOIN document_rows d ON d.dkey = c.dkey"

#: How many canonical texts an index stores (where a canonical's text is not its leader group's).
STORED_CANONICAL_TEXTS = "SELECT (SELECT COUNT(ctext) FROM groups) + (SELECT COUNT(text) FROM canonical_rows)"

#: Documents as migrations 0001-0042 left them: found by file through an index of them by file.
BEFORE_0043 = """
DROP TABLE file_docs;
CREATE INDEX documents_file ON document_rows(fkey);
DELETE FROM migrations WHERE name = '0043_file_key_ranges';
"""

#: Document hashes as migrations 0001-0041 left them: 16 bytes (the last 8 unknown now: zeros).
BEFORE_0042 = BEFORE_0043 + """
UPDATE document_rows SET content_hash = CAST(content_hash || zeroblob(8) AS BLOB)
    WHERE typeof(content_hash) = 'blob';
DELETE FROM migrations WHERE name = '0042_short_document_hashes';
"""

#: Band keys as migrations 0001-0040 left them: in each signed group's row (see
#: ``tests/test_band_keys_from_text.py``, which packs them; here a mark, as 0041 leaves it).
BEFORE_0041 = BEFORE_0042 + """
DELETE FROM migrations WHERE name = '0041_band_keys_from_text';
"""

#: Pages as migrations 0001-0039 left them: a row for every page (a one-page document's shared page too).
BEFORE_0040 = BEFORE_0041 + """
DROP VIEW pages;
INSERT INTO page_rows(dkey, page, has_text, raw_text, clean_text, ocr_confidence, links)
    SELECT d.dkey, 1, 1, NULL, NULL, NULL, NULL FROM document_rows d WHERE """ + ROWLESS_PAGE + """;
""" + PAGES_SHARING_VIEW + """
DELETE FROM migrations WHERE name = '0040_rowless_pages';
"""

#: Document rows as migrations 0001-0038 left them: each row's state stored ('pending', 'indexed').
BEFORE_0039 = BEFORE_0040 + """
DROP VIEW documents;
DROP INDEX documents_pending;
ALTER TABLE document_rows ADD COLUMN state TEXT NOT NULL DEFAULT 'indexed';
UPDATE document_rows SET state = 'pending' WHERE ckey IS NULL;
CREATE INDEX documents_pending ON document_rows(state) WHERE state = 'pending';
""" + DOCUMENTS_BY_CONFIG_VIEW + """
DELETE FROM migrations WHERE name = '0039_state_from_config';
"""

#: The contexts' FTS5 table as migrations 0001-0037 left it: with its per-row token counts (``_docsize``).
BEFORE_0038 = BEFORE_0039 + """
DROP TABLE contexts_fts;
CREATE VIRTUAL TABLE contexts_fts USING fts5(
    text, content='contexts', content_rowid='dkey', tokenize='porter unicode61');
INSERT INTO contexts_fts(contexts_fts) VALUES('rebuild');
DELETE FROM migrations WHERE name = '0038_contexts_without_sizes';
"""

#: Canonicals as migrations 0001-0036 left them: a table of their own, keyed by id.
BEFORE_0037 = BEFORE_0038 + """
DROP VIEW canonicals;
CREATE TABLE canonicals(
    id TEXT PRIMARY KEY, text TEXT, n_sources INTEGER NOT NULL, signature TEXT NOT NULL,
    updated_run INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO canonicals(id, text, n_sources, signature, updated_run)
    SELECT id, ctext, cn, csig, crun FROM groups WHERE csig IS NOT NULL
    UNION ALL SELECT id, text, n_sources, signature, updated_run FROM canonical_rows;
DROP TABLE canonical_rows;
ALTER TABLE groups DROP COLUMN ctext;
ALTER TABLE groups DROP COLUMN cn;
ALTER TABLE groups DROP COLUMN csig;
ALTER TABLE groups DROP COLUMN crun;
DELETE FROM migrations WHERE name = '0037_canonicals_in_groups';
"""

#: Pages as migrations 0001-0035 left them: every page row holding its text (none read from a group).
BEFORE_0036 = BEFORE_0037 + """
DROP VIEW pages;
CREATE TABLE page_rows_old(
    dkey INTEGER NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
    raw_text TEXT NOT NULL, clean_text TEXT, ocr_confidence REAL, links TEXT, UNIQUE(dkey, page));
INSERT INTO page_rows_old SELECT p.dkey, p.page, p.has_text,
    COALESCE(p.raw_text, """ + PAGE_GROUP_TEXT + """), p.clean_text, p.ocr_confidence, p.links
    FROM page_rows p ORDER BY p.dkey, p.page;
DROP TABLE page_rows;
ALTER TABLE page_rows_old RENAME TO page_rows;
CREATE INDEX pages_without_text ON page_rows(dkey) WHERE has_text = 0;
CREATE INDEX pages_ocr ON page_rows(dkey, page) WHERE ocr_confidence IS NOT NULL;
""" + PAGES_BY_KEY_VIEW + """
DELETE FROM migrations WHERE name = '0036_pages_share_group_text';
"""

#: Signatures as migrations 0001-0034 left them: 16 bytes (the 8 kept, and 8 zero bytes).
BEFORE_0035 = BEFORE_0036 + """
UPDATE canonicals SET signature = CAST(signature || zeroblob(8) AS BLOB) WHERE typeof(signature) = 'blob';
UPDATE tombstones SET signature = CAST(signature || zeroblob(8) AS BLOB) WHERE typeof(signature) = 'blob';
DELETE FROM migrations WHERE name = '0035_short_signatures';
"""

#: Document rows as migrations 0001-0033 left them: the config hash in each row.
BEFORE_0034 = BEFORE_0035 + """
DROP VIEW documents;
ALTER TABLE document_rows ADD COLUMN config_hash TEXT;
UPDATE document_rows SET config_hash = (SELECT c.hash FROM configs c WHERE c.ckey = document_rows.ckey);
ALTER TABLE document_rows DROP COLUMN ckey;
DROP TABLE configs;
""" + DOCUMENTS_VIEW + """
DELETE FROM migrations WHERE name = '0034_config_keys';
"""

#: Groups as migrations 0001-0032 left them: naming their first source's document by its id.
BEFORE_0033 = BEFORE_0034 + """
ALTER TABLE groups ADD COLUMN rep_doc TEXT NOT NULL DEFAULT '';
UPDATE groups SET rep_doc = (SELECT d.doc_id FROM document_rows d WHERE d.dkey = groups.rep_dkey);
ALTER TABLE groups DROP COLUMN rep_dkey;
DELETE FROM migrations WHERE name = '0033_group_rep_keys';
"""

#: Pages as migrations 0001-0031 left them: a table naming its document by id.
BEFORE_0032 = BEFORE_0033 + """
CREATE TABLE pages_old(
    doc_id TEXT NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
    raw_text TEXT NOT NULL, clean_text TEXT, ocr_confidence REAL, links TEXT, UNIQUE(doc_id, page));
INSERT INTO pages_old SELECT doc_id, page, has_text, raw_text, clean_text, ocr_confidence, links FROM pages
    ORDER BY doc_id, page;
DROP VIEW pages;
DROP TABLE page_rows;
ALTER TABLE pages_old RENAME TO pages;
CREATE INDEX pages_without_text ON pages(doc_id) WHERE has_text = 0;
CREATE INDEX pages_ocr ON pages(doc_id, page) WHERE ocr_confidence IS NOT NULL;
DELETE FROM migrations WHERE name = '0032_page_keys';
"""

#: The rows of documents, their sources and contexts as migrations 0001-0030 left them: documents kept by
#: their id (WITHOUT ROWID), source rows and contexts naming a document by its id (a context's key its
#: own, here not its document's, so a migration must key it again).
BEFORE_0031 = BEFORE_0032 + """
DROP VIEW documents;
DROP VIEW sources;
DROP VIEW cluster_sources;
CREATE TABLE contexts_old(dkey INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, text TEXT NOT NULL);
INSERT INTO contexts_old(dkey, doc_id, text)
    SELECT c.dkey + 1000, d.doc_id, c.text FROM contexts c JOIN document_rows d ON d.dkey = c.dkey ORDER BY 1;
DROP TABLE contexts;
ALTER TABLE contexts_old RENAME TO contexts;
""" + CONTEXT_TRIGGERS + """
INSERT INTO contexts_fts(contexts_fts) VALUES('rebuild');
CREATE TABLE source_rows_old(
    doc_id TEXT NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    gid INTEGER NOT NULL, PRIMARY KEY(doc_id, page, start)) WITHOUT ROWID;
INSERT INTO source_rows_old(doc_id, page, start, "end", gid)
    SELECT d.doc_id, s.page, s.start, s."end", s.gid
    FROM source_rows s JOIN document_rows d ON d.dkey = s.dkey;
DROP TABLE source_rows;
ALTER TABLE source_rows_old RENAME TO source_rows;
CREATE INDEX source_rows_gid ON source_rows(gid, doc_id, page, start);
CREATE TABLE document_rows_old(
    doc_id TEXT PRIMARY KEY, fkey INTEGER NOT NULL, content_hash TEXT NOT NULL,
    unit TEXT NOT NULL, metadata TEXT, department TEXT, family TEXT,
    effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
    config_hash TEXT, run_id INTEGER NOT NULL, title TEXT) WITHOUT ROWID;
INSERT INTO document_rows_old SELECT doc_id, fkey, content_hash, unit, metadata, department, family,
    effective_date, n_pages, state, config_hash, run_id, title FROM document_rows;
DROP TABLE document_rows;
ALTER TABLE document_rows_old RENAME TO document_rows;
CREATE INDEX documents_file ON document_rows(fkey);
CREATE INDEX documents_pending ON document_rows(state) WHERE state = 'pending';
CREATE INDEX documents_family ON document_rows(family) WHERE family IS NOT NULL;
CREATE INDEX documents_department ON document_rows(department) WHERE department IS NOT NULL;
""" + DOCUMENTS_VIEW + SOURCES_VIEW + CLUSTER_SOURCES_VIEW + """
DELETE FROM migrations WHERE name = '0031_document_keys';
"""

#: Groups as migrations 0001-0029 left them: the cluster, relation and differing words stored in every row
#: (real columns), the index by cluster over every group, and the ``sources`` view over those columns.
BEFORE_0030 = BEFORE_0031 + """
DROP VIEW cluster_sources;
DROP VIEW sources;
DROP INDEX groups_canonical;
ALTER TABLE groups DROP COLUMN canonical_id;
ALTER TABLE groups DROP COLUMN relation;
ALTER TABLE groups DROP COLUMN differing;
ALTER TABLE groups ADD COLUMN canonical_id TEXT NOT NULL DEFAULT '';
ALTER TABLE groups ADD COLUMN relation TEXT NOT NULL DEFAULT 'exact';
ALTER TABLE groups ADD COLUMN differing TEXT NOT NULL DEFAULT '[]';
UPDATE groups SET canonical_id = COALESCE(canon, id), relation = COALESCE(rel, 'exact'),
    differing = COALESCE(diff, '[]');
ALTER TABLE groups DROP COLUMN canon;
ALTER TABLE groups DROP COLUMN rel;
ALTER TABLE groups DROP COLUMN diff;
CREATE INDEX groups_canonical ON groups(canonical_id);
""" + SOURCES_VIEW + """
DELETE FROM migrations WHERE name = '0030_group_defaults';
"""

BEFORE_0025 = BEFORE_0030 + """
CREATE TABLE sources_before(
    doc_id TEXT NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL,
    "end" INTEGER NOT NULL, group_id TEXT NOT NULL, canonical_id TEXT NOT NULL,
    relation TEXT NOT NULL, similarity REAL NOT NULL,
    PRIMARY KEY(doc_id, page, start)) WITHOUT ROWID;
INSERT INTO sources_before SELECT * FROM sources;
DROP VIEW sources;
DROP TABLE source_rows;
ALTER TABLE sources_before RENAME TO sources;
CREATE INDEX sources_canonical ON sources(canonical_id, doc_id, page, start);
CREATE INDEX sources_group ON sources(group_id, doc_id, page, start);
CREATE TABLE documents_before(
    doc_id TEXT PRIMARY KEY, file_path TEXT NOT NULL, content_hash TEXT NOT NULL,
    unit TEXT NOT NULL, metadata TEXT NOT NULL, department TEXT, family TEXT,
    effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
    config_hash TEXT, run_id INTEGER NOT NULL, title TEXT);
INSERT INTO documents_before SELECT * FROM documents;
DROP VIEW documents;
DROP TABLE document_rows;
DROP TABLE paths;
ALTER TABLE documents_before RENAME TO documents;
CREATE INDEX documents_file ON documents(file_path);
CREATE INDEX documents_state ON documents(state);
CREATE INDEX documents_family ON documents(family) WHERE family IS NOT NULL;
CREATE INDEX documents_department ON documents(department) WHERE department IS NOT NULL;
UPDATE canonicals SET signature = lower(hex(signature)) WHERE typeof(signature) = 'blob';
UPDATE tombstones SET signature = lower(hex(signature)) WHERE typeof(signature) = 'blob';
DELETE FROM migrations WHERE name IN ('0025_source_rows', '0029_keyed_rows');
"""


def stop_at_chunk_write(monkeypatch: pytest.MonkeyPatch, nth: int) -> None:
    """Make the ``nth`` chunk-phase write (``DocumentTables.replace_chunks``) raise ``KeyboardInterrupt``,
    as a run killed there: the writes before it are committed, its transaction is rolled back."""
    from chunkdedup.store.document_tables import DocumentTables

    calls: list[int] = []
    replace = DocumentTables.replace_chunks

    def stopped(self: DocumentTables, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == nth:
            raise KeyboardInterrupt
        replace(self, *args, **kwargs)

    monkeypatch.setattr(DocumentTables, "replace_chunks", stopped)


def traced_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement of the connections opened from now until ``monkeypatch.undo()``."""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    return statements


def schema_sql(index: Path, kind: str, names: tuple[str, ...]) -> dict[str, str]:
    """The SQL of the schema objects ``names`` of ``kind`` ('index', 'trigger') an index file has."""
    conn = sqlite3.connect(index)
    try:
        marks = ",".join("?" * len(names))
        rows = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE type=? AND name IN ({marks})",
                            (kind, *names))
        return dict(rows.fetchall())
    finally:
        conn.close()


def new_index_schema_sql(kind: str, names: tuple[str, ...]) -> dict[str, str]:
    """:func:`schema_sql` of a new, empty index (as the migrations make it)."""
    from chunkdedup.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        Store.open(Path(tmp) / "i.sqlite", create=True).close()
        return schema_sql(Path(tmp) / "i.sqlite", kind, names)


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"real corpus missing at {path}: the repo must sit beside shared/ (see README)")
    return path


@pytest.fixture(scope="session")
def sec_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sec") / "sec.sqlite"
    ingest([_need(SEC)], path)
    return path


@pytest.fixture(scope="session")
def ntsb_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ntsb") / "ntsb.sqlite"
    ingest([_need(NTSB)], path)
    return path


@pytest.fixture(scope="session")
def policy_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("policy") / "policy.sqlite"
    ingest([_need(POLICY)], path, manifest=POLICY_MANIFEST)
    return path


def clean_pages(index: Path) -> list[tuple[str, int, str]]:
    with Index.open(index) as ix:
        rows = ix.store.conn.execute(f"SELECT doc_id, page, {CLEAN_TEXT}"
            " FROM pages ORDER BY doc_id, page")
        return [(r[0], r[1], r[2] or "") for r in rows]


def chunk_texts(index: Path) -> list[str]:
    with Index.open(index) as ix:
        return [r["text"] for r in ix.export()]


@pytest.fixture(scope="session")
def real_candidate_pairs(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Any, dict[str, list[Any]]]]:
    """``benchmarks/real_pairs.py`` and every candidate near pair of sec-10q, site-policy, ntsb and
    terms (ingested once, the number/date guard alone), by corpus."""
    benchmarks = str(Path(__file__).resolve().parents[1] / "benchmarks")
    sys.path.insert(0, benchmarks)
    try:
        import real_pairs

        work = tmp_path_factory.mktemp("real-pairs")
        rp = real_pairs
        yield rp, {c: rp.corpus_pairs(c, rp.index_for(c, rp.DATA, work)) for c in rp.CORPORA}
    finally:
        sys.path.remove(benchmarks)
