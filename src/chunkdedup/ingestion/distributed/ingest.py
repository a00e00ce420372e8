"""The ingest on Ray: :class:`RayExecutor` runs the one ingest sequence's jobs as Ray tasks.

Ray runs the same pure jobs the local ingest runs (:mod:`chunkdedup.ingestion.stages`: hash, parse
and key a few files; strip, chunk, exact-key and sign a batch of documents), results taken in
submission order, and the near tier's banding (shuffle by band key) and candidate verification
(shuffles by group, texts travelling with the pairs) as Ray Data shuffles, see
:mod:`chunkdedup.ingestion.distributed.edges`. The driver is the index's single writer and runs the
sequence of :func:`chunkdedup.ingestion.sequence.ingest_with` itself, so the index is the one local
ingest writes, field for field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from chunkdedup.config import Config, NearConfig
from chunkdedup.embed import Embedder
from chunkdedup.errors import ConfigError
from chunkdedup.ingestion.distributed.edges import NearPass, near_edges_on_ray
from chunkdedup.ingestion.distributed.session import cluster_cpus, import_ray, ray_session
from chunkdedup.ingestion.executors import Executor, in_order
from chunkdedup.ingestion.report import EngineTotals, IngestReport, NearPassTotals
from chunkdedup.ingestion.sequence import IngestOptions, Progress, ingest_with

if TYPE_CHECKING:
    from chunkdedup.store import Store

T = TypeVar("T")
R = TypeVar("R")


def _call(fn: Callable[[T], R], item: T) -> R:
    """The Ray task: one job."""
    return fn(item)


class RayExecutor(Executor):
    """Jobs as Ray tasks on the Ray this process is connected to; else on ``address`` (``"auto"``,
    ``"ray://host:10001"``); else on a local Ray with ``parallelism`` (default: every core) CPUs,
    shut down when the executor is left. ``parallelism`` also caps the jobs in flight.

    Example:
        >>> from chunkdedup import IngestOptions, ingest_with
        >>> from chunkdedup.ingestion.distributed import RayExecutor
        >>> with RayExecutor(address="auto") as ray:  # doctest: +SKIP
        ...     report = ingest_with(["docs/"], "index.sqlite", IngestOptions(), ray)
    """

    name = "ray"

    def __init__(self, address: str | None = None, parallelism: int | None = None) -> None:
        if parallelism is not None and parallelism < 1:
            raise ConfigError(f"parallelism must be at least 1, got {parallelism}")
        import_ray()  # a missing extra fails before any index is touched
        self.address = address
        self.parallelism = parallelism
        self.workers = 0
        self._stack: ExitStack | None = None
        self._ray: ModuleType | None = None
        self._task: Any = None
        self._depth = 0
        self._passes: list[NearPass | None] = []

    def __enter__(self) -> RayExecutor:
        if self._depth == 0:
            stack = ExitStack()
            ray = stack.enter_context(ray_session(self.address, self.parallelism))
            self._stack, self._ray = stack, ray
            self.workers = self.parallelism or cluster_cpus(ray)
            self._task = ray.remote(num_cpus=1)(_call)
        self._depth += 1
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._depth -= 1
        if self._depth == 0 and self._stack is not None:
            stack, self._stack, self._ray, self._task = self._stack, None, None, None
            stack.close()

    def _session(self) -> ModuleType:
        if self._ray is None:
            raise RuntimeError("enter the RayExecutor (`with RayExecutor(...) as ray:`) before using it")
        return self._ray

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        ray, task = self._session(), self._task
        yield from in_order(lambda item: task.remote(fn, item), ray.get, ray.cancel, items, self.workers)

    def near_edges(
        self, store: Store, config: NearConfig, clock: Callable[[str], AbstractContextManager[None]]
    ) -> dict[tuple[str, str], float] | None:
        found = near_edges_on_ray(self._session(), store, config, self.workers, clock)
        self._passes.append(found)
        return found.edges if found is not None else None

    def engine_totals(self) -> EngineTotals:
        """The engine, its workers, and this run's near pass on Ray: group texts shipped, candidate
        pairs verified (those with a group not edged yet; the edges of the others are kept in the
        index); ``None`` when there was none."""
        last = self._passes[-1] if self._passes else None
        self._passes.clear()
        near_pass = NearPassTotals(last.shipped, last.verified) if last else None
        return EngineTotals(self.name, self.workers, near_pass)


def ingest_ray(
    paths: Sequence[str | Path],
    index: str | Path,
    *,
    manifest: str | Path | None = None,
    config: Config | None = None,
    address: str | None = None,
    parallelism: int | None = None,
    progress: Progress | None = None,
    lock_timeout: float = 30.0,
    prune: bool = False,
    dry_run: bool = False,
    embedder: Embedder | None = None,
    reembed: bool = False,
    text_engine: str | None = None,
) -> IngestReport:
    """:func:`chunkdedup.ingest` with a :class:`RayExecutor` (``address``, ``parallelism``): the same
    sequence, the same index.

    Example:
        >>> report = ingest_ray(["docs/"], "index.sqlite", parallelism=8)  # doctest: +SKIP
        >>> report.totals["canonical_chunks"], report.totals["engine"]["seconds"]  # doctest: +SKIP
    """
    options = IngestOptions(
        manifest, config, prune, dry_run, progress, lock_timeout, embedder, reembed, text_engine
    )
    return ingest_with(paths, index, options, RayExecutor(address, parallelism))


__all__ = ["RayExecutor", "ingest_ray"]
