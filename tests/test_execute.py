"""Executors: the per-document stages in a pool of worker processes write the index one process
writes, and the pool takes its inputs lazily, keeps results in order and passes a job's error on."""

from __future__ import annotations

import gc
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkdedup import ConfigError, IngestOptions, LocalExecutor, ingest, ingest_with
from chunkdedup.ingestion.executors import IN_FLIGHT_PER_WORKER
from conftest import NTSB, POLICY, POLICY_MANIFEST, SEC
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


_DRIVER = """
import fcntl, os, sys, threading, time
from chunkdedup.ingestion.executors import LocalExecutor

if __name__ == "__main__":
    fd = os.open(sys.argv[1], os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as the store's writer lock is held during an ingest
    with LocalExecutor(workers=2) as pool:
        def report() -> None:
            while not (pool._pool and len(pool._pool._processes) == 2):
                time.sleep(0.1)
            print(" ".join(map(str, pool._pool._processes)), flush=True)
        threading.Thread(target=report, daemon=True).start()
        for _ in pool.map(time.sleep, [120, 120, 120]):
            pass
"""


def test_a_killed_driver_leaves_no_worker_and_no_lock(tmp_path: Path) -> None:
    """Workers hold none of the driver's descriptors (the writer lock) and end with the driver."""
    import fcntl
    import os
    import signal
    import subprocess
    import sys
    import time

    lock, script = tmp_path / "index.sqlite", tmp_path / "driver.py"
    lock.write_bytes(b"")
    script.write_text(_DRIVER, encoding="utf-8")
    driver = subprocess.Popen([sys.executable, str(script), str(lock)], stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    workers = [int(p) for p in driver.stdout.readline().split()]
    assert len(workers) == 2
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 15
    alive = workers
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)
        alive = [p for p in workers if os.path.exists(f"/proc/{p}") and "Z" not in _state(p)]
    assert not alive, f"workers {alive} outlived their driver"
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds the lock any more
    finally:
        os.close(fd)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return "Z"


def test_the_default_leaves_the_writer_a_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver writes the index: by default the workers take the other cores (none on two)."""
    from chunkdedup.ingestion import executors as execute

    for cores, workers in ((1, 1), (2, 1), (4, 3), (16, 8), (None, 1)):
        monkeypatch.setattr(execute.os, "cpu_count", lambda c=cores: c)
        assert LocalExecutor(None).workers == workers


class _Watching(LocalExecutor):
    """A one-process executor that notes whether the cyclic collector runs while its jobs do, and
    fails its chunk jobs when asked."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(1)
        self.seen: list[bool] = []
        self.fail = fail

    def map(self, fn, items):  # type: ignore[no-untyped-def]
        self.seen.append(gc.isenabled())
        if self.fail and fn.__name__ == "chunk_documents":
            raise RuntimeError("chunking failed")
        yield from super().map(fn, items)


def test_an_ingest_pauses_the_collector_and_restores_it(tmp_path: Path) -> None:
    assert gc.isenabled()
    watching = _Watching()
    ingest_with([POLICY], tmp_path / "a.sqlite", IngestOptions(), watching)
    assert watching.seen and not any(watching.seen)  # every stage ran with the collector paused
    assert gc.isenabled()
    failing = _Watching(fail=True)
    with pytest.raises(RuntimeError, match="chunking failed"):
        ingest_with([POLICY], tmp_path / "b.sqlite", IngestOptions(), failing)
    assert gc.isenabled()  # restored after a failed run too
    gc.disable()
    try:  # a caller that runs without the collector keeps it off
        ingest_with([POLICY], tmp_path / "c.sqlite", IngestOptions(), _Watching())
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("collect", [True, False])
def test_each_written_batch_frees_its_cycles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collect: bool
) -> None:
    """With the collector paused, a PDF reader's cycles (its pages point back to it) would stay until
    the run ends; each written batch collects them. Without that (the control) they are still there."""
    from chunkdedup.ingestion import sequence as pipeline

    monkeypatch.setattr(pipeline, "STORE_BATCH", 1)
    if not collect:
        monkeypatch.setattr(pipeline, "collect_young", lambda: None)
    pdfs = sorted(Path(SEC).glob("*.pdf"))[:6]
    gc.collect()
    gc.disable()  # the run's own pause, held past its end so nothing is collected before the count
    try:
        ingest_with(pdfs, tmp_path / "sec.sqlite", IngestOptions(), LocalExecutor(1))
        left = gc.collect()
    finally:
        gc.enable()
    assert (left < 300) if collect else (left > 1000), left


class _Recording(LocalExecutor):
    """A one-process executor that notes the files of each parse job it is handed."""

    def __init__(self) -> None:
        super().__init__(1)
        self.parse_jobs: list[list[Path]] = []

    def map(self, fn, items):  # type: ignore[no-untyped-def]
        if fn.__name__ == "parse_inputs":
            items = list(items)
            self.parse_jobs.extend([inp.path for inp, _ in job.files] for job in items)
        yield from super().map(fn, items)


def test_parse_jobs_are_cut_by_bytes_and_the_index_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parse job holds at most ``PARSE_JOB_BYTES`` of input (a larger file alone), so one job of a
    few large files does not hold back the in-order writer; where jobs are cut changes nothing."""
    from chunkdedup.ingestion import sequence as pipeline

    pdfs = sorted(NTSB.glob("*.pdf"))
    whole = _Recording()
    ingest_with(pdfs, tmp_path / "a.sqlite", IngestOptions(), whole)
    cap = 256 * 1024
    monkeypatch.setattr(pipeline, "PARSE_JOB_BYTES", cap)
    monkeypatch.setattr(pipeline, "PARSE_BATCH_CHARS", 50_000)  # a parse batch of a few files
    cut = _Recording()
    ingest_with(pdfs, tmp_path / "b.sqlite", IngestOptions(), cut)
    assert [p for job in cut.parse_jobs for p in job] == [p for job in whole.parse_jobs for p in job]
    assert len(cut.parse_jobs) > len(whole.parse_jobs)
    for job in cut.parse_jobs:
        assert len(job) == 1 or sum(p.stat().st_size for p in job) <= cap, job
        assert len(job) <= pipeline.PARSE_JOB_FILES
    assert snapshot(tmp_path / "b.sqlite") == snapshot(tmp_path / "a.sqlite")
