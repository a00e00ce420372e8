"""Typed export records: the JSON ``export`` writes is each record's ``to_json()``."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from chunkdedup import ChunkConfig, Citation, Config, ExportRecord, Index, ingest
from chunkdedup.export import records, write_export


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "c"
    corpus.mkdir()
    shared = "Refunds are paid within thirty days of the request, by the original means of payment."
    (corpus / "a.txt").write_text(f"Alpha intro paragraph here.\n\n{shared}\n", encoding="utf-8")
    (corpus / "b.txt").write_text(f"Bravo intro paragraph here.\n\n{shared}\n", encoding="utf-8")
    return corpus


def test_records_are_typed_and_their_json_is_the_export_line(tmp_path: Path) -> None:
    index = tmp_path / "i.sqlite"
    run = ingest(
        [_corpus(tmp_path)], index, config=Config(chunk=ChunkConfig(target_words=8, max_words=20))
    ).run_id
    with Index.open(index) as ix:
        typed = list(ix.records())
        assert [r.to_json() for r in typed] == list(ix.export())
        shared = next(r for r in typed if r.text and r.text.startswith("Refunds"))
        assert [s.doc for s in shared.sources] == ["a.txt", "b.txt"]
        assert all(isinstance(s, Citation) and s.relation == "exact" for s in shared.sources)
        with pytest.raises(dataclasses.FrozenInstanceError):
            shared.id = "x"  # type: ignore[misc]
        buf = io.StringIO()
        write_export(ix, buf, "jsonl", None)
        lines = [json.loads(line) for line in buf.getvalue().splitlines()]
        assert lines == [r.to_json() for r in typed]
        assert all("op" not in line for line in lines)
        assert {r.op for r in records(ix, run - 1)} == {"upsert"}


def test_a_delete_record_carries_only_its_id() -> None:
    rec = ExportRecord.delete("abc")
    assert rec.to_json() == {"op": "delete", "id": "abc"}
    up = ExportRecord("abc", "text", (Citation("d", 1, 0, 4, "exact", 1.0, {"k": "v"}),), "upsert")
    assert up.to_json() == {
        "op": "upsert",
        "id": "abc",
        "text": "text",
        "sources": [
            {
                "doc": "d",
                "page": 1,
                "start": 0,
                "end": 4,
                "relation": "exact",
                "similarity": 1.0,
                "metadata": {"k": "v"},
            }
        ],
    }
