"""``chunkdedup serve``: a local web view of an index (the ``[web]`` extra); it writes only the review
queue's decisions.

Pages: ``/`` overview, ``/documents`` and ``/documents/<doc id>``, ``/boilerplate`` and
``/boilerplate/<key>``, ``/chunks/<canonical id>``, ``/query?q=...``, ``/review`` and, with a report
folder, ``/report``; each also as JSON with ``?format=json``.

Example:
    >>> from chunkdedup.web import create_app
    >>> app = create_app("policies.sqlite")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from chunkdedup.errors import MissingExtraError
from chunkdedup.web.hosts import LOOPBACK_NAMES

if TYPE_CHECKING:
    from starlette.applications import Starlette


def require_web() -> None:
    """Check that the ``[web]`` extra (Starlette, Jinja2, uvicorn) is installed."""
    for module in ("starlette", "jinja2", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            raise MissingExtraError("chunkdedup serve", "web", module) from None


def check_port(host: str, port: int) -> None:
    """Bind ``host:port`` as the server will (uvicorn: IPv6 for an address with a colon, SO_REUSEADDR
    on POSIX) and let it go, so a busy or forbidden port fails before the server is announced; raises
    the bind's :class:`OSError` (``errno.EADDRINUSE``: another process listens there).

    Example:
        >>> check_port("127.0.0.1", 0)  # port 0: any free port, always bindable
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        if os.name == "posix":  # as uvicorn binds: a port left in TIME_WAIT by a stopped server is free
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))


def create_app(
    index_path: str | Path,
    report_dir: str | Path | None = None,
    *,
    allowed_hosts: Sequence[str] = LOOPBACK_NAMES,
) -> Starlette:
    """The Starlette app serving the index at ``index_path``: it reads the index and writes only the
    review decisions made under ``/review`` (see :mod:`chunkdedup.web.app`)."""
    require_web()
    from chunkdedup.web.app import create_app as make

    return make(index_path, report_dir, allowed_hosts=allowed_hosts)


__all__ = ["LOOPBACK_NAMES", "check_port", "create_app", "require_web"]
