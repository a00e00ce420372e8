"""Hostile-input battery, fifth round: numbers JSON cannot hold in a record's fields, and Parquet files
whose columns or pages a sliced read must refuse as a whole read does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from chunkdedup import Index, ingest
from chunkdedup.cli import main


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
    for where in ("score=2.0", "score=7", "nothing=1"):  # a hit, none (the hint reads every field), no key
        done = runner.invoke(main, ["query", "alpha", "--index", str(index), "--where", where])
        assert "damaged" not in done.output and done.exit_code in (0, 2), done.output
    with Index.open(index) as ix:
        hits = ix.query("alpha", k=5, where=["score=2.0"])
    assert [c.doc.split("#")[-1] for h in hits for c in h.citations] == ["b"]
