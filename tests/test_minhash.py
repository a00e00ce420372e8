"""The MinHash signature kernel: determinism, estimation accuracy, edge cases, and agreement between
``signatures`` and ``shingles`` (the LSH tier verifies candidates with the latter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup.config import NearConfig
from chunkdedup.dedup import minhash
from chunkdedup.dedup.minhash import MinHasher, jaccard
from chunkdedup.errors import ConfigError
from chunkdedup.normalize import exact_key

POLICY = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "site-policy" / "current"
EMPTY = 0xFFFFFFFF

# A word never contains a space; anything else goes, including non-ASCII.
_word = st.text(st.characters(exclude_characters=" "), min_size=1, max_size=8)
_key = st.lists(_word, max_size=30).map(" ".join)


def reference_signature(hasher: MinHasher, key: str) -> np.ndarray:
    """The signature written out in NumPy from ``shingles``: min over shingles of (a*h + b) >> 32."""
    sh = hasher.shingles(key)
    if sh.size == 0:
        return np.full(hasher.num_perm, EMPTY, dtype=np.uint32)
    with np.errstate(over="ignore"):
        v = hasher._a[:, None] * sh[None, :] + hasher._b[:, None]
    sig: np.ndarray = (v.min(axis=1) >> np.uint64(32)).astype(np.uint32)
    return sig


@pytest.fixture(scope="module")
def paragraphs() -> list[list[str]]:
    """Word lists of real paragraphs (>= 60 words) of the site-policy corpus, read in place."""
    if not POLICY.exists():
        pytest.fail(f"real corpus missing at {POLICY}: the repo must sit beside shared/ (see README)")
    out: list[list[str]] = []
    for path in sorted(POLICY.rglob("*.md")):
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            words = exact_key(block).split(" ")
            if len(words) >= 60:
                out.append(words[:150])
    assert len(out) >= 50
    return out


def edited_pairs(paragraphs: list[list[str]], count: int, seed: int) -> list[tuple[str, str]]:
    """Pairs (paragraph, copy with 0-45% of its words replaced): true similarities from ~0 to 1."""
    rng = np.random.default_rng(seed)
    pairs: list[tuple[str, str]] = []
    for i in range(count):
        words = paragraphs[int(rng.integers(len(paragraphs)))]
        share = 0.45 * (i % 10) / 9
        edited = list(words)
        for pos in rng.choice(len(words), int(share * len(words)), replace=False):
            edited[pos] = f"edit{rng.integers(10**9)}"
        pairs.append((" ".join(words), " ".join(edited)))
    return pairs


def estimate(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    return float(np.mean(sig_a == sig_b))


# --- determinism ---------------------------------------------------------------------------------


def test_golden_values() -> None:
    """Regression guard: these values must never change (stored LSH bands depend on them)."""
    mh = MinHasher()
    sigs = mh.signatures(
        ["refunds are issued within 30 days of the request", "café ñandú 東京 straße", "a b"]
    )
    assert sigs[:, :4].tolist() == [
        [1732591246, 2448283700, 205296437, 911512751],
        [63809919, 1419570583, 1426076339, 1398417199],
        [3278756057, 876538739, 2226383465, 458912295],
    ]
    assert mh.shingles("a b c d e f").tolist() == [2666645558079145480, 17767960968347439571]
    small = MinHasher(num_perm=8, shingle_words=3, seed=7).signatures(["the quick brown fox jumps over"])
    assert small[0].tolist() == [
        70564761,
        226493123,
        1637608405,
        3273125177,
        531305633,
        617443528,
        407265357,
        1396965060,
    ]


def test_two_instances_agree_and_seed_matters(paragraphs: list[list[str]]) -> None:
    keys = [" ".join(p) for p in paragraphs[:50]]
    a = MinHasher(seed=3).signatures(keys)
    assert a.shape == (50, 128)
    assert a.dtype == np.uint32
    np.testing.assert_array_equal(a, MinHasher(seed=3).signatures(keys))
    assert (a != MinHasher(seed=4).signatures(keys)).mean() > 0.9


def test_fewer_permutations_are_a_prefix(paragraphs: list[list[str]]) -> None:
    keys = [" ".join(p) for p in paragraphs[:20]]
    np.testing.assert_array_equal(
        MinHasher(num_perm=128).signatures(keys)[:, :32], MinHasher(num_perm=32).signatures(keys)
    )


def test_batches_and_threads_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [f"key {i} with {i % 7} some {i * 31 % 11} words é{i % 3}" for i in range(3000)]
    whole = MinHasher().signatures(keys)
    monkeypatch.setattr(minhash, "_BATCH", 97)
    monkeypatch.setattr(minhash, "_MIN_KEYS_PER_THREAD", 10)
    monkeypatch.setattr(minhash, "_thread_count", lambda: 3)
    np.testing.assert_array_equal(MinHasher().signatures(keys), whole)
    np.testing.assert_array_equal(MinHasher().signatures(keys[1234:1235])[0], whole[1234])


def test_import_does_not_compile() -> None:
    code = (
        "import sys\n"
        "import chunkdedup.dedup.minhash as m, chunkdedup.dedup.lsh, chunkdedup.ingestion.sequence\n"
        "kernels = [m._signature_kernel, m._key_shingles, m.intersection_size, m._shingle_sets_kernel,\n"
        "    m._min_hashes, m._signature_hash_kernel]\n"
        "assert not any(k.compiled for k in kernels), kernels\n"
        "assert 'numba' not in sys.modules\n"
        "m.MinHasher(compiled=False).signatures(['a b c d e f'])\n"
        "assert 'numba' not in sys.modules\n"
        "m.MinHasher().signatures(['a b c d e f'])\n"
        "assert 'numba' in sys.modules and m._signature_kernel.compiled\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- signatures agree with shingles --------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(_key, min_size=1, max_size=6), k=st.integers(1, 6))
def test_signatures_are_min_hashes_of_shingles(keys: list[str], k: int) -> None:
    mh = MinHasher(num_perm=16, shingle_words=k, seed=11)
    sigs = mh.signatures(keys)
    for key, sig in zip(keys, sigs, strict=True):
        np.testing.assert_array_equal(sig, reference_signature(mh, key))


@settings(max_examples=150, deadline=None)
@given(key=_key, k=st.integers(1, 6))
def test_shingles_sorted_unique_and_counted(key: str, k: int) -> None:
    sh = MinHasher(shingle_words=k).shingles(key)
    assert sh.dtype == np.uint64
    assert (np.diff(sh.astype(np.float64)) > 0).all() or sh.size <= 1
    assert np.array_equal(sh, np.unique(sh))
    words = key.split(" ") if key else []
    expected = (
        {tuple(words[i : i + k]) for i in range(len(words) - k + 1)} if len(words) >= k else {tuple(words)}
    )
    assert sh.size == (len(expected) if words else 0)  # no collisions at this size


def test_words_are_split_on_spaces() -> None:
    mh = MinHasher(shingle_words=2)
    assert np.array_equal(mh.shingles("a  b c"), mh.shingles("a b c"))
    assert np.array_equal(mh.shingles(" a b c "), mh.shingles("a b c"))
    assert not np.array_equal(mh.shingles("ab c"), mh.shingles("a bc"))  # word boundaries count
    assert not np.array_equal(mh.shingles("a b"), mh.shingles("b a"))  # order counts


# --- edge cases ----------------------------------------------------------------------------------


def test_empty_key_and_empty_input() -> None:
    mh = MinHasher(num_perm=32)
    sigs = mh.signatures(["", "a", "", " "])
    assert (sigs[[0, 2, 3]] == EMPTY).all()
    assert not (sigs[1] == EMPTY).all()
    assert mh.shingles("").size == 0
    assert mh.signatures([]).shape == (0, 32)


def test_short_keys_have_one_shingle_of_all_words() -> None:
    mh = MinHasher(shingle_words=5)
    for key in ["a", "a b", "a b c d"]:
        assert mh.shingles(key).size == 1
    assert mh.shingles("a b c d e").size == 1
    assert mh.shingles("a b c d e f").size == 2
    sigs = mh.signatures(["a b c", "a b c", "a b c d", "a b"])
    np.testing.assert_array_equal(sigs[0], sigs[1])
    assert estimate(sigs[0], sigs[2]) < 0.2
    assert estimate(sigs[0], sigs[3]) < 0.2


def test_identical_keys_identical_signatures(paragraphs: list[list[str]]) -> None:
    key = " ".join(paragraphs[0])
    sigs = MinHasher().signatures([key, "something else entirely here", key])
    np.testing.assert_array_equal(sigs[0], sigs[2])
    assert jaccard(MinHasher().shingles(key), MinHasher().shingles(key)) == 1.0


def test_non_ascii_keys() -> None:
    mh = MinHasher()
    keys = ["café au lait ñandú 東京 straße 😀 ok", "cafe au lait nandu tokyo strasse ok ok", "مرحبا بالعالم"]
    sigs = mh.signatures(keys)
    for key, sig in zip(keys, sigs, strict=True):
        np.testing.assert_array_equal(sig, reference_signature(mh, key))
    assert estimate(sigs[0], sigs[1]) < 0.2
    assert mh.shingles(keys[0]).size == 4  # 8 words, 5-word windows
    # A lone surrogate cannot reach an exact key from a file, but must not crash either.
    assert mh.signatures(["a \ud800 b"]).shape == (1, 128)


def test_from_config_and_bad_arguments() -> None:
    mh = MinHasher.from_config(NearConfig(num_perm=64, bands=8, rows=8, shingle_words=3, seed=9))
    assert (mh.num_perm, mh.shingle_words, mh.seed) == (64, 3, 9)
    for kwargs in ({"num_perm": 0}, {"shingle_words": 0}, {"seed": -1}, {"seed": 2**32}):
        with pytest.raises(ConfigError):
            MinHasher(**kwargs)


# --- estimation accuracy on real text ------------------------------------------------------------


def test_estimate_within_0_1_of_exact_jaccard(paragraphs: list[list[str]]) -> None:
    """With 512 slots the estimate's std is <= 0.022, so +-0.1 is a 4.5 sigma bound per pair."""
    mh = MinHasher(num_perm=512)
    pairs = edited_pairs(paragraphs, 100, seed=1)
    sig_a = mh.signatures([a for a, _ in pairs])
    sig_b = mh.signatures([b for _, b in pairs])
    truths = []
    for (a, b), sa, sb in zip(pairs, sig_a, sig_b, strict=True):
        true = jaccard(mh.shingles(a), mh.shingles(b))
        truths.append(true)
        assert abs(estimate(sa, sb) - true) <= 0.1, (true, estimate(sa, sb))
    # The pairs span the range: near-identical, middling and far apart.
    assert min(truths) < 0.2 and max(truths) == 1.0
    assert sum(0.3 < t < 0.8 for t in truths) >= 20


