"""MinHash signatures over word shingles of exact keys: the compiled hot path of the near tier.

The kernel works on many keys at once. A batch of keys becomes one UTF-8 byte buffer and an
offsets array; one compiled pass per key then

1. hashes each word (a maximal run of bytes other than the space) with FNV-1a 64,
2. combines ``shingle_words`` consecutive word hashes into an order-sensitive 64-bit shingle hash
   (FNV-style fold, then the murmur3 64-bit finaliser),
3. takes, for each of ``num_perm`` permutations, the minimum over shingles of the multiply-add-shift
   hash ``(a_i * h + b_i) mod 2**64 >> 32`` (``a_i`` odd), which is the signature slot (uint32).

A key with fewer words than ``shingle_words`` has one shingle of all its words; a key with no words
has no shingles and the signature ``0xFFFFFFFF`` in every slot. ``shingles`` runs steps 1-2 with the
same compiled code, so the exact ``jaccard`` of two keys' shingle sets is what the signatures
estimate.

Determinism: the permutation parameters are the first ``2 * num_perm`` raw outputs of NumPy's
``PCG64(seed)`` bit generator (a stream NumPy keeps stable across versions, unlike ``Generator``
methods), and the kernel is integer arithmetic only, so the same ``(num_perm, shingle_words, seed)``
give identical signatures on every run and machine. Parameters are drawn in pairs, so the first
``m`` slots of a ``num_perm=n`` signature equal a ``num_perm=m`` signature with the same seed.

Nothing compiles at import, and numba is not even imported (:mod:`chunkdedup.jit`): numba
compiles the kernels on first call and caches them on disk (``cache=True``). The kernels release the
GIL; ``signatures`` spreads batches over ``numba.config.NUMBA_NUM_THREADS`` threads (set the
``NUMBA_NUM_THREADS`` environment variable to change it; ``1`` keeps everything on the calling thread).

**Two paths, one result.** ``MinHasher(compiled=False)`` computes the same signatures and shingles
with NumPy array operations (a loop over byte positions of all words at once, then over the
``shingle_words`` of all shingles at once, then over the permutations): bit for bit what the kernels
give, at a few times their cost per key but without numba's second of start-up. A run with a few
hundred keys to sign (an incremental ingest) is done before numba would have loaded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np
import numpy.typing as npt

from chunkdedup.config import NearConfig
from chunkdedup.dedup.settings import NUMPY_CHARS, NUMPY_KEYS
from chunkdedup.errors import ConfigError
from chunkdedup.jit import kernel

__all__ = ["NUMPY_CHARS", "NUMPY_KEYS", "MinHasher", "jaccard"]

U8Array = npt.NDArray[np.uint8]
U32Array = npt.NDArray[np.uint32]
U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# Keys per kernel call: bounds the transient byte buffer (~1.3 KB per 200-word key -> ~10 MB).
_BATCH = 8192
# Below this many keys per thread, threads cost more than they save.
_MIN_KEYS_PER_THREAD = 512

_U64 = np.uint64
_FNV_OFFSET = _U64(0xCBF29CE484222325)
_FNV_PRIME = _U64(0x100000001B3)
_SHINGLE_SEED = _U64(0x9E3779B97F4A7C15)
_SET_SEED = _U64(0xD6E8FEB86659FD93)  # a shingle set's hash starts apart from a shingle's
_SPACE = 32
#: a kernel's zero start for a value it passes to another kernel: typed int64, where
#: the literal 0 is typed as that constant, and numba compiles the callee for it a second time
_ZERO = cast(int, np.int64(0))
#: the NumPy path hashes a byte position as one array step while this many words are that long
#: (fewer: the rest of their bytes in Python, cheaper than a step per byte for a few words)
_ARRAY_WORDS = 24


# ---------------------------------------------------------------------------------------------
# Compiled kernels (numba compiles on first call; nothing runs at import)
# ---------------------------------------------------------------------------------------------


@kernel
def fmix64(h: np.uint64) -> np.uint64:
    """murmur3's 64-bit finaliser: full avalanche, so shingle hashes look random to the permutations."""
    h ^= h >> _U64(33)
    h *= _U64(0xFF51AFD7ED558CCD)
    h ^= h >> _U64(33)
    h *= _U64(0xC4CEB9FE1A85EC53)
    h ^= h >> _U64(33)
    return h


