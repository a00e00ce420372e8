"""A large JSON Lines file is parsed and stored a slice of records at a time (``parse/slices.py``,
``ingestion/sliced.py``): the parse phase holds at most a slice's documents, and the index and each
file's outcome are those of a whole read. The tests make every JSONL file "large" and the slices tiny."""

from __future__ import annotations

import codecs
import json
import random
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from chunkdedup import Config, ingest
from chunkdedup.config import ParseConfig
from chunkdedup.ingestion.sliced import AtHand
from chunkdedup.parse import slices
from chunkdedup.parse.discover import InputFile
from chunkdedup.store import Store
from chunkdedup.store.document_tables import DocumentTables
from chunkdedup.types import Document
from export_reference import digests

SLICE = 7


@pytest.fixture
def sliced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every JSONL file read in slices of ``SLICE`` records; yields the number of documents each
    ``put_documents`` call was given (the parse phase's writes)."""
    monkeypatch.setattr(slices, "SLICED_BYTES", 0)
    monkeypatch.setattr(slices, "SLICE_RECORDS", SLICE)
    sizes: list[int] = []
    put = DocumentTables.put_documents

    def counted(self: DocumentTables, items: Any, run_id: int) -> None:
        sizes.append(len(items))
        put(self, items, run_id)

    monkeypatch.setattr(DocumentTables, "put_documents", counted)
    yield sizes


def _records(n: int, seed: int = 3) -> list[dict[str, object]]:
    rng = random.Random(seed)
    words = [c + v + e for c in "bdfgkp" for v in "aeiou" for e in "lmnrst"]  # no digits: the boilerplate
    # key masks them, and lines of numbered words would all be one key
    footer = "Questions? Write to help@example.com or call 555-0100."
    out: list[dict[str, object]] = []
    for i in range(n):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(20, 60)))
        if i % 5 == 0 and out:  # a near copy of an earlier record
            body = str(out[-1]["text"]).split("\n")[0] + " extra"
        out.append({"id": f"r{i}", "text": f"{body}\n{footer}", "department": "d" + str(i % 3)})
    return out


def _write(
    path: Path, records: list[dict[str, object]], extra: tuple[str, ...] = (), encoding: str = "plain"
) -> None:
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    lines[4:4] = ["", "not json", '{"id": "x"}', *extra]  # a blank line and two unusable ones
    path.write_bytes(_encoded("\n".join(lines) + "\n", encoding))


#: words a byte encoding other than UTF-8 writes otherwise (all in cp1252)
_ACCENTED = "Café, naïve Größe – 5 €"


def _encoded(text: str, encoding: str) -> bytes:
    """``text`` as a file of ``encoding``: ``plain`` UTF-8, ``crlf`` (UTF-8 with CRLF line ends),
    ``bom`` (UTF-8 after a BOM), ``cp1252``, ``damaged`` (UTF-8 but three words in Latin-1) or ``utf-16``."""
    if encoding == "crlf":
        return text.replace("\n", "\r\n").encode()
    if encoding == "bom":
        return codecs.BOM_UTF8 + text.encode()
    if encoding == "damaged":
        return text.encode().replace("Größe".encode(), "Größe".encode("latin-1"), 3)
    return text.encode("utf-8" if encoding == "plain" else encoding)


def _outcome(index: Path, inputs: list[Path]) -> tuple[object, ...]:
    report = ingest(inputs, index, config=Config(parse=ParseConfig(max_page_chars=1000)))
    files = [(Path(f.path).name, str(f.status), f.doc_ids, f.reason) for f in report.files]
    return tuple(files), report.totals["canonical_chunks"]


