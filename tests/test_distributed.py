"""Ingest on Ray writes the index local ingest writes (a local Ray with 2 CPUs, started here)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from chunkdedup import ingest
from chunkdedup.errors import MissingExtraError
from conftest import POLICY, POLICY_MANIFEST
from export_reference import scale_module as _scale
from test_ingest import snapshot

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[1]
# the synthetic corpus of the equality test (benchmarks/scale.py); ~N chunks
SYNTHETIC_CHUNKS = 50_000
NEAR_STAGES = {
    "near: read bands and texts (driver)",
    "near: band (Ray shuffle)",
    "near: verify (Ray shuffle)",
}


@pytest.fixture(scope="module")
def local_ray() -> Iterator[ModuleType]:
    ray = pytest.importorskip("ray", reason="needs the [ray] extra: pip install 'chunkdedup[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def _same(a: Path, b: Path) -> None:
    left, right = snapshot(a), snapshot(b)
    assert left["documents"] == right["documents"]
    assert left["boilerplate"] == right["boilerplate"]
    assert left["records"] == right["records"]  # canonicals, sources, relations and similarities


def test_site_policy_on_ray_equals_local(local_ray: ModuleType, tmp_path: Path) -> None:
    from chunkdedup.ingestion.distributed import ingest_ray

    local, distributed = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    ingest([POLICY], local, manifest=POLICY_MANIFEST)
    report = ingest_ray([POLICY], distributed, manifest=POLICY_MANIFEST)
    assert report.totals["engine"]["name"] == "ray"
    _ran_near_on_ray(report.totals)
    _same(local, distributed)
    again = ingest_ray([POLICY], distributed, manifest=POLICY_MANIFEST)
    assert {str(f.status) for f in again.files} == {"unchanged"}
    assert again.totals["engine"]["near_edges"] is None  # nothing to re-cluster
    _same(local, distributed)


def _ran_near_on_ray(totals: dict[str, Any]) -> None:
    """Banding and verification ran on Ray (no fallback to the store), each a stage of its own."""
    assert totals["engine"]["near_edges"] == "ray"
    assert set(totals["engine"]["seconds"]) >= NEAR_STAGES


def test_synthetic_corpus_on_ray_equals_local(local_ray: ModuleType, tmp_path: Path) -> None:
    from chunkdedup import Index
    from chunkdedup.ingestion.distributed import ingest_ray

    corpus = tmp_path / "corpus"
    _scale().write_corpus(corpus, SYNTHETIC_CHUNKS)
    local, distributed = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    expected = ingest([corpus], local)
    report = ingest_ray([corpus], distributed, parallelism=2)
    _same(local, distributed)
    assert report.totals["engine"]["name"] == "ray" and report.totals["engine"]["workers"] == 2
    _ran_near_on_ray(report.totals)
    assert report.totals["cluster_pass"] == expected.totals["cluster_pass"]
    with Index.open(distributed) as ix:
        scopes = {b.scope for b in ix.boilerplate()}
        variants = ix.store.conn.execute("SELECT COUNT(*) FROM variants").fetchone()[0]
    # the corpus exercises every decision: chrome, running headers, near merges, variants
    assert scopes == {"chrome", "running"}
    assert report.totals["cluster_pass"]["merged"] > 0 and variants > 0


def test_incremental_ray_runs_equal_a_fresh_local_ingest(local_ray: ModuleType, tmp_path: Path) -> None:
    """Add shards, drop records from a shard, edit a document: each Ray run re-clusters only what
    the change touched, from edges computed on Ray, and ends where a fresh local ingest does."""
    from chunkdedup import Index
    from chunkdedup.ingestion.distributed import ingest_ray

    full, corpus = tmp_path / "full", tmp_path / "corpus"
    _scale().write_corpus(full, 12_000, seed=7)
    shards = sorted(full.glob("shard-*.jsonl"))
    texts = sorted(full.glob("*.txt"))
    assert len(shards) >= 3 and texts
    corpus.mkdir()
    for path in [*shards[:-1], *texts]:  # the last shard arrives in the second run
        shutil.copy(path, corpus / path.name)
    distributed = tmp_path / "ray.sqlite"
    first = ingest_ray([corpus], distributed, parallelism=2)
    _ran_near_on_ray(first.totals)

    shutil.copy(shards[-1], corpus / shards[-1].name)
    shard = corpus / shards[0].name  # its last 40 records go: documents removed
    lines = shard.read_text(encoding="utf-8").splitlines()
    shard.write_text("\n".join(lines[:-40]) + "\n", encoding="utf-8")
    edited = corpus / texts[0].name  # one paragraph of a multi-page document rewritten
    pages = edited.read_text(encoding="utf-8").split("\f")
    paragraphs = pages[0].split("\n\n")
    paragraphs[1] = " ".join(reversed(paragraphs[1].split()))
    pages[0] = "\n\n".join(paragraphs)
    edited.write_text("\f".join(pages), encoding="utf-8")
    second = ingest_ray([corpus], distributed, parallelism=2)
    _ran_near_on_ray(second.totals)
    assert 0 < second.totals["cluster_pass"]["reclustered"] < second.totals["after_exact"]
    assert second.totals["files"]["ingested"] == 3  # the new shard, the cut shard, the edited file
    # only the buckets of the new groups went to Ray: the other edges were kept from the first run
    before, after = first.totals["engine"]["near_pass"], second.totals["engine"]["near_pass"]
    assert 0 < after["groups_shipped"] < second.totals["after_exact"]
    assert 0 < after["pairs_verified"] < before["pairs_verified"]
    with Index.open(distributed) as ix:
        assert ix.store.bands.near_edges() == _store_verification(distributed)

    local = tmp_path / "local.sqlite"
    ingest([corpus], local)
    _same(local, distributed)


def test_prune_dry_run_and_text_index_on_ray(local_ray: ModuleType, tmp_path: Path) -> None:
    """The local options work with --engine ray: a dry run writes nothing, --prune drops the files
    that are gone, and --text-index tantivy builds and then keeps the folder in step."""
    from chunkdedup import Index
    from chunkdedup.ingestion.distributed import ingest_ray
    from chunkdedup.store import textindex

    corpus = tmp_path / "corpus"
    _scale().write_corpus(corpus, 2_000, seed=5)
    files = sorted(p for p in corpus.iterdir() if p.is_file())
    distributed = tmp_path / "ray.sqlite"
    first = ingest_ray([corpus], distributed, parallelism=2, text_engine="tantivy")
    assert first.totals["text_index"]["rebuilt"] is True
    before = snapshot(distributed)

    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(str(files[-1]), moved / files[-1].name)  # gone from the corpus
    dry = ingest_ray([corpus], distributed, parallelism=2, prune=True, dry_run=True)
    assert dry.dry_run and dry.run_id is None and dry.totals["documents"] < first.totals["documents"]
    assert snapshot(distributed) == before  # the dry run wrote nothing

    pruned = ingest_ray([corpus], distributed, parallelism=2, prune=True)
    assert pruned.totals["text_index"]["rebuilt"] is False  # kept without the flag, updated
    local = tmp_path / "local.sqlite"
    ingest([corpus], local)
    _same(local, distributed)
    with Index.open(distributed) as ix:
        assert ix.stats()["text_engine"]["pending"] == 0
        groups = ix.store.conn.execute("SELECT COUNT(*) FROM groups").fetchone()[0]
    tantivy = pytest.importorskip("tantivy")
    handle = tantivy.Index.open(str(textindex.folder(distributed)))
    assert handle.searcher().num_docs == groups


def _store_verification(index: Path) -> dict[tuple[str, str], float]:
    """Every band-neighbour pair the local pass verifies above the threshold, with its Jaccard."""
    from chunkdedup import Config
    from chunkdedup.dedup.minhash import MinHasher, jaccard
    from chunkdedup.ingestion.clusters import NearKeyer
    from chunkdedup.normalize import exact_key
    from chunkdedup.store import Store

    near = Config().near
    hasher = MinHasher.from_config(near)
    expected = {}
    with Store.open(index, keyer=NearKeyer(near)) as store:  # names a group's band rows, as a run's does
        texts = dict(store.conn.execute("SELECT id, text FROM groups"))
        shingles = {gid: hasher.shingles(exact_key(text)) for gid, text in texts.items()}
        for gid in sorted(texts):
            for other in store.bands.band_neighbours(gid):
                sim = jaccard(shingles[gid], shingles[other])
                if gid < other and sim >= near.threshold:
                    expected[(gid, other)] = sim
    return expected


def test_near_edges_on_ray_equal_the_store_verification(local_ray: ModuleType, tmp_path: Path) -> None:
    """Every band-neighbour pair the local pass verifies above the threshold, with the same Jaccard;
    kept in the index, so a second pass with nothing new verifies nothing."""
    from chunkdedup import Config
    from chunkdedup.ingestion.distributed.edges import near_edges_on_ray
    from chunkdedup.ingestion.executors import StageClock
    from chunkdedup.store import Store

    corpus = tmp_path / "corpus"
    _scale().write_corpus(corpus, 2_000, seed=3)
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    expected = _store_verification(index)
    with Store.open(index) as store:
        first = near_edges_on_ray(local_ray, store, Config().near, 2, StageClock())
        again = near_edges_on_ray(local_ray, store, Config().near, 2, StageClock())
        kept = store.bands.near_edges()
    assert first is not None and again is not None
    assert expected and first.edges == expected  # floats compared exactly
    assert kept == expected and again.edges == expected
    assert first.verified >= len(expected) and (again.shipped, again.verified) == (0, 0)


def test_one_ray_executor_serves_runs_in_turn(local_ray: ModuleType, tmp_path: Path) -> None:
    """An entered RayExecutor keeps its session over several runs; each report has its own near pass."""
    from chunkdedup import IngestOptions, ingest_with
    from chunkdedup.ingestion.distributed import RayExecutor

    corpus = tmp_path / "corpus"
    _scale().write_corpus(corpus, 2_000, seed=4)
    with RayExecutor(parallelism=2) as ray:
        first = ingest_with([corpus], tmp_path / "a.sqlite", IngestOptions(), ray)
        second = ingest_with([corpus], tmp_path / "b.sqlite", IngestOptions(), ray)
        assert local_ray.is_initialized()
    assert local_ray.is_initialized()  # this process's Ray was started by the fixture: left running
    assert first.totals["engine"]["near_pass"] == second.totals["engine"]["near_pass"]
    assert first.totals["engine"]["near_pass"]["pairs_verified"] > 0
    _same(tmp_path / "a.sqlite", tmp_path / "b.sqlite")


def test_missing_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from chunkdedup.ingestion.distributed import ingest_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'chunkdedup\[ray\]'"):
        ingest_ray([POLICY], tmp_path / "i.sqlite")
    assert not (tmp_path / "i.sqlite").exists()


def test_one_key_groups_on_ray_equal_local(local_ray: ModuleType, tmp_path: Path) -> None:
    """Groups of a small shingle set (one band row each) band and verify on Ray as locally: a first run,
    then a run that adds a text of the same set as an older one (merged) and near copies."""
    from chunkdedup.ingestion.distributed import ingest_ray
    from test_single_key import _MORE, _RECORDS, _write

    corpus, more = _write(tmp_path / "c1", _RECORDS), _write(tmp_path / "c2", _MORE)
    local, distributed = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    for inputs in ([corpus], [corpus, more]):
        ingest(inputs, local)
        report = ingest_ray(inputs, distributed)
        _ran_near_on_ray(report.totals)
        _same(local, distributed)
    records = snapshot(distributed)["records"]
    assert any(len(r["sources"]) == 2 and r["text"].startswith("alpha beta") for r in records)
