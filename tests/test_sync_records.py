"""Store records: the top-level fields, the shape per store, and ids stable across runs and releases."""

from __future__ import annotations

import json
import uuid

import pytest

from chunkdedup.errors import SyncError
from chunkdedup.integrations._records import StoreForm, StoreRecord, stored_docs, stored_sources
from chunkdedup.query.records import Citation, ExportRecord

A = Citation("a.md", 2, 10, 40, "exact", 1.0, {"family": "f", "source": "manifest's own", "year": 2024})
B = Citation("b.md", 1, 0, 30, "near", 0.91, {"family": "g"}, text="other words", differs=("+other",))
C = Citation("a.md", 3, 0, 30, "exact", 1.0, {"family": "f"})
REC = ExportRecord("c005cd6f0ba26fe32f35b96a7", "the text", (A, B, C), "upsert")


def test_top_level_fields_come_from_the_first_source_and_fixed_keys_win() -> None:
    rec = StoreRecord.of(REC, StoreForm("s"))
    meta = rec.metadata("nested")
    assert (meta["source"], meta["page"], meta["chunk_id"]) == ("a.md", 2, REC.id)
    assert meta["docs"] == ["a.md", "b.md"]  # each document once, in source order
    assert (meta["family"], meta["year"]) == ("f", 2024)
    assert meta["sources"] == [s.to_json() for s in REC.sources]
    assert meta["sources"][0]["metadata"]["source"] == "manifest's own"  # kept where it came from


@pytest.mark.parametrize("shape", ["nested", "lists", "scalars"])
def test_each_shape_holds_every_field_in_a_form_the_store_takes(shape: str) -> None:
    meta = StoreRecord.of(REC, StoreForm("s")).metadata(shape)  # type: ignore[arg-type]
    scalar = (str, int, float, bool, type(None))
    for key, value in meta.items():
        if shape == "scalars":
            assert isinstance(value, scalar), key
        elif shape == "lists":
            assert isinstance(value, scalar) or all(isinstance(v, str) for v in value), key
    assert stored_sources(meta) == [s.to_json() for s in REC.sources]
    assert stored_docs(meta) == ("a.md", "b.md")
    if shape != "nested":
        assert json.loads(meta["sources"]) == [s.to_json() for s in REC.sources]


def test_ids_are_the_canonical_or_its_uuid5_the_same_in_every_release() -> None:
    assert StoreForm("s").store_id(REC.id) == REC.id
    qdrant = StoreForm("q", ids="uuid").store_id(REC.id)
    assert uuid.UUID(qdrant).version == 5
    # a fixed value: a changed namespace would give every synced Qdrant store new ids
    assert qdrant == "29088d96-e600-59b0-895d-12aa05a8f5e6"
    assert StoreRecord.of(REC, StoreForm("q", ids="uuid")).id == qdrant


def test_docs_from_a_store_that_holds_plain_text() -> None:
    assert stored_docs({"docs": "a.md"}) == ("a.md",)
    assert stored_docs({"docs": "123"}) == ("123",)
    assert stored_docs({}) == ()


def test_a_record_without_sources_is_refused() -> None:
    with pytest.raises(SyncError, match="has no sources"):
        StoreRecord.of(ExportRecord("c1", "t", (), "upsert"), StoreForm("s"))
