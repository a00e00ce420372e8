"""``search``/``query``: retrieve, filter through sources, apply the version policy, then the safety
net (dedup_chunks, cap per source document, MMR), and return cited hits.

Retrieval is ``bm25`` (FTS5, or tantivy when the index has that engine: see
:mod:`chunkdedup.store.textindex`), ``vector`` (exact cosine over the stored embeddings, the question
embedded with the index's recorded embedder) or ``hybrid`` (both fused by reciprocal rank);
``auto`` is hybrid when the index holds embeddings, else bm25. Vectors are searched exactly, or
through the index's HNSW folder when it is large (:mod:`chunkdedup.query.ann`). MMR compares candidates by the
cosine of their stored vectors when the index has embeddings, else by shingle Jaccard.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, Protocol

from chunkdedup.config import MAX_K, QueryConfig
from chunkdedup.embed import Embedder
from chunkdedup.errors import ConfigError
from chunkdedup.query.aliases import expand, load_aliases
from chunkdedup.query.ann import AnnRetriever, vector_retriever
from chunkdedup.query.context import ContextRanked, ContextWeighting, DocumentContexts
from chunkdedup.query.eligible import Eligibility
from chunkdedup.query.question import check_question
from chunkdedup.query.records import Candidate, Dropped, Hit, QueryResult, VersionPolicy, Words
from chunkdedup.query.retrieve import (
    Fts5Retriever,
    ReciprocalRankFusion,
    Retriever,
    Scored,
    Screening,
    TantivyRetriever,
)
from chunkdedup.query.safety import ShingleJaccard, Similarity, cap_step, dedup_step, mmr_step
from chunkdedup.query.vectors import (
    EmbeddingSimilarity,
    VectorRetriever,
    has_embeddings,
    index_embedder,
    read_vectors,
)
from chunkdedup.query.where import Filter, Where

if TYPE_CHECKING:
    from chunkdedup.store import Store


class Searchable(Protocol):
    """What a search reads of an open index: its store, and its text folder's handle when BM25 runs
    on tantivy (:class:`~chunkdedup.store.index.Index` is one; the query package names no reader
    above it, so the store and the query never import each other both ways)."""

    @property
    def store(self) -> Store: ...

    def text_handle(self) -> Any: ...

    def vector_handle(self) -> Any: ...


RETRIEVERS = ("auto", "bm25", "vector", "hybrid")
#: The first retrieval pass asks for this many times the pool: filters and versions drop candidates,
#: and a second pass repeats the whole FTS5 scoring (its cost barely depends on the LIMIT).
FIRST_PASS_DEPTH = 8
#: Retrieved groups are screened for a source in a passing document at most this many at a time
#: (:meth:`Eligibility.visible`) before the full check, ``pool`` at a time, of those that have one.
SCREEN_BATCH = 500


def search(
    index: Searchable,
    text: str,
    *,
    k: int | None = None,
    where: Where | Filter | None = None,
    versions: VersionPolicy | None = None,
    safety_net: bool | None = None,
    config: QueryConfig | None = None,
    retriever: Retriever | str | None = None,
    similarity: Similarity | None = None,
    embedder: Embedder | str | None = None,
    words: Words | None = None,
) -> QueryResult:
    """Answer ``text`` with up to ``k`` distinct, cited hits, and every dropped candidate with why.

    Keyword arguments override the matching ``config`` fields. ``where`` is a mapping (equality; a
    list value is OR) or a list of ``KEY=VALUE`` / ``KEY>=VALUE`` / ``KEY<=VALUE`` strings
    (equalities on one key OR, bounds AND: :class:`~chunkdedup.query.where.Filter`).
    ``retriever`` is ``auto``/``bm25``/``vector``/``hybrid`` or any :class:`Retriever`. ``embedder``
    (a name or an embedder) must be the index's recorded one; it defaults to that one.
    ``words``: ``source`` shows each hit in the words of the copy that placed it (its first
    citation), ``canonical`` in its canonical's words when that source is cited; either way a cited
    source whose words differ carries them (``Citation.text``, ``Citation.differs``).

    Example:
        >>> with Index.open("policies.sqlite") as ix:  # doctest: +SKIP
        ...     result = search(ix, "how long are logs kept", where={"department": "privacy"})
        ...     [(h.rank, h.citations[0].doc) for h in result.hits]
    """
    if isinstance(index, (str, PathLike)):
        raise ConfigError(
            f"search() takes an open Index, got the path {str(index)!r}: "
            "`with Index.open(path) as ix: search(ix, text)`"
        )
    cfg = config or QueryConfig()
    check_question(text, cfg)
    k = cfg.k if k is None else k
    if isinstance(k, bool) or not hasattr(k, "__index__"):  # an int or a NumPy integer; not 1.5 or "3"
        raise ConfigError(f"k must be a whole number >= 1, got {k!r}")
    k = operator.index(k)
    if not 1 <= k <= MAX_K:
        raise ConfigError(f"k must be in [1, {MAX_K}], got {k}")
    policy = versions or cfg.versions
    if policy not in ("latest", "label", "all"):
        raise ConfigError(f"versions must be latest, label or all, got {policy!r}")
    shown = words or cfg.words
    if shown not in ("source", "canonical"):
        raise ConfigError(f"words must be source or canonical, got {shown!r}")
    pool = max(cfg.pool, k)
    flt = where if isinstance(where, Filter) else Filter.parse(where)
    eligibility = Eligibility(index.store, flt, policy, shown)
    contexts = (
        DocumentContexts(index.store, eligibility, cfg.word_parts, _weighting(cfg))
        if cfg.context_weight > 0 or cfg.number_weight > 0
        else None
    )
    chosen_retriever, vectors = _retriever(index, retriever or cfg.retriever, embedder, contexts, cfg)
    if vectors is None and embedder is not None:  # bm25 with --embedder: still checked, used by MMR
        vectors = VectorRetriever.for_index(index.store, embedder)
    asked = expand(text, load_aliases(cfg.aliases)) if cfg.aliases else text
    found, dropped = _pool(chosen_retriever, eligibility, asked, pool, cfg)
    if not (cfg.safety_net if safety_net is None else safety_net):
        chosen = found[:k]
        why = f"below the top {k} (safety net off)"
        dropped += [Dropped(c.id, c.score, c.text, "rank", why) for c in found[k:]]
    else:
        chosen, more = _safety_net(found, k, cfg, similarity or _similarity(index, vectors, cfg))
        dropped += more
    hits = tuple(c.hit(rank) for rank, c in enumerate(chosen, start=1))
    order = {c.id: i for i, c in enumerate(found)}
    dropped.sort(key=lambda d: (order.get(d.id, -1), -d.score, d.id))
    ranked = contexts is not None and cfg.context_weight > 0
    matched = tuple(contexts.best(asked, cfg.context_docs)) if ranked and contexts is not None else ()
    return QueryResult(text, hits, tuple(dropped), policy, matched)


def query(index: Searchable, text: str, **options: object) -> list[Hit]:
    """The hits of :func:`search`, best first: what ``Index.query`` returns.

    Example:
        >>> Index.open("policies.sqlite").query("data retention", k=3)  # doctest: +SKIP
    """
    return list(search(index, text, **options).hits)  # type: ignore[arg-type]


def _retriever(
    index: Searchable,
    which: Retriever | str,
    embedder: Embedder | str | None,
    contexts: DocumentContexts | None,
    cfg: QueryConfig,
) -> tuple[Retriever, VectorRetriever | None]:
    """The retriever to run, and the vector retriever inside it (None for bm25; exact or approximate
    as ``cfg.vector_index`` says: :func:`~chunkdedup.query.ann.vector_retriever`). With ``contexts``
    each built-in retriever ranks on text and document context (:mod:`chunkdedup.query.context`)."""
    if not isinstance(which, str):
        return which, None
    if which not in RETRIEVERS:
        raise ConfigError(f"retriever must be one of {', '.join(RETRIEVERS)}, got {which!r}")
    def ranked(base: Retriever, relative: bool = False) -> Retriever:
        if contexts is None:
            return base
        return ContextRanked(
            base,
            contexts,
            cfg.context_weight,
            cfg.context_docs,
            relative=relative,
            identity=cfg.identity_weight,
            numbers=cfg.number_weight,
        )

    if which == "auto":
        which = "hybrid" if has_embeddings(index.store) else "bm25"
    if which == "bm25":
        return ranked(bm25_retriever(index, cfg.word_parts)), None
    vectors = vector_retriever(index.store, index.vector_handle, cfg, embedder)
    if which == "vector":
        return ranked(vectors, relative=True), vectors
    # the vector folder's key map answers for tantivy's keys too (the same gids) without SQLite
    keys = vectors.key_groups if isinstance(vectors, AnnRetriever) else None
    text = ranked(bm25_retriever(index, cfg.word_parts, keys))
    return ReciprocalRankFusion([text, ranked(vectors, relative=True)]), vectors


def _weighting(cfg: QueryConfig) -> ContextWeighting:
    return ContextWeighting(cfg.context_b, cfg.context_k1, cfg.context_specificity)


def bm25_retriever(
    index: Searchable,
    parts: bool = True,
    keys: Callable[[Sequence[int]], Sequence[tuple[int, str]]] | None = None,
) -> Retriever:
    """BM25 on the index's text engine: its tantivy folder when it has one, else FTS5 (``parts``:
    letter-digit runs add their parts as terms; ``keys``: the tantivy keys' map to groups)."""
    handle = index.text_handle()
    if handle is not None:
        return TantivyRetriever(index.store, handle, parts=parts, keys=keys)
    return Fts5Retriever(index.store, parts=parts)


