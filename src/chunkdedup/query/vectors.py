"""Vector retrieval and MMR similarity over the embeddings the semantic tier stored.

Retrieval searches every exact-key group's vector (a cluster's copies each have one, so a filtered
query can match the copy its caller may see); MMR compares candidates by their cluster's leader
vector (``canonicals.id`` is the leader's ``groups.id``). ``embeddings`` is keyed by group id
(``vector``: float32 little-endian, L2-normalised by the embedder; normalised again here, so a dot
product is a cosine). The question is embedded with the index's recorded embedder (meta
``embedder_name``/``embedder_dim``); another one is refused.

Search is exact: normalised float32 dot products over every stored vector, a block of rows at a time,
keeping a running top ``limit`` (``argpartition``). The top ``limit`` are then re-scored in float64
(stored vector and question vector each normalised in float64), so a hit's score is its cosine at
full precision, and ordered by (score desc, id). The matrix stays in memory between queries while
it fits in ``cache_bytes`` (default 1 GiB: 700k 384-d vectors), per open store, checked against
``PRAGMA data_version`` so a commit by an ingest reloads it; a larger index is streamed from
SQLite ``block`` rows at a time on every query, with memory bounded by the block.

Example:
    >>> from chunkdedup import Index
    >>> with Index.open("policies.sqlite") as ix:  # doctest: +SKIP
    ...     vr = VectorRetriever.for_index(ix.store)
    ...     [(s.id, s.score) for s in vr.retrieve("how long is personal data kept", 3)]
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from chunkdedup.embed import Embedder, get_embedder
from chunkdedup.errors import ChunkdedupError, ConfigError
from chunkdedup.query.retrieve import Scored
from chunkdedup.store import Store
from chunkdedup.store import vectors as store_vectors

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def has_embeddings(store: Store) -> bool:
    """Whether the index holds at least one stored vector and the embedder that made it."""
    return store_vectors.has_embeddings(store)


@lru_cache(maxsize=4)
def _load_embedder(name: str) -> Embedder:
    """Models load once per process (sentence-transformers takes seconds)."""
    return get_embedder(name)


def index_embedder(store: Store, requested: Embedder | str | None = None) -> Embedder:
    """The index's recorded embedder; ``requested`` (a name or an embedder) must be that one.

    Raises ConfigError when the index was not ingested with an embedder, or when ``requested`` is
    another model. An index ingested with one whose every chunk was stripped holds no vectors: its
    searches find nothing, as its BM25 searches do.
    """
    recorded = store.settings.embedder()
    if recorded is None:
        raise ConfigError(
            f"index {store.path} has no embeddings: vector or hybrid retrieval needs an index ingested "
            "with --embedder (e.g. chunkdedup ingest DOCS --index FILE --embedder minilm); "
            "or query with --retriever bm25"
        )
    name = recorded.name
    if requested is None:
        return _load_embedder(name)
    if isinstance(requested, str):
        other, other_dim, spec = _spec_name(requested), None, requested.strip()
    else:
        other, other_dim, spec = requested.name, requested.dim, requested.name
    use = f"query with --embedder {name} (or without --embedder)"
    recorded.check(other, other_dim, index=store.path, spec=spec, use=use)
    return requested if not isinstance(requested, str) else _load_embedder(name)


def _spec_name(spec: str) -> str:
    """The name an embedder spec records, without loading a model when that can be avoided."""
    from chunkdedup import embed

    text = spec.strip()
    if text == "hash" or text.startswith("hash:"):
        return get_embedder(text).name
    try:
        return embed._resolve(text)[1]
    except ChunkdedupError:
        if text.removeprefix(embed.ST_PREFIX).casefold() in embed._MINILM_ALIASES:
            # 'minilm' without its package still names the model it records: a mismatch is told as
            # one, not as a missing install (the same model, once compared, fails to load with the hint)
            return embed.MINILM_NAME
        return get_embedder(text).name  # raises the embedder's own error


def read_vectors(store: Store, ids: Sequence[str], dim: int) -> dict[str, F64]:
    """The stored vectors of these group ids, normalised in float64 (ids without one are left out).

    A canonical id is its leader group's id, so canonical ids work too.
    """
    out: dict[str, F64] = {}
    for batch in store_vectors.vectors_of(store, list(dict.fromkeys(ids))):
        if batch.keys:
            m = _raw(batch.vectors, dim).astype(np.float64)
            m = _normalise64(m)
            out.update((key, m[i]) for i, key in enumerate(batch.keys))
    return out


class _Matrix:
    """Every stored vector of a group, normalised, with its id (row order: group id)."""

    __slots__ = ("ids", "matrix", "version")

    def __init__(self, ids: list[str], matrix: F32, version: int) -> None:
        self.ids = ids
        self.matrix = matrix
        self.version = version


_CACHE: weakref.WeakKeyDictionary[Store, _Matrix] = weakref.WeakKeyDictionary()


def _normalise(m: F32) -> F32:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    out: F32 = (m / norms).astype(np.float32, copy=False)
    return out


def _normalise64(m: F64) -> F64:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    out: F64 = m / norms
    return out


def _raw(blobs: Sequence[bytes], dim: int) -> F32:
    m: F32 = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim).astype(np.float32)
    return m


def _as_matrix(blobs: Sequence[bytes], dim: int) -> F32:
    return _normalise(_raw(blobs, dim))


class VectorRetriever:
    """Exact cosine search over the groups' stored vectors (a :class:`Retriever`).

    ``embedder`` must be the index's recorded one (use :meth:`for_index` to get it checked).
    ``block`` rows are scored at a time; the whole matrix is kept in memory (per open store) while
    it takes at most ``cache_bytes``.
    """

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        block: int = 65_536,
        cache_bytes: int = 1 << 30,
    ) -> None:
        if block < 1:
            raise ConfigError(f"block must be >= 1, got {block}")
        self.store = store
        self.embedder = embedder
        self.block = block
        self.cache_bytes = cache_bytes

    @classmethod
    def for_index(
        cls, store: Store, embedder: Embedder | str | None = None, **options: int
    ) -> VectorRetriever:
        """A retriever over ``store`` with its recorded embedder (``embedder`` must match it)."""
        return cls(store, index_embedder(store, embedder), **options)

    # -- the matrix ------------------------------------------------------------------------------
    def _count(self) -> int:
        return store_vectors.embedded_group_count(self.store)

    def _cached(self) -> _Matrix | None:
        version = store_vectors.data_version(self.store)
        hit = _CACHE.get(self.store)
        if hit is not None and hit.version == version and hit.matrix.shape[1] == self.embedder.dim:
            return hit
        if self._count() * self.embedder.dim * 4 > self.cache_bytes:
            return None
        every = store_vectors.group_vectors(self.store)
        built = _Matrix(list(every.keys), _as_matrix(every.vectors, self.embedder.dim), version)
        _CACHE[self.store] = built
        return built

    def _blocks(self) -> Iterator[tuple[list[str], F32]]:
        cached = self._cached()
        if cached is not None:
            for lo in range(0, len(cached.ids), self.block):
                yield cached.ids[lo : lo + self.block], cached.matrix[lo : lo + self.block]
            return
        for batch in store_vectors.group_vector_blocks(self.store, self.block):
            yield list(batch.keys), _as_matrix(batch.vectors, self.embedder.dim)

    def vectors(self, ids: Sequence[str]) -> dict[str, F64]:
        """The stored vectors of these group ids, normalised (ids without one are left out)."""
        return read_vectors(self.store, ids, self.embedder.dim)

    def embed_query(self, text: str) -> F32:
        """The question's vector as the embedder returns it (float32, not re-normalised)."""
        v: F32 = np.asarray(self.embedder.embed_batch([text]), dtype=np.float32).reshape(1, -1)
        if v.shape[1] != self.embedder.dim:
            got, want = v.shape[1], self.embedder.dim
            raise ConfigError(f"embedder {self.embedder.name} returned dim {got}, not {want}")
        return v

    # -- retrieval -------------------------------------------------------------------------------
    def retrieve(self, text: str, limit: int) -> list[Scored]:
        if limit <= 0 or not text.strip():
            return []
        return self.nearest(self.embed_query(text), limit)

    def nearest(self, raw: F32, limit: int) -> list[Scored]:
        """The ``limit`` groups nearest a question vector ``raw`` (shape ``(1, dim)``, as
        :meth:`embed_query` returns it), best first, scored as :meth:`retrieve` scores them."""
        if limit <= 0:
            return []
        q = _normalise(raw)[0]
        best_ids: list[str] = []
        best_scores = np.empty(0, dtype=np.float32)
        for ids, block in self._blocks():
            scores = block @ q
            top = np.argpartition(-scores, limit - 1)[:limit] if len(ids) > limit else np.arange(len(ids))
            best_ids.extend(ids[int(i)] for i in top)
            best_scores = np.concatenate([best_scores, scores[top]])
            if len(best_ids) > 2 * limit:  # keep the running top bounded
                keep = np.argpartition(-best_scores, limit - 1)[:limit]
                best_ids = [best_ids[int(i)] for i in keep]
                best_scores = best_scores[keep]
        if len(best_ids) > limit:
            keep = np.argpartition(-best_scores, limit - 1)[:limit]
            best_ids = [best_ids[int(i)] for i in keep]
        # the float32 pass only chose them: the scores are cosines in float64 of the stored vectors
        return self.rescored(raw, best_ids)[:limit]

    def rescored(self, raw: F32, ids: Sequence[str]) -> list[Scored]:
        """These groups (those still holding a vector) by their float64 cosine to ``raw``, best first."""
        return cosines(raw, self.vectors(ids))

    def among(self, text: str, limit: int, groups: frozenset[str]) -> list[Scored]:
        """The best ``limit`` of ``groups`` (:class:`~chunkdedup.query.retrieve.Screening`): the
        scope's stored vectors only, scored as :meth:`retrieve` scores its choice (float64 cosines)."""
        if limit <= 0 or not text.strip() or not groups:
            return []
        return cosines(self.embed_query(text), self.vectors(sorted(groups)))[:limit]


