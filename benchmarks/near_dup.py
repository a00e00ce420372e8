"""MinHash signature throughput on a synthetic near-duplicate corpus, against datasketch and rensa.

The corpus is built deterministically from the real site-policy Markdown beside the repo: ~200-word
chunks recombined from its sentences, 15% near-duplicates (a few words edited, re-wrapped, re-cased)
and 10% exact copies. Every text goes through ``normalize.exact_key`` first, as in the pipeline.

Rows, timed interleaved in one process (median of ``--repeat`` rounds):

* datasketch ``MinHash.update`` per shingle (the seed path), on a subsample;
* datasketch ``MinHash.bulk``, on a subsample;
* rensa ``RMinHash.digest_matrix_from_token_sets`` from shingle strings (what a rensa user writes),
  on a subsample, and rensa from *our* pre-hashed shingles (kernel against kernel);
* ours, ``MinHasher.signatures``, on the same subsample and on every chunk, with the default
  threads and with one thread.

Every row starts from the exact keys, so Python shingling is part of the reference rows' time.
Then, if ``chunkdedup.dedup.lsh`` provides ``band_keys`` and ``candidate_pairs``, the end to end
"signatures + LSH + exact verification (+ leader clustering when available)".

Example:
    python benchmarks/near_dup.py --chunks 200000 --out benchmarks/results/near_dup.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import re
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numba
import numpy as np
from rich.console import Console
from rich.table import Table

from chunkdedup.dedup import minhash
from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.normalize import exact_key

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "site-policy" / "current"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "near_dup.json"
NUM_PERM = 128
SHINGLE_WORDS = 5
BANDS, ROWS, THRESHOLD = 16, 8, 0.85
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")


# --- corpus ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Corpus:
    keys: list[str]  # exact keys, one per chunk
    kind: list[str]  # "original", "near" or "exact"
    source: list[int]  # for copies, the index of the original they copy; else -1


def load_sentences(root: Path) -> list[list[str]]:
    """Sentences (as word lists) of every Markdown file under ``root``, front matter removed."""
    sentences: list[list[str]] = []
    for path in sorted(root.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---"):
            end = text.find("\n---", 3)
            text = text[end + 4 :] if end != -1 else text
        for paragraph in text.split("\n\n"):
            for sentence in _SENTENCE_END.split(paragraph):
                words = sentence.split()
                if len(words) >= 3:
                    sentences.append(words)
    if not sentences:
        raise SystemExit(f"no sentences under {root}: pass --source with Markdown files")
    return sentences


def _original(rng: random.Random, sentences: list[list[str]]) -> list[str]:
    target = rng.randint(180, 220)
    words: list[str] = []
    while len(words) < target:
        words.extend(sentences[rng.randrange(len(sentences))])
    return words[:target]


def _near_copy(rng: random.Random, words: list[str], vocabulary: list[str]) -> str:
    """A few words edited (replaced, deleted, inserted), then re-cased and re-wrapped."""
    out = list(words)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        pos = rng.randrange(len(out))
        if op < 0.5:
            out[pos] = rng.choice(vocabulary)
        elif op < 0.75 and len(out) > 1:
            del out[pos]
        else:
            out.insert(pos, rng.choice(vocabulary))
    if rng.random() < 0.5:
        out = [w.upper() if rng.random() < 0.1 else w for w in out]
    else:
        out = [w.capitalize() if rng.random() < 0.2 else w for w in out]
    width = rng.randint(8, 16)
    return "\n".join(" ".join(out[i : i + width]) for i in range(0, len(out), width))


def build_corpus(sentences: list[list[str]], n: int, seed: int) -> Corpus:
    """``n`` chunks: 75% originals, 15% near copies, 10% exact copies of a random original; shuffled."""
    rng = random.Random(seed)
    vocabulary = sorted({w for s in sentences for w in s})
    n_near, n_exact = round(0.15 * n), round(0.10 * n)
    n_orig = n - n_near - n_exact
    originals = [_original(rng, sentences) for _ in range(n_orig)]
    texts = [" ".join(w) for w in originals]
    kind, source = ["original"] * n_orig, [-1] * n_orig
    for _ in range(n_near):
        i = rng.randrange(n_orig)
        texts.append(_near_copy(rng, originals[i], vocabulary))
        kind.append("near")
        source.append(i)
    for _ in range(n_exact):
        i = rng.randrange(n_orig)
        texts.append(texts[i])
        kind.append("exact")
        source.append(i)
    order = list(range(n))
    rng.shuffle(order)
    position = {old: new for new, old in enumerate(order)}
    return Corpus(
        keys=[exact_key(texts[i]) for i in order],
        kind=[kind[i] for i in order],
        source=[position[source[i]] if source[i] >= 0 else -1 for i in order],
    )


# --- the contenders ----------------------------------------------------------------------------------


def shingle_strings(key: str) -> list[str]:
    """Word 5-shingles in Python, the way a datasketch or rensa user builds them."""
    words = key.split(" ") if key else []
    if len(words) < SHINGLE_WORDS:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)]


def datasketch_update(keys: Sequence[str]) -> None:
    from datasketch import MinHash

    for key in keys:
        m = MinHash(num_perm=NUM_PERM, seed=1)
        for s in shingle_strings(key):
            m.update(s.encode("utf-8"))
        m.digest()


def datasketch_bulk(keys: Sequence[str]) -> None:
    from datasketch import MinHash

    MinHash.bulk([[s.encode("utf-8") for s in shingle_strings(k)] for k in keys], num_perm=NUM_PERM, seed=1)


def rensa_tokens(keys: Sequence[str]) -> None:
    from rensa import RMinHash

    RMinHash.digest_matrix_from_token_sets([shingle_strings(k) for k in keys], NUM_PERM, 1)


def rensa_prehashed(hashes: np.ndarray, offsets: np.ndarray) -> None:
    from rensa import RMinHash

    RMinHash.digest_matrix_from_flat_token_hashes(hashes, offsets, NUM_PERM, 1)


def with_threads(threads: int, fn: Callable[[], object]) -> object:
    """Run ``fn`` with ``numba.config.NUMBA_NUM_THREADS`` (the knob MinHasher reads) set to ``threads``."""
    saved = numba.config.NUMBA_NUM_THREADS
    numba.config.NUMBA_NUM_THREADS = threads
    try:
        return fn()
    finally:
        numba.config.NUMBA_NUM_THREADS = saved


@dataclass(slots=True)
class Row:
    name: str
    chunks: int
    fn: Callable[[], object]
    wall: list[float]
    cpu: list[float]

    def run(self) -> None:
        c0, t0 = time.process_time(), time.perf_counter()
        self.fn()
        self.wall.append(time.perf_counter() - t0)
        self.cpu.append(time.process_time() - c0)

    @property
    def seconds(self) -> float:
        return statistics.median(self.wall)

    @property
    def rate(self) -> float:
        return self.chunks / self.seconds

    @property
    def cores(self) -> float:
        return statistics.median(self.cpu) / self.seconds


# --- end to end with the LSH tier --------------------------------------------------------------------


class LazyShingles:
    """``MinHasher.shingles`` of each key, computed on first use (what the lsh tier reads)."""

    def __init__(self, hasher: MinHasher, keys: Sequence[str]) -> None:
        self.hasher, self.keys = hasher, keys
        self.cache: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i: int) -> np.ndarray:
        if i not in self.cache:
            self.cache[i] = self.hasher.shingles(self.keys[i])
        return self.cache[i]


def lsh_end_to_end(corpus: Corpus, hasher: MinHasher) -> dict[str, Any] | None:
    """Signatures + banding + candidate pairs + exact verification + leader clustering, through the
    lsh module's documented entry points; None when ``band_keys``/``candidate_pairs`` are missing."""
    try:
        lsh = importlib.import_module("chunkdedup.dedup.lsh")
    except ImportError:
        return None
    band_keys = getattr(lsh, "band_keys", None)
    candidate_pairs = getattr(lsh, "candidate_pairs", None)
    if not callable(band_keys) or not callable(candidate_pairs):
        return None
    verified_edges = getattr(lsh, "verified_edges", None)
    leader_cluster = getattr(lsh, "leader_cluster", None)
    keys = corpus.keys
    shingles = LazyShingles(hasher, keys)
    # Warm up (numba compile or cache load) on a slice, so the steps time work only.
    few = keys[:500]
    warm_pairs = candidate_pairs(band_keys(hasher.signatures(few), BANDS, ROWS))
    if callable(verified_edges):
        warm_edges, warm_sims = verified_edges(warm_pairs, LazyShingles(hasher, few), THRESHOLD)
        if callable(leader_cluster):
            leader_cluster(np.arange(len(few), dtype=np.int64), warm_edges, warm_sims, few, guard=True)
    steps: dict[str, float] = {}
    t = time.perf_counter()
    sigs = hasher.signatures(keys)
    steps["signatures"] = time.perf_counter() - t
    t = time.perf_counter()
    pairs = np.asarray(candidate_pairs(band_keys(sigs, BANDS, ROWS)), dtype=np.int64).reshape(-1, 2)
    steps["band_keys + candidate_pairs"] = time.perf_counter() - t
    t = time.perf_counter()
    if callable(verified_edges):
        edges, sims = verified_edges(pairs, shingles, THRESHOLD)
    else:
        all_sims = np.array([jaccard(shingles[int(i)], shingles[int(j)]) for i, j in pairs])
        keep = all_sims >= THRESHOLD
        edges, sims = pairs[keep], all_sims[keep]
    steps["verification (exact jaccard, shingles on demand)"] = time.perf_counter() - t
    clustering = "skipped: lsh.leader_cluster not available"
    if callable(leader_cluster):
        t = time.perf_counter()
        result = leader_cluster(np.arange(len(keys), dtype=np.int64), edges, sims, keys, guard=True)
        steps["leader_cluster (with guard)"] = time.perf_counter() - t
        leaders = int(np.sum(result.leader == np.arange(len(keys))))
        clustering = f"{leaders:,} leaders, {len(result.merges):,} merges, {len(result.variants):,} variants"
    verified = {(int(i), int(j)) if i < j else (int(j), int(i)) for i, j in edges}
    planted = {
        (min(i, s), max(i, s))
        for i, (k, s) in enumerate(zip(corpus.kind, corpus.source, strict=True))
        if k != "original" and jaccard(shingles[i], shingles[s]) >= THRESHOLD
    }
    total = sum(steps.values())
    return {
        "chunks": len(keys),
        "candidate_pairs": len(pairs),
        "verified_pairs": len(verified),
        "planted_pairs_above_threshold": len(planted),
        "planted_recall": len(planted & verified) / len(planted) if planted else 1.0,
        "clustering": clustering,
        "steps_seconds": steps,
        "seconds": total,
        "chunks_per_s": len(keys) / total,
    }


