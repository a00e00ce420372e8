"""WAL checkpoints in a thread of their own while a writer holds the index.

A checkpoint copies the pages a WAL holds back into the index file (and syncs it). The writer's own
connection did that inside a commit, once the WAL passed its auto-checkpoint size: the ingest waited
for the copy, on one core, while the machine's other core was idle (a fresh 50k-record ingest spent
~0.3 s of its commits and 0.37 s at its end checkpointing). A passive checkpoint never takes the
write lock and never waits for the writer, so a second connection can run it beside the writer: it
copies what the writer has committed while the writer goes on, and SQLite releases the GIL for the
whole copy. The writer's next transaction then starts the WAL over from its beginning, so the WAL
stays small and the writer's own auto-checkpoint (kept as it was, the safety net) rarely fires.

Nothing about durability changes: checkpointing moves committed pages between two files SQLite reads
as one, at any moment, by design.

Example:
    >>> with WalCheckpointer(Path("index.sqlite")):  # doctest: +SKIP
    ...     ...  # the writer's transactions
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path
from types import TracebackType

#: WAL bytes past which the thread checkpoints (a few batches of a first ingest's commits)
CHECKPOINT_BYTES = 32 << 20
#: how often the thread looks at the WAL, seconds (at most one checkpoint each time)
POLL_SECONDS = 0.2


class WalCheckpointer:
    """A thread that checkpoints ``path``'s WAL (``PRAGMA wal_checkpoint(PASSIVE)``) whenever it holds
    more than ``threshold`` bytes, from its own connection, until the block ends."""

    def __init__(self, path: Path, threshold: int | None = None) -> None:
        self._path = path
        self._wal = Path(f"{path}-wal")
        self._threshold = CHECKPOINT_BYTES if threshold is None else threshold
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: checkpoints run (each copied the WAL up to where the writer had committed)
        self.checkpoints = 0

    def __enter__(self) -> WalCheckpointer:
        self._thread = threading.Thread(target=self._run, name="chunkdedup-checkpoint", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while not self._stop.wait(POLL_SECONDS):  # read each time: tests shorten it
                # the file keeps its size when the writer starts it over: past the threshold once, it
                # is checkpointed at every look; one with nothing new to copy does nothing (no sync)
                try:
                    if os.stat(self._wal).st_size <= self._threshold:
                        continue
                except OSError:
                    continue
                try:
                    if conn is None:
                        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
                        conn.execute("PRAGMA synchronous = NORMAL")  # as the writer syncs
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error:
                    # another checkpoint running (the writer's own), say: the next look tries again;
                    # the writer's own checkpoints go on as before, its errors are its own to report
                    continue
        finally:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()


__all__ = ["CHECKPOINT_BYTES", "WalCheckpointer"]
