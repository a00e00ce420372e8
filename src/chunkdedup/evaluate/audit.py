"""``audit``: for each query, the retrieved set with every pair that says substantially the same thing,
the overall duplication rate, and a calibration view of the near-duplicate threshold.

Pairs are compared by 5-word-shingle Jaccard of their exact keys (the index holds no embeddings, so
no cosine is available). The calibration view shows how similar the groups merged into a canonical
are to their leader, next to how similar unmerged neighbours are: pairs the number/date guard kept
apart (``variants``) and pairs that shared an LSH band but stayed in different canonicals.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkdedup.errors import InputError
from chunkdedup.evaluate.baseline import recorded_run
from chunkdedup.evaluate.metrics import DUPLICATE_JACCARD, PairSimilarity
from chunkdedup.index import Index
from chunkdedup.query.run import search

_MAX_NEIGHBOURS = 5000
BINS = 20


@dataclass(frozen=True, slots=True)
class Audit:
    """Per query: hits and duplicate pairs; overall duplication; calibration histograms (20 bins)."""

    k: int
    queries: list[dict[str, Any]]
    duplicate_pairs: int
    pairs: int
    calibration: dict[str, Any]

    @property
    def duplication_rate(self) -> float | None:
        return self.duplicate_pairs / self.pairs if self.pairs else None

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "duplication_rate": self.duplication_rate,
                "duplicate_pairs": self.duplicate_pairs,
                "pairs": self.pairs, "threshold": DUPLICATE_JACCARD, "similarity": "shingle-jaccard-5",
                "queries": self.queries, "calibration": self.calibration}


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


def audit(index: str | Path, queries: str | Path | Sequence[str], *, k: int = 10) -> Audit:
    """Retrieve each query from ``index`` as configured and mark the pairs of near-identical hits.

    Example:
        >>> result = audit("policies.sqlite", ["how long is personal data kept"], k=10)  # doctest: +SKIP
        >>> result.duplication_rate  # doctest: +SKIP
    """
    items = read_queries(queries) if isinstance(queries, str | Path) else [
        (str(i), q) for i, q in enumerate(queries, start=1)]
    similarity = PairSimilarity()
    out: list[dict[str, Any]] = []
    dup = total = 0
    with Index.open(index) as ix:
        cfg = recorded_run(ix.store).config
        for qid, text in items:
            hits = search(ix, text, k=k, config=cfg.query).hits
            pairs = []
            for i in range(len(hits)):
                for j in range(i + 1, len(hits)):
                    sim = similarity(hits[i].text, hits[j].text)
                    total += 1
                    if sim >= DUPLICATE_JACCARD:
                        dup += 1
                        pairs.append({"a": hits[i].rank, "b": hits[j].rank, "similarity": sim})
            out.append({"id": qid, "question": text, "pairs": pairs, "hits": [
                {"rank": h.rank, "id": h.id, "score": h.score, "text": h.text,
                 "citations": [[c.doc, c.page] for c in h.citations]} for h in hits]})
        calibration = _calibration(ix, similarity, cfg.near.threshold)
    return Audit(k, out, dup, total, calibration)


def histogram(values: Sequence[float], bins: int = BINS) -> list[int]:
    """Counts of ``values`` in ``bins`` equal bins over [0, 1] (1.0 falls in the last bin)."""
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v * bins)))] += 1
    return counts


def _calibration(ix: Index, similarity: PairSimilarity, threshold: float) -> dict[str, Any]:
    conn = ix.store.conn
    merged = [r[0] for r in conn.execute(
        "SELECT similarity FROM groups WHERE relation IN ('near', 'semantic') ORDER BY id")]
    guarded = [r[0] for r in conn.execute("SELECT similarity FROM variants ORDER BY a, b")]
    rows = conn.execute(
        """
        SELECT DISTINCT ga.text, gb.text FROM bands a
        JOIN bands b ON a.band_key = b.band_key AND a.group_id < b.group_id
        JOIN groups ga ON ga.id = a.group_id JOIN groups gb ON gb.id = b.group_id
        WHERE ga.canonical_id != gb.canonical_id
          AND NOT EXISTS (SELECT 1 FROM variants v WHERE v.a = a.group_id AND v.b = b.group_id)
          AND NOT EXISTS (SELECT 1 FROM variants v WHERE v.a = b.group_id AND v.b = a.group_id)
        ORDER BY a.group_id, b.group_id LIMIT ?
        """,
        (_MAX_NEIGHBOURS,),
    ).fetchall()
    neighbours = [similarity(a, b) for a, b in rows]
    return {
        "threshold": threshold,
        "measure": "5-word-shingle Jaccard (merged: similarity to the cluster leader)",
        "bins": BINS,
        "merged": {"n": len(merged), "histogram": histogram(merged)},
        "kept_apart_by_guard": {"n": len(guarded), "histogram": histogram(guarded)},
        "unmerged_band_neighbours": {"n": len(neighbours), "histogram": histogram(neighbours),
                                     "capped_at": _MAX_NEIGHBOURS},
    }


__all__ = ["BINS", "Audit", "audit", "histogram", "read_queries"]
