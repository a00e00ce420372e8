"""Migration 0036: a page that is all one chunk, whose group's text is the page's own words, keeps no copy
of them (``raw_text`` NULL, read through the ``pages`` view from the group). Whatever happens to the group
(another source comes first and its words become the group's, a source goes, a record is edited or
removed), every page reads back as parsed; an index in the layout before migrates and answers as before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from chunkdedup import Index, ingest
from chunkdedup.config import ChunkConfig, Config, ParseConfig
from chunkdedup.ingestion.remove import remove_documents
from chunkdedup.parse import InputFile, parse_file
from chunkdedup.store.schema import ROWLESS_PAGE
from conftest import BEFORE_0036, POLICY
from test_migration_source_rows import _answers
from test_pages_storage import _pages

#: Exact copies of one sentence in other words' case and spacing (one exact key), and a longer record
#: of several chunks.
_RECORDS = {
    "r1": "Refunds are paid within  thirty days of a request.",
    "r2": "refunds are paid within thirty days of a request.",
    "r3": "Each record stands alone.",
    "r4": " ".join(
        f"Paragraph {i} says that the committee meets on day {i} of the month to review claims."
        for i in range(60)
    ),
}


def _write(path: Path, records: dict[str, str]) -> None:
    path.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in records.items()))


def _parsed(folder: Path) -> dict[tuple[str, int], str]:
    """Every page of the folder's files as parsed, by (doc_id, page)."""
    out: dict[tuple[str, int], str] = {}
    for path in sorted(folder.iterdir()):
        inp = InputFile(path=path, doc_id=path.name, metadata={})
        for doc in parse_file(inp, ParseConfig()).documents:
            out.update(((doc.doc_id, p.number), p.text) for p in doc.pages)
    return out


def _stored(index: Path) -> dict[tuple[str, int], str]:
    return {(d, n): raw for d, n, raw, _ in _pages(index)}


def _shared(index: Path) -> set[str]:
    """The documents whose page keeps no copy of its text: in a row (0036) or in none (0040)."""
    conn = sqlite3.connect(index)
    try:
        sql = (
            "SELECT d.doc_id FROM page_rows p JOIN document_rows d ON d.dkey = p.dkey"
            f" WHERE p.raw_text IS NULL UNION SELECT d.doc_id FROM document_rows d WHERE {ROWLESS_PAGE}"
        )
        return {r[0] for r in conn.execute(sql)}
    finally:
        conn.close()


