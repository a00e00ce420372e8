"""Executors: the per-document stages in a pool of worker processes write the index one process
writes, and the pool takes its inputs lazily, keeps results in order and passes a job's error on."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkdedup import ConfigError, IngestOptions, LocalExecutor, ingest, ingest_with
from chunkdedup.execute import IN_FLIGHT_PER_WORKER
from conftest import POLICY, POLICY_MANIFEST, SEC
from test_ingest import snapshot


def test_site_policy_in_two_worker_processes_equals_one_process(policy_index: Path, tmp_path: Path) -> None:
    pooled = tmp_path / "pooled.sqlite"
    report = ingest([POLICY], pooled, manifest=POLICY_MANIFEST, workers=2)
    engine = report.totals["engine"]
    assert (engine["name"], engine["workers"], engine["near_edges"]) == ("local", 2, "store")
    assert set(report.totals["engine"]["seconds"]) >= {"parse", "chunk", "cluster", "text index"}
    assert snapshot(pooled) == snapshot(policy_index)


def test_sec_filings_parsed_in_workers_equal_one_process(sec_index: Path, tmp_path: Path) -> None:
    """PDFs parsed (pdfium) and their boilerplate keyed in the workers: the same index."""
    pooled = tmp_path / "pooled.sqlite"
    with LocalExecutor(workers=2) as pool:
        ingest_with([SEC], pooled, IngestOptions(), pool)
        # the pool serves a second run while entered: an unchanged corpus is only hashed again
        again = ingest_with([SEC], pooled, IngestOptions(), pool)
    assert {str(f.status) for f in again.files} == {"unchanged"}
    assert snapshot(pooled) == snapshot(sec_index)


def _square(x: int) -> int:
    return x * x


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"job {x} failed")
    return x


def test_pool_map_is_ordered_and_lazy() -> None:
    pulled: list[int] = []

    def items() -> Iterator[int]:
        for i in itertools.count():
            pulled.append(i)
            yield i

    with LocalExecutor(workers=2) as pool:
        results = pool.map(_square, items())
        first = [next(results) for _ in range(5)]
        results.close()
    assert first == [0, 1, 4, 9, 16]
    # a bounded number of items ahead of the results taken, never the whole (endless) stream
    assert len(pulled) <= 5 + IN_FLIGHT_PER_WORKER * 2


def test_a_failing_job_raises_its_error_in_order() -> None:
    with LocalExecutor(workers=2) as pool:
        out = []
        with pytest.raises(ValueError, match="job 3 failed"):
            for r in pool.map(_fail_on_three, range(10)):
                out.append(r)
    assert out == [0, 1, 2]
    assert list(LocalExecutor().map(_square, range(4))) == [0, 1, 4, 9]  # in this process


def test_workers_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="workers must be at least 1, got 0"):
        LocalExecutor(workers=0)
