"""Haystack's Deduplicator: in-memory Documents (site-policy) in, deduplicated, cited Documents out."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "haystack", reason="needs the [haystack] extra: pip install 'chunkdedup[haystack]'"
)
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document, Pipeline

from chunkdedup.integrations.haystack import Deduplicator
from documents_corpus import Out, check_deduplicated, check_incremental, policy_documents


def _docs(given: list[tuple[str, str, dict[str, Any]]]) -> list[Document]:
    return [Document(content=text, meta={"file_path": name, **meta}) for name, text, meta in given]


def _out(docs: Any) -> list[Out]:
    return [(d.id, d.content, d.meta) for d in docs]


def test_documents_come_back_deduplicated_and_cited(tmp_path: Path) -> None:
    given = policy_documents()
    index = tmp_path / "policies.sqlite"
    pipe = Pipeline()
    pipe.add_component("dedup", Deduplicator(index=str(index)))
    out = pipe.run({"dedup": {"documents": _docs(given)}})["dedup"]["documents"]
    check_deduplicated(_out(out), given, index)
    again = Pipeline.loads(pipe.dumps(), allowed_modules=["chunkdedup.integrations.haystack"])
    assert again.run({"dedup": {"documents": _docs(given)}})["dedup"]["documents"] == out


def test_a_rerun_with_one_document_edited_changes_that_document_alone(tmp_path: Path) -> None:
    index = tmp_path / "policies.sqlite"
    dedup = Deduplicator(index=str(index))
    check_incremental(lambda given: _out(dedup.run(documents=_docs(given))["documents"]), index)
