"""From a framework's in-memory Documents to deduplicated, cited ones: what the three ``Deduplicator``\\ s
share (the frameworks' classes only convert their Documents to :class:`Given` and back).

A call's Documents are some of one in-memory source of the index
(:func:`chunkdedup.ingestion.memory.ingest_records`): they are added or replace the documents of
their ids, and the source's other documents stay; removal is explicit (``remove``), or a call
says it gives the whole source (``full``). The frameworks' incremental patterns delete and re-add a
changed document's nodes by the document they belong to, so each canonical chunk belongs to one
document, its *owner*: the first (by doc id, page, offset) of the source's documents that cite it.
A call returns every canonical chunk owned by a document it touched (given, removed, or the owner
of a chunk a given or removed document cites, before or after the call): what a framework deletes
by document id, it gets back if it still stands.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkdedup.config import Config
from chunkdedup.errors import ConfigError, InputError
from chunkdedup.index import Index
from chunkdedup.ingestion.memory import ingest_records
from chunkdedup.ingestion.report import IngestReport
from chunkdedup.ingestion.sequence import IngestOptions
from chunkdedup.integrations._core import sources_json
from chunkdedup.parse.base import shown
from chunkdedup.parse.memory import InputRecord, source_path
from chunkdedup.query.records import Citation, ExportRecord

#: Metadata keys that number a framework Document's page (LangChain's PDF loaders: ``page``, from 0;
#: LlamaIndex's: ``page_label``); the pages of one document are ordered by it and it is not kept.
PAGE_KEYS = ("page", "page_label")
#: Metadata keys the Deduplicators set on the Documents they return.
OUT_KEYS = ("sources", "chunk_id", "source", "page", "docs", "family", "effective_date")


@dataclass(frozen=True, slots=True)
class Given:
    """A framework Document as the Deduplicator reads it: its own id, its text and its metadata."""

    id: str | None
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DedupOptions:
    """Where the Documents go: the index file, the source they form in it (one per collection of
    Documents), and the metadata key that names a Document's document (``None``: the framework's
    own id). A Document without that key falls back on its own id."""

    index: str | Path
    source: str
    id_key: str | None
    #: ``None``: the config the index was last built with (the defaults for a new index)
    config: Config | None = None
    #: the call's Documents are the whole source: the source's documents it does not give are removed
    full: bool = False
    #: Documents sharing an ``id_key`` value are the parts of one document only when each carries a
    #: page number (a converter that keeps only a file's base name makes two files one name); the
    #: text names the framework's fix
    parts_need_pages: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.index, Index):
            raise ConfigError("a Deduplicator writes to its index: pass the index path, not an open Index")
        source_path(self.source)  # a bad name fails here, not at the first call


@dataclass(frozen=True, slots=True)
class Owned:
    """A canonical chunk a call returns, with the place of its owner (the first of the source's
    documents that cite it) and the framework id of the owner's part that holds that place."""

    record: ExportRecord
    owner: Citation
    part_id: str


@dataclass(frozen=True, slots=True)
class Deduplicated:
    """What one call gave: the canonical chunks owned by the documents it touched (the given ones'
    first, in the given order, then the others' by doc id), the ids of the documents it formed and
    removed, the ids of canonicals it touched that no longer stand (for a store that is not told by
    document), the touched documents that own no canonical now (a store that cleans up by document
    must drop theirs: no returned chunk names them), and the ingest's report."""

    records: tuple[Owned, ...]
    doc_ids: tuple[str, ...]
    removed: tuple[str, ...]
    deleted: tuple[str, ...]
    emptied: tuple[str, ...]
    report: IngestReport