# --- main --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--chunks", type=int, default=200_000, help="corpus size (up to ~1.8M)")
    ap.add_argument("--update-sample", type=int, default=2_000, help="chunks for datasketch .update()")
    ap.add_argument("--sample", type=int, default=20_000, help="chunks for bulk/rensa reference rows")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="folder of Markdown files")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    console = Console(width=150)

    t = time.perf_counter()
    corpus = build_corpus(load_sentences(args.source), args.chunks, args.seed)
    build_s = time.perf_counter() - t
    keys = corpus.keys
    sample = keys[: min(args.sample, len(keys))]
    small = keys[: min(args.update_sample, len(keys))]
    console.print(f"corpus: {len(keys):,} chunks built and keyed in {build_s:.1f} s")

    hasher = MinHasher(NUM_PERM, SHINGLE_WORDS, seed=1)
    t = time.perf_counter()
    hasher.signatures(keys[:10])  # compile or load the numba cache
    warm_s = time.perf_counter() - t
    flat = [hasher.shingles(k) for k in sample]
    hashes = np.concatenate(flat)
    offsets = np.zeros(len(flat) + 1, dtype=np.uint64)
    np.cumsum([f.size for f in flat], out=offsets[1:])
    threads = minhash._thread_count()

    rows = [
        Row(
            "datasketch MinHash.update per shingle (seed path)",
            len(small),
            lambda: datasketch_update(small),
            [],
            [],
        ),
        Row("datasketch MinHash.bulk", len(sample), lambda: datasketch_bulk(sample), [], []),
        Row(
            "rensa digest_matrix_from_token_sets (from text)",
            len(sample),
            lambda: rensa_tokens(sample),
            [],
            [],
        ),
        Row(
            "rensa digest_matrix_from_flat_token_hashes (our shingle hashes, kernel only)",
            len(sample),
            lambda: rensa_prehashed(hashes, offsets),
            [],
            [],
        ),
        Row(
            "ours, same subsample, 1 thread",
            len(sample),
            lambda: with_threads(1, lambda: hasher.signatures(sample)),
            [],
            [],
        ),
        Row(
            "ours, all chunks, 1 thread",
            len(keys),
            lambda: with_threads(1, lambda: hasher.signatures(keys)),
            [],
            [],
        ),
        Row(
            f"ours, all chunks, {threads} threads (default)",
            len(keys),
            lambda: hasher.signatures(keys),
            [],
            [],
        ),
    ]
    for _ in range(args.repeat):
        for row in rows:
            row.run()

    ours_1 = rows[5].rate
    ours_n = rows[6].rate
    table = Table(title=f"MinHash signatures, num_perm={NUM_PERM}, {SHINGLE_WORDS}-word shingles")
    for col in (
        "row",
        "chunks",
        "seconds",
        "chunks/s",
        "cores used",
        "ours 1t / row",
        f"ours {threads}t / row",
    ):
        table.add_column(col, justify="left" if col == "row" else "right")
    for row in rows:
        table.add_row(
            row.name,
            f"{row.chunks:,}",
            f"{row.seconds:.3f}",
            f"{row.rate:,.0f}",
            f"{row.cores:.2f}",
            f"{ours_1 / row.rate:.1f}x",
            f"{ours_n / row.rate:.1f}x",
        )
    console.print(table)

    lsh = lsh_end_to_end(corpus, hasher)
    if lsh is None:
        console.print("lsh: not available yet")
    else:
        console.print(
            f"end to end (signatures + LSH {BANDS}x{ROWS} + verification at {THRESHOLD}): "
            f"{lsh['chunks_per_s']:,.0f} chunks/s, {lsh['candidate_pairs']:,} candidates, "
            f"{lsh['verified_pairs']:,} verified, planted recall {lsh['planted_recall']:.4f}; "
            f"{lsh['clustering']}"
        )
        for step, seconds in lsh["steps_seconds"].items():
            console.print(f"  {step}: {seconds:.2f} s")

    near_idx = [i for i, k in enumerate(corpus.kind) if k == "near"][:2000]
    near_j = [jaccard(hasher.shingles(keys[i]), hasher.shingles(keys[corpus.source[i]])) for i in near_idx]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(
        f"near copies vs their original, true Jaccard over {len(near_j):,}: "
        f"median {statistics.median(near_j):.3f}, min {min(near_j):.3f}, "
        f"share >= {THRESHOLD}: {np.mean(np.array(near_j) >= THRESHOLD):.3f}"
    )
    console.print(f"first call (compile or cache load): {warm_s:.2f} s; peak RSS {peak_mib:,.0f} MiB")

    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "numba": numba.__version__,
            "numpy": np.__version__,
            "threads": threads,
        },
        "corpus": {
            "source": str(args.source),
            "chunks": len(keys),
            "seed": args.seed,
            "near": corpus.kind.count("near"),
            "exact": corpus.kind.count("exact"),
            "mean_words": float(np.mean([k.count(" ") + 1 for k in sample])),
            "build_seconds": build_s,
        },
        "params": {"num_perm": NUM_PERM, "shingle_words": SHINGLE_WORDS, "repeat": args.repeat},
        "rows": [
            {
                "name": r.name,
                "chunks": r.chunks,
                "seconds_median": r.seconds,
                "seconds_all": r.wall,
                "chunks_per_s": r.rate,
                "cores_used": r.cores,
                "ours_1_thread_ratio": ours_1 / r.rate,
                "ours_default_ratio": ours_n / r.rate,
            }
            for r in rows
        ],
        "near_copy_true_jaccard": {
            "n": len(near_j),
            "median": statistics.median(near_j),
            "min": min(near_j),
            "share_at_or_above_threshold": float(np.mean(np.array(near_j) >= THRESHOLD)),
        },
        "lsh_end_to_end": lsh if lsh is not None else "not available yet",
        "first_call_seconds": warm_s,
        "peak_rss_mib": peak_mib,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
