"""The sink every framework's ``sync`` writes through: store records, texts embedded only when changed.

A :class:`Driver` knows one store: what it holds under some ids, how to put and delete records, and
the canonical id of every record it holds (for the check after a sync). :class:`MirrorSink` builds on
it: for each upsert it asks the store what it holds under that id; a record whose text the store
already holds keeps the store's vector (a metadata update, no embedding), the others are embedded in
one call per batch; where the store's put does not replace an id, the old record is deleted first.
After each put it reads one written record back and refuses a store that dropped a field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from chunkdedup.errors import SyncError
from chunkdedup.integrations._records import StoreForm, StoreRecord
from chunkdedup.integrations._sync import SyncReport
from chunkdedup.query.records import ExportRecord

Vector = Sequence[float]
#: Embeds the texts of records (a framework's embeddings object, wrapped), one vector per record.
Embed = Callable[[Sequence[StoreRecord]], Sequence[Vector]]


@dataclass(frozen=True, slots=True)
class Stored:
    """What a store holds under one id: its text, its vector (``None`` when the store does not
    return it) and its metadata keys."""

    text: str
    vector: Vector | None
    keys: frozenset[str]


@dataclass(frozen=True, slots=True)
class Put:
    """A record to write, with its vector (``None``: the store embeds it itself)."""

    record: StoreRecord
    vector: Vector | None


class Driver:
    """One store as the sink writes to it. ``upserts``: its put replaces a record of the same id;
    ``reads``: :meth:`fetch` sees what the store holds (else it returns nothing, and written records
    are not read back)."""

    form: StoreForm
    upserts: bool = False
    reads: bool = True

    def fetch(self, ids: Sequence[str]) -> dict[str, Stored]:
        """What the store holds under each of ``ids`` that it has."""
        raise NotImplementedError

    def put(self, rows: Sequence[Put]) -> None:
        """Write ``rows``; raise unless the store took every one."""
        raise NotImplementedError

    def delete(self, ids: Sequence[str]) -> None:
        """Delete ``ids`` (ids the store does not hold are no error)."""
        raise NotImplementedError

    def chunk_ids(self) -> list[str] | None:
        """The ``chunk_id`` of every record the store holds, one entry per record, or ``None`` when
        the store cannot list its records (then a sync is not checked)."""
        return None


class MirrorSink:
    """A :class:`~chunkdedup.integrations._sync.Sink` over a :class:`Driver`; counts what it embedded
    (``embedded`` texts in ``embed_calls`` calls) and the records that kept their vector (``kept``)."""

    def __init__(self, driver: Driver, embed: Embed | None, *, store_embeds: bool = False) -> None:
        self.driver = driver
        self.embed = embed
        self.store_embeds = store_embeds
        self.embedded = 0
        self.embed_calls = 0
        self.kept = 0

    def counted(self, report: SyncReport) -> SyncReport:
        """``report`` with what this sink embedded and kept."""
        return replace(report, embedded=self.embedded, embed_calls=self.embed_calls, kept_vectors=self.kept)

    @property
    def name(self) -> str:
        return self.driver.form.name

    def chunk_ids(self) -> list[str] | None:
        return self.driver.chunk_ids()

    def write(self, batch: Sequence[ExportRecord]) -> None:
        form = self.driver.form
        ups = [StoreRecord.of(r, form) for r in batch if r.op != "delete"]
        gone = [form.store_id(r.id) for r in batch if r.op == "delete"]
        if ups:
            held = self.driver.fetch([u.id for u in ups])
            rows = self._vectors(ups, held)
            if not self.driver.upserts:  # a store that cannot be read: delete every id first
                self.driver.delete([u.id for u in ups if u.id in held or not self.driver.reads])
            self.driver.put(rows)
            if self.driver.reads:
                self._check_fields(ups[0])
        if gone:
            self.driver.delete(gone)

    def _vectors(self, ups: Sequence[StoreRecord], held: dict[str, Stored]) -> list[Put]:
        """Each upsert with the store's vector when its text is unchanged, else a new embedding."""
        vectors: dict[str, Vector | None] = {}
        fresh = []
        for u in ups:
            old = held.get(u.id)
            if old is not None and old.vector is not None and old.text == u.text:
                vectors[u.id] = old.vector
            else:
                fresh.append(u)
        self.kept += len(ups) - len(fresh)
        if fresh and self.embed is not None:
            new = list(self.embed(fresh))
            self.embed_calls += 1
            self.embedded += len(fresh)
            if len(new) != len(fresh):
                raise SyncError(
                    f"the embedder returned {len(new)} vectors for {len(fresh)} texts while syncing "
                    f"{self.name}: nothing of this batch was written; check the embeddings object"
                )
            vectors.update((u.id, v) for u, v in zip(fresh, new, strict=True))
        elif fresh and self.store_embeds:  # the store's put embeds them, in one call
            self.embed_calls += 1
            self.embedded += len(fresh)
        return [Put(u, vectors.get(u.id)) for u in ups]

    def _check_fields(self, sample: StoreRecord) -> None:
        """Refuse a store that lost the record or one of its metadata keys."""
        back = self.driver.fetch([sample.id]).get(sample.id)
        if back is None:
            raise SyncError(
                f"{self.name} does not hold {sample.id} right after writing it: the batch stays "
                "unapplied; check the store's connection and collection"
            )
        sent = sample.metadata(self.driver.form.shape)
        lost = {k for k, v in sent.items() if v is not None} - back.keys
        if lost:
            raise SyncError(
                f"{self.name} dropped the metadata field(s) {', '.join(sorted(lost))} of {sample.id}: "
                "the store does not keep them in this form; nothing of this batch is recorded as synced"
            )
