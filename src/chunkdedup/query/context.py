"""Context-aware ranking: a chunk's score adds the context score of the documents it cites.

A question names the company and the year; the chunk that answers (a cash-flow table) names neither,
its document's context does (:mod:`chunkdedup.ingestion.context`). Each document's context is searchable on
its own (``contexts_fts``, scored by the IDF of the question terms it holds). For one question,
:class:`DocumentContexts` scores the contexts of the documents **the caller may see** (the filter
is applied before any context is scored), and :class:`ContextRanked` wraps a retriever:

* the base retriever's candidates, plus the best ``docs`` documents' own candidates (the question's
  text searched within those documents' chunks, so a page of the right filing reaches the pool even
  when other filings' pages outscore it on text alone);
* each candidate's score plus ``weight`` times the best context score among its passing documents;
* identity picks the document, content the passage: a question term the document's context holds
  counts ``identity`` times in each passage's text score and once for the document (as much as in
  its passage that holds it most), so a cover or signature page dense in the party names no longer
  outranks the clause the question asks about;
* for a question that asks for an amount, a boost for passages dense in figures (statement tables).

A context term counts by how well it identifies a document (:class:`ContextWeighting`): its rarity
among contexts and the share of the texts holding it that lie in documents whose context holds it
(a company's name is written in its own filings; "Dictionary" or "Information" all over a corpus).

Why a document-level table rather than a context column beside every chunk's text: the context is
written once per document (not once per chunk), a document's context never reaches a chunk through a
copy in another document outside the filter (a group shared by two documents is boosted only by the
documents that pass), and text scores stay the engine's (context adds; only the words a passage's
own document's context holds are discounted, by their own share of the score).
A term found only in the contexts of documents outside the filter neither finds nor ranks anything.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Protocol, runtime_checkable

from chunkdedup.query.eligible import Eligibility
from chunkdedup.query.numbers import asks_amount, number_density
from chunkdedup.query.records import ContextMatch
from chunkdedup.query.retrieve import (
    Figured,
    Retriever,
    Scored,
    TermScored,
    content_terms,
    quote_terms,
    ranked_among,
)
from chunkdedup.store import Store, fulltext, reads

#: a question term held by more contexts than this says nothing about which document: it is skipped
MAX_CONTEXTS = 100_000
#: a term held by more contexts than this is not looked up in the texts for its share (the join grows
#: with the documents' sources); its share is taken as 1 (its IDF among contexts is low already)
SHARE_MAX_CONTEXTS = 1_000


@runtime_checkable
class Scoped(Protocol):
    """A retriever that can also search within given groups only (for the best documents' pass).

    The BM25 retrievers implement it; a retriever without it (vectors) is boosted, not widened.
    """

    def within(self, text: str, limit: int, groups: Sequence[str]) -> Sequence[Scored]: ...


@dataclass(frozen=True, slots=True)
class ContextWeighting:
    """How a question term held by a document's context counts towards its context score.

    Each held term adds its inverse document frequency among contexts, times BM25's length factor
    ``(k1 + 1) / (1 + k1 * (1 - b + b * length / mean length))`` (a context holds each word once, so
    its term frequency is 1; ``b = 0``: every context counts alike, however long), times its
    *specificity* ``share ** specificity``: ``share`` is the part of the texts holding the term that
    lie in documents whose context holds it (``(owned + 1) / (texts + 1)``). A company's name is
    written mostly in its own filings (share near 1); a title word such as "Dictionary" or a file
    name word such as "Information" is written all over the corpus (share near 0), so it says little
    about which document answers. ``specificity = 0`` turns the factor off.
    """

    b: float = 0.0
    k1: float = 1.2
    specificity: float = 0.0


@dataclass(slots=True)
class DocumentContexts:
    """Context scores (higher is better) of the documents that pass one query's filter."""

    store: Store
    eligibility: Eligibility
    parts: bool = True
    weighting: ContextWeighting = field(default_factory=ContextWeighting)
    _scores: dict[str, dict[str, float]] = field(default_factory=dict)
    _held: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict)
    _shares: dict[str, float] = field(default_factory=dict)
    _held_by: dict[str, int] = field(default_factory=dict)
    _mean: float | None = None

    def scores(self, text: str) -> dict[str, float]:
        """``doc -> context score`` for every passing document whose context holds a question term.

        The score sums, over the question terms a context holds, the term's BM25 inverse document
        frequency among contexts in its non-negative form ``ln(1 + (N - n + 0.5) / (n + 0.5))``
        (Lucene's), weighted by :class:`ContextWeighting`. FTS5's own ``bm25()`` clamps the IDF of
        a term in half the documents to zero, which in a corpus of quarterly filings is every quarter
        and every year: the very terms that tell one filing from another. A term held by more than
        :data:`MAX_CONTEXTS` contexts is left out.
        """
        if text not in self._scores:
            self._match(text)
        return self._scores[text]

    def held(self, text: str) -> dict[str, frozenset[str]]:
        """``doc -> the question terms its context holds`` for the documents of :meth:`scores`."""
        if text not in self._held:
            self._match(text)
        return self._held[text]

    def _match(self, text: str) -> None:
        terms = content_terms(text, self.parts)
        w = self.weighting
        by_key: dict[int, float] = {}
        terms_of: dict[int, set[str]] = {}
        if terms and fulltext.has_contexts(self.store):
            total = fulltext.context_count(self.store)
            for term in terms:
                match = quote_terms([term])
                # counted in SQLite first: a term in most contexts of a huge corpus is never fetched
                n = fulltext.context_match_count(self.store, match)
                if not n or n > MAX_CONTEXTS:
                    continue
                self._held_by[term] = n
                idf = math.log(1.0 + (total - n + 0.5) / (n + 0.5))
                if w.specificity > 0:
                    idf *= self.share(term) ** w.specificity
                for key in fulltext.context_matches(self.store, match):
                    by_key[key] = by_key.get(key, 0.0) + idf
                    terms_of.setdefault(key, set()).add(term)
        if by_key and w.b > 0:
            if self._mean is None:
                self._mean = fulltext.context_mean_length(self.store)
            lengths = fulltext.context_lengths(self.store, sorted(by_key))
            mean = self._mean or 1.0
            for key, score in by_key.items():
                norm = 1.0 - w.b + w.b * lengths.get(key, 0) / mean
                by_key[key] = score * (w.k1 + 1.0) / (1.0 + w.k1 * norm)
        rows = fulltext.context_docs(self.store, sorted(by_key))
        self.eligibility.load_docs(r.doc_id for r in rows)
        passing = [r for r in rows if self.eligibility.passes(r.doc_id)]
        self._scores[text] = {r.doc_id: by_key[r.dkey] for r in passing}
        self._held[text] = {r.doc_id: frozenset(terms_of[r.dkey]) for r in passing}

    def share(self, term: str) -> float:
        """The part of the texts holding ``term`` that lie in documents whose context holds it,
        ``(owned + 1) / (texts + 1)`` (:class:`ContextWeighting`); 1 for a term held by more than
        :data:`SHARE_MAX_CONTEXTS` contexts."""
        if self._held_by.get(term, 0) > SHARE_MAX_CONTEXTS:
            return 1.0
        if term not in self._shares:
            spread = fulltext.term_spread(self.store, quote_terms([term]))
            self._shares[term] = (spread.owned + 1) / (spread.texts + 1)
        return self._shares[term]

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

    def texts(self, groups: Sequence[str]) -> dict[str, str]:
        """``group id -> its text``."""
        return {g.id: g.text for g in reads.groups(self.store, groups)}