def test_a_sliced_file_gives_the_index_and_outcome_of_a_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    long = {"id": "long", "text": "x " * 1500}  # split into pages: a note after the records' notes
    bad_date = json.dumps({"id": "bad", "text": "t", "effective_date": "no"})
    _write(docs / "a.jsonl", [*_records(60), long], extra=(bad_date,))
    whole = _outcome(tmp_path / "whole.sqlite", [docs])
    with monkeypatch.context() as m:
        m.setattr(slices, "SLICED_BYTES", 0)
        m.setattr(slices, "SLICE_RECORDS", SLICE)
        parts = _outcome(tmp_path / "sliced.sqlite", [docs])
    assert parts == whole
    assert "line 6: not valid JSON" in str(whole[0][0][3]) and "split into pages" in str(whole[0][0][3])
    assert digests(tmp_path / "sliced.sqlite") == digests(tmp_path / "whole.sqlite")


def test_the_parse_phase_holds_one_slice_of_a_file_at_a_time(tmp_path: Path, sliced: list[int]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "a.jsonl", _records(100))
    report = ingest([docs], tmp_path / "i.sqlite")
    assert report.files[0].status == "ingested" and len(report.files[0].doc_ids) == 100
    assert sum(sliced) == 100 and max(sliced) <= SLICE