def test_pages_read_their_own_words_whatever_happens_to_their_group(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    index = tmp_path / "i.sqlite"
    _write(docs / "b.jsonl", _RECORDS)
    ingest([docs], index)
    assert _stored(index) == _parsed(docs)
    # r1 leads its group, whose text is its words; r2 is in r1's group in other words; r4 is many chunks
    assert _shared(index) == {"b.jsonl#r1", "b.jsonl#r3"}

    # a record sorting first joins r1's group: the group's text becomes its words, r1's page keeps r1's
    _write(docs / "a.jsonl", {"x": "REFUNDS are paid within thirty days of a request."})
    ingest([docs], index)
    assert _stored(index) == _parsed(docs)
    assert "b.jsonl#r1" not in _shared(index) and "a.jsonl#x" in _shared(index)
    with Index.open(index) as ix:
        (record,) = [r for r in ix.export() if "refunds" in r["text"].lower()]
    assert record["text"] == "REFUNDS are paid within thirty days of a request."  # the group's words: a's

    # the record that led goes (its file removed): the others read their own words
    (docs / "a.jsonl").unlink()
    ingest([docs], index, prune=True)
    assert _stored(index) == _parsed(docs)

    # a record edited, another removed by id: every page still reads as parsed
    edited = dict(_RECORDS, r3="Each record stands alone, and is edited once.")
    _write(docs / "b.jsonl", edited)
    ingest([docs], index)
    assert _stored(index) == _parsed(docs)
    assert "b.jsonl#r3" in _shared(index)
    remove_documents(index, ["b.jsonl#r1"])
    stored = _stored(index)
    parsed = {k: v for k, v in _parsed(docs).items() if k[0] != "b.jsonl#r1"}
    assert stored == parsed


def test_pages_read_their_own_words_when_chunked_again_in_smaller_chunks(tmp_path: Path) -> None:
    """Chunked again under another config, a page that was one chunk is several: its first chunk's
    group holds only the start of its words, so the page has its copy back."""
    docs = tmp_path / "docs"
    docs.mkdir()
    index = tmp_path / "i.sqlite"
    long_record = (
        "The fund pays claims. It pays them monthly. Claims over a limit wait. The board decides them."
    )
    _write(docs / "b.jsonl", dict(_RECORDS, r5=long_record))
    ingest([docs], index)
    assert "b.jsonl#r5" in _shared(index)
    small = Config(chunk=ChunkConfig(target_words=4, max_words=6, paragraph_words=4))
    ingest([docs], index, config=small)
    assert _stored(index) == _parsed(docs)
    assert "b.jsonl#r5" not in _shared(index) and "b.jsonl#r3" in _shared(index)
    with Index.open(index) as ix:
        texts = [r["text"] for r in ix.export()]
    assert long_record not in texts and any(long_record.startswith(t) for t in texts)  # in pieces now


def test_an_index_whose_pages_each_hold_their_text_migrates_and_answers_as_before(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "b.jsonl", _RECORDS)
    index = tmp_path / "i.sqlite"
    ingest([POLICY / "current", docs], index)
    before, pages = _answers(index), _stored(index)
    shared = _shared(index)
    assert {"b.jsonl#r1", "b.jsonl#r3"} <= shared
    conn = sqlite3.connect(index)
    conn.executescript(BEFORE_0036)
    conn.close()
    assert _shared(index) == set()
    assert _stored(index) == pages  # opening migrates
    assert _shared(index) == shared
    assert _answers(index) == before


def test_check_finds_a_page_whose_words_are_no_longer_anywhere(tmp_path: Path) -> None:
    """The one way a shared page could lose its words, its source row gone while the page stays (no
    write of the store does that), is what ``check`` reports: no page check of SQLite would."""
    from chunkdedup.store.index_errors import check_index

    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "b.jsonl", _RECORDS)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    assert check_index(index) == ["ok"]
    conn = sqlite3.connect(index)
    with conn:
        key = "(SELECT dkey FROM document_rows WHERE doc_id = 'b.jsonl#r3')"
        conn.execute(f"DELETE FROM source_rows WHERE dkey = {key}")
    conn.close()
    assert check_index(index) == [
        "1 page(s) read no text (first in document b.jsonl#r3): the chunk that kept their words is gone"
    ]


def test_a_rowless_page_stripped_later_keeps_its_words_and_its_clean_text(tmp_path: Path) -> None:
    """Migration 0040: a one-page document whose page is its one chunk's words has no page row. When a
    line of it becomes corpus chrome (other records gain it), the unchanged record is stripped again:
    its page gets its row back, with its words and its clean text."""
    docs = tmp_path / "docs"
    docs.mkdir()
    index = tmp_path / "i.sqlite"
    words = ("apple", "river", "stone", "cloud", "maple", "ember", "lantern", "harbor", "meadow", "violet",
             "copper", "silver")
    bodies = {
        f"r{i}": f"The {words[i]} committee reviews {words[(i + 3) % 12]} claims before the"
        f" {words[(i + 5) % 12]} board meets."
        for i in range(10)
    }
    notice = "Notice to all staff members.\n"
    _write(docs / "b.jsonl", {k: (notice + v if k == "r0" else v) for k, v in bodies.items()})
    ingest([docs], index)
    assert _shared(index) == {f"b.jsonl#{k}" for k in bodies}
    assert sqlite3.connect(index).execute("SELECT COUNT(*) FROM page_rows").fetchone()[0] == 0
    with Index.open(index) as ix:
        assert ix.stats().pages == 10
    # the notice is now in 7 of 10 records: chrome; r0 is unchanged, and stripped again
    _write(docs / "b.jsonl", {k: (notice + v if k < "r7" else v) for k, v in bodies.items()})
    ingest([docs], index)
    assert _stored(index) == _parsed(docs)
    ((raw, clean),) = [(r, c) for d, _, r, c in _pages(index) if d == "b.jsonl#r0"]
    assert raw == notice + bodies["r0"] and clean.strip() == bodies["r0"]
    assert _shared(index) == {"b.jsonl#r7", "b.jsonl#r8", "b.jsonl#r9"}
    with Index.open(index) as ix:
        assert ix.stats().pages == 10
        assert all("Notice" not in r["text"] for r in ix.export())
