"""The compiled kernels on a first run: the NumPy twins while numba's cache is cold, the kernels
compiled meanwhile by a process of its own.

Compiling every kernel of :mod:`chunkdedup.text` and :mod:`chunkdedup.dedup` costs tens of seconds of
CPU (``benchmarks/README.md``, ``ingest.py --first-run``). Every kernel has a twin (the str walks of
the text stages, the NumPy paths of MinHash, the CPython walks and exact checks of the guards) that
gives the same index at a small cost. So a run large enough to want the kernels first
asks numba's cache whether it holds them (:func:`kernels_cached`); when it does not, the run starts
``python -m chunkdedup.ingestion.warm`` in the background (:mod:`chunkdedup.ingestion.warm`: a small
ingest on the kernels, which fills the cache), takes the twins meanwhile, and takes a stage's kernels
for the jobs it hands out once the cache holds them (the text walks and the signing for the chunk
jobs, :data:`CHUNK_KERNELS`, which the warming process compiles first; every kernel for the cluster
pass). The warming process outlives a run that ends first, so the next run finds the cache warm.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chunkdedup.jit import Kernel

#: the modules holding every ``@kernel`` an ingest (or a query's safety net) calls
KERNEL_MODULES = (
    "chunkdedup.text.chunk_kernel",
    "chunkdedup.text.boilerplate_kernel",
    "chunkdedup.dedup.minhash",
    "chunkdedup.dedup.lsh",
    "chunkdedup.dedup.guard",
    "chunkdedup.dedup.meaning_kernel",
)
#: the modules of the kernels a parse job calls (the boilerplate walk and its text proxy)
PARSE_KERNELS = KERNEL_MODULES[:2]
#: the modules of the kernels a chunk job calls (the text walks, then the signing)
CHUNK_KERNELS = KERNEL_MODULES[:3]
#: seconds between two looks at the cache while the warming process compiles
_LOOK_EVERY = 0.5


def kernels(modules: Sequence[str] = KERNEL_MODULES) -> list[Kernel[Any]]:
    """Every kernel of ``modules`` (importing them imports no numba)."""
    found: list[Kernel[Any]] = []
    for name in modules:
        found.extend(v for v in vars(importlib.import_module(name)).values() if isinstance(v, Kernel))
    return found


def kernels_cached(modules: Sequence[str] = KERNEL_MODULES) -> bool:
    """Whether numba's disk cache holds every kernel of ``modules`` built from its current source
    (imports numba)."""
    return all(k.cached() for k in kernels(modules))


def warm_command() -> list[str]:
    """The command that compiles every kernel into the cache (:mod:`chunkdedup.ingestion.warm`)."""
    return [sys.executable, "-m", "chunkdedup.ingestion.warm"]


class Warmup:
    """One run's use of the compiled kernels.

    ``kernels``: ``None`` (the default) takes them where a stage is large enough to want them, and
    while the cache is cold the twins, the kernels compiled by ``command`` in the background; ``True``
    takes them at any size (compiling inline what the cache lacks); ``False`` never (the twins, no
    numba). The index is the same whichever a stage takes.
    """

    __slots__ = ("_checked", "_looked", "_process", "_ready", "command", "kernels")

    def __init__(self, kernels: bool | None = None, command: Sequence[str] | None = None) -> None:
        self.kernels = kernels
        self.command = list(command) if command is not None else warm_command()
        self._checked = False
        self._process: subprocess.Popen[bytes] | None = None
        self._ready: set[str] = set()  # modules whose kernels the warming process has cached
        self._looked = 0.0

    def compiled(self, large: bool, modules: Sequence[str] = KERNEL_MODULES) -> bool:
        """Whether a stage that takes the kernels of ``modules`` when ``large`` takes them now (the
        first such question checks the cache, and starts the warming process when it is cold; while
        it compiles, the cache is looked at again every half second)."""
        if self.kernels is not None:
            return self.kernels
        if not large:
            return False
        if not self._checked:
            self._checked = True
            if not kernels_cached():
                self._process = self._start()
        if not self.warming:
            return True
        wanted = [m for m in modules if m not in self._ready]
        now = time.monotonic()
        if wanted and now - self._looked >= _LOOK_EVERY:
            self._looked = now
            self._ready.update(m for m in wanted if kernels_cached((m,)))
        return all(m in self._ready for m in modules)

    def cluster_pass(self) -> bool | None:
        """The cluster pass's ``compiled``: the run's own choice, ``False`` while this run's warming
        process has not cached every kernel yet, else ``None`` (by the number of groups)."""
        if self.kernels is not None:
            return self.kernels
        return None if not self.warming or self.compiled(True) else False

    @property
    def warming(self) -> bool:
        """Whether this run started a warming process that has not finished."""
        return self._process is not None and self._process.poll() is None

    @property
    def started(self) -> bool:
        """Whether this run found the cache cold and started a warming process."""
        return self._process is not None

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the warming process (if any); its exit code."""
        return self._process.wait(timeout) if self._process is not None else None

    def _start(self) -> subprocess.Popen[bytes] | None:
        package = str(Path(__file__).resolve().parents[2])  # the folder chunkdedup is imported from
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
        try:
            return subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # not stopped with the run's terminal: the next run wants the cache
            )
        except OSError:  # no process can be started: the kernels compile inline, as they used to
            return None


__all__ = [
    "CHUNK_KERNELS",
    "KERNEL_MODULES",
    "PARSE_KERNELS",
    "Warmup",
    "kernels",
    "kernels_cached",
    "warm_command",
]
