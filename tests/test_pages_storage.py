"""Page text is stored once where stripping left a page as it was, in a rowid table (migration 0009),
and an index written before that migrates with every page's raw and clean text intact."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
import zstandard

from chunkdedup import Index, ingest
from chunkdedup.config import ParseConfig
from chunkdedup.parse import InputFile, parse_file
from chunkdedup.store import Store
from chunkdedup.store.core import NEW_FILE_PAGE_BYTES
from chunkdedup.store.pagetext import PageCodec
from chunkdedup.text.boilerplate import DocumentKeys
from chunkdedup.types import Document, Page
from conftest import BEFORE_0032

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _pages(index: Path) -> list[tuple[str, int, str, str]]:
    with Index.open(index) as ix:
        docs = [d["doc"] for d in ix.documents()]
        return [
            (d, raw.number, raw.text, clean.text)
            for d in docs
            for raw, clean in zip(
                ix.store.documents.load_pages(d), ix.store.documents.load_pages(d, clean=True), strict=True
            )
        ]


def test_unchanged_pages_keep_one_copy_and_an_old_index_migrates(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    ingest([DATA / "sec-10q" / "docs"], index)  # some pages stripped, others left as they were
    before = _pages(index)
    exported = list(Index.open(index).export())
    conn = sqlite3.connect(index)
    stored, total = conn.execute("SELECT COUNT(clean_text), COUNT(*) FROM pages").fetchone()
    assert 0 < stored < total
    changed = sum(raw != clean for _, _, raw, clean in before)
    assert stored == changed  # a second copy exactly where stripping changed the page
    # rewrite the table as the code before 0009 kept it: WITHOUT ROWID, clean text always written
    conn.executescript(BEFORE_0032)  # the pages table as it was before it named documents by their key
    with conn:
        conn.execute(
            "CREATE TABLE old_pages(doc_id TEXT NOT NULL, page INTEGER NOT NULL, has_text INTEGER NOT NULL,"
            " raw_text TEXT NOT NULL, clean_text TEXT, PRIMARY KEY(doc_id, page)) WITHOUT ROWID"
        )
        conn.execute(
            "INSERT INTO old_pages SELECT doc_id, page, has_text, raw_text, COALESCE(clean_text, raw_text)"
            " FROM pages"
        )
        conn.execute("DROP TABLE pages")
        conn.execute("ALTER TABLE old_pages RENAME TO pages")
        # the later migrations that shape the pages table (0021's and 0028's columns) were not applied either
        conn.execute(
            "DELETE FROM migrations WHERE name IN ('0009_pages_rowid', '0021_page_ocr', '0028_page_links')"
        )
    conn.close()
    assert _pages(index) == before  # Index.open migrates
    conn = sqlite3.connect(index)
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'page_rows'").fetchone()[0]
    assert "WITHOUT ROWID" not in sql
    assert conn.execute("SELECT COUNT(clean_text) FROM pages").fetchone()[0] == changed
    conn.close()
    assert list(Index.open(index).export()) == exported
    ingest([DATA / "sec-10q" / "docs"], index)  # unchanged input: nothing to redo
    assert _pages(index) == before


def test_page_text_is_compressed_with_the_index_dictionary_and_reads_back_exactly(tmp_path: Path) -> None:
    """sec-10q holds more page text than the dictionary is trained on. A first run of one filing holds
    less: its pages are plain zstd frames; the next run's (the other filings, stored in one
    transaction) name the index's one dictionary, trained before any of them is written. Every page
    reads back as parsed."""
    folder = tmp_path / "docs"
    folder.mkdir()
    first, *rest = sorted((DATA / "sec-10q" / "docs").glob("*.pdf"))
    index = tmp_path / "i.sqlite"
    shutil.copy(first, folder)
    ingest([folder], index)
    for path in rest:
        shutil.copy(path, folder)
    ingest([folder], index)
    parsed = {
        (doc.doc_id, p.number): p.text
        for path in sorted(folder.glob("*.pdf"))
        for doc in parse_file(InputFile(path=path, doc_id=path.name, metadata={}), ParseConfig()).documents
        for p in doc.pages
    }
    stored = {(d, n): raw for d, n, raw, _ in _pages(index)}
    assert stored == parsed
    conn = sqlite3.connect(index)
    try:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == NEW_FILE_PAGE_BYTES
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0  # the run's free pages went back
        (dict_id,) = [r[0] for r in conn.execute("SELECT dict_id FROM text_dicts")]
        blobs = conn.execute("SELECT raw_text FROM page_rows WHERE typeof(raw_text)='blob'")
        frames = [bytes(r[0]) for r in blobs]
        # as stored: a page that is all one chunk reads its text from its group (migration 0036)
        plain = conn.execute("SELECT COUNT(*) FROM page_rows WHERE typeof(raw_text)='text'").fetchone()[0]
        stored_bytes = sum(map(len, frames))
    finally:
        conn.close()
    ids = [zstandard.get_frame_parameters(f).dict_id for f in frames]
    assert dict_id in ids and 0 in ids  # the first pages are plain frames, the dictionary came after them
    assert ids.index(dict_id) > ids.count(0) - 1
    assert plain < len(frames) // 10  # only short pages are kept as they are
    text_bytes = sum(len(stored[k].encode()) for k in stored)
    assert stored_bytes < text_bytes / 2


def test_a_reader_opened_before_the_dictionary_reads_pages_written_with_it(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    small, big = tmp_path / "small", tmp_path / "big"
    small.mkdir()
    big.mkdir()
    (small / "a.md").write_text("A first page, short enough that no dictionary is trained yet.\n" * 3)
    lines = [f"Clause {i}: the tenant pays the landlord within {i % 30 + 1} days of the notice."
             for i in range(40_000)]
    (big / "b.md").write_text("\n\n".join(lines))
    ingest([small], index)
    reader = Index.open(index)
    try:
        assert reader.store.codec.active is None
        ingest([small, big], index)  # trains the dictionary and stores b.md's pages with it
        pages = reader.store.documents.load_pages("b.md")  # (a long page is split at paragraph or line ends)
        assert [w for p in pages for w in p.text.split()] == "\n\n".join(lines).split()
        assert reader.store.codec.active is not None  # read from the index when a frame named it
    finally:
        reader.close()


def test_page_codec_round_trips_and_names_a_missing_dictionary() -> None:
    asked: list[int] = []

    def load(dict_id: int) -> bytes | None:
        asked.append(dict_id)
        return None

    codec = PageCodec({}, load)
    assert codec.encode("short") == "short"  # a frame would be longer
    prose = "The committee reviews the policy every year and records its decision. " * 20
    frame = codec.encode(prose)
    assert isinstance(frame, bytes) and codec.decode(frame) == prose
    assert codec.decode(None) is None and codec.decode("as stored") == "as stored"
    samples = [f"Section {i}. The employee shall report incident {i} to the security office within a day." * 3
               for i in range(12_000)]
    assert codec.learn(samples) and codec.active is not None
    again = PageCodec({}, load)
    assert again.learn(samples) and again.active == codec.active  # the same pages, the same dictionary
    framed = codec.encode(samples[7])
    assert isinstance(framed, bytes) and len(framed) < len(codec._plain.compress(samples[7].encode()))
    stranger = PageCodec({}, load)
    with pytest.raises(ValueError, match="dictionary"):
        stranger.decode(framed)
    assert asked == [codec.active[0]]


def test_a_dictionary_trained_in_a_rolled_back_batch_is_stored_with_the_next(tmp_path: Path) -> None:
    lines = [f"Clause {i}: the tenant pays the landlord within {i % 30 + 1} days of the notice."
             for i in range(40_000)]
    pages = tuple(Page(n + 1, "\n".join(lines[n * 400 : (n + 1) * 400])) for n in range(100))
    first = Document("a.md", "a.md", pages, "h1")
    second = Document("b.md", "b.md", pages[:3], "h2")
    keys = DocumentKeys(frozenset(), frozenset())
    store = Store.open(tmp_path / "i.sqlite", create=True)
    try:
        with store.writer():
            run = store.runs.begin_run(["x"], None, {})
            with pytest.raises(RuntimeError), store.transaction():
                store.documents.put_documents([(first, keys)], run)  # trains the dictionary
                raise RuntimeError("the batch fails after its pages were written")
            assert store.codec.active is not None
            with store.transaction():
                store.documents.put_documents([(second, keys)], run)
    finally:
        store.close()
    with Index.open(tmp_path / "i.sqlite") as ix:
        assert ix.store.documents.load_pages("b.md") == pages[:3]
        assert ix.store.codec.active == store.codec.active


def test_pages_without_text_are_counted_from_their_own_index(tmp_path: Path) -> None:
    """The overview's count of pages without a text layer reads a partial index (0015), not every page."""
    index = tmp_path / "i.sqlite"
    Store.open(index, create=True).close()
    with Index.open(index) as ix:
        plan = " ".join(str(r[-1]) for r in ix.store.conn.execute(
            "EXPLAIN QUERY PLAN SELECT COUNT(*) FROM pages WHERE has_text=0"))
        assert "pages_without_text" in plan
        assert ix.stats()["pages_without_text"] == 0



