"""The LangChain vector stores ``sync`` knows, each as a :class:`~chunkdedup.integrations._mirror.Driver`.

A record that needs an embedding goes through the store's own ``add_documents`` (its embeddings
object embeds it); a record whose text the store already holds is written with the store's vector
through the store's client. Known: ``InMemoryVectorStore``, Chroma (``langchain-chroma``), Qdrant
(``langchain-qdrant``, ids as UUID5), FAISS and LanceDB (``langchain-community``); any other
``VectorStore`` is written through ``add_documents``/``delete`` with scalar metadata and is not
listed after a sync.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from chunkdedup.errors import ConfigError, SyncError
from chunkdedup.integrations._mirror import Driver, Embed, Put, Stored
from chunkdedup.integrations._records import StoreForm, StoreRecord


class _Generic(Driver):
    """Any LangChain store: ``get_by_ids``, ``add_documents(ids=...)``, ``delete(ids=...)``."""

    def __init__(self, store: VectorStore, form: StoreForm | None = None) -> None:
        self.store = store
        self.form = form or StoreForm(type(store).__name__, "scalars")
        self.takes_vectors = type(self) is not _Generic  # a store only known by add_documents embeds

    def _doc(self, rec: StoreRecord) -> Document:
        return Document(page_content=rec.text, id=rec.id, metadata=rec.metadata(self.form.shape))

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        try:
            docs = self.store.get_by_ids(list(ids))
        except NotImplementedError:
            self.reads = False
            return {}
        return {d.id: Stored(d.page_content, None, frozenset(d.metadata)) for d in docs if d.id is not None}

    def add(self, rows: Sequence[Put]) -> None:
        """Let the store embed and write ``rows``; raise unless it confirms every id."""
        if not rows:
            return
        ids = [r.record.id for r in rows]
        wrote = self.store.add_documents([self._doc(r.record) for r in rows], ids=ids)
        if sorted(wrote) != sorted(ids):
            raise SyncError(
                f"{self.form.name}.add_documents returned other ids than it was given "
                f"({len(wrote)} for {len(ids)}): the batch stays unapplied; check the store upserts by id"
            )

    def put(self, rows: Sequence[Put]) -> None:
        self.add(rows)

    def delete(self, ids: Sequence[str]) -> None:
        if ids and self.store.delete(ids=list(ids)) is False:
            raise SyncError(f"{self.form.name}.delete refused {len(ids)} id(s): the batch stays unapplied")


class _InMemory(_Generic):
    upserts = True

    def __init__(self, store: InMemoryVectorStore) -> None:
        super().__init__(store, StoreForm(type(store).__name__, "nested"))
        self.memory = store

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        rows = self.memory.store
        return {
            i: Stored(rows[i]["text"], rows[i]["vector"], frozenset(rows[i]["metadata"]))
            for i in ids
            if i in rows
        }

    def put(self, rows: Sequence[Put]) -> None:
        self.add([r for r in rows if r.vector is None])
        for r in rows:
            if r.vector is not None:
                rec = r.record
                self.memory.store[rec.id] = {
                    "id": rec.id,
                    "vector": list(r.vector),
                    "text": rec.text,
                    "metadata": rec.metadata("nested"),
                }

    def chunk_ids(self) -> list[str] | None:
        return [row["metadata"].get("chunk_id", cid) for cid, row in self.memory.store.items()]


class _Chroma(_Generic):
    upserts = True

    def __init__(self, store: VectorStore) -> None:
        super().__init__(store, StoreForm(f"{type(store).__name__} (Chroma)", "lists"))
        self.collection: Any = store._collection  # type: ignore[attr-defined]  # the store's own client

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        got = self.collection.get(ids=list(ids), include=["documents", "embeddings", "metadatas"])
        return {
            i: Stored(text or "", list(vec) if vec is not None else None, frozenset(meta or {}))
            for i, text, vec, meta in zip(
                got["ids"], got["documents"], got["embeddings"], got["metadatas"], strict=True
            )
        }

    def put(self, rows: Sequence[Put]) -> None:
        self.add([r for r in rows if r.vector is None])
        kept = [r for r in rows if r.vector is not None]
        if kept:
            self.collection.upsert(
                ids=[r.record.id for r in kept],
                embeddings=[list(r.vector or ()) for r in kept],
                metadatas=[r.record.metadata("lists") for r in kept],
                documents=[r.record.text for r in kept],
            )

    def chunk_ids(self) -> list[str] | None:
        got = self.collection.get(include=["metadatas"])
        return [(m or {}).get("chunk_id", i) for i, m in zip(got["ids"], got["metadatas"], strict=True)]


class _Qdrant(_Generic):
    upserts = True

    def __init__(self, store: VectorStore) -> None:
        super().__init__(store, StoreForm(f"{type(store).__name__} (Qdrant)", "nested", "uuid"))
        self.client: Any = store.client  # type: ignore[attr-defined]
        self.collection = str(store.collection_name)  # type: ignore[attr-defined]
        self.vector_name = str(getattr(store, "vector_name", "") or "")
        self.text_key = str(store.content_payload_key)  # type: ignore[attr-defined]
        self.meta_key = str(store.metadata_payload_key)  # type: ignore[attr-defined]
        # sparse and hybrid modes need the store's sparse vectors too: those records go through add_documents
        mode = getattr(store, "retrieval_mode", "dense")
        self.dense = getattr(mode, "value", mode) == "dense"
        self.takes_vectors = self.dense

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        points = self.client.retrieve(self.collection, list(ids), with_payload=True, with_vectors=True)
        out = {}
        for p in points:
            vec = p.vector.get(self.vector_name) if isinstance(p.vector, dict) else p.vector
            vec = vec if self.dense else None
            payload = p.payload or {}
            out[str(p.id)] = Stored(
                str(payload.get(self.text_key, "")), vec, frozenset(payload.get(self.meta_key) or {})
            )
        return out

    def put(self, rows: Sequence[Put]) -> None:
        from qdrant_client import models

        self.add([r for r in rows if r.vector is None])
        kept = [r for r in rows if r.vector is not None]
        if kept:
            points = [
                models.PointStruct(
                    id=r.record.id,
                    vector={self.vector_name: list(r.vector or ())}
                    if self.vector_name
                    else list(r.vector or ()),
                    payload={self.text_key: r.record.text, self.meta_key: r.record.metadata("nested")},
                )
                for r in kept
            ]
            self.client.upsert(self.collection, points=points, wait=True)

    def chunk_ids(self) -> list[str] | None:
        out: list[str] = []
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.collection, limit=1024, offset=offset, with_payload=[self.meta_key], with_vectors=False
            )
            out += [((p.payload or {}).get(self.meta_key) or {}).get("chunk_id", str(p.id)) for p in points]
            if offset is None:
                return out


class _Faiss(_Generic):
    """FAISS adds only new ids: the old record is deleted first (``upserts`` false)."""

    def __init__(self, store: VectorStore) -> None:
        super().__init__(store, StoreForm(type(store).__name__, "nested"))
        self.faiss: Any = store

    def _positions(self) -> dict[str, int]:
        return {cid: pos for pos, cid in self.faiss.index_to_docstore_id.items()}

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        where = self._positions()
        out = {}
        for i in ids:
            doc = self.faiss.docstore.search(i) if i in where else None
            if isinstance(doc, Document):
                vec = [float(x) for x in self.faiss.index.reconstruct(where[i])]
                out[i] = Stored(doc.page_content, vec, frozenset(doc.metadata))
        return out

    def put(self, rows: Sequence[Put]) -> None:
        self.add([r for r in rows if r.vector is None])
        kept = [r for r in rows if r.vector is not None]
        if kept:
            self.faiss.add_embeddings(
                [(r.record.text, list(r.vector or ())) for r in kept],
                metadatas=[r.record.metadata("nested") for r in kept],
                ids=[r.record.id for r in kept],
            )

    def delete(self, ids: Sequence[str]) -> None:
        held = set(self.faiss.index_to_docstore_id.values())
        super().delete([i for i in ids if i in held])  # FAISS refuses ids it does not hold

    def chunk_ids(self) -> list[str] | None:
        out = []
        for cid in self.faiss.index_to_docstore_id.values():
            doc = self.faiss.docstore.search(cid)
            out.append(doc.metadata.get("chunk_id", cid) if isinstance(doc, Document) else cid)
        if self.faiss.index.ntotal != len(out):  # vectors without a record count as extra records
            out += ["(a vector without a record)"] * max(0, self.faiss.index.ntotal - len(out))
        return out


class _Lance(_Generic):
    """LanceDB: rows are appended to its table directly, whatever the store's ``mode`` (its
    ``add_texts`` in the default ``overwrite`` mode replaces the table with each call); the sink
    embeds with the store's embeddings. The ``metadata`` column is a struct of typed fields (manifest
    values as text); a record with a manifest key the table lacks widens the table first (its rows
    are rewritten with the key empty), so no field is dropped and no write fails on the schema."""

    def __init__(self, store: VectorStore) -> None:
        super().__init__(store, StoreForm(f"{type(store).__name__} (LanceDB)", "lists"))
        self.lance: Any = store
        self.id_key = str(store._id_key)  # type: ignore[attr-defined]
        self.text_key = str(store._text_key)  # type: ignore[attr-defined]
        self.vector_key = str(store._vector_key)  # type: ignore[attr-defined]

    def _where(self, ids: Sequence[str]) -> str:
        quoted = ",".join("'" + i.replace("'", "''") + "'" for i in ids)
        return f"{self.id_key} IN ({quoted})"

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        table = self.lance.get_table()
        if table is None or not ids:
            return {}
        rows = table.search().where(self._where(ids)).limit(len(ids)).to_list()
        return {
            r[self.id_key]: Stored(
                r[self.text_key],
                list(r[self.vector_key]),
                frozenset(k for k, v in (r.get("metadata") or {}).items() if v is not None),
            )
            for r in rows
        }

    def put(self, rows: Sequence[Put]) -> None:
        import pyarrow as pa

        if any(r.vector is None for r in rows):
            raise SyncError(
                f"{self.form.name}: a record reached the store without a vector; nothing was written"
            )
        data = [
            {
                self.vector_key: [float(x) for x in r.vector or ()],
                self.id_key: r.record.id,
                self.text_key: r.record.text,
                "metadata": _lance_meta(r.record),
            }
            for r in rows
        ]
        table = self.lance.get_table()
        held = [] if table is None else [f.name for f in table.schema.field("metadata").type]
        keys = list(dict.fromkeys([*held, *(k for d in data for k in d["metadata"])]))
        if table is not None and keys == held:
            table.add(pa.Table.from_pylist(data, schema=table.schema), mode="append")
            return
        schema = self._schema(keys, len(data[0][self.vector_key]))
        old = [] if table is None else table.to_arrow().to_pylist()  # widened: rewritten once
        self.lance._table = self.lance._connection.create_table(
            self.lance._table_name, data=pa.Table.from_pylist(old + data, schema=schema), mode="overwrite"
        )

    def _schema(self, keys: Sequence[str], dim: int) -> Any:
        import pyarrow as pa

        fixed = {"page": pa.int64(), "docs": pa.list_(pa.string())}
        meta = pa.struct([pa.field(k, fixed.get(k, pa.string())) for k in keys])
        return pa.schema(
            [
                pa.field(self.vector_key, pa.list_(pa.float32(), dim)),
                pa.field(self.id_key, pa.string()),
                pa.field(self.text_key, pa.string()),
                pa.field("metadata", meta),
            ]
        )

    def delete(self, ids: Sequence[str]) -> None:
        table = self.lance.get_table()
        if table is not None and ids:
            table.delete(self._where(ids))

    def chunk_ids(self) -> list[str] | None:
        table = self.lance.get_table()
        if table is None:
            return []
        data = table.to_arrow()
        meta = data.column("metadata").to_pylist()
        return [
            (m or {}).get("chunk_id", i)
            for i, m in zip(data.column(self.id_key).to_pylist(), meta, strict=True)
        ]


def _lance_meta(rec: StoreRecord) -> dict[str, Any]:
    """A record's metadata with each manifest value as text (a struct field has one type)."""
    meta = rec.metadata("lists")
    for key, value in rec.manifest:
        if key in meta and value is not None and not isinstance(value, str):
            meta[key] = json.dumps(value)
    return meta


