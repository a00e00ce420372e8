"""The migrations that bring an index an older chunkdedup wrote to the layout of ``schema.sql``:
named SQL scripts, applied in order and recorded in ``migrations``. Their text never changes once
released (a view or trigger text two of them share is a constant here). A new index is made from
``schema.sql`` at once; ``tests/test_schema_file.py`` checks that replaying every migration gives it.
"""

from __future__ import annotations

from chunkdedup.store.schema import (
    PAGE_GROUP_TEXT,
    ROWLESS_PAGE,
    ROWLESS_PAGE_TEXT,
)

#: The ``documents`` view over ``document_rows`` (migration 0025 made it; 0029 makes it again over the
#: rebuilt table): a migration's text never changes, so neither does this.
DOCUMENTS_VIEW = """
CREATE VIEW documents(doc_id, file_path, content_hash, unit, metadata, department, family,
        effective_date, n_pages, state, config_hash, run_id, title) AS
    SELECT d.doc_id, p.path,
        CASE WHEN typeof(d.content_hash) = 'blob' THEN lower(hex(d.content_hash))
            ELSE d.content_hash END,
        d.unit, COALESCE(d.metadata, '{}'), d.department, d.family, d.effective_date, d.n_pages,
        d.state, d.config_hash, d.run_id, d.title
    FROM document_rows d LEFT JOIN paths p ON p.fkey = d.fkey;
"""


#: The ``sources`` view over ``source_rows`` (migration 0025 made it; 0030 makes it again over the
#: groups' generated columns). Like every view text below, migrations read it: it never changes.
SOURCES_VIEW = """
CREATE VIEW sources(doc_id, page, start, "end", group_id, canonical_id, relation, similarity) AS
    SELECT s.doc_id, s.page, s.start, s."end", g.id, g.canonical_id, g.relation, g.similarity
    FROM source_rows s JOIN groups g ON g.gid = s.gid;
"""


#: The sources of clusters, for reads that name the clusters (``WHERE canonical_id IN``): the rows of
#: ``sources`` in two parts, groups led by another group and groups leading themselves, so that SQLite
#: pushes the filter into each part, where an index answers it (migration 0030): the index by cluster
#: holds only the groups another leads, and a group leading itself is found by its own id.
CLUSTER_SOURCES_VIEW = """
CREATE VIEW cluster_sources(doc_id, page, start, "end", group_id, canonical_id, relation, similarity) AS
    SELECT s.doc_id, s.page, s.start, s."end", g.id, g.canon, g.relation, g.similarity
    FROM groups g JOIN source_rows s ON s.gid = g.gid WHERE g.canon IS NOT NULL
    UNION ALL
    SELECT s.doc_id, s.page, s.start, s."end", g.id, g.id, g.relation, g.similarity
    FROM groups g JOIN source_rows s ON s.gid = g.gid WHERE g.canon IS NULL;
"""


#: ``sources`` and ``cluster_sources`` again (migration 0031): a source row names its document by the
#: document row's integer key, and the views give its id.
SOURCES_BY_KEY_VIEWS = """
CREATE VIEW sources(doc_id, page, start, "end", group_id, canonical_id, relation, similarity) AS
    SELECT d.doc_id, s.page, s.start, s."end", g.id, g.canonical_id, g.relation, g.similarity
    FROM source_rows s JOIN document_rows d ON d.dkey = s.dkey JOIN groups g ON g.gid = s.gid;
CREATE VIEW cluster_sources(doc_id, page, start, "end", group_id, canonical_id, relation, similarity) AS
    SELECT d.doc_id, s.page, s.start, s."end", g.id, g.canon, g.relation, g.similarity
    FROM groups g JOIN source_rows s ON s.gid = g.gid JOIN document_rows d ON d.dkey = s.dkey
    WHERE g.canon IS NOT NULL
    UNION ALL
    SELECT d.doc_id, s.page, s.start, s."end", g.id, g.id, g.relation, g.similarity
    FROM groups g JOIN source_rows s ON s.gid = g.gid JOIN document_rows d ON d.dkey = s.dkey
    WHERE g.canon IS NULL;
"""


#: ``documents`` again (migration 0034): a document row names the config it was chunked under by the
#: key of its hash in ``configs``.
DOCUMENTS_BY_CONFIG_VIEW = """
CREATE VIEW documents(doc_id, file_path, content_hash, unit, metadata, department, family,
        effective_date, n_pages, state, config_hash, run_id, title) AS
    SELECT d.doc_id, p.path,
        CASE WHEN typeof(d.content_hash) = 'blob' THEN lower(hex(d.content_hash))
            ELSE d.content_hash END,
        d.unit, COALESCE(d.metadata, '{}'), d.department, d.family, d.effective_date, d.n_pages,
        d.state, (SELECT c.hash FROM configs c WHERE c.ckey = d.ckey), d.run_id, d.title
    FROM document_rows d LEFT JOIN paths p ON p.fkey = d.fkey;
"""


#: The ``documents`` view once a document's state is its chunking (migration 0039): pending while it
#: names no config it was chunked under (``ckey`` NULL), indexed once it does.
DOCUMENTS_BY_CHUNKING_VIEW = """
CREATE VIEW documents(doc_id, file_path, content_hash, unit, metadata, department, family,
        effective_date, n_pages, state, config_hash, run_id, title) AS
    SELECT d.doc_id, p.path,
        CASE WHEN typeof(d.content_hash) = 'blob' THEN lower(hex(d.content_hash))
            ELSE d.content_hash END,
        d.unit, COALESCE(d.metadata, '{}'), d.department, d.family, d.effective_date, d.n_pages,
        CASE WHEN d.ckey IS NULL THEN 'pending' ELSE 'indexed' END,
        (SELECT c.hash FROM configs c WHERE c.ckey = d.ckey), d.run_id, d.title
    FROM document_rows d LEFT JOIN paths p ON p.fkey = d.fkey;
"""


#: The row triggers that keep ``contexts_fts`` (migration 0007 makes them; 0031 makes them again over the
#: table keyed by document).
CONTEXT_TRIGGERS = """
CREATE TRIGGER contexts_ai AFTER INSERT ON contexts BEGIN
    INSERT INTO contexts_fts(rowid, text) VALUES (new.dkey, new.text);
END;
CREATE TRIGGER contexts_ad AFTER DELETE ON contexts BEGIN
    INSERT INTO contexts_fts(contexts_fts, rowid, text) VALUES('delete', old.dkey, old.text);
END;
CREATE TRIGGER contexts_au AFTER UPDATE OF text ON contexts WHEN old.text IS NOT new.text BEGIN
    INSERT INTO contexts_fts(contexts_fts, rowid, text) VALUES('delete', old.dkey, old.text);
    INSERT INTO contexts_fts(rowid, text) VALUES (new.dkey, new.text);
END;
"""


