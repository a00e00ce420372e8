"""Output files (``--out``): a regular file or a new path is written whole or not at all (a temporary
file beside it, fsync, ``os.replace``); a device, a FIFO or an open descriptor (``/dev/stdout``,
``/proc/self/fd/N``) is written through; a folder is refused.

A symlink stays a link: the file it points to is the one replaced. A write that fails (a read-only
folder, a full disk, a denied path) raises :class:`InputError` naming the path and the fix; a file that
was there is left as it was and no temporary file stays beside it.

Example:
    >>> with text_out("golden.jsonl", "the golden set") as fh:  # doctest: +SKIP
    ...     fh.write('{"id": "q1", "question": "...", "relevant": []}\\n')
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from chunkdedup.errors import InputError

#: the folder of a process's open descriptors once resolved (/proc/self/fd, /dev/fd, /proc/PID/task/TID/fd)
_FD_FOLDER = re.compile(r"/proc/\d+(?:/task/\d+)?/fd")
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
#: symlinks followed before giving up (the kernel's own limit)
_MAX_LINKS = 40


@dataclass(frozen=True, slots=True)
class _Target:
    """Where a write goes: ``path`` written through, or replaced whole (``mode``: the permission bits of
    the file replaced, None for a new one)."""

    path: Path
    through: bool
    mode: int | None = None


@contextlib.contextmanager
def text_out(path: str | Path, what: str) -> Iterator[IO[str]]:
    """A UTF-8 text file writing ``path`` as the module says; ``what`` names the content in an error.

    Example:
        >>> with text_out("chunks.jsonl", "the export") as fh:  # doctest: +SKIP
        ...     fh.write("{}\\n")
    """
    with _out(Path(path), what, "w") as fh:
        yield fh


@contextlib.contextmanager
def binary_out(path: str | Path, what: str) -> Iterator[IO[bytes]]:
    """A binary file writing ``path`` as the module says; ``what`` names the content in an error."""
    with _out(Path(path), what, "wb") as fh:
        yield fh


def out_folder(folder: str | Path, what: str) -> Path:
    """Create ``folder`` (and its parents) and check that a file can be created in it, before the work
    whose result goes there is done."""
    folder = Path(folder)
    probe = folder / f".{secrets.token_hex(4)}.probe"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        probe.unlink()
    except OSError as e:
        raise InputError(
            f"cannot write {what} into {folder}: {e.strerror}; give --out a folder that can be written"
        ) from None
    return folder


@contextlib.contextmanager
def _out(given: Path, what: str, mode: str) -> Iterator[IO[Any]]:
    through = False
    try:
        target = _target(given, what)
        through = target.through
        with (_through(given, mode) if through else _replacing(target, mode)) as fh:
            yield fh
    except BrokenPipeError:
        raise  # the reader of a pipe left: the caller's to end quietly, no error
    except OSError as e:
        raise _write_error(given, what, e, replaced=not through) from None


def _target(given: Path, what: str) -> _Target:
    """How ``given`` is written: through (a device, a FIFO, a descriptor) or replaced (a file, a new path)."""
    path, descriptor = _follow(given)
    if descriptor:
        return _Target(path, through=True)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return _Target(path, through=False)
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"cannot write {what} to {given}: it is a folder; give --out the path of a file")
    if stat.S_ISREG(st.st_mode):
        return _Target(path, through=False, mode=stat.S_IMODE(st.st_mode))
    return _Target(path, through=True)


def _follow(given: Path) -> tuple[Path, bool]:
    """The path ``given`` names after its symlinks, and whether it is an open descriptor
    (``/proc/self/fd/N``: its link names a pipe or a terminal, not a path to replace)."""
    path = os.path.join(os.getcwd(), given)
    for _ in range(_MAX_LINKS):
        folder = os.path.realpath(os.path.dirname(path))
        path = os.path.join(folder, os.path.basename(path))
        if _FD_FOLDER.fullmatch(folder):
            return Path(path), True
        if not os.path.islink(path):
            return Path(path), False
        path = os.path.join(folder, os.readlink(path))  # an absolute link replaces the folder
    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(given))


@contextlib.contextmanager
def _through(given: Path, mode: str) -> Iterator[IO[Any]]:
    """``given`` opened as it is: a device, a FIFO or a descriptor is written, never replaced."""
    with open(given, mode, encoding=None if "b" in mode else "utf-8") as fh:
        yield fh


@contextlib.contextmanager
def _replacing(target: _Target, mode: str) -> Iterator[IO[Any]]:
    """A temporary file beside ``target.path``, fsynced and moved over it once written; removed on any
    failure (a full disk, Ctrl-C), so the old file stays whole."""
    tmp = target.path.with_name(f".{target.path.name}.{secrets.token_hex(4)}.partial")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)  # the umask applies
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if target.mode is not None:  # the file replaced keeps its permissions
            os.chmod(tmp, target.mode)
        os.replace(tmp, target.path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_error(given: Path, what: str, e: OSError, replaced: bool) -> InputError:
    """The one-line error of a failed write of ``given``: what went wrong and the fix."""
    if e.errno in _NO_SPACE:
        kept = "; the partial file was removed" if replaced else ""
        return InputError(
            f"no space left writing {what} to {given} ({e.strerror}): free disk space and run again, or "
            f"give --out a path on another disk{kept}"
        )
    return InputError(
        f"cannot write {what} to {given}: {e.strerror}; check that --out's folder exists and can be written"
    )


__all__ = ["binary_out", "out_folder", "text_out"]
