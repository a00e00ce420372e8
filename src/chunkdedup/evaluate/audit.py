"""``audit``: for each query, the retrieved set with every pair that says substantially the same thing,
the overall duplication rate, and calibration views of the near-duplicate and semantic thresholds.

**Pairs.** Every pair of hits is compared by 5-word-shingle Jaccard of their texts and, when the index
holds embeddings (``chunkdedup ingest --embedder ...``), by the cosine of the stored vectors of their
canonicals (a canonical's vector is its leader group's; no model is loaded, so the cosine is the
recorded embedder's). A pair is marked when its Jaccard reaches 0.5 or its cosine reaches the index's
semantic threshold, and both similarities are shown. Without embeddings only Jaccard is used.

**Near calibration** (always): how similar the groups the near tier merged are to their leader, next
to how similar unmerged neighbours are: pairs the number/date guard kept apart (``variants``) and
pairs that shared an LSH band but stayed in different canonicals, all by shingle Jaccard. A group whose
shingle set is too small to reach the threshold with another set has one key, its set's
(:func:`chunkdedup.dedup.near.sign_keys`), shared only by groups of the same set: its near misses are
not among the band neighbours (no decision reads them; the view shows the other groups' near misses).

**Semantic calibration** (with embeddings), by cosine, from :func:`chunkdedup.dedup.semantic.calibration`:

- ``merged``: each group the semantic tier merged, to its leader (``groups.similarity`` of
  ``relation = 'semantic'`` groups);
- ``kept_apart_by_guard``: each ``variants`` pair (versions that differ in a number or a date), from
  their vectors;
- ``unmerged_nearest``: for a deterministic sample of up to 2,000 groups (evenly spaced in id order),
  the best cosine to a group of another canonical, guard-kept partners excluded (they have their own
  series). Computed with numpy over the stored vectors, streamed from the index in blocks of 4,096, so
  memory stays at ``sample x block`` float32 (32 MB) whatever the index size.

Read it as: at a threshold ``t``, the ``merged`` share at or above ``t`` is what would stay merged,
and the ``unmerged_nearest`` share at or above ``t`` is what would be merged in addition.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chunkdedup.dedup.semantic import Calibration, calibration
from chunkdedup.errors import InputError
from chunkdedup.evaluate.baseline import recorded_run
from chunkdedup.evaluate.metrics import DUPLICATE_JACCARD, PairSimilarity
from chunkdedup.index import EvaluationReads, Index
from chunkdedup.query.run import search

_MAX_NEIGHBOURS = 5000
#: groups sampled for the nearest unmerged neighbour cosines
NEIGHBOUR_SAMPLE = 2000
#: vectors per block streamed from the index
_BLOCK = 4096
BINS = 20
NO_EMBEDDINGS = (
    "the index holds no embeddings: pairs are compared by shingle Jaccard only; the cosine view and "
    "the semantic calibration need `chunkdedup ingest --embedder minilm` (or [semantic] enabled = true)"
)

F32Array = npt.NDArray[np.float32]
F64Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Audit:
    """Per query: hits and duplicate pairs; overall duplication; calibration histograms.

    ``duplicate_pairs`` counts the pairs marked by either measure, ``jaccard_pairs`` and
    ``cosine_pairs`` those marked by each (``cosine_pairs`` is ``None`` without embeddings).
    ``semantic`` is the cosine calibration (``None`` without embeddings).
    """

    k: int
    queries: list[dict[str, Any]]
    duplicate_pairs: int
    pairs: int
    calibration: dict[str, Any]
    jaccard_pairs: int = 0
    cosine_pairs: int | None = None
    semantic: dict[str, Any] | None = None

    @property
    def duplication_rate(self) -> float | None:
        return self.duplicate_pairs / self.pairs if self.pairs else None

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "duplication_rate": self.duplication_rate,
                "duplicate_pairs": self.duplicate_pairs, "jaccard_pairs": self.jaccard_pairs,
                "cosine_pairs": self.cosine_pairs,
                "pairs": self.pairs, "threshold": DUPLICATE_JACCARD, "similarity": "shingle-jaccard-5",
                "cosine_threshold": None if self.semantic is None else self.semantic["threshold"],
                "queries": self.queries, "calibration": self.calibration,
                "semantic_calibration": self.semantic,
                "note": NO_EMBEDDINGS if self.semantic is None else None}


def read_queries(path: str | Path) -> list[tuple[str, str]]:
    """(id, question) pairs from a golden JSONL file or a text file with one question a line."""
    p = Path(path)
    try:
        lines = [ln for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except FileNotFoundError:
        raise InputError(f"queries file {p} does not exist: check the path") from None
    out = []
    for n, line in enumerate(lines, start=1):
        if line.lstrip().startswith("{"):
            try:
                data = json.loads(line)
                out.append((str(data.get("id", n)), str(data["question"])))
            except (json.JSONDecodeError, KeyError, AttributeError):
                raise InputError(f"{p}:{n}: a JSON line needs a 'question' field") from None
        else:
            out.append((str(n), line.strip()))
    if not out:
        raise InputError(f"queries file {p} holds no questions")
    return out


def audit(index: str | Path, queries: str | Path | Sequence[str], *, k: int = 10,
          sample: int = NEIGHBOUR_SAMPLE) -> Audit:
    """Retrieve each query from ``index`` as configured and mark the pairs of hits that say the same
    thing (by shingle Jaccard, and by cosine when the index holds embeddings).

    ``sample`` bounds the groups whose nearest unmerged neighbour enters the semantic calibration.

    Example:
        >>> result = audit("policies.sqlite", ["how long is personal data kept"], k=10)  # doctest: +SKIP
        >>> result.duplication_rate, result.semantic is None  # doctest: +SKIP
    """
    if sample < 1:
        raise ValueError(f"sample must be >= 1, got {sample}")
    items = read_queries(queries) if isinstance(queries, str | Path) else [
        (str(i), q) for i, q in enumerate(queries, start=1)]
    similarity = PairSimilarity()
    out: list[dict[str, Any]] = []
    dup = total = by_jaccard = by_cosine = 0
    with Index.open(index) as ix:
        cfg = recorded_run(ix).config
        embedded = ix.evaluation.has_embeddings()
        threshold = _cosine_threshold(ix.evaluation, cfg.semantic.threshold) if embedded else None
        for qid, text in items:
            # the canonicals' words: the vectors compared beside them are the canonicals' too
            hits = search(ix, text, k=k, config=cfg.query, words="canonical").hits
            vectors = _vectors(ix.evaluation, [h.id for h in hits]) if embedded else {}
            pairs = []
            for i in range(len(hits)):
                for j in range(i + 1, len(hits)):
                    jac = similarity(hits[i].text, hits[j].text)
                    cos = _cosine(vectors.get(hits[i].id), vectors.get(hits[j].id))
                    by = (["jaccard"] if jac >= DUPLICATE_JACCARD else []) + (
                        ["cosine"] if cos is not None and threshold is not None and cos >= threshold else [])
                    total += 1
                    by_jaccard += "jaccard" in by
                    by_cosine += "cosine" in by
                    if by:
                        dup += 1
                        pairs.append({"a": hits[i].rank, "b": hits[j].rank, "similarity": jac,
                                      "jaccard": jac, "cosine": cos, "by": by})
            out.append({"id": qid, "question": text, "pairs": pairs, "hits": [
                {"rank": h.rank, "id": h.id, "score": h.score, "text": h.text,
                 "citations": [[c.doc, c.page] for c in h.citations]} for h in hits]})
        near_view = _calibration(ix, similarity, cfg.near.threshold)
        semantic = _semantic_calibration(ix.evaluation, threshold, sample) if threshold is not None else None
    return Audit(k, out, dup, total, near_view, by_jaccard, by_cosine if embedded else None, semantic)


def histogram(values: Sequence[float], bins: int = BINS) -> list[int]:
    """Counts of ``values`` in ``bins`` equal bins over [0, 1] (1.0 falls in the last bin)."""
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v * bins)))] += 1
    return counts


def _calibration(ix: Index, similarity: PairSimilarity, threshold: float) -> dict[str, Any]:
    reads = ix.evaluation
    # near merges only: a semantic merge's similarity is a cosine (it has its own view)
    merged = list(reads.merge_similarities("near"))
    # recomputed from the texts: a variant found over a semantic edge records a cosine
    guarded = [similarity(a, b) for a, b in reads.variant_texts(_MAX_NEIGHBOURS)]
    neighbours = [similarity(a, b) for a, b in reads.band_neighbour_texts(_MAX_NEIGHBOURS)]
    return {
        "threshold": threshold,
        "measure": "5-word-shingle Jaccard (merged: similarity to the cluster leader)",
        "bins": BINS,
        "merged": {"n": len(merged), "histogram": histogram(merged)},
        "kept_apart_by_guard": {"n": len(guarded), "histogram": histogram(guarded),
                                "capped_at": _MAX_NEIGHBOURS},
        "unmerged_band_neighbours": {"n": len(neighbours), "histogram": histogram(neighbours),
                                     "capped_at": _MAX_NEIGHBOURS},
    }


# -- the cosine view -----------------------------------------------------------------------------

def _cosine_threshold(reads: EvaluationReads, configured: float) -> float:
    """The threshold the index's semantic edges were computed at, else the recorded config's."""
    recorded = reads.semantic_edges_for()
    return recorded if recorded is not None else configured


def _unit(blob: bytes) -> F32Array:
    v: F32Array = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    return v


def _vectors(reads: EvaluationReads, ids: Sequence[str]) -> dict[str, F32Array]:
    out: dict[str, F32Array] = {}
    for batch in reads.vectors_of(sorted(set(ids))):
        for gid, blob in zip(batch.keys, batch.vectors, strict=True):
            out[gid] = _unit(blob)
    return out


def _cosine(a: F32Array | None, b: F32Array | None) -> float | None:
    """float64 cosine of two stored vectors, rounded to 9 decimals like the semantic tier's."""
    if a is None or b is None or a.shape != b.shape:
        return None
    x, y = a.astype(np.float64), b.astype(np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    if norm == 0.0:
        return None
    return round(min(1.0, max(-1.0, float(x @ y) / norm)), 9)


def _guard_cosines(reads: EvaluationReads) -> list[float]:
    out: list[float] = []
    for rows in reads.variant_vector_pairs(_BLOCK):
        out.extend(c for a, b in rows if (c := _cosine(_unit(a), _unit(b))) is not None)
    return out


def nearest_unmerged(reads: EvaluationReads, sample: int = NEIGHBOUR_SAMPLE) -> tuple[F64Array, int]:
    """For up to ``sample`` embedded groups (evenly spaced in id order), the best cosine to a group of
    another canonical, canonicals the guard kept apart from the group's own excluded (a ``variants``
    pair between any of their groups); and how many groups are embedded.

    Two streamed passes over the vectors, ``_BLOCK`` at a time: memory is ``sample x block`` float32.
    A group with no such other group (every vector in its canonical) gives no value.
    """
    n = reads.embedded_group_count()
    if n == 0:
        return np.empty(0, dtype=np.float64), 0
    picks = np.unique(np.linspace(0, n - 1, min(sample, n)).round().astype(np.int64))
    wanted = set(picks.tolist())
    canon_code: dict[str, int] = {}
    codes = np.empty(n, dtype=np.int64)
    rows_s: list[F32Array] = []
    at = 0
    for batch in reads.canonical_vector_blocks(_BLOCK):
        for cid, blob in zip(batch.keys, batch.vectors, strict=True):
            codes[at] = canon_code.setdefault(cid, len(canon_code))
            if at in wanted:
                rows_s.append(_unit(blob))
            at += 1
    if len({v.shape for v in rows_s}) != 1:
        raise InputError(f"index {reads.path}: stored vectors differ in length; re-embed with --reembed")
    left = np.stack(rows_s)
    mine = codes[picks]
    # canonicals the guard kept apart (a variant pair between any of their groups): masked out
    kept_apart: dict[int, set[int]] = {}
    for ca, cb in reads.variant_canonicals():
        if ca in canon_code and cb in canon_code and ca != cb:
            kept_apart.setdefault(canon_code[ca], set()).add(canon_code[cb])
            kept_apart.setdefault(canon_code[cb], set()).add(canon_code[ca])
    guarded_rows = [(r, np.asarray(sorted(kept_apart[int(c)]), dtype=np.int64))
                    for r, c in enumerate(mine) if int(c) in kept_apart]
    best = np.full(picks.size, -np.inf, dtype=np.float32)
    lo = 0
    for rows in reads.vector_blocks(_BLOCK):
        block = np.frombuffer(b"".join(rows), dtype="<f4").reshape(len(rows), -1)
        hi = lo + len(rows)
        sims = left @ block.T
        sims[mine[:, None] == codes[lo:hi][None, :]] = -np.inf
        for r, partners in guarded_rows:
            sims[r, np.isin(codes[lo:hi], partners)] = -np.inf
        np.maximum(best, sims.max(axis=1), out=best)
        lo = hi
    found: F64Array = np.clip(best[np.isfinite(best)].astype(np.float64), -1.0, 1.0)
    result: F64Array = np.round(found, 6)
    return result, n


def threshold_edges(values: Sequence[float] | F64Array) -> tuple[float, int]:
    """``(low, bins)`` for readable edges: bins of 0.01 when every value is >= 0.8, else of 0.05,
    from the smallest value floored to the bin width (never below 0)."""
    arr = np.asarray(values, dtype=np.float64)
    smallest = float(arr.min()) if arr.size else 0.8
    width = 0.01 if smallest >= 0.8 else 0.05
    low = max(0.0, math.floor(round(smallest / width, 6)) * width)
    low = min(low, 1.0 - width)
    return round(low, 2), max(1, round((1.0 - low) / width))


def _series(n: int, hist: npt.NDArray[np.int64], above: npt.NDArray[np.int64]) -> dict[str, Any]:
    return {"n": n, "histogram": hist.tolist(), "at_or_above": above.tolist(),
            "share_at_or_above": [round(int(a) / n, 6) if n else None for a in above]}


def _semantic_calibration(reads: EvaluationReads, threshold: float, sample: int) -> dict[str, Any]:
    merged = [float(s) for s in reads.merge_similarities("semantic")]
    guarded = _guard_cosines(reads)
    nearest, embedded = nearest_unmerged(reads, sample)
    low, bins = threshold_edges([*merged, *guarded, *nearest.tolist(), threshold])
    main: Calibration = calibration(merged, nearest, bins=bins, low=low)
    guard: Calibration = calibration(guarded, [], bins=bins, low=low)
    made_by = reads.stored_embedder()
    return {
        "embedder": made_by.name if made_by is not None else None,
        "dim": made_by.dim if made_by is not None else 0,
        "threshold": threshold,
        "measure": "cosine of the stored embeddings",
        "edges": [round(float(e), 6) for e in main.edges],
        "merged": _series(len(merged), main.merged, main.merged_at_or_above),
        "kept_apart_by_guard": _series(len(guarded), guard.merged, guard.merged_at_or_above),
        "unmerged_nearest": {**_series(int(nearest.size), main.unmerged, main.unmerged_at_or_above),
                             "sampled": int(min(sample, embedded)), "embedded_groups": embedded},
    }


__all__ = ["BINS", "NEIGHBOUR_SAMPLE", "NO_EMBEDDINGS", "Audit", "audit", "histogram", "nearest_unmerged",
           "read_queries", "threshold_edges"]
