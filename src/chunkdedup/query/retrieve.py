"""Retrieval: the :class:`Retriever` extension point, BM25 over the store's FTS5 table, and
reciprocal rank fusion for hybrid retrieval once a vector retriever exists.

Query formulation matters for speed: every question word OR-ed makes FTS5 score every chunk holding
"the" or "what". :func:`fts_query` keeps the content words (stop words dropped, each quoted so user
text can never be read as FTS5 syntax) and ORs them; BM25 ranks chunks holding more of them higher.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from chunkdedup.normalize import word_parts
from chunkdedup.store import Store, fulltext, topk

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# A compact English stop list (question words included: they carry no topic). Words only: the
# tokenizer splits "don't" into "don" and "t".
_STOP = """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing don down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you
your yours yourself yourselves s t also may might must shall
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP.split())


@dataclass(frozen=True, slots=True)
class Scored:
    """A retrieved exact-key group id and its score (higher is better, full precision).

    Retrieval works on groups, every distinct text the index holds, not on clusters: a word only a
    near-merged copy holds is still found, and a filtered query scores a cluster by the copies its
    caller may see (:class:`~chunkdedup.query.eligible.Eligibility` maps groups to their clusters).
    """

    id: str
    score: float


@dataclass(frozen=True, slots=True)
class Screen:
    """What a retrieval of the best ``limit`` groups holds of a scope: those groups, in the order
    the retrieval gives them, and how many groups the retrieval returned in all (``depth``)."""

    hits: tuple[Scored, ...]
    depth: int
    #: the scores of the list's groups outside the scope, when the retriever has them without their
    #: ids (a context boost can then place the scope's groups among them); else None
    outside: tuple[float, ...] | None = None


class Retriever(Protocol):
    """The one extension point of retrieval: the best ``limit`` groups for a question, best first.

    Returning fewer than ``limit`` means there are no more; the query pipeline asks again with a
    larger limit when filters leave too few candidates.
    """

    def retrieve(self, text: str, limit: int) -> Sequence[Scored]: ...


@runtime_checkable
class Screening(Protocol):
    """A retriever that can answer for a scope of groups only (a filter that names its documents).

    ``among(text, limit, groups, depths)`` is exactly what ``retrieve(text, limit)`` would give,
    kept to ``groups``, with the length of the whole list as ``depth``; ``depths`` are every limit
    the caller's passes may ask (``limit`` among them). ``groups`` is every group with a source in
    a document the query's filter passes (:meth:`~chunkdedup.query.eligible.Eligibility.named`): a
    retriever may count on a group outside it having none. It only skips the work the groups outside
    the scope cost (reading their ids or their documents, or ranking every match again each pass).
    """

    def retrieve(self, text: str, limit: int) -> Sequence[Scored]: ...

    def among(self, text: str, limit: int, groups: frozenset[str], depths: Sequence[int]) -> Screen: ...


def screened(retriever: Retriever, text: str, limit: int, groups: frozenset[str]) -> Screen:
    """What any retriever's ``retrieve(text, limit)`` holds of a scope, read in full (the fallback)."""
    scored = list(retriever.retrieve(text, limit))
    return Screen(tuple(s for s in scored if s.id in groups), len(scored))


def content_terms(text: str, parts: bool = True) -> list[str]:
    """The question's words, lowercased, stop words dropped, first occurrence kept; a letter-digit
    run is followed by its parts (:func:`~chunkdedup.normalize.word_parts`: ``fy2018`` adds ``2018``)
    unless ``parts`` is False.

    If every word is a stop word, all words are kept (a question of stop words still asks something).

    Example:
        >>> content_terms("What is the refund policy? REFUND within 30 days")
        ['refund', 'policy', '30', 'days']
        >>> content_terms("3M's FY2018 capex in Q3")
        ['3m', '3', 'fy2018', '2018', 'capex', 'q3']
    """
    words = [w.lower() for w in _WORD.findall(text)]
    if parts:
        words = [p for w in words for p in (w, *word_parts(w))]
    unique = list(dict.fromkeys(words))
    content = [w for w in unique if w not in STOP_WORDS]
    return content or unique


