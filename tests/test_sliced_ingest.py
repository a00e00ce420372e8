"""A large JSON Lines file is parsed and stored a slice of records at a time (``parse/slices.py``,
``ingestion/sliced.py``): the parse phase holds at most a slice's documents, and the index and each
file's outcome are those of a whole read. The tests make every JSONL file "large" and the slices tiny."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Config, ingest
from chunkdedup.config import ParseConfig
from chunkdedup.ingestion.sliced import AtHand
from chunkdedup.parse import slices
from chunkdedup.parse.discover import InputFile
from chunkdedup.store import Store
from export_reference import digests

SLICE = 7


@pytest.fixture
def sliced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every JSONL file read in slices of ``SLICE`` records; yields the number of documents each
    ``put_documents`` call was given (the parse phase's writes)."""
    monkeypatch.setattr(slices, "SLICED_BYTES", 0)
    monkeypatch.setattr(slices, "SLICE_RECORDS", SLICE)
    sizes: list[int] = []
    put = Store.put_documents

    def counted(self: Store, items: Any, run_id: int) -> None:
        sizes.append(len(items))
        put(self, items, run_id)

    monkeypatch.setattr(Store, "put_documents", counted)
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


def _write(path: Path, records: list[dict[str, object]], extra: tuple[str, ...] = ()) -> None:
    lines = [json.dumps(r) for r in records]
    lines[4:4] = ["", "not json", '{"id": "x"}', *extra]  # a blank line and two unusable ones
    path.write_text("\n".join(lines) + "\n")


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
        assert store.docs_of_file(str(docs / "a.jsonl")) == []


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
        before = len(store.doc_ids())
    # the two files give the same doc ids (the file's name): the second is refused, nothing of it kept
    again = ingest([second], index)
    failed = [f for f in again.files if f.status == "failed"]
    assert len(failed) == 1 and "is already taken by" in (failed[0].reason or "")
    with Store.open(index) as store:
        assert len(store.doc_ids()) == before


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
    from chunkdedup.store.chunk_tables import ChunkTables

    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "a.jsonl", _records(80))
    read: list[int] = []
    rows = ChunkTables.group_rows

    def counted(self: ChunkTables, ids: Any, **kw: Any) -> Any:
        read.append(len(ids))
        return rows(self, ids, **kw)

    monkeypatch.setattr(ChunkTables, "group_rows", counted)
    index = tmp_path / "i.sqlite"
    ingest([docs], index)
    with Store.open(index) as store:
        total = store.chunks.group_count()
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
        assert store.docs_of_file(str(docs / "shard.parquet")) == []
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
