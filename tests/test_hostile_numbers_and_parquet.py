"""Hostile numbers and Parquet files: numbers JSON cannot hold in a record's fields, and Parquet files
whose columns or pages a sliced read must refuse as a whole read does."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from chunkdedup import Index, ingest
from chunkdedup.cli import main
from chunkdedup.parse import slices


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_non_finite_number_in_a_records_fields_is_stored_as_null(tmp_path: Path, fmt: str) -> None:
    """NaN and infinity (a pandas float column's missing value; JSONL's ``NaN`` literal, which Python
    reads) are not JSON: stored as null, so a filter on any field still reads every document's fields,
    and the index is never called damaged."""
    docs = tmp_path / "docs"
    docs.mkdir()
    rows = [
        {"id": "a", "text": "alpha beta gamma delta", "score": float("nan"), "rank": 1.5},
        {"id": "b", "text": "alpha epsilon zeta eta", "score": 2.0, "rank": float("inf")},
    ]
    if fmt == "jsonl":
        (docs / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))  # writes NaN, Infinity
        assert "NaN" in (docs / "r.jsonl").read_text()
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), docs / "r.parquet")
    index = tmp_path / "i.sqlite"
    report = ingest([docs], index)
    assert [str(f.status) for f in report.files] == ["ingested"]
    with Index.open(index) as ix:
        fields = {d.doc_id.split("#")[-1]: d.metadata for d in ix.documents()}
    assert fields["a"]["score"] is None and fields["a"]["rank"] == 1.5
    assert fields["b"]["score"] == 2.0 and fields["b"]["rank"] is None
    runner = CliRunner()
    for where in ("score=2", "score=7", "nothing=1"):  # a hit, none (the hint reads every field), no key
        done = runner.invoke(main, ["query", "alpha", "--index", str(index), "--where", where])
        assert "damaged" not in done.output and done.exit_code in (0, 2), done.output
    with Index.open(index) as ix:
        hits = ix.query("alpha", k=5, where=["score=2"])  # a number field: 2 is 2.0
    assert [c.doc.split("#")[-1] for h in hits for c in h.citations] == ["b"]


def _words(i: int) -> str:
    rng = random.Random(i)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(30)).capitalize() + "."


def _repeated_columns(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 8
    ids, texts = pa.array([f"a{i}" for i in range(n)]), pa.array([_words(i) for i in range(n)])
    columns = [ids, texts, pa.array(["x"] * n)]
    pq.write_table(pa.Table.from_arrays(columns, names=["id", "text", "text"]), path)


def _damaged_page(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": [f"a{i}" for i in range(2000)], "text": [_words(i) for i in range(2000)]})
    pq.write_table(table, path, row_group_size=500, compression="snappy")
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(range(64))  # inside a data page, not the footer
    path.write_bytes(bytes(data))


def _nan_ids(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = [1.0, 2.0, float("nan"), 4.0, float("nan")]  # pandas' int column with missing values
    pq.write_table(pa.table({"id": ids, "text": [_words(i) for i in range(5)]}), path)


@pytest.mark.parametrize(
    ("make", "status", "said"),
    [
        (_repeated_columns, "failed", "columns named more than once: text; give each column one name"),
        (_damaged_page, "failed", "not a readable Parquet file (Corrupt snappy compressed data.)"),
        (_nan_ids, "ingested", None),
    ],
)
def test_a_parquet_file_read_in_slices_ends_as_a_whole_read_does(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[Path], None],
    status: str,
    said: str | None,
) -> None:
    """Columns named twice, a damaged data page, NaN ids: the same outcome, reason and ids read whole
    and read a slice at a time (a repeated 'text' column was read as its last one; a damaged page was
    called a disk's read error; a NaN id was the id 'nan', so two of them failed the file)."""
    pytest.importorskip("pyarrow")
    outcomes = []
    for over in (1 << 40, 0):  # read whole, then in slices
        monkeypatch.setattr(slices, "SLICED_BYTES", over)
        monkeypatch.setattr(slices, "SLICE_RECORDS", 3)
        docs = tmp_path / f"docs{over}"
        docs.mkdir()
        make(docs / "s.parquet")
        found = ingest([docs], tmp_path / f"i{over}.sqlite").files[0]
        outcomes.append((str(found.status), found.reason, [d.split("#")[-1] for d in found.doc_ids]))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == status
    if said is not None:
        assert outcomes[0][1] is not None and outcomes[0][1].startswith(said)
    if make is _nan_ids:
        assert outcomes[0][2] == ["1.0", "2.0", "@3", "4.0", "@5"]
