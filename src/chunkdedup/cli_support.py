"""What every command module shares: the library's errors turned into one-line CLI errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from chunkdedup.errors import ChunkdedupError


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn a :class:`ChunkdedupError` into a click error: one line, non-zero exit status."""
    try:
        yield
    except ChunkdedupError as e:
        raise click.ClickException(str(e)) from None
