"""The write path may get faster, never different: every corpus's index digests (export bytes,
boilerplate, groups, variants, clean pages) equal those the code before the write-path work wrote
(``tests/data/export_reference.json``, see ``tests/export_reference.py``), fresh and in batches."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chunkdedup import ingest
from export_reference import REFERENCE, corpora, digests, write_synthetic

EXPECTED = json.loads(REFERENCE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_fresh_ingest_writes_the_reference_index(name: str, tmp_path: Path) -> None:
    index = corpora()[name](tmp_path / "index.sqlite")
    assert digests(index) == EXPECTED[name]


def test_the_synthetic_corpus_in_three_batches_writes_the_reference_index(tmp_path: Path) -> None:
    """Batches that add files, then a last one that brings the rest: the same index as one fresh run."""
    full = write_synthetic(tmp_path / "all")
    files = sorted(p for p in full.iterdir())
    part = tmp_path / "part"
    part.mkdir()
    index = tmp_path / "index.sqlite"
    for upto in (len(files) // 3, 2 * len(files) // 3, len(files)):
        for f in files[:upto]:
            if not (part / f.name).exists():
                shutil.copy(f, part / f.name)
        ingest([part], index)
    assert digests(index) == EXPECTED["synthetic"]
