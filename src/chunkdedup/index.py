"""The door a caller opens: :class:`Index`, every read of an index and the query over it.

It stands above the store (whose :class:`~chunkdedup.store.index.IndexReader` holds the reads) and the
query package (which reads an index through its ``Searchable`` protocol), so neither imports the other.
"""

from __future__ import annotations

from typing import Any

from chunkdedup.store.index import IndexReader
from chunkdedup.store.rows import (
    CanonicalRow,
    DocumentRow,
    FamilyCounts,
    FileProblem,
    IndexStats,
    KeySummary,
    MergeRow,
    PageText,
    RunRow,
    Slice,
    SlowTextEngine,
    SourceRow,
    StatusCount,
    StrippedRow,
    TextEngine,
    VariantRow,
)
from chunkdedup.types import Hit

#: The rows an index is read as (:mod:`chunkdedup.store.rows`), named here for the faces that read them.
__all__ = [
    "CanonicalRow", "DocumentRow", "FamilyCounts", "FileProblem", "Index", "IndexStats", "KeySummary",
    "MergeRow", "PageText", "RunRow", "Slice", "SlowTextEngine", "SourceRow", "StatusCount", "StrippedRow",
    "TextEngine", "VariantRow",
]


class Index(IndexReader):
    """An open index: stats, canonicals, merges, variants, boilerplate, export records, and the query.

    Example:
        >>> with Index.open("policies.sqlite") as ix:  # doctest: +SKIP
        ...     print(ix.stats().canonical_chunks, ix.query("how long are logs kept", k=3))
    """

    def query(self, text: str, **options: Any) -> list[Hit]:
        """Answer ``text`` with cited hits; options as :func:`chunkdedup.query.search` (k, where, ...).

        Example:
            >>> Index.open("policies.sqlite").query("how long are logs kept", k=3)  # doctest: +SKIP
        """
        from chunkdedup.query import query  # on first use: the query stack loads numpy

        return query(self, text, **options)
