"""Every record a framework gets from chunkdedup names its document the same way: top-level
``source`` and ``page``, so a prompt template cites it (the Retriever's hits as the Deduplicators' and
synced records), and a LlamaIndex LLM sees the name."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_langchain_prompt_template_formats_the_retrievers_hits(policy_index: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.prompts import PromptTemplate, format_document

    from chunkdedup.integrations.langchain import Retriever

    docs = Retriever(index=policy_index, k=5).invoke("how long is personal data kept")
    assert docs
    cite = PromptTemplate.from_template("[{source} p.{page}] {page_content}")
    for doc in docs:
        first = doc.metadata["sources"][0]
        assert format_document(doc, cite) == f"[{first['doc']} p.{first['page']}] {doc.page_content}"


def test_llamaindex_retriever_shows_the_llm_the_document_name(policy_index: Path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import MetadataMode

    from chunkdedup.integrations.llamaindex import Retriever

    nodes = Retriever(index=policy_index, k=3).retrieve("how long is personal data kept")
    assert nodes
    for n in nodes:
        text = n.node.get_content(metadata_mode=MetadataMode.NONE)
        llm = n.node.get_content(metadata_mode=MetadataMode.LLM)
        assert f"source: {n.node.metadata['source']}" in llm and llm.endswith(text)
        assert "sources" not in llm.replace(text, "") and "rank" not in llm.replace(text, "")
        assert n.node.get_content(metadata_mode=MetadataMode.EMBED) == text