def _similarity(index: Searchable, vectors: VectorRetriever | None, cfg: QueryConfig) -> Similarity:
    """Cosine of stored vectors when the index has embeddings, else shingle Jaccard.

    With bm25 retrieval on an embedded index the stored vectors are read without loading the
    embedder; it is loaded only if a candidate has no stored vector.
    """
    store = index.store
    shingles = ShingleJaccard(cfg.shingle_words)
    if vectors is not None:
        model = vectors.embedder
        return EmbeddingSimilarity(vectors.vectors, lambda: model)
    if not has_embeddings(store):
        return shingles
    recorded = store.settings.embedder()
    dim = recorded.dim if recorded is not None else 0
    return EmbeddingSimilarity(
        lambda ids: read_vectors(store, ids, dim), lambda: index_embedder(store), shingles.matrix
    )


def _pool(
    retriever: Retriever, eligibility: Eligibility, text: str, pool: int, cfg: QueryConfig
) -> tuple[list[Candidate], list[Dropped]]:
    """The first ``pool`` eligible candidates in retrieval order, and the version drops before them.

    The first pass retrieves ``FIRST_PASS_DEPTH * pool`` (capped at ``max_candidates``) and checks
    them in order (:func:`_checked`), stopping once the pool is full, so the extra depth costs only
    when filters or versions drop candidates. When even that is not enough, retrieval goes deeper (x8
    each round, up to ``max_candidates``) until the pool is full or the retriever has nothing more.
    A filter naming its documents is a scope the retriever ranks on its own (:class:`Screening`):
    each pass is the scope's best ``limit``, so an outside group never takes a scope's group's place.
    """
    found: list[Candidate] = []
    dropped: list[Dropped] = []
    seen: set[str] = set()
    depths = pass_depths(pool, cfg.max_candidates)
    # a filter naming its documents: only their groups can pass, so only they are ranked (the
    # passes' depths count the scope's groups: no outside group takes a place)
    scope = eligibility.named() if isinstance(retriever, Screening) else None
    for limit in depths:
        if scope is None or not isinstance(retriever, Screening):
            scored = list(retriever.retrieve(text, limit))
        else:
            scored = list(retriever.among(text, limit, scope))
        depth = len(scored)
        fresh = [s for s in scored if s.id not in seen]
        seen.update(s.id for s in fresh)
        for item in _checked(eligibility, fresh, pool):
            if isinstance(item, Candidate):
                found.append(item)
                if len(found) >= pool:
                    break
            else:
                dropped.append(item)
        if len(found) >= pool or depth < limit:
            break
    return found, dropped


