"""parse.registry.file_hash reads a file in blocks into one buffer: the hash of its whole bytes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from chunkdedup.normalize import bytes_hash
from chunkdedup.parse import registry


@pytest.mark.parametrize("size", [0, 1, 1023, 1024, 1025, 3 * 1024 + 7])
def test_file_hash_is_the_hash_of_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    monkeypatch.setattr(registry, "_HASH_BLOCK", 1024)  # several blocks, a short last one
    data = random.Random(size).randbytes(size)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert registry.file_hash(path) == bytes_hash(data)
