"""The approximate vector index of an index: a usearch HNSW graph in a folder beside the SQLite file.

Exact search scores every stored vector (:mod:`chunkdedup.query.vectors`): fine to a few hundred
thousand texts, linear beyond. The folder ``INDEX.vectors`` (optional extra ``[ann]``) holds an HNSW
graph of the same vectors, keyed by ``groups.gid`` as the tantivy folder is, so a question's nearest
groups are found in milliseconds at millions. As the tantivy folder, it is derived: the SQLite file
stays the single source of truth, and the folder can be deleted at any time (the next ingest, or
``chunkdedup vector-index``, builds it again). A damaged folder (a file usearch or numpy cannot read,
sizes that disagree) is not used: a question searches exactly, with a warning naming
``chunkdedup vector-index --index INDEX --rebuild``, and the next sync rebuilds it.

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

Beside the graph a generation holds, row for row, each key's group id and stored vector
(:mod:`chunkdedup.store.vectorarrays`, memory-mapped): while no run has begun since the folder's sync
(:meth:`AnnHandle.alone`), a question's candidates are mapped and scored from them, not from SQLite.
While a run is going (it commits its batches as it goes) or after one failed, the keys are mapped and
the vectors read through SQLite, so a group removed since the sync is never returned.

Example:
    >>> with Store.open("index.sqlite") as store, store.writer(30.0):  # doctest: +SKIP
    ...     sync(store, min_vectors=0)
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import xxhash

from chunkdedup.config import ANN_MIN_VECTORS
from chunkdedup.errors import IndexError_, MissingExtraError
from chunkdedup.store import Store, vectorarrays
from chunkdedup.store.vectorarrays import FolderArrays

logger = logging.getLogger(__name__)

#: The folder's layout; a folder of another layout is not used (a sync brings it up to this one).
FORMAT = 2
#: Layouts whose graph file this one keeps as it is (layout 1 had no arrays beside it: a sync adds
#: them without building the graph again); a folder of any other layout is rebuilt.
GRAPH_FORMATS = frozenset({1, 2})
#: HNSW settings: links per node, and the candidate list while adding and (at least) while searching.
CONNECTIVITY = 16
EXPANSION_ADD = 64
#: At 1M clustered vectors (benchmarks/ann.py) recall@10 of 20 candidates was 0.64 at 64, 0.80 at
#: 128, 0.84 at 256 and 0.90 at 512, the search itself 1.0-4.2 ms: a small share of a question's cost.
EXPANSION_SEARCH = 256
#: Vectors are held as float16 in the graph (half the memory; a hit's score is computed from the
#: float32 vector stored: the folder's arrays, or SQLite).
DTYPE = "f16"
#: When more than this share of the folder's keys changed, it is rebuilt rather than updated.
REBUILD_SHARE = 0.5
_BLOCK = 20_000
_VECTORS = "SELECT g.gid, e.vector FROM groups g JOIN embeddings e ON e.group_id = g.id"

if TYPE_CHECKING:  # numpy is imported where vectors are read: an ingest without vectors never loads it
    import numpy as np
    import numpy.typing as npt

    F32 = npt.NDArray[np.float32]
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
    and ``removed``; ``built`` is False when nothing was written (no folder wanted); ``damaged``:
    why the folder found could not be used as it was (a file usearch or numpy cannot read, sizes
    that disagree), when it was written again for that."""

    built: bool
    rebuilt: bool
    added: int
    removed: int
    count: int
    damaged: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class AnnHandle:
    """An open generation of the folder: the HNSW graph, its state, and the arrays beside it (each
    key's group id and stored vector), all memory-mapped."""

    __slots__ = ("arrays", "generation", "index", "state")

    def __init__(self, generation: str, index: Any, state: AnnState, arrays: FolderArrays) -> None:
        self.generation = generation
        self.index = index
        self.state = state
        self.arrays = arrays

    def alone(self, store: Store) -> bool:
        """Whether the folder alone answers for ``store`` now: it holds the index's vectors, keys
        and groups exactly when no run has begun since the one it was synced for. A run commits its
        batches as it goes, so while one runs (or after one failed) SQLite may have dropped a group
        the folder still holds: keys are then mapped, and vectors read, through SQLite."""
        return latest_run(store) == self.state.run

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


