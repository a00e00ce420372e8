"""``sync`` into the real local vector stores of LangChain, LlamaIndex and Haystack: each of twelve
setups is synced after an ingest, a two-word edit, a rewrite and two removals of site-policy documents,
and after every step the store holds exactly ``Index.records()`` (ids, text, every source, the top-level
fields), a chunk shared by two documents kept until its last source goes. The stores run embedded in
the test (no server); embeddings are deterministic fakes that count their calls."""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from chunkdedup import ChunkConfig, Config, Index, ingest, remove_documents
from chunkdedup.integrations._records import ID_NAMESPACE, stored_docs, stored_sources
from conftest import POLICY

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")
pytest.importorskip("haystack")

DOCS = [
    "current/acceptable-use-policies/github-impersonation.md",
    "history/github-impersonation/2022-09-01_87906da4.md",
    "history/github-impersonation/2024-09-06_3ec3b216.md",
    "current/other-site-policies/github-logo-policy.md",
    "history/github-logo-policy/2022-09-01_87906da4.md",
    "current/acceptable-use-policies/github-sexually-obscene-content.md",
    "history/github-sexually-obscene-content/2024-09-06_31615f94.md",
]
EDITED = DOCS[0]
REWRITTEN = DOCS[6]
REMOVED = (DOCS[3], DOCS[4])  # the logo policy and its history share chunks
CONFIG = Config(chunk=ChunkConfig(target_words=40, max_words=80, paragraph_words=40))
DIM = 16
#: One stored record as compared with the export: text, sources, top-level metadata.
Row = tuple[str, list[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Stages:
    """The index after each step, as files to copy in place of the synced index."""

    files: tuple[Path, ...]
    shared: str  # a canonical held by exactly the two removed documents at first


def _vector(text: str) -> list[float]:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(b - 127.5) / 127.5 for b in digest[:DIM]]


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> Stages:
    root = tmp_path_factory.mktemp("sync_stages")
    corpus = root / "site-policy"
    for doc in DOCS:
        (corpus / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(POLICY / doc, corpus / doc)
    lines = (POLICY / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    (corpus / "manifest.jsonl").write_text(
        "\n".join(line for line in lines if json.loads(line)["path"] in DOCS) + "\n", encoding="utf-8"
    )
    index = root / "work.sqlite"
    files: list[Path] = []

    def run() -> None:
        ingest([corpus], index, manifest=corpus / "manifest.jsonl", config=CONFIG)

    def keep() -> None:
        with Index.open(index) as ix:  # a clean close checkpoints the WAL into the file
            ix.stats()
        files.append(root / f"stage{len(files)}.sqlite")
        shutil.copy(index, files[-1])

    run()
    keep()
    with Index.open(index) as ix:
        docs_of = {r.id: {s.doc for s in r.sources} for r in ix.records()}
    removed = set(REMOVED)
    shared = sorted(cid for cid, docs in docs_of.items() if docs == removed)[0]
    text = (corpus / EDITED).read_text(encoding="utf-8")
    edited = text.replace("deceives others", "tricks others", 1).replace(
        "* Copying another", "* Cloning another", 1
    )
    assert len(edited.split()) == len(text.split()) and edited != text  # two words changed
    (corpus / EDITED).write_text(edited, encoding="utf-8")
    run()
    keep()
    (corpus / REWRITTEN).write_text(
        "---\ntitle: Sexually obscene content\n---\n\nThis policy was rewritten. Content that is sexually "
        "obscene is not allowed on the service, and accounts that post it may be suspended after review.\n",
        encoding="utf-8",
    )
    run()
    keep()
    for doc in REMOVED:
        remove_documents(index, [doc])
        keep()
    return Stages(tuple(files), shared)


def expected(index: Path) -> dict[str, Row]:
    """What the store must hold: every canonical's text, sources and top-level fields."""
    out: dict[str, Row] = {}
    with Index.open(index) as ix:
        for r in ix.records():
            first = r.sources[0]
            top = {k: v for k, v in first.metadata.items()}
            top.update(
                chunk_id=r.id,
                source=first.doc,
                page=first.page,
                docs=list(dict.fromkeys(s.doc for s in r.sources)),
            )
            out[r.id] = (r.text or "", [s.to_json() for s in r.sources], top)
    return out


def row(text: str, meta: dict[str, Any]) -> tuple[str, Row]:
    """A stored record as compared: sources and docs decoded, the keys of ``expected`` kept."""
    top = {k: v for k, v in meta.items() if k != "sources"}
    top["docs"] = list(stored_docs(meta))
    return str(meta["chunk_id"]), (text, stored_sources(meta), top)


class Counter:
    """Counts the texts an embeddings object was given and its calls; with ``fail_at`` set, that call
    fails as an embedding service that went away."""

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0
        self.fail_at: int | None = None

    def add(self, n: int) -> None:
        if self.fail_at == self.calls + 1:
            raise ConnectionError("embedding service went away")
        self.calls += 1
        self.texts += n


@dataclass
class Setup:
    sync: Callable[..., Any]
    view: Callable[[], dict[str, Row]]
    ids: Callable[[], dict[str, str]]  # chunk_id -> the id the store keeps
    uuid_ids: bool
    counter: Counter
    by_source: Callable[[str], set[str]]  # chunk_ids the store's own filter finds with source == DOC


# --- LangChain -------------------------------------------------------------------------------


def _lc_embeddings(counter: Counter) -> Any:
    from langchain_core.embeddings import Embeddings

    class Fake(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            counter.add(len(texts))
            return [_vector(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vector(text)

    return Fake()


def _lc(
    store: Any,
    counter: Counter,
    view: Callable[[], Iterator[tuple[str, str, dict[str, Any]]]],
    where: Callable[[str], Any],
    uuid_ids: bool = False,
) -> Setup:
    from chunkdedup.integrations.langchain import sync

    def rows() -> dict[str, Row]:
        return dict(row(text, meta) for _, text, meta in view())

    def ids() -> dict[str, str]:
        return {str(meta["chunk_id"]): sid for sid, _, meta in view()}

    def by_source(doc: str) -> set[str]:
        found = store.similarity_search("policy", k=100, filter=where(doc))
        return {d.metadata["chunk_id"] for d in found}

    return Setup(lambda index, **kw: sync(index, store, **kw), rows, ids, uuid_ids, counter, by_source)


def lc_memory(tmp: Path) -> Setup:
    from langchain_core.vectorstores import InMemoryVectorStore

    counter = Counter()
    store = InMemoryVectorStore(_lc_embeddings(counter))
    return _lc(
        store,
        counter,
        lambda: ((k, r["text"], r["metadata"]) for k, r in store.store.items()),
        lambda doc: lambda d: d.metadata["source"] == doc,
    )


def lc_chroma(tmp: Path) -> Setup:
    import chromadb
    from langchain_chroma import Chroma

    counter = Counter()
    client = chromadb.PersistentClient(
        path=str(tmp / "chroma"), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    store = Chroma(collection_name="policies", embedding_function=_lc_embeddings(counter), client=client)

    def view() -> Iterator[tuple[str, str, dict[str, Any]]]:
        got = store.get(include=["documents", "metadatas"])
        return zip(got["ids"], got["documents"], got["metadatas"], strict=True)

    return _lc(store, counter, view, lambda doc: {"source": doc})


def lc_qdrant(tmp: Path) -> Setup:
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient, models

    counter = Counter()
    client = QdrantClient(":memory:")
    client.create_collection(
        "policies", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    store = QdrantVectorStore(client=client, collection_name="policies", embedding=_lc_embeddings(counter))
    counter.calls = counter.texts = 0  # the store embeds a probe text to check the collection's size

    def view() -> Iterator[tuple[str, str, dict[str, Any]]]:
        points, _ = client.scroll("policies", limit=10_000, with_payload=True)
        return ((str(p.id), p.payload["page_content"], p.payload["metadata"]) for p in points)

    def where(doc: str) -> Any:
        match = models.FieldCondition(key="metadata.source", match=models.MatchValue(value=doc))
        return models.Filter(must=[match])

    return _lc(store, counter, view, where, uuid_ids=True)


def lc_faiss(tmp: Path) -> Setup:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    counter = Counter()
    store = FAISS(_lc_embeddings(counter), faiss.IndexFlatL2(DIM), InMemoryDocstore(), {})

    def view() -> Iterator[tuple[str, str, dict[str, Any]]]:
        assert store.index.ntotal == len(store.index_to_docstore_id)
        for cid in store.index_to_docstore_id.values():
            doc = store.docstore.search(cid)
            yield cid, doc.page_content, doc.metadata

    return _lc(store, counter, view, lambda doc: {"source": doc})


def _lc_lance(tmp: Path, mode: str) -> Setup:
    from langchain_community.vectorstores import LanceDB

    counter = Counter()
    store = LanceDB(
        uri=str(tmp / "lance"), embedding=_lc_embeddings(counter), table_name="policies", mode=mode
    )

    def view() -> Iterator[tuple[str, str, dict[str, Any]]]:
        table = store.get_table()
        for r in table.to_arrow().to_pylist() if table is not None else []:
            yield r["id"], r["text"], {k: v for k, v in r["metadata"].items() if v is not None}

    return _lc(store, counter, view, lambda doc: "metadata.source = '" + doc.replace("'", "''") + "'")


def lc_lance(tmp: Path) -> Setup:
    return _lc_lance(tmp, "overwrite")  # LanceDB's default mode


def lc_lance_append(tmp: Path) -> Setup:
    return _lc_lance(tmp, "append")


# --- LlamaIndex ------------------------------------------------------------------------------


def _li_embed(counter: Counter) -> Any:
    from llama_index.core.embeddings import BaseEmbedding

    class Fake(BaseEmbedding):
        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            counter.add(len(texts))
            return [_vector(t) for t in texts]

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._get_text_embeddings([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return _vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return _vector(query)

    return Fake(model_name="fake", embed_batch_size=1_000)


def _li_by_source(store: Any) -> Callable[[str], set[str]]:
    """The store's own query with a ``source == DOC`` metadata filter."""
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery

    def by_source(doc: str) -> set[str]:
        query = VectorStoreQuery(
            query_embedding=_vector("policy"),
            similarity_top_k=100,
            filters=MetadataFilters(filters=[MetadataFilter(key="source", value=doc)]),
        )
        found = store.query(query)
        if found.nodes is not None:
            return {n.metadata["chunk_id"] for n in found.nodes}
        return {store.data.metadata_dict[i]["chunk_id"] for i in found.ids or []}

    return by_source


def li_simple(tmp: Path) -> Setup:
    from llama_index.core.schema import MetadataMode
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.vector_stores import SimpleVectorStore

    from chunkdedup.integrations.llamaindex import sync

    counter = Counter()
    store, docstore, model = SimpleVectorStore(), SimpleDocumentStore(), _li_embed(counter)

    def view() -> dict[str, Row]:
        assert set(docstore.docs) == set(store.data.embedding_dict)
        return dict(
            row(
                docstore.get_document(i).get_content(metadata_mode=MetadataMode.NONE),
                store.data.metadata_dict[i],
            )
            for i in store.data.embedding_dict
        )

    def ids() -> dict[str, str]:
        return {store.data.metadata_dict[i]["chunk_id"]: i for i in store.data.embedding_dict}

    return Setup(
        lambda index, **kw: sync(index, store, embed_model=model, docstore=docstore, **kw),
        view,
        ids,
        False,
        counter,
        _li_by_source(store),
    )


def li_chroma(tmp: Path) -> Setup:
    import chromadb
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from chunkdedup.integrations.llamaindex import sync

    counter = Counter()
    client = chromadb.PersistentClient(
        path=str(tmp / "chroma"), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    collection = client.get_or_create_collection("policies")
    store, model = ChromaVectorStore(chroma_collection=collection), _li_embed(counter)

    def items() -> Iterator[tuple[str, str, dict[str, Any]]]:
        got = collection.get(include=["documents", "metadatas"])
        return zip(got["ids"], got["documents"], got["metadatas"], strict=True)

    def view() -> dict[str, Row]:
        return dict(row(text, _ours(meta)) for _, text, meta in items())

    return Setup(
        lambda index, **kw: sync(index, store, embed_model=model, **kw),
        view,
        lambda: {m["chunk_id"]: i for i, _, m in items()},
        False,
        counter,
        _li_by_source(store),
    )


def li_qdrant(tmp: Path) -> Setup:
    from llama_index.core.schema import MetadataMode
    from llama_index.core.vector_stores.utils import metadata_dict_to_node
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    from chunkdedup.integrations.llamaindex import sync

    counter = Counter()
    client = QdrantClient(":memory:")
    store, model = QdrantVectorStore(client=client, collection_name="policies"), _li_embed(counter)

    def items() -> list[tuple[str, str, dict[str, Any]]]:
        if not client.collection_exists("policies"):
            return []
        points, _ = client.scroll("policies", limit=10_000, with_payload=True)
        return [
            (
                str(p.id),
                metadata_dict_to_node(p.payload).get_content(metadata_mode=MetadataMode.NONE),
                p.payload,
            )
            for p in points
        ]

    def view() -> dict[str, Row]:
        return dict(row(text, _ours(meta)) for _, text, meta in items())

    return Setup(
        lambda index, **kw: sync(index, store, embed_model=model, **kw),
        view,
        lambda: {m["chunk_id"]: i for i, _, m in items()},
        True,
        counter,
        _li_by_source(store),
    )


def _ours(meta: dict[str, Any]) -> dict[str, Any]:
    """A LlamaIndex payload without the framework's own keys."""
    return {
        k: v
        for k, v in meta.items()
        if not k.startswith("_") and k not in ("doc_id", "document_id", "ref_doc_id")
    }


# --- Haystack --------------------------------------------------------------------------------


def _hs_embedder(counter: Counter) -> Any:
    from haystack import Document, component

    @component
    class FakeEmbedder:
        @component.output_types(documents=list[Document])
        def run(self, documents: list[Document]) -> dict[str, list[Document]]:
            counter.add(len(documents))
            return {"documents": [replace(d, embedding=_vector(d.content or "")) for d in documents]}

    return FakeEmbedder()


def _hs(store: Any) -> Setup:
    from chunkdedup.integrations.haystack import sync

    counter = Counter()
    embedder = _hs_embedder(counter)

    def view() -> dict[str, Row]:
        return dict(row(d.content or "", d.meta) for d in store.filter_documents())

    def ids() -> dict[str, str]:
        return {d.meta["chunk_id"]: d.id for d in store.filter_documents()}

    def by_source(doc: str) -> set[str]:
        found = store.filter_documents({"field": "meta.source", "operator": "==", "value": doc})
        return {d.meta["chunk_id"] for d in found}

    return Setup(
        lambda index, **kw: sync(index, store, embedder=embedder, **kw), view, ids, False, counter, by_source
    )


def hs_memory(tmp: Path) -> Setup:
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    return _hs(InMemoryDocumentStore())


def hs_chroma(tmp: Path) -> Setup:
    from haystack_integrations.document_stores.chroma import ChromaDocumentStore

    return _hs(ChromaDocumentStore(collection_name="policies", persist_path=str(tmp / "chroma")))


def hs_qdrant(tmp: Path) -> Setup:
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    return _hs(
        QdrantDocumentStore(location=":memory:", index="policies", embedding_dim=DIM, return_embedding=True)
    )


SETUPS: dict[str, Callable[[Path], Setup]] = {
    "langchain-memory": lc_memory,
    "langchain-chroma": lc_chroma,
    "langchain-qdrant": lc_qdrant,
    "langchain-faiss": lc_faiss,
    "langchain-lancedb": lc_lance,
    "langchain-lancedb-append": lc_lance_append,
    "llamaindex-simple": li_simple,
    "llamaindex-chroma": li_chroma,
    "llamaindex-qdrant": li_qdrant,
    "haystack-memory": hs_memory,
    "haystack-chroma": hs_chroma,
    "haystack-qdrant": hs_qdrant,
}
NEEDS = {
    "chroma": (
        "chromadb",
        "langchain_chroma",
        "llama_index.vector_stores.chroma",
        "haystack_integrations.document_stores.chroma",
    ),
    "qdrant": (
        "qdrant_client",
        "langchain_qdrant",
        "llama_index.vector_stores.qdrant",
        "haystack_integrations.document_stores.qdrant",
    ),
    "faiss": ("faiss", "langchain_community"),
    "lancedb": ("lancedb", "langchain_community"),
}


def _mirrors(setup: Setup, index: Path) -> dict[str, Row]:
    want = expected(index)
    held = setup.view()
    assert held.keys() == want.keys()
    for cid, (text, sources, top) in want.items():
        got_text, got_sources, got_top = held[cid]
        assert (got_text, got_sources) == (text, sources), cid
        assert {k: got_top.get(k) for k in top} == top, cid
    if setup.uuid_ids:
        assert setup.ids() == {cid: str(uuid.uuid5(ID_NAMESPACE, cid)) for cid in want}
    else:
        assert setup.ids() == {cid: cid for cid in want}
    return held


@pytest.mark.parametrize("name", list(SETUPS))
def test_sync_mirrors_the_index_through_edit_rewrite_and_removals(
    name: str, stages: Stages, tmp_path: Path
) -> None:
    for module in NEEDS.get(name.split("-")[1], ()):
        pytest.importorskip(module)
    setup = SETUPS[name](tmp_path)
    index, state = tmp_path / "index.sqlite", tmp_path / "state.json"

    def step(k: int) -> Any:
        shutil.copy(stages.files[k], index)
        report = setup.sync(index, state=state)
        assert report.verified and report.store_records == len(expected(index))
        return report

    first = step(0)
    before = _mirrors(setup, index)
    for doc in (EDITED, REMOVED[0]):  # the store's own filter on the top-level source
        assert (
            setup.by_source(doc)
            == {cid for cid, (_, _, top) in before.items() if top["source"] == doc}
            != set()
        )
    assert first.embedded == setup.counter.texts == len(before) and first.kept_vectors == 0

    texts = setup.counter.texts
    edited = step(1)
    after = _mirrors(setup, index)
    changed = [cid for cid, (text, _, _) in after.items() if before.get(cid, ("",))[0] != text]
    # only the texts that changed are embedded; the canonicals whose offsets moved keep their vector
    assert 0 < edited.embedded == setup.counter.texts - texts == len(changed) < edited.upserts
    assert edited.kept_vectors == edited.upserts - len(changed)

    rewritten = step(2)
    _mirrors(setup, index)
    assert rewritten.deletes >= 1 and rewritten.upserts >= 1

    once = step(3)
    held = _mirrors(setup, index)
    assert once.upserts >= 1
    assert held[stages.shared][2]["docs"] == [REMOVED[1]]  # kept: its other source holds it
    twice = step(4)
    assert twice.deletes >= 1
    assert stages.shared not in _mirrors(setup, index)  # gone with its last source
    again = setup.sync(index, state=state)
    assert (again.upserts, again.deletes, again.verified) == (0, 0, True)


@pytest.mark.parametrize(
    "name", ["langchain-chroma", "langchain-lancedb", "llamaindex-qdrant", "haystack-chroma"]
)
def test_an_interrupted_sync_resumes_on_the_real_store(name: str, stages: Stages, tmp_path: Path) -> None:
    """The embedder fails on the second batch: the first batch stays written and recorded, the run is
    not marked applied, and the next call sends the rest only and leaves the store a mirror."""
    for module in NEEDS.get(name.split("-")[1], ()):
        pytest.importorskip(module)
    setup = SETUPS[name](tmp_path)
    index, state = tmp_path / "index.sqlite", tmp_path / "state.json"
    shutil.copy(stages.files[0], index)
    total = len(expected(index))
    setup.counter.fail_at = setup.counter.calls + 2
    with pytest.raises(ConnectionError):
        setup.sync(index, state=state, batch_size=4)
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert saved["applied_run"] is None and saved["cursor"] is not None
    assert len(setup.view()) == 4
    setup.counter.fail_at = None
    report = setup.sync(index, state=state, batch_size=4)
    assert report.resumed and report.verified and report.upserts == total - 4
    _mirrors(setup, index)
