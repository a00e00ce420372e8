"""Each framework's own incremental pattern, as its docs teach it, through an edit, an addition and a
deletion, against a real local store: the index keeps every document the corpus holds (a call is an
upsert, not the whole corpus), and the store holds exactly the canonicals of the index, each once,
with its text and its owner (no stale node, none lost).

The corpus is site-policy's 185 files. The added document copies a policy under a name that sorts
first, so it takes over the ownership of every chunk it shares; the deleted one is that copy again,
so ownership moves back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import Index
from documents_corpus import PRIVACY, edited, policy_documents

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

Given = tuple[str, str, dict[str, Any]]
#: (canonical id, text, owner doc) of each item a store holds
Held = set[tuple[str, str, str]]
COPY_OF = "current/acceptable-use-policies/github-acceptable-use-policies.md"
COPY = "a-copy/acceptable-use.md"  # sorts before every other document


def _expected(index: Path, source: str) -> Held:
    """What the store must hold: every canonical the source's documents cite, with its owner (the
    first of them, by doc id, page and offset)."""
    with Index.open(index) as ix:
        mine = set(ix.store.documents.docs_of_file(f"memory:{source}"))
        out = set()
        for rec in ix.records():
            ours = [s for s in rec.sources if s.doc in mine]
            if ours:
                owner = min(ours, key=lambda s: (s.doc, s.page, s.start))
                out.add((rec.id, rec.text or "", owner.doc))
    return out


def _documents(index: Path) -> set[str]:
    with Index.open(index) as ix:
        return {d["doc"] for d in ix.documents()}


def _steps(apply: Callable[[list[Given], str], None], check: Callable[[set[str]], None]) -> None:
    """Initial load, an edit, an addition and a deletion, each followed by ``check`` of the corpus;
    ``apply(given, step)`` gets the changed documents (all of them at first, none for a deletion)."""
    corpus = {name: (name, text, meta) for name, text, meta in policy_documents()}
    apply(list(corpus.values()), "load")
    check(set(corpus))
    name, text, meta = corpus[PRIVACY]
    corpus[PRIVACY] = (name, edited(text), meta)
    apply([corpus[PRIVACY]], "edit")
    check(set(corpus))
    source = corpus[COPY_OF]
    corpus[COPY] = (COPY, source[1], {k: v for k, v in source[2].items() if k != "effective_date"})
    apply([corpus[COPY]], "add")
    check(set(corpus))
    del corpus[COPY]
    apply([], "delete")
    check(set(corpus))


def test_llamaindex_ingestion_pipeline_with_docstore_upserts_and_deletes(tmp_path: Path) -> None:
    pytest.importorskip("llama_index.vector_stores.chroma")
    import chromadb
    from llama_index.core import Document
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from chunkdedup.integrations.llamaindex import Deduplicator

    index = tmp_path / "policies.sqlite"
    client = chromadb.PersistentClient(
        path=str(tmp_path / "chroma"), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    collection = client.get_or_create_collection("policies")
    docstore, vectors = SimpleDocumentStore(), ChromaVectorStore(chroma_collection=collection)
    dedup = Deduplicator(index=index, docstore=docstore, vector_store=vectors)
    pipeline = IngestionPipeline(
        transformations=[dedup, MockEmbedding(embed_dim=8)],
        docstore=docstore,
        vector_store=vectors,
        docstore_strategy=DocstoreStrategy.UPSERTS_AND_DELETE,
    )
    corpus: dict[str, Document] = {}

    def apply(given: list[Given], step: str) -> None:
        for name, text, meta in given:  # ids as SimpleDirectoryReader(filename_as_id=True) gives them
            corpus[name] = Document(id_=name, text=text, metadata={"file_path": name, **meta})
        if step == "delete":
            del corpus[COPY]
        pipeline.run(documents=list(corpus.values()))

    def check(names: set[str]) -> None:
        assert _documents(index) == names
        got = collection.get(include=["documents", "metadatas"])
        held = [
            (i, t, m["source"])
            for i, t, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]
        assert len(held) == len(set(held))
        assert set(held) == _expected(index, "llamaindex")
        assert all(m["document_id"] == m["source"] for m in got["metadatas"])  # ref_doc_id: the owner

    _steps(apply, check)


def test_llamaindex_deduplicator_is_not_served_from_the_pipeline_cache(tmp_path: Path) -> None:
    """The pipeline caches a transformation's output by its input nodes: the Deduplicator's depends
    on the index too, so a call the cache has seen before still reaches the index."""
    from llama_index.core import Document
    from llama_index.core.ingestion import IngestionPipeline

    from chunkdedup.integrations.llamaindex import Deduplicator

    index = tmp_path / "policies.sqlite"
    dedup = Deduplicator(index=index)
    pipeline = IngestionPipeline(transformations=[dedup])
    first = Document(
        id_="a.md", text="Refunds are paid within thirty days of the request.", metadata={"file_path": "a.md"}
    )
    pipeline.run(documents=[first])
    dedup.delete(["a.md"])
    assert _documents(index) == set()
    nodes = pipeline.run(documents=[first])  # the same input as the first run
    assert _documents(index) == {"a.md"} and [n.metadata["source"] for n in nodes] == ["a.md"]


def test_langchain_index_with_a_record_manager_incremental(tmp_path: Path) -> None:
    pytest.importorskip("langchain_chroma")
    import chromadb
    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.indexing import InMemoryRecordManager
    from langchain_core.indexing import index as lc_index

    from chunkdedup.integrations.langchain import Deduplicator

    index = tmp_path / "policies.sqlite"
    client = chromadb.PersistentClient(
        path=str(tmp_path / "chroma"), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    store = Chroma(
        client=client, collection_name="policies", embedding_function=DeterministicFakeEmbedding(size=8)
    )
    records = InMemoryRecordManager(namespace="chroma/policies")
    records.create_schema()
    dedup = Deduplicator(index)

    def apply(given: list[Given], step: str) -> None:
        docs = [Document(page_content=t, metadata={"source": n, **m}) for n, t, m in given]
        update = dedup.update(docs, remove=[COPY] if step == "delete" else [])
        lc_index(update.documents, records, store, cleanup="incremental", source_id_key="source")
        keys = records.list_keys(group_ids=list(update.emptied))
        if keys:
            store.delete(keys)
            records.delete_keys(keys)

    def check(names: set[str]) -> None:
        assert _documents(index) == names
        got = store.get(include=["documents", "metadatas"])
        held = [
            (m["chunk_id"], t, m["source"]) for t, m in zip(got["documents"], got["metadatas"], strict=True)
        ]
        assert len(held) == len(set(held)), "a canonical is held twice"
        assert set(held) == _expected(index, "langchain")

    _steps(apply, check)


def test_langchain_index_full_cleanup_with_a_full_deduplicator(tmp_path: Path) -> None:
    """The other documented pattern: the whole corpus each time, ``cleanup="full"``."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.indexing import InMemoryRecordManager
    from langchain_core.indexing import index as lc_index
    from langchain_core.vectorstores import InMemoryVectorStore

    from chunkdedup.integrations.langchain import Deduplicator

    index = tmp_path / "policies.sqlite"
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    records = InMemoryRecordManager(namespace="memory/policies")
    records.create_schema()
    dedup = Deduplicator(index, full=True)
    corpus: dict[str, Document] = {}

    def apply(given: list[Given], step: str) -> None:
        for n, t, m in given:
            corpus[n] = Document(page_content=t, metadata={"source": n, **m})
        if step == "delete":
            del corpus[COPY]
        lc_index(
            dedup.transform_documents(list(corpus.values())),
            records,
            store,
            cleanup="full",
            source_id_key="source",
        )

    def check(names: set[str]) -> None:
        assert _documents(index) == names
        held = [
            (d.metadata["chunk_id"], d.page_content, d.metadata["source"])
            for d in store.store.values()
            for d in [_doc(d)]
        ]
        assert len(held) == len(set(held))
        assert set(held) == _expected(index, "langchain")

    _steps(apply, check)


def _doc(row: dict[str, Any]) -> Any:
    from langchain_core.documents import Document

    return Document(page_content=row["text"], metadata=row["metadata"])


def test_haystack_writer_overwrites_and_deletes_what_the_deduplicator_says(tmp_path: Path) -> None:
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack.document_stores.types import DuplicatePolicy

    from chunkdedup.integrations.haystack import Deduplicator

    index = tmp_path / "policies.sqlite"
    store = InMemoryDocumentStore()
    dedup = Deduplicator(index=str(index))

    def apply(given: list[Given], step: str) -> None:
        docs = [Document(content=t, meta={"file_path": n, **m}) for n, t, m in given]
        out = dedup.run(documents=docs, remove=[COPY] if step == "delete" else None)
        store.write_documents(out["documents"], policy=DuplicatePolicy.OVERWRITE)
        store.delete_documents(out["deleted"])

    def check(names: set[str]) -> None:
        assert _documents(index) == names
        held = [(d.id, d.content or "", d.meta["source"]) for d in store.filter_documents()]
        assert set(held) == _expected(index, "haystack")

    _steps(apply, check)
