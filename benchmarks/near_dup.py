"""Near-duplicate tier benchmark: MinHash throughput against datasketch and rensa, the whole tier
end to end on a streamed synthetic corpus, and accuracy on a labelled set built from real text.

**Synthetic corpus.** ~200-word chunks recombined from the sentences (cut into pieces of at most 40
words) of the real site-policy Markdown beside the repo: 75% originals, 15% near copies of a random
original (1-3 words replaced, deleted or inserted) and 10% exact copies. Chunk ``i`` is a pure
function of ``(seed, i, n)`` (counter-based hashing in a compiled generator), so the corpus is
streamed in batches and any chunk can be regenerated later; nothing holds all texts. Chunks are
generated directly as exact keys (lower case, single spaces): re-casing and re-wrapping are undone by
``normalize.exact_key``, which the accuracy set runs for real.

**Rows** (timed interleaved in one process, median of ``--repeat`` rounds, on the first
``--sample`` chunks): datasketch ``MinHash.update`` per shingle (the seed path, ``--update-sample``
chunks), datasketch ``MinHash.bulk``, rensa from shingle strings (what a rensa user writes) and from
our pre-hashed shingles (kernel against kernel), and ours (``MinHasher.signatures``, 1 thread and the
default threads). Every row starts from the exact keys, so Python shingling is in the reference rows.

**End to end** over every chunk, one pass in batches of ``--batch``: signatures with a 64-bit hash of
each key from the same pass (``MinHasher.signatures_and_hashes``), band keys 16 x 8; exact dedup on
the key hashes (the pipeline's exact tier); then candidate pairs of the exact
representatives; verification in blocks of pairs (regenerate the paired chunks' texts, the stand-in
for reading them back from the store, ``MinHasher.shingle_sets``, ``lsh.verified_edges_flat``,
``lsh.guard_edges``); ``lsh.leader_cluster_checked`` under both rules (``linkage="leader"`` and
``"complete"``, on the same edges, interleaved; accuracy and planted recall are reported for both
as well). Kept across the pass: band keys (n x 16
uint64) and key hashes. Generating the corpus in the first pass is input, not timed.

**Accuracy.** Real paragraphs (current and historical versions) plus, per sampled paragraph, a copy
with 1-2 words edited, re-wrapped and re-cased, a re-wrapped and re-cased copy, and where the
paragraph holds a number or date a copy with only that token changed. All through ``exact_key`` and
the same tier. Truth by brute force over every pair: a pair is positive when its exact shingle Jaccard
is >= the threshold and ``guard_diff`` is empty; found when both end in the same cluster.

Example:
    python benchmarks/near_dup.py --chunks 200000 --out benchmarks/results/near_dup.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import re
import resource
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from numba import njit
from rich.console import Console
from rich.table import Table
from xxhash import xxh3_64_intdigest

import real_pairs
from chunkdedup.dedup import minhash
from chunkdedup.dedup.guard import guard_diff
from chunkdedup.dedup.lsh import (
    LINKAGES,
    band_keys,
    candidate_pairs,
    guard_edges,
    leader_cluster_checked,
    verified_edges_flat,
)
from chunkdedup.dedup.meaning import judge_edges, numbering_only
from chunkdedup.dedup.minhash import MinHasher
from chunkdedup.normalize import exact_key

# the library's kernels are built on first call (chunkdedup.jit); this module's own njit
# functions call fmix64 as a global, so they take its dispatcher (numba types that one from the start)
fmix64 = minhash.fmix64.dispatcher()  # type: ignore[attr-defined]

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
DEFAULT_SOURCE = DATA / "site-policy" / "current"
ACCURACY_SOURCE = DATA / "site-policy"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "near_dup.json"
NUM_PERM = 128
SHINGLE_WORDS = 5
BANDS, ROWS, THRESHOLD = 16, 8, 0.85
_SENTENCE_END = re.compile(r"(?<=[.!?:;])\s+")
_DIGIT = re.compile(r"\d")

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
U8 = npt.NDArray[np.uint8]
_u64 = np.uint64
ORIGINAL, NEAR, EXACT = 0, 1, 2
MAX_WORDS = 240  # 220 words at most, plus 3 insertions
_RENDER_BATCH = 2048
MAX_SENTENCE = 40  # words per sentence piece in the synthetic corpus


# --- the synthetic corpus: chunk i is a pure function of (seed, i, n) -----------------------------


@njit(cache=True, nogil=True)
def _rand(seed: int, i: int, k: int) -> np.uint64:
    """A counter-based random uint64 for draw ``k`` of chunk ``i``."""
    h = fmix64((_u64(seed) + _u64(1)) * _u64(0x9E3779B97F4A7C15))
    h = fmix64(h ^ ((_u64(i) + _u64(1)) * _u64(0xBF58476D1CE4E5B9)))
    return fmix64(h ^ ((_u64(k) + _u64(1)) * _u64(0x94D049BB133111EB)))


@njit(cache=True, nogil=True)
def _kind(seed: int, i: int) -> int:
    u = _rand(seed, i, 0) % _u64(100)
    return ORIGINAL if u < 75 else (NEAR if u < 90 else EXACT)


@njit(cache=True, nogil=True)
def _source(seed: int, i: int, n: int) -> int:
    """The original a copy copies (-1 for an original, or a copy that found none: it is an original)."""
    if _kind(seed, i) == ORIGINAL:
        return -1
    for t in range(64):
        j = int(_rand(seed, i, 1 + t) % _u64(n))
        if j != i and _kind(seed, j) == ORIGINAL:
            return j
    return -1


@njit(cache=True, nogil=True)
def _original_words(seed: int, j: int, sent_words: I64, sent_off: I64, out: I64) -> int:
    target = 180 + int(_rand(seed, j, 100) % _u64(41))
    count = 0
    t = 0
    while count < target:
        s = int(_rand(seed, j, 101 + t) % _u64(sent_off.size - 1))
        for w in range(sent_off[s], sent_off[s + 1]):
            if count == target:
                break
            out[count] = sent_words[w]
            count += 1
        t += 1
    return count


@njit(cache=True, nogil=True)
def _chunk_words(seed: int, i: int, n: int, vocab: int, sent_words: I64, sent_off: I64, out: I64) -> int:
    j = _source(seed, i, n)
    if j < 0:
        return _original_words(seed, i, sent_words, sent_off, out)
    count = _original_words(seed, j, sent_words, sent_off, out)
    if _kind(seed, i) == EXACT:
        return count
    for e in range(1 + int(_rand(seed, i, 200) % _u64(3))):
        op = int(_rand(seed, i, 201 + 3 * e) % _u64(4))
        pos = int(_rand(seed, i, 202 + 3 * e) % _u64(count))
        word = int(_rand(seed, i, 203 + 3 * e) % _u64(vocab))
        if op <= 1:
            out[pos] = word
        elif op == 2 and count > 1:
            out[pos : count - 1] = out[pos + 1 : count].copy()
            count -= 1
        else:
            out[pos + 1 : count + 1] = out[pos:count].copy()
            out[pos] = word
            count += 1
    return count


@njit(cache=True, nogil=True)
def _render(
    items: I64, seed: int, n: int, sent_words: I64, sent_off: I64, vocab_buf: U8, vocab_off: I64
) -> tuple[U8, I64]:
    """The exact keys of ``items`` as one UTF-8 buffer and offsets (two passes: sizes, then bytes)."""
    words = np.empty(MAX_WORDS, np.int64)
    offsets = np.zeros(items.size + 1, np.int64)
    vocab = vocab_off.size - 1
    for r in range(items.size):
        c = _chunk_words(seed, items[r], n, vocab, sent_words, sent_off, words)
        size = c - 1
        for w in range(c):
            size += vocab_off[words[w] + 1] - vocab_off[words[w]]
        offsets[r + 1] = offsets[r] + size
    buf = np.empty(offsets[-1], np.uint8)
    for r in range(items.size):
        c = _chunk_words(seed, items[r], n, vocab, sent_words, sent_off, words)
        p = offsets[r]
        for w in range(c):
            if w:
                buf[p] = 32
                p += 1
            v = words[w]
            for b in range(vocab_off[v], vocab_off[v + 1]):
                buf[p] = vocab_buf[b]
                p += 1
    return buf, offsets


@njit(cache=True, nogil=True)
def _kinds_sources(items: I64, seed: int, n: int) -> tuple[I64, I64]:
    kinds = np.empty(items.size, np.int64)
    sources = np.empty(items.size, np.int64)
    for r in range(items.size):
        sources[r] = _source(seed, items[r], n)
        kinds[r] = ORIGINAL if sources[r] < 0 else _kind(seed, items[r])
    return kinds, sources


@dataclass(frozen=True, slots=True)
class Corpus:
    """The synthetic corpus: ``n`` chunks from ``seed`` over a sentence table; nothing else stored."""

    n: int
    seed: int
    sent_words: I64
    sent_off: I64
    vocab_buf: U8
    vocab_off: I64

    @classmethod
    def from_markdown(cls, root: Path, n: int, seed: int) -> Corpus:
        """Sentences (as exact-key word lists) of every Markdown file under ``root``."""
        sentences: list[list[str]] = []
        for path in sorted(root.rglob("*.md")):
            for paragraph in _body(path.read_text(encoding="utf-8")).split("\n\n"):
                for sentence in _SENTENCE_END.split(paragraph):
                    words = exact_key(sentence).split(" ")
                    # Cut long runs (lists and tables read as one sentence): two originals sharing a
                    # 150-word run would be accidental near-duplicates, and at 1.8M chunks those pairs
                    # grow quadratically and swamp the planted 15%.
                    for lo in range(0, len(words), MAX_SENTENCE):
                        if len(words[lo : lo + MAX_SENTENCE]) >= 3:
                            sentences.append(words[lo : lo + MAX_SENTENCE])
        if not sentences:
            raise SystemExit(f"no sentences under {root}: pass --source with Markdown files")
        vocabulary = sorted({w for s in sentences for w in s})
        index = {w: k for k, w in enumerate(vocabulary)}
        encoded = [w.encode("utf-8") for w in vocabulary]
        return cls(
            n=n,
            seed=seed,
            sent_words=np.array([index[w] for s in sentences for w in s], dtype=np.int64),
            sent_off=np.cumsum([0] + [len(s) for s in sentences], dtype=np.int64),
            vocab_buf=np.frombuffer(b"".join(encoded), dtype=np.uint8),
            vocab_off=np.cumsum([0] + [len(w) for w in encoded], dtype=np.int64),
        )

    def keys(self, items: I64) -> list[str]:
        """The exact keys of chunks ``items`` (any order, repeats allowed)."""
        args = (self.sent_words, self.sent_off, self.vocab_buf, self.vocab_off)
        ids = np.asarray(items, dtype=np.int64)
        out: list[str] = []
        # Small pieces: buffers under glibc's mmap threshold are reused, not page-faulted in afresh.
        for lo in range(0, ids.size, _RENDER_BATCH):
            buf, offsets = _render(ids[lo : lo + _RENDER_BATCH], self.seed, self.n, *args)
            raw = buf.tobytes()
            out.extend(raw[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets.tolist()))
        return out

    def kinds_sources(self, items: I64) -> tuple[I64, I64]:
        return _kinds_sources(np.asarray(items, dtype=np.int64), self.seed, self.n)


def _body(text: str) -> str:
    if text.startswith("---"):
        end = text.find("\n---", 3)
        return text[end + 4 :] if end != -1 else text
    return text


# --- the reference rows ------------------------------------------------------------------------------


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


def rensa_prehashed(hashes: U64, offsets: U64) -> None:
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
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

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


def reference_rows(keys: list[str], update_sample: int, hasher: MinHasher, threads: int) -> list[Row]:
    small = keys[:update_sample]
    sets = [hasher.shingles(k) for k in keys]
    hashes = np.concatenate(sets)
    offsets = np.zeros(len(sets) + 1, dtype=np.uint64)
    np.cumsum([s.size for s in sets], out=offsets[1:])
    m = len(keys)
    return [
        Row(
            "datasketch MinHash.update per shingle (seed path)", len(small), lambda: datasketch_update(small)
        ),
        Row("datasketch MinHash.bulk", m, lambda: datasketch_bulk(keys)),
        Row("rensa digest_matrix_from_token_sets (from text)", m, lambda: rensa_tokens(keys)),
        Row(
            "rensa digest_matrix_from_flat_token_hashes (our shingle hashes, kernel only)",
            m,
            lambda: rensa_prehashed(hashes, offsets),
        ),
        Row("ours, signatures, 1 thread", m, lambda: with_threads(1, lambda: hasher.signatures(keys))),
        Row(f"ours, signatures, {threads} threads (default)", m, lambda: hasher.signatures(keys)),
    ]


# --- the tier end to end, streamed --------------------------------------------------------------------


class Stages:
    """Seconds per stage, accumulated over batches."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def time(self, stage: str, fn: Callable[[], Any]) -> Any:
        t = time.perf_counter()
        out = fn()
        self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - t
        return out


