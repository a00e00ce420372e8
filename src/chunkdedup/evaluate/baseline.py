"""The baseline index: the same files, manifest and chunk settings as an index's last ingest run, with
boilerplate stripping and every dedup tier off. Rebuilt when missing or when its corpus fingerprint
(or its config) differs from the index's; reused otherwise."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from chunkdedup.config import Config, DedupConfig
from chunkdedup.errors import InputError, SchemaError
from chunkdedup.index import Index
from chunkdedup.ingestion.sequence import Progress, config_fingerprint, ingest
from chunkdedup.normalize import key_hash


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """What the last finished ingest run of an index was given."""

    paths: tuple[str, ...]
    manifest: str | None
    config: Config


@dataclass(frozen=True, slots=True)
class Baseline:
    """The baseline index file, whether it was (re)built now, and its corpus fingerprint;
    ``warning``: why its numbers do not compare with the index's (its input files changed since the
    index was built), else None."""

    path: Path
    rebuilt: bool
    fingerprint: str
    reason: str
    warning: str | None = None


def recorded_run(ix: Index) -> RecordedRun:
    run = ix.evaluation.last_ingest_run()
    if run is None:
        raise InputError(f"index {ix.path} records no finished ingest run: run `chunkdedup ingest` first")
    return RecordedRun(run.paths, run.manifest, run.config)


def corpus_fingerprint(ix: Index) -> str:
    """A hash of the content hashes of the input files the index holds (its ``files`` table)."""
    return key_hash("\n".join(ix.evaluation.file_hashes()))


def baseline_config(config: Config) -> Config:
    """``config`` with stripping and every dedup tier off (chunking and parsing unchanged)."""
    return dataclasses.replace(
        config,
        boilerplate=dataclasses.replace(config.boilerplate, enabled=False),
        dedup=DedupConfig(exact=False),
        near=dataclasses.replace(config.near, enabled=False),
    )


def _state(path: Path) -> tuple[str, str] | None:
    """(corpus fingerprint, config fingerprint) of an existing index, ``None`` if it is missing."""
    if not path.exists():
        return None
    try:
        with Index.open(path, migrate=False) as ix:
            return corpus_fingerprint(ix), config_fingerprint(recorded_run(ix).config)
    except (SchemaError, InputError) as e:
        raise InputError(f"baseline {path} is not a usable chunkdedup index ({e}): give another --baseline "
                         "path or delete the file") from None


def ensure_baseline(
    index: str | Path, baseline: str | Path, *, progress: Progress | None = None, fallback: Path | None = None
) -> Baseline:
    """Build ``baseline`` from ``index``'s last run unless an up-to-date one is already there
    (``progress`` sees the build's stages, named ``baseline parse``, ``baseline chunk``, ...). When
    ``baseline``'s folder cannot be written (an index on a read-only mount), the baseline is built at
    ``fallback`` instead (see :func:`cache_baseline_path`); with no ``fallback`` that is an error
    naming the folder.

    Example:
        >>> ensure_baseline("policies.sqlite", "policies.baseline.sqlite").rebuilt  # doctest: +SKIP
        True
    """
    target = Path(baseline)
    if target.resolve() == Path(index).resolve():
        raise InputError(f"--baseline {target} is the index itself: give another path")
    with Index.open(index, migrate=False) as ix:
        run = recorded_run(ix)
        wanted = corpus_fingerprint(ix)
    config = baseline_config(run.config)
    have = _state(target)
    if have == (wanted, config_fingerprint(config)):
        return Baseline(target, False, wanted, "reused: same corpus fingerprint and config")
    unwritable = _unwritable(target.parent)
    if unwritable is not None:
        if fallback is None:
            raise InputError(f"cannot write the baseline {target}: its folder {target.parent} {unwritable}: "
                             "give --baseline a path in a folder you can write")
        try:
            fallback.parent.mkdir(parents=True, exist_ok=True)
            cache_unwritable = _unwritable(fallback.parent)
        except OSError as e:
            cache_unwritable = f"cannot be made ({e.strerror})"
        if cache_unwritable is not None:
            raise InputError(f"cannot write the baseline of {index}: its folder {target.parent} "
                             f"{unwritable}, and the cache folder {fallback.parent} {cache_unwritable}: "
                             "give --baseline a path in a folder you can write")
        moved = ensure_baseline(index, fallback, progress=progress)
        note = f"; in the cache folder, since the index's folder {target.parent} {unwritable}"
        return dataclasses.replace(moved, reason=moved.reason + note)
    reason = "missing" if have is None else (
        "corpus fingerprint differs" if have[0] != wanted else "config differs")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    missing = [p for p in run.paths if not Path(p).exists()]
    if missing:
        raise InputError(f"the index's recorded input paths {missing} no longer exist: re-ingest the index "
                         "from where its files are now")
    tick: Progress | None = None
    if progress is not None:
        tick = lambda stage, done, total: progress(f"baseline {stage}", done, total)  # noqa: E731
    ingest(list(run.paths), target, manifest=run.manifest, config=config, progress=tick)
    with Index.open(target, migrate=False) as bx:
        built = corpus_fingerprint(bx)
    warning = None
    if built != wanted:
        warning = (f"the input files of index {index} changed since it was built, so the baseline and the "
                   "index see different corpora and their numbers do not compare: re-ingest the index")
        reason += "; the input files changed since the index was built, so the two runs see different " \
                  "corpora: re-ingest the index"
    return Baseline(target, True, built, f"rebuilt ({reason})", warning)


def _unwritable(folder: Path) -> str | None:
    """Why no file can be made in ``folder`` ("cannot be written (Read-only file system)"), else None.
    A probe, not ``os.access``: that is no answer for root, and none for what the mount allows."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return None
    except OSError as e:
        return f"cannot be written ({e.strerror})"


def default_baseline_path(index: str | Path) -> Path:
    """``corpus.sqlite`` -> ``corpus.baseline.sqlite`` beside it."""
    p = Path(index)
    return p.with_name(f"{p.stem}.baseline{p.suffix or '.sqlite'}")


def cache_baseline_path(index: str | Path) -> Path:
    """Where the baseline of an index whose own folder cannot be written goes: the user's cache folder
    (``$XDG_CACHE_HOME``, else ``~/.cache``), ``chunkdedup/baselines/STEM-HASH.baseline.sqlite``, the
    hash of the index's absolute path keeping two indexes of one name apart."""
    p = Path(index).resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(os.fsencode(p)).hexdigest()[:16]
    return cache / "chunkdedup" / "baselines" / f"{p.stem}-{digest}.baseline{p.suffix or '.sqlite'}"


__all__ = ["Baseline", "RecordedRun", "baseline_config", "cache_baseline_path", "corpus_fingerprint",
           "default_baseline_path", "ensure_baseline", "recorded_run"]
