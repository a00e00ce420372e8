"""The public API is what ``__all__`` says, and every name in it exists."""

from __future__ import annotations

from pathlib import Path

import chunkdedup


def test_all_names_exist_and_are_sorted() -> None:
    assert chunkdedup.__all__ == sorted(chunkdedup.__all__)
    for name in chunkdedup.__all__:
        assert hasattr(chunkdedup, name), name


def test_public_members_are_all_exported() -> None:
    public = {
        name
        for name, value in vars(chunkdedup).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("chunkdedup")
    }
    assert public <= set(chunkdedup.__all__), public - set(chunkdedup.__all__)


def test_in_memory_documents_are_ingested_through_the_public_names(tmp_path: Path) -> None:
    """``ingest_records`` and ``InputRecord`` are public: the in-memory twin of ``ingest``."""
    from chunkdedup.ingest_memory import ingest_records
    from chunkdedup.parse.memory import InputRecord

    assert {"InputRecord", "ingest_records"} <= set(chunkdedup.__all__)
    assert chunkdedup.ingest_records is ingest_records and chunkdedup.InputRecord is InputRecord
    docs = [chunkdedup.InputRecord.of("refunds.md", "Refunds are paid within thirty days.", {"family": "r"})]
    report = chunkdedup.ingest_records(docs, tmp_path / "i.sqlite", source="crm")
    assert report.files[0].doc_ids == ("refunds.md",)
    with chunkdedup.Index.open(tmp_path / "i.sqlite") as ix:
        assert [d["path"] for d in ix.documents()] == ["memory:crm"]