#: The ``pages`` view over ``page_rows`` (migration 0032 made it; 0036 makes it again, below).
PAGES_BY_KEY_VIEW = """
CREATE VIEW pages(doc_id, page, has_text, raw_text, clean_text, ocr_confidence, links) AS
    SELECT d.doc_id, p.page, p.has_text, p.raw_text, p.clean_text, p.ocr_confidence, p.links
    FROM page_rows p JOIN document_rows d ON d.dkey = p.dkey;
"""


#: ``pages`` again (migration 0036): a page that is all one chunk, whose group's text is the page's
#: own words, keeps no copy of them (``raw_text`` NULL, stripping having left it as it was); the view
#: reads them from the group. The store gives such a page its text back before the group's text
#: changes or its source goes (``GroupTables.replace_sources``, ``refresh_groups``).
PAGES_SHARING_VIEW = f"""
CREATE VIEW pages(doc_id, page, has_text, raw_text, clean_text, ocr_confidence, links) AS
    SELECT d.doc_id, p.page, p.has_text, COALESCE(p.raw_text, {PAGE_GROUP_TEXT}), p.clean_text,
        p.ocr_confidence, p.links
    FROM page_rows p JOIN document_rows d ON d.dkey = p.dkey;
"""


#: ``pages`` again (migration 0040): the page rows, and a page for each one-page document without one.
PAGES_WITHOUT_ROWS_VIEW = f"""
CREATE VIEW pages(doc_id, page, has_text, raw_text, clean_text, ocr_confidence, links) AS
    SELECT d.doc_id, p.page, p.has_text, COALESCE(p.raw_text, {PAGE_GROUP_TEXT}), p.clean_text,
        p.ocr_confidence, p.links
    FROM page_rows p JOIN document_rows d ON d.dkey = p.dkey
    UNION ALL
    SELECT d.doc_id, 1, 1, {ROWLESS_PAGE_TEXT}, NULL, NULL, NULL FROM document_rows d WHERE {ROWLESS_PAGE};
"""


#: The ``canonicals`` view (migration 0037): a canonical is kept in its leader group's row (the group
#: whose id it has; its text stored there only where it is not the group's: :data:`CANONICAL_TEXT`),
#: or in ``canonical_rows`` while no group has its id. (The view giving the text whole, SQLite no
#: longer merged its two parts in id order: an export of 1M canonicals sorted them in a temp B-tree.)
CANONICALS_VIEW = """
CREATE VIEW canonicals(id, text, n_sources, signature, updated_run) AS
    SELECT id, ctext, cn, csig, crun FROM groups WHERE csig IS NOT NULL
    UNION ALL
    SELECT id, text, n_sources, signature, updated_run FROM canonical_rows;
"""


MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_initial",
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE runs(
            id INTEGER PRIMARY KEY, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL,
            paths TEXT NOT NULL, manifest TEXT, config TEXT NOT NULL, summary TEXT);
        CREATE TABLE files(
            path TEXT PRIMARY KEY, content_hash TEXT, status TEXT NOT NULL, reason TEXT,
            run_id INTEGER NOT NULL);
        CREATE TABLE documents(
            doc_id TEXT PRIMARY KEY, file_path TEXT NOT NULL, content_hash TEXT NOT NULL,
            unit TEXT NOT NULL, metadata TEXT NOT NULL, department TEXT, family TEXT,
            effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
            config_hash TEXT, run_id INTEGER NOT NULL);
        CREATE INDEX documents_file ON documents(file_path);
        CREATE INDEX documents_state ON documents(state);
        CREATE INDEX documents_family ON documents(family);
        CREATE TABLE pages(
            doc_id TEXT NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
            raw_text TEXT NOT NULL, clean_text TEXT,
            PRIMARY KEY(doc_id, page)) WITHOUT ROWID;
        -- boilerplate candidate keys per document (hashes), for corpus document frequency
        CREATE TABLE doc_keys(khash INTEGER NOT NULL, doc_id TEXT NOT NULL,
            PRIMARY KEY(khash, doc_id)) WITHOUT ROWID;
        CREATE INDEX doc_keys_doc ON doc_keys(doc_id);
        -- the corpus-chrome decision of the last completed run, with unit counts
        CREATE TABLE chrome(khash INTEGER PRIMARY KEY, units INTEGER NOT NULL);
        -- the chrome keys each document was last stripped with
        CREATE TABLE doc_chrome(doc_id TEXT NOT NULL, khash INTEGER NOT NULL,
            PRIMARY KEY(doc_id, khash)) WITHOUT ROWID;
        CREATE TABLE bp_keys(khash INTEGER PRIMARY KEY, key TEXT NOT NULL);
        CREATE TABLE stripped(
            doc_id TEXT NOT NULL, khash INTEGER NOT NULL, scope TEXT NOT NULL,
            pages INTEGER NOT NULL, lines INTEGER NOT NULL, example TEXT NOT NULL,
            PRIMARY KEY(doc_id, khash, scope)) WITHOUT ROWID;
        CREATE INDEX stripped_key ON stripped(khash);
        CREATE TABLE canonicals(
            rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,
            n_sources INTEGER NOT NULL, signature TEXT NOT NULL, updated_run INTEGER NOT NULL);
        -- one row per chunk: group_id is its exact-key group, canonical_id the cluster it is indexed under
        CREATE TABLE sources(
            doc_id TEXT NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL,
            "end" INTEGER NOT NULL, group_id TEXT NOT NULL, canonical_id TEXT NOT NULL,
            relation TEXT NOT NULL, similarity REAL NOT NULL,
            PRIMARY KEY(doc_id, page, start)) WITHOUT ROWID;
        CREATE INDEX sources_canonical ON sources(canonical_id, doc_id, page, start);
        CREATE INDEX sources_group ON sources(group_id, doc_id, page, start);
        -- exact-key groups: text of the smallest source, its order, the MinHash signature, the cluster
        CREATE TABLE groups(
            id TEXT PRIMARY KEY, text TEXT NOT NULL, n_sources INTEGER NOT NULL,
            rep_doc TEXT NOT NULL, rep_page INTEGER NOT NULL, rep_start INTEGER NOT NULL,
            signature BLOB, canonical_id TEXT NOT NULL, relation TEXT NOT NULL DEFAULT 'exact',
            similarity REAL NOT NULL DEFAULT 1.0, differing TEXT NOT NULL DEFAULT '[]');
        CREATE INDEX groups_canonical ON groups(canonical_id);
        CREATE INDEX groups_unsigned ON groups(id) WHERE signature IS NULL;
        CREATE TABLE bands(band_key INTEGER NOT NULL, group_id TEXT NOT NULL,
            PRIMARY KEY(band_key, group_id)) WITHOUT ROWID;
        CREATE INDEX bands_group ON bands(group_id);
        -- groups whose cluster must be re-decided (persisted, so a killed run is completed by the next)
        CREATE TABLE dirty(group_id TEXT PRIMARY KEY) WITHOUT ROWID;
        -- pairs above the near threshold kept apart by the number/date guard: versions, not copies
        CREATE TABLE variants(
            a TEXT NOT NULL, b TEXT NOT NULL, similarity REAL NOT NULL, differing TEXT NOT NULL,
            PRIMARY KEY(a, b)) WITHOUT ROWID;
        CREATE INDEX variants_b ON variants(b);
        -- semantic tier: one float32 vector per group, and the pairs at or above the cosine threshold
        CREATE TABLE embeddings(group_id TEXT PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID;
        CREATE TABLE semantic_edges(a TEXT NOT NULL, b TEXT NOT NULL, cosine REAL NOT NULL,
            PRIMARY KEY(a, b)) WITHOUT ROWID;
        CREATE INDEX semantic_edges_b ON semantic_edges(b);
        CREATE TABLE tombstones(canonical_id TEXT PRIMARY KEY, run_id INTEGER NOT NULL);
        CREATE VIRTUAL TABLE canonicals_fts USING fts5(
            text, content='canonicals', content_rowid='rowid', tokenize='porter unicode61');
        CREATE TRIGGER canonicals_ai AFTER INSERT ON canonicals BEGIN
            INSERT INTO canonicals_fts(rowid, text) VALUES (new.rowid, new.text);
        END;
        CREATE TRIGGER canonicals_ad AFTER DELETE ON canonicals BEGIN
            INSERT INTO canonicals_fts(canonicals_fts, rowid, text) VALUES('delete', old.rowid, old.text);
        END;
        CREATE TRIGGER canonicals_au AFTER UPDATE OF text ON canonicals BEGIN
            INSERT INTO canonicals_fts(canonicals_fts, rowid, text) VALUES('delete', old.rowid, old.text);
            INSERT INTO canonicals_fts(rowid, text) VALUES (new.rowid, new.text);
        END;
        """,
    ),
    (
        "0002_group_text_index",
        # Every exact-key group's text is searchable, not only each cluster's leader: a word that only
        # a near-merged copy holds is found, and a filtered query scores a cluster by the copies its
        # caller may see. Groups get a stable integer key for the FTS5 external-content table.
        """
        CREATE TABLE groups_new(
            gid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT NOT NULL,
            n_sources INTEGER NOT NULL, rep_doc TEXT NOT NULL, rep_page INTEGER NOT NULL,
            rep_start INTEGER NOT NULL, signature BLOB, canonical_id TEXT NOT NULL,
            relation TEXT NOT NULL DEFAULT 'exact', similarity REAL NOT NULL DEFAULT 1.0,
            differing TEXT NOT NULL DEFAULT '[]');
        INSERT INTO groups_new(id, text, n_sources, rep_doc, rep_page, rep_start, signature,
                canonical_id, relation, similarity, differing)
            SELECT id, text, n_sources, rep_doc, rep_page, rep_start, signature, canonical_id, relation,
                similarity, differing FROM groups ORDER BY id;
        DROP TABLE groups;
        ALTER TABLE groups_new RENAME TO groups;
        CREATE INDEX groups_canonical ON groups(canonical_id);
        CREATE INDEX groups_unsigned ON groups(id) WHERE signature IS NULL;
        DROP TRIGGER canonicals_ai;
        DROP TRIGGER canonicals_ad;
        DROP TRIGGER canonicals_au;
        DROP TABLE canonicals_fts;
        CREATE VIRTUAL TABLE groups_fts USING fts5(
            text, content='groups', content_rowid='gid', tokenize='porter unicode61');
        INSERT INTO groups_fts(groups_fts) VALUES('rebuild');
        CREATE TRIGGER groups_ai AFTER INSERT ON groups BEGIN
            INSERT INTO groups_fts(rowid, text) VALUES (new.gid, new.text);
        END;
        CREATE TRIGGER groups_ad AFTER DELETE ON groups BEGIN
            INSERT INTO groups_fts(groups_fts, rowid, text) VALUES('delete', old.gid, old.text);
        END;
        -- a refresh rewrites every touched group's text: re-index only a real change
        CREATE TRIGGER groups_au AFTER UPDATE OF text ON groups WHEN old.text IS NOT new.text BEGIN
            INSERT INTO groups_fts(groups_fts, rowid, text) VALUES('delete', old.gid, old.text);
            INSERT INTO groups_fts(rowid, text) VALUES (new.gid, new.text);
        END;
        """,
    ),
    (
        "0003_text_log",
        # While the text engine is tantivy (chunkdedup.store.textindex), every change to a group's text is
        # logged in the same transaction, and replayed into the tantivy folder after the run.
        """
        CREATE TABLE text_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, gid INTEGER NOT NULL);
        CREATE TRIGGER groups_log_ai AFTER INSERT ON groups
            WHEN (SELECT value FROM meta WHERE key='text_engine') = 'tantivy' BEGIN
            INSERT INTO text_log(gid) VALUES (new.gid);
        END;
        CREATE TRIGGER groups_log_ad AFTER DELETE ON groups
            WHEN (SELECT value FROM meta WHERE key='text_engine') = 'tantivy' BEGIN
            INSERT INTO text_log(gid) VALUES (old.gid);
        END;
        CREATE TRIGGER groups_log_au AFTER UPDATE OF text ON groups
            WHEN old.text IS NOT new.text
            AND (SELECT value FROM meta WHERE key='text_engine') = 'tantivy' BEGIN
            INSERT INTO text_log(gid) VALUES (new.gid);
        END;
        """,
    ),
    (
        "0004_doc_keys_counted",
        # doc_keys also holds the keys a document does not count but strip() could remove in it
        # (a line on one page edge): counted=0. A chrome change touching them re-strips the document.
        """
        ALTER TABLE doc_keys ADD COLUMN counted INTEGER NOT NULL DEFAULT 1;
        INSERT OR REPLACE INTO meta(key, value) VALUES ('doc_keys_format', '1');
        """,
    ),
    (
        "0005_tombstone_state",
        # A tombstone keeps the deleted canonical's signature and last-change run: a canonical deleted
        # and re-made with the same text and sources in one run (an edited document's unchanged
        # chunks) keeps its last-change run, so `export --changes-since` does not re-send it.
        """
        ALTER TABLE tombstones ADD COLUMN signature TEXT;
        ALTER TABLE tombstones ADD COLUMN updated_run INTEGER;
        """,
    ),
    (
        "0006_near_edges",
        # Verified near edges kept between runs (the Ray path writes them). A group with edged=1 has
        # its edge to every other edged group stored, so the next run verifies only pairs with a
        # group that is not edged yet. Cleared with the signatures or a change of near settings.
        """
        CREATE TABLE near_edges(a TEXT NOT NULL, b TEXT NOT NULL, similarity REAL NOT NULL,
            PRIMARY KEY(a, b)) WITHOUT ROWID;
        CREATE INDEX near_edges_b ON near_edges(b);
        ALTER TABLE groups ADD COLUMN edged INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX groups_unedged ON groups(id) WHERE edged = 0;
        """,
    ),
    (
        "0007_document_context",
        # Each document's context (metadata values, title, file name, stripped running lines: see
        # chunkdedup.ingestion.context), searchable on its own: retrieval adds the context score of a chunk's
        # cited documents to the chunk's own. An older index gets a first context made here from
        # what it holds (metadata, id, running lines); its next ingest recomputes every context.
        """
        ALTER TABLE documents ADD COLUMN title TEXT;
        CREATE TABLE contexts(dkey INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, text TEXT NOT NULL);
        CREATE VIRTUAL TABLE contexts_fts USING fts5(
            text, content='contexts', content_rowid='dkey', tokenize='porter unicode61');
        """
        + CONTEXT_TRIGGERS
        + """
        INSERT INTO contexts(doc_id, text)
            SELECT d.doc_id, trim(
                COALESCE((SELECT group_concat(j.value, char(10)) FROM json_each(d.metadata) j
                          WHERE j.type IN ('text', 'integer', 'real')), '')
                || char(10) || d.doc_id || char(10)
                || COALESCE((SELECT group_concat(s.example, char(10)) FROM stripped s
                             WHERE s.doc_id = d.doc_id AND s.scope = 'running'), ''), char(10))
            FROM documents d ORDER BY d.doc_id;
        """,
    ),
    (
        "0008_deferrable_fts",
        # A first ingest writes every group's text once: feeding FTS5 row by row through the triggers
        # costs twice what one 'rebuild' at the end does. While meta fts_deferred is set (by
        # textindex.defer_fts, on an index with no groups) the triggers stand still; textindex.sync
        # rebuilds the table and clears the mark, in one transaction (a killed run leaves the mark, so
        # the next run's sync rebuilds).
        """
        DROP TRIGGER groups_ai;
        DROP TRIGGER groups_ad;
        DROP TRIGGER groups_au;
        CREATE TRIGGER groups_ai AFTER INSERT ON groups
            WHEN (SELECT value FROM meta WHERE key='fts_deferred') IS NULL BEGIN
            INSERT INTO groups_fts(rowid, text) VALUES (new.gid, new.text);
        END;
        CREATE TRIGGER groups_ad AFTER DELETE ON groups
            WHEN (SELECT value FROM meta WHERE key='fts_deferred') IS NULL BEGIN
            INSERT INTO groups_fts(groups_fts, rowid, text) VALUES('delete', old.gid, old.text);
        END;
        CREATE TRIGGER groups_au AFTER UPDATE OF text ON groups
            WHEN old.text IS NOT new.text AND (SELECT value FROM meta WHERE key='fts_deferred') IS NULL BEGIN
            INSERT INTO groups_fts(groups_fts, rowid, text) VALUES('delete', old.gid, old.text);
            INSERT INTO groups_fts(rowid, text) VALUES (new.gid, new.text);
        END;
        """,
    ),
    (
        "0009_pages_rowid",
        # Page text in a rowid table: WITHOUT ROWID keeps a whole row in an index b-tree, whose rows
        # hold about 1 KB in place, so every page of 1-4 KB took an overflow page of its own (20k
        # one-chunk records: 93 MB of pages for 27 MB of text). (doc_id, page) stays unique.
        """
        CREATE TABLE pages_new(
            doc_id TEXT NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
            raw_text TEXT NOT NULL, clean_text TEXT, UNIQUE(doc_id, page));
        INSERT INTO pages_new(doc_id, page, has_text, raw_text, clean_text)
            SELECT doc_id, page, has_text, raw_text,
                CASE WHEN clean_text = raw_text THEN NULL ELSE clean_text END
            FROM pages ORDER BY doc_id, page;
        DROP TABLE pages;
        ALTER TABLE pages_new RENAME TO pages;
        """,
    ),
    (
        "0010_canonical_text_once",
        # A canonical's text is its leader group's (its first source is the leader's first source):
        # kept once, in groups; canonicals.text holds a text only while it differs (CANONICAL_TEXT).
        """
        CREATE TABLE canonicals_new(
            rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, text TEXT,
            n_sources INTEGER NOT NULL, signature TEXT NOT NULL, updated_run INTEGER NOT NULL);
        INSERT INTO canonicals_new(rowid, id, text, n_sources, signature, updated_run)
            SELECT c.rowid, c.id,
                CASE WHEN c.text = (SELECT g.text FROM groups g WHERE g.id = c.id) THEN NULL ELSE c.text END,
                c.n_sources, c.signature, c.updated_run
            FROM canonicals c ORDER BY c.rowid;
        DROP TABLE canonicals;
        ALTER TABLE canonicals_new RENAME TO canonicals;
        """,
    ),
    (
        "0011_signed_flag",
        # A group's MinHash signature was kept (512 bytes a group: 9 MB of 20k groups, half a GB of a
        # million) but never read again: its band rows are what the near tier queries, and a change
        # of the hashing settings signs every group anew. A flag says a group is signed.
        """
        ALTER TABLE groups RENAME COLUMN signature TO signed;
        UPDATE groups SET signed = 1 WHERE signed IS NOT NULL;
        """,
    ),
    (
        "0012_bands_by_gid",
        # Band rows name their group by its integer key, not its 25-character id: the rows and their
        # index were a fifth of an index of one-chunk records (20k records: 24.6 of 128 MB).
        """
        CREATE TABLE bands_new(band_key INTEGER NOT NULL, gid INTEGER NOT NULL,
            PRIMARY KEY(band_key, gid)) WITHOUT ROWID;
        INSERT INTO bands_new(band_key, gid)
            SELECT b.band_key, g.gid FROM bands b JOIN groups g ON g.id = b.group_id ORDER BY 1, 2;
        DROP TABLE bands;
        ALTER TABLE bands_new RENAME TO bands;
        CREATE INDEX bands_gid ON bands(gid);
        """,
    ),
    (
        "0013_band_stage",
        # Band rows are appended here as groups are signed and merged into bands in key order before
        # the cluster pass reads them: band keys are random, so rows written straight into bands dirtied
        # a leaf page of its B-tree per row, every transaction (300k groups: 90-100 s of the write path).
        """
        CREATE TABLE band_stage(group_id TEXT NOT NULL, band_key INTEGER NOT NULL);
        """,
    ),
    (
        "0014_text_dicts",
        # Page text is stored as zstd frames; the dictionary a frame names (by its zstd id) lives here.
        """
        CREATE TABLE text_dicts(dict_id INTEGER PRIMARY KEY, data BLOB NOT NULL);
        """,
    ),
    (
        "0015_pages_without_text",
        # The overview's count of pages without a text layer scanned every page row (text inline: most
        # of the file; 185 ms warm and seconds cold at 1M chunks); the partial index holds only those.
        """
        CREATE INDEX pages_without_text ON pages(doc_id) WHERE has_text = 0;
        """,
    ),
    (
        "0016_documents_department",
        # A department= filter names its documents like doc= and family= do (their groups are ranked
        # on their own): found through an index, not a scan of every document row.
        """
        CREATE INDEX documents_department ON documents(department);
        """,
    ),
    (
        "0017_key_units",
        # Units per candidate key kept between runs, and the keys a run changed, so deciding the
        # chrome recounts only those (store/keyunits.py); nothing is kept until the next decision.
        """
        CREATE TABLE key_units(khash INTEGER PRIMARY KEY, units INTEGER NOT NULL);
        CREATE TABLE stale_keys(khash INTEGER PRIMARY KEY);
        """,
    ),
    (
        "0018_group_band_keys",
        # A signed group keeps its band keys (``signed``: 16 keys, 128 bytes, chunk_tables.pack_bands)
        # instead of an index of the band rows by group: a first ingest built that index over every band
        # row (1M chunks: 7.7M rows, 15-22 s; 50k records: 1.2-1.6 s and 11.8 of 196 MB), and an edited
        # record dirtied its pages at random. A group's rows are found from its keys (band_key leads the
        # bands' key). ``band_keys`` is the store's aggregate that packs them.
        """
        UPDATE groups SET signed = (SELECT band_keys(b.band_key) FROM bands b WHERE b.gid = groups.gid)
            WHERE signed IS NOT NULL;
        DROP INDEX IF EXISTS bands_gid;
        """,
    ),
    (
        "0019_variant_reason",
        # Why a near pair is a version: ``number`` (the number/date guard) or a reason of the meaning
        # guard (name, negation, modality, ordinal, reference, qualifier, content).
        """
        ALTER TABLE variants ADD COLUMN reason TEXT NOT NULL DEFAULT 'number';
        """,
    ),
    (
        "0020_overrides",
        # A person's decision on a near pair, from the review queue of `chunkdedup serve`: merged
        # whatever the guards say, or kept apart (store/review.py); the cluster pass honours them.
        """
        CREATE TABLE overrides(
            a TEXT NOT NULL, b TEXT NOT NULL, decision TEXT NOT NULL CHECK (decision IN ('merge', 'apart')),
            PRIMARY KEY(a, b)) WITHOUT ROWID;
        """,
    ),
    (
        "0021_page_ocr",
        # A page read by OCR (a scanned page) keeps Tesseract's mean word confidence in [0, 1]; NULL on
        # every page read from its text layer. The partial index holds only the scanned pages, so the
        # export and the web find them without a scan of every page.
        """
        ALTER TABLE pages ADD COLUMN ocr_confidence REAL;
        CREATE INDEX pages_ocr ON pages(doc_id, page) WHERE ocr_confidence IS NOT NULL;
        """,
    ),
    (
        "0022_folded_band_keys",
        # Band keys are kept as their low 32 bits (band_tables.fold_key): SQLite stores them in 4 bytes,
        # not 8, in the band rows and in each group's kept keys (100k one-chunk records: 43 -> 30 MB of
        # a 155 MB index). Pairs whose keys differ only above them become candidates, verified exactly.
        """
        CREATE TABLE bands_new(band_key INTEGER NOT NULL, gid INTEGER NOT NULL,
            PRIMARY KEY(band_key, gid)) WITHOUT ROWID;
        INSERT OR IGNORE INTO bands_new(band_key, gid)
            SELECT fold_band_key(band_key), gid FROM bands ORDER BY 1, 2;
        DROP TABLE bands;
        ALTER TABLE bands_new RENAME TO bands;
        UPDATE groups SET signed = fold_band_keys(signed) WHERE signed IS NOT NULL;
        UPDATE band_stage SET band_key = fold_band_key(band_key);
        """,
    ),
    (
        "0023_smaller_indexes",
        # Indexes that held a row per document or group where few are asked for: the groups not edged
        # yet (every group of an index the Ray path never wrote: 3.4 MB of 100k records; the Ray path
        # counts them once a run, now by a scan), and the documents by family and by department (most
        # have neither: only those with one are indexed; a filter names a value, which is not NULL).
        """
        DROP INDEX IF EXISTS groups_unedged;
        UPDATE meta SET value = (SELECT json_group_array(json(j.value)) FROM json_each(meta.value) j
            WHERE json_extract(j.value, '$[0]') != 'groups_unedged') WHERE key = 'deferred_indexes';
        DROP INDEX documents_family;
        CREATE INDEX documents_family ON documents(family) WHERE family IS NOT NULL;
        DROP INDEX documents_department;
        CREATE INDEX documents_department ON documents(department) WHERE department IS NOT NULL;
        """,
    ),
    (
        "0024_document_row_keys",
        # What every document row repeated: its unit when it is its own (``doc:`` and its id: read
        # through DOC_UNIT) and the config hash as 32 hex digits (stored_hash). 100k one-record
        # documents: 3.4 MB.
        """
        UPDATE documents SET unit = '' WHERE unit = 'doc:' || doc_id;
        UPDATE documents SET config_hash = stored_hash(config_hash) WHERE typeof(config_hash) = 'text';
        """,
    ),
    (
        "0025_source_rows",
        # Text keys kept once. A source row names its group by the group's integer key, and its
        # cluster, relation and similarity are its group's (they were copies, kept equal by every
        # write): read through the ``sources`` view, which finds a canonical's sources through
        # groups_canonical and the rows' index by group (the index by canonical went). A document row
        # names its file by the integer key of its path in ``paths``, keeps its content hash in 16
        # bytes (stored_hash) and no metadata for '{}': read through the ``documents`` view. A
        # canonical's signature (compared, never shown) is kept in 16 bytes too. 100k one-chunk
        # records: sources 207 -> 65 bytes a record, documents 270 -> 137, canonicals 107 -> 91.
        """
        UPDATE groups SET canonical_id = s.canonical_id, relation = s.relation, similarity = s.similarity
            FROM (SELECT group_id, MIN(canonical_id) AS canonical_id, MIN(relation) AS relation,
                         MIN(similarity) AS similarity FROM sources GROUP BY group_id) AS s
            WHERE s.group_id = groups.id AND (groups.canonical_id != s.canonical_id
                OR groups.relation != s.relation OR groups.similarity != s.similarity);
        CREATE TABLE source_rows(
            doc_id TEXT NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
            gid INTEGER NOT NULL, PRIMARY KEY(doc_id, page, start)) WITHOUT ROWID;
        INSERT INTO source_rows(doc_id, page, start, "end", gid)
            SELECT s.doc_id, s.page, s.start, s."end", g.gid FROM sources s JOIN groups g ON g.id = s.group_id
            ORDER BY 1, 2, 3;
        DROP TABLE sources;
        CREATE INDEX source_rows_gid ON source_rows(gid, doc_id, page, start);
        """
        + SOURCES_VIEW
        + """
        CREATE TABLE paths(fkey INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
        INSERT INTO paths(path) SELECT DISTINCT file_path FROM documents ORDER BY 1;
        CREATE TABLE document_rows(
            doc_id TEXT PRIMARY KEY, fkey INTEGER NOT NULL, content_hash TEXT NOT NULL,
            unit TEXT NOT NULL, metadata TEXT, department TEXT, family TEXT,
            effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
            config_hash TEXT, run_id INTEGER NOT NULL, title TEXT);
        INSERT INTO document_rows(doc_id, fkey, content_hash, unit, metadata, department, family,
                effective_date, n_pages, state, config_hash, run_id, title)
            SELECT d.doc_id, p.fkey, stored_hash(d.content_hash), d.unit, NULLIF(d.metadata, '{}'),
                d.department, d.family, d.effective_date, d.n_pages, d.state, d.config_hash, d.run_id, d.title
            FROM documents d JOIN paths p ON p.path = d.file_path ORDER BY d.rowid;
        DROP TABLE documents;
        CREATE INDEX documents_file ON document_rows(fkey);
        CREATE INDEX documents_state ON document_rows(state);
        CREATE INDEX documents_family ON document_rows(family) WHERE family IS NOT NULL;
        CREATE INDEX documents_department ON document_rows(department) WHERE department IS NOT NULL;
        """
        + DOCUMENTS_VIEW
        + """
        UPDATE canonicals SET signature = stored_hash(signature) WHERE typeof(signature) = 'text';
        UPDATE tombstones SET signature = stored_hash(signature) WHERE typeof(signature) = 'text';
        """,
    ),
    (
        "0028_page_links",
        # Where the link texts of a page's navigation blocks stand (Page.links, JSON [[start, end], ...];
        # NULL for none): boilerplate keys such a block with its link texts masked, and a document's
        # keys are read again from its stored pages. A page parsed before has none until parsed again.
        "ALTER TABLE pages ADD COLUMN links TEXT;",
    ),
    (
        "0029_keyed_rows",
        # Rows found by their text key alone are stored in its B-tree (WITHOUT ROWID), not in a rowid
        # table plus a unique index repeating the key: a canonical by id (no reader uses its rowid) and
        # a document row by doc_id. A document row's secondary indexes then hold its doc_id instead of
        # a rowid, so the index by state, read only for pending documents, holds only those. 100k
        # one-record documents: canonicals 91 -> 55 bytes a record, document rows 137 -> 106.
        """
        DROP VIEW documents;
        CREATE TABLE document_rows_new(
            doc_id TEXT PRIMARY KEY, fkey INTEGER NOT NULL, content_hash TEXT NOT NULL,
            unit TEXT NOT NULL, metadata TEXT, department TEXT, family TEXT,
            effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
            config_hash TEXT, run_id INTEGER NOT NULL, title TEXT) WITHOUT ROWID;
        INSERT INTO document_rows_new(doc_id, fkey, content_hash, unit, metadata, department, family,
                effective_date, n_pages, state, config_hash, run_id, title)
            SELECT doc_id, fkey, content_hash, unit, metadata, department, family,
                effective_date, n_pages, state, config_hash, run_id, title
            FROM document_rows ORDER BY doc_id;
        DROP TABLE document_rows;
        ALTER TABLE document_rows_new RENAME TO document_rows;
        CREATE INDEX documents_file ON document_rows(fkey);
        CREATE INDEX documents_pending ON document_rows(state) WHERE state = 'pending';
        CREATE INDEX documents_family ON document_rows(family) WHERE family IS NOT NULL;
        CREATE INDEX documents_department ON document_rows(department) WHERE department IS NOT NULL;
        """
        + DOCUMENTS_VIEW
        + """
        CREATE TABLE canonicals_new(
            id TEXT PRIMARY KEY, text TEXT, n_sources INTEGER NOT NULL, signature TEXT NOT NULL,
            updated_run INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO canonicals_new(id, text, n_sources, signature, updated_run)
            SELECT id, text, n_sources, signature, updated_run FROM canonicals ORDER BY id;
        DROP TABLE canonicals;
        ALTER TABLE canonicals_new RENAME TO canonicals;
        """,
    ),
    (
        "0030_group_defaults",
        # What most groups hold as every group does is not stored: ``canon`` names the group's cluster
        # only when another group leads it, ``rel`` its relation when it is not 'exact', ``diff`` the
        # words it differs by when there are some; ``canonical_id``, ``relation`` and ``differing`` read
        # them through generated columns. The index by cluster holds only the groups another leads
        # (read through ``cluster_sources`` or ``canon = ? OR (canon IS NULL AND id = ?)``), so it is no
        # longer deferred through a first ingest. 100k one-record documents: groups 261 -> 195 bytes.
        """
        DROP VIEW sources;
        DROP INDEX IF EXISTS groups_canonical;
        UPDATE meta SET value = (SELECT json_group_array(json(j.value)) FROM json_each(meta.value) j
            WHERE json_extract(j.value, '$[0]') != 'groups_canonical') WHERE key = 'deferred_indexes';
        ALTER TABLE groups ADD COLUMN canon TEXT;
        ALTER TABLE groups ADD COLUMN rel TEXT;
        ALTER TABLE groups ADD COLUMN diff TEXT;
        UPDATE groups SET canon = NULLIF(canonical_id, id), rel = NULLIF(relation, 'exact'),
                diff = NULLIF(differing, '[]')
            WHERE canonical_id != id OR relation != 'exact' OR differing != '[]';
        ALTER TABLE groups DROP COLUMN canonical_id;
        ALTER TABLE groups DROP COLUMN relation;
        ALTER TABLE groups DROP COLUMN differing;
        ALTER TABLE groups ADD COLUMN canonical_id TEXT GENERATED ALWAYS AS (COALESCE(canon, id)) VIRTUAL;
        ALTER TABLE groups ADD COLUMN relation TEXT GENERATED ALWAYS AS (COALESCE(rel, 'exact')) VIRTUAL;
        ALTER TABLE groups ADD COLUMN differing TEXT GENERATED ALWAYS AS (COALESCE(diff, '[]')) VIRTUAL;
        CREATE INDEX groups_canonical ON groups(canon) WHERE canon IS NOT NULL;
        """
        + SOURCES_VIEW
        + CLUSTER_SOURCES_VIEW,
    ),
    (
        "0031_document_keys",
        # A document row has an integer key (``dkey``, its rowid), and the rows kept for each of its
        # sources and for its context name it by that key, not by its id: a source row's key and its
        # index by group hold a few bytes instead of the id twice, and a context is keyed by its
        # document's key, with no id and no unique index of its own (its FTS5 rowid is that key).
        # The document row's other indexes hold the key too. 100k one-record documents: source rows
        # 65 -> 33 bytes a record, contexts 60 -> 13, document rows 106 -> 121.
        """
        DROP VIEW documents;
        DROP VIEW sources;
        DROP VIEW cluster_sources;
        CREATE TABLE document_rows_new(
            dkey INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, fkey INTEGER NOT NULL,
            content_hash TEXT NOT NULL, unit TEXT NOT NULL, metadata TEXT, department TEXT, family TEXT,
            effective_date TEXT, n_pages INTEGER NOT NULL, state TEXT NOT NULL,
            config_hash TEXT, run_id INTEGER NOT NULL, title TEXT);
        INSERT INTO document_rows_new(doc_id, fkey, content_hash, unit, metadata, department, family,
                effective_date, n_pages, state, config_hash, run_id, title)
            SELECT doc_id, fkey, content_hash, unit, metadata, department, family,
                effective_date, n_pages, state, config_hash, run_id, title
            FROM document_rows ORDER BY doc_id;
        DROP TABLE document_rows;
        ALTER TABLE document_rows_new RENAME TO document_rows;
        CREATE INDEX documents_file ON document_rows(fkey);
        CREATE INDEX documents_pending ON document_rows(state) WHERE state = 'pending';
        CREATE INDEX documents_family ON document_rows(family) WHERE family IS NOT NULL;
        CREATE INDEX documents_department ON document_rows(department) WHERE department IS NOT NULL;
        """
        + DOCUMENTS_VIEW
        + """
        CREATE TABLE source_rows_new(
            dkey INTEGER NOT NULL, page INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
            gid INTEGER NOT NULL, PRIMARY KEY(dkey, page, start)) WITHOUT ROWID;
        INSERT INTO source_rows_new(dkey, page, start, "end", gid)
            SELECT d.dkey, s.page, s.start, s."end", s.gid
            FROM source_rows s JOIN document_rows d ON d.doc_id = s.doc_id ORDER BY 1, 2, 3;
        DROP TABLE source_rows;
        ALTER TABLE source_rows_new RENAME TO source_rows;
        CREATE INDEX source_rows_gid ON source_rows(gid, dkey, page, start);
        """
        + SOURCES_BY_KEY_VIEWS
        + """
        CREATE TABLE contexts_new(dkey INTEGER PRIMARY KEY, text TEXT NOT NULL);
        INSERT INTO contexts_new(dkey, text)
            SELECT d.dkey, c.text FROM contexts c JOIN document_rows d ON d.doc_id = c.doc_id ORDER BY 1;
        DROP TABLE contexts;
        ALTER TABLE contexts_new RENAME TO contexts;
        """
        + CONTEXT_TRIGGERS
        + """
        INSERT INTO contexts_fts(contexts_fts) VALUES('rebuild');
        """,
    ),
    (
        "0032_page_keys",
        # A page row names its document by the document row's key too (``page_rows``, read through the
        # ``pages`` view, which gives the id): the row and its unique index hold a few bytes instead of
        # the id twice. Still a rowid table (migration 0009). 100k one-record documents: pages 107 -> 78
        # bytes a record.
        """
        CREATE TABLE page_rows(
            dkey INTEGER NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
            raw_text TEXT NOT NULL, clean_text TEXT, ocr_confidence REAL, links TEXT, UNIQUE(dkey, page));
        INSERT INTO page_rows(dkey, page, has_text, raw_text, clean_text, ocr_confidence, links)
            SELECT d.dkey, p.page, p.has_text, p.raw_text, p.clean_text, p.ocr_confidence, p.links
            FROM pages p JOIN document_rows d ON d.doc_id = p.doc_id ORDER BY d.dkey, p.page;
        DROP TABLE pages;
        CREATE INDEX pages_without_text ON page_rows(dkey) WHERE has_text = 0;
        CREATE INDEX pages_ocr ON page_rows(dkey, page) WHERE ocr_confidence IS NOT NULL;
        """
        + PAGES_BY_KEY_VIEW,
    ),
    (
        "0033_group_rep_keys",
        # A group names its first source's document by the document row's key (``rep_dkey``), not its
        # id. 100k one-record documents: groups 195 -> 180 bytes a record.
        """
        ALTER TABLE groups ADD COLUMN rep_dkey INTEGER;
        UPDATE groups SET rep_dkey = (SELECT d.dkey FROM document_rows d WHERE d.doc_id = groups.rep_doc);
        ALTER TABLE groups DROP COLUMN rep_doc;
        """,
    ),
    (
        "0034_config_keys",
        # A document row names the config it was chunked under by the key of its hash in ``configs``
        # (an index holds a few), not by the 16-byte hash. 100k one-record documents: document rows
        # 121 -> 100 bytes a record.
        """
        CREATE TABLE configs(ckey INTEGER PRIMARY KEY, hash TEXT NOT NULL UNIQUE);
        INSERT INTO configs(hash)
            SELECT DISTINCT config_hash FROM document_rows WHERE config_hash IS NOT NULL ORDER BY 1;
        ALTER TABLE document_rows ADD COLUMN ckey INTEGER;
        UPDATE document_rows
            SET ckey = (SELECT c.ckey FROM configs c WHERE c.hash = document_rows.config_hash)
            WHERE config_hash IS NOT NULL;
        DROP VIEW documents;
        ALTER TABLE document_rows DROP COLUMN config_hash;
        """
        + DOCUMENTS_BY_CONFIG_VIEW,
    ),
    (
        "0035_short_signatures",
        # A canonical's change signature is kept in its first 8 bytes (SIGNATURE_BYTES), not 16: it is
        # compared only with the same canonical's previous one (and its tombstone's). 100k one-record
        # documents: canonicals 55 -> 46 bytes a record.
        """
        UPDATE canonicals SET signature = substr(signature, 1, 8)
            WHERE typeof(signature) = 'blob' AND length(signature) > 8;
        UPDATE tombstones SET signature = substr(signature, 1, 8)
            WHERE typeof(signature) = 'blob' AND length(signature) > 8;
        """,
    ),
    (
        "0036_pages_share_group_text",
        # A page that is all one chunk, whose group's text is the page's own words (a short record,
        # a one-paragraph page), keeps no copy of them: ``raw_text`` NULL reads, through the ``pages``
        # view, as the text of the group its source at offset 0 belongs to. The table is made again
        # (``raw_text`` may be NULL), and such pages of an index lose their copy here. 100k one-record
        # documents: pages 78 -> 22 bytes a record.
        """
        DROP VIEW pages;
        CREATE TABLE page_rows_new(
            dkey INTEGER NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,
            raw_text TEXT, clean_text TEXT, ocr_confidence REAL, links TEXT, UNIQUE(dkey, page));
        INSERT INTO page_rows_new(dkey, page, has_text, raw_text, clean_text, ocr_confidence, links)
            SELECT p.dkey, p.page, p.has_text,
                CASE WHEN p.clean_text IS NULL AND EXISTS (
                    SELECT 1 FROM source_rows s JOIN groups g ON g.gid = s.gid
                    WHERE s.dkey = p.dkey AND s.page = p.page AND s.start = 0
                        AND s."end" = length(g.text) AND g.text = page_text(p.raw_text))
                THEN NULL ELSE p.raw_text END,
                p.clean_text, p.ocr_confidence, p.links
            FROM page_rows p ORDER BY p.dkey, p.page;
        DROP TABLE page_rows;
        ALTER TABLE page_rows_new RENAME TO page_rows;
        CREATE INDEX pages_without_text ON page_rows(dkey) WHERE has_text = 0;
        CREATE INDEX pages_ocr ON page_rows(dkey, page) WHERE ocr_confidence IS NOT NULL;
        """
        + PAGES_SHARING_VIEW,
    ),
    (
        "0037_canonicals_in_groups",
        # A canonical is kept in the row of the group whose id it has, its leader (``ctext``, ``cn``,
        # ``csig``, ``crun``: its text where not the group's, its count, change signature and last-change
        # run), not in a row of its own keyed by that id again; ``canonical_rows`` keeps one only while
        # no group has its id (its leader went and its members have not been decided again yet). The
        # ``canonicals`` view gives both. 100k one-record documents: 46 bytes a record less in
        # canonicals, 11 more in groups.
        """
        ALTER TABLE groups ADD COLUMN ctext TEXT;
        ALTER TABLE groups ADD COLUMN cn INTEGER;
        ALTER TABLE groups ADD COLUMN csig BLOB;
        ALTER TABLE groups ADD COLUMN crun INTEGER;
        CREATE TABLE canonical_rows(
            id TEXT PRIMARY KEY, text TEXT, n_sources INTEGER NOT NULL, signature BLOB NOT NULL,
            updated_run INTEGER NOT NULL) WITHOUT ROWID;
        UPDATE groups SET ctext = NULLIF(c.text, groups.text), cn = c.n_sources, csig = c.signature,
            crun = c.updated_run
            FROM canonicals c WHERE c.id = groups.id;
        INSERT INTO canonical_rows(id, text, n_sources, signature, updated_run)
            SELECT c.id, c.text, c.n_sources, c.signature, c.updated_run FROM canonicals c
            WHERE NOT EXISTS (SELECT 1 FROM groups g WHERE g.id = c.id);
        DROP TABLE canonicals;
        """
        + CANONICALS_VIEW,
    ),
    (
        "0038_contexts_without_sizes",
        # The contexts' FTS5 table keeps no per-row token counts (``columnsize=0``, no ``_docsize``
        # table): context scoring counts the contexts that hold a term and reads their lengths from
        # ``contexts`` (``fulltext.context_lengths``), never FTS5's ``bm25()``, the one reader of those
        # counts. Made again and rebuilt, with the same triggers. 100k one-record documents: contexts
        # 27 -> 17 bytes a record.
        """
        DROP TABLE contexts_fts;
        CREATE VIRTUAL TABLE contexts_fts USING fts5(
            text, content='contexts', content_rowid='dkey', tokenize='porter unicode61', columnsize=0);
        INSERT INTO contexts_fts(contexts_fts) VALUES('rebuild');
        """,
    ),
    (
        "0039_state_from_config",
        # A document's state is not stored: it is pending until it is chunked, and chunking gives it the
        # key of its config (``ckey``), which a pending row never has. The ``documents`` view reads
        # the state from it, and the index of pending documents holds the rows with no config key.
        # An indexed row of an index older than config hashes (no config named) gets a config of an
        # empty hash, which no chunking config has: it is chunked again, as it was before. 100k
        # one-record documents: document rows 100 -> 92 bytes a record ('indexed' in every row).
        """
        DROP VIEW documents;
        DROP INDEX documents_pending;
        INSERT OR IGNORE INTO configs(hash)
            SELECT '' WHERE EXISTS (SELECT 1 FROM document_rows WHERE state != 'pending' AND ckey IS NULL);
        UPDATE document_rows SET ckey = (SELECT ckey FROM configs WHERE hash = '')
            WHERE state != 'pending' AND ckey IS NULL;
        UPDATE document_rows SET ckey = NULL WHERE state = 'pending' AND ckey IS NOT NULL;
        ALTER TABLE document_rows DROP COLUMN state;
        CREATE INDEX documents_pending ON document_rows(ckey) WHERE ckey IS NULL;
        """
        + DOCUMENTS_BY_CHUNKING_VIEW,
    ),
    (
        "0040_rowless_pages",
        # A one-page document whose page would keep nothing but its document's key (text shared with
        # its group since 0036, no clean text, OCR confidence or links) has no page row: the ``pages``
        # view gives its page from the document row and the group. The store makes the row again
        # before anything is written to such a page or to what it reads (``page_spans``). 100k
        # one-record documents: pages 32 -> 0 bytes a record.
        """
        DROP VIEW pages;
        DELETE FROM page_rows WHERE page = 1 AND has_text = 1 AND raw_text IS NULL AND clean_text IS NULL
            AND ocr_confidence IS NULL AND links IS NULL
            AND dkey IN (SELECT dkey FROM document_rows WHERE n_pages = 1);
        """
        + PAGES_WITHOUT_ROWS_VIEW,
    ),
    (
        "0041_band_keys_from_text",
        # A group's band keys are not kept in its row: they are a function of its exact key (which its
        # id is the hash of) and the hashing settings, and the store asks the run's near tier for them
        # where it names a group's band rows (``band_tables``). ``signed`` is 1 for a signed group.
        # 100k one-record documents: groups 190 -> 167 bytes a record.
        """
        UPDATE groups SET signed = 1 WHERE signed IS NOT NULL;
        """,
    ),
    (
        "0042_short_document_hashes",
        # A document's content hash is kept in its first 8 bytes, not 16 (``normalize.document_hash``):
        # it is compared only with the hashes of its own file's documents. 100k one-record documents:
        # document rows 88 -> 80 bytes a record.
        """
        UPDATE document_rows SET content_hash = substr(content_hash, 1, 8)
            WHERE typeof(content_hash) = 'blob' AND length(content_hash) > 8;
        UPDATE document_rows SET content_hash = substr(content_hash, 1, 16)
            WHERE typeof(content_hash) = 'text' AND length(content_hash) > 16;
        """,
    ),
    (
        "0043_file_key_ranges",
        # A file's documents are found through the ranges of document keys they were written in
        # (``file_docs``: a file's records are written together, so a corpus has a few ranges a file
        # where the index by file held a row a document), not an index of the documents by file.
        # Ranges of one file never overlap; a range may hold other files' documents and removed keys,
        # so a read checks each row's file (``FILE_DKEYS``). 100k one-record documents: document rows
        # 80 -> 71 bytes a record.
        """
        CREATE TABLE file_docs(fkey INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL,
            PRIMARY KEY(fkey, lo)) WITHOUT ROWID;
        INSERT INTO file_docs(fkey, lo, hi)
            SELECT fkey, MIN(dkey), MAX(dkey) FROM (
                SELECT fkey, dkey, dkey - ROW_NUMBER() OVER (PARTITION BY fkey ORDER BY dkey) AS run
                FROM document_rows)
            GROUP BY fkey, run ORDER BY 1, 2;
        DROP INDEX documents_file;
        """,
    ),
    (
        "0044_decision_who_when",
        # A reviewer's decision keeps when it was made (UTC, ISO 8601) and, where the reviewer gave it,
        # by whom: a team's queue says who decided what.
        """
        ALTER TABLE overrides ADD COLUMN decided_at TEXT;
        ALTER TABLE overrides ADD COLUMN decided_by TEXT;
        """,
    ),
)
