"""A Haystack ``DocumentStore`` as a :class:`~chunkdedup.integrations._mirror.Driver`.

Every Haystack store has the calls ``sync`` needs: ``filter_documents`` (by the ``chunk_id`` meta
field, to see what a store holds, and with no filter to list it), ``write_documents`` with
``OVERWRITE`` and ``delete_documents``. Meta takes the shape the store keeps: nested for the
in-memory and Qdrant stores, lists of scalars (``sources`` as JSON text) for Chroma, scalars with
JSON text for any other store, so no field is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haystack import Document
from haystack.document_stores.types import DocumentStore, DuplicatePolicy

from chunkdedup.errors import SyncError
from chunkdedup.integrations._mirror import Driver, Embed, Put, Stored
from chunkdedup.integrations._records import Shape, StoreForm, StoreRecord

#: The shape of each known store's meta (by the name of its class or a base class); others: ``scalars``.
SHAPES: dict[str, Shape] = {
    "InMemoryDocumentStore": "nested",
    "QdrantDocumentStore": "nested",
    "ChromaDocumentStore": "lists",
}


class DocumentStoreDriver(Driver):
    upserts = True

    def __init__(self, store: DocumentStore) -> None:
        self.store = store
        known = [SHAPES[c.__name__] for c in type(store).__mro__ if c.__name__ in SHAPES]
        self.form = StoreForm(type(store).__name__, known[0] if known else "scalars")

    def document(self, rec: StoreRecord, vector: Sequence[float] | None = None) -> Document:
        return Document(
            id=rec.id,
            content=rec.text,
            meta=rec.metadata(self.form.shape),
            embedding=None if vector is None else list(vector),
        )

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        if not ids:
            return {}
        found = self.store.filter_documents({"field": "meta.chunk_id", "operator": "in", "value": list(ids)})
        return {
            d.id: Stored(d.content or "", d.embedding, frozenset(d.meta)) for d in found if d.id in set(ids)
        }

    def put(self, rows: Sequence[Put]) -> None:
        docs = [self.document(r.record, r.vector) for r in rows]
        wrote = self.store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        if wrote != len(docs):
            raise SyncError(
                f"{self.form.name}.write_documents wrote {wrote} of {len(docs)} documents: "
                "the batch stays unapplied"
            )

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self.store.delete_documents(list(ids))

    def chunk_ids(self) -> list[str] | None:
        return [str(d.meta.get("chunk_id", d.id)) for d in self.store.filter_documents()]


def embed_with(embedder: Any, driver: DocumentStoreDriver) -> Embed:
    """A document embedder component as the sink's embedder (it sees each document with its meta)."""

    def embed(records: Sequence[StoreRecord]) -> list[list[float]]:
        docs = embedder.run(documents=[driver.document(r) for r in records])["documents"]
        if any(d.embedding is None for d in docs):
            raise SyncError(f"{type(embedder).__name__} returned a document without an embedding")
        return [list(d.embedding) for d in docs]

    return embed