@kernel
def _shingle_hashes(buf: U8Array, lo: int, hi: int, k: int, words: U64Array, out: U64Array) -> int:
    """Write the shingle hashes of ``buf[lo:hi]`` to ``out``; return how many (0 for no words).

    ``words`` and ``out`` are scratch of at least ``(hi - lo) // 2 + 1`` slots.
    """
    nw = 0
    h = _FNV_OFFSET
    in_word = False
    for i in range(lo, hi):
        c = buf[i]
        if c == _SPACE:
            if in_word:
                words[nw] = h
                nw += 1
                in_word = False
                h = _FNV_OFFSET
        else:
            h = (h ^ _U64(c)) * _FNV_PRIME
            in_word = True
    if in_word:
        words[nw] = h
        nw += 1
    if nw == 0:
        return 0
    width = k if nw >= k else nw
    count = nw - width + 1
    for s in range(count):
        g = _SHINGLE_SEED
        for j in range(width):
            g = (g ^ words[s + j]) * _FNV_PRIME
        out[s] = fmix64(g)
    return count


@kernel
def _min_hashes(shingles: U64Array, count: int, a: U64Array, b: U64Array, out: U32Array) -> None:
    """``out[p]``: the top 32 bits of the least ``a[p] * h + b[p]`` over the first ``count`` shingles."""
    # Permutations outer, shingles inner: the inner min-reduction vectorises (64-bit multiply).
    # The shift is monotone, so min-then-shift equals shift-then-min.
    for p in range(a.size):
        ap = a[p]
        bp = b[p]
        m = _U64(0xFFFFFFFFFFFFFFFF)
        for s in range(count):
            v = ap * shingles[s] + bp
            if v < m:
                m = v
        out[p] = np.uint32(m >> _U64(32))


