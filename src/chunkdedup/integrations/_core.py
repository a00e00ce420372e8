"""What the three adapters share: opening the index, running ``search``, the metadata of a hit,
and the safety net over framework results (the steps of :mod:`chunkdedup.query.safety`, reused)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chunkdedup.config import QueryConfig
from chunkdedup.errors import ConfigError, MissingExtraError
from chunkdedup.index import Index
from chunkdedup.query.records import Candidate, Citation, Dropped, Hit, VersionPolicy
from chunkdedup.query.run import search
from chunkdedup.query.safety import ShingleJaccard, Similarity, cap_step, dedup_step, mmr_step, version_step
from chunkdedup.query.vectors import EmbeddingSimilarity
from chunkdedup.query.where import Filter, Where

IndexLike = str | Path | Index
#: Metadata keys the retrievers set; LlamaIndex keeps them out of the LLM's and the embedder's view.
HIT_KEYS = ("sources", "rank", "score", "effective_date", "superseded_by", "copies")
#: The safety net's defaults are the query's.
DEFAULTS = QueryConfig()


@contextmanager
def open_index(index: IndexLike) -> Iterator[Index]:
    """The given :class:`Index` as is, or a path opened for this call (SQLite connections belong to
    the thread that opened them, so a path is opened where the query runs)."""
    if isinstance(index, Index):
        yield index
        return
    with Index.open(index) as ix:
        yield ix


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """What a retriever passes to :func:`chunkdedup.search`; ``None`` leaves the config's value."""

    k: int = 5
    where: Where | Filter | None = None
    versions: VersionPolicy | None = None
    safety_net: bool | None = None
    retriever: str | None = None
    config: QueryConfig | None = None

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")


def run_search(
    index: IndexLike, query: str, opts: SearchOptions, *, k: int | None = None, extra: Filter | None = None
) -> tuple[Hit, ...]:
    """The hits of ``search`` for ``query``: the constructor's ``where`` AND the call's filter."""
    flt = _as_filter(opts.where)
    if extra:
        flt = flt & extra
    with open_index(index) as ix:
        result = search(
            ix,
            query,
            k=opts.k if k is None else k,
            where=flt,
            versions=opts.versions,
            safety_net=opts.safety_net,
            config=opts.config,
            retriever=opts.retriever,
        )
    return result.hits


def _as_filter(where: Where | Filter | None) -> Filter:
    return where if isinstance(where, Filter) else Filter.parse(where)


def sources_json(citations: Sequence[Citation]) -> list[dict[str, Any]]:
    """The ``sources`` metadata: each citation as export writes it."""
    return [c.to_json() for c in citations]


def copy_notes(hit: Hit) -> list[str]:
    """One line per cited source whose words are not the hit's text: "DOC p.N: near copy (0.878)
    of the text shown, from DOC p.M; differs in: ..." (its own words are in its ``sources`` entry)."""
    shown = hit.citations[0] if hit.citations else None
    if shown is None:
        return []
    return [f"{c.doc} p.{c.page}: {c.note(shown)}" for c in hit.citations if c.text is not None]


def hit_metadata(hit: Hit, *, with_score: bool = False) -> dict[str, Any]:
    """A hit's metadata: its ``sources``, top-level ``source`` and ``page`` (its first citation: the
    words shown, as the Deduplicators' and synced records carry them), its rank, ``copies``
    (:func:`copy_notes`) when a cited source holds other words, and the version fields when known."""
    meta: dict[str, Any] = {"sources": sources_json(hit.citations), "rank": hit.rank}
    if hit.citations:  # the words shown: for a prompt template's {source} and {page}, as other records
        meta["source"], meta["page"] = hit.citations[0].doc, hit.citations[0].page
    copies = copy_notes(hit)
    if copies:
        meta["copies"] = copies
    if with_score:
        meta["score"] = hit.score
    if hit.effective_date is not None:
        meta["effective_date"] = hit.effective_date
    if hit.superseded_by is not None:
        meta["superseded_by"] = hit.superseded_by
    return meta


@dataclass(frozen=True, slots=True)
class Item:
    """A framework result as the safety net sees it: ``docs`` are what the cap counts per;
    ``version`` its ``(family, effective_date)`` when its metadata carries both (:func:`item_version`)."""

    id: str
    text: str
    score: float | None
    docs: tuple[str, ...]
    vector: Sequence[float] | None = None
    version: tuple[str, str] | None = None