def test_an_edited_sliced_file_equals_a_fresh_ingest_of_it(tmp_path: Path, sliced: list[int]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    records = _records(50)
    _write(docs / "a.jsonl", records)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    records[10] = {"id": "r10", "text": "an edited record with new words entirely"}
    del records[20]
    _write(docs / "a.jsonl", [*records, {"id": "new", "text": "a record added at the end"}])
    sliced.clear()
    again = ingest([docs], index)
    assert sum(sliced) == 2  # the edited and the added record: the others are kept as stored
    fresh = ingest([docs], tmp_path / "fresh.sqlite")
    assert again.files[0].doc_ids == fresh.files[0].doc_ids
    assert digests(index) == digests(tmp_path / "fresh.sqlite")


def test_a_repeat_in_a_later_slice_fails_the_whole_file(tmp_path: Path, sliced: list[int]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    records = _records(30)
    records.append({"id": "r2", "text": "the id of line 3, again"})
    _write(docs / "a.jsonl", records)
    (docs / "b.txt").write_text("a text file beside it\n")
    report = ingest([docs], tmp_path / "i.sqlite")
    by_name = {Path(f.path).name: f for f in report.files}
    assert by_name["a.jsonl"].status == "failed" and by_name["b.txt"].status == "ingested"
    said = "record id 'r2' is used on lines 3 and 34: give each record a unique 'id'"
    assert by_name["a.jsonl"].reason == said
    assert max(sliced) <= SLICE
    with Store.open(tmp_path / "i.sqlite") as store:  # nothing of the file was kept
        assert store.documents.docs_of_file(str(docs / "a.jsonl")) == []


def test_an_id_another_file_holds_fails_the_sliced_file(tmp_path: Path, sliced: list[int]) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    _write(first / "a.jsonl", _records(20))
    index = tmp_path / "i.sqlite"
    report = ingest([first], index)
    assert report.files[0].status == "ingested"
    (second / "a.jsonl").write_text((first / "a.jsonl").read_text())
    with Store.open(index) as store:
        before = len(store.documents.doc_ids())
    # the two files give the same doc ids (the file's name): the second is refused, nothing of it kept
    again = ingest([second], index)
    failed = [f for f in again.files if f.status == "failed"]
    assert len(failed) == 1 and "is already taken by" in (failed[0].reason or "")
    with Store.open(index) as store:
        assert len(store.documents.doc_ids()) == before


def test_at_hand_holds_at_most_its_documents() -> None:
    from chunkdedup.types import Document, Page

    def doc(i: int) -> Document:
        return Document(f"d{i}", "p", (Page(1, "text"),), "h")

    hand = AtHand({}, chars=1_000, docs=3)
    held = hand.offer([doc(i) for i in range(5)])
    assert held == ["d0", "d1", "d2"] and len(hand.pages) == 3
    hand.drop(["d1"])
    assert hand.offer([doc(9)]) == ["d9"] and hand.docs == 0


def test_the_cluster_pass_reads_only_the_groups_on_an_edge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The groups on no near edge lead themselves: a first ingest's cluster pass reads (and decides)
    the rows of the groups on an edge alone, and every group still ends as the decision says."""
    from chunkdedup.store.chunk_tables import GroupTables

    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "a.jsonl", _records(80))
    read: list[int] = []
    rows = GroupTables.group_rows

    def counted(self: GroupTables, ids: Any, **kw: Any) -> Any:
        read.append(len(ids))
        return rows(self, ids, **kw)

    monkeypatch.setattr(GroupTables, "group_rows", counted)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    with Store.open(index) as store:
        total = store.groups.group_count()
        merged = store.conn.execute("SELECT COUNT(*) FROM groups WHERE canonical_id != id").fetchone()[0]
        dirty = store.conn.execute("SELECT COUNT(*) FROM dirty").fetchone()[0]
    assert merged > 5 and dirty == 0  # near copies joined their originals; nothing left to decide
    # a read of every group (all are dirty) would be ``total`` at once
    assert 2 * merged <= max(read) < total / 2 and sum(read) < total


def _write_parquet(path: Path, records: list[dict[str, object]], row_group: int = 9) -> None:
    """``records`` as a Parquet file of small row groups, with rows a whole read notes (no text, an
    integer id, a text too long for one page)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [{"id": str(r["id"]), "text": r["text"], "department": r.get("department")} for r in records]
    rows[3:3] = [
        {"id": "empty", "text": "", "department": None},
        {"id": "7", "text": "seven", "department": "d1"},
    ]
    rows.append({"id": "long", "text": "x " * 1500, "department": None})
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group)


def test_a_sliced_parquet_file_gives_the_index_and_outcome_of_a_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sliced: list[int]
) -> None:
    """A large Parquet file is read a batch of rows at a time (never the whole table): the index,
    its documents' ids and the file's notes are a whole read's."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _write_parquet(docs / "shard.parquet", _records(60))
    with monkeypatch.context() as m:
        m.setattr(slices, "SLICED_BYTES", 1 << 40)  # read whole
        whole = _outcome(tmp_path / "whole.sqlite", [docs])
    assert max(sliced) == 62  # the whole file's documents at once
    sliced.clear()
    parts = _outcome(tmp_path / "sliced.sqlite", [docs])
    assert parts == whole
    notes = str(whole[0][0][3])
    assert len(whole[0][0][2]) == 62 and "row 4" in notes and "split into pages" in notes
    assert sum(sliced) == 62 and max(sliced) <= SLICE  # one slice of rows held at a time
    assert digests(tmp_path / "sliced.sqlite") == digests(tmp_path / "whole.sqlite")


def test_a_repeated_row_id_fails_a_sliced_parquet_file_as_a_whole_read(
    tmp_path: Path, sliced: list[int]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    records = _records(30)
    records.append({"id": "r2", "text": "the id of row 3, again"})
    _write_parquet(docs / "shard.parquet", records)
    report = ingest([docs], tmp_path / "i.sqlite")
    assert report.files[0].status == "failed"
    assert report.files[0].reason == "record id 'r2' is used on rows 3 and 33: give each record a unique 'id'"
    with Store.open(tmp_path / "i.sqlite") as store:  # nothing of the file was kept
        assert store.documents.docs_of_file(str(docs / "shard.parquet")) == []
    (docs / "shard.parquet").write_bytes(b"PAR1 damaged")  # not sliceable: the whole read says why
    report = ingest([docs], tmp_path / "i.sqlite")
    assert report.files[0].status == "failed"
    assert "not a readable Parquet file" in (report.files[0].reason or "")


def test_a_sliced_parquet_file_without_text_fails_as_a_whole_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    docs = tmp_path / "docs"
    docs.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "body": ["one", "two"]}), docs / "shard.parquet")
    whole = _outcome(tmp_path / "whole.sqlite", [docs])
    with monkeypatch.context() as m:
        m.setattr(slices, "SLICED_BYTES", 0)
        assert slices.sliceable(InputFile(docs / "shard.parquet", "shard.parquet"), ParseConfig())
        parts = _outcome(tmp_path / "sliced.sqlite", [docs])
    assert parts == whole
    assert whole[0][0][1] == "failed" and whole[0][0][3] == "no 'text' column (columns: id, body)"


def _accented(n: int) -> list[dict[str, object]]:
    """``_records(n)`` with words beyond ASCII, and every third without an id (its line number is)."""
    out: list[dict[str, object]] = []
    for i, r in enumerate(_records(n)):
        text = str(r["text"]).replace("\n", f" {_ACCENTED}.\n", 1)
        out.append({"text": text} if i % 3 == 1 else {**r, "text": text})
    return out


#: what a read of a JSON Lines file gives: its documents, notes, record ids in order, the reason it fails
Read = tuple[tuple[Document, ...], tuple[str, ...], tuple[str, ...], str | None]


def _read_both(path: Path) -> tuple[Read, Read]:
    """What a whole read (``parse_file``) and a sliced read of ``path`` give: the documents, the file's
    notes, the record ids in order, or the reason the file fails."""
    from chunkdedup.errors import ParseError
    from chunkdedup.parse.registry import parse_file, record_prefix

    inp = InputFile(path, path.name)
    whole = parse_file(inp, ParseConfig())
    said = whole.documents, whole.notes, tuple(d.doc_id for d in whole.documents), whole.reason
    assert slices.sliceable(inp, ParseConfig(), over=0)
    ledger = slices.ledger_for(inp)
    try:
        parts = list(slices.record_slices(inp, ParseConfig(), ledger, size=SLICE))
        ledger.check()
    except ParseError as e:
        return said, ((), (), (), e.reason)
    docs = tuple(d for part in parts for d in part.documents)
    notes = ledger.notes() + tuple(n for part in parts for n in part.split_notes)
    return said, (docs, notes, tuple(record_prefix(inp) + rid for rid in ledger.order()), None)


_NOTES = {
    "crlf": None,
    "bom": None,
    "cp1252": "not UTF-8: decoded as cp1252 (a guess; save the file as UTF-8 to be sure)",
    "damaged": "6 byte sequence(s) are not valid UTF-8: replaced by U+FFFD",
    "utf-16": None,
}


@pytest.mark.parametrize("encoding", list(_NOTES))
def test_a_file_that_is_not_plain_utf8_is_sliced_as_a_whole_read_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sliced: list[int], encoding: str
) -> None:
    """CRLF line ends, a BOM, cp1252 bytes, a few damaged bytes in UTF-8, UTF-16: the file is read a
    slice at a time (blocks of 64 bytes) to the documents, ids, content hashes and notes of a whole
    read, the note on how its bytes were decoded first, and to the same index."""
    monkeypatch.setattr(slices, "_BLOCK_BYTES", 64)
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "a.jsonl", [*_accented(40), {"id": "long", "text": "x " * 1500}], encoding=encoding)
    whole, parts = _read_both(docs / "a.jsonl")
    assert parts == whole
    documents, notes, ids, _ = whole
    assert (
        len(documents) == 41
        and "a.jsonl#@2" in ids
        and "line 6: not valid JSON: Expecting value at column 1" in notes
    )
    assert notes[0] == _NOTES[encoding] if _NOTES[encoding] else notes[0].startswith("line 6")
    with monkeypatch.context() as m:
        m.setattr(slices, "SLICED_BYTES", 1 << 40)  # read whole
        said = _outcome(tmp_path / "whole.sqlite", [docs])
    assert max(sliced) == 41  # the whole file's documents at once
    sliced.clear()
    assert _outcome(tmp_path / "sliced.sqlite", [docs]) == said
    assert sum(sliced) == 41 and max(sliced) <= SLICE  # one slice of records held at a time
    assert digests(tmp_path / "sliced.sqlite") == digests(tmp_path / "whole.sqlite")


def test_a_crlf_cut_by_a_block_end_is_one_line_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block that ends in ``\\r`` before the next block's ``\\n`` ends one line, not two: the line
    numbers (and the ids of records without one) are a whole read's."""
    path = tmp_path / "a.jsonl"
    _write(path, _accented(12), encoding="crlf")
    data = path.read_bytes()
    cuts = [i + 1 for i in range(len(data)) if data[i : i + 2] == b"\r\n"]
    for block in (cuts[0], cuts[3], cuts[-1]):
        with monkeypatch.context() as m:
            m.setattr(slices, "_BLOCK_BYTES", block)
            assert data[block - 1 : block + 1] == b"\r\n"  # the first block ends between the two
            whole, parts = _read_both(path)
            assert parts == whole
            assert "a.jsonl#@14" in whole[2]


