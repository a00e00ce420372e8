"""Adapters for LangChain, LlamaIndex and Haystack, each an optional extra imported only when used.

Each of :mod:`~chunkdedup.integrations.langchain`, :mod:`~chunkdedup.integrations.llamaindex` and
:mod:`~chunkdedup.integrations.haystack` has the same three parts:

- ``Retriever(index=PATH_OR_INDEX, k=5, where=...)``: runs :func:`chunkdedup.search` (filters,
  versions, safety net); the result's id is the canonical id, its score the search score, and its
  metadata holds ``sources`` (every cited source: doc, page, start, end, relation, similarity, metadata).
- ``SafetyNet``: dedup_chunks, a cap per document and MMR over *any* retriever's results, no index needed.
- ``sync(index, store, since=RUN)``: applies ``export --changes-since`` to the framework's vector store by
  canonical id, recording the last applied run so an interrupted sync resumes.

Importing one without its framework raises :class:`~chunkdedup.errors.MissingExtraError` naming the
``pip install``.
"""