def deduplicate(given: Sequence[Given], opts: DedupOptions, *, remove: Sequence[str] = ()) -> Deduplicated:
    """Add or replace ``given`` in the source ``opts.source`` (all of it with ``opts.full``), remove
    the documents named in ``remove``, and read back the canonicals of the documents touched."""
    records, parts = to_records(given, opts.id_key, opts.parts_need_pages)
    ids = tuple(r.id for r in records)
    path = source_path(opts.source)
    given_ids = set(ids)
    gone, before = _before(opts, path, ids, remove)
    report = ingest_records(
        records,
        opts.index,
        source=opts.source,
        options=IngestOptions(config=opts.config),
        mode="replace" if opts.full else "upsert",
        remove=() if opts.full else gone,
    )
    touched = {*ids, *gone, *(owner.doc for _, owner in before)}
    with Index.open(opts.index) as ix:
        mine = frozenset(ix.store.documents.docs_of_file(path))
        still = _owned(ix.records_of([rec.id for rec, _ in before]), mine)
        now = _owned(ix.records_citing(ids), mine)
        touched.update(owner.doc for _, owner in (*still, *now))
        # a given document may have taken a chunk over: the owner it had without them is touched too
        touched.update(owner.doc for _, owner in _owned([r for r, _ in now], mine - given_ids))
        out = [o for o in _owned(ix.records_citing(sorted(touched & mine)), mine) if o[1].doc in touched]
    standing = {rec.id for rec, _ in still}
    deleted = tuple(sorted({rec.id for rec, _ in before} - standing))
    rank = {d: i for i, d in enumerate(ids)}
    out.sort(key=lambda o: (rank.get(o[1].doc, len(rank)), o[1].doc, o[1].page, o[1].start, o[0].id))
    done = tuple(Owned(rec, owner, _part(parts, owner)) for rec, owner in out)
    emptied = tuple(sorted(touched - {owner.doc for _, owner in out}))
    return Deduplicated(done, ids, tuple(gone), deleted, emptied, report)


def _before(
    opts: DedupOptions, path: str, ids: Sequence[str], remove: Sequence[str]
) -> tuple[list[str], list[tuple[ExportRecord, Citation]]]:
    """Before a call changes the source: the documents it removes (``remove``, or with ``opts.full``
    every stored one it does not give), and the canonicals the given and removed documents cite,
    each with its owner. Nothing for a source (or an index) that holds no documents yet."""
    gone = list(dict.fromkeys(remove))
    if not Path(opts.index).exists():
        return gone, []
    with Index.open(opts.index) as ix:
        stored = ix.store.documents.docs_of_file(path)
        if opts.full:
            given = set(ids)
            gone = [d for d in stored if d not in given]
        if not stored:
            return gone, []
        return gone, _owned(ix.records_citing([*ids, *gone]), frozenset(stored))


def _owned(records: Sequence[ExportRecord], mine: frozenset[str]) -> list[tuple[ExportRecord, Citation]]:
    """Each record one of the source's documents cites, with its owner: the first such source."""
    out = []
    for rec in records:
        ours = [s for s in rec.sources if s.doc in mine]
        if ours:
            out.append((rec, min(ours, key=lambda s: (s.doc, s.page, s.start))))
    return out


def _part(parts: Mapping[str, tuple[str, ...]], owner: Citation) -> str:
    """The framework id of the given part that holds the owner's page (its document's id when the
    call did not give it)."""
    ids = parts.get(owner.doc)
    if not ids:
        return owner.doc
    return ids[min(owner.page, len(ids)) - 1]


def to_records(
    given: Sequence[Given], id_key: str | None, parts_need_pages: str | None = None
) -> tuple[list[InputRecord], dict[str, tuple[str, ...]]]:
    """One record per document id, in first-seen order, and the framework ids of each one's parts.

    Documents with one id are its parts (pages), ordered by their page key when every one has a
    number (else as given); the same Document given twice counts once. Documents that share a
    framework id but not their text, and (``parts_need_pages``) Documents that share an ``id_key``
    value without page numbers, are an ``InputError``: two documents would silently become one.
    """
    pages: dict[str, list[tuple[int, Given]]] = {}
    by_key: dict[str, bool] = {}
    for pos, g in enumerate(given):
        doc, keyed = _doc_id(g, id_key, pos)
        parts = pages.setdefault(doc, [])
        if any(p.id == g.id and p.text == g.text and p.metadata == g.metadata for _, p in parts):
            continue
        parts.append((pos, g))
        by_key[doc] = keyed
    out = []
    part_ids: dict[str, tuple[str, ...]] = {}
    for doc, parts in pages.items():
        numbers = [_page_number(g.metadata) for _, g in parts]
        numbered = all(n is not None for n in numbers) and len(set(numbers)) == len(numbers)
        if len(parts) > 1 and not numbered:
            _refuse_shared(doc, parts, by_key[doc], parts_need_pages)
        if len(parts) > 1 and numbered:
            order = sorted(range(len(parts)), key=lambda i: (numbers[i], parts[i][0]))
            parts = [parts[i] for i in order]
        meta = {k: v for k, v in parts[0][1].metadata.items() if k not in PAGE_KEYS}
        out.append(InputRecord(doc, tuple(g.text for _, g in parts), meta))
        part_ids[doc] = tuple(g.id or doc for _, g in parts)
    return out, part_ids


