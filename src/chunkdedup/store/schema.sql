-- The layout of a new chunkdedup index: every table, view, trigger and index, one comment each.
-- A new file is made from this text; an older file is brought to it by the migrations of schema.py
-- (tests/test_schema_file.py checks that replaying every migration gives this layout). FTS5's own
-- tables (groups_fts_data, _idx, _docsize, _config and contexts_fts_*) come with their virtual tables.

-- The migrations applied to this file, by name (a new file records every one).
CREATE TABLE migrations(name TEXT PRIMARY KEY, applied TEXT);

-- Settings the derived state was made under, and watermarks (schema.MetaKey names every key).
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);

-- One row per ingest, removal or other writing run: its paths, manifest, config and summary.
CREATE TABLE runs(
    id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL,
    paths TEXT NOT NULL, manifest TEXT, config TEXT NOT NULL, summary TEXT);

-- Every input file seen: its content hash and how its last run went (indexed, failed, unchanged).
CREATE TABLE files(
    path TEXT PRIMARY KEY, content_hash TEXT, status TEXT NOT NULL, reason TEXT,
    run_id INTEGER NOT NULL);

-- Boilerplate candidate line keys per document (hashes), for the corpus document frequency.
CREATE TABLE doc_keys(khash INTEGER NOT NULL, doc_id TEXT NOT NULL, counted INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY(khash, doc_id)) WITHOUT ROWID;

-- The keys of a document, for a document removed or read again.
CREATE INDEX doc_keys_doc ON doc_keys(doc_id);

-- Corpus chrome: line keys frequent enough across documents (and units) to strip.
CREATE TABLE chrome(khash INTEGER PRIMARY KEY, units INTEGER NOT NULL);

-- The chrome keys each document's pages were stripped of.
CREATE TABLE doc_chrome(doc_id TEXT NOT NULL, khash INTEGER NOT NULL,
    PRIMARY KEY(doc_id, khash)) WITHOUT ROWID;

-- The text of each boilerplate key (shown by `boilerplate` and the report).
CREATE TABLE bp_keys(khash INTEGER PRIMARY KEY, key TEXT NOT NULL);

-- What stripping removed from each document: a key, its scope (running or chrome), pages, lines, an example.
CREATE TABLE stripped(
    doc_id TEXT NOT NULL, khash INTEGER NOT NULL, scope TEXT NOT NULL,
    pages INTEGER NOT NULL, lines INTEGER NOT NULL, example TEXT NOT NULL,
    PRIMARY KEY(doc_id, khash, scope)) WITHOUT ROWID;

-- The documents a key was stripped from.
CREATE INDEX stripped_key ON stripped(khash);

-- Groups whose cluster must be decided again (their edges or sources changed).
CREATE TABLE dirty(group_id TEXT PRIMARY KEY) WITHOUT ROWID;

-- Near pairs kept apart: the earlier canonical a, the later b, their similarity, differing words and reason.
CREATE TABLE variants(
    a TEXT NOT NULL, b TEXT NOT NULL, similarity REAL NOT NULL, differing TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT 'number',
    PRIMARY KEY(a, b)) WITHOUT ROWID;

-- The variants of a later canonical.
CREATE INDEX variants_b ON variants(b);

-- A group's embedding (float32 bytes), where an embedder is set.
CREATE TABLE embeddings(group_id TEXT PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID;

-- Semantic tier pairs (two groups and their cosine) at or above its threshold.
CREATE TABLE semantic_edges(a TEXT NOT NULL, b TEXT NOT NULL, cosine REAL NOT NULL,
    PRIMARY KEY(a, b)) WITHOUT ROWID;

-- The semantic pairs of a group as the later one.
CREATE INDEX semantic_edges_b ON semantic_edges(b);

-- Canonicals that went (removed or merged away), for sync: the run and their last signature.
CREATE TABLE tombstones(canonical_id TEXT PRIMARY KEY, run_id INTEGER NOT NULL, signature TEXT, updated_run INTEGER);

-- One row per exact-key group: its text, sources' count, first page and offset, its cluster (canon, rel,
-- diff only where not its own; canonical_id, relation, differing generated over them), the document
-- that is its first source, and the canonical it leads (ctext, cn, csig, crun).
CREATE TABLE "groups"(
    gid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,
    n_sources INTEGER NOT NULL, rep_page INTEGER NOT NULL,
    rep_start INTEGER NOT NULL, signed BLOB, similarity REAL NOT NULL DEFAULT 1.0,
    edged INTEGER NOT NULL DEFAULT 0, canon TEXT, rel TEXT, diff TEXT,
    canonical_id TEXT GENERATED ALWAYS AS (COALESCE(canon, id)) VIRTUAL,
    relation TEXT GENERATED ALWAYS AS (COALESCE(rel, 'exact')) VIRTUAL,
    differing TEXT GENERATED ALWAYS AS (COALESCE(diff, '[]')) VIRTUAL,
    rep_dkey INTEGER, ctext TEXT, cn INTEGER, csig BLOB, crun INTEGER);

