"""An incremental run reads what changed, not every document: the shortcuts it takes instead of a scan
(every indexed document chunked under the run's config, every document with a context) give what the
scan gives, also after a killed run and a config change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkdedup import ingest
from chunkdedup.config import ChunkConfig, Config
from chunkdedup.store import Store
from chunkdedup.store.schema import DOC_UNIT
from conftest import stop_at_chunk_write
from test_ingest import snapshot

OTHER = Config(chunk=ChunkConfig(target_words=8, max_words=20))


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    words = [f"w{n}" for n in range(23)]
    for f in range(3):
        lines = [
            json.dumps({"id": f"r{i}", "text": ". ".join(" ".join(words[(i + j + k) % 23] for k in range(9))
                                                     for j in range(6)) + "."})
            for i in range(f * 5, f * 5 + 5)
        ]
        (folder / f"s{f}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _fresh(corpus: Path, tmp_path: Path, config: Config | None = None) -> dict[str, object]:
    index = tmp_path / f"fresh-{id(config)}.sqlite"
    ingest([corpus], index, config=config)
    return snapshot(index)


def test_a_config_change_rechunks_every_document_and_back(tmp_path: Path) -> None:
    corpus, index = _corpus(tmp_path / "c"), tmp_path / "i.sqlite"
    ingest([corpus], index)
    ingest([corpus], index, config=OTHER)
    assert snapshot(index) == _fresh(corpus, tmp_path, OTHER)
    ingest([corpus], index)  # no config: the index keeps the one it was last built with
    assert snapshot(index) == _fresh(corpus, tmp_path, OTHER)
    ingest([corpus], index, config=Config())
    assert snapshot(index) == _fresh(corpus, tmp_path)


def test_a_run_killed_while_rechunking_under_another_config_is_undone_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus, index = _corpus(tmp_path / "c"), tmp_path / "i.sqlite"
    ingest([corpus], index)
    # batches of 1 document (a job is a quarter)
    monkeypatch.setattr("chunkdedup.ingestion.sequence.STORE_BATCH", 4)
    stop_at_chunk_write(monkeypatch, 3)
    with pytest.raises(KeyboardInterrupt):
        ingest([corpus], index, config=OTHER)
    monkeypatch.undo()
    with Store.open(index) as store:  # two documents are chunked under the other config, and committed
        hashes = [r[0] for r in store.conn.execute("SELECT DISTINCT config_hash FROM documents")]
    assert len(hashes) == 2
    ingest([corpus], index)
    assert snapshot(index) == _fresh(corpus, tmp_path)


def test_a_document_left_without_a_context_gets_one(tmp_path: Path) -> None:
    corpus, index = _corpus(tmp_path / "c"), tmp_path / "i.sqlite"
    ingest([corpus], index)
    with Store.open(index) as store, store.writer(), store.transaction() as conn:
        first = "SELECT dkey FROM document_rows ORDER BY doc_id LIMIT 1"
        conn.execute(f"DELETE FROM contexts WHERE dkey = ({first})")
    lines = (corpus / "s2.jsonl").read_text(encoding="utf-8").splitlines()
    (corpus / "s2.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # a change elsewhere
    ingest([corpus], index)
    assert snapshot(index) == _fresh(corpus, tmp_path)
    with Store.open(index) as store:
        n = store.conn.execute("SELECT COUNT(*) FROM document_rows JOIN contexts USING(dkey)").fetchone()[0]
    assert n == 14


def test_the_unit_total_is_the_distinct_units(tmp_path: Path, policy_index: Path) -> None:
    """Counted on the family index, the units are those the documents' unit column names."""
    corpus, index = _corpus(tmp_path / "c"), tmp_path / "i.sqlite"
    ingest([corpus], index)
    families = []
    for path in (policy_index, index):
        with Store.open(path, readonly=True) as store:
            units = f"SELECT COUNT(DISTINCT {DOC_UNIT}) FROM documents d"
            direct = store.conn.execute(units).fetchone()[0]
            families.append(store.conn.execute("SELECT COUNT(DISTINCT family) FROM documents").fetchone()[0])
            assert store.boilerplate.unit_total() == direct
    assert families[0] > 1 and families[1] == 0  # with families (and documents without), and with none
