"""What the near tier's stored state is made under, and when a run is small: plain functions and
numbers, no NumPy, so a run with nothing to sign or cluster (an unchanged corpus) never imports the
array stack (:mod:`chunkdedup.dedup.minhash`, :mod:`chunkdedup.dedup.lsh`)."""

from __future__ import annotations

import json
from dataclasses import asdict

from chunkdedup.config import NearConfig
from chunkdedup.normalize import key_hash

#: groups up to which a cluster pass signs and compares them with the NumPy paths (``compiled=False``
#: of :class:`~chunkdedup.dedup.minhash.MinHasher`): at ~50 us a key more than the kernels, 4,096
#: keys cost less than numba's ~1 s of start-up
NUMPY_KEYS = 4096
#: page characters up to which a run's chunk phase signs with the NumPy paths (~40 ns a character
#: more than the kernels: at most ~0.2 s, against numba's ~1 s); past it the kernels
NUMPY_CHARS = 4 * 1024 * 1024


#: the largest shingle set :func:`single_key_shingles` gives one key (a threshold near 1 would give
#: every set one; past this the count of a key's distinct shingles would cost more than it saves)
MAX_SINGLE_KEY_SHINGLES = 32


def single_key_shingles(threshold: float) -> int:
    """The most shingles a group's set may have to be found by one key, the hash of the set, instead of
    a key per LSH band, at near ``threshold``: the largest ``s`` (at most
    ``MAX_SINGLE_KEY_SHINGLES``) with ``s / (s + 1) < threshold``.

    Why one key finds every partner: the near tier keeps a pair only if the exact Jaccard of the two
    shingle sets reaches ``threshold``, and two different sets ``A != B`` with ``|A| = s`` have a Jaccard
    of at most ``s / (s + 1)`` (``B`` a superset of ``A`` by one shingle; computed as ``s / (s + 1)``
    in floating point too, and rounding keeps the order). So such a group verifies only against a group
    with the very same set, which has the same size and so the same one key. At 0.85 with 5-word
    shingles: sets of up to 5 shingles, every text of up to 9 words.

    Example:
        >>> single_key_shingles(0.85), single_key_shingles(0.8), single_key_shingles(0.5)
        (5, 3, 0)
    """
    s = 0
    while s < MAX_SINGLE_KEY_SHINGLES and (s + 1) / (s + 2) < threshold:
        s += 1
    return s


def near_fingerprints(config: NearConfig) -> tuple[str, str]:
    """(hashing settings, clustering settings): a change to the first re-signs every group. The
    hashing settings hold the set size up to which a group has one key (:func:`single_key_shingles`):
    an index signed before that rule (every group 16 keys) is signed again, so that a group with one
    key finds an older group of the same set."""
    d = asdict(config)
    hashing: dict[str, int] = {k: d[k] for k in ("num_perm", "shingle_words", "seed", "bands", "rows")}
    hashing["single_key_shingles"] = single_key_shingles(config.threshold)
    return key_hash(json.dumps(hashing, sort_keys=True)), key_hash(json.dumps(d, sort_keys=True))


def near_edge_settings(config: NearConfig) -> str:
    """The fingerprint of what a verified near edge depends on (the threshold and the hashing): a
    change of anything else (the guards, their overrides, the linkage) re-decides every cluster over
    the edges already verified."""
    d = asdict(config)
    return key_hash(json.dumps({k: d[k] for k in _EDGE_KEYS}, sort_keys=True))


_EDGE_KEYS = ("enabled", "threshold", "num_perm", "shingle_words", "seed", "bands", "rows")


def near_hashing(config: NearConfig) -> str:
    """The fingerprint of ``config``'s hashing settings, as the index records it (``near_hashing``):
    signatures made with other settings are dropped by the next cluster pass."""
    return near_fingerprints(config)[0]


__all__ = [
    "MAX_SINGLE_KEY_SHINGLES",
    "NUMPY_CHARS",
    "NUMPY_KEYS",
    "near_edge_settings",
    "near_fingerprints",
    "near_hashing",
    "single_key_shingles",
]