-- Groups not signed yet (no MinHash bands written for them).
CREATE INDEX groups_unsigned ON groups(id) WHERE signed IS NULL;

-- BM25 over the groups' text (FTS5, external content).
CREATE VIRTUAL TABLE groups_fts USING fts5(
    text, content='groups', content_rowid='gid', tokenize='porter unicode61');

-- Groups whose text changed since the tantivy folder was written.
CREATE TABLE text_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, gid INTEGER NOT NULL);

-- Log a new group for the tantivy folder.
CREATE TRIGGER groups_log_ai AFTER INSERT ON groups
    WHEN (SELECT value FROM meta WHERE key='text_engine') = 'tantivy' BEGIN
    INSERT INTO text_log(gid) VALUES (new.gid);
END;

-- Log a group gone for the tantivy folder.
CREATE TRIGGER groups_log_ad AFTER DELETE ON groups
    WHEN (SELECT value FROM meta WHERE key='text_engine') = 'tantivy' BEGIN
    INSERT INTO text_log(gid) VALUES (old.gid);
END;

-- Log a group's new text for the tantivy folder.
CREATE TRIGGER groups_log_au AFTER UPDATE OF text ON groups
    WHEN old.text IS NOT new.text
    AND (SELECT value FROM meta WHERE key='text_engine') = 'tantivy' BEGIN
    INSERT INTO text_log(gid) VALUES (new.gid);
END;

-- Verified near pairs (two groups and their Jaccard similarity), kept for re-deciding clusters.
CREATE TABLE near_edges(a TEXT NOT NULL, b TEXT NOT NULL, similarity REAL NOT NULL,
    PRIMARY KEY(a, b)) WITHOUT ROWID;

-- The near pairs of a group as the later one.
CREATE INDEX near_edges_b ON near_edges(b);

-- Keep groups_fts up to date on insert (unless a first ingest defers it and builds it once).
CREATE TRIGGER groups_ai AFTER INSERT ON groups
    WHEN (SELECT value FROM meta WHERE key='fts_deferred') IS NULL BEGIN
    INSERT INTO groups_fts(rowid, text) VALUES (new.gid, new.text);
END;

-- Keep groups_fts up to date on delete.
CREATE TRIGGER groups_ad AFTER DELETE ON groups
    WHEN (SELECT value FROM meta WHERE key='fts_deferred') IS NULL BEGIN
    INSERT INTO groups_fts(groups_fts, rowid, text) VALUES('delete', old.gid, old.text);
END;

-- Keep groups_fts up to date when a group's text changes.
CREATE TRIGGER groups_au AFTER UPDATE OF text ON groups
    WHEN old.text IS NOT new.text AND (SELECT value FROM meta WHERE key='fts_deferred') IS NULL BEGIN
    INSERT INTO groups_fts(groups_fts, rowid, text) VALUES('delete', old.gid, old.text);
    INSERT INTO groups_fts(rowid, text) VALUES (new.gid, new.text);
END;

-- Band keys staged during a run before they are written to bands.
CREATE TABLE band_stage(group_id TEXT NOT NULL, band_key INTEGER NOT NULL);

-- The zstd dictionaries page texts are compressed with.
CREATE TABLE text_dicts(dict_id INTEGER PRIMARY KEY, data BLOB NOT NULL);

-- How many units (documents or families) hold each boilerplate key.
CREATE TABLE key_units(khash INTEGER PRIMARY KEY, units INTEGER NOT NULL);