def item_version(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    """A result's ``(family, effective_date)``: its ``family`` and ``effective_date`` metadata, else
    those of chunkdedup's ``sources`` (the newest date among the sources of the first family named);
    ``None`` without both."""
    family, when = meta.get("family"), meta.get("effective_date")
    sources = meta.get("sources")
    cited: list[Mapping[str, Any]] = []
    for source in sources if isinstance(sources, list) else ():
        m = source.get("metadata") if isinstance(source, Mapping) else None
        if isinstance(m, Mapping) and m.get("family") and m.get("effective_date"):
            cited.append(m)
    if not family and cited:
        family = cited[0]["family"]
    if not when and cited:
        when = max((str(m["effective_date"]) for m in cited if m["family"] == family), default=None)
    if not family or not when:
        return None
    return str(family), str(when)


def _sources(raw: Any) -> list[Any]:
    """A ``sources`` value as a list: nested, or the JSON text a store of flat metadata keeps."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return []
    return raw if isinstance(raw, list) else []


def item_docs(meta: Mapping[str, Any], doc_key: str | None, default_keys: Sequence[str]) -> tuple[str, ...]:
    """The documents a result is charged to under the cap.

    With ``doc_key`` set: that metadata value (a list names several documents). Without: the ``doc``
    of each chunkdedup ``sources`` entry when present, else the first of ``default_keys`` present.
    """
    keys = [doc_key] if doc_key is not None else []
    if doc_key is None:
        sources = _sources(meta.get("sources"))
        if sources and all(isinstance(s, Mapping) for s in sources):
            docs = tuple(str(s["doc"]) for s in sources if "doc" in s)
            if docs:
                return docs
        keys = list(default_keys)
    for key in keys:
        value = meta.get(key)
        if isinstance(value, list | tuple):
            return tuple(str(v) for v in value)
        if value is not None:
            return (str(value),)
    return ()


@dataclass(frozen=True, slots=True)
class NetOptions:
    """The safety net's settings: ``k`` results (``None``: as many as pass), at most ``cap_per_doc``
    per document, MMR with ``mmr_lambda`` over ``shingle_words``-word shingles when results carry
    no vectors. Defaults are :class:`~chunkdedup.config.QueryConfig`'s."""

    k: int | None = None
    cap_per_doc: int = DEFAULTS.cap_per_doc
    mmr_lambda: float = DEFAULTS.mmr_lambda
    shingle_words: int = DEFAULTS.shingle_words

    def __post_init__(self) -> None:
        # QueryConfig checks the ranges and says how to fix them
        QueryConfig(
            k=self.k or 1,
            pool=max(self.k or 1, 1),
            cap_per_doc=self.cap_per_doc,
            mmr_lambda=self.mmr_lambda,
            shingle_words=self.shingle_words,
        )


def safety_net(items: Sequence[Item], opts: NetOptions) -> tuple[list[int], list[Dropped]]:
    """Positions of the kept results, best first, and each dropped one with its step and reason.

    A result without a score is scored by rank (``n - position``: the order it came in is its
    relevance). One without documents is charged to itself, so the cap never drops it.
    """
    if not items:
        return [], []
    ids = _unique_ids(items)
    ranked = any(i.score is None for i in items)
    n = len(items)
    cands = [
        Candidate(
            ids[pos],
            float(n - pos) if ranked or item.score is None else float(item.score),
            item.text,
            tuple(_citation(doc, item.version) for doc in (item.docs or (ids[pos],))),
        )
        for pos, item in enumerate(items)
    ]
    k = n if opts.k is None else opts.k
    cands, older = version_step(cands, ShingleJaccard(opts.shingle_words))
    kept, dropped = dedup_step(cands)
    kept, capped = cap_step(kept, opts.cap_per_doc)
    chosen, unpicked = mmr_step(kept, k, opts.mmr_lambda, _similarity(items, ids, opts.shingle_words))
    where = {cid: pos for pos, cid in enumerate(ids)}
    return [where[c.id] for c in chosen], older + dropped + capped + unpicked


def _citation(doc: str, version: tuple[str, str] | None) -> Citation:
    if version is None:
        return Citation(doc, 0, 0, 0, "exact", 1.0)
    return Citation(doc, 0, 0, 0, "exact", 1.0, {"family": version[0]}, effective_date=version[1])


def _unique_ids(items: Sequence[Item]) -> list[str]:
    seen: set[str] = set()
    out = []
    for pos, item in enumerate(items):
        cid = item.id or f"#{pos}"
        if cid in seen:
            cid = f"{cid}#{pos}"
        seen.add(cid)
        out.append(cid)
    return out


def _similarity(items: Sequence[Item], ids: Sequence[str], shingle_words: int) -> Similarity:
    """Cosine of the results' own vectors when every one has a vector, else shingle Jaccard."""
    shingles = ShingleJaccard(shingle_words)
    dims = {len(i.vector) if i.vector is not None else 0 for i in items}
    if len(dims) != 1 or 0 in dims:  # a result without a vector, or vectors of different models
        return shingles
    m = np.asarray([list(i.vector or ()) for i in items], dtype=np.float64)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    m = m / np.where(norms == 0, 1.0, norms)
    vectors = dict(zip(ids, m, strict=True))

    def no_embedder() -> Any:
        raise MissingExtraError("embedding a result without a vector", "embed", "sentence_transformers")

    return EmbeddingSimilarity(lambda keys: {k: vectors[k] for k in keys if k in vectors}, no_embedder)
