"""Compile every kernel into numba's disk cache: a small ingest that takes the kernels at any size.

Run by :class:`~chunkdedup.ingestion.warmup.Warmup` in a process of its own when a large run finds the
cache cold (``python -m chunkdedup.ingestion.warm``), and by ``chunkdedup warm``. The corpus is made
here: a few dozen records with a repeated footer (boilerplate), exact copies, near copies whose
numbers, dates, negations and links differ (the guards and the meaning guard), and non-ASCII text, so
every kernel is called with the argument types a real run gives it (each distinct type signature
compiles again). Kernels an ingest does not call (the query's, the library's other entry points) are
called once on small arrays.

Example:
    >>> warm_kernels()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from chunkdedup.config import Config
from chunkdedup.ingestion.sequence import ingest
from chunkdedup.ingestion.warmup import kernels_cached

_SENTENCES = (
    "The tenant shall pay the rent of 1,200 dollars on the first day of each month.",
    "Refunds are issued within 30 days of the request, to the card used for the purchase.",
    "Employees may not share customer records with third parties without written consent.",
    "The committee met on 12 March 2021 and approved the budget for the following year.",
    "See [the policy](https://example.com/policy) for details; <!-- draft --> comments are ignored.",
    "Café owners in Zürich reported a 4.5% rise in revenue — the highest since 2019.",
    "Section 2.1 applies to every contractor, and section 3 (b) to employees only.",
    "Users must change their password every 90 days; the system will lock an account after 5 tries.",
    "The warranty covers defects in materials for two years from the date of delivery.",
    "Data is stored in the EU region and is never transferred outside without notice.",
)
#: word swaps that make near copies: numbers, a date, a negation, a name, a reworded phrase
_EDITS = (
    ("1,200", "1,250"),
    ("30 days", "45 days"),
    ("may not", "may"),
    ("12 March 2021", "14 March 2021"),
    ("two years", "three years"),
    ("every 90 days", "every 60 days"),
    ("Zürich", "Geneva"),
    ("is never", "is always"),
)
_FOOTER = "Copyright 2024 Example Corp. All rights reserved."


def warm_corpus(folder: Path) -> Path:
    """Write the warming corpus (one JSONL file) to ``folder``; returns the file."""
    records: list[dict[str, str]] = []
    for i in range(48):
        body = " ".join(_SENTENCES[(i + k) % len(_SENTENCES)] for k in range(6))
        if i % 4 == 1:  # a near copy of the record before: one edit
            old, new = _EDITS[(i // 4) % len(_EDITS)]
            body = records[-1]["body"].replace(old, new)
        elif i % 4 == 2:  # an exact copy, re-wrapped
            body = records[-2]["body"].replace(". ", ".\n")
        text = f"Notice {i % 3}\n\n{body}\n\n{body[::-1][:80]} {i}\n\n{_FOOTER}\nPage {i % 5 + 1}"
        records.append({"id": f"w{i:03d}", "body": body, "text": text})
    path = folder / "warm.jsonl"
    lines = (json.dumps({"id": r["id"], "text": r["text"]}) for r in records)
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


_TEXTS = ["one two three four five six seven", "one two three four five six eight"]


def _signing_kernels() -> list[np.ndarray]:
    """Every MinHash kernel (those an ingest's cluster pass calls too), each called once: first, so
    that a run's chunk jobs (the text walks and the signing) take the kernels as early as can be."""
    from chunkdedup.dedup.minhash import MinHasher, jaccard

    hasher = MinHasher(compiled=True)
    hasher.signatures(_TEXTS)
    hasher.sketches([*_TEXTS, "one"], 1)  # a one-shingle key is summed up by its set's hash
    hasher.signatures_and_hashes([*_TEXTS, "one", ""])  # a one-word key counts its words apart
    hasher.shingles(_TEXTS[0])
    flat, offsets = hasher.shingle_sets(_TEXTS)
    sets = [flat[offsets[0] : offsets[1]], flat[offsets[1] : offsets[2]]]
    jaccard(sets[0], sets[1])
    return sets


def _other_kernels(sets: list[np.ndarray]) -> None:
    """The LSH kernels an ingest does not call, each called once."""
    from chunkdedup.dedup.lsh import candidate_pairs, components, leader_cluster, verified_edges

    pairs = candidate_pairs(np.zeros((2, 4), dtype=np.uint64))
    verified_edges(pairs, sets, 0.5)
    components(2, pairs)
    leader_cluster(np.arange(2), pairs, np.array([0.9]), _TEXTS, compiled=True)


def warm_kernels(config: Config | None = None) -> float:
    """Compile every kernel into numba's disk cache (a kernel cached already is loaded, not compiled
    again); returns the seconds taken."""
    start = time.perf_counter()
    sets = _signing_kernels()
    with tempfile.TemporaryDirectory(prefix="chunkdedup-warm-") as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        warm_corpus(folder)
        ingest([folder], Path(tmp) / "warm.sqlite", config=config, kernels=True)
    _other_kernels(sets)
    return time.perf_counter() - start


def main() -> int:
    """``python -m chunkdedup.ingestion.warm``: compile every kernel; exit 0 when the cache holds them.

    At a lower priority (``nice`` 10): the run that started it comes first where the cores are busy,
    and it runs on the twins meanwhile at a small cost."""
    with contextlib.suppress(AttributeError, OSError):  # no nice here: the same work, the same priority
        os.nice(10)
    warm_kernels()
    return 0 if kernels_cached() else 1


__all__ = ["warm_corpus", "warm_kernels"]

if __name__ == "__main__":
    raise SystemExit(main())