def driver_for(store: VectorStore) -> Driver:
    """The driver of ``store``, by its class (its module, for the optional packages)."""
    if isinstance(store, InMemoryVectorStore):
        return _InMemory(store)
    module = type(store).__module__
    name = type(store).__name__
    if module.startswith("langchain_chroma"):
        return _Chroma(store)
    if module.startswith("langchain_qdrant") and name == "QdrantVectorStore":
        return _Qdrant(store)
    if module.startswith("langchain_community.vectorstores.faiss"):
        return _Faiss(store)
    if module.startswith("langchain_community.vectorstores.lancedb"):
        return _Lance(store)
    return _Generic(store)


def store_model(store: VectorStore, embedding: Embeddings | None) -> Embeddings | None:
    """The model the store's records are embedded by: ``embedding`` when given, else the store's own."""
    if embedding is not None:
        return embedding
    try:
        return store.embeddings
    except (AttributeError, NotImplementedError):
        return None


def sink_embed(store: VectorStore, driver: Driver, embedding: Embeddings | None) -> Embed | None:
    """What the sink embeds with: ``embedding`` when given (the vectors are written through the
    store's client), and for LanceDB (written directly) else the store's own embeddings; ``None``
    lets the store embed through ``add_documents``."""
    model = embedding
    if isinstance(driver, _Lance):
        model = store_model(store, embedding)
        if model is None:
            raise ConfigError(f"{driver.form.name} has no embeddings object: pass embedding= to sync")
    elif not driver.takes_vectors:
        model = None  # written through add_documents, with the store's own embeddings
    return None if model is None else embed_documents(model)


def embed_documents(model: Embeddings) -> Embed:
    """A LangChain embeddings object as the sink's embedder (one ``embed_documents`` call)."""

    def embed(records: Sequence[StoreRecord]) -> list[list[float]]:
        return model.embed_documents([r.text for r in records])

    return embed
