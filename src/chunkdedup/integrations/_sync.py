"""``sync``: apply ``export --changes-since`` to a vector store by canonical id, resumably.

The delta streams upserts (by id) then deletes (by id). It is written in batches; after each batch the
store confirmed, the state file records how far it got, and only once the whole delta is written does
it record the run as applied. A sync that fails or is interrupted leaves the state before the first
unconfirmed batch, so the next call resends that batch (upserts and deletes by id are idempotent) and
goes on; nothing unwritten is ever marked done.

Deletes come from the index's tombstones of canonicals that no longer exist, so removing one document
never deletes a chunk another document still holds: that chunk is upserted with its remaining sources.
The watermark is the newest *finished* run; what an ingest still running has already written is sent
too and sent again by the next sync, since it lies after that watermark.

After every call, a sink that can list its store (:class:`Listing`) is checked against the index: one
record per canonical, no other. "Done" means mirrored; a store that differs raises
:class:`~chunkdedup.errors.SyncError` naming it, what differs and the repair, ``full=True``: every
canonical upserted again and every record the index does not hold deleted.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from chunkdedup.errors import ConfigError, InputError, SyncError
from chunkdedup.export import records
from chunkdedup.index import Index
from chunkdedup.integrations._core import IndexLike, open_index
from chunkdedup.outfile import text_out
from chunkdedup.query.records import ExportRecord

DEFAULT_BATCH = 256


class Sink(Protocol):
    """A vector store as ``sync`` writes to it."""

    def write(self, batch: Sequence[ExportRecord]) -> None:
        """Upsert each record whose ``op`` is not ``delete`` by its id, delete the others by id; raise
        unless the store took every one (a partly written batch is sent again)."""
        ...


class Listing(Protocol):
    """A sink that can list what its store holds, so a sync can check the store mirrors the index."""

    def chunk_ids(self) -> list[str] | None:
        """The canonical id of every record the store holds, one entry per record (``None``: the
        store cannot list them)."""
        ...


@dataclass(frozen=True, slots=True)
class StoreModel:
    """The embeddings a store's vectors were made by: ``name`` (the embeddings' class and the model it
    names) and ``dim``, the length of its vectors. A store holds the vectors of one model only."""

    name: str
    dim: int

    def __str__(self) -> str:
        return f"{self.name} ({self.dim} dimensions)"


@dataclass(frozen=True, slots=True)
class SyncState:
    """What the state file holds: the last run fully applied, and the delta in progress, if any
    (the watermark it started from, the run it brings the store to, the last record written), and
    the embeddings the store's vectors were made by, when known (kept by every save)."""

    applied_run: int | None = None
    target_run: int | None = None
    since: int | None = None
    cursor: tuple[str, str] | None = None
    model: StoreModel | None = None

    @classmethod
    def load(cls, path: Path) -> SyncState:
        if not path.exists():
            return cls()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(
                f"sync state {path} cannot be read ({e.strerror}): give the state a file that can be read "
                "and written (--state)"
            ) from None
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            cursor = raw.get("cursor")
            op, last = cursor if cursor else (None, None)
            model = raw.get("model")
            return cls(
                raw.get("applied_run"),
                raw.get("target_run"),
                raw.get("since"),
                (str(op), str(last)) if cursor else None,
                StoreModel(str(model["name"]), int(model["dim"])) if model is not None else None,
            )
        except (ValueError, AttributeError, TypeError, KeyError) as e:
            what = "empty" if not text.strip() else f"damaged ({e})"
            raise InputError(
                f"sync state {path} is {what}: delete it, then sync again with --full (full=True), which "
                "rebuilds the store from the index"
            ) from None

    def save(self, path: Path) -> None:
        with text_out(path, f"the sync state {path}") as fh:  # never a half-written state
            fh.write(json.dumps(asdict(self), sort_keys=True))


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one ``sync`` call wrote: ``since`` the watermark it started from (``None``: everything),
    ``applied_run`` the run the store now reflects, and whether it resumed an interrupted delta.

    ``embedded``: texts the embedder was given (in ``embed_calls`` calls); ``kept_vectors``: upserts
    whose text the store already held, updated without an embedding; ``index_vectors``: upserts
    written with the vector the index holds (its embedder is the store's model); ``verified``: the
    store was listed after the sync and holds one record per canonical, no other (``False``: it
    cannot be listed); ``store_records``: how many records it holds then.
    """

    since: int | None
    applied_run: int | None
    upserts: int
    deletes: int
    resumed: bool
    state: str
    embedded: int = 0
    embed_calls: int = 0
    kept_vectors: int = 0
    index_vectors: int = 0
    verified: bool = False
    store_records: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def check_model(recorded: StoreModel | None, given: StoreModel, store: str, state: Path) -> None:
    """Refuse embeddings other than those ``state`` records for ``store`` (``None``: nothing recorded):
    the store would hold the vectors of two models, which no search can compare."""
    if recorded is None or recorded == given:
        return
    raise ConfigError(
        f"{store} holds the vectors of {recorded}, as {state} records, but the embeddings given are "
        f"{given}: one store cannot mix them. Sync with --reembed (reembed=True) to embed every record "
        "again and replace the store's vectors, or give the embeddings the store was built with"
    )


def state_path(index: Index, state: str | Path | None) -> Path:
    """The state file: ``state``, or ``INDEX.sync.json`` beside the index (one per vector store)."""
    if state is not None:
        return Path(state)
    return index.store.path.with_name(index.store.path.name + ".sync.json")


def run_sync(
    index: IndexLike,
    sink: Sink,
    *,
    since: int | None = None,
    state: str | Path | None = None,
    batch_size: int = DEFAULT_BATCH,
    full: bool = False,
    verify: bool = True,
    tick: Callable[[str, int, int], None] | None = None,
) -> SyncReport:
    """Bring ``sink`` to the index's last finished run; see the module docstring.

    ``since``: the run the store already reflects; default the state file's last applied run, and
    with neither, everything is upserted. ``full``: ignore both, upsert everything and delete what
    the store holds beyond the index (needs a sink that lists its store). ``verify``: check a sink
    that lists its store against the index after the sync. ``tick("sync", written, 0)`` is
    called after each confirmed batch (the delta's size is not counted beforehand).
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if full and since is not None:
        raise ConfigError(f"full=True syncs everything, so since={since} does not apply: give one of them")
    with open_index(index) as ix:
        path = state_path(ix, state)
        saved = SyncState.load(path)
        start = None if full else (saved.applied_run if since is None else since)
        with ix.snapshot():  # one snapshot: the watermark, the delta and the check agree
            last = ix.last_finished_run()
            if last is None:
                return SyncReport(start, None, 0, 0, False, str(path))
            if start is not None and start > last:
                raise InputError(
                    f"sync since run {start} is past the last finished run of {ix.store.path} ({last}): "
                    f"pass a run the store reflects, or delete {path} to sync everything"
                )
            resumed = saved.target_run == last and saved.since == start and saved.cursor is not None
            counts = {"upserts": 0, "deletes": 0}
            if start != last:
                cursor = saved.cursor if resumed else None
                progress = SyncState(saved.applied_run, last, start, cursor, saved.model)
                for batch in _batches(_after(records(ix, start), progress.cursor), batch_size):
                    sink.write(batch)
                    for rec in batch:
                        counts["deletes" if rec.op == "delete" else "upserts"] += 1
                    tail = batch[-1]
                    progress = replace(progress, cursor=(tail.op or "upsert", tail.id))
                    progress.save(path)
                    if tick is not None:
                        tick("sync", counts["upserts"] + counts["deletes"], 0)
            else:
                resumed = False
            SyncState(applied_run=last, model=saved.model).save(path)
            held = _listed(sink) if verify or full else None
            if held is None and full:
                raise ConfigError(
                    f"full=True deletes what {_name(sink)} holds beyond the index, but this store cannot "
                    "list its records: clear it with the framework's own call, then sync again"
                )
            if held is not None:
                expected = {rec.id for rec in ix.records()}
                if full:
                    counts["deletes"] += _delete_strays(sink, sorted(set(held) - expected), batch_size)
                    held = _listed(sink) or []
                _check(held, expected, _name(sink), ix.store.path)
    report = SyncReport(start, last, counts["upserts"], counts["deletes"], resumed, str(path))
    if held is not None:
        report = replace(report, verified=True, store_records=len(held))
    return report


def _name(sink: Sink) -> str:
    name = getattr(sink, "name", None)
    return name if isinstance(name, str) else type(sink).__name__


def _listed(sink: Sink) -> list[str] | None:
    chunk_ids = getattr(sink, "chunk_ids", None)
    return chunk_ids() if callable(chunk_ids) else None


def _delete_strays(sink: Sink, ids: Sequence[str], batch_size: int) -> int:
    for batch in _batches(iter([ExportRecord.delete(cid) for cid in ids]), batch_size):
        sink.write(batch)
    return len(ids)


def _check(held: Sequence[str], expected: set[str], name: str, index: Path) -> None:
    """Raise unless the store holds one record per canonical of the index and no other."""
    counts = Counter(held)
    missing = sorted(expected - counts.keys())
    extra = sorted(counts.keys() - expected)
    twice = sorted(cid for cid, n in counts.items() if n > 1)
    if not (missing or extra or twice):
        return
    parts = [f"{len(held)} record(s) for the index's {len(expected)} canonical(s)"]
    for what, ids in (("missing", missing), ("not in the index", extra), ("held more than once", twice)):
        if ids:
            parts.append(f"{len(ids)} {what} (e.g. {', '.join(ids[:3])})")
    raise SyncError(
        f"{name} does not mirror {index} after sync: it holds {'; '.join(parts)}. Repair it with "
        "sync(..., full=True), which upserts every canonical again and deletes the records the index "
        "does not hold"
    )


def _key(rec: ExportRecord) -> tuple[int, str]:
    return (1 if rec.op == "delete" else 0, rec.id)


def _after(recs: Iterator[ExportRecord], cursor: tuple[str, str] | None) -> Iterator[ExportRecord]:
    """The records past ``cursor`` (the stream is ordered: upserts by id, then deletes by id)."""
    if cursor is None:
        yield from recs
        return
    done = (1 if cursor[0] == "delete" else 0, cursor[1])
    for rec in recs:
        if _key(rec) > done:
            yield rec


def _batches(recs: Iterator[ExportRecord], size: int) -> Iterator[list[ExportRecord]]:
    batch: list[ExportRecord] = []
    for rec in recs:
        batch.append(rec)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
