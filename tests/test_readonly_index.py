"""An intact index in a folder nothing can write (a read-only mount, an index shipped in an image) is
read as it is: every read-only command works, and `check` never calls a permission problem damage.

The folder is made read-only the way it is in production, by a read-only bind mount, inside a mount
namespace of the test's own (`unshare --mount`, as root). A file mode is no test of it: root writes
into a folder of mode 0555. Where no mount namespace can be made, the tests are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from chunkdedup import Index
from chunkdedup.store.readonly import read_uri

CHUNKDEDUP = str(Path(sys.executable).with_name("chunkdedup"))


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount --bind -o ro / / 2>/dev/null"],
        capture_output=True,
    )
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(
    not _can_mount(), reason="no mount namespace here (unshare --mount, as root)"
)


def _read_only(
    folder: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``chunkdedup ARGS`` with ``folder`` mounted read-only over itself, for that process alone (a file
    mode is no test: root writes into a folder of mode 0555); ``env`` adds to the environment."""
    script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", str(folder), CHUNKDEDUP,
         *args],
        capture_output=True, text=True, timeout=120, env=None if env is None else {**os.environ, **env},
    )


@pytest.fixture
def shipped(policy_index: Path, tmp_path: Path) -> Path:
    """A copy of the site-policy index, alone in its folder (no INDEX-wal or INDEX-shm beside it)."""
    folder = tmp_path / "shipped"
    folder.mkdir()
    index = folder / "policy.sqlite"
    shutil.copy(policy_index, index)
    return index


@needs_mount
def test_read_only_commands_work_on_a_read_only_mount(shipped: Path) -> None:
    folder = shipped.parent
    stats = _read_only(folder, "stats", "--index", str(shipped), "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["documents"] > 0
    hits = _read_only(folder, "query", "how long is personal data kept", "--index", str(shipped), "--json")
    assert hits.returncode == 0, hits.stderr
    assert json.loads(hits.stdout)["hits"]
    exported = _read_only(folder, "export", "--index", str(shipped))
    assert exported.returncode == 0, exported.stderr
    check = _read_only(folder, "check", "--index", str(shipped))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok" in check.stdout
    with Index.open(shipped) as ix:  # the same rows as a reader of the writable file gets
        assert [json.loads(line) for line in exported.stdout.splitlines()] == json.loads(
            json.dumps(list(ix.export()))
        )
    # that reader left an empty INDEX-wal and INDEX-shm (SQLite's way): still read as it is
    assert sorted(p.name for p in folder.iterdir())[1:] == ["policy.sqlite-shm", "policy.sqlite-wal"]
    assert (folder / "policy.sqlite-wal").stat().st_size == 0
    again = _read_only(folder, "stats", "--index", str(shipped), "--json")
    assert again.returncode == 0, again.stderr


@needs_mount
def test_a_left_wal_on_a_read_only_mount_is_not_called_damage(shipped: Path) -> None:
    """With a non-empty INDEX-wal beside it (a writer at work or dead mid-run), the file alone may miss
    commits: no immutable read, and a reason that names the folder, not damage."""
    (shipped.parent / "policy.sqlite-wal").write_bytes(b"\0" * 4096)
    stats = _read_only(shipped.parent, "stats", "--index", str(shipped))
    assert stats.returncode == 1
    assert "cannot be opened" in stats.stderr and "INDEX-wal" in stats.stderr
    check = _read_only(shipped.parent, "check", "--index", str(shipped))
    assert check.returncode == 1
    assert "cannot be opened" in check.stderr
    assert "damaged" not in check.stdout + check.stderr


def test_a_writable_folder_reads_through_mode_ro(tmp_path: Path) -> None:
    """Where the folder can be written, readers share the WAL as ever (never immutable)."""
    index = tmp_path / "a b?#%.sqlite"
    assert read_uri(index) == f"file:{tmp_path}/a%20b%3F%23%25.sqlite?mode=ro"
