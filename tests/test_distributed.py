"""Ingest on Ray writes the index local ingest writes (a local Ray with 2 CPUs, started here)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from chunkdedup import ingest
from chunkdedup.errors import MissingExtraError
from conftest import POLICY, POLICY_MANIFEST
from test_ingest import snapshot

pytestmark = pytest.mark.ray

REPO = Path(__file__).resolve().parents[1]


def _scale() -> ModuleType:
    """benchmarks/scale.py, whose ``write_corpus`` makes the synthetic corpus."""
    spec = importlib.util.spec_from_file_location("scale_bench", REPO / "benchmarks" / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    from chunkdedup.distributed import ingest_ray

    local, distributed = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    ingest([POLICY], local, manifest=POLICY_MANIFEST)
    report = ingest_ray([POLICY], distributed, manifest=POLICY_MANIFEST)
    assert report.totals["engine"]["chrome_counts"] == "ray"
    _same(local, distributed)
    again = ingest_ray([POLICY], distributed, manifest=POLICY_MANIFEST)
    assert {str(f.status) for f in again.files} == {"unchanged"}
    _same(local, distributed)


def test_synthetic_corpus_on_ray_equals_local(local_ray: ModuleType, tmp_path: Path) -> None:
    from chunkdedup import Index
    from chunkdedup.distributed import ingest_ray

    corpus = tmp_path / "corpus"
    _scale().write_corpus(corpus, 5_000)
    local, distributed = tmp_path / "local.sqlite", tmp_path / "ray.sqlite"
    expected = ingest([corpus], local)
    report = ingest_ray([corpus], distributed, parallelism=2)
    _same(local, distributed)
    assert report.totals["engine"]["chrome_counts"] == "ray"
    assert report.totals["cluster_pass"] == expected.totals["cluster_pass"]
    with Index.open(distributed) as ix:
        scopes = {b.scope for b in ix.boilerplate()}
        variants = ix.store.conn.execute("SELECT COUNT(*) FROM variants").fetchone()[0]
    # the corpus exercises every decision: chrome, running headers, near merges, variants
    assert scopes == {"chrome", "running"}
    assert report.totals["cluster_pass"]["merged"] > 0 and variants > 0


def test_chrome_counts_on_ray_equal_the_store_counts(local_ray: ModuleType, tmp_path: Path) -> None:
    from chunkdedup import Config
    from chunkdedup.distributed.ingest import _parse_dataset, _unit_counts
    from chunkdedup.parse import discover
    from chunkdedup.store import Store

    corpus = tmp_path / "corpus"
    _scale().write_corpus(corpus, 2_000, seed=3)
    index = tmp_path / "i.sqlite"
    ingest([corpus], index)
    cfg = Config()
    with Store.open(tmp_path / "scratch.sqlite", create=True) as scratch:
        parsed = _parse_dataset(local_ray, scratch, discover([corpus], None, cfg.parse), cfg, 2)
    with Store.open(index) as store:
        expected = store.key_unit_counts(cfg.boilerplate.min_units)
    assert expected and _unit_counts(parsed, cfg, 2) == expected


def test_missing_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from chunkdedup.distributed import ingest_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'chunkdedup\[ray\]'"):
        ingest_ray([POLICY], tmp_path / "i.sqlite")
    assert not (tmp_path / "i.sqlite").exists()
