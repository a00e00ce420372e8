"""An index built with an embedder hands its stored vectors to a sync whose store uses the same model:
the embeddings object names the index's embedder, nothing is embedded (the calls are counted) and the
store holds the index's vectors; another model embeds as before; the caller can force either way, and
vectors of another dimension are refused before anything is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from adapter_corpus import small_corpus
from chunkdedup import ChunkConfig, Config, Index, ingest
from chunkdedup.config import SemanticConfig
from chunkdedup.embed import MINILM_NAME, HashEmbedder
from chunkdedup.errors import ConfigError, SyncError
from chunkdedup.integrations._index_vectors import same_model

#: The deterministic test embedder, recorded by the index as ``hash:64:0``.
HASHED = Config(
    chunk=ChunkConfig(target_words=8, max_words=20),
    semantic=SemanticConfig(enabled=True, embedder="hash", threshold=0.99),
)
PLAIN = Config(chunk=ChunkConfig(target_words=8, max_words=20))


class Calls:
    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def add(self, n: int) -> None:
        self.calls += 1
        self.texts += n


def _hash(texts: list[str], dim: int = 64) -> list[list[float]]:
    return HashEmbedder(dim).embed_batch(texts).astype(float).tolist()


def _other(texts: list[str], dim: int = 64) -> list[list[float]]:
    """Another model of the same dimension: the hash embedder with another seed."""
    return HashEmbedder(dim, seed=7).embed_batch(texts).astype(float).tolist()


def _model(name: str) -> Any:
    return _hash if name.startswith("hash") else _other


def index_vectors(index: Path) -> dict[str, list[float]]:
    """Every canonical's stored vector, by id (each one has one)."""
    with Index.open(index) as ix:
        ids = [r.id for r in ix.records()]
        batch = ix.canonical_vectors(ids)
    assert sorted(batch.keys) == sorted(ids)
    pairs = zip(batch.keys, batch.vectors, strict=True)
    return {k: np.frombuffer(v, dtype="<f4").astype(float).tolist() for k, v in pairs}


@pytest.fixture
def index(tmp_path: Path) -> Path:
    path = tmp_path / "index.sqlite"
    ingest([small_corpus(tmp_path)], path, config=HASHED)
    return path


def _close(got: dict[str, list[float]], want: dict[str, list[float]]) -> bool:
    return got.keys() == want.keys() and all(np.allclose(got[k], want[k], atol=1e-6) for k in want)


# --- LangChain -------------------------------------------------------------------------------


def lc_embeddings(name: str, calls: Calls, dim: int = 64) -> Any:
    from langchain_core.embeddings import Embeddings

    class Named(Embeddings):
        def __init__(self) -> None:
            self.model_name = name

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            calls.add(len(texts))
            return _model(name)(texts, dim)

        def embed_query(self, text: str) -> list[float]:
            return _model(name)([text], dim)[0]

    return Named()


def lc_sync(index: Path, name: str, dim: int = 64, **kw: Any) -> tuple[Any, dict[str, list[float]], Calls]:
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from chunkdedup.integrations.langchain import sync

    calls = Calls()
    store = InMemoryVectorStore(lc_embeddings(name, calls, dim))
    report = sync(index, store, state=index.with_suffix(f".{name}.json"), **kw)
    held = {row["metadata"]["chunk_id"]: list(row["vector"]) for row in store.store.values()}
    return report, held, calls


def test_langchain_same_model_embeds_nothing_and_holds_the_index_vectors(index: Path) -> None:
    report, held, calls = lc_sync(index, "hash")  # names the index's hash:64:0
    want = index_vectors(index)
    assert (calls.calls, calls.texts, report.embed_calls, report.embedded) == (0, 0, 0, 0)
    assert report.index_vectors == len(want) == report.upserts and report.verified
    assert _close(held, want)


def test_langchain_another_model_is_embedded_as_before(index: Path) -> None:
    report, held, calls = lc_sync(index, "other-model")
    want = index_vectors(index)
    assert report.index_vectors == 0 and calls.texts == report.embedded == len(want) and calls.calls >= 1
    with Index.open(index) as ix:
        texts = {r.id: r.text or "" for r in ix.records()}
    assert _close(held, {cid: _other([t])[0] for cid, t in texts.items()})
    assert not _close(held, want)


