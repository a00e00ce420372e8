"""The approximate vector index of an index: a usearch HNSW graph in a folder beside the SQLite file.

Exact search scores every stored vector (:mod:`chunkdedup.query.vectors`): fine to a few hundred
thousand texts, linear beyond. The folder ``INDEX.vectors`` (optional extra ``[ann]``) holds an HNSW
graph of the same vectors, keyed by ``groups.gid`` as the tantivy folder is, so a question's nearest
groups are found in milliseconds at millions. As the tantivy folder, it is derived: the SQLite file
stays the single source of truth, and the folder can be deleted at any time (the next ingest, or
``chunkdedup vector-index``, builds it again).

Why usearch and not sqlite-vec: sqlite-vec 0.1's ``vec0`` tables are brute force (an exact scan in C,
no approximate index), and loading it needs ``sqlite3.Connection.enable_load_extension``, which many
Python builds (this one included) lack.

The folder is trusted only while it matches the index: its ``state.json`` records the embedder
(name and dimension) whose vectors it holds, and the run it was brought up to. A folder of another
embedder, of an older run, or of another layout is not used (the query searches exactly) and the
next :func:`sync` rebuilds or updates it. :func:`sync` compares the folder's keys, each a group's
``gid`` with a fingerprint of its id (a ``gid`` SQLite gives again after a delete is seen as a new
group), with the groups holding a vector: it removes what went and adds what came, or rebuilds when
most of it changed. Each sync writes a new generation (``g<N>/``) and then points ``current`` at it in
one rename, so a reader never sees half a folder; a reader still holding the old generation keeps
reading it.

Example:
    >>> with Store.open("index.sqlite") as store, store.writer(30.0):  # doctest: +SKIP
    ...     sync(store, min_vectors=0)
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import xxhash

from chunkdedup.config import ANN_MIN_VECTORS
from chunkdedup.errors import MissingExtraError
from chunkdedup.store import Store

#: The folder's layout; a folder of another layout is rebuilt.
FORMAT = 1
#: HNSW settings: links per node, and the candidate list while adding and (at least) while searching.
CONNECTIVITY = 16
EXPANSION_ADD = 64
#: At 1M clustered vectors (benchmarks/ann.py) recall@10 of 20 candidates was 0.64 at 64, 0.80 at
#: 128, 0.84 at 256 and 0.90 at 512, the search itself 1.0-4.2 ms: a small share of a question's cost.
EXPANSION_SEARCH = 256
#: Vectors are held as float16 in the graph (half the memory; a hit's score is re-read from SQLite).
DTYPE = "f16"
#: When more than this share of the folder's keys changed, it is rebuilt rather than updated.
REBUILD_SHARE = 0.5
_BLOCK = 20_000
_VECTORS = "SELECT g.gid, e.vector FROM groups g JOIN embeddings e ON e.group_id = g.id"

if TYPE_CHECKING:  # numpy is imported where vectors are read: an ingest without vectors never loads it
    import numpy as np
    import numpy.typing as npt

    I64 = npt.NDArray[np.int64]
    U64 = npt.NDArray[np.uint64]


@dataclass(frozen=True, slots=True)
class AnnState:
    """What a generation of the folder holds: the embedder of its vectors, the run it was synced
    for, how many vectors, and the layout."""

    embedder: str
    dim: int
    run: int
    count: int
    format: int = FORMAT


@dataclass(frozen=True, slots=True)
class AnnSync:
    """What one :func:`sync` did: ``rebuilt`` (every vector added again), or the keys it ``added``
    and ``removed``; ``built`` is False when nothing was written (no folder wanted)."""

    built: bool
    rebuilt: bool
    added: int
    removed: int
    count: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class AnnHandle:
    """An open generation of the folder: the HNSW graph (memory-mapped) and its state."""

    __slots__ = ("generation", "index", "state")

    def __init__(self, generation: str, index: Any, state: AnnState) -> None:
        self.generation = generation
        self.index = index
        self.state = state

    def search(self, vector: npt.NDArray[np.float32], count: int, expansion: int = EXPANSION_SEARCH) -> I64:
        """The ``gid`` keys of the (about) ``count`` nearest vectors, nearest first (``expansion``:
        the candidate list, at least ``count``)."""
        import numpy as np

        self.index.expansion_search = max(expansion, count)
        found = self.index.search(vector, count)
        keys: I64 = np.asarray(found.keys, dtype=np.int64)
        return keys


def folder(index: str | Path) -> Path:
    """The vector folder of an index file: ``INDEX.vectors`` beside it."""
    p = Path(index)
    return p.with_name(p.name + ".vectors")


def import_usearch() -> ModuleType:
    try:
        import usearch.index
    except ImportError:
        raise MissingExtraError("the approximate vector index", "ann", "usearch") from None
    return usearch.index


def has_usearch() -> bool:
    try:
        import_usearch()
    except MissingExtraError:
        return False
    return True


def last_run(store: Store) -> int:
    """The id of the index's last finished run (0 when none has finished)."""
    row = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM runs WHERE status='done'").fetchone()
    return int(row[0])


