"""A repeated id within one slice of a large JSON Lines or Parquet file fails that file as a whole read
does (its reason naming every repeat), and never the run: the other files are stored, the exit is a
bad file's."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.config import ParseConfig
from chunkdedup.parse import slices
from chunkdedup.parse.discover import InputFile
from chunkdedup.store import Store
from test_sliced_ingest import SLICE, _records, _write, sliced  # noqa: F401 (the fixture)


def _files(folder: Path, fmt: str) -> Path:
    records = _records(20)
    records[5] = {"id": "r2", "text": "the id of line 3 again, in the same slice"}
    records[15] = {"id": "r12", "text": "another id again, in a later slice"}
    if fmt == "jsonl":
        _write(folder / "a.jsonl", records)
        name = "a.jsonl"
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = {"id": [str(r["id"]) for r in records], "text": [str(r["text"]) for r in records]}
        pq.write_table(pa.table(table), folder / "a.parquet")
        name = "a.parquet"
    (folder / "b.txt").write_text("a text file beside it\n")
    return folder / name


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_repeat_within_one_slice_fails_the_file_as_a_whole_read_does(
    tmp_path: Path, sliced: list[int], monkeypatch: pytest.MonkeyPatch, fmt: str  # noqa: F811
) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    docs = tmp_path / "docs"
    docs.mkdir()
    repeated = _files(docs, fmt)
    assert slices.sliceable(InputFile(repeated, docs), ParseConfig())
    report = ingest([docs], tmp_path / "i.sqlite")
    by_name = {Path(f.path).name: f for f in report.files}
    assert by_name["b.txt"].status == "ingested"
    assert by_name[repeated.name].status == "failed"
    assert sliced and max(sliced) <= SLICE  # it was read in slices
    with Store.open(tmp_path / "i.sqlite") as store:  # nothing of the file was kept
        assert store.documents.docs_of_file(str(repeated)) == []
    monkeypatch.setattr(slices, "SLICED_BYTES", 1 << 40)  # the same file read whole
    whole = ingest([docs], tmp_path / "whole.sqlite")
    said = {Path(f.path).name: f.reason for f in whole.files}[repeated.name]
    assert by_name[repeated.name].reason == said
    assert "'r2'" in said and "'r12'" in said