def _doc_rows(index: Path) -> list[tuple[object, ...]]:
    with Index.open(index) as ix:
        return ix.store.conn.execute(
            "SELECT doc_id, file_path, content_hash, unit, metadata, department, family, effective_date,"
            " n_pages, state, config_hash, title FROM documents ORDER BY doc_id"
        ).fetchall()


_TAGS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")
_WORDS = ("tenant", "landlord", "notice", "payment", "deposit", "repair", "lease", "term", "renewal", "pets")


def _sentences(tag: str, n: int) -> str:
    """A page of its own words (its lines must not repeat across pages once digits are masked)."""
    words = [w for w in _WORDS if w[0] != tag[0]] + [tag]
    return "\n".join(
        f"The {words[i % len(words)]} of the {tag} agreement covers {words[(i * 5) % len(words)]}"
        f" and {words[(i * 7 + 3) % len(words)]} for {tag} {i}."
        for i in range(n)
    )


@pytest.mark.parametrize("n_pages", [1, 3, 5])
def test_a_chunked_document_written_over_its_rows_equals_a_fresh_ingest(
    tmp_path: Path, n_pages: int
) -> None:
    """A chunked document's new version is written over its rows (DocumentTables.put_documents: pages beyond
    the new count deleted, the family and department changed in place): its rows, its pages and the
    export are those of a fresh ingest of the final corpus."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    manifest = tmp_path / "manifest.jsonl"
    (corpus / "b.txt").write_text(_sentences("other", 12), encoding="utf-8")
    (corpus / "a.txt").write_text("\f".join(_sentences(_TAGS[p], 12) for p in range(3)), encoding="utf-8")
    manifest.write_text('{"path": "corpus/a.txt", "family": "f1", "department": "d1"}\n', encoding="utf-8")
    incremental = tmp_path / "incremental.sqlite"
    ingest([corpus], incremental, manifest=manifest)
    pages = [_sentences(_TAGS[p + 3], 12) if p % 2 else _sentences(_TAGS[p], 12) for p in range(n_pages)]
    (corpus / "a.txt").write_text("\f".join(pages), encoding="utf-8")
    manifest.write_text('{"path": "corpus/a.txt", "family": "f2"}\n', encoding="utf-8")
    ingest([corpus], incremental, manifest=manifest)
    fresh = tmp_path / "fresh.sqlite"
    ingest([corpus], fresh, manifest=manifest)
    assert _doc_rows(incremental) == _doc_rows(fresh)
    assert [r[5:7] for r in _doc_rows(fresh) if r[0] == "corpus/a.txt"] == [(None, "f2")]
    assert _pages(incremental) == _pages(fresh)
    assert [p[1] for p in _pages(fresh) if p[0] == "corpus/a.txt"] == list(range(1, n_pages + 1))
    with Index.open(incremental) as a, Index.open(fresh) as b:
        assert list(a.export()) == list(b.export())