def test_estimate_is_unbiased_at_default_size(paragraphs: list[list[str]]) -> None:
    """128 slots: error std ~0.04 if the permutations act independently; mean error ~0."""
    mh = MinHasher()
    pairs = edited_pairs(paragraphs, 400, seed=2)
    sig_a = mh.signatures([a for a, _ in pairs])
    sig_b = mh.signatures([b for _, b in pairs])
    errors = np.array(
        [
            estimate(sa, sb) - jaccard(mh.shingles(a), mh.shingles(b))
            for (a, b), sa, sb in zip(pairs, sig_a, sig_b, strict=True)
        ]
    )
    assert abs(errors.mean()) < 0.01
    assert errors.std() < 0.05
    assert np.quantile(np.abs(errors), 0.95) < 0.1


# --- jaccard -------------------------------------------------------------------------------------


def test_jaccard_edges() -> None:
    a = np.array([1, 5, 9], dtype=np.uint64)
    assert jaccard(a, a) == 1.0
    assert jaccard(a, np.array([2, 6], dtype=np.uint64)) == 0.0
    assert jaccard(np.empty(0, np.uint64), np.empty(0, np.uint64)) == 1.0
    assert jaccard(a, np.empty(0, np.uint64)) == 0.0
    assert jaccard(a, np.array([5, 9, 2**64 - 1], dtype=np.uint64)) == 0.5