@kernel
def _signature_kernel(
    buf: U8Array, offsets: I64Array, a: U64Array, b: U64Array, k: int, out: U32Array
) -> None:
    """Fill ``out[r]`` with the signature of key ``r`` = ``buf[offsets[r]:offsets[r + 1]]``."""
    n = offsets.size - 1
    longest = 0
    for r in range(n):
        length = offsets[r + 1] - offsets[r]
        if length > longest:
            longest = length
    words = np.empty(longest // 2 + 1, np.uint64)
    shingles = np.empty(longest // 2 + 1, np.uint64)
    for r in range(n):
        count = _shingle_hashes(buf, offsets[r], offsets[r + 1], k, words, shingles)
        _min_hashes(shingles, count, a, b, out[r])


@kernel
def _longest(offsets: I64Array) -> int:
    """The longest key's bytes, of keys ``buf[offsets[r]:offsets[r + 1]]``."""
    longest = 0
    for r in range(offsets.size - 1):
        longest = max(longest, offsets[r + 1] - offsets[r])
    return longest


@kernel
def _insertion_sort(a: U64Array, n: int) -> None:
    """Sort ``a[:n]`` in place: linear on values nearly in order, or on a few values."""
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@kernel
def _set_hash(distinct: U64Array, m: int) -> np.uint64:
    """A 64-bit hash of the set ``distinct[:m]`` (sorted in place first): equal sets, equal hashes."""
    _insertion_sort(distinct, m)
    g = fmix64(_SET_SEED ^ _U64(m))
    for i in range(m):
        g = (g ^ distinct[i]) * _FNV_PRIME
    return fmix64(g)


@kernel
def _sketch_kernel(
    buf: U8Array,
    offsets: I64Array,
    a: U64Array,
    b: U64Array,
    k: int,
    small: int,
    out: U32Array,
    single: BoolArray,
    sets: U64Array,
) -> None:
    """For key ``r``: if its shingle set has at most ``small`` members, ``single[r]`` and ``sets[r]``, the
    hash of that set (``out[r]`` is left as it was); else its signature in ``out[r]``. One pass over the
    shingles either way: the distinct ones are counted only up to ``small + 1``."""
    n = offsets.size - 1
    longest = _longest(offsets)
    words = np.empty(longest // 2 + 1, np.uint64)
    shingles = np.empty(longest // 2 + 1, np.uint64)
    distinct = np.empty(max(small, 0) + 1, np.uint64)
    for r in range(n):
        count = _shingle_hashes(buf, offsets[r], offsets[r + 1], k, words, shingles)
        m = 0
        for s in range(count):
            h = shingles[s]
            seen = False
            for t in range(m):
                if distinct[t] == h:
                    seen = True
                    break
            if not seen:
                if m == small or small < 0:
                    m = small + 1
                    break
                distinct[m] = h
                m += 1
        if m <= small:
            single[r] = True
            sets[r] = _set_hash(distinct, m)
        else:
            single[r] = False
            sets[r] = _U64(0)
            _min_hashes(shingles, count, a, b, out[r])


@kernel
def _word_count(buf: U8Array, lo: int, hi: int) -> int:
    nw = 0
    in_word = False
    for i in range(lo, hi):
        if buf[i] == _SPACE:
            in_word = False
        elif not in_word:
            in_word = True
            nw += 1
    return nw


@kernel
def _signature_hash_kernel(
    buf: U8Array, offsets: I64Array, a: U64Array, b: U64Array, k: int, out: U32Array, hashes: U64Array
) -> None:
    """``_signature_kernel``, and ``hashes[r]``: a 64-bit hash of key ``r``'s word sequence."""
    n = offsets.size - 1
    longest = _longest(offsets)
    words = np.empty(longest // 2 + 1, np.uint64)
    shingles = np.empty(longest // 2 + 1, np.uint64)
    for r in range(n):
        count = _shingle_hashes(buf, offsets[r], offsets[r + 1], k, words, shingles)
        # The word hashes are still in ``words``: fold them in order (the word count, then each word).
        # Many shingles: count + k - 1 words; one shingle: 1 to k words, counted.
        nw = count + k - 1 if count > 1 else (_word_count(buf, offsets[r], offsets[r + 1]) if count else 0)
        g = fmix64(_SHINGLE_SEED ^ _U64(nw))
        for w in range(nw):
            g = (g ^ words[w]) * _FNV_PRIME
        hashes[r] = fmix64(g)
        _min_hashes(shingles, count, a, b, out[r])


@kernel
def _key_shingles(buf: U8Array, k: int) -> U64Array:
    """All shingle hashes of one key (unsorted, with repeats)."""
    words = np.empty(buf.size // 2 + 1, np.uint64)
    out = np.empty(buf.size // 2 + 1, np.uint64)
    count = _shingle_hashes(buf, _ZERO, buf.size, k, words, out)
    return out[:count].copy()


@kernel
def _shingle_bounds(buf: U8Array, offsets: I64Array, k: int) -> I64Array:
    """An upper bound on each key's shingle count: its word count less ``k - 1`` (1 for a short key)."""
    n = offsets.size - 1
    out = np.empty(n, np.int64)
    for r in range(n):
        nw = 0
        in_word = False
        for i in range(offsets[r], offsets[r + 1]):
            if buf[i] == _SPACE:
                in_word = False
            elif not in_word:
                in_word = True
                nw += 1
        out[r] = 0 if nw == 0 else (nw - k + 1 if nw >= k else 1)
    return out


@kernel
def _sort_hashes(a: U64Array, n: int, out: U64Array, counts: I64Array) -> None:
    """Sort ``a[:n]`` into ``out[:n]``: scatter by the top bits, then insertion sort.

    Shingle hashes leave murmur's finaliser uniformly spread, so with about one bucket per value
    the scatter leaves only a few inversions (equal values cost none) and the pass is linear:
    ~4x faster than a comparison sort on ~200 values. ``counts`` has >= 2 * n + 2 slots.
    """
    if n == 0:
        return
    bits = 1
    while (1 << bits) < n:
        bits += 1
    shift = _U64(64 - bits)
    buckets = 1 << bits
    counts[:buckets] = 0
    for i in range(n):
        counts[np.int64(a[i] >> shift)] += 1
    total = np.int64(0)
    for b in range(buckets):
        c = counts[b]
        counts[b] = total
        total += c
    for i in range(n):
        d = np.int64(a[i] >> shift)
        out[counts[d]] = a[i]
        counts[d] += 1
    _insertion_sort(out, n)


@kernel
def _shingle_sets_kernel(
    buf: U8Array, offsets: I64Array, k: int, starts: I64Array, out: U64Array
) -> I64Array:
    """Write key ``r``'s sorted unique shingle hashes to ``out[starts[r]:]``; return each key's count."""
    n = offsets.size - 1
    longest = 0
    for r in range(n):
        longest = max(longest, offsets[r + 1] - offsets[r])
    words = np.empty(longest // 2 + 1, np.uint64)
    scratch = np.empty(longest // 2 + 1, np.uint64)
    ordered = np.empty(longest // 2 + 1, np.uint64)
    buckets = np.empty(longest + 4, np.int64)
    counts = np.empty(n, np.int64)
    for r in range(n):
        count = _shingle_hashes(buf, offsets[r], offsets[r + 1], k, words, scratch)
        _sort_hashes(scratch, count, ordered, buckets)
        lo = starts[r]
        m = 0
        for s in range(count):
            if m == 0 or ordered[s] != out[lo + m - 1]:
                out[lo + m] = ordered[s]
                m += 1
        counts[r] = m
    return counts


@kernel
def _compact(src: U64Array, starts: I64Array, counts: I64Array, dst: U64Array, dst_offsets: I64Array) -> None:
    for r in range(counts.size):
        a = starts[r]
        b = dst_offsets[r]
        for s in range(counts[r]):
            dst[b + s] = src[a + s]


@kernel
def intersection_size(a: U64Array, b: U64Array) -> int:
    i = 0
    j = 0
    n = 0
    while i < a.size and j < b.size:
        x = a[i]
        y = b[j]
        if x == y:
            n += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return n


# ---------------------------------------------------------------------------------------------
# The NumPy paths: the kernels' arithmetic over whole arrays (uint64 array arithmetic wraps)
# ---------------------------------------------------------------------------------------------


def fmix64_array(h: U64Array) -> U64Array:
    """:func:`fmix64` of every value of ``h``."""
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> _U64(33))
    h = h * _U64(0xC4CEB9FE1A85EC53)
    out: U64Array = h ^ (h >> _U64(33))
    return out


def _word_spans(buf: U8Array, offsets: I64Array) -> tuple[I64Array, I64Array, I64Array]:
    """(start, end) byte offsets of every word of every key, and each key's word count: a word is a
    maximal run of non-space bytes inside one key."""
    n = offsets.size - 1
    word = buf != _SPACE
    first = word.copy()
    first[1:] &= ~word[:-1]
    last = word.copy()
    last[:-1] &= ~word[1:]
    # a word never runs over a key boundary
    begins = offsets[:-1][offsets[:-1] < buf.size]
    first[begins] = word[begins]
    finals = offsets[1:][offsets[1:] > 0] - 1
    last[finals] = word[finals]
    starts = np.flatnonzero(first)
    ends = np.flatnonzero(last) + 1
    key_of = np.searchsorted(offsets, starts, side="right") - 1
    counts: I64Array = np.bincount(key_of, minlength=n).astype(np.int64)
    return starts, ends, counts


def _word_hashes(buf: U8Array, starts: I64Array, ends: I64Array) -> U64Array:
    """FNV-1a 64 of every word: one array step per byte position over every word that long (longest
    first) while at least ``_ARRAY_WORDS`` words are; the few longer words go on in Python."""
    lengths = ends - starts
    order = np.argsort(-lengths, kind="stable")
    at = starts[order]
    h = np.full(order.size, _FNV_OFFSET, dtype=np.uint64)
    longer = order.size - np.cumsum(np.bincount(lengths, minlength=1))  # words longer than j bytes
    top = int(lengths.max(initial=0))
    j = 0
    while j < top and longer[j] >= _ARRAY_WORDS:
        m = int(longer[j])
        h[:m] = (h[:m] ^ buf[at[:m] + j].astype(np.uint64)) * _FNV_PRIME
        j += 1
    if j < top:
        data = buf.tobytes()
        prime, mask = int(_FNV_PRIME), (1 << 64) - 1
        for w in range(int(longer[j])):
            x = int(h[w])
            for c in data[int(at[w]) + j : int(at[w]) + int(lengths[order[w]])]:
                x = ((x ^ c) * prime) & mask
            h[w] = x
    out = np.empty_like(h)
    out[order] = h
    return out


def _shingles_np(buf: U8Array, offsets: I64Array, k: int) -> tuple[U64Array, I64Array]:
    """Every key's shingle hashes (``_shingle_hashes`` of each), flat, and each key's count."""
    starts, ends, words = _word_spans(buf, offsets)
    hashes = _word_hashes(buf, starts, ends)
    width = np.minimum(words, k)
    counts: I64Array = np.where(words > 0, words - width + 1, 0)
    first_word = np.zeros(words.size, dtype=np.int64)
    np.cumsum(words[:-1], out=first_word[1:])
    key = np.repeat(np.arange(words.size), counts)
    first_shingle = np.zeros(words.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=first_shingle[1:])
    at = first_word[key] + (np.arange(key.size) - first_shingle[key])
    span = width[key]
    g = np.full(key.size, _SHINGLE_SEED, dtype=np.uint64)
    for j in range(k):
        live = np.flatnonzero(span > j)
        g[live] = (g[live] ^ hashes[at[live] + j]) * _FNV_PRIME
    return fmix64_array(g), counts


def _shingle_sets_np(buf: U8Array, offsets: I64Array, k: int) -> tuple[U64Array, I64Array]:
    """``_shingle_sets_kernel`` with array operations: each key's sorted unique shingles, flat, and
    each key's count."""
    hashes, counts = _shingles_np(buf, offsets, k)
    key = np.repeat(np.arange(counts.size), counts)
    order = np.lexsort((hashes, key))
    hashes, key = hashes[order], key[order]
    keep = np.ones(hashes.size, dtype=np.bool_)
    keep[1:] = (hashes[1:] != hashes[:-1]) | (key[1:] != key[:-1])
    unique: I64Array = np.bincount(key[keep], minlength=counts.size).astype(np.int64)
    return hashes[keep], unique


def _signatures_np(buf: U8Array, offsets: I64Array, a: U64Array, b: U64Array, k: int, out: U32Array) -> None:
    """``_signature_kernel`` with array operations: the least ``a[p] * h + b[p]`` per key, per ``p``."""
    shingles, counts = _shingles_np(buf, offsets, k)
    out[:] = np.uint32(0xFFFFFFFF)
    rows = np.flatnonzero(counts)
    if rows.size == 0:
        return
    first = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    segments = first[rows]
    for p in range(a.size):
        least = np.minimum.reduceat(a[p] * shingles + b[p], segments)
        out[rows, p] = (least >> _U64(32)).astype(np.uint32)


def _sketches_np(
    keys: Sequence[str], a: U64Array, b: U64Array, k: int, small: int, out: U32Array, single: BoolArray,
    sets: U64Array,
) -> None:
    """``_sketch_kernel`` with array operations (the least ``a[p] * h + b[p]`` over a key's unique
    shingles is the least over all of them)."""
    flat, counts = _shingle_sets_np(*_encode(keys), k)
    single[:] = counts <= small
    starts = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    g = fmix64_array(_SET_SEED ^ counts.astype(np.uint64))
    for t in range(max(small, 0)):
        live = np.flatnonzero(single & (counts > t))
        g[live] = (g[live] ^ flat[starts[live] + t]) * _FNV_PRIME
    sets[:] = np.where(single, fmix64_array(g), _U64(0))
    many = np.flatnonzero(~single)
    if many.size:
        part = np.empty((many.size, a.size), dtype=np.uint32)
        _signatures_np(*_encode([keys[i] for i in many.tolist()]), a, b, k, part)
        out[many] = part


# ---------------------------------------------------------------------------------------------
# Python API
# ---------------------------------------------------------------------------------------------


def _encode(keys: Sequence[str]) -> tuple[U8Array, I64Array]:
    """All keys as one UTF-8 buffer and ``len(keys) + 1`` byte offsets.

    Encoding key by key and joining the bytes is ~2x faster than joining the strings first: a
    joined ``str`` is widened to the widest code point of any key before it is encoded.
    """
    encoded = [key.encode("utf-8", "surrogatepass") for key in keys]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _thread_count() -> int:
    import numba  # only the compiled paths spread over threads

    configured = int(getattr(numba.config, "NUMBA_NUM_THREADS", 1))
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(configured, available))


def _spread(n: int, fill: Callable[[int, int], None]) -> None:
    """``fill(lo, hi)`` over spans of ``range(n)`` of at most ``_BATCH`` keys, spread over threads
    (encoding holds the GIL, the kernels do not: threads overlap one with the other)."""
    if n == 0:
        return
    threads = min(_thread_count(), max(1, n // _MIN_KEYS_PER_THREAD))
    size = min(_BATCH, -(-n // threads))
    spans = [(lo, min(n, lo + size)) for lo in range(0, n, size)]
    if threads == 1:
        for lo, hi in spans:
            fill(lo, hi)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for future in [pool.submit(fill, lo, hi) for lo, hi in spans]:
                future.result()


class MinHasher:
    """MinHash over word shingles of exact keys. Deterministic: the same (num_perm, shingle_words, seed)
    give identical signatures on every run and machine.

    Example:
        >>> mh = MinHasher(num_perm=64, shingle_words=3)
        >>> sigs = mh.signatures(["the quick brown fox jumps", "the quick brown fox leaps", ""])
        >>> sigs.shape, sigs.dtype.name
        ((3, 64), 'uint32')
        >>> bool((sigs[2] == 0xFFFFFFFF).all())
        True
        >>> round(jaccard(mh.shingles("a b c d"), mh.shingles("a b c e")), 2)
        0.33
    """

    __slots__ = ("_a", "_b", "compiled", "num_perm", "seed", "shingle_words")

    def __init__(
        self, num_perm: int = 128, shingle_words: int = 5, seed: int = 1, *, compiled: bool = True
    ) -> None:
        if num_perm < 1:
            raise ConfigError(f"MinHasher num_perm must be >= 1, got {num_perm}: use e.g. 128")
        if shingle_words < 1:
            raise ConfigError(f"MinHasher shingle_words must be >= 1, got {shingle_words}: use e.g. 5")
        if not 0 <= seed < 2**32:
            raise ConfigError(f"MinHasher seed must be in [0, 2**32), got {seed}")
        self.num_perm = num_perm
        self.shingle_words = shingle_words
        self.seed = seed
        #: the numba kernels (else the NumPy paths: the same values, no numba start-up; for a few
        #: thousand keys); ``signatures_and_hashes`` always runs the kernels
        self.compiled = compiled
        raw = np.random.PCG64(seed).random_raw(2 * num_perm).astype(np.uint64)
        a = raw[0::2] | np.uint64(1)  # odd multipliers: each map is a bijection of the 64-bit space
        b = raw[1::2]
        a.flags.writeable = False
        b.flags.writeable = False
        self._a: U64Array = a
        self._b: U64Array = b

    @classmethod
    def from_config(cls, config: NearConfig, *, compiled: bool = True) -> MinHasher:
        """The hasher the near tier uses for ``config`` (``compiled``: see :class:`MinHasher`)."""
        return cls(config.num_perm, config.shingle_words, config.seed, compiled=compiled)

    def __repr__(self) -> str:
        return f"MinHasher(num_perm={self.num_perm}, shingle_words={self.shingle_words}, seed={self.seed})"

    def signatures(self, keys: Sequence[str]) -> U32Array:
        """Signatures of ``keys``: shape ``(len(keys), num_perm)``, dtype uint32, row ``i`` for ``keys[i]``.

        Keys are exact keys (``normalize.exact_key``); words are split on spaces.
        """
        n = len(keys)
        out = np.empty((n, self.num_perm), dtype=np.uint32)
        if n == 0:
            return out
        if not self.compiled:
            for lo in range(0, n, _BATCH):
                buf, offsets = _encode(keys[lo : lo + _BATCH])
                _signatures_np(buf, offsets, self._a, self._b, self.shingle_words, out[lo : lo + _BATCH])
            return out
        _spread(n, lambda lo, hi: self._fill(keys, lo, hi, out))
        return out

    def signatures_and_hashes(self, keys: Sequence[str]) -> tuple[U32Array, U64Array]:
        """``signatures(keys)`` and, from the same pass, a 64-bit hash of each key's word sequence.

        The hash serves exact dedup of exact keys (single spaces, so equal word sequences mean equal
        keys) at no extra pass over the text; it is deterministic like the signatures.

        Example:
            >>> sigs, hashes = MinHasher().signatures_and_hashes(["a b c", "a b c", "a b d"])
            >>> bool(hashes[0] == hashes[1]), bool(hashes[0] == hashes[2])
            (True, False)
        """
        n = len(keys)
        out = np.empty((n, self.num_perm), dtype=np.uint32)
        hashes = np.empty(n, dtype=np.uint64)
        if n == 0:
            return out, hashes

        def fill(lo: int, hi: int) -> None:
            buf, offsets = _encode(keys[lo:hi])
            _signature_hash_kernel(
                buf, offsets, self._a, self._b, self.shingle_words, out[lo:hi], hashes[lo:hi]
            )

        _spread(n, fill)
        return out, hashes

    def sketches(self, keys: Sequence[str], small: int) -> tuple[U32Array, BoolArray, U64Array]:
        """``(signatures, single, sets)`` of ``keys``: a key whose shingle set has at most ``small``
        members (``single[i]``) is summed up by a 64-bit hash of that set, ``sets[i]`` (equal sets,
        equal hashes), and its signature row is left zero; every other key has its signature row,
        as :meth:`signatures` gives it (``sets[i]`` 0). ``small`` below 0: every key is signed.

        Where the near tier verifies by a threshold that no two different small sets reach, a small set
        matches only itself, and its hash finds every key it could match
        (:func:`chunkdedup.dedup.near.sign_keys`); such a key costs no MinHash permutations.

        Example:
            >>> sigs, single, sets = MinHasher().sketches(["a b c", "x a b c", "a b c", "a b c d e f g h"], 1)
            >>> single.tolist(), bool(sets[0] == sets[2]), bool(sets[0] == sets[1])
            ([True, True, True, False], True, False)
            >>> bool((sigs[3] == MinHasher().signatures(["a b c d e f g h"])[0]).all())
            True
        """
        n = len(keys)
        out = np.zeros((n, self.num_perm), dtype=np.uint32)
        single = np.zeros(n, dtype=np.bool_)
        sets = np.zeros(n, dtype=np.uint64)
        if not self.compiled:
            for lo in range(0, n, _BATCH):
                hi = min(n, lo + _BATCH)
                _sketches_np(
                    keys[lo:hi], self._a, self._b, self.shingle_words, small, out[lo:hi], single[lo:hi],
                    sets[lo:hi],
                )
            return out, single, sets

        def fill(lo: int, hi: int) -> None:
            buf, offsets = _encode(keys[lo:hi])
            _sketch_kernel(
                buf, offsets, self._a, self._b, self.shingle_words, small, out[lo:hi], single[lo:hi],
                sets[lo:hi],
            )

        _spread(n, fill)
        return out, single, sets

    def _fill(self, keys: Sequence[str], lo: int, hi: int, out: U32Array) -> None:
        buf, offsets = _encode(keys[lo:hi])
        _signature_kernel(buf, offsets, self._a, self._b, self.shingle_words, out[lo:hi])

    def shingles(self, key: str) -> U64Array:
        """Sorted unique uint64 shingle hashes of one key (the set the signatures are taken over)."""
        buf = np.frombuffer(key.encode("utf-8", "surrogatepass"), dtype=np.uint8)
        if not self.compiled:
            found, _ = _shingle_sets_np(buf, np.array([0, buf.size], dtype=np.int64), self.shingle_words)
            return found
        hashes: U64Array = np.unique(_key_shingles(buf, self.shingle_words))
        return hashes

    def shingle_sets(self, keys: Sequence[str]) -> tuple[U64Array, I64Array]:
        """The ``shingles`` of many keys in one flat array: ``(flat, offsets)``, key ``i``'s sorted unique
        shingle hashes being ``flat[offsets[i]:offsets[i + 1]]`` (uint64; offsets int64, ``len(keys) + 1``).

        Equal to concatenating ``shingles(key)`` over ``keys``, without one Python call per key: the
        keys are encoded and hashed in compiled batches, spread over threads as in ``signatures``.

        Example:
            >>> mh = MinHasher(shingle_words=2)
            >>> flat, offsets = mh.shingle_sets(["a b c", "", "a b"])
            >>> offsets.tolist(), bool((flat[2:3] == mh.shingles("a b")).all())
            ([0, 2, 2, 3], True)
        """
        n = len(keys)
        if n == 0:
            return np.empty(0, dtype=np.uint64), np.zeros(1, dtype=np.int64)
        if not self.compiled:
            k = self.shingle_words
            parts = [_shingle_sets_np(*_encode(keys[lo : lo + _BATCH]), k) for lo in range(0, n, _BATCH)]
        else:
            parts = self._compiled_sets(keys)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.concatenate([counts for _, counts in parts]), out=offsets[1:])
        flat: U64Array = np.concatenate([sets for sets, _ in parts])
        return flat, offsets

    def _compiled_sets(self, keys: Sequence[str]) -> list[tuple[U64Array, I64Array]]:
        n = len(keys)
        threads = min(_thread_count(), max(1, n // _MIN_KEYS_PER_THREAD))
        size = min(_BATCH, -(-n // threads))
        spans = [(lo, min(n, lo + size)) for lo in range(0, n, size)]
        if threads == 1:
            parts = [self._sets(keys, lo, hi) for lo, hi in spans]
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                parts = list(pool.map(lambda span: self._sets(keys, *span), spans))
        return parts

    def _sets(self, keys: Sequence[str], lo: int, hi: int) -> tuple[U64Array, I64Array]:
        """Flat sorted unique shingles of ``keys[lo:hi]`` and each key's count."""
        buf, offsets = _encode(keys[lo:hi])
        bounds = _shingle_bounds(buf, offsets, self.shingle_words)
        starts = np.zeros(bounds.size, dtype=np.int64)
        np.cumsum(bounds[:-1], out=starts[1:])
        scratch = np.empty(int(bounds.sum()), dtype=np.uint64)
        counts: I64Array = _shingle_sets_kernel(buf, offsets, self.shingle_words, starts, scratch)
        dst_offsets = np.zeros(counts.size, dtype=np.int64)
        np.cumsum(counts[:-1], out=dst_offsets[1:])
        flat = np.empty(int(counts.sum()), dtype=np.uint64)
        _compact(scratch, starts, counts, flat, dst_offsets)
        return flat, counts


def jaccard(a: U64Array, b: U64Array, *, compiled: bool = True) -> float:
    """Exact Jaccard similarity of two sorted, unique shingle arrays (as ``MinHasher.shingles`` returns).

    Two empty sets are identical (1.0); an empty set and a non-empty one share nothing (0.0).
    ``compiled=False`` counts the intersection with NumPy (the same count, no numba start-up).

    Example:
        >>> jaccard(np.array([1, 2, 3], np.uint64), np.array([2, 3, 4], np.uint64))
        0.5
    """
    x = np.ascontiguousarray(a, dtype=np.uint64)
    y = np.ascontiguousarray(b, dtype=np.uint64)
    if x.size == 0 and y.size == 0:
        return 1.0
    if not compiled:
        inter = int(np.intersect1d(x, y, assume_unique=True).size)
    else:
        inter = int(intersection_size(x, y))
    return inter / (x.size + y.size - inter)