def cosines(raw: F32, stored: dict[str, F64]) -> list[Scored]:
    """Groups by the float64 cosine of their stored vector (normalised, as :meth:`VectorRetriever.vectors`
    gives them) to the question vector ``raw``, best first (ties by id)."""
    q64 = _normalise64(raw.astype(np.float64))[0]
    ranked = sorted(((i, float(v @ q64)) for i, v in stored.items()), key=lambda p: (-p[1], p[0]))
    return [Scored(i, s) for i, s in ranked]


class EmbeddingSimilarity:
    """MMR similarity: cosine of the candidates' stored vectors, clipped to [0, 1].

    A candidate whose canonical has no stored vector (ingested without the semantic tier) is embedded
    from its text with the index's embedder, loaded only then (``embedder``: a zero-argument factory);
    if that model cannot be loaded here, ``fallback`` (e.g. shingle Jaccard) scores the whole pool.
    """

    def __init__(
        self,
        vectors: Callable[[Sequence[str]], dict[str, F64]],
        embedder: Callable[[], Embedder],
        fallback: Callable[[Sequence[str]], list[list[float]]] | None = None,
    ) -> None:
        self._vectors = vectors
        self._embedder = embedder
        self._fallback = fallback

    def matrix(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[list[float]]:
        keys = list(ids) if ids is not None else []
        stored = self._vectors(keys) if keys else {}
        missing = [i for i in range(len(texts)) if i >= len(keys) or keys[i] not in stored]
        rows: list[F64 | None] = [stored.get(keys[i]) if i < len(keys) else None for i in range(len(texts))]
        if missing:
            texts_missing = [texts[i] for i in missing]
            try:
                model = self._embedder()
            except ChunkdedupError:
                if self._fallback is None:
                    raise
                return self._fallback(texts)  # the model is not installed here: text similarity
            fresh = _normalise64(np.asarray(model.embed_batch(texts_missing), np.float64))
            for j, i in enumerate(missing):
                rows[i] = fresh[j]
        if not texts:
            return []
        m = np.stack([r for r in rows if r is not None])
        sim = np.clip(m @ m.T, 0.0, 1.0)
        np.fill_diagonal(sim, 1.0)
        out: list[list[float]] = sim.tolist()
        return out