def test_langchain_forced_either_way(index: Path) -> None:
    never, _, calls = lc_sync(index, "hash", index_vectors=False)
    assert never.index_vectors == 0 and calls.texts == never.upserts
    forced, held, calls = lc_sync(index, "other-model", index_vectors=True)
    # a model not known to be the index's: one text embedded to read its dimension, then none
    assert (calls.calls, calls.texts) == (1, 1) and forced.index_vectors == forced.upserts
    assert _close(held, index_vectors(index))


def test_a_dimension_mismatch_is_refused_before_anything_is_written(index: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from chunkdedup.integrations.langchain import sync

    # forced on a model of another dimension: its one probe text shows 32, nothing is written
    store = InMemoryVectorStore(lc_embeddings("other-model", Calls(), dim=32))
    with pytest.raises(SyncError, match=r"has 32 dimensions but the index's vectors \(hash:64:0\) have 64"):
        sync(index, store, state=index.with_suffix(".json"), index_vectors=True)
    assert store.store == {}
    # a store of 32-d vectors (hash:32:0 is another model: embedded), then synced with a model named
    # as the index's, where one record's text differs: its 32-d vector is refused, nothing written
    state = index.with_suffix(".32.json")
    store = InMemoryVectorStore(lc_embeddings("hash:32", Calls(), dim=32))
    assert sync(index, store, state=state).index_vectors == 0
    first = next(iter(store.store))
    store.store[first]["text"] = "changed in the store"
    before = {k: dict(v) for k, v in store.store.items()}
    with pytest.raises(SyncError, match=r"vector of \S+ has 32 dimensions"):
        sync(index, store, state=state, full=True, embedding=lc_embeddings("hash", Calls()))
    assert store.store == before


def test_an_edit_takes_the_new_vectors_from_the_index(index: Path, tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from chunkdedup.integrations.langchain import sync

    calls = Calls()
    store = InMemoryVectorStore(lc_embeddings("hash:64:0", calls))
    state = tmp_path / "state.json"
    sync(index, store, state=state)
    (tmp_path / "corpus" / "charlie.txt").write_text(
        "Charlie policy was rewritten for the new charlie product line.\n", encoding="utf-8"
    )
    ingest([tmp_path / "corpus"], index, config=HASHED)
    edited = sync(index, store, state=state)
    assert edited.upserts >= 1 and edited.index_vectors == edited.upserts - edited.kept_vectors >= 1
    assert calls.calls == 0
    held = {row["metadata"]["chunk_id"]: list(row["vector"]) for row in store.store.values()}
    assert _close(held, index_vectors(index))


def test_an_index_without_vectors(tmp_path: Path) -> None:
    path = tmp_path / "plain.sqlite"
    ingest([small_corpus(tmp_path)], path, config=PLAIN)
    report, _, calls = lc_sync(path, "hash")
    assert report.index_vectors == 0 and calls.texts == report.upserts
    with pytest.raises(ConfigError, match="holds no vectors"):
        lc_sync(path, "hash", index_vectors=True)


# --- LlamaIndex and Haystack -----------------------------------------------------------------


def test_llamaindex_same_model_embeds_nothing(index: Path) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.storage.docstore import SimpleDocumentStore
    from llama_index.core.vector_stores import SimpleVectorStore

    from chunkdedup.integrations.llamaindex import sync

    def run(name: str) -> tuple[Any, dict[str, list[float]], Calls]:
        calls = Calls()

        class Named(BaseEmbedding):
            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                calls.add(len(texts))
                return _model(name)(texts)

            def _get_text_embedding(self, text: str) -> list[float]:
                return self._get_text_embeddings([text])[0]

            def _get_query_embedding(self, query: str) -> list[float]:
                return _model(name)([query])[0]

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return _model(name)([query])[0]

        store, docs = SimpleVectorStore(), SimpleDocumentStore()
        model = Named(model_name=name, embed_batch_size=1_000)
        state = index.with_suffix(f".li{len(name)}")
        report = sync(index, store, embed_model=model, docstore=docs, state=state)
        held = {store.data.metadata_dict[i]["chunk_id"]: v for i, v in store.data.embedding_dict.items()}
        return report, held, calls

    same, held, calls = run("hash:64:0")
    assert calls.calls == 0 and same.index_vectors == same.upserts and same.verified
    assert _close(held, index_vectors(index))
    other, held, calls = run("BAAI/bge-small-en-v1.5")
    assert other.index_vectors == 0 and calls.texts == other.upserts
    assert not _close(held, index_vectors(index))


def test_haystack_same_model_embeds_nothing(index: Path) -> None:
    pytest.importorskip("haystack")
    from dataclasses import replace

    from haystack import Document, component
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from chunkdedup.integrations.haystack import sync

    def run(name: str, prefix: str = "") -> tuple[Any, dict[str, list[float]], Calls]:
        calls = Calls()

        @component
        class Embedder:  # as SentenceTransformersDocumentEmbedder: the model in ``model``
            def __init__(self) -> None:
                self.model = name
                self.prefix = prefix

            @component.output_types(documents=list[Document])
            def run(self, documents: list[Document]) -> dict[str, list[Document]]:
                calls.add(len(documents))
                vectors = _model(name)([d.content or "" for d in documents])
                pairs = zip(documents, vectors, strict=True)
                return {"documents": [replace(d, embedding=v) for d, v in pairs]}

        store = InMemoryDocumentStore()
        report = sync(index, store, embedder=Embedder(), state=index.with_suffix(f".hs.{name}{len(prefix)}"))
        held = {d.meta["chunk_id"]: list(d.embedding or []) for d in store.filter_documents()}
        return report, held, calls

    same, held, calls = run("hash")
    assert calls.calls == 0 and same.index_vectors == same.upserts and same.verified
    assert _close(held, index_vectors(index))
    other, held, calls = run("other-model")
    assert other.index_vectors == 0 and calls.texts == other.upserts
    assert not _close(held, index_vectors(index))
    # the index's model, but given a prefix the index did not embed: embedded
    prefixed, _, calls = run("hash", prefix="passage: ")
    assert prefixed.index_vectors == 0 and calls.texts == prefixed.upserts


# --- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("framework", "recorded", "same"),
    [
        ("sentence-transformers/all-MiniLM-L6-v2", MINILM_NAME, True),
        ("all-MiniLM-L6-v2", MINILM_NAME, True),
        ("minilm", MINILM_NAME, True),
        ("sentence-transformers/all-mpnet-base-v2", "sentence-transformers:all-mpnet-base-v2", True),
        ("BAAI/bge-small-en-v1.5", "sentence-transformers:BAAI/bge-small-en-v1.5", True),
        ("BAAI/bge-small-en-v1.5", MINILM_NAME, False),
        ("sentence-transformers/all-MiniLM-L12-v2", MINILM_NAME, False),
        ("hash", "hash:64:0", True),
        ("hash:64", "hash:64:0", True),
        ("hash:32", "hash:64:0", False),
        ("hash:64:1", "hash:64:0", False),
        ("hashnet/model", "hash:64:0", False),
        (None, "hash:64:0", False),
    ],
)
def test_which_names_are_the_same_model(framework: str | None, recorded: str, same: bool) -> None:
    assert same_model(framework, recorded) is same


def test_a_local_model_directory_is_the_same_model_by_its_resolved_path(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    assert same_model(str(folder), f"sentence-transformers:{folder.resolve()}")
    assert not same_model(str(folder), f"sentence-transformers:{tmp_path / 'other'}")


# --- chunkdedup sync -------------------------------------------------------------------------


def _cli(*args: str) -> dict[str, Any]:
    from click.testing import CliRunner

    from chunkdedup.cli import main

    result = CliRunner().invoke(main, ["sync", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


@pytest.mark.parametrize(
    ("embeddings", "flag", "from_index", "embedded"),
    [
        ("embedder:hash", None, True, 0),  # the index's own model: nothing embedded
        ("embedder:hash", "--no-index-vectors", False, None),
        ("embedder:hash:64:7", None, False, None),  # another model: embedded as before
        ("fake:64", "--index-vectors", True, 1),  # forced: one probe text for the dimension
    ],
)
def test_the_command_line_hands_over_the_index_vectors(
    index: Path, tmp_path: Path, embeddings: str, flag: str | None, from_index: bool, embedded: int | None
) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.vectorstores import InMemoryVectorStore

    from chunkdedup.integrations._local_stores import embeddings_from

    store = tmp_path / "store.json"
    args = ["--index", str(index), "--store", "memory", "--path", str(store), "--embeddings", embeddings]
    out = _cli(*args, *([flag] if flag else []))
    n = out["upserts"]
    assert out["index_vectors"] == (n if from_index else 0) and out["verified"]
    assert out["embedded"] == (n if embedded is None else embedded)
    rows = InMemoryVectorStore.load(str(store), embeddings_from(embeddings)).store.values()
    held = {r["metadata"]["chunk_id"]: list(r["vector"]) for r in rows}
    # the index's vectors: handed over, or embedded again by the index's own model
    assert _close(held, index_vectors(index)) is (from_index or embeddings == "embedder:hash")


def test_the_command_line_summary_says_where_the_vectors_came_from(index: Path, tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from click.testing import CliRunner

    from chunkdedup.cli import main

    args = ["sync", "--index", str(index), "--store", "memory", "--path", str(tmp_path / "s.json")]
    result = CliRunner().invoke(main, [*args, "--embeddings", "embedder:hash"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with Index.open(index) as ix:
        n = len(list(ix.records()))
    assert f"vectors: 0 embedded, 0 kept from the store, {n} from the index" in result.output


def test_the_command_line_refuses_vectors_of_another_dimension(index: Path, tmp_path: Path) -> None:
    pytest.importorskip("langchain_core")
    from click.testing import CliRunner

    from chunkdedup.cli import main

    store = tmp_path / "store.json"
    args = ["sync", "--index", str(index), "--store", "memory", "--path", str(store)]
    result = CliRunner().invoke(main, [*args, "--embeddings", "fake:16", "--index-vectors"])
    assert result.exit_code == 1 and "has 16 dimensions but the index's vectors" in result.output
    assert "Traceback" not in result.output


# --- the twelve real store setups ------------------------------------------------------------


@pytest.mark.parametrize("name", ["langchain-memory", "langchain-chroma", "langchain-qdrant",
                                  "langchain-faiss", "langchain-lancedb", "langchain-lancedb-append",
                                  "llamaindex-simple", "llamaindex-chroma", "llamaindex-qdrant",
                                  "haystack-memory", "haystack-chroma", "haystack-qdrant"])
def test_each_real_store_takes_the_index_vectors_and_mirrors_it(name: str, tmp_path: Path) -> None:
    """Forced on the setups' fake embeddings (16-d, no model name): one probe text per sync, every
    record's vector from the index, the store a mirror after an ingest and an edit."""
    from test_sync_stores import NEEDS, SETUPS, _mirrors

    for module in NEEDS.get(name.split("-")[1], ()):
        pytest.importorskip(module)
    index, state = tmp_path / "index.sqlite", tmp_path / "state.json"
    hashed16 = Config(chunk=HASHED.chunk, semantic=SemanticConfig(enabled=True, embedder="hash:16"))
    ingest([small_corpus(tmp_path)], index, config=hashed16)
    setup = SETUPS[name](tmp_path)
    first = setup.sync(index, state=state, index_vectors=True)
    assert first.verified and first.index_vectors == first.upserts > 0
    assert (first.embed_calls, first.embedded, setup.counter.texts) == (1, 1, 1)  # the probe
    _mirrors(setup, index)
    (tmp_path / "corpus" / "charlie.txt").write_text(
        "Charlie policy was rewritten for the new charlie product line.\n", encoding="utf-8"
    )
    ingest([tmp_path / "corpus"], index, config=hashed16)
    edited = setup.sync(index, state=state, index_vectors=True)
    assert edited.verified and edited.index_vectors == edited.upserts - edited.kept_vectors >= 1
    assert setup.counter.texts == 2
    _mirrors(setup, index)
