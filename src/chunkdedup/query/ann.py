"""Approximate vector retrieval: the index's HNSW folder (:mod:`chunkdedup.store.vectorindex`) chooses
the candidates, their stored vectors score them, and exact search takes over where a graph is weak.

An HNSW graph finds a question's nearest vectors in milliseconds, but approximately, and only a few
hundred well. So :class:`AnnRetriever` asks the graph for ``oversample`` times ``limit`` keys (a
shallow pass; a deep one for ``limit``), maps them to their groups, and re-scores them with the
stored float32 vectors in float64, as exact search does, keeping the best ``limit``; a hit's score
is its true cosine whichever search found it. Keys are mapped, and vectors read (for MMR too), from
the arrays beside the graph while the folder alone answers for the index
(:meth:`~chunkdedup.store.vectorindex.AnnHandle.alone`); while a run is going, through SQLite (a key
of a group removed since the folder's sync is dropped). A deeper pass than ``exact_above`` (filters
dropped most candidates, so the query pipeline asked again, deeper) is exact search over every
vector, so a selective filter finds what exact search finds; a scope the filter names
(:class:`~chunkdedup.query.retrieve.Screening`) is ranked exactly, by its own vectors.

No filter acts here: eligibility is decided on whatever retrieval returns
(:mod:`chunkdedup.query.eligible`), so no ineligible chunk can pass because the graph chose it.

Example:
    >>> with Index.open("big.sqlite") as ix:  # doctest: +SKIP
    ...     ann = vector_retriever(ix.store, ix.vector_handle, QueryConfig(vector_index="ann"))
    ...     ann.retrieve("how long is personal data kept", 10)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from chunkdedup.config import QueryConfig
from chunkdedup.embed import Embedder
from chunkdedup.errors import ConfigError
from chunkdedup.query.retrieve import Scored
from chunkdedup.query.vectors import F32, F64, VectorRetriever, _normalise, _normalise64, cosines
from chunkdedup.store import Store, fulltext, vectorindex

#: Passes deeper than this are exact (a graph's recall falls, and its cost rises, with the depth):
#: hybrid's first two passes (640 and 5,120 asked at pool 40) use the graph, the third (40,000) not.
EXACT_ABOVE = 10_000
#: A pass of fewer than ``OVERSAMPLE_BELOW`` asks the graph for this many times the keys it needs;
#: the stored vectors pick the best. A deeper pass asks for what it needs (its candidate list is
#: already that deep, and each key costs two SQLite reads: ~25 ms per 640 keys at 1M chunks).
OVERSAMPLE = 2
OVERSAMPLE_BELOW = 100


class AnnRetriever(VectorRetriever):
    """Vector retrieval through the HNSW folder (``handle``), exact past ``exact_above``
    (``expansion``: the graph's candidate list, at least the keys asked)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        handle: vectorindex.AnnHandle,
        *,
        exact_above: int = EXACT_ABOVE,
        oversample: int = OVERSAMPLE,
        expansion: int = vectorindex.EXPANSION_SEARCH,
        **options: int,
    ) -> None:
        super().__init__(store, embedder, **options)
        if oversample < 1:
            raise ConfigError(f"oversample must be >= 1, got {oversample}")
        self.handle = handle
        self.exact_above = exact_above
        self.oversample = oversample
        self.expansion = expansion
        #: why the graph failed a search (it is not asked again: every pass is exact), None while it has not
        self.failed: str | None = None

    def nearest(self, raw: F32, limit: int) -> list[Scored]:
        if limit <= 0:
            return []
        if limit > self.exact_above or self.failed is not None:
            return super().nearest(raw, limit)
        q = _normalise(raw)[0]
        asked = limit * self.oversample if limit < OVERSAMPLE_BELOW else limit
        while True:
            try:
                keys = self.handle.search(q, asked, self.expansion)
            except (OSError, ValueError, RuntimeError) as e:  # a graph damaged past what loading checks
                self.failed = f"its graph failed a search: {e}"
                vectorindex.warn_damaged(self.store.path, self.failed)
                return super().nearest(raw, limit)
            ids, stored = self._keyed(keys)
            if len(ids) >= limit or len(keys) < asked:  # enough, or the graph holds no more
                return (self.rescored(raw, ids) if stored is None else cosines(raw, stored))[:limit]
            if asked > self.exact_above:  # most keys are of removed groups: the folder lags
                return super().nearest(raw, limit)
            asked *= 2

    def _keyed(self, keys: vectorindex.I64) -> tuple[list[str], dict[str, F64] | None]:
        """The groups of these graph keys, in order, and their stored vectors normalised: read by the
        keys' rows of the folder's arrays while it alone answers for the index (no search by group
        id); else None (:meth:`rescored` reads them)."""
        if not self.handle.alone(self.store):  # a key of a group no longer present is left out
            present = dict(fulltext.gid_group_ids(self.store, sorted({int(k) for k in keys})))
            return [present[int(k)] for k in keys if int(k) in present], None
        ids, m = self.handle.arrays.keyed(keys)
        return ids, dict(zip(ids, _normalise64(m.astype(np.float64)), strict=True))

    def key_groups(self, gids: Sequence[int]) -> tuple[tuple[int, str], ...]:
        """``(gid, group id)`` of these ``groups.gid`` keys still present (any group's, as
        :func:`~chunkdedup.store.fulltext.gid_group_ids` gives them: the tantivy folder's keys too):
        from the folder's arrays while it alone answers for the index, SQLite for the rest."""
        if not self.handle.alone(self.store):
            return fulltext.gid_group_ids(self.store, gids)
        held = self.handle.arrays.pairs(gids)
        known = {g for g, _ in held}
        rest = [g for g in gids if g not in known]  # a group without a vector
        return (*held, *(fulltext.gid_group_ids(self.store, rest) if rest else ()))

    def vectors(self, ids: Sequence[str]) -> dict[str, F64]:
        """The stored vectors of these group ids, normalised (ids without one left out): from the
        folder's arrays while it alone answers for the index, else from SQLite."""
        if not self.handle.alone(self.store):
            return super().vectors(ids)
        found, m = self.handle.arrays.vectors_of(ids)
        rows = _normalise64(m.astype(np.float64))
        return {i: rows[n] for n, i in enumerate(found)}


