"""The local LangChain vector stores ``chunkdedup sync`` opens by kind and path: Chroma (a persistent
folder), Qdrant (local mode, a folder), LanceDB (a folder), FAISS (a folder, saved after each sync)
and LangChain's in-memory store (a JSON file, loaded and dumped: for trials and tests).

Each opens with a LangChain ``Embeddings`` object (:func:`embeddings_from` names one on the command
line) and is written by :func:`sync_local` over :func:`chunkdedup.integrations.langchain.sync`, which
first checks that the store's path and the state file can be written (nothing is written otherwise)
and that the embeddings are those the state records for the store (a store holds one model's
vectors; ``reembed=True`` empties it and embeds every record again). A store kept as files (FAISS,
the in-memory store) is written before its state: the state of the sync goes to a file beside the
real one and replaces it only once the store is written.
"""

from __future__ import annotations

import importlib
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from chunkdedup.embed import Embedder, get_embedder
from chunkdedup.errors import ConfigError, InputError, MissingExtraError
from chunkdedup.integrations._core import IndexLike
from chunkdedup.integrations._index_vectors import model_name
from chunkdedup.integrations._sync import DEFAULT_BATCH, StoreModel, SyncReport, SyncState, check_model
from chunkdedup.outfile import text_out

try:
    from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
except ImportError:
    raise MissingExtraError("chunkdedup sync", "langchain", "langchain_core") from None

StoreKind = Literal["chroma", "qdrant", "lancedb", "faiss", "memory"]
KINDS: tuple[str, ...] = get_args(StoreKind)
#: What each kind needs installed: (the module to import, the pip package).
_NEEDS = {
    "chroma": ("langchain_chroma", "langchain-chroma"),
    "qdrant": ("langchain_qdrant", "langchain-qdrant"),
    "lancedb": ("lancedb", "langchain-community lancedb"),
    "faiss": ("faiss", "langchain-community faiss-cpu"),
}
#: The kinds kept as files the sync writes back when it ends (not as it goes).
_WRITTEN_BACK = ("faiss", "memory")


@dataclass(frozen=True, slots=True)
class LocalStore:
    """A local store: its kind, where it lives, and the collection (table, index name) in it.

    Example:
        >>> LocalStore("chroma", Path("chroma"), "policies").state_path().name
        'chroma.policies.sync.json'
    """

    kind: StoreKind
    path: Path
    collection: str = "chunkdedup"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"store kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.collection or not self.collection.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(
                f"collection {self.collection!r} must be letters, digits, '-' or '_' (e.g. 'policies')"
            )

    def state_path(self) -> Path:
        """Where the sync state of this collection is kept by default: beside the store
        (``PATH.COLLECTION.sync.json``; the in-memory store's file: ``PATH.sync.json``), so each
        store and collection has its own."""
        name = self.path.name if self.kind == "memory" else f"{self.path.name}.{self.collection}"
        return self.path.with_name(f"{name}.sync.json")

    def describe(self) -> str:
        """The store as a message names it: ``chroma store chroma/ (collection policies)``."""
        where = "" if self.kind == "memory" else f" (collection {self.collection})"
        return f"the {self.kind} store at {self.path}{where}"

    def check_paths(self, state: Path) -> None:
        """Raise :class:`InputError` naming the path and the fix unless the store (a folder; the
        in-memory store: a file) and the state file can be written; nothing is created."""
        if self.kind == "memory":
            _writable_file(self.path, "the memory store's file", "--path")
        else:
            _writable_folder(self.path, f"the {self.kind} store")
        _writable_file(state, "the sync state", "--state")