def pass_depths(pool: int, max_candidates: int) -> tuple[int, ...]:
    """How deep each retrieval pass of :func:`_pool` goes: ``FIRST_PASS_DEPTH * pool`` (capped at
    ``max_candidates``), then eight times deeper each pass, up to ``max_candidates``.

    Example:
        >>> pass_depths(40, 20_000)
        (320, 2560, 20000)
    """
    depths = [min(FIRST_PASS_DEPTH * pool, max(max_candidates, pool))]
    while depths[-1] < max_candidates:
        depths.append(min(depths[-1] * 8, max_candidates))
    return tuple(depths)


def _checked(eligibility: Eligibility, scored: Sequence[Scored], pool: int) -> Iterator[Candidate | Dropped]:
    """:meth:`Eligibility.apply`'s items for ``scored``, in order, made as they are asked for: the
    groups screened (:meth:`Eligibility.visible`) ``pool`` at a time, twice as many each time up to
    ``SCREEN_BATCH`` (a filter most documents pass fills the pool from the first few), the visible
    ones checked ``pool`` at a time."""
    lo, size = 0, pool
    while lo < len(scored):
        visible = eligibility.visible(scored[lo : lo + size])
        for v in range(0, len(visible), pool):
            yield from eligibility.apply(visible[v : v + pool])
        lo, size = lo + size, min(2 * size, max(SCREEN_BATCH, pool))


def _safety_net(
    found: list[Candidate], k: int, cfg: QueryConfig, similarity: Similarity
) -> tuple[list[Candidate], list[Dropped]]:
    kept, dropped = dedup_step(found)
    kept, capped = cap_step(kept, cfg.cap_per_doc)
    chosen, unpicked = mmr_step(kept, k, cfg.mmr_lambda, similarity)
    return chosen, dropped + capped + unpicked