@settings(max_examples=200, deadline=None)
@given(
    x=st.sets(st.integers(0, 2**64 - 1), max_size=40),
    y=st.sets(st.integers(0, 2**64 - 1), max_size=40),
    shared=st.sets(st.integers(0, 2**64 - 1), max_size=40),
)
def test_jaccard_matches_python_sets(x: set[int], y: set[int], shared: set[int]) -> None:
    a, b = x | shared, y | shared
    got = jaccard(np.array(sorted(a), dtype=np.uint64), np.array(sorted(b), dtype=np.uint64))
    want = len(a & b) / len(a | b) if a | b else 1.0
    assert got == pytest.approx(want)


# --- batched shingle sets and the key hash -------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(_key, max_size=12), k=st.integers(1, 6))
def test_shingle_sets_equal_shingles(keys: list[str], k: int) -> None:
    mh = MinHasher(shingle_words=k)
    flat, offsets = mh.shingle_sets(keys)
    assert flat.dtype == np.uint64 and offsets.dtype == np.int64
    assert offsets.tolist()[0] == 0 and offsets.size == len(keys) + 1
    for i, key in enumerate(keys):
        np.testing.assert_array_equal(flat[offsets[i] : offsets[i + 1]], mh.shingles(key))


def test_shingle_sets_across_batches_and_threads(
    paragraphs: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = [" ".join(p) for p in paragraphs] + ["", "a", "x x x x x x x x x x x x"] * 50
    mh = MinHasher()
    monkeypatch.setattr(minhash, "_BATCH", 37)
    monkeypatch.setattr(minhash, "_MIN_KEYS_PER_THREAD", 10)
    monkeypatch.setattr(minhash, "_thread_count", lambda: 3)
    flat, offsets = mh.shingle_sets(keys)
    np.testing.assert_array_equal(flat, np.concatenate([mh.shingles(k) for k in keys]))
    assert np.diff(offsets).tolist() == [mh.shingles(k).size for k in keys]
    assert mh.shingle_sets([])[1].tolist() == [0]


def test_signatures_and_hashes(paragraphs: list[list[str]]) -> None:
    keys = [" ".join(p) for p in paragraphs[:40]] + ["", "a", "a b", "a b c d e", "a b c d e f", "b a"]
    keys += keys[:5]
    mh = MinHasher()
    sigs, hashes = mh.signatures_and_hashes(keys)
    np.testing.assert_array_equal(sigs, mh.signatures(keys))
    by_key = dict(zip(keys, hashes.tolist(), strict=True))
    assert all(by_key[k] == h for k, h in zip(keys, hashes.tolist(), strict=True))  # equal keys agree
    assert len(set(by_key.values())) == len(by_key)  # distinct keys differ
    np.testing.assert_array_equal(MinHasher(num_perm=8).signatures_and_hashes(keys)[1], hashes)
    assert mh.signatures_and_hashes([])[0].shape == (0, 128)


# --- the NumPy paths give the kernels' values, bit for bit ---------------------------------------

# keys as they come to the hasher and worse: runs of spaces, leading and trailing spaces, long words
# (the NumPy path hashes the tail of a long word in Python), non-ASCII
_raw_key = st.lists(
    st.one_of(_word, st.text(st.characters(exclude_characters=" "), min_size=20, max_size=90)), max_size=40
).flatmap(lambda words: st.lists(st.integers(1, 3), min_size=len(words), max_size=len(words)).map(
    lambda gaps: "".join(w + " " * g for w, g in zip(words, gaps, strict=True))
)).flatmap(lambda key: st.sampled_from([key, " " + key, key.strip(), "  " + key.strip()]))


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(_raw_key, max_size=40), k=st.integers(1, 7), num_perm=st.sampled_from([1, 16, 128]))
def test_the_numpy_path_gives_the_kernels_signatures_and_shingles(
    keys: list[str], k: int, num_perm: int
) -> None:
    compiled = MinHasher(num_perm=num_perm, shingle_words=k, seed=5)
    plain = MinHasher(num_perm=num_perm, shingle_words=k, seed=5, compiled=False)
    np.testing.assert_array_equal(plain.signatures(keys), compiled.signatures(keys))
    for flat_a, flat_b in zip(plain.shingle_sets(keys), compiled.shingle_sets(keys), strict=True):
        np.testing.assert_array_equal(flat_a, flat_b)
    for key in keys[:8]:
        a, b = plain.shingles(key), compiled.shingles(key)
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype == np.uint64
        other = compiled.shingles(keys[0])
        assert jaccard(a, other, compiled=False) == jaccard(b, other)


def test_the_numpy_path_on_real_paragraphs(paragraphs: list[list[str]]) -> None:
    keys = [" ".join(words) for words in paragraphs] + ["", " ", "x" * 500 + " y"]
    for k in (1, 5):
        plain = MinHasher(shingle_words=k, compiled=False)
        np.testing.assert_array_equal(plain.signatures(keys), MinHasher(shingle_words=k).signatures(keys))


def test_the_numpy_path_spans_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [f"word{i % 7} shared text number {i} and {i * 3} more" for i in range(300)]
    whole = MinHasher(compiled=False).signatures(keys)
    monkeypatch.setattr(minhash, "_BATCH", 37)
    np.testing.assert_array_equal(MinHasher(compiled=False).signatures(keys), whole)
    np.testing.assert_array_equal(MinHasher().signatures(keys), whole)


def test_from_config_passes_the_path() -> None:
    assert MinHasher.from_config(NearConfig()).compiled
    assert not MinHasher.from_config(NearConfig(), compiled=False).compiled