-- Keys whose unit count changed since chrome was last decided.
CREATE TABLE stale_keys(khash INTEGER PRIMARY KEY);

-- What a person decided on reading a pair (merge or apart), when (UTC) and by whom where given.
CREATE TABLE overrides(
    a TEXT NOT NULL, b TEXT NOT NULL, decision TEXT NOT NULL CHECK (decision IN ('merge', 'apart')),
    decided_at TEXT, decided_by TEXT,
    PRIMARY KEY(a, b)) WITHOUT ROWID;

-- MinHash LSH: one row per band key and group (a group's keys are a function of its text).
CREATE TABLE "bands"(band_key INTEGER NOT NULL, gid INTEGER NOT NULL,
    PRIMARY KEY(band_key, gid)) WITHOUT ROWID;

-- Every file path once, named by an integer key.
CREATE TABLE paths(fkey INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);

-- The groups another group leads (a group leading itself is found by its id).
CREATE INDEX groups_canonical ON groups(canon) WHERE canon IS NOT NULL;

-- One row per document: its file (fkey), content hash, unit, metadata, family, department, date, pages,
-- the run that wrote it, its title and the chunking config it was chunked under (ckey; NULL: pending).
CREATE TABLE "document_rows"(
    dkey INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, fkey INTEGER NOT NULL,
    content_hash TEXT NOT NULL, unit TEXT NOT NULL, metadata TEXT, department TEXT, family TEXT,
    effective_date TEXT, n_pages INTEGER NOT NULL, run_id INTEGER NOT NULL, title TEXT, ckey INTEGER);

-- The documents of a family.
CREATE INDEX documents_family ON document_rows(family) WHERE family IS NOT NULL;

-- The documents of a department.
CREATE INDEX documents_department ON document_rows(department) WHERE department IS NOT NULL;

-- One row per chunk occurrence: its document, page and character start and end, and its group.
CREATE TABLE "source_rows"(
    dkey INTEGER NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
    gid INTEGER NOT NULL, PRIMARY KEY(dkey, page, start)) WITHOUT ROWID;

-- The sources of a group.
CREATE INDEX source_rows_gid ON source_rows(gid, dkey, page, start);

-- Sources as reads name them: document id, page, offsets, group, cluster, relation, similarity.
CREATE VIEW sources(doc_id, page, start, "end", group_id, canonical_id, relation, similarity) AS
    SELECT d.doc_id, s.page, s.start, s."end", g.id, g.canonical_id, g.relation, g.similarity
    FROM source_rows s JOIN document_rows d ON d.dkey = s.dkey JOIN groups g ON g.gid = s.gid;

-- Sources for reads that name clusters: in two parts, each answered by an index.
CREATE VIEW cluster_sources(doc_id, page, start, "end", group_id, canonical_id, relation, similarity) AS
    SELECT d.doc_id, s.page, s.start, s."end", g.id, g.canon, g.relation, g.similarity
    FROM groups g JOIN source_rows s ON s.gid = g.gid JOIN document_rows d ON d.dkey = s.dkey
    WHERE g.canon IS NOT NULL
    UNION ALL
    SELECT d.doc_id, s.page, s.start, s."end", g.id, g.id, g.relation, g.similarity
    FROM groups g JOIN source_rows s ON s.gid = g.gid JOIN document_rows d ON d.dkey = s.dkey
    WHERE g.canon IS NULL;

-- A document's context (title, family, date, headings), searched to give a question its document.
CREATE TABLE "contexts"(dkey INTEGER PRIMARY KEY, text TEXT NOT NULL);

-- Keep contexts_fts up to date on insert.
CREATE TRIGGER contexts_ai AFTER INSERT ON contexts BEGIN
    INSERT INTO contexts_fts(rowid, text) VALUES (new.dkey, new.text);
END;

-- Keep contexts_fts up to date on delete.
CREATE TRIGGER contexts_ad AFTER DELETE ON contexts BEGIN
    INSERT INTO contexts_fts(contexts_fts, rowid, text) VALUES('delete', old.dkey, old.text);
END;

-- Keep contexts_fts up to date when a context changes.
CREATE TRIGGER contexts_au AFTER UPDATE OF text ON contexts WHEN old.text IS NOT new.text BEGIN
    INSERT INTO contexts_fts(contexts_fts, rowid, text) VALUES('delete', old.dkey, old.text);
    INSERT INTO contexts_fts(rowid, text) VALUES (new.dkey, new.text);
END;

-- Every chunking config hash once, named by an integer key.
CREATE TABLE configs(ckey INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE);

-- One row per page: whether it has text, its text as parsed and after stripping (zstd frames or text;
-- raw_text NULL where one group's text is the whole page), its OCR confidence and its links.
CREATE TABLE "page_rows"(
    dkey INTEGER NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
    raw_text TEXT, clean_text TEXT, ocr_confidence REAL, links TEXT, UNIQUE(dkey, page));

-- Pages without text (blank or unread scans).
CREATE INDEX pages_without_text ON page_rows(dkey) WHERE has_text = 0;

-- Pages read by OCR.
CREATE INDEX pages_ocr ON page_rows(dkey, page) WHERE ocr_confidence IS NOT NULL;

-- A canonical while no group has its id (else it is kept in its leader group's row).
CREATE TABLE canonical_rows(
    id TEXT PRIMARY KEY, text TEXT, n_sources INTEGER NOT NULL, signature BLOB NOT NULL,
    updated_run INTEGER NOT NULL) WITHOUT ROWID;

-- Every canonical: those kept in their leader's row and those in canonical_rows.
CREATE VIEW canonicals(id, text, n_sources, signature, updated_run) AS
    SELECT id, ctext, cn, csig, crun FROM groups WHERE csig IS NOT NULL
    UNION ALL
    SELECT id, text, n_sources, signature, updated_run FROM canonical_rows;

-- BM25 over the documents' contexts (FTS5, external content, no per-row sizes).
CREATE VIRTUAL TABLE contexts_fts USING fts5(
    text, content='contexts', content_rowid='dkey', tokenize='porter unicode61', columnsize=0);

-- Documents not chunked yet.
CREATE INDEX documents_pending ON document_rows(ckey) WHERE ckey IS NULL;

-- Documents as reads name them: file path, hash as hex, state from the chunking (pending or indexed).
CREATE VIEW documents(doc_id, file_path, content_hash, unit, metadata, department, family,
        effective_date, n_pages, state, config_hash, run_id, title) AS
    SELECT d.doc_id, p.path,
        CASE WHEN typeof(d.content_hash) = 'blob' THEN lower(hex(d.content_hash))
            ELSE d.content_hash END,
        d.unit, COALESCE(d.metadata, '{}'), d.department, d.family, d.effective_date, d.n_pages,
        CASE WHEN d.ckey IS NULL THEN 'pending' ELSE 'indexed' END,
        (SELECT c.hash FROM configs c WHERE c.ckey = d.ckey), d.run_id, d.title
    FROM document_rows d LEFT JOIN paths p ON p.fkey = d.fkey;

-- Pages as reads name them: a page kept as one group's text, or a one-page document's only page
-- with no row, reads its text from the group.
CREATE VIEW pages(doc_id, page, has_text, raw_text, clean_text, ocr_confidence, links) AS
    SELECT d.doc_id, p.page, p.has_text, COALESCE(p.raw_text, (SELECT g.text FROM source_rows s JOIN groups g ON g.gid = s.gid WHERE s.dkey = p.dkey AND s.page = p.page AND s.start = 0)), p.clean_text,
        p.ocr_confidence, p.links
    FROM page_rows p JOIN document_rows d ON d.dkey = p.dkey
    UNION ALL
    SELECT d.doc_id, 1, 1, (SELECT g.text FROM source_rows s JOIN groups g ON g.gid = s.gid WHERE s.dkey = d.dkey AND s.page = 1 AND s.start = 0), NULL, NULL, NULL FROM document_rows d WHERE d.n_pages = 1 AND NOT EXISTS (SELECT 1 FROM page_rows r WHERE r.dkey = d.dkey);

-- The ranges of document keys each file's documents were written in (a file finds its documents).
CREATE TABLE file_docs(fkey INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL,
    PRIMARY KEY(fkey, lo)) WITHOUT ROWID;
