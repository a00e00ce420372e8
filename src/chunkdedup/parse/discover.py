"""Finding input files, giving them document ids, and reading the manifest's metadata."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chunkdedup.config import ParseConfig
from chunkdedup.errors import DuplicateDocumentError, InputError
from chunkdedup.parse.base import meta_value, scrub_surrogates, shown
from chunkdedup.types import FileResult, FileStatus, MetaValue

_JSONL_SUFFIXES = (".jsonl", ".json-lines", ".ndjson")


@dataclass(frozen=True, slots=True)
class InputFile:
    """One file to parse: where it is, its document id, and its manifest metadata."""

    path: Path
    doc_id: str
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Manifest:
    folder: Path
    file: Path
    rows: Mapping[Path, Mapping[str, MetaValue]]


@dataclass(frozen=True, slots=True)
class Discovery:
    """What the path arguments hold: the files to read, and every other entry with why it is not read.

    ``unread`` lists each entry under a folder argument that is not an input (an unsupported format,
    a hidden file, a dangling symlink, a folder that cannot be listed, ...) as a ``skipped`` or
    ``failed`` file result, so no entry of a folder disappears unreported. ``unlisted``: the document
    ids of the inputs a manifest was given for but does not list (they are read, with no metadata).
    """

    inputs: list[InputFile]
    unread: list[FileResult]
    unlisted: tuple[str, ...] = ()


def discover(
    paths: Sequence[str | Path], manifest: str | Path | None, config: ParseConfig
) -> list[InputFile]:
    """The input files under ``paths``, sorted by document id (:func:`survey` also gives the rest).

    Ids are paths relative to the manifest's folder when a manifest is given and the file lies under
    it, else relative to the folder argument the file was found under (a file argument: its name).

    Example:
        >>> [i.doc_id for i in discover(["policies"], None, ParseConfig())]  # doctest: +SKIP
        ['hr/leave.md', 'hr/refunds.pdf']
    """
    return survey(paths, manifest, config).inputs


def survey(paths: Sequence[str | Path], manifest: str | Path | None, config: ParseConfig) -> Discovery:
    """The input files under ``paths`` (as :func:`discover`) and every entry that is not read, with why.

    Example:
        >>> found = survey(["docs"], None, ParseConfig())  # doctest: +SKIP
        >>> [(u.path, u.reason) for u in found.unread]  # doctest: +SKIP
        [('/data/docs/notes.docx', 'unsupported format .docx: name the file as a PATH to read it as text')]
    """
    man = _read_manifest(manifest) if manifest is not None else None
    walk = _Walk({s.lower() for s in config.suffixes}, config.follow_symlinks)
    by_path: dict[Path, InputFile] = {}
    by_id: dict[str, InputFile] = {}
    for given in paths:
        root = _absolute(Path(given))
        if not root.exists():
            raise InputError(f"input path {given} does not exist: check the path")
        for file, rel in walk.files(root):
            if man is not None and file == man.file:
                continue
            if file in by_path:
                continue  # one file named twice (a folder and a file inside it) is read once
            if not _utf8(str(file)):
                walk.unread(file, FileStatus.FAILED, _NOT_UTF8)
                continue
            inp = _input(file, rel, man)
            other = by_id.get(inp.doc_id)
            if other is not None:
                raise DuplicateDocumentError(
                    f"document id {inp.doc_id!r} is given by both {other.path} and {inp.path}: "
                    "pass one of them, or use a manifest whose folder holds both"
                )
            by_path[file] = by_id[inp.doc_id] = inp
    unread = sorted(walk.skipped.values(), key=lambda r: r.path)
    unlisted = sorted(i.doc_id for f, i in by_path.items() if f not in man.rows) if man is not None else []
    return Discovery(sorted(by_id.values(), key=lambda i: i.doc_id), unread, tuple(unlisted))


_NOT_UTF8 = "the file name is not valid UTF-8: rename it (e.g. `convmv -f latin1 -t utf-8`) to read it"
_NOT_REGULAR = "not a regular file (a device, socket or pipe)"
_READ_ALREADY = "symlink to a folder that is read already: not followed"


def display_path(path: str | Path) -> str:
    """A path as text that can always be printed and stored: bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _absolute(path: Path) -> Path:
    # normpath, not resolve: ids follow the paths as given, even through symlinked folders.
    return Path(os.path.normpath(path.absolute()))


