"""Importing Ray lazily, and a Ray session that is shut down only if this process started it."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from types import ModuleType

from chunkdedup.errors import MissingExtraError


def import_ray() -> ModuleType:
    """``ray`` with Ray Data, or ``MissingExtraError`` naming the extra."""
    try:
        import ray
        import ray.data  # the [data] part of the extra
    except ImportError:
        raise MissingExtraError("ingest on Ray (--engine ray)", "ray", "ray") from None
    module: ModuleType = ray
    return module


@contextlib.contextmanager
def ray_session(address: str | None, parallelism: int | None) -> Iterator[ModuleType]:
    """Use the Ray this process is connected to; else connect to ``address``; else start a local Ray
    with ``parallelism`` (default: all) CPUs. Shuts Ray down afterwards only if it started here."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        if address is None:
            cpus = parallelism or os.cpu_count() or 1
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        started = True
    ctx = ray.data.DataContext.get_current()
    saved = (ctx.execution_options.preserve_order, ctx.enable_progress_bars)
    # Batches come back in input order, so the driver writes in the local ingest's order.
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    logger = logging.getLogger("ray.data")
    level = logger.level
    logger.setLevel(logging.WARNING)  # one INFO line per dataset execution otherwise
    try:
        yield ray
    finally:
        logger.setLevel(level)
        ctx.execution_options.preserve_order, ctx.enable_progress_bars = saved
        if started:
            ray.shutdown()


def cluster_cpus(ray: ModuleType) -> int:
    """CPUs the connected cluster offers (at least 1)."""
    return max(1, int(ray.cluster_resources().get("CPU", 1)))
