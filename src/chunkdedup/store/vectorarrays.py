"""The arrays beside the HNSW graph in a generation of the vector folder: which group each graph key
is, and the group's stored vector, so an approximate search maps its keys and scores its candidates
(and MMR compares them) without reading SQLite.

A generation holds, row for row in ``gid`` order (the order of ``keys.npy``):

* ``gids.npy``: the graph's keys (``groups.gid``, uint64, ascending): a key's row by binary search;
* ``ids.npy``: each row's group id (ASCII bytes, fixed width);
* ``by_id.npy`` and ``sorted_ids.npy``: the rows in group-id order and their ids: a group id's row
  by binary search (numpy's ``sorter`` would check the whole permutation on every search);
* ``vectors.npy``: each row's stored vector, the float32 SQLite holds, byte for byte, so a score
  computed from it is the score computed from SQLite's.

They are read memory-mapped: opening a generation reads nothing, and a question touches only the
pages of its candidates' rows. The folder holds them only while it answers for the index (its run is
the index's last, and no run has begun since: :func:`chunkdedup.store.vectorindex.AnnHandle.alone`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where vectors are read: an ingest without vectors never loads it
    import numpy as np
    import numpy.typing as npt

    F32 = npt.NDArray[np.float32]
    I64 = npt.NDArray[np.int64]
    U64 = npt.NDArray[np.uint64]

FILES = ("gids.npy", "ids.npy", "by_id.npy", "sorted_ids.npy", "vectors.npy")
_COPY_BLOCK = 65_536


@dataclass(frozen=True, slots=True)
class FolderArrays:
    """A generation's arrays (memory-mapped), row for row: ``gids`` ascending, ``ids``, ``vectors``;
    ``by_id`` the rows in id order, ``sorted_ids`` their ids."""

    gids: U64
    ids: npt.NDArray[np.bytes_]
    by_id: I64
    sorted_ids: npt.NDArray[np.bytes_]
    vectors: F32

    @classmethod
    def open(cls, gen: Path) -> FolderArrays | None:
        """The arrays of a generation, or None when one is missing or damaged (:meth:`read` says which)."""
        read = cls.read(gen)
        return None if isinstance(read, str) else read

    @classmethod
    def read(cls, gen: Path) -> FolderArrays | str:
        """The arrays of a generation, or why they cannot be used: a file missing, empty, unreadable
        or of the wrong shape, or arrays that disagree in length."""
        got: dict[str, npt.NDArray[Any]] = {}
        for name in FILES:
            a = load(gen / name)
            if isinstance(a, str):
                return a
            if a.ndim != (2 if name == "vectors.npy" else 1):
                return f"{gen / name} has shape {a.shape}"
            got[name] = a
        if len({len(a) for a in got.values()}) != 1:
            rows = ", ".join(f"{name} {len(a)}" for name, a in got.items())
            return f"the arrays of {gen} disagree in length ({rows} rows)"
        return cls(*(got[name] for name in FILES))

    def pairs(self, keys: Sequence[int] | I64) -> list[tuple[int, str]]:
        """``(key, group id)`` of each key the folder holds, in the order given."""
        k, rows = self._rows(keys)
        names = [i.decode("ascii") for i in self.ids[rows]]
        return list(zip(k.tolist(), names, strict=True))

    def keyed(self, keys: Sequence[int] | I64) -> tuple[list[str], F32]:
        """The group id and stored vector of each key the folder holds, in the order given."""
        import numpy as np

        _, rows = self._rows(keys)
        m: F32 = np.asarray(self.vectors[rows], dtype=np.float32)
        return [i.decode("ascii") for i in self.ids[rows]], m

    def _rows(self, keys: Sequence[int] | I64) -> tuple[U64, I64]:
        """The keys the folder holds, in the order given, and their rows."""
        import numpy as np

        k = np.asarray(keys, dtype=np.uint64)
        if not len(k) or not len(self.gids):
            return k[:0], np.empty(0, dtype=np.int64)
        rows = _positions(self.gids, k)
        hit = self.gids[rows] == k
        return k[hit], rows[hit]

    def vectors_of(self, ids: Sequence[str]) -> tuple[list[str], F32]:
        """The stored vectors of these group ids (each once, in the order given; ids the folder does
        not hold left out): the ids found and their float32 rows."""
        import numpy as np

        width = self.ids.dtype.itemsize
        wanted = [i for i in dict.fromkeys(ids) if i.isascii() and len(i) <= width]
        if not wanted or not len(self.ids):
            return [], np.empty((0, self.vectors.shape[1]), dtype=np.float32)
        asked = np.array([i.encode("ascii") for i in wanted], dtype=self.ids.dtype)
        at = _positions(self.sorted_ids, asked)
        rows = self.by_id[at]
        hit = self.sorted_ids[at] == asked
        found = [i for i, h in zip(wanted, hit.tolist(), strict=True) if h]
        m: F32 = np.asarray(self.vectors[rows[hit]], dtype=np.float32)
        return found, m


def load(file: Path) -> npt.NDArray[Any] | str:
    """A ``.npy`` file memory-mapped (its header read, nothing else), or why it cannot be: missing,
    empty, or not an array numpy reads (a cut-short file, other bytes)."""
    import numpy as np

    try:
        if file.stat().st_size == 0:
            return f"{file} is empty (0 bytes)"
        out: npt.NDArray[Any] = np.load(file, mmap_mode="r")
    except FileNotFoundError:
        return f"{file} is missing"
    except (OSError, ValueError, EOFError) as e:  # numpy says EOFError for a file cut short
        return f"{file} cannot be read ({e})"
    return out


def _positions(ordered: npt.NDArray[np.generic], needles: npt.NDArray[np.generic]) -> I64:
    """Where each needle stands in the ascending memory-mapped ``ordered`` (clipped to its last row):
    searched in ascending order, so each search starts where the last ended and neighbouring needles
    touch the same pages (about half the time of searching them as given)."""
    import numpy as np

    order = np.argsort(needles, kind="stable")
    out = np.empty(len(needles), dtype=np.int64)
    out[order] = np.searchsorted(ordered, needles[order])
    return np.minimum(out, len(ordered) - 1)


def write(
    gen: Path,
    gids: U64,
    ids: Sequence[str],
    dim: int,
    fill: Callable[[F32, npt.NDArray[np.bool_]], None],
    old: Path | None = None,
) -> None:
    """Write a generation's arrays for the groups ``gids`` (ascending) and ``ids``: the vectors of
    rows whose key the old generation ``old`` holds are copied from it (a group's stored vector never
    changes while its id and embedder stay), the others filled by ``fill(vectors, missing)`` (a
    memory-mapped output and the rows it must write)."""
    import numpy as np

    n = len(gids)
    width = max((len(i) for i in ids), default=1) or 1
    names = np.array([i.encode("ascii") for i in ids], dtype=f"S{width}")
    np.save(gen / "gids.npy", np.asarray(gids, dtype=np.uint64))
    np.save(gen / "ids.npy", names)
    by_id = np.argsort(names, kind="stable").astype(np.int64)
    np.save(gen / "by_id.npy", by_id)
    np.save(gen / "sorted_ids.npy", names[by_id])
    out = np.lib.format.open_memmap(gen / "vectors.npy", mode="w+", dtype="<f4", shape=(n, dim))
    missing = np.ones(n, dtype=bool)
    held = FolderArrays.open(old) if old is not None else None
    if held is not None and held.vectors.shape[1] == dim and n and len(held.gids):
        # a kept key is the same gid *and* group id (a gid SQLite gives again names a new group)
        mine = np.asarray(gids, dtype=np.uint64)
        at = np.minimum(np.searchsorted(held.gids, mine), len(held.gids) - 1)
        same = (held.gids[at] == mine) & (held.ids[at] == names)
        kept = np.flatnonzero(same)
        for lo in range(0, len(kept), _COPY_BLOCK):
            rows = kept[lo : lo + _COPY_BLOCK]
            out[rows] = held.vectors[at[rows]]
        missing = ~same
    if missing.any():
        fill(out, missing)
    out.flush()
    del out