class _Walk:
    """Walks folder arguments; collects every entry it does not read, with its reason."""

    def __init__(self, suffixes: set[str], follow_symlinks: bool) -> None:
        self.suffixes = suffixes
        self.follow = follow_symlinks
        self.skipped: dict[str, FileResult] = {}

    def unread(self, path: Path | str, status: FileStatus, reason: str) -> None:
        shown = display_path(path)
        self.skipped.setdefault(shown, FileResult(shown, status, (), reason))

    def files(self, root: Path) -> Iterator[tuple[Path, str]]:
        """The files of a path argument with their ids relative to it; a file argument is kept as is.

        Symlinked folders (when followed) are read after every real folder, in path order, so which
        path a folder reached twice is read under never depends on the order the OS lists entries in.
        """
        if not root.is_dir():
            yield root, root.name
            return
        seen: set[tuple[int, int]] = set()
        stack = [root]
        links: list[tuple[Path, tuple[int, int]]] = []
        found: list[Path] = []
        while stack or links:
            if not stack:
                links.sort(reverse=True)
                link, identity = links.pop()
                if identity in seen:
                    self.unread(link, FileStatus.SKIPPED, _READ_ALREADY)
                    continue
                stack.append(link)
            folder = stack.pop()
            try:
                identity = _identity(folder)
                if identity in seen:  # reached twice, through symlinks inside a followed link
                    self.unread(folder, FileStatus.SKIPPED, "a folder that is read already: not read again")
                    continue
                seen.add(identity)
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except OSError as e:
                self.unread(folder, FileStatus.FAILED, f"cannot list the folder: {e.strerror or e}")
                continue
            for entry in listed:
                try:
                    self._entry(entry, stack, links, found)
                except OSError as e:
                    self.unread(entry.path, FileStatus.FAILED, f"cannot read the entry: {e.strerror or e}")
        for file in sorted(found):
            yield file, file.relative_to(root).as_posix()

    def _entry(
        self,
        entry: os.DirEntry[str],
        stack: list[Path],
        links: list[tuple[Path, tuple[int, int]]],
        found: list[Path],
    ) -> None:
        path = Path(entry.path)
        if entry.name.startswith("."):
            what = "folder" if entry.is_dir(follow_symlinks=False) else "file"
            self.unread(path, FileStatus.SKIPPED, f"hidden {what} (its name starts with '.'): not read")
            return
        if entry.is_dir(follow_symlinks=False):
            stack.append(path)
            return
        if entry.is_symlink():
            if not self._linked(path, links):
                return
        elif not entry.is_file(follow_symlinks=False):
            self.unread(path, FileStatus.SKIPPED, _NOT_REGULAR)
            return
        suffix = os.path.splitext(entry.name)[1].lower()
        if suffix in self.suffixes:
            found.append(path)
        else:
            what = f"unsupported format {suffix}" if suffix else "unsupported format (no suffix)"
            self.unread(path, FileStatus.SKIPPED, f"{what}: name the file as a PATH to read it as text")

    def _linked(self, path: Path, links: list[tuple[Path, tuple[int, int]]]) -> bool:
        """True when a symlink leads to a regular file; a linked folder is queued only when followed."""
        try:
            target = os.stat(path)
        except FileNotFoundError:
            self.unread(path, FileStatus.SKIPPED, f"dangling symlink: its target {os.readlink(path)} is gone")
            return False
        except OSError as e:
            self.unread(path, FileStatus.SKIPPED, f"unusable symlink ({e.strerror or e}): not read")
            return False
        if stat.S_ISREG(target.st_mode):
            return True
        if not stat.S_ISDIR(target.st_mode):
            self.unread(path, FileStatus.SKIPPED, _NOT_REGULAR)
        elif not self.follow:
            self.unread(
                path,
                FileStatus.SKIPPED,
                "symlinked folder, not followed: pass --follow-symlinks (parse.follow_symlinks) to read it",
            )
        else:
            links.append((path, (target.st_dev, target.st_ino)))
        return False


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _input(file: Path, rel: str, man: _Manifest | None) -> InputFile:
    if man is None:
        return InputFile(file, rel, {})
    # A row applies wherever its file lies; only the id falls back when the file is outside the folder.
    doc_id = file.relative_to(man.folder).as_posix() if file.is_relative_to(man.folder) else rel
    return InputFile(file, doc_id, man.rows.get(file, {}))