def latest_run(store: Store) -> int:
    """The id of the index's latest run, finished or not (0 when none has begun)."""
    row = store.conn.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
    return int(row[0])


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
    recorded = store.settings.embedder()
    return None if recorded is None else (recorded.name, recorded.dim)


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
    """The current generation's state (None when there is none) and why it cannot be used (None: it
    can): stale (:func:`why_not`), or damaged (a file missing or unreadable, sizes that disagree)."""
    path = folder(store.path)
    gen = _current(path)
    state = None if gen is None else _state(path / gen)
    if gen is None and path.exists() and not path.is_dir():
        return None, f"{path} is a file, not a folder"
    if gen is not None and state is None:
        return None, f"{path} is damaged ({path / gen / 'state.json'} is missing or unreadable)"
    why = why_not(store, state)
    if why is None and gen is not None and state is not None and has_usearch():
        opened = _open(path / gen, state)
        if isinstance(opened, str):
            why = f"{path} is damaged ({opened})"
    return state, why


def rebuild_command(index: str | Path) -> str:
    """The command that deletes an index's vector folder and builds it again from the stored vectors."""
    return f"chunkdedup vector-index --index {index} --rebuild"


def warn_damaged(index: str | Path, why: str) -> None:
    """The warning a question gives when the folder cannot be used as it is: it is searched exactly."""
    logger.warning(
        "the vector folder %s is damaged (%s): vector search is exact (slower) until it is rebuilt: "
        "run `%s`", folder(index), why, rebuild_command(index),
    )


def load(store: Store, held: AnnHandle | None = None) -> AnnHandle | None:
    """The folder's current generation, opened (``held`` when it is still that one), or None when
    the folder is missing, stale (:func:`why_not`) or usearch is not installed; or damaged (a file
    usearch or numpy cannot read, sizes that disagree), then with one warning naming the fix."""
    path = folder(store.path)
    for _ in range(3):  # a sync may swap generations (and delete the old) while this reads them
        gen = _current(path)
        if gen is None:
            if path.exists() and not path.is_dir():
                warn_damaged(store.path, f"{path} is a file, not a folder")
            return None
        if held is not None and held.generation == gen and why_not(store, held.state) is None:
            return held
        state = _state(path / gen)
        if state is not None and (why_not(store, state) is not None or not has_usearch()):
            return None
        opened = f"{path / gen / 'state.json'} is missing or unreadable" if state is None else _open(
            path / gen, state
        )
        if not isinstance(opened, str):
            return opened
        if _current(path) == gen:
            warn_damaged(store.path, opened)
            return None
    return None


def _open(gen: Path, state: AnnState) -> AnnHandle | str:
    """A generation opened (its files memory-mapped), or why it is damaged: a file missing, empty or
    unreadable, or a size that disagrees with ``state.json``."""
    keys = _keys(gen, state)
    if isinstance(keys, str):
        return keys
    arrays = _arrays(gen, state)
    if isinstance(arrays, str):
        return arrays
    graph = _graph(gen, state, view=True)
    if isinstance(graph, str):
        return graph
    return AnnHandle(gen.name, graph, state, arrays)


def _keys(gen: Path, state: AnnState) -> U64 | str:
    """A generation's ``keys.npy`` (``gid`` and id fingerprint of each row), or why it is damaged."""
    keys = vectorarrays.load(gen / "keys.npy")
    if isinstance(keys, str):
        return keys
    if keys.shape != (state.count, 2) or keys.dtype.kind != "u":
        held = f"{keys.shape} {keys.dtype}"
        return f"{gen / 'keys.npy'} holds {held}; state.json says ({state.count}, 2) uint64"
    return keys


def _arrays(gen: Path, state: AnnState) -> FolderArrays | str:
    """A generation's arrays (:mod:`~chunkdedup.store.vectorarrays`), or why they are damaged."""
    arrays = FolderArrays.read(gen)
    if isinstance(arrays, str):
        return arrays
    if arrays.vectors.shape != (state.count, state.dim):
        got = arrays.vectors.shape
        return f"{gen / 'vectors.npy'} has shape {got}; state.json says ({state.count}, {state.dim})"
    return arrays


def _graph(gen: Path, state: AnnState, *, view: bool) -> Any:
    """A generation's HNSW graph (memory-mapped when ``view``), or why usearch cannot use it (a str)."""
    file = gen / "hnsw.usearch"
    try:
        if file.stat().st_size == 0:
            return f"{file} is empty (0 bytes)"
        graph = import_usearch().Index.restore(str(file), view=view)
    except FileNotFoundError:
        return f"{file} is missing"
    except (OSError, ValueError, RuntimeError) as e:  # usearch: "Not a dense USearch index!", ...
        return f"{file} cannot be loaded by usearch ({e})"
    if graph is None:
        return f"{file} cannot be loaded by usearch"
    if len(graph) != state.count or graph.ndim != state.dim:
        held = f"{len(graph)} vectors of dim {graph.ndim}"
        return f"{file} holds {held}; state.json says {state.count} of dim {state.dim}"
    return graph


