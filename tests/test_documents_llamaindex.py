"""LlamaIndex's Deduplicator: in-memory Documents (site-policy) in, deduplicated, cited nodes out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core", reason="needs the [llamaindex] extra: pip install 'chunkdedup[llamaindex]'"
)

from llama_index.core import Document
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import MetadataMode

from chunkdedup.integrations.llamaindex import Deduplicator
from documents_corpus import Out, check_deduplicated, check_incremental, policy_documents


def _docs(given: list[tuple[str, str, dict[str, Any]]]) -> list[Document]:
    return [Document(text=text, metadata={"file_path": name, **meta}) for name, text, meta in given]


def _out(nodes: Any) -> list[Out]:
    return [(n.node_id, n.get_content(metadata_mode=MetadataMode.NONE), n.metadata) for n in nodes]


def test_documents_come_back_deduplicated_and_cited(tmp_path: Path) -> None:
    given = policy_documents()
    index = tmp_path / "policies.sqlite"
    nodes = IngestionPipeline(transformations=[Deduplicator(index=index)]).run(documents=_docs(given))
    check_deduplicated(_out(nodes), given, index)
    # the embedder sees the text alone; the LLM the owner's name and page to cite, not the sources
    first = nodes[0]
    text = first.get_content(metadata_mode=MetadataMode.NONE)
    assert first.get_content(metadata_mode=MetadataMode.EMBED) == text
    llm = first.get_content(metadata_mode=MetadataMode.LLM)
    assert f"source: {first.metadata['source']}" in llm and f"page: {first.metadata['page']}" in llm
    assert llm.endswith(text) and "sources" not in llm.replace(text, "")


def test_a_rerun_with_one_document_edited_changes_that_document_alone(tmp_path: Path) -> None:
    index = tmp_path / "policies.sqlite"
    dedup = Deduplicator(index=index)
    check_incremental(lambda given: _out(dedup(_docs(given))), index)
