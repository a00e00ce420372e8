"""The one decorator of the compiled kernels: numba ``njit`` with its disk cache when it can have one.

numba looks for a writable cache folder when a kernel is *decorated* (at import): beside the source
(``__pycache__``), then under the user's cache folder (``$HOME/.cache``), or ``NUMBA_CACHE_DIR``.
When none can be written (a read-only install run by a user without a writable HOME) it raises
``RuntimeError: cannot cache function ...: no locator available``, and every command, even
``--help``, would die at import. Then the kernel is compiled without the cache: once per process,
a second or two on the first near-duplicate pass, the same results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from numba import njit

F = TypeVar("F", bound=Callable[..., Any])


def kernel(fn: F) -> F:
    """``njit(cache=True, nogil=True)``, or ``njit(nogil=True)`` when no cache folder is writable."""
    try:
        return cast(F, njit(cache=True, nogil=True)(fn))
    except RuntimeError as e:
        if "cannot cache" not in str(e):
            raise
        return cast(F, njit(nogil=True)(fn))
