"""The Haystack adapter against the real haystack-ai: retriever and safety-net components (alone
and in a Pipeline), and sync to its InMemoryDocumentStore."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no telemetry thread in tests
pytest.importorskip("haystack", reason="needs the [haystack] extra: pip install 'chunkdedup[haystack]'")

from haystack import Document, Pipeline
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from adapter_corpus import View, interrupted, lifecycle
from chunkdedup import Index, search
from chunkdedup.errors import ConfigError, InputError
from chunkdedup.integrations.haystack import Retriever, SafetyNet, sync

QUESTION = "how long is personal information retained"


def test_documents_are_the_hits_of_search_with_their_citations(policy_index: Path) -> None:
    docs = Retriever(index=policy_index, k=5).run(QUESTION, top_k=3)["documents"]
    with Index.open(policy_index) as ix:
        hits = search(ix, QUESTION, k=3).hits
    assert len(docs) == 3
    assert [d.id for d in docs] == [h.id for h in hits]
    assert [d.score for d in docs] == [h.score for h in hits]
    assert [d.content for d in docs] == [h.text for h in hits]
    assert [d.meta["sources"] for d in docs] == [[c.to_json() for c in h.citations] for h in hits]


def test_filters_map_to_where(policy_index: Path) -> None:
    with Index.open(policy_index) as ix:
        departments = sorted({str(d["metadata"]["department"]) for d in ix.documents() if d["metadata"]})
    retriever = Retriever(index=policy_index, k=5, versions="all")
    flt = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.department", "operator": "in", "value": departments[:2]},
            {"field": "meta.effective_date", "operator": "<=", "value": "2024-12-31"},
        ],
    }
    docs = retriever.run("terms", filters=flt)["documents"]
    assert docs
    for d in docs:
        for s in d.meta["sources"]:
            assert s["metadata"]["department"] in departments[:2]
            assert s["metadata"]["effective_date"] <= "2024-12-31"
    narrow = Retriever(index=policy_index, k=5, where={"department": departments[0]})
    assert narrow.run(
        "terms", filters={"field": "meta.department", "operator": "==", "value": departments[1]}
    ) == {"documents": []}
    with pytest.raises(InputError, match="no --where form"):
        retriever.run("terms", filters={"field": "meta.department", "operator": "!=", "value": "x"})
    with pytest.raises(InputError, match=r"meta\.content"):
        retriever.run("terms", filters={"field": "content", "operator": "==", "value": "x"})


def test_retriever_and_safety_net_run_in_a_pipeline(policy_index: Path) -> None:
    """The safety net over the raw (safety net off) pool equals search's own safety net in effect:
    no two kept documents share a text, and no source document is cited beyond the cap."""
    pipe = Pipeline()
    pipe.add_component("retriever", Retriever(index=policy_index, k=40, safety_net=False))
    pipe.add_component("net", SafetyNet(top_k=4, cap_per_doc=1))
    pipe.connect("retriever.documents", "net.documents")
    out = pipe.run({"retriever": {"query": QUESTION}})
    docs = out["net"]["documents"]
    assert len(docs) == 4
    charged: set[str] = set()
    for d in docs:
        cited = {s["doc"] for s in d.meta["sources"]}
        assert cited - charged  # a document not yet at its cap of 1
        charged |= cited
    assert len({d.content for d in docs}) == 4


def test_safety_net_uses_embeddings_when_present_and_caps_by_file_path() -> None:
    text_a = "Account logs are kept for ninety days after the account is closed by its owner"
    docs = [
        Document(id="a", content=text_a + ".", score=1.0, embedding=[1.0, 0.0], meta={"file_path": "x"}),
        Document(
            id="b",
            content="Card numbers are never stored.",
            score=0.9,
            embedding=[1.0, 0.01],
            meta={"file_path": "y"},
        ),
        Document(
            id="c", content=text_a + " today.", score=0.8, embedding=[0.0, 1.0], meta={"file_path": "z"}
        ),
    ]
    assert [d.id for d in SafetyNet(top_k=2).run(docs)["documents"]] == ["a", "c"]
    plain = [Document(id=d.id, content=d.content, score=d.score, meta={"file_path": "same"}) for d in docs]
    assert [d.id for d in SafetyNet(cap_per_doc=2).run(plain)["documents"]] == ["a", "b"]


def _view(store: InMemoryDocumentStore) -> View:
    return {d.id: (d.content or "", d.meta["sources"]) for d in store.filter_documents()}


def test_sync_follows_ingest_edit_and_remove(tmp_path: Path) -> None:
    store = InMemoryDocumentStore()
    lifecycle(tmp_path, lambda index: sync(index, store), lambda: _view(store))


class FlakyStore(InMemoryDocumentStore):
    """Writes its first batch, then writes one document of the next and loses the connection."""

    armed = False
    calls = 0

    def write_documents(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        self.calls += 1
        if self.armed and self.calls == 2:
            super().write_documents(documents[:1], policy=policy)
            raise ConnectionError("document store went away mid-batch")
        return super().write_documents(documents, policy=policy)


def test_an_interrupted_sync_resumes_and_never_marks_an_unwritten_record(tmp_path: Path) -> None:
    store = FlakyStore()

    def fail(on: bool) -> None:
        store.armed = on

    interrupted(tmp_path, lambda index, **kw: sync(index, store, **kw), lambda: _view(store), fail)


def test_a_pipeline_with_both_components_round_trips_through_yaml(policy_index: Path) -> None:
    from chunkdedup import QueryConfig

    pipe = Pipeline()
    retriever = Retriever(
        index=policy_index, k=7, where=["department=privacy-policies"], config=QueryConfig(cap_per_doc=3)
    )
    pipe.add_component("retriever", retriever)
    pipe.add_component("net", SafetyNet(top_k=3, cap_per_doc=1, doc_key="family"))
    pipe.connect("retriever.documents", "net.documents")
    loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["chunkdedup.integrations.haystack"])
    assert loaded.to_dict() == pipe.to_dict()
    got = loaded.get_component("retriever")
    assert isinstance(got, Retriever) and got.options == retriever.options
    question = {"retriever": {"query": QUESTION}}
    assert [d.id for d in loaded.run(question)["net"]["documents"]] == [
        d.id for d in pipe.run(question)["net"]["documents"]
    ]
    with Index.open(policy_index) as ix, pytest.raises(ConfigError, match="index path"):
        Retriever(index=ix).to_dict()