def key_hashes(keys: Sequence[str]) -> U64:
    return np.fromiter((xxh3_64_intdigest(k.encode("utf-8")) for k in keys), dtype=np.uint64, count=len(keys))


def first_occurrence(hashes: U64) -> I64:
    """``rep[i]``: the smallest index with the same key hash as ``i`` (the exact tier's canonical)."""
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    start = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    run_first = order[np.flatnonzero(start)]
    rep = np.empty(hashes.size, dtype=np.int64)
    rep[order] = run_first[np.cumsum(start) - 1]
    return rep


def end_to_end(corpus: Corpus, hasher: MinHasher, batch: int, block: int) -> dict[str, Any]:
    """Stream the corpus through the tier; returns stage times, counts and each chunk's final leader."""
    n = corpus.n
    st = Stages()
    bands = np.empty((n, BANDS), dtype=np.uint64)
    hashes = np.empty(n, dtype=np.uint64)
    generate = 0.0
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        t = time.perf_counter()
        keys = corpus.keys(np.arange(lo, hi, dtype=np.int64))
        generate += time.perf_counter() - t
        sigs, hashes[lo:hi] = st.time(
            "signatures + exact key hashes", lambda keys=keys: hasher.signatures_and_hashes(keys)
        )
        bands[lo:hi] = st.time("band keys", lambda sigs=sigs: band_keys(sigs, BANDS, ROWS))
        del keys, sigs
    rep = st.time("exact dedup", lambda: first_occurrence(hashes))
    reps = np.flatnonzero(rep == np.arange(n))

    pairs = st.time("candidate pairs", lambda b=bands: reps[candidate_pairs(b[reps])])
    del bands
    edges_parts: list[I64] = []
    sims_parts: list[npt.NDArray[np.float64]] = []
    passed_parts: list[npt.NDArray[np.bool_]] = []
    tokens: dict[int, tuple[str, ...]] = {}
    regenerated = 0
    for start in range(0, pairs.shape[0], block):
        part = pairs[start : start + block]
        items = np.unique(part)
        regenerated += items.size
        keys = st.time("verify: regenerate paired texts", lambda items=items: corpus.keys(items))
        flat, offsets = st.time("verify: shingle_sets", lambda keys=keys: hasher.shingle_sets(keys))
        edges, sims = st.time(
            "verify: exact jaccard",
            lambda p=part, i=items, f=flat, o=offsets: verified_edges_flat(p, i, f, o, THRESHOLD),
        )
        by_item = dict(zip(items.tolist(), keys, strict=True))
        passed, toks = st.time("guard (verified pairs)", lambda e=edges, k=by_item: guard_edges(e, k))
        tokens.update(toks)
        edges_parts.append(edges)
        sims_parts.append(sims)
        passed_parts.append(passed)
        del keys, flat, offsets, by_item
    edges = np.concatenate(edges_parts) if edges_parts else np.empty((0, 2), dtype=np.int64)
    sims = np.concatenate(sims_parts) if sims_parts else np.empty(0)
    passed = np.concatenate(passed_parts) if passed_parts else np.empty(0, dtype=np.bool_)
    shared = sum(st.seconds.values())
    by_linkage: dict[str, dict[str, Any]] = {}
    leaders: dict[str, I64] = {}
    order = np.arange(n, dtype=np.int64)
    walls: dict[str, list[float]] = {lk: [] for lk in LINKAGES}
    for _ in range(3):  # the clustering step is short: 3 interleaved rounds, medians
        for linkage in LINKAGES:
            t = time.perf_counter()
            clusters = leader_cluster_checked(order, edges, sims, passed, tokens, linkage=linkage)
            walls[linkage].append(time.perf_counter() - t)
            leaders[linkage] = clusters.leader[rep]
            by_linkage[linkage] = {
                "leaders": int(np.sum(leaders[linkage] == np.arange(n))),
                "near_merges": len(clusters.merges),
                "variants": len(clusters.variants),
            }
            del clusters
    for linkage in LINKAGES:
        cluster_s = statistics.median(walls[linkage])
        by_linkage[linkage] |= {
            "cluster_seconds": cluster_s,
            "cluster_seconds_all": walls[linkage],
            "seconds": shared + cluster_s,
            "chunks_per_s": n / (shared + cluster_s),
        }
    default = by_linkage[LINKAGES[0]]
    return {
        "chunks": n,
        "exact_duplicates": int(n - reps.size),
        "candidate_pairs": int(pairs.shape[0]),
        "regenerated_texts": int(regenerated),
        "verified_pairs": int(edges.shape[0]),
        "guard_failed_pairs": int((~passed).sum()),
        "steps_seconds": st.seconds | {"leader_cluster_checked": default["cluster_seconds"]},
        "shared_seconds": shared,
        # The figures below are the library default (linkage="leader"); by_linkage has both rules.
        "leaders": default["leaders"],
        "near_merges": default["near_merges"],
        "variants": default["variants"],
        "seconds": default["seconds"],
        "chunks_per_s": default["chunks_per_s"],
        "by_linkage": by_linkage,
        "generate_seconds_untimed": generate,
        "leader": leaders,
    }


