"""The sink every framework's ``sync`` writes through: store records, texts embedded only when changed.

A :class:`Driver` knows one store: what it holds under some ids, how to put and delete records, and
the canonical id of every record it holds (for the check after a sync). :class:`MirrorSink` builds on
it: for each upsert it asks the store what it holds under that id; a record whose text the store
already holds keeps the store's vector (a metadata update, no embedding), the others are embedded in
one call per batch; where the store's put does not replace an id, the old record is deleted first.
Given the index's own vectors (:mod:`~chunkdedup.integrations._index_vectors`: the store's model is
the index's), a changed text takes its stored vector instead of an embedding. After each put it reads
one written record back and refuses a store that dropped a field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from chunkdedup.errors import SyncError
from chunkdedup.integrations._index_vectors import IndexVectors
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
    are not read back); ``takes_vectors``: :meth:`put` writes a given vector (else the store embeds
    every record itself)."""

    form: StoreForm
    upserts: bool = False
    reads: bool = True
    takes_vectors: bool = True

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
    (``embedded`` texts in ``embed_calls`` calls), the records that kept their vector (``kept``) and
    those written with the index's stored vector (``from_index``).

    ``index_vectors``: the index's vectors to use for a changed text (``None``: embed it). When they
    were forced on a model not known to be the index's, ``probe`` (default ``embed``) embeds one text
    before the first write, so a model of another dimension is refused before the store holds both.
    """

    def __init__(
        self,
        driver: Driver,
        embed: Embed | None,
        *,
        store_embeds: bool = False,
        index_vectors: IndexVectors | None = None,
        probe: Embed | None = None,
    ) -> None:
        self.driver = driver
        self.embed = embed
        self.store_embeds = store_embeds
        self.index_vectors = index_vectors
        self.probe = probe or embed
        self._probed = index_vectors is None or index_vectors.same_model
        self.embedded = 0
        self.embed_calls = 0
        self.kept = 0
        self.from_index = 0

    def counted(self, report: SyncReport) -> SyncReport:
        """``report`` with what this sink embedded and kept."""
        return replace(
            report,
            embedded=self.embedded,
            embed_calls=self.embed_calls,
            kept_vectors=self.kept,
            index_vectors=self.from_index,
        )

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
        """Each upsert with the store's vector when its text is unchanged, else the index's stored
        vector (when the sink has them), else a new embedding."""
        vectors: dict[str, Vector | None] = {}
        fresh = []
        for u in ups:
            old = held.get(u.id)
            if old is not None and old.vector is not None and old.text == u.text:
                vectors[u.id] = old.vector
            else:
                fresh.append(u)
        self.kept += len(ups) - len(fresh)
        if fresh and self.index_vectors is not None:
            fresh = self._from_index(fresh, held, vectors)
        if fresh and self.embed is not None:
            new = self._embed(fresh)
            if self.index_vectors is not None:  # the store holds the index's vectors beside these
                for u, v in zip(fresh, new, strict=True):
                    self.index_vectors.check_dim(len(v), f"the embedding of {u.chunk_id}")
            vectors.update((u.id, v) for u, v in zip(fresh, new, strict=True))
        elif fresh and self.store_embeds:  # the store's put embeds them, in one call
            self.embed_calls += 1
            self.embedded += len(fresh)
        return [Put(u, vectors.get(u.id)) for u in ups]

    def _embed(self, records: Sequence[StoreRecord], embed: Embed | None = None) -> list[Vector]:
        """One embedding call, counted; raises unless it gave one vector per record."""
        chosen = embed or self.embed
        assert chosen is not None
        new = list(chosen(records))
        self.embed_calls += 1
        self.embedded += len(records)
        if len(new) != len(records):
            raise SyncError(
                f"the embedder returned {len(new)} vectors for {len(records)} texts while syncing "
                f"{self.name}: nothing of this batch was written; check the embeddings object"
            )
        return new

    def _from_index(
        self, fresh: Sequence[StoreRecord], held: dict[str, Stored], vectors: dict[str, Vector | None]
    ) -> list[StoreRecord]:
        """Give each of ``fresh`` that the index holds a vector for that vector; the rest, to embed.
        Refuses (before anything of the batch is written) a store or a model of another dimension."""
        iv = self.index_vectors
        assert iv is not None
        for sid, old in held.items():
            if old.vector is not None:
                iv.check_dim(len(old.vector), f"{self.name}'s vector of {sid}")
        if not self._probed and self.probe is not None:
            iv.check_dim(len(self._embed(fresh[:1], self.probe)[0]), "the store's embeddings")
        self._probed = True
        stored = iv.of([u.chunk_id for u in fresh])
        rest = []
        for u in fresh:
            if u.chunk_id in stored:
                vectors[u.id] = stored[u.chunk_id]
            else:
                rest.append(u)
        self.from_index += len(fresh) - len(rest)
        return rest

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
