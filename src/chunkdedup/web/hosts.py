"""The names ``chunkdedup serve`` answers to when bound to a loopback address."""

from __future__ import annotations

__all__ = ["LOOPBACK_NAMES"]

#: the Host names a browser on this machine sends to a loopback address. A request naming any other
#: host is refused (400): a web page of another site can point its own name at 127.0.0.1 (DNS
#: rebinding) and read a loopback-bound server through the user's browser; its requests carry that
#: site's name as their Host.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
