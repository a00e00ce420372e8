"""The local LangChain vector stores ``chunkdedup sync`` opens by kind and path: Chroma (a persistent
folder), Qdrant (local mode, a folder), LanceDB (a folder), FAISS (a folder, saved after each sync)
and LangChain's in-memory store (a JSON file, loaded and dumped: for trials and tests).

Each opens with a LangChain ``Embeddings`` object (:func:`embeddings_from` names one on the command
line) and is written by :func:`chunkdedup.integrations.langchain.sync`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from chunkdedup.embed import Embedder, get_embedder
from chunkdedup.errors import ConfigError, MissingExtraError

try:
    from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
except ImportError:
    raise MissingExtraError("chunkdedup sync", "langchain", "langchain_core") from None

StoreKind = Literal["chroma", "qdrant", "lancedb", "faiss", "memory"]
KINDS: tuple[str, ...] = get_args(StoreKind)
#: What each kind needs installed: (the module to import, the pip package).
_NEEDS = {
    "chroma": ("langchain_chroma", "langchain-chroma"),
    "qdrant": ("langchain_qdrant", "langchain-qdrant"),
    "lancedb": ("lancedb", "langchain-community lancedb"),
    "faiss": ("faiss", "langchain-community faiss-cpu"),
}


@dataclass(frozen=True, slots=True)
class LocalStore:
    """A local store: its kind, where it lives, and the collection (table, index name) in it.

    Example:
        >>> LocalStore("chroma", Path("chroma"), "policies").state_path().name
        'chroma.policies.sync.json'
    """

    kind: StoreKind
    path: Path
    collection: str = "chunkdedup"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"store kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.collection or not self.collection.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(
                f"collection {self.collection!r} must be letters, digits, '-' or '_' (e.g. 'policies')"
            )

    def state_path(self) -> Path:
        """Where the sync state of this collection is kept by default: beside the store
        (``PATH.COLLECTION.sync.json``; the in-memory store's file: ``PATH.sync.json``), so each
        store and collection has its own."""
        name = self.path.name if self.kind == "memory" else f"{self.path.name}.{self.collection}"
        return self.path.with_name(f"{name}.sync.json")


class EmbedderEmbeddings(Embeddings):
    """One of chunkdedup's embedders (:func:`chunkdedup.embed.get_embedder`) as LangChain embeddings;
    ``model_name`` is the embedder's recorded name, so an index built with it hands ``sync`` its
    stored vectors.

    Example:
        >>> EmbedderEmbeddings(get_embedder("hash:8")).model_name
        'hash:8:0'
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.model_name = embedder.name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.embedder.embed_batch(texts).astype(float).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def embeddings_from(spec: str) -> Embeddings:
    """An ``Embeddings`` object named on the command line: ``fake:DIM`` (LangChain's deterministic
    fake embeddings, for trials and tests), ``embedder:NAME`` (chunkdedup's own embedder, as
    ``ingest --embedder`` names it: ``minilm``, ``hash``, a sentence-transformers model) or
    ``MODULE:NAME`` (a class or factory called without arguments, or an instance; e.g.
    ``langchain_openai:OpenAIEmbeddings``).

    Example:
        >>> len(embeddings_from("fake:8").embed_query("refunds"))
        8
        >>> embeddings_from("embedder:hash").model_name
        'hash:64:0'
    """
    head, sep, tail = spec.partition(":")
    if not sep or not head or not tail:
        raise ConfigError(
            f"embeddings {spec!r}: write fake:DIM or MODULE:NAME (e.g. fake:384), or embedder:NAME for "
            "chunkdedup's own embedder (embedder:minilm)"
        )
    if head == "embedder":
        return EmbedderEmbeddings(get_embedder(tail))
    if head == "fake":
        if not tail.isdigit() or int(tail) < 1:
            raise ConfigError(f"embeddings {spec!r}: the dimension must be a positive integer (fake:384)")
        return DeterministicFakeEmbedding(size=int(tail))
    try:
        found: Any = getattr(importlib.import_module(head), tail)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"embeddings {spec!r}: cannot import {tail} from {head} ({e})") from None
    made = found() if callable(found) and not isinstance(found, Embeddings) else found
    if not isinstance(made, Embeddings):
        raise ConfigError(f"embeddings {spec!r} gave a {type(made).__name__}, not a LangChain Embeddings")
    return made


@contextmanager
def opened(store: LocalStore, embeddings: Embeddings) -> Iterator[VectorStore]:
    """The store, opened (created when missing) for a sync; FAISS and the in-memory store are written
    back to their folder or file when the block ends, also after an error, so what the store
    confirmed stays with the sync state that records it."""
    if store.kind in _NEEDS:
        module, package = _NEEDS[store.kind]
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtraError(f"chunkdedup sync --store {store.kind}", package, module) from None
    opener = {
        "chroma": _chroma,
        "qdrant": _qdrant,
        "lancedb": _lancedb,
        "faiss": _faiss,
        "memory": _memory,
    }[store.kind]
    with opener(store, embeddings) as vs:
        yield vs


@contextmanager
def _chroma(store: LocalStore, embeddings: Embeddings) -> Iterator[VectorStore]:
    import chromadb
    from chromadb.config import Settings
    from langchain_chroma import Chroma

    client = chromadb.PersistentClient(path=str(store.path), settings=Settings(anonymized_telemetry=False))
    yield Chroma(collection_name=store.collection, embedding_function=embeddings, client=client)


@contextmanager
def _qdrant(store: LocalStore, embeddings: Embeddings) -> Iterator[VectorStore]:
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(store.path))
    try:
        if not client.collection_exists(store.collection):
            size = len(embeddings.embed_query("dimension"))
            params = models.VectorParams(size=size, distance=models.Distance.COSINE)
            client.create_collection(store.collection, vectors_config=params)
        yield QdrantVectorStore(client=client, collection_name=store.collection, embedding=embeddings)
    finally:
        client.close()


@contextmanager
def _lancedb(store: LocalStore, embeddings: Embeddings) -> Iterator[VectorStore]:
    from langchain_community.vectorstores import LanceDB

    yield LanceDB(uri=str(store.path), embedding=embeddings, table_name=store.collection, mode="append")


@contextmanager
def _faiss(store: LocalStore, embeddings: Embeddings) -> Iterator[VectorStore]:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    if (store.path / f"{store.collection}.faiss").exists():
        # the folder is the one this command writes: its pickle is the caller's own
        vs = FAISS.load_local(
            str(store.path), embeddings, index_name=store.collection, allow_dangerous_deserialization=True
        )
    else:
        size = len(embeddings.embed_query("dimension"))
        vs = FAISS(embeddings, faiss.IndexFlatL2(size), InMemoryDocstore(), {})
    try:
        yield vs
    finally:
        vs.save_local(str(store.path), index_name=store.collection)


@contextmanager
def _memory(store: LocalStore, embeddings: Embeddings) -> Iterator[VectorStore]:
    path = str(store.path)
    exists = store.path.exists()
    vs = InMemoryVectorStore.load(path, embeddings) if exists else InMemoryVectorStore(embeddings)
    try:
        yield vs
    finally:
        vs.dump(path)
