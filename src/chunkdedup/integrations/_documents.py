"""From a framework's in-memory Documents to deduplicated, cited ones: what the three ``Deduplicator``\\ s
share (the frameworks' classes only convert their Documents to :class:`Given` and back).

A call's Documents are one in-memory source of the index (:func:`chunkdedup.ingestion.memory.ingest_records`):
the new and changed ones are ingested, the unchanged ones left as they are, and those of the source
the call no longer gives are removed. The result is every canonical chunk a given Document cites,
with all its sources (those of other sources and files of the index too).
"""

from __future__ import annotations

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
    config: Config = field(default_factory=Config)

    def __post_init__(self) -> None:
        if isinstance(self.index, Index):
            raise ConfigError("a Deduplicator writes to its index: pass the index path, not an open Index")
        source_path(self.source)  # a bad name fails here, not at the first call


@dataclass(frozen=True, slots=True)
class Deduplicated:
    """What one call gave: the canonical chunks the Documents cite (ordered by their first cited
    place among the Documents), the ids of the documents they formed, and the ingest's report."""

    records: tuple[ExportRecord, ...]
    doc_ids: tuple[str, ...]
    report: IngestReport


def deduplicate(given: Sequence[Given], opts: DedupOptions) -> Deduplicated:
    """Ingest ``given`` as the source ``opts.source`` and read back the canonicals they cite."""
    records = to_records(given, opts.id_key)
    options = IngestOptions(config=opts.config)
    report = ingest_records(records, opts.index, source=opts.source, options=options)
    ids = tuple(r.id for r in records)
    return Deduplicated(cited(opts.index, ids), ids, report)


def to_records(given: Sequence[Given], id_key: str | None) -> list[InputRecord]:
    """One record per document id, in first-seen order: Documents with one id are its pages, ordered
    by their page key when every one has a number (else as given)."""
    pages: dict[str, list[tuple[int, Given]]] = {}
    for pos, g in enumerate(given):
        doc = _doc_id(g, id_key, pos)
        pages.setdefault(doc, []).append((pos, g))
    out = []
    for doc, parts in pages.items():
        numbers = [_page_number(g.metadata) for _, g in parts]
        if len(parts) > 1 and all(n is not None for n in numbers):
            order = sorted(range(len(parts)), key=lambda i: (numbers[i], parts[i][0]))
            parts = [parts[i] for i in order]
        meta = {k: v for k, v in parts[0][1].metadata.items() if k not in PAGE_KEYS}
        out.append(InputRecord(doc, tuple(g.text for _, g in parts), meta))
    return out


def _doc_id(g: Given, id_key: str | None, pos: int) -> str:
    value = g.metadata.get(id_key) if id_key is not None else None
    if value is None or (isinstance(value, str) and not value.strip()):
        value = g.id
    if value is None or not str(value).strip():
        where = f"no {id_key!r} metadata and no id" if id_key is not None else "no id"
        raise InputError(
            f"Document {pos} has {where}: give each Document an id"
            + (f" or a {id_key!r} metadata value" if id_key is not None else "")
            + ", or name the key that holds it (id_key=...)"
        )
    return str(value)


def _page_number(meta: Mapping[str, Any]) -> float | None:
    for key in PAGE_KEYS:
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and value.strip().isdigit():
            return float(value)
    return None


def cited(index: str | Path, doc_ids: Sequence[str]) -> tuple[ExportRecord, ...]:
    """The index's canonicals with a source among ``doc_ids``, by their first such source's place
    (the documents in the given order, then page and offset); read through those documents' sources
    (:meth:`~chunkdedup.index.Index.records_citing`), not the whole index."""
    rank = {d: i for i, d in enumerate(doc_ids)}
    found: list[tuple[tuple[int, int, int, str], ExportRecord]] = []
    with Index.open(index) as ix:
        for rec in ix.records_citing(doc_ids):
            mine = [s for s in rec.sources if s.doc in rank]
            if mine:
                first = min(mine, key=lambda s: (rank[s.doc], s.page, s.start))
                found.append(((rank[first.doc], first.page, first.start, rec.id), rec))
    return tuple(rec for _, rec in sorted(found, key=lambda f: f[0]))


def record_metadata(rec: ExportRecord, doc_ids: Sequence[str]) -> dict[str, Any]:
    """A returned Document's metadata: every source (``sources``, as export writes them), the
    canonical id (``chunk_id``), the documents that hold it (``docs``), and top-level ``source`` and
    ``page`` (its first place among the given documents, for prompt templates), with that document's
    ``family`` and ``effective_date`` when it has them (for a version-aware safety net)."""
    first = _first(rec.sources, {d: i for i, d in enumerate(doc_ids)})
    meta: dict[str, Any] = {
        "sources": sources_json(rec.sources),
        "chunk_id": rec.id,
        "source": first.doc if first else None,
        "page": first.page if first else None,
        "docs": list(dict.fromkeys(s.doc for s in rec.sources)),
    }
    if first is not None:
        for key in ("family", "effective_date"):
            if first.metadata.get(key) is not None:
                meta[key] = first.metadata[key]
    return meta


def _first(sources: Sequence[Citation], rank: Mapping[str, int]) -> Citation | None:
    mine = [s for s in sources if s.doc in rank]
    if mine:
        return min(mine, key=lambda s: (rank[s.doc], s.page, s.start))
    return sources[0] if sources else None
