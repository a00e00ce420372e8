"""The WAL is checkpointed by a thread beside the writer: it copies what the writer committed while
the writer goes on, the index reads the same, and the thread ends with the writer."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.store import checkpointer, connection
from chunkdedup.store.checkpointer import WalCheckpointer
from conftest import POLICY, POLICY_MANIFEST
from test_ingest import snapshot


def _wal_frames(path: Path) -> tuple[int, int]:
    """(frames in the WAL, frames already copied back), as a passive checkpoint of nothing new reports."""
    conn = sqlite3.connect(path)
    try:
        _, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        conn.close()
    return log, done


def test_the_thread_copies_what_the_writer_committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpointer, "POLL_SECONDS", 0.01)
    path = tmp_path / "w.sqlite"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # the writer copies nothing back itself
    writer.execute("CREATE TABLE t(x BLOB)")
    with WalCheckpointer(path, threshold=0) as ckpt:
        for _ in range(5):
            writer.execute("BEGIN IMMEDIATE")
            writer.executemany("INSERT INTO t VALUES (?)", [(b"x" * 4000,) for _ in range(200)])
            writer.execute("COMMIT")
        deadline = time.monotonic() + 10
        while ckpt.checkpoints == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # one more look after the last commit
    assert ckpt.checkpoints > 0
    # the writer copied nothing back (auto-checkpoint off) and no one else checkpointed: the rows are
    # in the file itself because the thread put them there
    assert path.stat().st_size >= 1000 * 4000
    log, done = _wal_frames(path)
    assert log > 0 and done == log
    assert not [t for t in threading.enumerate() if t.name == "chunkdedup-checkpoint"]
    assert writer.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1000
    writer.close()


def test_an_ingest_checkpointed_beside_the_writer_is_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy_index: Path
) -> None:
    """Checkpoints every few milliseconds from the first committed byte (the production threshold is
    32 MiB): the same index as a run whose WAL only its writer copied back."""
    monkeypatch.setattr(checkpointer, "POLL_SECONDS", 0.005)
    monkeypatch.setattr(checkpointer, "CHECKPOINT_BYTES", 0)
    made: list[WalCheckpointer] = []

    class Counted(WalCheckpointer):
        def __enter__(self) -> WalCheckpointer:
            made.append(self)
            return super().__enter__()

    monkeypatch.setattr(connection, "WalCheckpointer", Counted)
    index = tmp_path / "i.sqlite"
    ingest([POLICY], index, manifest=POLICY_MANIFEST)
    assert sum(c.checkpoints for c in made) > 0
    assert not [t for t in threading.enumerate() if t.name == "chunkdedup-checkpoint"]
    conn = sqlite3.connect(index)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    assert snapshot(index) == snapshot(policy_index)
