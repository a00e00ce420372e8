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


def near_fingerprints(config: NearConfig) -> tuple[str, str]:
    """(hashing settings, clustering settings): a change to the first re-signs every group."""
    d = asdict(config)
    hashing = {k: d[k] for k in ("num_perm", "shingle_words", "seed", "bands", "rows")}
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


__all__ = ["NUMPY_CHARS", "NUMPY_KEYS", "near_edge_settings", "near_fingerprints", "near_hashing"]
