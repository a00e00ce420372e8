"""A sync checks the store after every call: a store that lost a record or holds one the index does not
raises SyncError naming the store, what differs and the repair, and ``full=True`` repairs it. The
records are usable by prompt templates and store-side filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapter_corpus import ingest_small, small_corpus
from chunkdedup import Index
from chunkdedup.errors import SyncError

pytest.importorskip("langchain_core")


def test_a_store_that_lost_a_record_is_named_and_full_repairs_it(tmp_path: Path) -> None:
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.prompts import PromptTemplate, format_document
    from langchain_core.vectorstores import InMemoryVectorStore

    from chunkdedup.integrations.langchain import sync

    index = tmp_path / "i.sqlite"
    ingest_small(small_corpus(tmp_path), index)
    with Index.open(index) as ix:
        ids = sorted(r.id for r in ix.records())
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    first = sync(index, store)
    assert first.verified and first.store_records == len(ids)

    store.delete(ids=[ids[0]])
    store.add_documents([Document(page_content="not from the index", id="stray", metadata={})], ids=["stray"])
    with pytest.raises(SyncError) as err:
        sync(index, store)
    message = str(err.value)
    assert "InMemoryVectorStore does not mirror" in message and "full=True" in message
    assert f"1 missing (e.g. {ids[0]})" in message and "1 not in the index (e.g. stray)" in message

    unchecked = sync(index, store, verify=False)  # not listed: no check, and the report says so
    assert not unchecked.verified and unchecked.store_records is None
    repaired = sync(index, store, full=True)
    assert repaired.verified and repaired.upserts == len(ids) and repaired.deletes == 1
    assert (repaired.embedded, repaired.kept_vectors) == (1, len(ids) - 1)  # only the lost one embedded
    assert sorted(store.store) == ids
    # the records a prompt template formats, and a store-side filter reads
    doc = Document(page_content=store.store[ids[0]]["text"], metadata=store.store[ids[0]]["metadata"])
    line = format_document(doc, PromptTemplate.from_template("[{source} p.{page}] {page_content}"))
    assert line.startswith(f"[{doc.metadata['docs'][0]} p.1] ")
    bravo = store.similarity_search("refunds", k=10, filter=lambda d: "bravo.txt" in d.metadata["docs"])
    assert bravo and all("bravo.txt" in d.metadata["docs"] for d in bravo)


def test_a_store_that_drops_a_field_is_refused_not_silent(tmp_path: Path) -> None:
    """As Haystack's Chroma store did with the nested ``sources``: it keeps the document and warns."""
    pytest.importorskip("haystack")
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack.document_stores.types import DuplicatePolicy

    from chunkdedup.integrations.haystack import sync

    class ScalarsOnly(InMemoryDocumentStore):
        def write_documents(
            self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
        ) -> int:
            flat = [
                Document(
                    id=d.id,
                    content=d.content,
                    embedding=d.embedding,
                    meta={k: v for k, v in d.meta.items() if not isinstance(v, list | dict)},
                )
                for d in documents
            ]
            return super().write_documents(flat, policy=policy)

    index = tmp_path / "i.sqlite"
    ingest_small(small_corpus(tmp_path), index)
    state = tmp_path / "state.json"
    with pytest.raises(SyncError, match=r"ScalarsOnly dropped the metadata field\(s\) docs, sources"):
        sync(index, ScalarsOnly(), state=state)
    assert not state.exists() or '"applied_run": null' in state.read_text(encoding="utf-8")


def test_lancedb_widens_its_table_for_a_manifest_key_that_comes_later(tmp_path: Path) -> None:
    """The table's metadata struct is typed from its first rows; a later document with a key those
    rows lacked widens it (the rows rewritten with the key empty) instead of failing or dropping it."""
    pytest.importorskip("lancedb")
    pytest.importorskip("langchain_community")
    from langchain_community.vectorstores import LanceDB
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from chunkdedup.integrations.langchain import sync

    corpus = small_corpus(tmp_path)
    index = tmp_path / "i.sqlite"
    ingest_small(corpus, index)
    store = LanceDB(uri=str(tmp_path / "lance"), embedding=DeterministicFakeEmbedding(size=8), table_name="t")
    assert sync(index, store).verified
    (corpus / "delta.md").write_text(
        "---\ntitle: Delta policy\nowner: delta desk\n---\n\nDelta policy covers the delta product line.\n",
        encoding="utf-8",
    )
    ingest_small(corpus, index)
    report = sync(index, store)
    assert report.verified and report.upserts >= 1
    rows = store.get_table().to_arrow().to_pylist()
    with Index.open(index) as ix:
        want = {r.id: r for r in ix.records()}
    assert sorted(r["id"] for r in rows) == sorted(want)
    for r in rows:
        first = want[r["id"]].sources[0]
        assert r["text"] == want[r["id"]].text and r["metadata"]["source"] == first.doc
        assert {k: r["metadata"][k] for k in first.metadata} == dict(first.metadata)
    assert any(r["metadata"]["title"] == "Delta policy" for r in rows)
    assert any(r["metadata"]["title"] is None for r in rows)  # the earlier rows, widened


def test_a_store_that_cannot_be_read_has_each_record_deleted_before_it_is_added(tmp_path: Path) -> None:
    """A LlamaIndex store the sync does not know: its add keeps an old node of the same id beside the
    new one unless it is deleted first, and it cannot say what it holds, so every upsert deletes."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import BaseNode
    from llama_index.core.vector_stores.types import BasePydanticVectorStore, VectorStoreQuery

    from chunkdedup.integrations.llamaindex import sync

    class Appending(BasePydanticVectorStore):
        stores_text: bool = True
        nodes: list[BaseNode] = Field(default_factory=list)

        @property
        def client(self) -> None:
            return None

        def add(self, nodes: list[BaseNode], **kwargs: object) -> list[str]:
            self.nodes.extend(nodes)
            return [n.node_id for n in nodes]

        def delete(self, ref_doc_id: str, **kwargs: object) -> None:
            raise NotImplementedError

        def delete_nodes(self, node_ids: list[str] | None = None, **kwargs: object) -> None:
            self.nodes = [n for n in self.nodes if n.node_id not in set(node_ids or ())]

        def query(self, query: VectorStoreQuery, **kwargs: object) -> object:
            raise NotImplementedError

    corpus = small_corpus(tmp_path)
    index = tmp_path / "i.sqlite"
    ingest_small(corpus, index)
    store = Appending()
    sync(index, store, embed_model=MockEmbedding(embed_dim=8))
    (corpus / "alpha.txt").write_text("Alpha policy now covers nothing else.\n", encoding="utf-8")
    ingest_small(corpus, index)
    report = sync(index, store, embed_model=MockEmbedding(embed_dim=8), full=False)
    assert report.upserts >= 1 and not report.verified  # this store cannot be listed
    with Index.open(index) as ix:
        want = sorted(r.id for r in ix.records())
    assert sorted(n.node_id for n in store.nodes) == want  # one node per canonical, none twice
