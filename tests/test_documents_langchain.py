"""LangChain's Deduplicator: in-memory Documents (site-policy) in, deduplicated, cited Documents out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chunkdedup.errors import InputError

pytest.importorskip(
    "langchain_core", reason="needs the [langchain] extra: pip install 'chunkdedup[langchain]'"
)

from langchain_core.documents import Document

from chunkdedup.integrations.langchain import Deduplicator
from documents_corpus import Out, check_deduplicated, check_incremental, policy_documents

FIRST = "First page: the terms of sale for every customer."
SECOND = "Second page: refunds within thirty days of purchase."


def _docs(given: list[tuple[str, str, dict[str, Any]]]) -> list[Document]:
    return [Document(page_content=text, metadata={"source": name, **meta}) for name, text, meta in given]


def _out(docs: Any) -> list[Out]:
    return [(d.id, d.page_content, d.metadata) for d in docs]


def test_documents_come_back_deduplicated_and_cited(tmp_path: Path) -> None:
    given = policy_documents()
    index = tmp_path / "policies.sqlite"
    out = Deduplicator(index).transform_documents(_docs(given))
    check_deduplicated(_out(out), given, index)
    assert all(d.id == d.metadata["chunk_id"] for d in out)


def test_a_rerun_with_one_document_edited_changes_that_document_alone(tmp_path: Path) -> None:
    index = tmp_path / "policies.sqlite"
    dedup = Deduplicator(index)
    check_incremental(lambda given: _out(dedup.transform_documents(_docs(given))), index)


def test_pages_of_one_source_are_one_document_and_ids_fall_back_on_the_document_id(tmp_path: Path) -> None:
    index = tmp_path / "pages.sqlite"
    pages = [
        Document(page_content=SECOND, metadata={"source": "a.pdf", "page": 1}),
        Document(page_content=FIRST, metadata={"source": "a.pdf", "page": 0}),
        Document(page_content=FIRST, id="b-note"),
    ]
    out = Deduplicator(index).transform_documents(pages)
    assert [d.metadata["page"] for d in out] == [1, 2]
    assert json.loads(out[0].metadata["docs"]) == ["a.pdf", "b-note"]
    with pytest.raises(InputError, match="Document 0 has no 'source' metadata and no id"):
        Deduplicator(index).transform_documents([Document(page_content="no id at all")])