class EmbedderEmbeddings(Embeddings):
    """One of chunkdedup's embedders (:func:`chunkdedup.embed.get_embedder`) as LangChain embeddings;
    ``model_name`` is the embedder's recorded name, so an index built with it hands ``sync`` its
    stored vectors.

    Example:
        >>> EmbedderEmbeddings(get_embedder("hash:8")).model_name
        'hash:8:0'
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.model_name = embedder.name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.embedder.embed_batch(texts).astype(float).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def embeddings_from(spec: str) -> Embeddings:
    """An ``Embeddings`` object named on the command line: ``fake:DIM`` (LangChain's deterministic
    fake embeddings, for trials and tests), ``embedder:NAME`` (chunkdedup's own embedder, as
    ``ingest --embedder`` names it: ``minilm``, ``hash``, a sentence-transformers model) or
    ``MODULE:NAME`` (a class or factory called without arguments, or an instance; e.g.
    ``langchain_openai:OpenAIEmbeddings``).

    Example:
        >>> len(embeddings_from("fake:8").embed_query("refunds"))
        8
        >>> embeddings_from("embedder:hash").model_name
        'hash:64:0'
    """
    head, sep, tail = spec.partition(":")
    if not sep or not head or not tail:
        raise ConfigError(
            f"embeddings {spec!r}: write fake:DIM or MODULE:NAME (e.g. fake:384), or embedder:NAME for "
            "chunkdedup's own embedder (embedder:minilm)"
        )
    if head == "embedder":
        return EmbedderEmbeddings(get_embedder(tail))
    if head == "fake":
        if not tail.isdigit() or int(tail) < 1:
            raise ConfigError(f"embeddings {spec!r}: the dimension must be a positive integer (fake:384)")
        return DeterministicFakeEmbedding(size=int(tail))
    try:
        found: Any = getattr(importlib.import_module(head), tail)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"embeddings {spec!r}: cannot import {tail} from {head} ({e})") from None
    fix = "name a LangChain Embeddings class (e.g. langchain_openai:OpenAIEmbeddings)"
    if isinstance(found, type) and not issubclass(found, Embeddings):
        raise ConfigError(f"embeddings {spec!r}: {head}.{tail} is not a LangChain Embeddings class; {fix}")
    made = found
    if callable(found) and not isinstance(found, Embeddings):
        try:
            made = found()
        except Exception as e:  # a function that needs arguments, a class its environment does not configure
            why = (str(e).strip().splitlines() or [""])[0]
            raise ConfigError(
                f"embeddings {spec!r}: {head}.{tail}() without arguments failed ({type(e).__name__}: {why}); "
                f"{fix} that needs no arguments, or set what it reads from the environment"
            ) from None
    if not isinstance(made, Embeddings):
        raise ConfigError(f"embeddings {spec!r} gave a {type(made).__name__}, not Embeddings; {fix}")
    return made


def model_of(embeddings: Embeddings) -> StoreModel:
    """The embeddings as the sync state records them: the class and the model it names, and the
    dimension (chunkdedup's embedder knows it; other embeddings embed one short text to tell).

    Example:
        >>> str(model_of(embeddings_from("fake:8")))
        'DeterministicFakeEmbedding (8 dimensions)'
    """
    named = model_name(embeddings)
    name = type(embeddings).__name__ + (f" {named}" if named else "")
    if isinstance(embeddings, EmbedderEmbeddings):
        return StoreModel(name, embeddings.embedder.dim)
    return StoreModel(name, len(embeddings.embed_query("dimension")))


def sync_local(
    index: IndexLike,
    store: LocalStore,
    embeddings: Embeddings,
    *,
    state: str | Path | None = None,
    reembed: bool = False,
    full: bool = False,
    batch_size: int = DEFAULT_BATCH,
    progress: Callable[[str, int, int], None] | None = None,
    index_vectors: bool | None = None,
) -> SyncReport:
    """Sync ``index`` into ``store`` (see the module docstring); ``state`` defaults to
    :meth:`LocalStore.state_path`. Embeddings other than those the state records for the store are
    refused (:class:`ConfigError`); ``reembed=True`` empties the store's collection (its file) and
    embeds every record again with these, recording them.

    Example:
        >>> store = LocalStore("chroma", Path("chroma"), "policies")
        >>> sync_local("policies.sqlite", store, embeddings_from("fake:384")).upserts  # doctest: +SKIP
    """
    from chunkdedup.integrations.langchain import sync

    state = store.state_path() if state is None else Path(state)
    store.check_paths(state)
    saved = SyncState() if reembed else SyncState.load(state)
    model = model_of(embeddings)
    check_model(saved.model, model, store.describe(), state)
    begin = replace(saved, model=model)
    state.parent.mkdir(parents=True, exist_ok=True)
    later = store.kind in _WRITTEN_BACK
    # a store written back at the end: the sync's state goes beside the real one until the store is written
    work = state.with_name(f".{state.name}.{secrets.token_hex(4)}.pending") if later else state
    try:
        if later:
            begin.save(work)
        promote = (lambda: os.replace(work, state)) if later else None
        with opened(store, embeddings, dim=model.dim, empty=reembed, written=promote) as vs:
            if not later and begin != saved:
                begin.save(state)  # after the store was emptied (reembed): the state then says so
            report = sync(index, vs, state=work, batch_size=batch_size, full=full, progress=progress,
                          index_vectors=index_vectors)
    finally:
        if later:
            work.unlink(missing_ok=True)
    return replace(report, state=str(state))


@contextmanager
def opened(
    store: LocalStore,
    embeddings: Embeddings,
    *,
    dim: int | None = None,
    empty: bool = False,
    written: Callable[[], None] | None = None,
) -> Iterator[VectorStore]:
    """The store, opened (created when missing) for a sync; FAISS and the in-memory store are written
    back to their folder or file when the block ends, also after an error, so what the store
    confirmed stays with the sync state that records it; ``written`` is called once that write
    succeeded. ``dim``: the embeddings' dimension, when known; ``empty``: the store's collection (its
    file) is emptied first."""
    if store.kind in _NEEDS:
        module, package = _NEEDS[store.kind]
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtraError(f"chunkdedup sync --store {store.kind}", package, module) from None
    opener = {
        "chroma": _chroma,
        "qdrant": _qdrant,
        "lancedb": _lancedb,
        "faiss": _faiss,
        "memory": _memory,
    }[store.kind]
    with opener(store, embeddings, _Open(dim, empty, written)) as vs:
        yield vs


@dataclass(frozen=True, slots=True)
class _Open:
    """How :func:`opened` opens a store."""

    dim: int | None
    empty: bool
    written: Callable[[], None] | None

    def size(self, embeddings: Embeddings) -> int:
        return self.dim if self.dim is not None else len(embeddings.embed_query("dimension"))

    def done(self) -> None:
        if self.written is not None:
            self.written()


@contextmanager
def _chroma(store: LocalStore, embeddings: Embeddings, how: _Open) -> Iterator[VectorStore]:
    import chromadb
    from chromadb.config import Settings
    from langchain_chroma import Chroma

    client = chromadb.PersistentClient(path=str(store.path), settings=Settings(anonymized_telemetry=False))
    if how.empty and store.collection in {getattr(c, "name", c) for c in client.list_collections()}:
        client.delete_collection(store.collection)  # its dimension is fixed: a new model needs a new one
    yield Chroma(collection_name=store.collection, embedding_function=embeddings, client=client)


@contextmanager
def _qdrant(store: LocalStore, embeddings: Embeddings, how: _Open) -> Iterator[VectorStore]:
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(store.path))
    try:
        if how.empty and client.collection_exists(store.collection):
            client.delete_collection(store.collection)
        if not client.collection_exists(store.collection):
            params = models.VectorParams(size=how.size(embeddings), distance=models.Distance.COSINE)
            client.create_collection(store.collection, vectors_config=params)
        yield QdrantVectorStore(client=client, collection_name=store.collection, embedding=embeddings)
    finally:
        client.close()


@contextmanager
def _lancedb(store: LocalStore, embeddings: Embeddings, how: _Open) -> Iterator[VectorStore]:
    from langchain_community.vectorstores import LanceDB

    if how.empty and store.path.exists():
        import lancedb

        db = lancedb.connect(str(store.path))
        if store.collection in db.table_names():
            db.drop_table(store.collection)
    yield LanceDB(uri=str(store.path), embedding=embeddings, table_name=store.collection, mode="append")


@contextmanager
def _faiss(store: LocalStore, embeddings: Embeddings, how: _Open) -> Iterator[VectorStore]:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    if not how.empty and (store.path / f"{store.collection}.faiss").exists():
        # the folder is the one this command writes: its pickle is the caller's own
        vs = FAISS.load_local(
            str(store.path), embeddings, index_name=store.collection, allow_dangerous_deserialization=True
        )
    else:  # new, or emptied: the files are replaced when the sync ends
        vs = FAISS(embeddings, faiss.IndexFlatL2(how.size(embeddings)), InMemoryDocstore(), {})
    try:
        yield vs
    finally:
        vs.save_local(str(store.path), index_name=store.collection)
        how.done()


@contextmanager
def _memory(store: LocalStore, embeddings: Embeddings, how: _Open) -> Iterator[VectorStore]:
    if how.empty or not store.path.exists():
        vs = InMemoryVectorStore(embeddings)
    else:
        vs = _load_memory(store.path, embeddings)
    try:
        yield vs
    finally:
        from langchain_core.load import dumpd

        # whole or not at all (a second Ctrl-C during the write leaves the old file), then its state
        store.path.parent.mkdir(parents=True, exist_ok=True)
        with text_out(store.path, f"the memory store {store.path}") as fh:
            json.dump(dumpd(vs.store), fh)
        how.done()


def _load_memory(path: Path, embeddings: Embeddings) -> InMemoryVectorStore:
    """The in-memory store kept in ``path``; a damaged or empty file is a one-line error."""
    try:
        text = path.read_text(encoding="utf-8")
        vs = InMemoryVectorStore.load(str(path), embeddings)
        if not isinstance(vs.store, dict) or not all(_is_row(r) for r in vs.store.values()):
            raise ValueError("not the records of an in-memory store")
    except OSError as e:
        why = e.strerror
        raise InputError(f"the memory store {path} cannot be read ({why}): give --path a file") from None
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        what = "empty" if not text.strip() else f"damaged ({(str(e).splitlines() or [repr(e)])[0]})"
        raise InputError(
            f"the memory store {path} is {what}: delete it, then sync again with --full, which rebuilds it "
            "from the index (or sync with --reembed)"
        ) from None
    return vs


def _is_row(row: object) -> bool:
    return isinstance(row, dict) and "vector" in row and "text" in row


def _nearest(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    here = Path(os.path.abspath(path))
    while not os.path.lexists(here) and here != here.parent:
        here = here.parent
    return here


def _probe(folder: Path) -> str | None:
    """Why a file cannot be created in ``folder`` (``None``: it can; the probe is removed)."""
    probe = folder / f".{secrets.token_hex(4)}.probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        probe.unlink()
    except OSError as e:
        return e.strerror or str(e)
    return None


def _writable_folder(path: Path, what: str) -> None:
    """Refuse a store folder that is a file, lies under a file, or cannot be written."""
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} at {path} needs a folder, but {path} is a file: give --path a folder "
                         "(created when missing)")
    _creatable(path, what, "--path")


def _writable_file(path: Path, what: str, flag: str) -> None:
    """Refuse a file path that is a folder, lies under a file, or whose folder cannot be written."""
    if path.is_dir():
        raise InputError(f"{what} {path} is a folder: give {flag} the path of a file ({path / 'x.json'})")
    if path.exists() and not path.is_file():
        raise InputError(f"{what} {path} is not a regular file: give {flag} the path of a file")
    _creatable(path.parent, what, flag, shown=path)


def _creatable(folder: Path, what: str, flag: str, shown: Path | None = None) -> None:
    """Refuse unless ``folder`` exists and can be written, or can be created in a writable folder."""
    shown = shown or folder
    base = _nearest(folder)
    if not base.is_dir():
        raise InputError(f"cannot write {what} at {shown}: {base} is a file, not a folder; give {flag} a "
                         "path in a folder that can be written")
    why = _probe(base)
    if why is not None:
        raise InputError(f"cannot write {what} at {shown}: {base} cannot be written ({why}); give {flag} a "
                         "path in a folder that can be written")
