"""The LangChain adapter against the real langchain-core: retriever (with LangChain's standard
retriever tests), safety net as a document compressor, and sync to its InMemoryVectorStore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langchain_core", reason="needs the [langchain] extra: pip install 'chunkdedup[langchain]'"
)

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests

from adapter_corpus import View, interrupted, lifecycle
from chunkdedup import Index, search
from chunkdedup.errors import InputError
from chunkdedup.integrations.langchain import Retriever, SafetyNet, sync

QUESTION = "how long is personal information retained"


class TestStandardRetriever(RetrieversIntegrationTests):
    """LangChain's own retriever tests (k in the constructor and in invoke, ainvoke)."""

    index_path: Path

    @pytest.fixture(autouse=True)
    def _index(self, policy_index: Path) -> None:
        type(self).index_path = policy_index

    @property
    def retriever_constructor(self) -> type[Retriever]:
        return Retriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"index": self.index_path}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


def test_documents_are_the_hits_of_search_with_their_citations(policy_index: Path) -> None:
    docs = Retriever(index=policy_index, k=5).invoke(QUESTION)
    with Index.open(policy_index) as ix:
        hits = search(ix, QUESTION, k=5).hits
    assert [d.id for d in docs] == [h.id for h in hits]
    assert [d.metadata["score"] for d in docs] == [h.score for h in hits]
    assert [d.page_content for d in docs] == [h.text for h in hits]
    for d, h in zip(docs, hits, strict=True):
        assert d.metadata["sources"] == [c.to_json() for c in h.citations]
        assert d.metadata["rank"] == h.rank
        assert set(d.metadata["sources"][0]) == {
            "doc",
            "page",
            "start",
            "end",
            "relation",
            "similarity",
            "metadata",
        }


def test_an_open_index_works_in_invoke_and_ainvoke(policy_index: Path) -> None:
    import asyncio

    with Index.open(policy_index) as ix:
        retriever = Retriever(index=ix, k=2)
        assert len(retriever.invoke(QUESTION)) == 2
        assert [d.id for d in asyncio.run(retriever.ainvoke(QUESTION))] == [
            d.id for d in retriever.invoke(QUESTION)
        ]