def _embedder(store: Store) -> tuple[str, int] | None:
    name, dim = store.meta("embedder_name"), store.meta("embedder_dim")
    return None if name is None or dim is None else (name, int(dim))


def _current(path: Path) -> str | None:
    try:
        return (path / "current").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _state(gen: Path) -> AnnState | None:
    try:
        raw = json.loads((gen / "state.json").read_text(encoding="utf-8"))
        return AnnState(**raw)
    except (OSError, ValueError, TypeError):
        return None


def why_not(store: Store, state: AnnState | None) -> str | None:
    """Why a folder with ``state`` cannot answer for ``store`` now (None: it can)."""
    if state is None:
        return f"{folder(store.path)} is not built"
    recorded = _embedder(store)
    if state.format != FORMAT:
        return f"{folder(store.path)} has layout {state.format}, not {FORMAT}"
    if recorded is None or (state.embedder, state.dim) != recorded:
        shown = "no embedder" if recorded is None else f"{recorded[0]} (dim {recorded[1]})"
        held = f"{state.embedder} (dim {state.dim})"
        return f"{folder(store.path)} holds vectors of {held}; the index has {shown}"
    run = last_run(store)
    if state.run != run:
        return f"{folder(store.path)} was synced for run {state.run}; the index's last run is {run}"
    return None


def status(store: Store) -> tuple[AnnState | None, str | None]:
    """The current generation's state (None when there is none) and why it cannot be used (None: it can)."""
    path = folder(store.path)
    gen = _current(path)
    state = None if gen is None else _state(path / gen)
    return state, why_not(store, state)


def load(store: Store, held: AnnHandle | None = None) -> AnnHandle | None:
    """The folder's current generation, opened (``held`` when it is still that one), or None when
    the folder is missing, stale (:func:`why_not`) or usearch is not installed."""
    path = folder(store.path)
    gen = _current(path)
    if gen is None:
        return None
    if held is not None and held.generation == gen and why_not(store, held.state) is None:
        return held
    state = _state(path / gen)
    if why_not(store, state) is not None or state is None or not has_usearch():
        return None
    graph = import_usearch().Index.restore(str(path / gen / "hnsw.usearch"), view=True)
    return None if graph is None else AnnHandle(gen, graph, state)


# -- building and updating --------------------------------------------------------------------------
def fingerprints(ids: Sequence[str]) -> U64:
    """A 64-bit fingerprint of each group id (xxh3): with the ``gid`` it names one group."""
    import numpy as np

    return np.fromiter((xxhash.xxh3_64_intdigest(i.encode()) for i in ids), dtype=np.uint64, count=len(ids))


def _embedded_keys(store: Store) -> tuple[I64, U64]:
    """``gid`` and id fingerprint of every group holding a vector, by ``gid``."""
    import numpy as np

    rows = store.conn.execute(
        "SELECT g.gid, g.id FROM groups g JOIN embeddings e ON e.group_id = g.id ORDER BY g.gid"
    ).fetchall()
    gids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return gids, fingerprints([r[1] for r in rows])


def _vectors(rows: Sequence[tuple[int, bytes]], dim: int) -> tuple[U64, npt.NDArray[np.float32]]:
    import numpy as np

    keys = np.fromiter((r[0] for r in rows), dtype=np.uint64, count=len(rows))
    m = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
    return keys, np.ascontiguousarray(m, dtype=np.float32)


def _new_graph(dim: int) -> Any:
    return import_usearch().Index(
        ndim=dim, metric="cos", dtype=DTYPE, connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
    )


def _add_all(store: Store, graph: Any, dim: int, tick: Callable[[int, int], None], total: int) -> None:
    cursor = store.conn.execute(f"{_VECTORS} ORDER BY g.gid")
    done = 0
    while rows := cursor.fetchmany(_BLOCK):
        keys, m = _vectors(rows, dim)
        graph.add(keys, m, threads=os.cpu_count() or 1)
        done += len(rows)
        tick(done, total)


