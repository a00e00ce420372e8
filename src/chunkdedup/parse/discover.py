"""Finding input files, giving them document ids, and reading the manifest's metadata."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chunkdedup.config import ParseConfig
from chunkdedup.errors import DuplicateDocumentError, InputError
from chunkdedup.parse.base import meta_value
from chunkdedup.types import MetaValue

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


def discover(
    paths: Sequence[str | Path], manifest: str | Path | None, config: ParseConfig
) -> list[InputFile]:
    """The input files under ``paths``, sorted by document id.

    Ids are paths relative to the manifest's folder when a manifest is given and the file lies under
    it, else relative to the folder argument the file was found under (a file argument: its name).

    Example:
        >>> [i.doc_id for i in discover(["policies"], None, ParseConfig())]  # doctest: +SKIP
        ['hr/leave.md', 'hr/refunds.pdf']
    """
    man = _read_manifest(manifest) if manifest is not None else None
    suffixes = {s.lower() for s in config.suffixes}
    by_path: dict[Path, InputFile] = {}
    by_id: dict[str, InputFile] = {}
    for given in paths:
        root = _absolute(Path(given))
        if not root.exists():
            raise InputError(f"input path {given} does not exist: check the path")
        for file, rel in _files(root, suffixes):
            if man is not None and file == man.file:
                continue
            if file in by_path:
                continue  # one file named twice (a folder and a file inside it) is read once
            inp = _input(file, rel, man)
            other = by_id.get(inp.doc_id)
            if other is not None:
                raise DuplicateDocumentError(
                    f"document id {inp.doc_id!r} is given by both {other.path} and {inp.path}: "
                    "pass one of them, or use a manifest whose folder holds both"
                )
            by_path[file] = by_id[inp.doc_id] = inp
    return sorted(by_id.values(), key=lambda i: i.doc_id)


def _absolute(path: Path) -> Path:
    # normpath, not resolve: ids follow the paths as given, even through symlinked folders.
    return Path(os.path.normpath(path.absolute()))


def _files(root: Path, suffixes: set[str]) -> Iterator[tuple[Path, str]]:
    """The files of a path argument with their ids relative to it; a file argument is kept as is."""
    if not root.is_dir():
        yield root, root.name
        return
    stack = [root]
    found: list[Path] = []
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                # Symlinked folders are not followed: a link cycle would never end.
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file() and os.path.splitext(entry.name)[1].lower() in suffixes:
                    found.append(Path(entry.path))
    for file in sorted(found):
        yield file, file.relative_to(root).as_posix()


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
                f"manifest {manifest} lines {first_line[target]} and {line} both list {rel!r}: "
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
