"""Retrieval: the :class:`Retriever` extension point, BM25 over the store's FTS5 table, and
reciprocal rank fusion for hybrid retrieval once a vector retriever exists.

Query formulation matters for speed: every question word OR-ed makes FTS5 score every chunk holding
"the" or "what". :func:`fts_query` keeps the content words (stop words dropped, each quoted so user
text can never be read as FTS5 syntax) and ORs them; BM25 ranks chunks holding more of them higher.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
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


class Retriever(Protocol):
    """The one extension point of retrieval: the best ``limit`` groups for a question, best first.

    Returning fewer than ``limit`` means there are no more; the query pipeline asks again with a
    larger limit when filters leave too few candidates.
    """

    def retrieve(self, text: str, limit: int) -> Sequence[Scored]: ...


@runtime_checkable
class Screening(Protocol):
    """A retriever that can rank a scope of groups on its own (a filter that names its documents).

    ``among(text, limit, groups)`` is the best ``limit`` of ``groups`` for the question, best first,
    with the scores ``retrieve`` gives them (the whole index's statistics): the ranking of the whole
    index kept to the scope and cut at ``limit`` *within* it. So a group outside the scope neither
    shows nor takes a place: however many outside groups outscore it, a scope's group is found.
    ``groups`` is every group with a source in a document the query's filter passes
    (:meth:`~chunkdedup.query.eligible.Eligibility.named`).
    """

    def retrieve(self, text: str, limit: int) -> Sequence[Scored]: ...

    def among(self, text: str, limit: int, groups: frozenset[str]) -> Sequence[Scored]: ...


@runtime_checkable
class TermScored(Protocol):
    """A BM25 retriever that can score one question term alone within given groups.

    A question's BM25 score is the sum of its terms' own scores, so a term's share of a group's
    score is known: context ranking discounts the terms a document's context explains
    (:mod:`chunkdedup.query.context`).
    """

    def term_within(self, term: str, limit: int, groups: Sequence[str]) -> Sequence[Scored]: ...


@runtime_checkable
class Figured(Protocol):
    """A retriever that knows the share of figures (:func:`~chunkdedup.figures.number_density`) of
    the groups it has returned, without reading their text: context ranking's number boost asks it
    first (:mod:`chunkdedup.query.context`) and reads the text of the rest."""

    def figures(self, groups: Sequence[str]) -> dict[str, float]: ...


def kept(retriever: Retriever, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
    """What ``retriever.retrieve(text, limit)`` holds of a scope: the fallback for a retriever that
    cannot rank a scope on its own (its ``limit`` places count outside groups too)."""
    return [s for s in retriever.retrieve(text, limit) if s.id in groups]


def ranked_among(retriever: Retriever, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
    """The best ``limit`` of a scope: the retriever's own :meth:`Screening.among` when it has one,
    else :func:`kept`."""
    if isinstance(retriever, Screening):
        return list(retriever.among(text, limit, groups))
    return kept(retriever, text, limit, groups)


def content_terms(text: str, parts: bool = True) -> list[str]:
    """The question's words, lowercased, stop words dropped, first occurrence kept; a letter-digit
    run is followed by its parts (:func:`~chunkdedup.normalize.word_parts`: ``fy2018`` adds ``2018``)
    unless ``parts`` is False.

    If every word is a stop word, all words are kept (a question of stop words still asks something).

    The question is NFKC-folded as the dedup keys fold text, so full-width ``ｄａｔａ`` (an East Asian
    keyboard) or a ligature asks for ``data``; a word the fold changes is also asked as written, so a
    text that writes it that way is found too (the search tokenizer does not fold).

    Example:
        >>> content_terms("What is the refund policy? REFUND within 30 days")
        ['refund', 'policy', 'within', '30', 'days']
        >>> content_terms("3M's FY2018 capex in Q3")
        ['3m', '3', 'fy2018', '2018', 'capex', 'q3']
        >>> content_terms("ｄａｔａ ｋｅｐｔ")
        ['data', 'kept', 'ｄａｔａ', 'ｋｅｐｔ']
    """
    words = [w.lower() for w in _WORD.findall(text)]
    if not text.isascii():
        folded = [w.lower() for w in _WORD.findall(unicodedata.normalize("NFKC", text))]
        known = set(folded)
        words = [*folded, *(w for w in words if w not in known)]
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


class _ScopeKeys:
    """The ``groups.gid`` keys of the last scope asked (one query asks for one scope, pass after
    pass: its keys are read once)."""

    def __init__(self) -> None:
        self._last: tuple[frozenset[str], tuple[int, ...]] | None = None

    def gids(self, store: Store, groups: frozenset[str]) -> tuple[int, ...]:
        if self._last is None or self._last[0] is not groups:
            self._last = (groups, tuple(sorted(fulltext.group_gids(store, sorted(groups)))))
        return self._last[1]


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
        self._scope = _ScopeKeys()

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        terms = content_terms(text, self.parts)
        if not terms or limit <= 0:
            return []
        if self.split is not None and self.store.meta("fts_deferred") is None:
            rows = topk.top_groups(self.store, terms, limit, self.split)
            if rows is not None:
                return [Scored(r.group_id, -float(r.bm25)) for r in rows]
        return self.search(quote_terms(terms), limit)

    def among(self, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
        """The best ``limit`` of ``groups`` (:class:`Screening`): :meth:`within`, the scope's keys
        read once for every pass of a query."""
        return self._best(text, limit, groups, lambda: self._scope.gids(self.store, groups))

    def search(self, match: str, limit: int, groups: Sequence[str] | None = None) -> list[Scored]:
        """The best ``limit`` groups for an FTS5 MATCH expression (the caller formulates it), among
        ``groups`` only when given (the scores stay those of the whole index)."""
        rows = fulltext.search_groups(self.store, match, limit, groups)
        return [Scored(r.group_id, -float(r.bm25)) for r in rows]

    def within(self, text: str, limit: int, groups: Sequence[str]) -> list[Scored]:
        """The best ``limit`` of these groups for a question (scores as :meth:`retrieve` gives them):
        the question's matches walked and only these groups' rows scored
        (:func:`~chunkdedup.store.fulltext.search_gids`)."""
        return self._best(text, limit, groups, lambda: sorted(fulltext.group_gids(self.store, groups)))

    def term_within(self, term: str, limit: int, groups: Sequence[str]) -> list[Scored]:
        """One question term's own BM25 score in each of these groups that holds it, best first
        (:class:`TermScored`)."""
        if limit <= 0 or not groups:
            return []
        match = quote_terms([term])
        if self.store.meta("fts_deferred") is not None:
            return self.search(match, limit, sorted(groups))
        rows = fulltext.search_gids(self.store, match, limit, sorted(fulltext.group_gids(self.store, groups)))
        return [Scored(r.group_id, -float(r.bm25)) for r in rows]

    def _best(
        self, text: str, limit: int, groups: Collection[str], gids: Callable[[], Sequence[int]]
    ) -> list[Scored]:
        match = fts_query(text, self.parts)
        if match is None or limit <= 0 or not groups:
            return []
        if self.store.meta("fts_deferred") is not None:  # the table may lack rows: joined by id
            return self.search(match, limit, sorted(groups))
        rows = fulltext.search_gids(self.store, match, limit, gids())
        return [Scored(r.group_id, -float(r.bm25)) for r in rows]


#: The first search of :meth:`TantivyRetriever._search_terms` reads ``limit / TIE_MARGIN`` hits past
#: ``limit``: at 1M texts, 7 of 50 sec-10q questions tie across the 640th place (by 1-2 places), and
#: the margin costs ~0.1 ms where a second search costs 10 ms
TIE_MARGIN = 16


class TantivyRetriever:
    """BM25 through the index's tantivy folder (:mod:`chunkdedup.store.textindex`): the question's content
    terms OR-ed, each analysed by the folder's tokenizer, ranked by tantivy's BM25 (top ``limit`` by
    block-max WAND, so common terms do not make it score every document).

    ``handle`` is an open ``tantivy.Index``; it is reloaded on each call, so a sync by an ingest
    is seen by the next question. The score is tantivy's (a float32 widened, never rounded);
    ties are ordered by group id. ``keys`` maps the folder's ``gid`` keys to the groups still
    present (default: :func:`~chunkdedup.store.fulltext.gid_group_ids`; hybrid search passes the
    vector folder's map, :meth:`~chunkdedup.query.ann.AnnRetriever.key_groups`, which gives the same).
    """

    def __init__(
        self,
        store: Store,
        handle: Any,
        *,
        parts: bool = True,
        keys: Callable[[Sequence[int]], Sequence[tuple[int, str]]] | None = None,
    ) -> None:
        self.store = store
        self.handle = handle
        self.parts = parts
        self._scope = _ScopeKeys()
        self._keys = keys or (lambda gids: fulltext.gid_group_ids(store, gids))
        self._figures: dict[str, float] = {}  # the groups returned so far (a retriever is one question's)
        self._has_figures: bool | None = None  # the folder keeps them (one built before does not)

    def figures(self, groups: Sequence[str]) -> dict[str, float]:
        """The share of figures of those of ``groups`` this retriever has returned, as the folder
        keeps it (:class:`Figured`); none from a folder built without it."""
        return {g: self._figures[g] for g in groups if g in self._figures}

    def retrieve(self, text: str, limit: int) -> list[Scored]:
        return self._search(text, limit, None)

    def among(self, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
        """The best ``limit`` of ``groups`` (:class:`Screening`): the question ANDed with the scope's
        ``gid`` keys as a zero-score term set, so the scores stay the question's."""
        if not groups:
            return []
        return self._search(text, limit, self._scope.gids(self.store, groups))

    def within(self, text: str, limit: int, groups: Sequence[str]) -> list[Scored]:
        """The best ``limit`` of these groups for a question (scores as :meth:`retrieve` gives them)."""
        if not groups:
            return []
        return self._search(text, limit, list(fulltext.group_gids(self.store, groups)))

    def term_within(self, term: str, limit: int, groups: Sequence[str]) -> list[Scored]:
        """One question term's own BM25 score in each of these groups that holds it, best first
        (:class:`TermScored`)."""
        if not groups:
            return []
        return self._search_terms([term], limit, list(fulltext.group_gids(self.store, groups)))

    def _search(self, text: str, limit: int, gids: Sequence[int] | None) -> list[Scored]:
        return self._search_terms(content_terms(text, self.parts), limit, gids)

    def _search_terms(self, terms: Sequence[str], limit: int, gids: Sequence[int] | None) -> list[Scored]:
        """The best ``limit`` by (-score, id), among ``gids`` when given. tantivy breaks a tie by
        its own document order, so a tie across the ``limit``-th place is read in full: hits are
        asked for past ``limit`` (twice as many each time) until the score after the last place
        differs from the last place's. The first search already reads :data:`TIE_MARGIN` past it
        (a tie spans a few places; another search of a 1M-text folder costs as much as the first)."""
        if not terms or limit <= 0:
            return []
        import tantivy  # present: the caller opened ``handle`` with it

        query = self._query(terms)
        if gids is not None:  # the same scores, among these groups only
            if not gids:
                return []
            scope = tantivy.Query.const_score_query(
                tantivy.Query.term_set_query(self.handle.schema, "gid", list(gids)), 0.0
            )
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, scope)])
        self.handle.reload()
        searcher = self.handle.searcher()
        asked = limit + 1 + max(limit // TIE_MARGIN, 1)
        while True:
            hits = searcher.search(query, asked, count=False).hits
            if len(hits) < asked or hits[-1][0] != hits[limit - 1][0]:
                break
            asked *= 2
        if len(hits) > limit:  # the hits past the last place's score are not needed
            last = hits[limit - 1][0]
            hits = hits[:limit] + [h for h in hits[limit:] if h[0] == last]
        if not hits:
            return []
        keys = searcher.fast_field_values("gid", [address for _, address in hits])
        # keys read in key order: neighbouring rows share pages (20,000 keys: ~90 -> ~57 ms at 1M)
        ids = dict(self._keys(sorted(g for g in keys if g is not None)))
        scored = [Scored(ids[g], float(score)) for (score, _), g in zip(hits, keys, strict=True) if g in ids]
        self._keep_figures(searcher, [address for _, address in hits], [ids.get(g) for g in keys])
        return sorted(scored, key=lambda s: (-s.score, s.id))[:limit]

    def _keep_figures(self, searcher: Any, addresses: list[Any], ids: list[str | None]) -> None:
        """Keep the share of figures of the groups these hits name, when the folder has it."""
        if self._has_figures is False:
            return
        try:
            values = searcher.fast_field_values("figures", addresses)
        except ValueError:  # a folder built before the field: the next ingest rebuilds it
            self._has_figures = False
            return
        self._has_figures = True
        for group, value in zip(ids, values, strict=True):
            if group is not None and value is not None:
                self._figures[group] = float(value)

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
        return self._fused([r.retrieve(text, self.depth * limit) for r in self.retrievers], limit)

    def among(self, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
        """The best ``limit`` of ``groups`` (:class:`Screening`): each retriever's best of the scope,
        fused by their ranks within it (so no outside group shifts a rank)."""
        lists = [ranked_among(r, text, self.depth * limit, groups) for r in self.retrievers]
        return self._fused(lists, limit)

    def _fused(self, lists: Sequence[Sequence[Scored]], limit: int) -> list[Scored]:
        fused: dict[str, float] = {}
        for scored in lists:
            for rank, s in enumerate(scored, start=1):
                fused[s.id] = fused.get(s.id, 0.0) + 1.0 / (self.k0 + rank)
        ordered = sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
        return [Scored(i, s) for i, s in ordered[:limit]]