def _add_gids(store: Store, graph: Any, dim: int, gids: Sequence[int]) -> None:
    for lo in range(0, len(gids), 500):
        part = [int(g) for g in gids[lo : lo + 500]]
        marks = ",".join("?" * len(part))
        rows = store.conn.execute(f"{_VECTORS} WHERE g.gid IN ({marks})", part).fetchall()
        if rows:
            keys, m = _vectors(rows, dim)
            graph.add(keys, m, threads=os.cpu_count() or 1)


def sync(
    store: Store,
    *,
    min_vectors: int = ANN_MIN_VECTORS,
    run: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> AnnSync:
    """Bring the folder up to the index's stored vectors, for ``run`` (default: the last finished).

    A folder is made when usearch is installed and the index holds at least ``min_vectors`` vectors;
    one that exists is kept up to date whatever the count (deleted when the index holds no vectors).
    A folder of another embedder or layout is rebuilt; otherwise the changed keys are removed and
    added (rebuilt when more than :data:`REBUILD_SHARE` of them changed). The caller holds the
    writer lock (one sync at a time).
    """
    tick = progress or (lambda stage, done, total: None)
    path = folder(store.path)
    recorded = _embedder(store)
    total = int(store.conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]) if recorded else 0
    gen = _current(path)
    if recorded is None or total == 0:
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
        return AnnSync(False, False, 0, 0, 0)
    if (gen is None and total < min_vectors) or not has_usearch():
        return AnnSync(False, False, 0, 0, 0)
    import numpy as np

    name, dim = recorded
    run = last_run(store) if run is None else run
    gids, prints = _embedded_keys(store)
    old = None if gen is None else _state(path / gen)
    same = old is not None and old.format == FORMAT and (old.embedder, old.dim) == recorded
    rebuilt, added, removed = True, len(gids), 0
    graph = None
    if same and gen is not None:
        held = np.load(path / gen / "keys.npy")
        old_pairs = set(zip(held[:, 0].tolist(), held[:, 1].tolist(), strict=True))
        new_pairs = set(zip(gids.astype(np.uint64).tolist(), prints.tolist(), strict=True))
        gone = sorted(old_pairs - new_pairs)
        came = sorted(new_pairs - old_pairs)
        if not gone and not came:  # the same vectors: only the run it answers for moves
            _write_state(path / gen, AnnState(name, dim, run, len(gids)))
            return AnnSync(True, False, 0, 0, len(gids))
        if len(gone) + len(came) <= REBUILD_SHARE * max(1, len(old_pairs)):
            graph = import_usearch().Index.restore(str(path / gen / "hnsw.usearch"), view=False)
            if graph is not None:
                if gone:
                    graph.remove(np.array([g for g, _ in gone], dtype=np.uint64))
                _add_gids(store, graph, dim, [g for g, _ in came])
                rebuilt, added, removed = False, len(came), len(gone)
    if graph is None:
        graph = _new_graph(dim)
        _add_all(store, graph, dim, lambda done, n: tick("vector index", done, n), len(gids))
    keys = np.stack([gids.astype(np.uint64), prints], axis=1)
    _write(path, gen, graph, keys, AnnState(name, dim, run, len(gids)))
    return AnnSync(True, rebuilt, added, removed, len(gids))


def _write(path: Path, old: str | None, graph: Any, keys: U64, state: AnnState) -> None:
    """A new generation beside the old, ``current`` pointed at it in one rename, the old removed."""
    import numpy as np

    path.mkdir(parents=True, exist_ok=True)
    number = 1 + max((int(p.name[1:]) for p in path.glob("g*") if p.name[1:].isdigit()), default=0)
    gen = path / f"g{number}"
    shutil.rmtree(gen, ignore_errors=True)
    gen.mkdir()
    graph.save(str(gen / "hnsw.usearch"))
    np.save(gen / "keys.npy", keys)
    _write_state(gen, state)
    pointer = path / "current.tmp"
    pointer.write_text(gen.name, encoding="utf-8")
    os.replace(pointer, path / "current")
    for p in path.glob("g*"):
        if p.name != gen.name:
            shutil.rmtree(p, ignore_errors=True)


def _write_state(gen: Path, state: AnnState) -> None:
    """``state.json`` of a generation, replaced in one rename (a reader sees the old or the new)."""
    tmp = gen / "state.json.tmp"
    tmp.write_text(json.dumps(asdict(state), sort_keys=True), encoding="utf-8")
    os.replace(tmp, gen / "state.json")
