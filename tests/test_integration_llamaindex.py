"""The LlamaIndex adapter against the real llama-index-core: retriever, safety net as a node
postprocessor, and sync to its SimpleVectorStore (with a SimpleDocumentStore for the text)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "llama_index.core", reason="needs the [llamaindex] extra: pip install 'chunkdedup[llamaindex]'"
)

from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from adapter_corpus import View, interrupted, lifecycle
from chunkdedup import Index, search
from chunkdedup.errors import InputError
from chunkdedup.integrations.llamaindex import Retriever, SafetyNet, sync

QUESTION = "how long is personal information retained"


def test_nodes_are_the_hits_of_search_with_their_citations(policy_index: Path) -> None:
    nodes = Retriever(index=policy_index, k=4).retrieve(QUESTION)
    with Index.open(policy_index) as ix:
        hits = search(ix, QUESTION, k=4).hits
    assert len(nodes) == 4
    assert [n.node.node_id for n in nodes] == [h.id for h in hits]
    assert [n.score for n in nodes] == [h.score for h in hits]
    for n, h in zip(nodes, hits, strict=True):
        assert n.node.metadata["sources"] == [c.to_json() for c in h.citations]
        # the citations stay out of the LLM's view of the node; the document it cites is in it
        first = h.citations[0]
        assert n.node.get_content(metadata_mode=MetadataMode.LLM) == (
            f"source: {first.doc}\npage: {first.page}\n\n{h.text}"
        )
        assert n.node.get_content(metadata_mode=MetadataMode.EMBED) == h.text
    assert [n.node.node_id for n in asyncio.run(Retriever(index=policy_index, k=4).aretrieve(QUESTION))] == [
        h.id for h in hits
    ]


def test_metadata_filters_map_to_where(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        departments = sorted({str(d["metadata"]["department"]) for d in ix.documents() if d["metadata"]})
        retriever = Retriever(
            index=ix,
            k=5,
            versions="all",
            filters=MetadataFilters(
                filters=[
                    MetadataFilter(key="department", value=departments[0]),
                    MetadataFilter(key="effective_date", value="2023-01-01", operator=FilterOperator.GTE),
                ]
            ),
        )
        nodes = retriever.retrieve("terms")
        assert nodes
        for n in nodes:
            for s in n.node.metadata["sources"]:
                assert s["metadata"]["department"] == departments[0]
                assert s["metadata"]["effective_date"] >= "2023-01-01"
        either = MetadataFilters(
            filters=[MetadataFilter(key="department", value=d) for d in departments[:2]],
            condition=FilterCondition.OR,
        )
        got = Retriever(index=ix, k=5, filters=either).retrieve("terms")
        assert {s["metadata"]["department"] for n in got for s in n.node.metadata["sources"]} <= set(
            departments[:2]
        )
        # filters AND with where: disjoint departments give nothing
        none = Retriever(
            index=ix,
            k=5,
            where={"department": departments[0]},
            filters=MetadataFilters(filters=[MetadataFilter(key="department", value=departments[1])]),
        )
        assert none.retrieve("terms") == []
    with pytest.raises(InputError, match="no --where form"):
        Retriever(
            index=policy_index,
            filters=MetadataFilters(
                filters=[MetadataFilter(key="department", value="x", operator=FilterOperator.NE)]
            ),
        )


def _nws(
    node_id: str, text: str, score: float, doc: str, embedding: list[float] | None = None
) -> NodeWithScore:
    return NodeWithScore(
        node=TextNode(id_=node_id, text=text, metadata={"file_name": doc}, embedding=embedding), score=score
    )


def test_safety_net_dedups_and_caps_any_nodes() -> None:
    nodes = [
        _nws("a", "Refunds are paid within 30 days.", 3.0, "refunds.md"),
        _nws("b", "REFUNDS are paid within 30 days.", 2.5, "faq.md"),
        _nws("c", "Shipping takes five working days.", 2.0, "refunds.md"),
        _nws("d", "Returns need the original receipt.", 1.0, "refunds.md"),
    ]
    kept = SafetyNet(cap_per_doc=2).postprocess_nodes(nodes, query_str="refunds")
    assert sorted(n.node.node_id for n in kept) == ["a", "c"]
    assert kept[0].score == 3.0  # scores are left as they were


def test_safety_net_mmr_uses_embeddings_when_every_node_has_one() -> None:
    text_a = "Account logs are kept for ninety days after the account is closed by its owner"
    nodes = [
        _nws("a", text_a + ".", 1.0, "x", [1.0, 0.0]),
        _nws("b", "Card numbers are never stored by us.", 0.9, "y", [1.0, 0.01]),
        _nws("c", text_a + " today.", 0.8, "z", [0.0, 1.0]),
    ]
    by_vectors = SafetyNet(top_n=2).postprocess_nodes(nodes, query_str="q")
    assert [n.node.node_id for n in by_vectors] == ["a", "c"]  # b points the way a does
    no_vectors = [_nws(n.node.node_id, n.node.get_content(), n.score or 0.0, "d") for n in nodes]
    by_text = SafetyNet(top_n=2, cap_per_doc=5).postprocess_nodes(no_vectors, query_str="q")
    assert [n.node.node_id for n in by_text] == ["a", "b"]  # c repeats a's words


def _view(store: SimpleVectorStore, docstore: SimpleDocumentStore) -> View:
    out: View = {}
    for cid in store.data.embedding_dict:
        doc = docstore.get_document(cid)
        assert doc is not None, cid
        out[cid] = (
            doc.get_content(metadata_mode=MetadataMode.NONE),
            store.data.metadata_dict[cid]["sources"],
        )
    assert set(docstore.docs) == set(out)
    return out


def test_sync_follows_ingest_edit_and_remove(tmp_path: Path) -> None:
    store, docstore = SimpleVectorStore(), SimpleDocumentStore()
    model = MockEmbedding(embed_dim=8)
    lifecycle(
        tmp_path,
        lambda index: sync(index, store, embed_model=model, docstore=docstore),
        lambda: _view(store, docstore),
    )


class FlakyStore(SimpleVectorStore):
    """Writes its first batch, then writes one node of the next and loses the connection."""

    def add(self, nodes: Any, **kwargs: Any) -> list[str]:
        calls = self.__dict__.setdefault("_calls", [0])
        calls[0] += 1
        if self.__dict__.get("_armed") and calls[0] == 2:
            super().add(nodes[:1])
            raise ConnectionError("vector store went away mid-batch")
        return super().add(nodes, **kwargs)


def test_an_interrupted_sync_resumes_and_never_marks_an_unwritten_record(tmp_path: Path) -> None:
    store, docstore = FlakyStore(), SimpleDocumentStore()
    model = MockEmbedding(embed_dim=8)

    def fail(on: bool) -> None:
        store.__dict__["_armed"] = on

    def view() -> View:
        return {cid: (text, src) for cid, (text, src) in _view_partial(store, docstore).items()}

    interrupted(
        tmp_path,
        lambda index, **kw: sync(index, store, embed_model=model, docstore=docstore, **kw),
        view,
        fail,
    )


def _view_partial(store: SimpleVectorStore, docstore: SimpleDocumentStore) -> View:
    """The vector store's view, text from the docstore where it got there (a failed batch may not)."""
    out: View = {}
    for cid in store.data.embedding_dict:
        doc = docstore.get_document(cid, raise_error=False)
        out[cid] = (
            doc.get_content(metadata_mode=MetadataMode.NONE) if doc else "",
            store.data.metadata_dict[cid]["sources"],
        )
    return out


def test_sync_to_a_store_without_text_and_no_docstore_is_refused(policy_index: Path, tmp_path: Path) -> None:
    """The audit's case: SimpleVectorStore keeps no text; without a docstore the 1,005 chunks' text was
    lost and the state file marked them synced, so a second sync with a docstore upserted nothing."""
    from chunkdedup.errors import ConfigError

    state = tmp_path / "state.json"
    store = SimpleVectorStore()
    with pytest.raises(ConfigError, match="SimpleVectorStore keeps no text: pass docstore="):
        sync(policy_index, store, embed_model=MockEmbedding(embed_dim=8), state=state)
    assert not state.exists() and not store.data.embedding_dict  # nothing written, nothing recorded
    docstore = SimpleDocumentStore()
    report = sync(policy_index, store, embed_model=MockEmbedding(embed_dim=8), docstore=docstore, state=state)
    assert report.upserts == len(store.data.embedding_dict) == len(docstore.docs) > 0
