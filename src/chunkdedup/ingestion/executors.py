"""Where the ingest's per-item stages run: the :class:`Executor` of the one ingest sequence.

The sequence (:func:`chunkdedup.ingestion.sequence.ingest_with`) is the same whatever runs the stages: it
reads from the store, hands pure jobs (:mod:`chunkdedup.ingestion.stages`) to ``executor.map``, and writes
their results in order, so every executor writes the same index, field for field.

* :class:`LocalExecutor`: in this process (``workers=1``), or in a pool of worker processes;
* :class:`chunkdedup.ingestion.distributed.RayExecutor`: Ray tasks, and the near tier's banding and
  verification as Ray shuffles.

Example:
    >>> from chunkdedup import IngestOptions, LocalExecutor, ingest_with
    >>> with LocalExecutor(workers=4) as pool:  # doctest: +SKIP
    ...     report = ingest_with(["docs/"], "index.sqlite", IngestOptions(), pool)
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from chunkdedup.errors import ConfigError
from chunkdedup.ingestion.report import EngineTotals

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    from chunkdedup.config import NearConfig
    from chunkdedup.store import Store

T = TypeVar("T")
R = TypeVar("R")
H = TypeVar("H")  # a submitted job: a Future, a Ray object ref

#: jobs in flight per worker: enough to keep every worker busy while the driver writes, few enough
#: that memory holds a bounded number of batches
IN_FLIGHT_PER_WORKER = 2
#: jobs in flight at most, whatever the workers (a large Ray cluster): the single writer takes one
#: result at a time, and the results waiting for it are memory
MAX_IN_FLIGHT = 32


@dataclass(slots=True)
class StageClock:
    """Wall seconds per stage of a run (``totals["seconds"]`` of its report)."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start

    def rounded(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.seconds.items()}


def in_order(
    submit: Callable[[T], H],
    result: Callable[[H], R],
    cancel: Callable[[H], object],
    items: Iterable[T],
    workers: int,
) -> Iterator[R]:
    """The results of ``submit(item)`` for each of ``items``, taken with ``result`` in the items'
    order, at most ``min(MAX_IN_FLIGHT, IN_FLIGHT_PER_WORKER * workers)`` submitted ahead of the
    results taken; those still in flight when the caller stops are cancelled. Every executor's map."""
    window: deque[H] = deque()
    limit = min(MAX_IN_FLIGHT, IN_FLIGHT_PER_WORKER * workers)
    try:
        for item in items:
            window.append(submit(item))
            if len(window) >= limit:
                yield result(window.popleft())
        while window:
            yield result(window.popleft())
    finally:
        for handle in window:
            cancel(handle)


class Executor(ABC):
    """Runs the ingest's pure per-item jobs. Enter it (``with``) to start its workers; a run of
    :func:`~chunkdedup.ingestion.sequence.ingest_with` enters it when it is not entered yet.

    One method to implement, :meth:`map`; :meth:`near_edges` and :meth:`engine_totals` have defaults
    (the store verifies the near candidates; nothing to report)."""

    name = "local"

    @abstractmethod
    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """``fn`` over ``items``, results in the items' order. ``items`` is consumed as results are
        taken (a bounded number ahead), so a long stream never sits in memory at once; ``fn`` is a
        module-level function and every item is picklable."""

    def near_edges(
        self, store: Store, config: NearConfig, clock: Callable[[str], AbstractContextManager[None]]
    ) -> dict[tuple[str, str], float] | None:
        """Every verified near edge of the index, when this executor computes them (``None``: the
        cluster pass verifies the store's band neighbours itself)."""
        return None

    def engine_totals(self) -> EngineTotals:
        """What the report says of the engine (``totals.engine``)."""
        return EngineTotals(self.name)

    def __enter__(self) -> Executor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


def _start_method() -> str:
    """A fork server where there is one (POSIX): a worker forked from it holds none of the driver's
    descriptors. A plain fork would hand every worker the index's writer lock (``flock`` on a file
    descriptor), and a worker left running after a killed driver would keep the index locked."""
    import multiprocessing

    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _exit_with_driver(driver: int) -> None:
    """Pool initializer: a watchdog that ends the worker once the driver (the process that made the
    pool) is gone, so a killed driver leaves no worker running on."""

    def watch() -> None:
        while True:
            time.sleep(0.5)
            try:
                os.kill(driver, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # a pid taken over by another user's process: ours is gone
                os._exit(1)

    threading.Thread(target=watch, name="chunkdedup-driver-watch", daemon=True).start()


def default_workers() -> int:
    """Worker processes when none are asked for: one per core but the driver's, at most 8 (1: the
    stages run in the driver). The driver is the index's only writer and the longer path: on 2 cores
    two workers beside it were slower than none (50k records 31.5 vs 28.1 s, a 100k-chunk corpus of
    multi-page documents 29.6 vs 26.2 s; measured again: 50k records ~24 vs ~18 s), but for a large
    PDF corpus, whose parse is most of the work and whose results are small to move (sec-10q's 24 MB:
    ~8.3 vs ~10.0 s; ntsb's 1.9 MB, 1.5 s in all, paid the pool's start-up): ``--parallelism 2`` is the
    flag for one there (``benchmarks/README.md``)."""
    return max(1, min(8, (os.cpu_count() or 1) - 1))


class LocalExecutor(Executor):
    """Jobs in this process (``workers=1``) or in ``workers`` worker processes (``None``:
    :func:`default_workers`). The pool starts at the first map with more than one job (a run with a single
    job runs it here, paying no start-up) and stops when the executor is left.

    Workers are forked from a fork server (POSIX; spawned elsewhere), so they hold none of the
    driver's descriptors (the index's writer lock above all), and each ends when its parent does. A
    script that ingests with workers needs the usual ``if __name__ == "__main__":`` guard, as any
    script that starts processes this way. They run only the pure jobs of :mod:`chunkdedup.ingestion.stages`,
    never an embedder or Ray."""

    def __init__(self, workers: int | None = 1) -> None:
        if workers is not None and workers < 1:
            raise ConfigError(f"workers must be at least 1, got {workers}")
        self.workers = workers if workers is not None else default_workers()
        self._pool: ProcessPoolExecutor | None = None
        self._depth = 0

    def __enter__(self) -> LocalExecutor:
        self._depth += 1
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._depth -= 1
        if self._depth == 0 and self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _started(self) -> ProcessPoolExecutor:
        # imported with the first pool: a run whose jobs all run here never loads multiprocessing
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context(_start_method()),
                initializer=_exit_with_driver,
                initargs=(os.getpid(),),
            )
        return self._pool

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        it = iter(items)
        first = list(itertools.islice(it, 2))
        if self.workers <= 1 or self._depth == 0 or len(first) < 2:
            yield from map(fn, itertools.chain(first, it))
            return
        from concurrent.futures import Future

        pool = self._started()
        yield from in_order(
            lambda item: pool.submit(fn, item),
            Future.result,
            Future.cancel,
            itertools.chain(first, it),
            self.workers,
        )

    def engine_totals(self) -> EngineTotals:
        return EngineTotals(self.name, self.workers)


__all__ = [
    "IN_FLIGHT_PER_WORKER",
    "MAX_IN_FLIGHT",
    "Executor",
    "LocalExecutor",
    "StageClock",
    "default_workers",
    "in_order",
]
