"""How a reader opens an index file: SQLite's ``mode=ro``, or ``immutable=1`` where nothing can write.

A WAL index read with ``mode=ro`` needs INDEX-shm beside it, and SQLite creates that file when no
connection holds it open. In a folder this process cannot write (a read-only mount, an index shipped
in a container image, another user's folder) it cannot, and the open fails with "unable to open
database file": every read-only command (query, stats, export, show, check, serve) failed on an
intact index. There the file is opened ``immutable=1``: SQLite takes no locks, ignores the WAL and
reads the file as it is, which is right exactly when nobody can write it and the WAL holds nothing.
An INDEX-wal that is not empty means a writer is at work or died mid-run (its last commits may be in
the WAL only), so then ``mode=ro`` is kept (it reads the WAL where INDEX-shm exists too) and its error
stands. An empty INDEX-wal and an INDEX-shm are what readers leave behind.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote


def read_uri(path: str | Path) -> str:
    """The SQLite URI (``uri=True``) that opens ``path`` to read only.

    Example:
        >>> read_uri("/tmp/index.sqlite").startswith("file:/tmp/index.sqlite?mode=ro")
        True
    """
    p = Path(path)
    uri = f"file:{quote(str(p), safe='/')}?mode=ro"
    if os.access(p.parent, os.W_OK) or _wal_bytes(p) > 0:  # a bare name's parent is "."
        return uri
    return f"{uri}&immutable=1"


def _wal_bytes(p: Path) -> int:
    try:
        return Path(f"{p}-wal").stat().st_size
    except FileNotFoundError:
        return 0


__all__ = ["read_uri"]
