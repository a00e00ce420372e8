"""The index's recorded settings: a stage's stamp is read beside this run's settings, written only in
the transaction that finishes the stage, and a killed stage leaves the old one; the embedder is one
typed record."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from chunkdedup import Config, ingest
from chunkdedup.config import RetrievalConfig
from chunkdedup.store import Store
from chunkdedup.store.document_tables import DocumentTables
from chunkdedup.store.settings import Stamp, StoredEmbedder


def test_a_stamp_reads_the_stored_settings_beside_the_wanted(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.sqlite", create=True) as store, store.writer():
        stamp = store.settings.stamp("context_config", "v1")
        assert stamp == Stamp("context_config", None, "v1") and stamp.changed
        with store.transaction():
            store.settings.done(stamp)
        again = store.settings.stamp("context_config", "v1")
        assert again.stored == "v1" and not again.changed
        assert store.settings.stamp("context_config", "v2").changed
        with store.transaction():
            store.settings.forget("context_config")
        assert store.settings.stamp("context_config", "v1").stored is None


def test_a_stamp_is_written_with_the_stages_last_write_or_not_at_all(tmp_path: Path) -> None:
    """A transaction that fails after ``done`` leaves the old stamp: the next run redoes the stage."""
    with Store.open(tmp_path / "i.sqlite", create=True) as store, store.writer():
        with store.transaction():
            store.settings.done(store.settings.stamp("semantic_edges_for", "0.9"))
        with pytest.raises(RuntimeError), store.transaction():
            store.settings.done(store.settings.stamp("semantic_edges_for", "0.95"))
            raise RuntimeError("killed")
        assert store.settings.stamp("semantic_edges_for", "0.95").stored == "0.9"


def test_the_embedder_is_one_typed_record(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.sqlite", create=True) as store, store.writer():
        assert store.settings.embedder() is None
        with store.transaction():
            store.settings.set_embedder(StoredEmbedder("fake:8", 8))
        assert store.settings.embedder() == StoredEmbedder("fake:8", 8)


def test_the_contexts_are_written_again_when_their_settings_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The redo rule end to end: an unchanged run writes no context, a change of the retrieval
    settings writes every document's again and records the new stamp."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for n in range(3):
        text = f"# Policy {n}\n\nThe rule number {n} applies to every member of staff.\n"
        (folder / f"d{n}.md").write_text(text, encoding="utf-8")
    index = tmp_path / "i.sqlite"
    ingest([folder], index)
    with Store.open(index) as store:
        first = store.settings.stamp("context_config", "").stored
    assert first is not None
    written: list[str] = []
    put = DocumentTables.put_contexts

    def counted(self: DocumentTables, rows: Sequence[tuple[str, str]]) -> None:
        written.extend(doc_id for doc_id, _ in rows)
        put(self, rows)

    monkeypatch.setattr(DocumentTables, "put_contexts", counted)
    ingest([folder], index)
    assert written == []
    ingest([folder], index, config=Config(retrieval=RetrievalConfig(context=("title",))))
    assert len(written) == len(set(written)) == 3  # every document's, once
    with Store.open(index) as store:
        assert store.settings.stamp("context_config", "").stored not in (None, first)
