"""The runs table: each ingest or removal recorded as it begins and ends, with its paths and config."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkdedup.config import Config
from chunkdedup.store.batches import Tables
from chunkdedup.store.connection import Connection, _now
from chunkdedup.store.readonly import read_uri


class RunTables(Tables):
    """The runs of an index: begun, finished (or marked failed when the writer that began one left), and
    the config of the last that finished. ``db``: the index's connection (its transactions, its writer
    lock, the run it marks failed if the writer leaves)."""

    def __init__(self, db: Connection) -> None:
        super().__init__(db.conn)
        self.db = db

    def begin_run(self, paths: Sequence[str], manifest: str | None, config: dict[str, Any]) -> int:
        """Record a new run as 'running'. Under the writer lock (every ingest and remove), an earlier
        run still marked 'running' is marked 'failed', finished now: the lock proves it is not alive (a
        process killed with SIGKILL, or a machine that went down, could not mark its own run)."""
        with self.db.transaction() as c:
            if self.db.locked:
                c.execute("UPDATE runs SET finished=?, status='failed' WHERE status='running'", (_now(),))
            cur = c.execute(
                "INSERT INTO runs(started, status, paths, manifest, config) VALUES (?, 'running', ?, ?, ?)",
                (_now(), json.dumps(list(paths)), manifest, json.dumps(config, sort_keys=True)),
            )
            assert cur.lastrowid is not None
            self.db.open_run = cur.lastrowid
            return cur.lastrowid

    def finish_run(self, run_id: int, summary: dict[str, Any]) -> None:
        with self.db.transaction() as c:
            c.execute(
                "UPDATE runs SET finished=?, status='done', summary=? WHERE id=?",
                (_now(), json.dumps(summary, sort_keys=True), run_id),
            )
        self.db.open_run = None

    def recorded_config(self) -> Config | None:
        """The config the index was last built with: that of its last finished run of any kind (an
        ingest of files, of documents given in memory, or a removal), if any."""
        sql = "SELECT config FROM runs WHERE status='done' ORDER BY id DESC LIMIT 1"
        row = self.conn.execute(sql).fetchone()
        return None if row is None else self._config(row[0])

    def last_config(self) -> Config | None:
        """The config of the last ingest run that finished, if any."""
        row = self.conn.execute(
            "SELECT config FROM runs WHERE status='done' AND paths != '[]' ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else self._config(row[0])

    def _config(self, stored: str) -> Config:
        return Config.from_dict(json.loads(stored), source=f"{self.db.path} (last run)")


def recorded_config_of(path: str | Path) -> Config | None:
    """The config an index of any version was last built with, read without opening it as a store
    (so an older index is not migrated by the read): that of its last finished run, if any. ``None``
    too for a file that holds no runs yet (another first ingest is creating it) or is no index (the
    run's own open says what is wrong with it)."""
    try:
        conn = sqlite3.connect(read_uri(path), uri=True)
        try:
            sql = "SELECT config FROM runs WHERE status='done' ORDER BY id DESC LIMIT 1"
            row = conn.execute(sql).fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return None
    return None if row is None else Config.from_dict(json.loads(row[0]), source=f"{path} (last run)")