def _verify(gen: Path, state: AnnState) -> tuple[U64 | None, str | None]:
    """What a sync may keep of a generation, checked: its keys (None when they or the graph are
    damaged: every vector is added again), and why it is damaged (None: it is not; a layout without
    arrays is not damaged, a sync adds them)."""
    import numpy as np

    keys = _keys(gen, state)
    if isinstance(keys, str):
        return None, keys
    graph = _graph(gen, state, view=True)
    if isinstance(graph, str):
        return None, graph
    del graph  # only checked: a sync that keeps it restores it to change it, or copies its file
    if state.format != FORMAT:
        return keys, None
    arrays = _arrays(gen, state)
    if isinstance(arrays, str):
        return keys, arrays
    if not np.array_equal(arrays.gids, keys[:, 0]):
        return keys, f"{gen / 'gids.npy'} does not hold the keys of {gen / 'keys.npy'}"
    return keys, None


# -- building and updating --------------------------------------------------------------------------
def fingerprints(ids: Sequence[str]) -> U64:
    """A 64-bit fingerprint of each group id (xxh3): with the ``gid`` it names one group."""
    import numpy as np

    return np.fromiter((xxhash.xxh3_64_intdigest(i.encode()) for i in ids), dtype=np.uint64, count=len(ids))


def _embedded_keys(store: Store) -> tuple[I64, U64, list[str]]:
    """``gid``, id fingerprint and id of every group holding a vector, by ``gid``."""
    import numpy as np

    rows = store.conn.execute(
        "SELECT g.gid, g.id FROM groups g JOIN embeddings e ON e.group_id = g.id ORDER BY g.gid"
    ).fetchall()
    gids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    ids = [r[1] for r in rows]
    return gids, fingerprints(ids), ids


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


def _filler(store: Store, gids: I64, dim: int) -> Callable[[F32, Any], None]:
    """What writes the arrays' vectors that the old generation did not hold: every row in one pass
    in ``gid`` order, or the missing rows' ``gid`` 500 at a time."""
    import numpy as np

    def fill(out: F32, missing: Any) -> None:
        rows = np.flatnonzero(missing)
        if len(rows) == len(gids):
            cursor = store.conn.execute(f"{_VECTORS} ORDER BY g.gid")
            lo = 0
            while block := cursor.fetchmany(_BLOCK):
                keys, m = _vectors(block, dim)
                if not np.array_equal(keys.astype(np.int64), gids[lo : lo + len(block)]):
                    raise IndexError_(
                        f"the vectors of {store.path} changed while {folder(store.path)} was written"
                        " (a sync holds the writer lock): run"
                        f" `chunkdedup vector-index --index {store.path}` again"
                    )
                out[lo : lo + len(block)] = m
                lo += len(block)
            return
        for lo in range(0, len(rows), 500):
            part = [int(g) for g in gids[rows[lo : lo + 500]]]
            found = store.conn.execute(f"{_VECTORS} WHERE g.gid IN ({','.join('?' * len(part))})", part)
            got = found.fetchall()
            if got:
                keys, m = _vectors(got, dim)
                out[np.searchsorted(gids, keys.astype(np.int64))] = m

    return fill


