"""Settings that change what an index holds never flip because a run did not repeat them: an ingest
without a config builds with the one the index was last built with; a run that does change one is
taken, and its report names each setting it changed."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from chunkdedup import Index, ingest
from chunkdedup.cli import main
from chunkdedup.config import ChunkConfig, Config
from chunkdedup.ingestion.sequence import recorded_config
from documents_corpus import POLICY


def _cli(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report: dict[str, object] = json.loads(result.output)
    return report


def _canonicals(index: Path) -> int:
    with Index.open(index) as ix:
        return int(ix.stats()["canonical_chunks"])


def test_an_ingest_without_embedder_keeps_the_semantic_tier(tmp_path: Path) -> None:
    docs, index = str(POLICY / "current"), str(tmp_path / "policies.sqlite")
    _cli("ingest", docs, "--index", index, "--embedder", "hash:64")
    built = recorded_config(index)
    assert built is not None and built.semantic.enabled and built.semantic.embedder == "hash:64"
    merged = _canonicals(Path(index))
    again = _cli("ingest", docs, "--index", index)  # no flag: the index's own settings
    assert not again["notes"]
    assert recorded_config(index) == built and _canonicals(Path(index)) == merged
    off = _cli("ingest", docs, "--index", index, "--embedder", "none")
    notes = " ".join(str(n) for n in off["notes"])  # type: ignore[union-attr]
    assert "semantic.enabled true -> false" in notes
    off_config = recorded_config(index)
    assert off_config is not None and not off_config.semantic.enabled


def test_a_library_ingest_without_config_keeps_the_chunking(tmp_path: Path) -> None:
    index = tmp_path / "policies.sqlite"
    small = Config(chunk=ChunkConfig(target_words=80, max_words=120, paragraph_words=40))
    ingest([POLICY / "current"], index, config=small)
    before = _canonicals(index)
    report = ingest([POLICY / "current"], index)  # no config
    assert report.totals["documents_chunked"] == 0 and _canonicals(index) == before
    assert recorded_config(index) == small
    changed = ingest([POLICY / "current"], index, config=Config())
    assert any("chunk.target_words 80 -> 300" in n for n in changed.notes)
    assert changed.totals["documents_chunked"] > 0
