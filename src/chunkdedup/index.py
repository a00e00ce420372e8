"""The door a caller opens: :class:`Index`, every read of an index and the query over it.

It stands above the store (whose :class:`~chunkdedup.store.index.IndexReader` holds the reads) and the
query package (which reads an index through its ``Searchable`` protocol), so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkdedup.store import Store
from chunkdedup.store.evaluation import EvaluationReads, FinishedRun
from chunkdedup.store.index import IndexReader
from chunkdedup.store.review import REVIEWER_CHARS, Decision, Kind, Order, Override, PairRow, ReviewQueue
from chunkdedup.store.rows import (
    CanonicalRow,
    DocumentFacets,
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
from chunkdedup.store.views import DOCUMENT_SORTS
from chunkdedup.types import Hit

#: The rows an index is read as (:mod:`chunkdedup.store.rows`), the review queue's and the evaluation's
#: reads, named here for the faces that read them.
__all__ = [
    "DOCUMENT_SORTS", "REVIEWER_CHARS", "CanonicalRow", "Decision", "DocumentFacets", "DocumentRow",
    "EvaluationReads", "FamilyCounts",
    "FileProblem", "FinishedRun", "Index", "IndexStats", "KeySummary", "Kind", "MergeRow", "Order",
    "Override", "PageText", "PairRow", "RunRow", "Slice", "SlowTextEngine", "SourceRow", "StatusCount",
    "StrippedRow", "TextEngine", "VariantRow", "keep_decision", "keep_decisions",
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


def keep_decision(
    path: str | Path, a: str, b: str, decision: Decision | None, by: str | None = None
) -> None:
    """Keep a reviewer's ``decision`` on the pair of groups ``a``, ``b`` in the index at ``path``
    (``None``: drop the one kept), with the time and ``by`` (the reviewer's name, where given); the
    next ingest re-decides both groups' clusters. Raises ``ValueError`` with a one-line reason,
    storing nothing, when the decision is not ``merge`` or ``apart``, the ids are not two distinct
    groups of the index or ``by`` is not a short line of text.

    Example:
        >>> keep_decision("policies.sqlite", "3f2a...", "9c1b...", "apart")  # doctest: +SKIP
    """
    keep_decisions(path, [(a, b)], decision, by)


def keep_decisions(
    path: str | Path, pairs: Sequence[tuple[str, str]], decision: Decision | None, by: str | None = None
) -> None:
    """:func:`keep_decision` for every pair of ``pairs`` (a bulk decision from the review queue), in one
    transaction: all kept, or none (``ValueError`` naming the first pair refused)."""
    with Store.open(path) as store:
        queue = ReviewQueue(store)
        if decision is None:
            queue.forget_all(pairs)
        else:
            queue.decide_all(pairs, decision, by)