def sync(
    store: Store,
    *,
    min_vectors: int = ANN_MIN_VECTORS,
    run: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    rebuild: bool = False,
) -> AnnSync:
    """Bring the folder up to the index's stored vectors, for ``run`` (default: the last finished).

    A folder is made when usearch is installed and the index holds at least ``min_vectors`` vectors;
    one that exists is kept up to date whatever the count (deleted when the index holds no vectors).
    A folder of another embedder or graph layout is rebuilt, as is one whose graph or keys are
    damaged (usearch or numpy cannot read them, their sizes disagree: :attr:`AnnSync.damaged` says
    why), and every one with ``rebuild`` (the folder deleted first); otherwise the changed keys are
    removed and added (rebuilt when more than :data:`REBUILD_SHARE` of them changed), and the arrays
    beside the graph written again (the vectors of kept keys copied from the old generation, unless
    its arrays are damaged). The caller holds the writer lock (one sync at a time).
    """
    tick = progress or (lambda stage, done, total: None)
    path = folder(store.path)
    recorded = _embedder(store)
    total = int(store.conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]) if recorded else 0
    gen = _current(path)
    if recorded is None or total == 0:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        return AnnSync(False, False, 0, 0, 0)
    if not has_usearch():
        return AnnSync(False, False, 0, 0, 0)
    if rebuild and path.is_dir():
        shutil.rmtree(path, ignore_errors=True)  # a file a reader holds open: a new generation beside it
    elif rebuild and path.exists():
        path.unlink()  # a file where the folder goes (the folder's name is chunkdedup's)
    gen = None if rebuild else gen
    if gen is None and total < min_vectors:
        return AnnSync(False, False, 0, 0, 0)
    if path.exists() and not path.is_dir():
        raise IndexError_(
            f"{path} is a file, not the vector folder of {store.path}: move it away, or replace it "
            f"with `{rebuild_command(store.path)}`"
        )
    import numpy as np

    name, dim = recorded
    run = last_run(store) if run is None else run
    gids, prints, ids = _embedded_keys(store)
    old = None if gen is None else _state(path / gen)
    damaged = None
    if gen is not None and old is None:
        damaged = f"{path / gen / 'state.json'} is missing or unreadable"
    same = old is not None and old.format in GRAPH_FORMATS and (old.embedder, old.dim) == recorded
    rebuilt, added, removed = True, len(gids), 0
    graph: Any = None
    if same and gen is not None and old is not None:
        held, damaged = _verify(path / gen, old)
        if damaged is not None:
            logger.info("the vector folder %s is damaged (%s): writing it again", path, damaged)
        if held is not None:
            graph, rebuilt, added, removed = _update(store, path / gen, old, held, gids, prints, damaged)
            if graph is None and not rebuilt:  # the same vectors: only the run it answers for moves
                _write_state(path / gen, AnnState(name, dim, run, len(gids)))
                return AnnSync(True, False, 0, 0, len(gids))
    if graph is None:
        graph, rebuilt, added, removed = _new_graph(dim), True, len(gids), 0
        _add_all(store, graph, dim, lambda done, n: tick("vector index", done, n), len(gids))
    keys = np.stack([gids.astype(np.uint64), prints], axis=1)
    state = AnnState(name, dim, run, len(gids))
    _write(path, gen, graph, keys, state, lambda at, kept: vectorarrays.write(
        at, keys[:, 0], ids, dim, _filler(store, gids, dim), None if damaged else kept
    ))
    return AnnSync(True, rebuilt, added, removed, len(gids), damaged)


def _update(
    store: Store, gen: Path, old: AnnState, held: U64, gids: I64, prints: U64, damaged: str | None
) -> tuple[Any, bool, int, int]:
    """How a sync keeps a generation whose graph and keys are sound (``held``: its keys): ``(graph,
    rebuilt, added, removed)``, the graph None and ``rebuilt`` False when nothing but the run moves,
    None and ``rebuilt`` True when it is built again; else the old graph's file (kept as it is, the
    arrays written again) or the old graph updated."""
    import numpy as np

    old_pairs = set(zip(held[:, 0].tolist(), held[:, 1].tolist(), strict=True))
    new_pairs = set(zip(gids.astype(np.uint64).tolist(), prints.tolist(), strict=True))
    gone = sorted(old_pairs - new_pairs)
    came = sorted(new_pairs - old_pairs)
    if not gone and not came:
        if old.format == FORMAT and damaged is None:
            return None, False, 0, 0
        return gen / "hnsw.usearch", False, 0, 0  # the arrays are written again
    if len(gone) + len(came) > REBUILD_SHARE * max(1, len(old_pairs)):
        return None, True, 0, 0
    graph = _graph(gen, old, view=False)
    if isinstance(graph, str):
        return None, True, 0, 0
    if gone:
        graph.remove(np.array([g for g, _ in gone], dtype=np.uint64))
    _add_gids(store, graph, old.dim, [g for g, _ in came])
    return graph, False, len(came), len(gone)


def _write(
    path: Path,
    old: str | None,
    graph: Any,
    keys: U64,
    state: AnnState,
    arrays: Callable[[Path, Path | None], None],
) -> None:
    """A new generation beside the old (``graph``: the graph, or the path of the old one's file when
    it is kept as it is; ``arrays(gen, old)`` writes the arrays), ``current`` pointed at it in one
    rename, the old removed."""
    import numpy as np

    path.mkdir(parents=True, exist_ok=True)
    number = 1 + max((int(p.name[1:]) for p in path.glob("g*") if p.name[1:].isdigit()), default=0)
    gen = path / f"g{number}"
    shutil.rmtree(gen, ignore_errors=True)
    gen.mkdir()
    if isinstance(graph, Path):
        shutil.copyfile(graph, gen / "hnsw.usearch")
    else:
        graph.save(str(gen / "hnsw.usearch"))
    np.save(gen / "keys.npy", keys)
    arrays(gen, None if old is None or not (path / old).is_dir() else path / old)
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
