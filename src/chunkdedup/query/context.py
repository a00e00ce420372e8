"""Context-aware ranking: a chunk's score adds the context score of the documents it cites.

A question names the company and the year; the chunk that answers (a cash-flow table) names neither,
its document's context does (:mod:`chunkdedup.context`). Each document's context is searchable on
its own (``contexts_fts``, scored by the IDF of the question terms it holds). For one question,
:class:`DocumentContexts` scores the contexts of the documents **the caller may see** (the filter
is applied before any context is scored), and :class:`ContextRanked` wraps a retriever:

* the base retriever's candidates, plus the best ``docs`` documents' own candidates (the question's
  text searched within those documents' chunks, so a page of the right filing reaches the pool even
  when other filings' pages outscore it on text alone);
* each candidate's score plus ``weight`` times the best context score among its passing documents.

Why a document-level table rather than a context column beside every chunk's text: the context is
written once per document (not once per chunk), a document's context never reaches a chunk through a
copy in another document outside the filter (a group shared by two documents is boosted only by the
documents that pass), and text scores stay exactly what they were (context adds, it never rescales).
A term found only in the contexts of documents outside the filter neither finds nor ranks anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Protocol, runtime_checkable

from chunkdedup.query.eligible import Eligibility
from chunkdedup.query.records import ContextMatch
from chunkdedup.query.retrieve import Retriever, Scored, content_terms, quote_terms, ranked_among
from chunkdedup.store import Store, fulltext

#: a question term held by more contexts than this says nothing about which document: it is skipped
MAX_CONTEXTS = 100_000


@runtime_checkable
class Scoped(Protocol):
    """A retriever that can also search within given groups only (for the best documents' pass).

    The BM25 retrievers implement it; a retriever without it (vectors) is boosted, not widened.
    """

    def within(self, text: str, limit: int, groups: Sequence[str]) -> Sequence[Scored]: ...


@dataclass(slots=True)
class DocumentContexts:
    """Context scores (IDF sums, higher is better) of the documents that pass one query's filter."""

    store: Store
    eligibility: Eligibility
    parts: bool = True
    _scores: dict[str, dict[str, float]] = field(default_factory=dict)

    def scores(self, text: str) -> dict[str, float]:
        """``doc -> context score`` for every passing document whose context holds a question term.

        The score sums, over the question terms a context holds, the term's BM25 inverse document
        frequency among contexts in its non-negative form ``ln(1 + (N - n + 0.5) / (n + 0.5))``
        (Lucene's). A context holds each word once, so term frequency and length carry nothing;
        and FTS5's own ``bm25()`` clamps the IDF of a term in half the documents to zero, which in a
        corpus of quarterly filings is every quarter and every year: the very terms that tell one
        filing from another. A term held by more than :data:`MAX_CONTEXTS` contexts is left out.
        """
        if text in self._scores:
            return self._scores[text]
        terms = content_terms(text, self.parts)
        by_key: dict[int, float] = {}
        if terms and fulltext.has_contexts(self.store):
            total = fulltext.context_count(self.store)
            for term in terms:
                match = quote_terms([term])
                # counted in SQLite first: a term in most contexts of a huge corpus is never fetched
                n = fulltext.context_match_count(self.store, match)
                if not n or n > MAX_CONTEXTS:
                    continue
                idf = math.log(1.0 + (total - n + 0.5) / (n + 0.5))
                for key in fulltext.context_matches(self.store, match):
                    by_key[key] = by_key.get(key, 0.0) + idf
        found: dict[str, float] = {}
        rows = fulltext.context_docs(self.store, sorted(by_key))
        self.eligibility.load_docs(r.doc_id for r in rows)
        found.update((r.doc_id, by_key[r.dkey]) for r in rows if self.eligibility.passes(r.doc_id))
        self._scores[text] = found
        return found

    def best(self, text: str, n: int) -> list[ContextMatch]:
        """The ``n`` best-matching passing documents, best first (ties by document id)."""
        ranked = sorted(self.scores(text).items(), key=lambda kv: (-kv[1], kv[0]))
        return [ContextMatch(d, s) for d, s in ranked[:n]]

    def group_docs(self, groups: Sequence[str]) -> dict[str, set[str]]:
        """``group id -> its passing documents`` (through the group's own sources)."""
        out: dict[str, set[str]] = {}
        rows = fulltext.group_source_docs(self.store, groups)
        self.eligibility.load_docs(r.doc_id for r in rows)
        for r in rows:
            if self.eligibility.passes(r.doc_id):
                out.setdefault(r.group_id, set()).add(r.doc_id)
        return out

    def groups_of(self, docs: Sequence[str]) -> list[str]:
        """The exact-key groups holding a source in any of these documents, sorted."""
        return sorted(fulltext.groups_of_docs(self.store, docs))


class ContextRanked:
    """A :class:`Retriever` ranking on text and document context together (see the module doc).

    ``weight`` multiplies the context score before it is added. ``relative`` (for retrievers whose
    scores are not BM25, such as cosines) scales the context score by the best one first, so the
    boost lies in ``[0, weight]``. ``docs``: how many best-matching documents get their own pass.
    """

    def __init__(
        self,
        base: Retriever,
        contexts: DocumentContexts,
        weight: float,
        docs: int,
        *,
        relative: bool = False,
    ) -> None:
        self.base = base
        self.contexts = contexts
        self.weight = weight
        self.docs = docs
        self.relative = relative

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        return self._ranked(text, limit)

    def among(self, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
        """The best ``limit`` of ``groups`` on text and context
        (:class:`~chunkdedup.query.retrieve.Screening`): :meth:`retrieve`'s ranking made of the
        scope alone, the base's best of the scope plus the best documents' own candidates (every
        best document passes the filter, so its groups are the scope's). With nothing to boost it
        is the base's best of the scope."""
        priors = self.contexts.scores(text)
        if self.weight <= 0 or limit <= 0 or not priors:
            return ranked_among(self.base, text, limit, groups)
        found = {s.id: s.score for s in ranked_among(self.base, text, limit, groups)}
        best = self.contexts.best(text, self.docs)
        if best and isinstance(self.base, Scoped):
            mine = [g for g in self.contexts.groups_of([m.doc for m in best]) if g in groups]
            for s in self.base.within(text, limit, mine):
                found.setdefault(s.id, s.score)
        return _ordered(self._boosted(found, list(found), priors), limit)

    def _ranked(self, text: str, limit: int) -> list[Scored]:
        """The ranked list of the whole index."""
        base = list(self.base.retrieve(text, limit))
        found = {s.id: s.score for s in base}
        priors = self.contexts.scores(text)
        if not priors or self.weight <= 0 or limit <= 0:
            # nothing to boost: the base's list itself when it is already what _ordered makes of it
            # (the BM25 retrievers' is), not thousands of records rebuilt and sorted again
            return base if _is_ordered(base, len(found), limit) else _ordered(found, limit)
        best = self.contexts.best(text, self.docs)
        if best and isinstance(self.base, Scoped):
            groups = self.contexts.groups_of([m.doc for m in best])
            for s in self.base.within(text, limit, groups):
                found.setdefault(s.id, s.score)
        return _ordered(self._boosted(found, list(found), priors), limit)

    def _boosted(
        self, found: dict[str, float], looked: list[str], priors: dict[str, float]
    ) -> dict[str, float]:
        """Each found group's score plus the weighted best context score of its passing documents,
        looked up for the ``looked`` groups (the others have none)."""
        top = max(priors.values())
        scale = self.weight / top if self.relative and top > 0 else self.weight
        docs_of = self.contexts.group_docs(looked)
        return {
            g: score + scale * max((priors.get(d, 0.0) for d in docs_of.get(g, ())), default=0.0)
            for g, score in found.items()
        }


def _is_ordered(scored: Sequence[Scored], distinct: int, limit: int) -> bool:
    """Whether ``scored`` holds distinct ids, at most ``limit``, in ``(-score, id)`` order."""
    if len(scored) != distinct or len(scored) > limit:
        return False
    keys = [(-s.score, s.id) for s in scored]
    return all(a < b for a, b in pairwise(keys))


def _ordered(scores: dict[str, float], limit: int) -> list[Scored]:
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [Scored(i, s) for i, s in ranked[:limit]]