class ContextRanked:
    """A :class:`Retriever` ranking on text and document context together (see the module doc).

    ``weight`` multiplies the context score before it is added. ``relative`` (for retrievers whose
    scores are not BM25, such as cosines) scales the context score by the best one first, so the
    boost lies in ``[0, weight]``. ``docs``: how many best-matching documents get their own pass.

    ``identity``: how much a question term counts in the text score of a passage whose document's
    context holds it (1: fully; 0: not at all). The context says the passage is in "Apple's Q3 2023
    10-Q"; the words "Apple", "Q3", "2023" in the passage's own text then only tell which of that
    filing's pages names the company most (its cover, its signatures), so they count this much and
    the passage is ranked on the rest of the question. It needs a base that scores a term alone
    (:class:`~chunkdedup.query.retrieve.TermScored`: the BM25 retrievers), as a question's BM25 score
    is the sum of its terms'. ``numbers``: for a question that asks for an amount
    (:func:`~chunkdedup.query.numbers.asks_amount`), this times the passage's share of figures
    (:func:`~chunkdedup.query.numbers.number_density`) is added, so a statement table competes with
    the narrative that repeats the question's words (BM25 scores only: not with ``relative``).
    """

    def __init__(
        self,
        base: Retriever,
        contexts: DocumentContexts,
        weight: float,
        docs: int,
        *,
        relative: bool = False,
        identity: float = 1.0,
        numbers: float = 0.0,
    ) -> None:
        self.base = base
        self.contexts = contexts
        self.weight = weight
        self.docs = docs
        self.relative = relative
        self.identity = identity
        self.numbers = numbers

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        return self._ranked(text, limit)

    def among(self, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
        """The best ``limit`` of ``groups`` on text and context
        (:class:`~chunkdedup.query.retrieve.Screening`): :meth:`retrieve`'s ranking made of the
        scope alone, the base's best of the scope plus the best documents' own candidates (every
        best document passes the filter, so its groups are the scope's). With nothing to boost it
        is the base's best of the scope."""
        priors = self._priors(text)
        if limit <= 0 or not self._boosts(text, priors):
            return ranked_among(self.base, text, limit, groups)
        found = {s.id: s.score for s in ranked_among(self.base, text, limit, groups)}
        best = self.contexts.best(text, self.docs) if priors else []
        if best and isinstance(self.base, Scoped):
            mine = [g for g in self.contexts.groups_of([m.doc for m in best]) if g in groups]
            for s in self.base.within(text, limit, mine):
                found.setdefault(s.id, s.score)
        return _ordered(self._boosted(text, found, priors), limit)

    def _ranked(self, text: str, limit: int) -> list[Scored]:
        """The ranked list of the whole index."""
        base = list(self.base.retrieve(text, limit))
        found = {s.id: s.score for s in base}
        priors = self._priors(text)
        if limit <= 0 or not self._boosts(text, priors):
            # nothing to boost: the base's list itself when it is already what _ordered makes of it
            # (the BM25 retrievers' is), not thousands of records rebuilt and sorted again
            return base if _is_ordered(base, len(found), limit) else _ordered(found, limit)
        best = self.contexts.best(text, self.docs) if priors else []
        if best and isinstance(self.base, Scoped):
            groups = self.contexts.groups_of([m.doc for m in best])
            for s in self.base.within(text, limit, groups):
                found.setdefault(s.id, s.score)
        return _ordered(self._boosted(text, found, priors), limit)

    def _priors(self, text: str) -> dict[str, float]:
        return self.contexts.scores(text) if self.weight > 0 else {}

    def _boosts(self, text: str, priors: dict[str, float]) -> bool:
        return bool(priors) or self._figures(text)

    def _figures(self, text: str) -> bool:
        """Whether the figures' boost applies: a question asking for an amount, on BM25 scores (a
        cosine's scale is not BM25's; the weight was measured on BM25)."""
        return self.numbers > 0 and not self.relative and asks_amount(text)

    def _boosted(self, text: str, found: dict[str, float], priors: dict[str, float]) -> dict[str, float]:
        """Each found group's score, its explained terms discounted, plus the weighted best context
        score of its passing documents (and the figures' boost)."""
        top = max(priors.values(), default=0.0)
        scale = self.weight / top if self.relative and top > 0 else self.weight
        looked = list(found)
        docs_of = self.contexts.group_docs(looked) if priors else {}
        held = self.contexts.held(text) if priors and self.identity < 1 else {}
        shares = self._term_scores(held, looked)
        # The terms a document's context explains count once for the document, as much as they add
        # to its passage that holds them most (the offset), and ``identity`` times in each passage:
        # the passages of a document rank on the rest of the question.
        cuts = {(g, d): self._cut(shares, held.get(d, ()), g) for g in found for d in docs_of.get(g, ())}
        offset: dict[str, float] = {}
        for (_, d), cut in cuts.items():
            offset[d] = max(offset.get(d, 0.0), cut)
        out: dict[str, float] = {}
        for g, score in found.items():
            # the document that ranks the passage best (one without a context match adds nothing)
            out[g] = score + max(
                (scale * priors.get(d, 0.0) - cuts[g, d] + offset.get(d, 0.0) for d in docs_of.get(g, ())),
                default=0.0,
            )
        if self._figures(text):
            # the base's own figures when it keeps them (a tantivy folder), else the texts' read
            known = self.base.figures(looked) if isinstance(self.base, Figured) else {}
            texts = self.contexts.texts([g for g in looked if g not in known])
            for g in out:
                share = known[g] if g in known else number_density(texts.get(g, ""))
                out[g] += self.numbers * share
        return out

    def _cut(
        self, shares: dict[str, dict[str, float]], terms: frozenset[str] | tuple[()], group: str
    ) -> float:
        """How much of a group's text score the terms its document's context explains take away."""
        if not terms or not shares:
            return 0.0
        # a term counts less as much as it identifies the document (a company's name, not the
        # "financial statements" of a running header)
        share = self.contexts.share
        # summed in term order: a float sum over a set would follow the process's string hashing
        cut = sum(share(t) * shares.get(t, {}).get(group, 0.0) for t in sorted(terms))
        return (1.0 - self.identity) * cut

    def _term_scores(self, held: dict[str, frozenset[str]], groups: list[str]) -> dict[str, dict[str, float]]:
        """``term -> group -> the term's own text score`` of the held terms in these groups."""
        if not held or not isinstance(self.base, TermScored):
            return {}
        # words only: a year or a quarter's number in a table's heading is what places its column
        terms = sorted(t for t in set().union(*held.values()) if not any(c.isdigit() for c in t))
        return {
            t: {s.id: s.score for s in self.base.term_within(t, len(groups), groups)} for t in terms
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
