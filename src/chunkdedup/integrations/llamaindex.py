"""LlamaIndex: a retriever over a chunkdedup index, the safety net as a node postprocessor, and sync
to any LlamaIndex vector store (needs ``pip install 'chunkdedup[llamaindex]'``).

Example:
    >>> from chunkdedup.integrations.llamaindex import Retriever, SafetyNet, sync
    >>> retriever = Retriever(index="policies.sqlite", k=5, where={"department": "privacy"})
    >>> nodes = retriever.retrieve("how long are logs kept")  # doctest: +SKIP
    >>> nodes[0].node.node_id, nodes[0].score, nodes[0].node.metadata["sources"]  # doctest: +SKIP
    >>> sync("policies.sqlite", SimpleVectorStore(), embed_model=embed_model, docstore=docs)  # doctest: +SKIP

Filters: ``where`` (as :func:`chunkdedup.search`) and ``filters`` (LlamaIndex ``MetadataFilters``:
``EQ``, ``IN``, ``GTE``, ``LTE``, ``AND``, and ``OR`` over one key), both of which must hold; see
:mod:`chunkdedup.integrations._filters`. The hit metadata (``sources``, ``rank``, version fields) is
kept out of what the LLM and the embedder see; the LLM sees ``source`` and ``page`` (the first
citation), so it can name the document it cites.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkdedup.errors import ConfigError, MissingExtraError

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
    from llama_index.core.storage.docstore.types import BaseDocumentStore
    from llama_index.core.vector_stores.types import BasePydanticVectorStore, MetadataFilters
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.llamaindex", "llamaindex", "llama_index.core") from None

from chunkdedup.config import QueryConfig
from chunkdedup.integrations._core import (
    DEFAULTS,
    HIT_KEYS,
    IndexLike,
    Item,
    NetOptions,
    SearchOptions,
    hit_metadata,
    item_docs,
    item_version,
    open_index,
    run_search,
    safety_net,
)
from chunkdedup.integrations._filters import llamaindex_filter
from chunkdedup.integrations._index_vectors import index_vectors as choose_vectors
from chunkdedup.integrations._llamaindex_documents import Deduplicator as Deduplicator
from chunkdedup.integrations._llamaindex_stores import driver_for
from chunkdedup.integrations._mirror import MirrorSink
from chunkdedup.integrations._records import StoreRecord
from chunkdedup.integrations._sync import DEFAULT_BATCH, SyncReport, run_sync
from chunkdedup.query.records import Hit, VersionPolicy
from chunkdedup.query.where import Filter, Where

__all__ = ["Retriever", "SafetyNet", "sync"]


class Retriever(BaseRetriever):
    """Cited, deduplicated hits from a chunkdedup index as ``NodeWithScore``\\ s.

    The node id is the canonical id, the score the search score (higher is better), and
    ``metadata["sources"]`` every cited source that passed the filter. A path is opened for each
    query; an open :class:`~chunkdedup.Index` is used as is (async retrieval runs it inline).
    """

    def __init__(
        self,
        index: IndexLike,
        k: int = 5,
        where: Where | Filter | None = None,
        filters: MetadataFilters | None = None,
        versions: VersionPolicy | None = None,
        safety_net: bool | None = None,
        retriever: str | None = None,
        config: QueryConfig | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self._index = index
        self._opts = SearchOptions(k, where, versions, safety_net, retriever, config)
        self._filter = llamaindex_filter(filters)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = run_search(self._index, query_bundle.query_str, self._opts, extra=self._filter)
        return [NodeWithScore(node=_node(h), score=h.score) for h in hits]


def _node(hit: Hit) -> TextNode:
    return _text_node(hit.id, hit.text, hit_metadata(hit))


def _text_node(node_id: str, text: str, metadata: dict[str, Any]) -> TextNode:
    hidden = [k for k in HIT_KEYS if k in metadata]
    cited = [k for k in ("source", "page") if k in metadata]  # the LLM sees where the words are from
    return TextNode(
        id_=node_id,
        text=text,
        metadata=metadata,
        excluded_embed_metadata_keys=hidden + cited,
        excluded_llm_metadata_keys=hidden,
    )


class SafetyNet(BaseNodePostprocessor):
    """dedup_chunks, at most ``cap_per_doc`` nodes per document, then MMR, over any retriever's nodes;
    needs no chunkdedup index.

    The cap counts per ``doc_key`` (default: chunkdedup's ``sources`` when present, else
    ``file_name``/``file_path`` metadata, else the node's ``ref_doc_id``). MMR uses the nodes'
    embeddings when every node has one, else shingle Jaccard. ``top_n=None`` keeps every node
    that passes dedup and the cap, in MMR order.
    """

    top_n: int | None = Field(default=None, description="nodes to keep; None keeps all that pass")
    cap_per_doc: int = DEFAULTS.cap_per_doc
    mmr_lambda: float = DEFAULTS.mmr_lambda
    shingle_words: int = DEFAULTS.shingle_words
    doc_key: str | None = None

    @classmethod
    def class_name(cls) -> str:
        return "ChunkdedupSafetyNet"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        opts = NetOptions(self.top_n, self.cap_per_doc, self.mmr_lambda, self.shingle_words)
        items = [_item(n, self.doc_key) for n in nodes]
        kept, _ = safety_net(items, opts)
        return [nodes[i] for i in kept]


def _item(n: NodeWithScore, doc_key: str | None) -> Item:
    node = n.node
    docs = item_docs(node.metadata, doc_key, ("file_name", "file_path"))
    if not docs and doc_key is None and node.ref_doc_id:
        docs = (node.ref_doc_id,)
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    return Item(node.node_id, text, n.score, docs, node.embedding, item_version(node.metadata))


def sync(
    index: IndexLike,
    vector_store: BasePydanticVectorStore,
    since: int | None = None,
    *,
    embed_model: BaseEmbedding,
    docstore: BaseDocumentStore | None = None,
    state: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH,
    full: bool = False,
    verify: bool = True,
    index_vectors: bool | None = None,
) -> SyncReport:
    """Make ``vector_store`` mirror the index: each changed canonical upserted as a ``TextNode`` (store
    record metadata: ``source``, ``page``, ``docs``, the manifest's keys, ``chunk_id``; node id the
    canonical id, a UUID5 of it for Qdrant), each deleted one removed, then the store checked.

    A node whose text the store already holds keeps its vector; the others are embedded with
    ``embed_model`` (one call per batch). The old node is deleted before ``add`` (a store without
    ``delete_nodes`` must upsert on ``add``). A store that keeps no text (``stores_text`` false:
    ``SimpleVectorStore``) needs a ``docstore`` to hold it: without one,
    :class:`~chunkdedup.errors.ConfigError` before anything is written. No node gets a
    ``ref_doc_id``: a canonical belongs to every document it cites, so deleting a document here never
    deletes a shared node (the index sends its deletes by id). A store that does not mirror the index
    afterwards raises :class:`~chunkdedup.errors.SyncError`; ``full=True`` repairs it.

    ``since`` defaults to the last run recorded in ``state`` (default ``INDEX.sync.json``).

    ``verify=False`` skips listing the store after the sync (for a store too large to list on every
    call; ``full=True`` lists it all the same).

    ``index_vectors``: an index built with an embedder hands a changed node its stored vector instead
    of an embedding: ``None`` when ``embed_model.model_name`` names the index's embedder, ``True``
    always, ``False`` never. Vectors of another dimension than ``embed_model`` gives are refused with
    :class:`~chunkdedup.errors.SyncError`.

    Example:
        >>> store, docs = SimpleVectorStore(), SimpleDocumentStore()  # doctest: +SKIP
        >>> sync("policies.sqlite", store, embed_model=model, docstore=docs)  # doctest: +SKIP
    """
    if docstore is None and not getattr(vector_store, "stores_text", True):
        raise ConfigError(
            f"{type(vector_store).__name__} keeps no text: pass docstore= (e.g. SimpleDocumentStore(), "
            "persisted with the store) so the chunks' text is kept; nothing was synced"
        )

    def embed(records: Sequence[StoreRecord]) -> list[list[float]]:
        return embed_model.get_text_embedding_batch([r.text for r in records])

    driver = driver_for(vector_store, docstore)
    with open_index(index) as ix:
        vectors = choose_vectors(ix, embed_model, index_vectors, store=driver.form.name)
        sink = MirrorSink(driver, embed, index_vectors=vectors)
        report = run_sync(ix, sink, since=since, state=state, batch_size=batch_size, full=full, verify=verify)
    return sink.counted(report)
