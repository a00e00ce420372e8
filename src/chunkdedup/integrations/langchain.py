"""LangChain: a retriever over a chunkdedup index, the safety net as a document compressor, and sync
to any LangChain ``VectorStore`` (needs ``pip install 'chunkdedup[langchain]'``).

Example:
    >>> from chunkdedup.integrations.langchain import Retriever, SafetyNet, sync
    >>> retriever = Retriever(index="policies.sqlite", k=5, where={"department": "privacy"})
    >>> docs = retriever.invoke("how long are logs kept")  # doctest: +SKIP
    >>> docs[0].id, docs[0].metadata["sources"][0]["doc"]  # doctest: +SKIP
    >>> sync("policies.sqlite", InMemoryVectorStore(embeddings))  # doctest: +SKIP

Filters: ``where`` (as :func:`chunkdedup.search`) and, per call, ``invoke(q, where=..., filter=...)``
with a LangChain-style ``filter`` dict, mapped as :mod:`chunkdedup.integrations._filters` documents;
the constructor's ``where`` and the call's filters must all hold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chunkdedup.errors import MissingExtraError

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.vectorstores import VectorStore
    from pydantic import ConfigDict
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.langchain", "langchain", "langchain_core") from None

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
from chunkdedup.integrations._filters import langchain_filter
from chunkdedup.integrations._index_vectors import index_vectors as choose_vectors
from chunkdedup.integrations._langchain_documents import Deduplicator as Deduplicator
from chunkdedup.integrations._langchain_stores import driver_for, embed_documents, sink_embed, store_model
from chunkdedup.integrations._mirror import MirrorSink
from chunkdedup.integrations._sync import DEFAULT_BATCH, SyncReport, run_sync
from chunkdedup.query.records import VersionPolicy
from chunkdedup.query.where import Filter

__all__ = ["Retriever", "SafetyNet", "sync"]


class Retriever(BaseRetriever):
    """Cited, deduplicated hits from a chunkdedup index as LangChain ``Document``\\ s.

    ``Document.id`` is the canonical id; ``metadata`` holds ``sources`` (every cited source that passed
    the filter), ``rank``, ``score`` (the search score, higher is better) and, when known,
    ``effective_date``/``superseded_by``. ``invoke`` takes ``k``, ``where`` and ``filter`` per call.
    A path is opened for each query (in the thread that runs it); an open :class:`Index` is used as
    is, so keep it to the thread that opened it (``ainvoke`` then runs the query inline).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: str | Path | Index
    k: int = 5
    where: Any = None
    versions: VersionPolicy | None = None
    safety_net: bool | None = None
    retriever: str | None = None
    config: QueryConfig | None = None

    def _options(self) -> SearchOptions:
        return SearchOptions(self.k, self.where, self.versions, self.safety_net, self.retriever, self.config)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        where: Any = None,
        filter: dict[str, Any] | None = None,
    ) -> list[Document]:
        extra = Filter.parse(where) & langchain_filter(filter)
        hits = run_search(self.index, query, self._options(), k=k, extra=extra)
        return [
            Document(page_content=h.text, id=h.id, metadata=hit_metadata(h, with_score=True)) for h in hits
        ]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: Any, **kwargs: Any
    ) -> list[Document]:
        if isinstance(self.index, Index):  # its SQLite connection belongs to this thread
            return self._get_relevant_documents(query, run_manager=run_manager.get_sync(), **kwargs)
        return await super()._aget_relevant_documents(query, run_manager=run_manager, **kwargs)


class SafetyNet(BaseDocumentCompressor):
    """dedup_chunks, at most ``cap_per_doc`` results per document, then MMR, over any retriever's
    documents (use it in a ``ContextualCompressionRetriever``); needs no chunkdedup index.

    Documents come best first; LangChain documents carry no score, so rank is relevance, unless
    ``score_key`` names a metadata score. The cap counts per ``doc_key`` (default: chunkdedup's
    ``sources`` when present, else ``source``, the key LangChain's loaders set). MMR compares texts by
    shingle Jaccard. ``k=None`` keeps every document that passes dedup and the cap, in MMR order.
    """

    k: int | None = None
    cap_per_doc: int = DEFAULTS.cap_per_doc
    mmr_lambda: float = DEFAULTS.mmr_lambda
    shingle_words: int = DEFAULTS.shingle_words
    doc_key: str | None = None
    score_key: str | None = None

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        opts = NetOptions(self.k, self.cap_per_doc, self.mmr_lambda, self.shingle_words)
        items = [
            Item(
                d.id or "",
                d.page_content,
                _score(d.metadata.get(self.score_key)) if self.score_key else None,
                item_docs(d.metadata, self.doc_key, ("source",)),
                version=item_version(d.metadata),
            )
            for d in documents
        ]
        kept, _ = safety_net(items, opts)
        return [documents[i] for i in kept]


def _score(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def sync(
    index: IndexLike,
    vector_store: VectorStore,
    since: int | None = None,
    *,
    state: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH,
    full: bool = False,
    verify: bool = True,
    embedding: Embeddings | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    index_vectors: bool | None = None,
) -> SyncReport:
    """Make ``vector_store`` mirror the index: each changed canonical upserted as a store record
    (:mod:`chunkdedup.integrations._records`: top-level ``source``, ``page``, ``docs``, the manifest's
    keys, ``chunk_id``; ids as the store takes them), each deleted one removed, then the store checked.

    A text the store already holds under that id keeps its vector (a metadata update, no embedding);
    the others are embedded by the store's own embeddings in ``add_documents``, or by ``embedding``
    when given. ``since`` defaults to the last run recorded in ``state`` (default
    ``INDEX.sync.json``); a write the store does not confirm stops the sync before that batch is
    recorded, and the next call resends it. A store that does not mirror the index afterwards raises
    :class:`~chunkdedup.errors.SyncError`; ``full=True`` repairs it.
    ``progress("sync", written, 0)`` is called after each batch the store confirmed.

    ``verify=False`` skips listing the store after the sync (for a store too large to list on every
    call; ``full=True`` lists it all the same).

    ``index_vectors``: an index built with an embedder hands a changed text its stored vector instead
    of an embedding: ``None`` when the embeddings' ``model_name`` (``embedding``, else the store's)
    names the index's embedder, ``True`` always, ``False`` never. Vectors of another dimension than
    the store's model gives are refused with :class:`~chunkdedup.errors.SyncError`.

    Example:
        >>> from langchain_core.vectorstores import InMemoryVectorStore  # doctest: +SKIP
        >>> sync("policies.sqlite", InMemoryVectorStore(embeddings)).to_json()  # doctest: +SKIP
    """
    driver = driver_for(vector_store)
    model = store_model(vector_store, embedding)
    with open_index(index) as ix:
        vectors = choose_vectors(
            ix, model, index_vectors, takes_vectors=driver.takes_vectors, store=driver.form.name
        )
        sink = MirrorSink(
            driver,
            sink_embed(vector_store, driver, embedding),
            store_embeds=True,
            index_vectors=vectors,
            probe=None if model is None else embed_documents(model),
        )
        report = run_sync(
            ix, sink, since=since, state=state, batch_size=batch_size, full=full, verify=verify, tick=progress
        )
    return sink.counted(report)
