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
    # what the LLM and the embedder see is the text, not the citations
    assert nodes[0].get_content(metadata_mode=MetadataMode.LLM) == nodes[0].get_content(
        metadata_mode=MetadataMode.NONE
    )


def test_a_rerun_with_one_document_edited_changes_that_document_alone(tmp_path: Path) -> None:
    index = tmp_path / "policies.sqlite"
    dedup = Deduplicator(index=index)
    check_incremental(lambda given: _out(dedup(_docs(given))), index)
