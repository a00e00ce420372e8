"""Query with a safety net: retrieval, filters through sources, versions, dedup_chunks, a cap per
source document and MMR, with citations.

    question ──retrieve (Retriever: FTS5 BM25 | stored vectors | both by RRF)──▶ scored ids, best first
             (+ context: each chunk's score adds its passing documents' context score)
             ──filter via sources──▶ ──version policy──▶  (a pool of N eligible candidates)
             ──dedup_chunks──▶ ──cap per source document──▶ ──MMR──▶ k hits with citations

Example:
    >>> from chunkdedup import Index
    >>> from chunkdedup.query import search
    >>> with Index.open("policies.sqlite") as ix:  # doctest: +SKIP
    ...     for hit in search(ix, "data retention", where=["department=privacy"]).hits:
    ...         print(hit.rank, hit.score, hit.citations[0].doc)
"""

from chunkdedup.query.context import ContextRanked, DocumentContexts
from chunkdedup.query.records import Citation, ContextMatch, Dropped, ExportRecord, Hit, QueryResult
from chunkdedup.query.retrieve import (
    Fts5Retriever,
    ReciprocalRankFusion,
    Retriever,
    Scored,
    TantivyRetriever,
    content_terms,
    fts_query,
)
from chunkdedup.query.run import query, search
from chunkdedup.query.safety import ShingleJaccard, Similarity, dedup_chunks
from chunkdedup.query.vectors import EmbeddingSimilarity, VectorRetriever, has_embeddings
from chunkdedup.query.where import Condition, Filter

__all__ = [
    "Citation",
    "Condition",
    "ContextMatch",
    "ContextRanked",
    "DocumentContexts",
    "Dropped",
    "EmbeddingSimilarity",
    "ExportRecord",
    "Filter",
    "Fts5Retriever",
    "Hit",
    "QueryResult",
    "ReciprocalRankFusion",
    "Retriever",
    "Scored",
    "ShingleJaccard",
    "Similarity",
    "TantivyRetriever",
    "VectorRetriever",
    "content_terms",
    "dedup_chunks",
    "fts_query",
    "has_embeddings",
    "query",
    "search",
]
