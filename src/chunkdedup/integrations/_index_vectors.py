"""The index's own vectors as a sync's vectors: an index built with an embedder holds one vector per
canonical, and a store embedded by the same model can take it instead of embedding the text again.

"The same model" is read off the framework's embeddings object (LangChain's ``model_name``, LlamaIndex's
``model_name``, Haystack's Sentence Transformers embedders' ``model``) and compared with the name the
index recorded (:mod:`chunkdedup.embed`): ``sentence-transformers:all-MiniLM-L6-v2`` is the model
``sentence-transformers/all-MiniLM-L6-v2`` and ``all-MiniLM-L6-v2``; ``hash`` is ``hash:64:0``.
The caller can force the choice either way (``index_vectors=True``/``False``).

The index's vectors are unit length (a dot product is a cosine); a framework model that does not
normalise (LangChain's ``HuggingFaceEmbeddings`` by default) gives vectors of the same direction, so
a cosine store ranks alike, while a store that ranks by L2 or inner product sees other lengths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from chunkdedup.embed import MINILM_NAME, ST_PREFIX
from chunkdedup.errors import ConfigError, SyncError
from chunkdedup.index import Index

#: The attributes a framework embeddings object names its model by, in the order they are tried.
MODEL_ATTRS = ("model_name", "model", "model_id")
#: Settings that make a framework embed other words than the chunk's text (a prefix, an instruction,
#: metadata fields): the index embedded the text alone, so its vectors are not what such a model gives.
TEXT_CHANGES = ("prefix", "suffix", "text_instruction", "meta_fields_to_embed")
#: The hub namespace sentence-transformers resolves a bare model name in.
_ST_HUB = "sentence-transformers/"
_MINILM = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


@dataclass(frozen=True, slots=True)
class IndexVectors:
    """The stored vectors a sync hands to its store: the index they are read from, the recorded name
    and dimension of the embedder that made them, and whether the model is known to be the sink's
    (``False``: the caller forced them, so the sink checks the dimension its model gives)."""

    index: Index
    name: str
    dim: int
    same_model: bool

    def of(self, chunk_ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vector of each of ``chunk_ids`` that has one, by canonical id."""
        batch = self.index.canonical_vectors(chunk_ids)
        return {
            cid: np.frombuffer(blob, dtype="<f4").astype(float).tolist()
            for cid, blob in zip(batch.keys, batch.vectors, strict=True)
        }

    def check_dim(self, dim: int, what: str) -> None:
        """Raise :class:`SyncError` unless ``dim`` (the length of ``what``) is the index's."""
        if dim != self.dim:
            raise SyncError(
                f"{what} has {dim} dimensions but the index's vectors ({self.name}) have {self.dim}: "
                "one store cannot hold both. Sync with index_vectors=False (--no-index-vectors) to embed "
                "with the store's model, or embed the store with the index's model; nothing of this "
                "batch was written"
            )


def model_name(model: object) -> str | None:
    """The model a framework embeddings object names (``None`` when it names none)."""
    for attr in MODEL_ATTRS:
        value = getattr(model, attr, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def adds_to_text(model: object) -> bool:
    """Whether the framework embeds more than a chunk's text (:data:`TEXT_CHANGES` set)."""
    return any(getattr(model, attr, None) for attr in TEXT_CHANGES)


def _canonical(name: str) -> str:
    """One spelling per model: a recorded name, a hub id or a local directory."""
    spec = name.strip()
    if spec == "hash" or spec.startswith("hash:"):
        parts = spec.split(":")[1:]
        full = [*parts, *["64", "0"][len(parts) :]]
        return "hash:" + ":".join(full)
    spec = spec.removeprefix(ST_PREFIX)
    if spec.casefold() in _MINILM:
        return MINILM_NAME.casefold()
    path = Path(spec).expanduser()
    if path.is_absolute() or path.is_dir():
        return ST_PREFIX + str(path.resolve())
    if "/" not in spec:
        spec = _ST_HUB + spec
    return ST_PREFIX + spec.casefold()


def same_model(framework: str | None, recorded: str) -> bool:
    """Whether the framework's model name and the index's recorded embedder name one model."""
    return framework is not None and _canonical(framework) == _canonical(recorded)


def index_vectors(
    index: Index, model: object, choice: bool | None, *, takes_vectors: bool = True, store: str = "the store"
) -> IndexVectors | None:
    """The stored vectors a sync of ``index`` uses, or ``None`` to embed as usual.

    ``choice``: ``None`` uses them when ``model`` names the index's embedder and embeds the text
    alone (no prefix, instruction or metadata fields), ``True`` always (an index without vectors, or
    a store that embeds every record itself, is a :class:`~chunkdedup.errors.ConfigError`),
    ``False`` never.
    """
    if choice is False:
        return None
    stored = index.embedder()
    named = model_name(model) if model is not None and not adds_to_text(model) else None
    if choice is None:
        if stored is None or not takes_vectors or not same_model(named, stored.name):
            return None
        return IndexVectors(index, stored.name, stored.dim, True)
    if stored is None:
        raise ConfigError(
            f"index_vectors=True, but {index.store.path} holds no vectors: build it with an embedder "
            "([semantic] embedder, --embedder) or sync with index_vectors=None"
        )
    if not takes_vectors:
        raise ConfigError(
            f"index_vectors=True, but {store} embeds every record itself through its own add call: "
            "sync it with index_vectors=None or False"
        )
    return IndexVectors(index, stored.name, stored.dim, same_model(named, stored.name))