def fts_query(text: str, parts: bool = True) -> str | None:
    """An FTS5 MATCH expression for a question: content terms, each quoted, OR-ed; None if empty.

    Quoting makes every term a string literal to FTS5 (``"`` doubled inside), so no user text is
    read as an operator, column filter or prefix.

    Example:
        >>> fts_query('refund "policy" NEAR(x) OR days*')
        '"refund" OR "policy" OR "near" OR "x" OR "days"'
    """
    terms = content_terms(text, parts)
    return quote_terms(terms) if terms else None


class Fts5Retriever:
    """BM25 through ``groups_fts``. SQLite's ``bm25()`` is lower-is-better; the score here is its
    negation, so higher is better and no precision is lost.

    FTS5 scores every row holding any OR-ed term, so the cost grows with the posting lists of the
    question's terms (see benchmarks/README.md for figures and what was tried). When some terms are
    common, :func:`~chunkdedup.store.topk.top_groups` finds the same top ``limit`` (the same groups,
    order and scores) from the rows of the rare terms, or says it cannot and the full query runs.
    ``split`` tunes that path; None turns it off.
    """

    def __init__(
        self, store: Store, *, parts: bool = True, split: topk.Split | None = topk.DEFAULT_SPLIT
    ) -> None:
        self.store = store
        self.parts = parts
        self.split = split
        self._placed: tuple[str, frozenset[str], tuple[int, ...], fulltext.Placed] | None = None

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        terms = content_terms(text, self.parts)
        if not terms or limit <= 0:
            return []
        if self.split is not None and self.store.meta("fts_deferred") is None:
            rows = topk.top_groups(self.store, terms, limit, self.split)
            if rows is not None:
                return [Scored(r.group_id, -float(r.bm25)) for r in rows]
        return self.search(quote_terms(terms), limit)

    def among(self, text: str, limit: int, groups: frozenset[str], depths: Sequence[int]) -> Screen:
        """:meth:`retrieve` kept to ``groups`` (see :class:`Screening`): every match is scored once
        for all the ``depths`` (:func:`~chunkdedup.store.fulltext.place_groups`), not once a pass,
        and only the scope's ids are read."""
        match = fts_query(text, self.parts)
        if match is None or limit <= 0 or limit not in depths or self.store.meta("fts_deferred") is not None:
            return screened(self, text, limit, groups)  # a deferred table may lack groups: read in full
        asked = tuple(depths)
        cached = self._placed
        if cached is None or cached[0] != match or cached[1] is not groups or cached[2] != asked:
            placed = fulltext.place_groups(self.store, match, sorted(groups), asked)
            cached = self._placed = (match, groups, asked, placed)
        placed = cached[3]
        hits = tuple(Scored(r.group_id, -float(r.bm25)) for r in placed.rows if r.reached <= limit)
        return Screen(hits, min(limit, placed.found))

    def search(self, match: str, limit: int, groups: Sequence[str] | None = None) -> list[Scored]:
        """The best ``limit`` groups for an FTS5 MATCH expression (the caller formulates it), among
        ``groups`` only when given (the scores stay those of the whole index)."""
        rows = fulltext.search_groups(self.store, match, limit, groups)
        return [Scored(r.group_id, -float(r.bm25)) for r in rows]

    def within(self, text: str, limit: int, groups: Sequence[str]) -> list[Scored]:
        """The best ``limit`` of these groups for a question (scores as :meth:`retrieve` gives them)."""
        match = fts_query(text, self.parts)
        if match is None or limit <= 0 or not groups:
            return []
        return self.search(match, limit, groups)


