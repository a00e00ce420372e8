"""LangChain: in-memory ``Document``\\ s ingested into a chunkdedup index, the deduplicated, cited
ones returned (re-exported by :mod:`chunkdedup.integrations.langchain`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkdedup.errors import MissingExtraError

try:
    from langchain_core.documents import BaseDocumentTransformer, Document
except ImportError:
    raise MissingExtraError("chunkdedup.integrations.langchain", "langchain", "langchain_core") from None

from chunkdedup.config import Config
from chunkdedup.integrations._documents import DedupOptions, Given, deduplicate, record_metadata


class Deduplicator(BaseDocumentTransformer):
    """A document transformer: ingests the Documents a loader gave into a chunkdedup index and
    returns one Document per canonical chunk they hold, cross-document copies once.

    A call's Documents are the source ``source`` of the index: the next call ingests only the new
    and changed ones, and removes those it no longer gives (one ``source`` per collection). A
    Document's document id is its ``id_key`` metadata (default ``source``, as LangChain's loaders
    set it), else its ``id``; Documents with one id are its pages (ordered by ``page`` when each
    has one). ``family``, ``department`` and ``effective_date`` metadata are read as a manifest's.

    Each returned Document's id is the canonical id; its metadata holds ``sources`` (every source
    with export's fields), ``chunk_id``, ``docs``, and ``source``/``page`` (its first place among the
    given Documents) with that document's ``family``/``effective_date``.

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
    ) -> None:
        self.options = DedupOptions(index, source, id_key, config or Config())

    def transform_documents(self, documents: Sequence[Document], **kwargs: Any) -> Sequence[Document]:
        given = [Given(d.id, d.page_content, d.metadata) for d in documents]
        done = deduplicate(given, self.options)
        return [
            Document(page_content=r.text or "", id=r.id, metadata=record_metadata(r, done.doc_ids))
            for r in done.records
        ]