def planted_recall(corpus: Corpus, hasher: MinHasher, leader: I64, sample: int) -> dict[str, Any]:
    """Planted copies (a sample) against their original: true Jaccard, and whether they share a cluster."""
    rng = np.random.default_rng(corpus.seed)
    items = np.sort(rng.choice(corpus.n, min(corpus.n, sample * 4), replace=False))
    kinds, sources = corpus.kinds_sources(items)
    copies = items[kinds != ORIGINAL][:sample]
    origins = sources[kinds != ORIGINAL][:sample]
    keys_a, keys_b = corpus.keys(copies), corpus.keys(origins)
    flat, offsets = hasher.shingle_sets(keys_a + keys_b)
    m = copies.size
    pairs = np.stack((np.arange(m), np.arange(m, 2 * m)), axis=1)
    _, sims = verified_edges_flat(pairs, np.arange(2 * m), flat, offsets, 0.0)
    above = sims >= THRESHOLD
    clean = np.array([not guard_diff(a, b) for a, b in zip(keys_a, keys_b, strict=True)])
    same = leader[copies] == leader[origins]
    near = kinds[kinds != ORIGINAL][:sample] == NEAR
    return {
        "sampled_copies": int(m),
        "near_copy_true_jaccard_median": float(np.median(sims[near])) if near.any() else None,
        "near_copy_share_at_or_above_threshold": float(above[near].mean()) if near.any() else None,
        "recall_above_threshold_guard_clean": float(same[above & clean].mean())
        if (above & clean).any()
        else 1.0,
        "above_threshold_guard_clean": int((above & clean).sum()),
        "above_threshold_guard_differs": int((above & ~clean).sum()),
        "merged_guard_differs": int((same & ~clean).sum()),
    }