def test_an_edited_cp1252_file_read_in_slices_keeps_the_records_a_whole_read_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sliced: list[int]
) -> None:
    """Stored records are known by the hash of their decoded line's UTF-8 (as a whole read of a file
    that is not plain UTF-8 hashes them), so a sliced re-read of an edited file builds only the
    edited and the added record, and equals a fresh ingest."""
    docs = tmp_path / "docs"
    docs.mkdir()
    records = _accented(50)
    _write(docs / "a.jsonl", records, encoding="cp1252")
    index = tmp_path / "i.sqlite"
    with monkeypatch.context() as m:
        m.setattr(slices, "SLICED_BYTES", 1 << 40)  # stored by a whole read
        ingest([docs], index)
    records[10] = {"id": "r10", "text": f"an edited record, {_ACCENTED}"}
    _write(
        docs / "a.jsonl", [*records, {"id": "new", "text": "a record added at the end"}], encoding="cp1252"
    )
    sliced.clear()
    again = ingest([docs], index)
    assert sum(sliced) == 2  # the edited and the added record: the others are kept as stored
    assert len(sliced) > 1  # a write a slice (a whole read writes once)
    assert "decoded as cp1252" in (again.files[0].reason or "")
    fresh = ingest([docs], tmp_path / "fresh.sqlite")
    assert again.files[0].doc_ids == fresh.files[0].doc_ids
    assert digests(index) == digests(tmp_path / "fresh.sqlite")


