"""What every command module shares: the library's errors turned into one-line CLI errors,
untrusted text made safe to print, and the library's log on standard error (``-v``)."""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from chunkdedup.errors import ChunkdedupError, QuestionError
from chunkdedup.parse.discover import display_path
from chunkdedup.store.index_errors import SQLITE_FAILURES
from chunkdedup.visible import safe_text

#: The exit status of an ingest in which at least one file failed (its summary is still printed).
EXIT_FILES_FAILED = 3
#: The levels ``--log-level`` takes.
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: A log line on standard error: time, level, the module's logger, the message.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_level(verbose: int, level: str | None) -> int | None:
    """The level of the ``chunkdedup`` log on standard error: ``--log-level`` when given, else INFO
    for ``-v`` and DEBUG for ``-vv``; ``None`` (no log) without either.

    Example:
        >>> log_level(2, None) == logging.DEBUG, log_level(1, "warning") == logging.WARNING
        (True, True)
    """
    if level is not None:
        return logging.getLevelNamesMapping()[level.upper()]
    if verbose <= 0:
        return None
    return logging.INFO if verbose == 1 else logging.DEBUG


class _Stderr(logging.Handler):
    """Each record as one line on the standard error of the moment (a progress bar's proxy keeps the
    bar below the lines), control characters escaped: a message may quote a file's name."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(safe_text(self.format(record)), err=True)
        except Exception:
            self.handleError(record)


def log_to_stderr(level: int) -> Callable[[], None]:
    """Show the ``chunkdedup`` log from ``level`` up on standard error (never standard output: a
    ``--json`` object stays the only thing there); returns what undoes it."""
    package = logging.getLogger("chunkdedup")
    handler = _Stderr(level)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, "%H:%M:%S"))
    was = package.level
    package.addHandler(handler)
    package.setLevel(level)

    def undo() -> None:
        package.removeHandler(handler)
        package.setLevel(was)

    return undo


@contextlib.contextmanager
def cli_errors(index: Path | None = None) -> Iterator[None]:
    """Turn a :class:`ChunkdedupError` into a click error: one line, non-zero exit status (2 for a
    question past the `[query]` bounds, a usage error).

    An SQLite error on ``index`` (a damaged file, a full disk, an I/O error) gets the message that
    names its cause and the way out (see :mod:`chunkdedup.store.index_errors`), never a traceback.
    """
    try:
        yield
    except QuestionError as e:  # the question as given: a usage error (exit status 2)
        raise click.UsageError(safe_text(str(e))) from None
    except ChunkdedupError as e:
        raise click.ClickException(safe_text(str(e))) from None
    except SQLITE_FAILURES as e:
        if index is None or (isinstance(e, UnicodeDecodeError) and not _sqlite_message(e)):
            raise
        from chunkdedup.store.index_errors import index_error

        raise click.ClickException(safe_text(str(index_error(index, e)))) from None
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise
        where = f" writing {e.filename}" if e.filename else ""
        message = f"no space left{where} ({e.strerror}): free disk space and run again"
        raise click.ClickException(safe_text(message)) from None


def as_given(path: str, given: Sequence[Path]) -> str:
    """A file's path as an ingest stores it (absolute), written as the input it was found under was
    given: ``docs/a.md`` for an input ``docs``; a path under no input as it is.

    Example:
        >>> as_given(os.path.abspath("docs/a.md"), [Path("docs")])
        'docs/a.md'
    """
    best: tuple[str, str] | None = None
    for p in given:
        root = display_path(os.path.normpath(p.absolute()))
        inside = path == root or path.startswith(root.rstrip(os.sep) + os.sep)
        if inside and (best is None or len(root) > len(best[0])):
            best = (root, display_path(p))
    if best is None:
        return path
    root, shown = best
    return shown + path[len(root) :]


def _sqlite_message(e: UnicodeDecodeError) -> bool:
    """True when the undecodable bytes are an SQLite error message quoting damaged bytes."""
    raw = bytes(e.object)
    return raw.startswith((b"malformed database schema", b"database disk image", b"file is not a database"))


@contextlib.contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress bar on a terminal (stderr), nothing otherwise."""
    if not enabled:  # (--json): rich is not even loaded
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    if not err.is_terminal:
        yield None
        return
    columns = (TextColumn("{task.description:<12}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def tick(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield tick


def json_text(value: Any) -> str:
    """``json.dumps(value, indent=2, sort_keys=True)``, character for character, with the C encoder
    writing each scalar: with ``indent`` set, ``json`` walks every value in Python (an ingest report
    names every document: 50k ids took 70 ms of an incremental run of 1.4 s, this takes 15 ms).
    Anything but dicts with string keys, lists, tuples and JSON scalars goes to ``json.dumps``."""
    parts: list[str] = []
    _json_parts(value, "\n", parts)
    return "".join(parts)


def _json_parts(value: Any, newline: str, out: list[str]) -> None:
    if isinstance(value, dict) and all(type(k) is str for k in value):
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        out.append("{")
        sep = inner
        for key in sorted(value):
            out.append(sep)
            out.append(json.encoder.encode_basestring_ascii(key))
            out.append(": ")
            _json_parts(value[key], inner, out)
            sep = "," + inner
        out.append(newline + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        out.append("[")
        if all(type(v) is str for v in value):
            out.append(inner)
            out.append(("," + inner).join(map(json.encoder.encode_basestring_ascii, value)))
        else:
            sep = inner
            for item in value:
                out.append(sep)
                _json_parts(item, inner, out)
                sep = "," + inner
        out.append(newline + "]")
    elif value is None or type(value) in (str, int, float, bool):
        out.append(json.dumps(value))
    else:
        out.append(json.dumps(value, indent=2, sort_keys=True).replace("\n", newline))