def _read_manifest(manifest: str | Path) -> _Manifest:
    """Read a JSONL or CSV manifest into rows of metadata keyed by absolute file path."""
    file = _absolute(Path(manifest))
    suffix = file.suffix.lower()
    if suffix not in (*_JSONL_SUFFIXES, ".csv"):
        raise InputError(f"manifest {manifest}: unknown format {suffix!r}; use a .jsonl or .csv file")
    try:
        text = file.read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise InputError(f"manifest {manifest} cannot be read: {e.strerror or e}; check the path") from None
    except UnicodeDecodeError as e:
        raise InputError(f"manifest {manifest} is not UTF-8 ({e.reason}): save it as UTF-8") from None
    rows = _jsonl_rows(text, manifest) if suffix != ".csv" else _csv_rows(text, manifest)
    folder = file.parent
    by_path: dict[Path, Mapping[str, MetaValue]] = {}
    first_line: dict[Path, int] = {}
    for line, row in rows:
        rel = row.pop("path")
        if not isinstance(rel, str) or not rel.strip():
            raise InputError(
                f"manifest {manifest} line {line}: 'path' must be a non-empty string: "
                f"write the file's path relative to {folder}"
            )
        target = _absolute(folder / rel)
        if target in first_line:
            raise InputError(
                f"manifest {manifest} lines {first_line[target]} and {line} both list {shown(rel)}: "
                "keep one row per file"
            )
        first_line[target] = line
        by_path[target] = {k: meta_value(v) for k, v in row.items()}
    return _Manifest(folder=folder, file=file, rows=by_path)


def _jsonl_rows(text: str, manifest: str | Path) -> list[tuple[int, dict[str, object]]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(
                f"manifest {manifest} line {number}: not valid JSON ({e.msg}, column {e.colno}): "
                "write one JSON object per line"
            ) from None
        if not isinstance(row, dict) or "path" not in row:
            raise InputError(
                f"manifest {manifest} line {number}: expected a JSON object with a 'path' field, "
                'e.g. {"path": "docs/a.pdf", "department": "hr"}'
            )
        if scrub_surrogates(row)[1]:
            raise InputError(
                f"manifest {manifest} line {number}: a lone surrogate escape (\\ud800-\\udfff without its "
                "pair) writes a character no UTF-8 text holds: write the character itself or a valid pair"
            )
        rows.append((number, row))
    return rows


def _csv_rows(text: str, manifest: str | Path) -> list[tuple[int, dict[str, object]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows: list[tuple[int, dict[str, object]]] = []
    try:
        if reader.fieldnames is None or "path" not in reader.fieldnames:
            raise InputError(
                f"manifest {manifest} line 1: the header has no 'path' column: "
                "add one naming each file relative to the manifest's folder"
            )
        for row in reader:
            if None in row:
                raise InputError(
                    f"manifest {manifest} line {reader.line_num}: more cells than header columns: "
                    "quote cells that contain commas"
                )
            # An empty cell means "no value", not an empty string.
            kept: dict[str, object] = {k: v for k, v in row.items() if k == "path" or v not in (None, "")}
            rows.append((reader.line_num, kept))
    except csv.Error as e:
        raise InputError(f"manifest {manifest} line {reader.line_num}: not valid CSV ({e})") from None
    return rows