@pytest.mark.parametrize(
    ("encoding", "tail", "status"),
    [
        ("plain", b"\x00\n", "skipped"),
        ("utf-16", "\ud800".encode("utf-16-le", "surrogatepass"), "skipped"),
        ("utf-16", b"", "ingested"),
    ],
)
def test_bytes_that_are_not_text_fail_a_sliced_file_as_a_whole_read(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sliced: list[int],
    encoding: str,
    tail: bytes,
    status: str,
) -> None:
    """A NUL byte at a UTF-8 file's end, or a lone surrogate at a UTF-16 file's end (after slices were
    stored), skips the file as a whole read does: nothing of it is kept."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "a.jsonl", _records(30), encoding=encoding)
    with (docs / "a.jsonl").open("ab") as f:
        f.write(tail)
    monkeypatch.setattr(slices, "_BLOCK_BYTES", 256)
    with monkeypatch.context() as m:
        m.setattr(slices, "SLICED_BYTES", 1 << 40)
        whole = _outcome(tmp_path / "whole.sqlite", [docs])
    sliced.clear()
    assert _outcome(tmp_path / "sliced.sqlite", [docs]) == whole
    assert whole[0][0][1] == status
    if status == "skipped":
        assert whole[0][0][3] == "not a text file (binary content); check the file type"
        # UTF-16: slices stored, then rolled back; UTF-8: the NUL byte found before any slice
        assert sliced == ([5, 7, 7, 7] if encoding == "utf-16" else [])
        with Store.open(tmp_path / "sliced.sqlite") as store:
            assert store.documents.docs_of_file(str(docs / "a.jsonl")) == []
    else:
        assert sum(sliced) == 30 and max(sliced) <= SLICE


_TEXT = st.text(
    st.sampled_from([*'ab c\t"\\', "é", "ü", "€", "–", "中", "\u3000", "\xa0", "\ufffd"]), max_size=12
)
_LINE = st.one_of(
    st.builds(
        lambda text, rid: json.dumps({"id": rid, "text": text}, ensure_ascii=False),
        _TEXT,
        st.integers(0, 99).map(str),
    ),
    st.builds(lambda text: json.dumps({"text": text}, ensure_ascii=False), _TEXT),
    st.sampled_from(["", " ", "\xa0", "not json", "{}"]),
)
_ENCODINGS = st.sampled_from(
    ["utf-8", "utf-8-sig", "cp1252", "latin-1", "utf-16", "utf-32", "shift_jis", "gb18030"]
)
_DAMAGE = st.lists(
    st.tuples(
        st.floats(0, 1), st.sampled_from([b"\xff", b"\x80", b"\xc3", b"\xe4\xb8", b"\r", b"\n"])
    ),
    max_size=3,
)


@given(
    st.lists(st.tuples(_LINE, st.sampled_from(["\n", "\r\n", "\r"])), min_size=1, max_size=25),
    _ENCODINGS,
    _DAMAGE,
    st.integers(1, 40),
)
@settings(max_examples=300, deadline=None)
def test_any_bytes_read_in_slices_give_a_whole_reads_documents_and_notes(
    lines: list[tuple[str, str]], encoding: str, damage: list[tuple[float, bytes]], block: int
) -> None:
    """Lines of records (repeated ids, blank and unusable lines among them) with any line ends, in
    any encoding, with damaged bytes anywhere, read a block of ``block`` bytes at a time: the same
    documents, notes and ids as a whole read, or the same reason the file fails."""
    data = "".join(line + end for line, end in lines).encode(encoding, "replace")
    for at, bad in damage:
        cut = int(at * len(data))
        data = data[:cut] + bad + data[cut:]
    assume(not data.isspace())
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as m:
        m.setattr(slices, "_BLOCK_BYTES", block)
        path = Path(tmp) / "a.jsonl"
        path.write_bytes(data)
        whole, parts = _read_both(path)
    assert parts == whole


def test_the_sample_an_encoding_is_guessed_from_is_read_where_utf8_first_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose first byte that is not UTF-8 comes a megabyte in: the sliced read guesses its
    encoding from the same sample as a whole read (read by seeking, not from the start)."""
    monkeypatch.setattr(slices, "_BLOCK_BYTES", 4096)
    path = tmp_path / "a.jsonl"
    ascii_lines = "".join(json.dumps({"text": f"plain words {i}"}) + "\n" for i in range(40_000))
    path.write_bytes(ascii_lines.encode() + _encoded(f'{{"text": "{_ACCENTED}"}}\n' * 20, "cp1252"))
    assert path.stat().st_size > 1 << 20
    whole, parts = _read_both(path)
    assert parts == whole
    notes = whole[1]
    assert len(notes) == 1 and notes[0].startswith("not UTF-8: decoded as")


@given(st.binary(max_size=400).map(lambda b: b.replace(b"\r", b"\n")), st.integers(1, 40))
def test_a_files_blocks_are_its_whole_lines_in_order(data: bytes, block: int) -> None:
    """The plain read's blocks rejoin to the file, every block but the last ends a line and the last
    holds none: a line longer than many blocks is one block, gathered in parts."""
    import io

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(slices, "_BLOCK_BYTES", block)
        out = list(slices._blocks(io.BytesIO(data).read))
    assert b"".join(out) == data
    assert all(b.endswith(b"\n") for b in out[:-1]) and b"\n" not in out[-1]
    assert all(b.count(b"\n") >= 1 for b in out[:-1])
