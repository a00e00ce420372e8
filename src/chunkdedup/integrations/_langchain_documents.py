"""LangChain: in-memory ``Document``\\ s ingested into a chunkdedup index, the deduplicated, cited
ones returned (re-exported by :mod:`chunkdedup.integrations.langchain`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkdedup.errors import MissingExtraError

try:
    from langchain_core.documents import BaseDocumentTransformer, Document
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.langchain", "langchain", "langchain_core") from None

from chunkdedup.config import Config
from chunkdedup.integrations._documents import (
    DedupOptions,
    Given,
    deduplicate,
    record_metadata,
)


class Deduplicator(BaseDocumentTransformer):
    """A document transformer: ingests the Documents a loader gave into a chunkdedup index and
    returns the deduplicated Documents they touch, cross-document copies once.

    A call adds its Documents to the source ``source`` of the index or replaces those of their ids;
    the source's other documents stay (``full=True``: the call is the whole source, the others are
    removed; what ``index(..., cleanup="full")`` expects). Remove documents with :meth:`delete`. A
    Document's document id is its ``id_key`` metadata (default ``source``, as LangChain's loaders
    set it), else its ``id``; Documents with one id are its pages (ordered by ``page`` when each
    has one). ``family``, ``department`` and ``effective_date`` metadata are read as a manifest's.

    Each returned Document's id is the canonical id; its metadata holds ``sources`` (every source
    with export's fields) and ``docs``, as JSON text so that every vector store takes them
    (``flat=False``: as a list of mappings and a list), ``chunk_id``, and ``source``/``page``: the
    place of its owner, the first of the source's documents that cite it, with that document's
    ``family``/``effective_date``. Every Document owned by a document the call touched comes back,
    so ``index(docs, record_manager, vector_store, cleanup="incremental", source_id_key="source")``
    keeps the store equal to the index.

    Example:
        >>> from chunkdedup.integrations.langchain import Deduplicator
        >>> docs = Deduplicator("policies.sqlite").transform_documents(loader.load())  # doctest: +SKIP
        >>> docs[0].metadata["source"], [s["doc"] for s in docs[0].metadata["sources"]]  # doctest: +SKIP
    """

    def __init__(
        self,
        index: str | Path,
        *,
        source: str = "langchain",
        id_key: str | None = "source",
        config: Config | None = None,
        full: bool = False,
        flat: bool = True,
    ) -> None:
        self.options = DedupOptions(index, source, id_key, config, full=full)
        self.flat = flat

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        return self.update(documents).documents

    def update(self, documents: Sequence[Document] = (), *, remove: Sequence[str] = ()) -> Update:
        """Add or replace ``documents``, remove the documents named in ``remove``; returns the
        Documents to index and the sources whose records must go (see :class:`Update`).

        Example:
            >>> up = Deduplicator("policies.sqlite").update(changed, remove=["old.md"])  # doctest: +SKIP
            >>> index(up.documents, manager, store, cleanup="incremental",  # doctest: +SKIP
            ...       source_id_key="source")
            >>> keys = manager.list_keys(group_ids=list(up.emptied))  # doctest: +SKIP
            >>> store.delete(keys); manager.delete_keys(keys)  # doctest: +SKIP
        """
        given = [Given(d.id, d.page_content, d.metadata) for d in documents]
        done = deduplicate(given, self.options, remove=remove)
        docs = [
            Document(
                page_content=o.record.text or "", id=o.record.id, metadata=record_metadata(o, flat=self.flat)
            )
            for o in done.records
        ]
        return Update(docs, done.emptied)

    def delete(self, doc_ids: Sequence[str]) -> Update:
        """Remove documents (by document id) from the source: :meth:`update` with ``remove``."""
        return self.update(remove=doc_ids)


@dataclass(frozen=True, slots=True)
class Update:
    """What a :meth:`Deduplicator.update` gives a record manager: ``documents`` (every chunk owned by
    a document the call touched, its ``source`` the owner) for ``index(..., cleanup="incremental",
    source_id_key="source")``, and ``emptied``: touched sources that own no chunk now (removed, or
    every chunk they hold is owned by another copy), whose records no returned Document cleans up,
    so delete them (``record_manager.list_keys(group_ids=emptied)``)."""

    documents: list[Document]
    emptied: tuple[str, ...]
