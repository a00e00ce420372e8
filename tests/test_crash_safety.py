"""A run killed at any moment leaves a consistent index, and re-running completes it."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkdedup import ingest
from conftest import SEC
from test_ingest import snapshot

# Two documents a transaction (a real run writes up to 1,024), so the kill lands between commits of a phase.
SCRIPT = (
    "import sys; import chunkdedup.ingestion.sequence as p; p.STORE_BATCH = 2; from chunkdedup import ingest;"
    " ingest([sys.argv[1]], sys.argv[2])"
)


def _count(index: Path, sql: str) -> int:
    try:
        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute(sql).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def _consistent(index: Path) -> None:
    conn = sqlite3.connect(index)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO groups_fts(groups_fts) VALUES('integrity-check')")
        orphans = conn.execute(
            "SELECT COUNT(*) FROM canonicals c"
            " WHERE NOT EXISTS (SELECT 1 FROM sources s WHERE s.canonical_id=c.id)"
        ).fetchone()[0]
        dangling = conn.execute(
            "SELECT COUNT(*) FROM sources s"
            " WHERE NOT EXISTS (SELECT 1 FROM canonicals c WHERE c.id=s.canonical_id)"
        ).fetchone()[0]
        assert (orphans, dangling) == (0, 0)
        counts = conn.execute(
            "SELECT COUNT(*) FROM canonicals c WHERE n_sources != (SELECT COUNT(*) FROM sources s"
            " WHERE s.canonical_id=c.id)"
        ).fetchone()[0]
        assert counts == 0
    finally:
        conn.close()


@pytest.mark.parametrize(
    "moment",
    [
        "SELECT COUNT(*) >= 5 FROM documents",  # while parsing
        "SELECT COUNT(*) >= 3 FROM documents WHERE state='indexed'",  # while chunking
    ],
)
def test_killed_ingest_leaves_a_consistent_index_and_rerun_completes(
    tmp_path: Path, sec_index: Path, moment: str
) -> None:
    index = tmp_path / "killed.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(SEC), str(index)])
    deadline = time.monotonic() + 120
    while not _count(index, moment):
        assert proc.poll() is None, "ingest finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _consistent(index)
    ingest([SEC], index)
    _consistent(index)
    assert snapshot(index) == snapshot(sec_index)