def _refuse_shared(doc: str, parts: Sequence[tuple[int, Given]], keyed: bool, hint: str | None) -> None:
    """Documents that share an id and carry no page numbers: parts of one document, unless they are
    two documents under one name (a framework id given twice, or a base name)."""
    if keyed and hint is None:
        return
    where = [p for p, _ in parts[:5]]
    if keyed:
        raise InputError(
            f"{len(parts)} Documents (at positions {where}) share the document id {shown(doc)} and carry "
            f"no page number: they look like different files under one name. {hint}; or give each a "
            "distinct id (or page numbers, if they are the pages of one document). Nothing was ingested"
        )
    raise InputError(
        f"{len(parts)} Documents (at positions {where}) share the id {shown(doc)} with different texts: "
        "give each Document its own id (or one Document per document, its pages numbered). "
        "Nothing was ingested"
    )


def doc_key(g: Given, id_key: str | None) -> str:
    """A Document's document id (as :func:`to_records` reads it)."""
    return _doc_id(g, id_key, 0)[0]


def source_documents(opts: DedupOptions) -> dict[str, int]:
    """The documents the index holds of the source ``opts.source``, with their page counts."""
    if not Path(opts.index).exists():
        return {}
    with Index.open(opts.index) as ix:
        known = ix.store.documents.known_file(source_path(opts.source))
        return {doc: pages for _, doc, pages in known.documents}


def _doc_id(g: Given, id_key: str | None, pos: int) -> tuple[str, bool]:
    """A Document's document id, and whether it came from its ``id_key`` metadata."""
    value = g.metadata.get(id_key) if id_key is not None else None
    keyed = not (value is None or (isinstance(value, str) and not value.strip()))
    if not keyed:
        value = g.id
    if value is None or not str(value).strip():
        where = f"no {id_key!r} metadata and no id" if id_key is not None else "no id"
        raise InputError(
            f"Document {pos} has {where}: give each Document an id"
            + (f" or a {id_key!r} metadata value" if id_key is not None else "")
            + ", or name the key that holds it (id_key=...)"
        )
    return str(value), keyed


def _page_number(meta: Mapping[str, Any]) -> float | None:
    for key in PAGE_KEYS:
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value.strip().isdigit():
            return float(value)
    return None


def record_metadata(owned: Owned, *, flat: bool = False) -> dict[str, Any]:
    """A returned Document's metadata: every source (``sources``, as export writes them), the
    canonical id (``chunk_id``), the documents that hold it (``docs``), and top-level ``source`` and
    ``page`` (its owner's place, for prompt templates and the frameworks' clean-up by source), with
    the owner's ``family`` and ``effective_date`` when it has them (for a version-aware safety net).
    ``flat``: ``sources`` and ``docs`` as JSON text, for stores that take scalar metadata only."""
    rec, first = owned.record, owned.owner
    sources = sources_json(rec.sources)
    docs = list(dict.fromkeys(s.doc for s in rec.sources))
    meta: dict[str, Any] = {
        "sources": json.dumps(sources, sort_keys=True) if flat else sources,
        "chunk_id": rec.id,
        "source": first.doc,
        "page": first.page,
        "docs": json.dumps(docs) if flat else docs,
    }
    for key in ("family", "effective_date"):
        if first.metadata.get(key) is not None:
            meta[key] = first.metadata[key]
    return meta


def index_state(index: str | Path) -> int | None:
    """The index's last finished run (``None`` before its first): what a call's output depends on
    besides its Documents, for a framework that caches a transformation's output by its input."""
    if not Path(index).exists():
        return None
    with Index.open(index) as ix:
        return ix.last_finished_run()
