"""The LlamaIndex vector stores ``sync`` knows, each as a :class:`~chunkdedup.integrations._mirror.Driver`.

Nodes carry their embedding (the sink embeds with the ``embed_model``, or keeps the store's vector for
a text it already holds) and are written with ``add`` after ``delete_nodes`` of their ids. Known:
``SimpleVectorStore`` with a docstore for the text, Chroma (flat metadata: lists as JSON text) and
Qdrant (node ids as UUID5); any other store is written through ``add``/``delete_nodes`` and is not
listed after a sync.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import MetadataMode, TextNode
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from chunkdedup.errors import SyncError
from chunkdedup.integrations._mirror import Driver, Put, Stored
from chunkdedup.integrations._records import Shape, StoreForm, StoreRecord

#: Keys kept out of what the LLM and the embedder see (the LLM sees ``source``, ``page`` and the manifest).
HIDDEN = ("chunk_id", "docs", "sources")


def text_node(rec: StoreRecord, shape: Shape, vector: Sequence[float] | None) -> TextNode:
    """The node of a store record, with its vector when known."""
    meta = rec.metadata(shape)
    hidden = [k for k in HIDDEN if k in meta]
    return TextNode(
        id_=rec.id,
        text=rec.text,
        metadata=meta,
        embedding=None if vector is None else list(vector),
        excluded_embed_metadata_keys=hidden,
        excluded_llm_metadata_keys=hidden,
    )


class _Generic(Driver):
    reads = False

    def __init__(
        self, store: BasePydanticVectorStore, docstore: BaseDocumentStore | None, form: StoreForm
    ) -> None:
        self.store = store
        self.docstore = docstore
        self.form = form

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        return {}

    def put(self, rows: Sequence[Put]) -> None:
        nodes = [text_node(r.record, self.form.shape, r.vector) for r in rows]
        wrote = self.store.add(nodes)
        if sorted(wrote) != sorted(n.node_id for n in nodes):
            raise SyncError(
                f"{self.form.name}.add returned other ids than it was given "
                f"({len(wrote)} for {len(nodes)}): the batch stays unapplied"
            )
        if self.docstore is not None:
            self.docstore.add_documents(nodes, allow_update=True)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with contextlib.suppress(NotImplementedError):  # documented: such a store upserts on add
            self.store.delete_nodes(node_ids=list(ids))
        if self.docstore is not None:
            for cid in ids:
                self.docstore.delete_document(cid, raise_error=False)


class _Simple(_Generic):
    """``SimpleVectorStore``: vectors and metadata in memory, the text in the docstore."""

    reads = True

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        data: Any = self.store.data  # type: ignore[attr-defined]
        out = {}
        for i in ids:
            doc = self.docstore.get_document(i, raise_error=False) if self.docstore is not None else None
            if i in data.embedding_dict and doc is not None:
                text = doc.get_content(metadata_mode=MetadataMode.NONE)
                out[i] = Stored(text, data.embedding_dict[i], frozenset(data.metadata_dict.get(i) or {}))
        return out

    def chunk_ids(self) -> list[str] | None:
        data: Any = self.store.data  # type: ignore[attr-defined]
        return [(data.metadata_dict.get(i) or {}).get("chunk_id", i) for i in data.embedding_dict]


class _Chroma(_Generic):
    reads = True

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        got = self.store.client.get(ids=list(ids), include=["documents", "embeddings", "metadatas"])
        return {
            i: Stored(text or "", None if vec is None else list(vec), frozenset(meta or {}))
            for i, text, vec, meta in zip(
                got["ids"], got["documents"], got["embeddings"], got["metadatas"], strict=True
            )
        }

    def chunk_ids(self) -> list[str] | None:
        got = self.store.client.get(include=["metadatas"])
        return [(m or {}).get("chunk_id", i) for i, m in zip(got["ids"], got["metadatas"], strict=True)]


class _Qdrant(_Generic):
    upserts = True
    reads = True

    def _collection(self) -> str | None:
        name = str(self.store.collection_name)  # type: ignore[attr-defined]
        return name if self.store.client.collection_exists(name) else None

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        name = self._collection()
        if name is None:
            return {}
        out = {}
        for p in self.store.client.retrieve(name, list(ids), with_payload=True, with_vectors=True):
            payload = p.payload or {}
            vec = p.vector
            if isinstance(vec, dict):  # named vectors: the dense one
                vec = next((v for v in vec.values() if isinstance(v, list)), None)
            text = metadata_dict_to_node(payload).get_content(metadata_mode=MetadataMode.NONE)
            out[str(p.id)] = Stored(text, vec, frozenset(_meta(payload)))
        return out

    def chunk_ids(self) -> list[str] | None:
        name = self._collection()
        if name is None:
            return []
        out: list[str] = []
        offset = None
        while True:
            points, offset = self.store.client.scroll(
                name, limit=1024, offset=offset, with_payload=["chunk_id"], with_vectors=False
            )
            out += [str((p.payload or {}).get("chunk_id", p.id)) for p in points]
            if offset is None:
                return out


def _meta(payload: dict[str, Any]) -> set[str]:
    """The node metadata keys of a LlamaIndex Qdrant payload (beside its own ``_node_*`` keys)."""
    return {k for k in payload if not k.startswith("_") and k not in ("doc_id", "document_id", "ref_doc_id")}


def driver_for(store: BasePydanticVectorStore, docstore: BaseDocumentStore | None) -> Driver:
    name = type(store).__name__
    module = type(store).__module__
    if isinstance(store, SimpleVectorStore):
        return _Simple(store, docstore, StoreForm(name, "nested"))
    if module.startswith("llama_index.vector_stores.chroma"):
        return _Chroma(store, docstore, StoreForm(f"{name} (Chroma)", "scalars"))
    if module.startswith("llama_index.vector_stores.qdrant"):
        return _Qdrant(store, docstore, StoreForm(f"{name} (Qdrant)", "nested", "uuid"))
    flat = bool(getattr(store, "flat_metadata", False))
    return _Generic(store, docstore, StoreForm(name, "scalars" if flat else "nested"))
