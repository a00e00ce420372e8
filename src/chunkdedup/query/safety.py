"""The safety net, in order: ``dedup_chunks``, a cap per source document, then MMR; over another
retriever's results, :func:`version_step` first.

Each step takes candidates ranked best first and returns (kept, dropped-with-reason), so
``--explain`` can say which step dropped what and why.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Protocol, TypeVar

from chunkdedup.dedup.settings import NUMPY_CHARS
from chunkdedup.normalize import exact_key
from chunkdedup.query.records import Candidate, Dropped

T = TypeVar("T")


def dedup_chunks(chunks: list[str]) -> list[str]:
    """Drop repeated chunks: key = lowercase, whitespace runs collapsed to one space, ends stripped.

    The first occurrence of each key is kept; the original strings come back in the original order.

    Example:
        >>> dedup_chunks(["Refunds  in 30 days.", "refunds in 30 days. ", "Other."])
        ['Refunds  in 30 days.', 'Other.']
        >>> dedup_chunks([])
        []
    """
    seen: set[str] = set()
    out: list[str] = []
    for chunk in chunks:
        key = _dedup_key(chunk)
        if key not in seen:
            seen.add(key)
            out.append(chunk)
    return out


def _dedup_key(text: str) -> str:
    # str.split() splits on the characters \s matches (str.isspace): runs collapsed, ends stripped
    return " ".join(text.lower().split())


def dedup_step(cands: Sequence[Candidate]) -> tuple[list[Candidate], list[Dropped]]:
    """``dedup_chunks``' rule over ranked candidates: the best-ranked copy wins."""
    first: dict[str, Candidate] = {}
    kept: list[Candidate] = []
    dropped: list[Dropped] = []
    for c in cands:
        key = _dedup_key(c.text)
        if key in first:
            reason = f"same text as {first[key].id} (lowercased, whitespace collapsed), which ranks higher"
            dropped.append(Dropped(c.id, c.score, c.text, "dedup_chunks", reason))
        else:
            first[key] = c
            kept.append(c)
    return kept, dropped


#: Shingle Jaccard from which two results of one family are versions of one passage: a passage and
#: its edited wording (site-policy's Sponsors payout terms, 2025 and 2026, cut by another splitter:
#: 0.59; unrelated passages of one policy: below 0.2).
VERSION_SIMILARITY = 0.5


def version_step(
    cands: Sequence[Candidate], similarity: Similarity, threshold: float = VERSION_SIMILARITY
) -> tuple[list[Candidate], list[Dropped]]:
    """Over results that carry versions (a citation with a ``family`` in its metadata and an
    ``effective_date``): of two versions of one passage (one family, ``similarity`` at least
    ``threshold``), the newest is kept, in the place of the better-ranked one and with its score,
    and the older dropped; as the project's own retriever keeps a family's newest version.

    Every result left whose family has a newer version among the results gets ``superseded_by``
    (that date), so MMR never drops the newer one as redundant next to it. Results without
    versions pass as they are.
    """
    versions = [_versions(c) for c in cands]
    at = [i for i, v in enumerate(versions) if v]
    if len(at) < 2:
        return list(cands), []
    sim = similarity.matrix([cands[i].text for i in at], [cands[i].id for i in at])
    row = {i: n for n, i in enumerate(at)}  # each slot's row in ``sim``: the text it holds now
    kept: list[Candidate | None] = list(cands)
    dropped: list[Dropped] = []
    for i in at:
        for j in at:
            c, other = kept[i], kept[j]
            if j <= i or c is None or other is None or sim[row[i]][row[j]] < threshold:
                continue
            mine, theirs = versions[i], versions[j]
            shared = sorted(f for f in set(mine) & set(theirs) if mine[f] != theirs[f])
            if not shared:
                continue  # no family in which they are two versions: dedup and MMR judge them
            family = shared[0]
            newer_j = versions[j][family] > versions[i][family]
            old, new = (c, other) if newer_j else (other, c)
            why = (
                f"an older version ({family}, effective {_versions(old)[family]}) of {new.id} "
                f"(effective {_versions(new)[family]}), which is kept in its place"
            )
            dropped.append(Dropped(old.id, old.score, old.text, "versions", why))
            kept[i], kept[j] = replace(new, score=max(c.score, other.score)), None
            if newer_j:
                versions[i], row[i] = versions[j], row[j]
    left = [c for c in kept if c is not None]
    return _label_superseded(left), dropped


def _versions(c: Candidate) -> dict[str, str]:
    """A result's newest effective date in each family its citations name."""
    out: dict[str, str] = {}
    for ref in c.citations:
        family = ref.metadata.get("family")
        if isinstance(family, str) and family and ref.effective_date:
            out[family] = max(out.get(family, ""), ref.effective_date)
    return out


def _label_superseded(cands: list[Candidate]) -> list[Candidate]:
    newest: dict[str, str] = {}
    for c in cands:
        for family, when in _versions(c).items():
            newest[family] = max(newest.get(family, ""), when)
    out = []
    for c in cands:
        mine = _versions(c)
        newer = [newest[f] for f, when in mine.items() if newest[f] > when]
        if mine and c.superseded_by is None and len(newer) == len(mine):  # old in every family it is in
            c = replace(c, superseded_by=min(newer))
        out.append(c)
    return out