def test_filters_map_to_where_and_never_widen_the_constructor_filter(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        departments = sorted({str(d["metadata"]["department"]) for d in ix.documents() if d["metadata"]})
    privacy = next(d for d in departments if "privacy" in d)
    other = next(d for d in departments if d != privacy)
    by_filter = Retriever(index=policy_index, k=5).invoke(QUESTION, filter={"department": privacy})
    by_where = Retriever(index=policy_index, k=5, where={"department": privacy}).invoke(QUESTION)
    assert by_filter and [d.id for d in by_filter] == [d.id for d in by_where]
    assert all(s["metadata"]["department"] == privacy for d in by_filter for s in d.metadata["sources"])
    # the call's filter ANDs with the constructor's: another department gives nothing, not more
    assert (
        Retriever(index=policy_index, k=5, where={"department": privacy}).invoke(
            QUESTION, filter={"department": other}
        )
        == []
    )
    both = Retriever(index=policy_index, k=5).invoke(
        QUESTION, filter={"department": {"$in": [privacy, other]}}
    )
    assert {s["metadata"]["department"] for d in both for s in d.metadata["sources"]} <= {privacy, other}
    dated = Retriever(index=policy_index, k=5, versions="all").invoke(
        QUESTION,
        filter={
            "$and": [{"effective_date": {"$gte": "2024-01-01"}}, {"effective_date": {"$lte": "2024-12-31"}}]
        },
    )
    assert dated and all(
        "2024-01-01" <= s["metadata"]["effective_date"] <= "2024-12-31"
        for d in dated
        for s in d.metadata["sources"]
    )
    with pytest.raises(InputError, match="no --where form"):
        Retriever(index=policy_index).invoke(QUESTION, filter={"department": {"$ne": privacy}})
    with pytest.raises(InputError, match="OR across different keys"):
        Retriever(index=policy_index).invoke(
            QUESTION, filter={"$or": [{"department": privacy}, {"family": "x"}]}
        )


def test_safety_net_dedups_caps_and_diversifies_any_documents() -> None:
    docs = [
        Document("Refunds are paid within 30 days.", id="a", metadata={"source": "refunds.md"}),
        Document("refunds are paid  within 30 days. ", id="b", metadata={"source": "faq.md"}),
        Document("Shipping takes five working days.", id="c", metadata={"source": "refunds.md"}),
        Document("Returns need the original receipt.", id="d", metadata={"source": "refunds.md"}),
        Document("Gift cards never expire here.", id="e", metadata={"source": "cards.md"}),
    ]
    kept = SafetyNet(cap_per_doc=2).compress_documents(docs, "refunds")
    ids = [d.id for d in kept]
    assert "b" not in ids  # same text as a, which ranks higher
    assert "d" not in ids  # refunds.md already has a and c
    assert set(ids) == {"a", "c", "e"} and ids[0] == "a"
    assert [d.id for d in SafetyNet(k=2, cap_per_doc=5).compress_documents(docs, "q")] == ["a", "c"]
    by_key = SafetyNet(cap_per_doc=1, doc_key="team").compress_documents(
        [
            Document("one text", id="x", metadata={"team": "t"}),
            Document("two text", id="y", metadata={"team": "t"}),
        ],
        "q",
    )
    assert [d.id for d in by_key] == ["x"]


def test_safety_net_mmr_prefers_a_different_passage_over_a_near_copy() -> None:
    base = "The retention period for account logs is ninety days after the account is closed by the user"
    docs = [
        Document(base + ".", id="a"),
        Document(base + " today.", id="near"),
        Document(
            "Payment card data is never stored on our servers or shared with partners at all.", id="other"
        ),
    ]
    assert [d.id for d in SafetyNet(k=2, mmr_lambda=0.5).compress_documents(docs, "q")] == ["a", "other"]
    assert [d.id for d in SafetyNet(k=2, mmr_lambda=1.0).compress_documents(docs, "q")] == ["a", "near"]


def test_safety_net_caps_by_the_sources_of_chunkdedup_documents(policy_index: Path) -> None:
    docs = Retriever(index=policy_index, k=10, safety_net=False).invoke(QUESTION)
    kept = SafetyNet(cap_per_doc=1).compress_documents(docs, QUESTION)
    firsts = [{s["doc"] for s in d.metadata["sources"]} for d in kept]
    assert kept and len(kept) < len(docs)
    for i, docs_i in enumerate(firsts):  # each kept one has a document none before it was charged to
        assert docs_i - set().union(*firsts[:i]) or i == 0


def _view(store: InMemoryVectorStore) -> View:
    return {cid: (row["text"], row["metadata"]["sources"]) for cid, row in store.store.items()}


def test_sync_follows_ingest_edit_and_remove(tmp_path: Path) -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    lifecycle(tmp_path, lambda index: sync(index, store), lambda: _view(store))


class FlakyStore(InMemoryVectorStore):
    """Writes its first batch, then writes one record of the next and loses the connection."""

    armed = False
    calls = 0

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        self.calls += 1
        if self.armed and self.calls == 2:
            super().add_documents(documents[:1], ids=kwargs["ids"][:1])
            raise ConnectionError("vector store went away mid-batch")
        return super().add_documents(documents, **kwargs)


def test_an_interrupted_sync_resumes_and_never_marks_an_unwritten_record(tmp_path: Path) -> None:
    store = FlakyStore(DeterministicFakeEmbedding(size=8))

    def fail(on: bool) -> None:
        store.armed = on

    interrupted(tmp_path, lambda index, **kw: sync(index, store, **kw), lambda: _view(store), fail)


def test_a_store_that_returns_other_ids_is_not_marked_done(tmp_path: Path) -> None:
    from adapter_corpus import ingest_small, small_corpus
    from chunkdedup.errors import SyncError

    class Forgetful(InMemoryVectorStore):
        def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
            return super().add_documents(documents, **kwargs)[:-1]

    index = tmp_path / "i.sqlite"
    ingest_small(small_corpus(tmp_path), index)
    with pytest.raises(SyncError, match="other ids"):
        sync(index, Forgetful(DeterministicFakeEmbedding(size=8)))
    report = sync(index, InMemoryVectorStore(DeterministicFakeEmbedding(size=8)))
    assert report.since is None  # nothing was recorded as applied