class TantivyRetriever:
    """BM25 through the index's tantivy folder (:mod:`chunkdedup.store.textindex`): the question's content
    terms OR-ed, each analysed by the folder's tokenizer, ranked by tantivy's BM25 (top ``limit`` by
    block-max WAND, so common terms do not make it score every document).

    ``handle`` is an open ``tantivy.Index``; it is reloaded on each call, so a sync by an ingest
    is seen by the next question. The score is tantivy's (a float32 widened, never rounded);
    ties are ordered by group id.
    """

    def __init__(self, store: Store, handle: Any, *, parts: bool = True) -> None:
        self.store = store
        self.handle = handle
        self.parts = parts
        self._scope: tuple[frozenset[str], frozenset[int]] | None = None

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        return self._search(text, limit, None)

    def among(self, text: str, limit: int, groups: frozenset[str], depths: Sequence[int]) -> Screen:
        """:meth:`retrieve` kept to ``groups`` (see :class:`Screening`): the same ranking, but ids
        are read only for hits in the scope (a selective filter's 20,000-deep pass read 20,000)."""
        terms = content_terms(text, self.parts)
        if not terms or limit <= 0 or not fulltext.folder_in_step(self.store):
            return screened(self, text, limit, groups)  # keys of removed groups may remain: read in full
        if self._scope is None or self._scope[0] is not groups:
            self._scope = (groups, frozenset(fulltext.group_gids(self.store, sorted(groups))))
        self.handle.reload()
        searcher = self.handle.searcher()
        hits = searcher.search(self._query(terms), limit, count=False).hits
        if not hits:
            return Screen((), 0, ())
        gids = searcher.fast_field_values("gid", [address for _, address in hits])
        scope = self._scope[1]
        mine = [(float(score), g) for (score, _), g in zip(hits, gids, strict=True) if g in scope]
        ids = dict(fulltext.gid_group_ids(self.store, sorted(g for _, g in mine)))
        scored = sorted(
            (Scored(ids[g], score) for score, g in mine if g in ids), key=lambda s: (-s.score, s.id)
        )
        # in step, every key tantivy holds is a group's: the whole list is every hit with a key
        pairs = zip(hits, gids, strict=True)
        outside = tuple(float(score) for (score, _), g in pairs if g is not None and g not in scope)
        return Screen(tuple(scored), sum(1 for g in gids if g is not None), outside)

    def within(self, text: str, limit: int, groups: Sequence[str]) -> list[Scored]:
        """The best ``limit`` of these groups for a question (scores as :meth:`retrieve` gives them)."""
        if not groups:
            return []
        return self._search(text, limit, list(fulltext.group_gids(self.store, groups)))

    def _search(self, text: str, limit: int, gids: list[int] | None) -> list[Scored]:
        terms = content_terms(text, self.parts)
        if not terms or limit <= 0:
            return []
        import tantivy  # present: the caller opened ``handle`` with it

        query = self._query(terms)
        if gids is not None:  # the same scores, among these groups only
            scope = tantivy.Query.const_score_query(
                tantivy.Query.term_set_query(self.handle.schema, "gid", gids), 0.0
            )
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, scope)])
        self.handle.reload()
        searcher = self.handle.searcher()
        hits = searcher.search(query, limit, count=False).hits
        if not hits:
            return []
        gids = searcher.fast_field_values("gid", [address for _, address in hits])
        # keys read in key order: neighbouring rows share pages (20,000 keys: ~90 -> ~57 ms at 1M)
        ids = dict(fulltext.gid_group_ids(self.store, sorted(g for g in gids if g is not None)))
        scored = [Scored(ids[g], float(score)) for (score, _), g in zip(hits, gids, strict=True) if g in ids]
        return sorted(scored, key=lambda s: (-s.score, s.id))


    def _query(self, terms: Sequence[str]) -> Any:
        """The question's terms OR-ed, each quoted: user text is never read as query syntax."""
        import tantivy  # present: the caller opened ``handle`` with it

        should = tantivy.Occur.Should
        return tantivy.Query.boolean_query(
            [(should, self.handle.parse_query('"' + t + '"', ["text"])) for t in terms]
        )


def quote_terms(terms: Sequence[str]) -> str:
    """Terms as an FTS5 MATCH expression: each a quoted string literal, OR-ed."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class ReciprocalRankFusion:
    """Hybrid retrieval: fuse several retrievers by ``sum(1 / (k0 + rank))`` (ranks from 1).

    Each retriever is asked for ``depth * limit`` results; ties break by id.
    """

    def __init__(self, retrievers: Sequence[Retriever], k0: int = 60, depth: int = 2) -> None:
        if not retrievers:
            raise ValueError("ReciprocalRankFusion needs at least one retriever")
        self.retrievers = tuple(retrievers)
        self.k0 = k0
        self.depth = depth

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        fused: dict[str, float] = {}
        for r in self.retrievers:
            for rank, s in enumerate(r.retrieve(text, self.depth * limit), start=1):
                fused[s.id] = fused.get(s.id, 0.0) + 1.0 / (self.k0 + rank)
        ordered = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
        return [Scored(i, s) for i, s in ordered[:limit]]