# --- accuracy on a labelled set built from real paragraphs --------------------------------------------


def real_paragraphs(root: Path) -> list[str]:
    """Unique paragraphs (>= 30 words after exact_key) of every Markdown file under ``root``."""
    seen: set[str] = set()
    out: list[str] = []
    for path in sorted(root.rglob("*.md")):
        for block in _body(path.read_text(encoding="utf-8")).split("\n\n"):
            key = exact_key(block)
            if key.count(" ") >= 29 and key not in seen:
                seen.add(key)
                out.append(block.strip())
    return out


def _rewrap_recase(rng: random.Random, words: list[str]) -> str:
    if rng.random() < 0.5:
        words = [w.upper() if rng.random() < 0.1 else w for w in words]
    else:
        words = [w.capitalize() if rng.random() < 0.2 else w for w in words]
    width = rng.randint(6, 14)
    return "\n".join(" ".join(words[i : i + width]) for i in range(0, len(words), width))


def _edited(rng: random.Random, words: list[str], vocabulary: list[str]) -> list[str]:
    out = list(words)
    for _ in range(rng.randint(1, 2)):
        pos = rng.randrange(len(out))
        op = rng.random()
        if op < 0.5:
            out[pos] = rng.choice(vocabulary)
        elif op < 0.75 and len(out) > 1:
            del out[pos]
        else:
            out.insert(pos, rng.choice(vocabulary))
    return out


def _number_changed(rng: random.Random, words: list[str]) -> list[str] | None:
    spots = [i for i, w in enumerate(words) if _DIGIT.search(w)]
    if not spots:
        return None
    out = list(words)
    pos = rng.choice(spots)
    digits = [k for k, c in enumerate(out[pos]) if c.isdigit()]
    k = rng.choice(digits)
    out[pos] = out[pos][:k] + str((int(out[pos][k]) + rng.randint(1, 8)) % 10) + out[pos][k + 1 :]
    return out


