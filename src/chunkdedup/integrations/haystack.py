"""Haystack (2.x/3.x): a retriever component over a chunkdedup index, the safety net as a component
over ``list[Document]``, and sync to any Haystack ``DocumentStore`` (needs
``pip install 'chunkdedup[haystack]'``).

Example:
    >>> from chunkdedup.integrations.haystack import Retriever, SafetyNet, sync
    >>> retriever = Retriever(index="policies.sqlite", k=5)
    >>> out = retriever.run("how long are logs kept", filters={"field": "meta.department",
    ...                     "operator": "==", "value": "privacy"})  # doctest: +SKIP
    >>> out["documents"][0].id, out["documents"][0].meta["sources"]  # doctest: +SKIP
    >>> sync("policies.sqlite", InMemoryDocumentStore())  # doctest: +SKIP

Filters: ``where`` (as :func:`chunkdedup.search`) and ``run(filters=...)`` in Haystack's filter
syntax (``==``, ``in``, ``>=``, ``<=`` on ``meta.KEY``; ``AND``; ``OR`` over one key), both of which
must hold; see :mod:`chunkdedup.integrations._filters`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from chunkdedup.errors import ConfigError, MissingExtraError

try:
    from haystack import Document, component, default_from_dict, default_to_dict
    from haystack.document_stores.types import DocumentStore
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.haystack", "haystack", "haystack") from None

from chunkdedup.config import QueryConfig
from chunkdedup.index import Index
from chunkdedup.integrations._core import (
    DEFAULTS,
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
from chunkdedup.integrations._filters import haystack_filter
from chunkdedup.integrations._haystack_documents import Deduplicator as Deduplicator
from chunkdedup.integrations._haystack_stores import DocumentStoreDriver, embed_with
from chunkdedup.integrations._index_vectors import index_vectors as choose_vectors
from chunkdedup.integrations._mirror import MirrorSink
from chunkdedup.integrations._sync import DEFAULT_BATCH, SyncReport, run_sync
from chunkdedup.query.records import VersionPolicy
from chunkdedup.query.where import Filter, Where

__all__ = ["Retriever", "SafetyNet", "sync"]


@component
class Retriever:
    """Cited, deduplicated hits from a chunkdedup index as Haystack ``Document``\\ s.

    ``Document.id`` is the canonical id, ``score`` the search score (higher is better), and
    ``meta["sources"]`` every cited source that passed the filter. A path is opened for each run;
    an open :class:`~chunkdedup.Index` is used as is.
    """

    def __init__(
        self,
        index: IndexLike,
        k: int = 5,
        where: Where | Filter | None = None,
        versions: VersionPolicy | None = None,
        safety_net: bool | None = None,
        retriever: str | None = None,
        config: QueryConfig | None = None,
    ) -> None:
        self.index = index
        self.options = SearchOptions(k, where, versions, safety_net, retriever, config)

    def to_dict(self) -> dict[str, Any]:
        """For ``Pipeline.dumps``: needs an index path and a ``where`` mapping or condition list."""
        o = self.options
        if isinstance(self.index, Index) or isinstance(o.where, Filter):
            raise ConfigError(
                "a Retriever over an open Index or with a Filter object cannot be serialized: "
                "pass the index path and where as a mapping or a list of KEY=VALUE strings"
            )
        where = o.where if o.where is None or isinstance(o.where, Mapping) else [str(c) for c in o.where]
        config = None if o.config is None else asdict(o.config)
        return default_to_dict(
            self,
            index=str(self.index),
            k=o.k,
            where=where,
            versions=o.versions,
            safety_net=o.safety_net,
            retriever=o.retriever,
            config=config,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Retriever:
        params = data.get("init_parameters", {})
        if params.get("config") is not None:
            params["config"] = QueryConfig(**params["config"])
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        hits = run_search(self.index, query, self.options, k=top_k, extra=haystack_filter(filters))
        docs = [Document(id=h.id, content=h.text, meta=hit_metadata(h), score=h.score) for h in hits]
        return {"documents": docs}


@component
class SafetyNet:
    """dedup_chunks, at most ``cap_per_doc`` documents per source document, then MMR, over any
    retriever's documents; needs no chunkdedup index.

    The cap counts per ``doc_key`` (default: chunkdedup's ``sources`` when present, else
    ``meta["file_path"]``). MMR uses the documents' embeddings when every one has one, else
    shingle Jaccard. ``top_k=None`` keeps every document that passes dedup and the cap, in MMR order.
    """

    def __init__(
        self,
        top_k: int | None = None,
        cap_per_doc: int = DEFAULTS.cap_per_doc,
        mmr_lambda: float = DEFAULTS.mmr_lambda,
        shingle_words: int = DEFAULTS.shingle_words,
        doc_key: str | None = None,
    ) -> None:
        self.options = NetOptions(top_k, cap_per_doc, mmr_lambda, shingle_words)
        self.doc_key = doc_key

    def to_dict(self) -> dict[str, Any]:
        o = self.options
        return default_to_dict(
            self,
            top_k=o.k,
            cap_per_doc=o.cap_per_doc,
            mmr_lambda=o.mmr_lambda,
            shingle_words=o.shingle_words,
            doc_key=self.doc_key,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SafetyNet:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], top_k: int | None = None) -> dict[str, list[Document]]:
        opts = self.options
        if top_k is not None:
            opts = NetOptions(top_k, opts.cap_per_doc, opts.mmr_lambda, opts.shingle_words)
        items = [
            Item(
                d.id,
                d.content or "",
                d.score,
                item_docs(d.meta, self.doc_key, ("file_path",)),
                d.embedding,
                item_version(d.meta),
            )
            for d in documents
        ]
        kept, _ = safety_net(items, opts)
        return {"documents": [documents[i] for i in kept]}


def sync(
    index: IndexLike,
    document_store: DocumentStore,
    since: int | None = None,
    *,
    embedder: Any = None,
    state: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH,
    full: bool = False,
    verify: bool = True,
    index_vectors: bool | None = None,
) -> SyncReport:
    """Make ``document_store`` mirror the index: each changed canonical written as a ``Document``
    (id the canonical id; meta: ``source``, ``page``, ``docs``, the manifest's keys, ``chunk_id`` and
    ``sources``, as the store keeps them) with ``write_documents(policy=OVERWRITE)``, each deleted one
    removed with ``delete_documents``, then the store checked.

    ``embedder`` (a document embedder component, e.g. ``SentenceTransformersDocumentEmbedder``) embeds
    the documents whose text the store does not already hold; the others keep the store's embedding
    (a store that does not return embeddings, like Qdrant without ``return_embedding=True``, has them
    embedded again). A store that drops a meta field, or does not mirror the index afterwards, raises
    :class:`~chunkdedup.errors.SyncError`; ``full=True`` repairs the latter.

    ``since`` defaults to the last run recorded in ``state`` (default ``INDEX.sync.json``).

    ``verify=False`` skips listing the store after the sync (for a store too large to list on every
    call; ``full=True`` lists it all the same).

    ``index_vectors``: an index built with an embedder hands a changed document its stored vector
    instead of an embedding: ``None`` when the ``embedder``'s ``model`` (Sentence Transformers
    embedders) names the index's embedder, ``True`` always (also without an ``embedder``), ``False``
    never. Vectors of another dimension than the ``embedder`` gives are refused with
    :class:`~chunkdedup.errors.SyncError`.

    Example:
        >>> from haystack.document_stores.in_memory import InMemoryDocumentStore  # doctest: +SKIP
        >>> sync("policies.sqlite", InMemoryDocumentStore()).to_json()  # doctest: +SKIP
    """
    driver = DocumentStoreDriver(document_store)
    with open_index(index) as ix:
        vectors = choose_vectors(ix, embedder, index_vectors, store=driver.form.name)
        embed = None if embedder is None else embed_with(embedder, driver)
        sink = MirrorSink(driver, embed, index_vectors=vectors)
        report = run_sync(ix, sink, since=since, state=state, batch_size=batch_size, full=full, verify=verify)
    return sink.counted(report)
