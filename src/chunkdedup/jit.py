"""The one decorator of the compiled kernels: numba ``njit`` with its disk cache when it can have one,
made on first call.

Importing numba and loading a cached kernel costs about a second of a process's start-up (numba's
typing and lowering registries, llvmlite, scipy's BLAS probe); a run with nothing to sign or cluster
(an incremental ingest with no change), or one small enough for the NumPy paths of
:mod:`chunkdedup.dedup.minhash`, :mod:`chunkdedup.dedup.lsh` and :mod:`chunkdedup.dedup.guard`, never
pays it. So ``@kernel`` returns a :class:`Kernel` that imports numba and builds the ``njit``
dispatcher when it is first called (or when a compiling kernel first refers to it: numba is taught
to type a :class:`Kernel` as its dispatcher, so kernels call kernels as before).

numba looks for a writable cache folder when a kernel is *decorated*: beside the source
(``__pycache__``), then under the user's cache folder (``$HOME/.cache``), or ``NUMBA_CACHE_DIR``.
When none can be written (a read-only install run by a user without a writable HOME) it raises
``RuntimeError: cannot cache function ...: no locator available``. Then the kernel is compiled
without the cache: once per process, a second or two on the first near-duplicate pass, the same
results.

:meth:`Kernel.cached` says whether the disk cache holds a kernel built from its current source (what
a first run after an install lacks: compiling every kernel costs tens of seconds of CPU, so an ingest
then takes the NumPy twins while a process of its own fills the cache, see
:mod:`chunkdedup.ingestion.warmup`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


class Kernel(Generic[F]):
    """A numba kernel built on first use; calling it calls the dispatcher."""

    __slots__ = ("__name__", "_dispatcher", "py_func")

    def __init__(self, fn: F) -> None:
        self.py_func = fn
        self.__name__ = fn.__name__
        self._dispatcher: Any = None

    @property
    def compiled(self) -> bool:
        """Whether the dispatcher exists yet (numba imported and the kernel decorated)."""
        return self._dispatcher is not None

    def cached(self) -> bool:
        """Whether numba's disk cache holds this kernel compiled from its current source (a call loads
        it rather than compiling it). Also ``True`` when no cache can be kept (nothing to wait for).
        Builds the dispatcher (imports numba), compiles nothing."""
        store = getattr(getattr(self.dispatcher(), "_cache", None), "_cache_file", None)
        if store is None:  # no cache folder can be written: every process compiles
            return True
        try:  # numba's index of the cache: {(signature, target): data file}, empty when stale
            entries = store._load_index()
            folder = Path(store._cache_path)
        except Exception:  # another numba's layout: assume warm, as before this check existed
            return True
        return bool(entries) and all((folder / name).is_file() for name in entries.values())

    def dispatcher(self) -> Any:
        """The ``njit`` dispatcher, built (numba imported) on the first call."""
        if self._dispatcher is None:
            # no lock: threads that call first at once may each decorate, one dispatcher is kept
            # (numba's own compiler lock orders the compiling)
            built = _njit(self.py_func)
            if self._dispatcher is None:
                self._dispatcher = built
        return self._dispatcher

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher()(*args)

    def __repr__(self) -> str:
        return f"Kernel({self.__name__}, compiled={self.compiled})"


def kernel(fn: F) -> F:
    """``njit(cache=True, nogil=True)`` on first call, or ``njit(nogil=True)`` when no cache folder is
    writable."""
    return cast(F, Kernel(fn))


def python(fn: F) -> F:
    """A kernel's own Python function, run by CPython (for an input too small to pay numba's start-up:
    the same source, so the same result); any other function as it is."""
    return cast(F, fn.py_func) if isinstance(fn, Kernel) else fn


def _njit(fn: Callable[..., Any]) -> Any:
    from numba import njit

    _register_typeof()
    try:
        return njit(cache=True, nogil=True)(fn)
    except RuntimeError as e:
        if "cannot cache" not in str(e):
            raise
        return njit(nogil=True)(fn)


def _register_typeof() -> None:
    """Teach numba that a :class:`Kernel` global is its dispatcher (once per process; numba's registry
    is numba's state, set the first time a kernel is built)."""
    from numba.core import types
    from numba.extending import typeof_impl

    if Kernel in typeof_impl.registry:
        return

    @typeof_impl.register(Kernel)
    def _typeof_kernel(val: Kernel[Any], c: object) -> object:
        return types.Dispatcher(val.dispatcher())


__all__ = ["Kernel", "kernel"]
