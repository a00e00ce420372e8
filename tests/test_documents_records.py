"""``ingest_records``: in-memory documents through the one ingest sequence, as one source."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkdedup import ConfigError, FileStatus, Index, IngestOptions, InputError, ingest
from chunkdedup.ingestion.memory import InputRecord, ingest_records
from documents_corpus import policy_documents


def _records() -> list[InputRecord]:
    return [InputRecord.of(name, text, meta) for name, text, meta in policy_documents()]


def test_a_source_equals_its_last_call_and_unchanged_calls_change_nothing(tmp_path: Path) -> None:
    index = tmp_path / "records.sqlite"
    records = _records()
    first = ingest_records(records, index, source="crm")
    assert first.files[0].status == FileStatus.INGESTED and len(first.files[0].doc_ids) == len(records)
    with Index.open(index) as ix:
        docs = {d["doc"]: d for d in ix.documents()}
    assert set(docs) == {r.id for r in records}
    some = records[0]
    assert docs[some.id]["metadata"]["family"] == some.metadata["family"]
    assert docs[some.id]["path"] == "memory:crm"
    assert ingest_records(records, index, source="crm").files[0].status == FileStatus.UNCHANGED
    kept = ingest_records(records[1:], index, source="crm")  # a document the source no longer gives
    assert kept.totals["documents_chunked"] == 0
    with Index.open(index) as ix:
        assert {d["doc"] for d in ix.documents()} == {r.id for r in records[1:]}


def test_ids_are_checked_against_the_call_and_the_index(tmp_path: Path) -> None:
    index = tmp_path / "records.sqlite"
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "a.txt").write_text("Refunds are paid within thirty days.\n", encoding="utf-8")
    ingest([tmp_path / "files"], index)
    taken = ingest_records([InputRecord.of("a.txt", "Another text entirely.")], index, source="crm")
    assert taken.files[0].status == FileStatus.FAILED and "already taken" in (taken.files[0].reason or "")
    with pytest.raises(InputError, match="given twice"):
        ingest_records([InputRecord.of("b", "x y"), InputRecord.of("b", "z")], index)
    with pytest.raises(InputError, match="effective_date"):
        ingest_records([InputRecord.of("c", "x y", {"effective_date": "last spring"})], index)
    with pytest.raises(InputError, match="without '/'"):
        ingest_records([], index, source="a/b")
    with pytest.raises(ConfigError, match="no manifest and no prune"):
        ingest_records([], index, options=IngestOptions(prune=True))


def test_a_file_ingest_with_prune_leaves_the_documents_given_in_memory(tmp_path: Path) -> None:
    index = tmp_path / "mixed.sqlite"
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "a.txt").write_text("Refunds are paid within thirty days.\n", encoding="utf-8")
    ingest_records([InputRecord.of("crm/b", "Shipping takes five business days.")], index, source="crm")
    ingest([tmp_path / "files"], index, prune=True)
    with Index.open(index) as ix:
        assert {d["doc"] for d in ix.documents()} == {"a.txt", "crm/b"}