def vector_retriever(
    store: Store,
    handle: Callable[[], vectorindex.AnnHandle | None],
    cfg: QueryConfig,
    embedder: Embedder | str | None = None,
) -> VectorRetriever:
    """The vector retriever ``cfg.vector_index`` asks for: exact, or through the index's HNSW folder
    (``handle``: the open folder, or None when it is missing, stale or usearch is not installed).

    ``auto`` uses the folder when it is there, up to date, and holds at least ``cfg.ann_min_vectors``
    vectors (a damaged one is searched exactly, with a warning); ``ann`` uses it or says why it
    cannot (a missing ``[ann]`` extra, a folder not built, stale or damaged) and how to build it.
    """
    exact = VectorRetriever.for_index(store, embedder)
    if cfg.vector_index == "exact":
        return exact
    if cfg.vector_index == "ann":
        vectorindex.import_usearch()  # a missing extra says which to install
    graph = handle()
    if graph is None:
        if cfg.vector_index == "ann":
            _, why = vectorindex.status(store)
            why = why or f"{vectorindex.folder(store.path)} could not be opened"  # changed since: a sync
            raise ConfigError(
                f"vector_index 'ann' needs an up-to-date vector folder, but {why}: build it with "
                f"`chunkdedup vector-index --index {store.path}` "
                "(or query with vector_index 'auto' or 'exact')"
            )
        return exact
    if cfg.vector_index == "auto" and graph.state.count < cfg.ann_min_vectors:
        return exact
    return AnnRetriever(store, exact.embedder, graph)