def cap_step(cands: Sequence[Candidate], cap: int) -> tuple[list[Candidate], list[Dropped]]:
    """At most ``cap`` candidates per source document (``cap`` 0: no cap, every candidate is kept).

    A kept candidate is charged to its first cited document that still has room; a candidate is
    dropped only when every document it cites is full (text shared by documents is charged once).
    """
    if cap <= 0:
        return list(cands), []
    used: dict[str, int] = {}
    kept: list[Candidate] = []
    dropped: list[Dropped] = []
    for c in cands:
        docs = list(dict.fromkeys(ref.doc for ref in c.citations))
        room = next((d for d in docs if used.get(d, 0) < cap), None)
        if room is None:
            shown = ", ".join(docs[:3]) + (f" and {len(docs) - 3} more" if len(docs) > 3 else "")
            reason = f"every cited document already has {cap} higher-ranked hit(s): {shown}"
            dropped.append(Dropped(c.id, c.score, c.text, "cap", reason))
        else:
            used[room] = used.get(room, 0) + 1
            kept.append(c)
    return kept, dropped


class Similarity(Protocol):
    """How alike candidates are, pairwise, in [0, 1]: ``ids`` are their canonical ids (a similarity
    over stored embeddings reads vectors by id; one over text ignores them)."""

    def matrix(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[list[float]]: ...


class ShingleJaccard:
    """Jaccard of the ``n``-word shingle sets of the candidates' exact keys (a text shorter than
    ``n`` words is one shingle).

    When the near tier's compiled kernel (``chunkdedup.dedup.minhash``) is installed its shingle
    hashes and exact ``jaccard`` are used, so MMR sees the similarity the near tier measures; else
    a small pure-Python exact Jaccard over the same shingles. Over a pool of 40 the exact value is
    cheap, so no MinHash estimate is needed.
    """

    def __init__(self, n: int = 5) -> None:
        self.n = n
        self._kernel = _minhash_kernel(n)

    def shingles(self, text: str) -> frozenset[str]:
        words = exact_key(text).split()
        if len(words) <= self.n:
            return frozenset([" ".join(words)])
        return frozenset(" ".join(words[i : i + self.n]) for i in range(len(words) - self.n + 1))

    def matrix(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[list[float]]:
        if self._kernel is not None:
            make, jaccard = self._kernel
            # the NumPy twins of the kernels (the same sets and counts) up to the characters a run
            # signs that way too: numba's start-up (about 0.5 s, scipy with it) would be most of a query
            compiled = sum(map(len, texts)) > NUMPY_CHARS
            hasher = make(shingle_words=self.n, compiled=compiled)
            hashed = [hasher.shingles(exact_key(t)) for t in texts]
            return _pairwise(hashed, partial(jaccard, compiled=compiled))
        return _pairwise([self.shingles(t) for t in texts], _set_jaccard)


def _minhash_kernel(n: int) -> tuple[Any, Callable[..., float]] | None:
    try:
        module = importlib.import_module("chunkdedup.dedup.minhash")
    except ImportError:
        return None
    hasher_cls, jaccard = getattr(module, "MinHasher", None), getattr(module, "jaccard", None)
    if hasher_cls is None or jaccard is None:
        return None
    return hasher_cls, jaccard


def _set_jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    inter = len(a & b)
    union = len(a) + len(b) - inter
    return inter / union if union else 1.0


def _pairwise(items: Sequence[T], fn: Callable[[T, T], float]) -> list[list[float]]:
    m = [[1.0] * len(items) for _ in items]
    for i, a in enumerate(items):
        for j in range(i + 1, len(items)):
            m[i][j] = m[j][i] = float(fn(a, items[j]))
    return m


def mmr_step(
    cands: Sequence[Candidate], k: int, lam: float, similarity: Similarity
) -> tuple[list[Candidate], list[Dropped]]:
    """Maximal marginal relevance: pick ``k``, each maximising
    ``lam * relevance - (1 - lam) * max similarity to those already picked``.

    Relevance is the score divided by the best score (BM25 is unbounded, the similarity is not);
    min-max scaled instead when a score is negative. Ties go to the better-ranked candidate. Scores
    themselves are left untouched.

    An old version never makes the version in force redundant: a candidate with no ``superseded_by``
    is not penalised for its similarity to a superseded one (``versions="label"`` shows old wording
    beside the current, never instead of it; site-policy's "GitHub Sponsors payout minimum
    threshold" ranked the 2025 wording first and dropped the 2026 one as 0.81-similar to it).
    """
    if not cands or k <= 0:
        return [], [_mmr_drop(c, "k is 0") for c in cands]
    scores = [c.score for c in cands]
    lo, hi = min(scores), max(scores)
    if lo >= 0 and hi > 0:
        rel = [s / hi for s in scores]
    else:
        rel = [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]
    sim = similarity.matrix([c.text for c in cands], [c.id for c in cands])
    chosen: list[int] = []
    closest = [0.0] * len(cands)  # max similarity to the chosen set
    nearest: list[int | None] = [None] * len(cands)
    left = list(range(len(cands)))
    while left and len(chosen) < k:
        best = max(left, key=lambda i: (lam * rel[i] - (1 - lam) * closest[i], -i))
        chosen.append(best)
        left.remove(best)
        outdated = cands[best].superseded_by is not None
        for i in left:
            if outdated and cands[i].superseded_by is None:
                continue  # the version in force is never redundant next to an old one
            if sim[i][best] > closest[i]:
                closest[i], nearest[i] = sim[i][best], best
    dropped = []
    for i in left:
        value = lam * rel[i] - (1 - lam) * closest[i]
        near = nearest[i]
        why = f"not among the top {k} by MMR (lambda {lam:g}): score {value:.4f}"
        if near is not None:
            why += f", similarity {closest[i]:.4f} to {cands[near].id}"
        dropped.append(_mmr_drop(cands[i], why))
    return [cands[i] for i in chosen], dropped


def _mmr_drop(c: Candidate, reason: str) -> Dropped:
    return Dropped(c.id, c.score, c.text, "mmr", reason)
