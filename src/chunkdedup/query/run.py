"""``search``/``query``: retrieve, filter through sources, apply the version policy, then the safety
net (dedup_chunks, cap per source document, MMR), and return cited hits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chunkdedup.config import QueryConfig
from chunkdedup.errors import ConfigError
from chunkdedup.query.eligible import Eligibility
from chunkdedup.query.records import Candidate, Dropped, Hit, QueryResult, VersionPolicy
from chunkdedup.query.retrieve import Fts5Retriever, Retriever
from chunkdedup.query.safety import ShingleJaccard, Similarity, cap_step, dedup_step, mmr_step
from chunkdedup.query.where import Filter, Where

if TYPE_CHECKING:
    from chunkdedup.index import Index


def search(
    index: Index,
    text: str,
    *,
    k: int | None = None,
    where: Where | Filter | None = None,
    versions: VersionPolicy | None = None,
    safety_net: bool | None = None,
    config: QueryConfig | None = None,
    retriever: Retriever | None = None,
    similarity: Similarity | None = None,
) -> QueryResult:
    """Answer ``text`` with up to ``k`` distinct, cited hits, and every dropped candidate with why.

    Keyword arguments override the matching ``config`` fields. ``where`` is a mapping (equality; a
    list value is OR) or a list of ``KEY=VALUE`` / ``KEY>=VALUE`` / ``KEY<=VALUE`` strings.

    Example:
        >>> with Index.open("policies.sqlite") as ix:  # doctest: +SKIP
        ...     result = search(ix, "how long are logs kept", where={"department": "privacy"})
        ...     [(h.rank, h.citations[0].doc) for h in result.hits]
    """
    cfg = config or QueryConfig()
    k = cfg.k if k is None else k
    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    policy = versions or cfg.versions
    if policy not in ("latest", "label", "all"):
        raise ConfigError(f"versions must be latest, label or all, got {policy!r}")
    pool = max(cfg.pool, k)
    flt = where if isinstance(where, Filter) else Filter.parse(where)
    eligibility = Eligibility(index.store.conn, flt, policy)  # type: ignore[arg-type]
    found, dropped = _pool(retriever or Fts5Retriever(index.store.conn), eligibility, text, pool, cfg)
    if not (cfg.safety_net if safety_net is None else safety_net):
        chosen = found[:k]
        why = f"below the top {k} (safety net off)"
        dropped += [Dropped(c.id, c.score, c.text, "rank", why) for c in found[k:]]
    else:
        chosen, more = _safety_net(found, k, cfg, similarity or ShingleJaccard(cfg.shingle_words))
        dropped += more
    hits = tuple(c.hit(rank) for rank, c in enumerate(chosen, start=1))
    order = {c.id: i for i, c in enumerate(found)}
    dropped.sort(key=lambda d: (order.get(d.id, -1), -d.score, d.id))
    return QueryResult(text, hits, tuple(dropped), policy)  # type: ignore[arg-type]


def query(index: Index, text: str, **options: object) -> list[Hit]:
    """The hits of :func:`search`, best first: what ``Index.query`` returns.

    Example:
        >>> Index.open("policies.sqlite").query("data retention", k=3)  # doctest: +SKIP
    """
    return list(search(index, text, **options).hits)  # type: ignore[arg-type]


def _pool(
    retriever: Retriever, eligibility: Eligibility, text: str, pool: int, cfg: QueryConfig
) -> tuple[list[Candidate], list[Dropped]]:
    """The first ``pool`` eligible candidates in retrieval order, and the version drops before them.

    Filters can remove most of what is retrieved, so retrieval goes deeper (x8 each round, up to
    ``max_candidates``) until the pool is full or the retriever has nothing more.
    """
    found: list[Candidate] = []
    dropped: list[Dropped] = []
    seen: set[str] = set()
    limit = pool
    while True:
        scored = list(retriever.retrieve(text, limit))
        fresh = [s for s in scored if s.id not in seen]
        seen.update(s.id for s in fresh)
        for item in eligibility.apply(fresh):
            if len(found) >= pool:
                break
            if isinstance(item, Candidate):
                found.append(item)
            else:
                dropped.append(item)
        if len(found) >= pool or len(scored) < limit or limit >= cfg.max_candidates:
            return found, dropped
        limit = min(limit * 8, cfg.max_candidates)


def _safety_net(
    found: list[Candidate], k: int, cfg: QueryConfig, similarity: Similarity
) -> tuple[list[Candidate], list[Dropped]]:
    kept, dropped = dedup_step(found)
    kept, capped = cap_step(kept, cfg.cap_per_doc)
    chosen, unpicked = mmr_step(kept, k, cfg.mmr_lambda, similarity)
    return chosen, dropped + capped + unpicked