def accuracy(root: Path, hasher: MinHasher, per_kind: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    paragraphs = real_paragraphs(root)
    vocabulary = sorted({w for p in paragraphs for w in p.split() if not _DIGIT.search(w)})
    texts = list(paragraphs)
    numeric = [i for i, p in enumerate(paragraphs) if _DIGIT.search(p)]
    plain = rng.sample(range(len(paragraphs)), min(per_kind, len(paragraphs)))
    planted_numeric: list[tuple[int, int]] = []
    planted_edited: list[tuple[int, int]] = []
    planted_format: list[tuple[int, int]] = []
    for i in plain:
        words = paragraphs[i].split()
        planted_edited.append((i, len(texts)))
        texts.append(_rewrap_recase(rng, _edited(rng, words, vocabulary)))
        planted_format.append((i, len(texts)))
        texts.append(_rewrap_recase(rng, words))
    for i in rng.sample(numeric, min(per_kind, len(numeric))):
        changed = _number_changed(rng, paragraphs[i].split())
        # Only real variants: a digit inside an id that exact_key removes changes nothing.
        if changed is not None and guard_diff(exact_key(paragraphs[i]), exact_key(" ".join(changed))):
            planted_numeric.append((i, len(texts)))
            texts.append(_rewrap_recase(rng, changed))
    keys = [exact_key(t) for t in texts]
    m = len(keys)
    rep = first_occurrence(key_hashes(keys))
    reps = np.flatnonzero(rep == np.arange(m))
    sigs = hasher.signatures([keys[i] for i in reps])
    pairs = reps[candidate_pairs(band_keys(sigs, BANDS, ROWS))]
    flat, offsets = hasher.shingle_sets(keys)
    items = np.arange(m, dtype=np.int64)
    edges, sims = verified_edges_flat(pairs, items, flat, offsets, THRESHOLD)
    passed, tokens = guard_edges(edges, keys)
    # The library default adds ``near.numbering`` and the meaning guard, which read the texts as written
    # (items in index order: each paragraph ranks before its copies).
    judged, why = judge_edges(edges, items, passed, texts.__getitem__)
    # Brute force: every pair's exact Jaccard, then the guard on the pairs at or above the threshold.
    left, right = np.triu_indices(m, k=1)
    every = np.stack((left, right), axis=1).astype(np.int64)
    close, _ = verified_edges_flat(every, items, flat, offsets, THRESHOLD)
    clean = np.array([not guard_diff(keys[a], keys[b]) for a, b in close.tolist()], dtype=np.bool_)
    positive = close[clean]
    identical = np.array([keys[a] == keys[b] for a, b in positive.tolist()], dtype=np.bool_)
    true_pairs = {(int(a), int(b)) for a, b in positive.tolist()}
    planted_sims = verified_edges_flat(np.array(planted_numeric).reshape(-1, 2), items, flat, offsets, 0.0)[1]
    by_linkage = {}
    for linkage in LINKAGES:
        leader = leader_cluster_checked(items, edges, sims, passed, tokens, linkage=linkage).leader[rep]
        found = leader[positive[:, 0]] == leader[positive[:, 1]]
        same = np.flatnonzero(leader[left] == leader[right])
        same_pairs = {(int(left[k]), int(right[k])) for k in same}
        false_pairs = np.array(sorted(same_pairs - true_pairs), dtype=np.int64).reshape(-1, 2)
        _, false_sims = verified_edges_flat(false_pairs, items, flat, offsets, 0.0)
        differs = sum(bool(guard_diff(keys[a], keys[b])) for a, b in same_pairs)
        # Merge precision: each member against the leader it joined (the decision the tier stores).
        members = np.flatnonzero(leader != np.arange(m))
        joined = {(int(min(i, leader[i])), int(max(i, leader[i]))) for i in members}
        lost = positive[~found]
        size = np.bincount(leader, minlength=m)
        by_linkage[linkage] = {
            "leader": leader,
            "same_cluster_pairs": len(same_pairs),
            "precision": len(same_pairs & true_pairs) / len(same_pairs) if same_pairs else 1.0,
            "false_same_cluster_pairs": len(false_pairs),
            "false_pairs_jaccard_range": [float(false_sims.min()), float(false_sims.max())]
            if false_sims.size
            else [],
            "merges": len(joined),
            "merge_precision": len(joined & true_pairs) / len(joined) if joined else 1.0,
            "recall": float(found.mean()) if found.size else 1.0,
            "recall_not_identical": float(found[~identical].mean()) if (~identical).any() else 1.0,
            "missed_positive_pairs": int(lost.shape[0]),
            # Lost pairs split between two clusters of >= 2 (complete linkage's cost: a copy close
            # to the leader but not to an earlier member starts or joins another cluster).
            "missed_pairs_both_in_multi_member_clusters": int(
                ((size[leader[lost[:, 0]]] > 1) & (size[leader[lost[:, 1]]] > 1)).sum()
            ),
            "number_date_variants_merged": sum(int(leader[a] == leader[b]) for a, b in planted_numeric),
            "same_cluster_pairs_with_number_date_difference": differs,
        }
    # The default guards (number/date + numbering + meaning), leader rule: what the meaning guard costs
    # the synthetic set's recall (its edits replace random words of the corpus, names and "not"
    # among them: a pair the truth counts as a copy may say something else) and which reasons fire.
    leader = leader_cluster_checked(items, edges, sims, judged, tokens, "leader", why).leader[rep]
    found = leader[positive[:, 0]] == leader[positive[:, 1]]
    plain_leader = by_linkage[LINKAGES[0]].pop("leader")
    for lk in LINKAGES[1:]:
        by_linkage[lk].pop("leader")

    def merged(planted: list[tuple[int, int]], lead: npt.NDArray[np.int64]) -> dict[str, int]:
        """Planted copies at or above the threshold (and number-clean), and how many share a cluster."""
        pos = [(a, b) for a, b in planted if (min(a, b), max(a, b)) in true_pairs]
        return {"positive": len(pos), "merged": sum(int(lead[a] == lead[b]) for a, b in pos)}

    released = [(a, b) for a, b in planted_numeric if numbering_only(texts[a], texts[b])]
    by_linkage["leader+meaning"] = {
        "recall": float(found.mean()) if found.size else 1.0,
        "recall_not_identical": float(found[~identical].mean()) if (~identical).any() else 1.0,
        "missed_positive_pairs": int((~found).sum()),
        # copies only re-wrapped and re-cased (no word changed): the guard must merge every one
        "format_copies": merged(planted_format, leader),
        # copies with 1-2 words replaced, deleted or inserted at random (a name, "not", "may" among
        # them): where the guard keeps one apart, the edit changed a word it reads as meaning
        "edited_copies": merged(planted_edited, leader),
        "edited_copies_without_the_guard": merged(planted_edited, plain_leader),
        "number_date_variants_merged": sum(int(leader[a] == leader[b]) for a, b in planted_numeric),
        # the planted change hit an enumeration label, a page-number line or a link target: numbering
        "number_date_variants_numbering_only": len(released),
        "number_date_variants_merged_in_the_text": sum(
            int(leader[a] == leader[b]) for a, b in planted_numeric if (a, b) not in released
        ),
        "edges_kept_apart_by_reason": dict(sorted(Counter(r for r, _ in why.values()).items())),
        "edges_released_by_numbering": int((judged & ~passed).sum()),
    }
    return {
        "paragraphs": len(paragraphs),
        "texts": m,
        "all_pairs": int(every.shape[0]),
        "pairs_at_or_above_threshold": int(close.shape[0]),
        "positive_pairs": len(true_pairs),
        "positive_pairs_not_identical": int((~identical).sum()),
        "number_date_variants_planted": len(planted_numeric),
        "number_date_variants_at_or_above_threshold": int((planted_sims >= THRESHOLD).sum()),
        # The figures of the library default (linkage="leader") at the top level, as before.
        **by_linkage[LINKAGES[0]],
        "by_linkage": by_linkage,
    }


def print_accuracy(console: Console, acc: dict[str, Any]) -> None:
    """The accuracy set's figures, each rule, and the default guards beside them."""
    a = acc
    console.print(
        f"accuracy ({a['texts']:,} texts from {a['paragraphs']:,} real paragraphs, {a['all_pairs']:,} pairs;"
        f" {a['positive_pairs']:,} positives, {a['positive_pairs_not_identical']:,} not identical after"
        f" exact_key; {a['number_date_variants_planted']} number/date-only variants planted,"
        f" {a['number_date_variants_at_or_above_threshold']} at or above {THRESHOLD}):"
    )
    for lk in LINKAGES:
        r_acc = a["by_linkage"][lk]
        console.print(
            f"  linkage={lk}: merge precision (each copy vs the canonical it joined, the leader rule's"
            f" decision) {r_acc['merge_precision']:.4f} over {r_acc['merges']:,} (target >= 0.99);"
            f" recall {r_acc['recall']:.4f} (target >= 0.95; {r_acc['recall_not_identical']:.4f} not"
            f" identical); number/date-only variants merged {r_acc['number_date_variants_merged']}"
            f" (target 0); all-pairs precision (every two copies in a canonical)"
            f" {r_acc['precision']:.4f}; {r_acc['false_same_cluster_pairs']} same-cluster pairs below the"
            f" threshold, Jaccard {r_acc['false_pairs_jaccard_range']}; {r_acc['missed_positive_pairs']}"
            f" positives missed, {r_acc['missed_pairs_both_in_multi_member_clusters']} of them split"
            " between two clusters of >= 2"
        )
    g = a["by_linkage"]["leader+meaning"]
    fmt, ed, ed0 = g["format_copies"], g["edited_copies"], g["edited_copies_without_the_guard"]
    console.print(
        f"  linkage=leader with the default guards (number/date + numbering + meaning): recall"
        f" {g['recall']:.4f} ({g['recall_not_identical']:.4f} not identical), {g['missed_positive_pairs']}"
        f" positives missed; re-wrapped/re-cased copies merged {fmt['merged']} of {fmt['positive']};"
        f" copies with 1-2 random words edited merged {ed['merged']} of {ed['positive']} (without the"
        f" meaning guard {ed0['merged']}); number/date-only variants merged"
        f" {g['number_date_variants_merged']} of which {g['number_date_variants_merged_in_the_text']}"
        f" changed a number in the text ({g['number_date_variants_numbering_only']} planted changes hit"
        f" only an enumeration label, a page-number line or a link target); edges kept apart by the"
        f" meaning guard {g['edges_kept_apart_by_reason']}, released by numbering"
        f" {g['edges_released_by_numbering']}"
    )


def real_pairs_figures(work: Path | None) -> dict[str, Any]:
    """The guards on the labelled real pairs (``benchmarks/real_pairs.py``), printed and returned."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = work or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        pairs = [
            p
            for c in real_pairs.CORPORA
            for p in real_pairs.corpus_pairs(c, real_pairs.index_for(c, real_pairs.DATA, folder))
        ]
    result = real_pairs.evaluate(pairs, list(real_pairs.read_jsonl(real_pairs.LABELS)))
    print("labelled real pairs (sec-10q, site-policy, ntsb, terms; benchmarks/data/real_pairs_labels.jsonl):")
    real_pairs.print_evaluation(result)
    return result


# --- main --------------------------------------------------------------------------------------------


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--chunks", type=int, default=200_000, help="corpus size (up to ~1.8M)")
    ap.add_argument("--update-sample", type=int, default=2_000, help="chunks for datasketch .update()")
    ap.add_argument("--sample", type=int, default=20_000, help="chunks for the side-by-side rows")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of the side-by-side rows; medians")
    ap.add_argument("--batch", type=int, default=50_000, help="chunks per streamed batch")
    ap.add_argument("--block", type=int, default=50_000, help="candidate pairs per verification block")
    ap.add_argument("--accuracy-per-kind", type=int, default=800, help="copies of each kind in the set")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="folder of Markdown files")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument(
        "--accuracy-only", action="store_true",
        help="only the accuracy set and the labelled real pairs (no throughput rows); writes --out",
    )
    ap.add_argument("--work", type=Path, help="keep the real pairs' candidate indexes here (and reuse them)")
    args = ap.parse_args(argv)
    console = Console(width=150)
    wall0 = time.perf_counter()
    if args.accuracy_only:
        hasher = MinHasher(NUM_PERM, SHINGLE_WORDS, seed=1)
        acc = accuracy(ACCURACY_SOURCE, hasher, args.accuracy_per_kind, args.seed)
        print_accuracy(console, acc)
        real = real_pairs_figures(args.work)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        both = {"accuracy": acc, "real_pairs": real}
        args.out.write_text(json.dumps(both, indent=2) + "\n", encoding="utf-8")
        console.print(f"wrote {args.out} in {time.perf_counter() - wall0:.1f} s")
        return 0

    t = time.perf_counter()
    corpus = Corpus.from_markdown(args.source, args.chunks, args.seed)
    hasher = MinHasher(NUM_PERM, SHINGLE_WORDS, seed=1)
    warm = corpus.keys(np.arange(min(600, args.chunks), dtype=np.int64))
    hasher.signatures(warm[:10])
    hasher.signatures_and_hashes(warm[:10])  # the streamed tier's kernel: compile or load it here
    warm_flat, warm_off = hasher.shingle_sets(warm)
    warm_pairs = candidate_pairs(band_keys(hasher.signatures(warm), BANDS, ROWS))
    warm_items = np.arange(len(warm), dtype=np.int64)
    warm_edges, warm_sims = verified_edges_flat(warm_pairs, warm_items, warm_flat, warm_off, 0.0)
    warm_passed, warm_tokens = guard_edges(warm_edges, warm)
    for lk in LINKAGES:
        leader_cluster_checked(warm_items, warm_edges, warm_sims, warm_passed, warm_tokens, linkage=lk)
    warm_s = time.perf_counter() - t
    console.print(f"setup (sentence table, compile or load numba caches): {warm_s:.2f} s")

    # The tier first, in a fresh heap: its peak RSS is then its own, not the reference rows' leftovers.
    e2e = end_to_end(corpus, hasher, args.batch, args.block)
    leaders = e2e.pop("leader")
    e2e["peak_rss_mib_after"] = peak_rss_mib()
    planted_by = {lk: planted_recall(corpus, hasher, leaders[lk], 20_000) for lk in LINKAGES}
    planted = planted_by[LINKAGES[0]] | {"by_linkage": planted_by}
    del leaders
    acc = accuracy(ACCURACY_SOURCE, hasher, args.accuracy_per_kind, args.seed)
    threads = minhash._thread_count()
    sample = corpus.keys(np.arange(min(args.sample, args.chunks), dtype=np.int64))
    rows = reference_rows(sample, args.update_sample, hasher, threads)
    for _ in range(args.repeat):
        for row in rows:
            row.run()
    del sample
    console.print(
        f"end to end done with peak RSS {e2e['peak_rss_mib_after']:,.0f} MiB; side-by-side rows done"
    )

    peak = peak_rss_mib()
    sign_rate = corpus.n / e2e["steps_seconds"]["signatures + exact key hashes"]
    e2e_rate = e2e["chunks_per_s"]

    table = Table(title=f"MinHash signatures, num_perm={NUM_PERM}, {SHINGLE_WORDS}-word shingles")
    for col in ("row", "chunks", "seconds", "chunks/s", "cores", "ours 1t /", f"ours {threads}t /"):
        table.add_column(col, justify="left" if col == "row" else "right")
    ours_1, ours_n = rows[4].rate, rows[5].rate
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
    table.add_row("ours, signatures, all chunks streamed", f"{corpus.n:,}", "", f"{sign_rate:,.0f}", "")
    for lk, b in e2e["by_linkage"].items():
        table.add_row(
            f"ours, end to end, all chunks, linkage={lk}",
            f"{corpus.n:,}",
            f"{b['seconds']:.2f}",
            f"{b['chunks_per_s']:,.0f}",
        )
    console.print(table)
    seed_rate, rensa_rate = rows[0].rate, rows[2].rate
    ratios = {
        "signatures_vs_seed_path": ours_n / seed_rate,
        "signatures_vs_rensa_from_text": ours_n / rensa_rate,
        "streamed_signatures_vs_seed_path": sign_rate / seed_rate,
        "streamed_signatures_vs_rensa_from_text": sign_rate / rensa_rate,
        "end_to_end_vs_seed_path": e2e_rate / seed_rate,
        "end_to_end_vs_rensa_from_text": e2e_rate / rensa_rate,
    }
    r = ratios
    console.print(
        "ratios (targets: >= 50x seed path, >= 2.5x rensa from text):"
        f" signatures {r['signatures_vs_seed_path']:.0f}x / {r['signatures_vs_rensa_from_text']:.1f}x;"
        f" streamed {r['streamed_signatures_vs_seed_path']:.0f}x"
        f" / {r['streamed_signatures_vs_rensa_from_text']:.1f}x;"
        f" end to end {r['end_to_end_vs_seed_path']:.0f}x / {r['end_to_end_vs_rensa_from_text']:.1f}x"
    )
    e = e2e
    console.print(
        f"end to end: {e['seconds']:.2f} s for {corpus.n:,} chunks ({e2e_rate:,.0f}/s;"
        f" target <= 30 s at 1.8M): {e['exact_duplicates']:,} exact duplicates,"
        f" {e['candidate_pairs']:,} candidates, {e['regenerated_texts']:,} texts regenerated,"
        f" {e['verified_pairs']:,} verified, {e['leaders']:,} leaders, {e['near_merges']:,} near merges,"
        f" {e['variants']:,} variants"
    )
    for step, seconds in e["steps_seconds"].items():
        console.print(f"  {step}: {seconds:.2f} s")
    for lk, b in e["by_linkage"].items():
        console.print(
            f"  leader_cluster_checked, linkage={lk}: {b['cluster_seconds']:.3f} s (median of 3,"
            f" interleaved); end to end {b['seconds']:.2f} s"
        )
    console.print(
        f"  (untimed: generating the corpus in the first pass {e['generate_seconds_untimed']:.2f} s)"
    )
    pl = planted
    console.print(
        f"planted copies, linkage={LINKAGES[0]} (sample of {pl['sampled_copies']:,}):"
        " same cluster as their original"
        f" {pl['recall_above_threshold_guard_clean']:.4f} of {pl['above_threshold_guard_clean']:,}"
        f" at or above {THRESHOLD} and guard-clean; {pl['merged_guard_differs']} of"
        f" {pl['above_threshold_guard_differs']:,} differing in a number merged;"
        f" near copies' true Jaccard median {pl['near_copy_true_jaccard_median']:.3f}"
    )
    print_accuracy(console, acc)
    real = real_pairs_figures(args.work)
    a = acc
    rules = Table(
        title=f"clustering rule (linkage), threshold {THRESHOLD}: accuracy set, then {corpus.n:,} chunks"
    )
    for col in (
        "linkage",
        "all-pairs precision",
        "recall",
        "recall (not identical)",
        "merge precision",
        "false / same-cluster pairs",
        "missed pairs",
        "number/date merged",
        "planted recall",
        "cluster s",
        "end to end s",
    ):
        rules.add_column(col, justify="left" if col == "linkage" else "right")
    for lk in LINKAGES:
        r_acc, r_e2e, r_pl = a["by_linkage"][lk], e["by_linkage"][lk], planted_by[lk]
        rules.add_row(
            lk,
            f"{r_acc['precision']:.4f}",
            f"{r_acc['recall']:.4f}",
            f"{r_acc['recall_not_identical']:.4f}",
            f"{r_acc['merge_precision']:.4f}",
            f"{r_acc['false_same_cluster_pairs']:,} / {r_acc['same_cluster_pairs']:,}",
            f"{r_acc['missed_positive_pairs']:,}",
            f"{r_acc['number_date_variants_merged']} of {a['number_date_variants_planted']}",
            f"{r_pl['recall_above_threshold_guard_clean']:.4f}",
            f"{r_e2e['cluster_seconds']:.3f}",
            f"{r_e2e['seconds']:.2f}",
        )
    console.print(rules)
    console.print(
        "  (targets: precision >= 0.99 (merge precision: the leader rule's decision), recall >= 0.95,"
        " 0 number/date-only variants merged)"
    )
    wall = time.perf_counter() - wall0
    console.print(
        f"peak RSS {peak:,.0f} MiB for the whole command, {e2e['peak_rss_mib_after']:,.0f} MiB at the end of"
        f" the streamed tier (target < 2048); whole command {wall:.1f} s"
    )

    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "numba": numba.__version__,
            "numpy": np.__version__,
            "threads": threads,
        },
        "corpus": {"source": str(args.source), "chunks": corpus.n, "seed": args.seed, "batch": args.batch},
        "params": {
            "num_perm": NUM_PERM,
            "shingle_words": SHINGLE_WORDS,
            "bands": BANDS,
            "rows": ROWS,
            "threshold": THRESHOLD,
            "repeat": args.repeat,
        },
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
        "streamed_signatures_chunks_per_s": sign_rate,
        "ratios": ratios,
        "end_to_end": e2e,
        "planted": planted,
        "accuracy": acc,
        "real_pairs": real,
        "setup_seconds": warm_s,
        "peak_rss_mib": peak,
        "wall_seconds": wall,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
