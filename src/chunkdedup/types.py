"""Frozen, slotted records that flow through the pipeline.

files --parse--> Document(pages) --boilerplate--> clean pages (DocumentKeys, StrippedLine) --chunk--> Chunk
      --exact--> KeyedChunk --> KeyedDocument (what the store keeps of a document)
      --cluster--> CanonicalChunk(text, sources=(ChunkRef, ...))

Provenance is a typed field (``CanonicalChunk.sources``), never a metadata key. A query answers with
hits (``Hit``) whose citations (``Citation``) name the sources that passed its filter; an export
writes one ``ExportRecord`` per canonical. Each of those has ``to_json()``: exactly what the CLI prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from typing import Any, Literal

MetaValue = str | int | float | bool | None
Relation = Literal["exact", "near", "semantic"]
Scope = Literal["running", "chrome"]
ExportOp = Literal["upsert", "delete"]
#: The modes a config field chooses among (each checked with its message in ``config.py``).
OcrMode = Literal["auto", "require", "off"]
Linkage = Literal["complete", "leader"]
RetrieverName = Literal["auto", "bm25", "vector", "hybrid"]
VectorIndexMode = Literal["auto", "exact", "ann"]
VersionPolicy = Literal["latest", "label", "all"]
#: Whose words a hit shows: ``source``, those of its first citation (the copy that placed it: the
#: words the caller's question and filter picked); ``canonical``, the canonical text whenever its
#: source is cited (else the placing copy's). Either way every cited source whose words differ
#: carries its own (:attr:`Citation.text`).
Words = Literal["source", "canonical"]
#: The filter keys a document has as fields of its own (every other ``--where`` key is a metadata key).
DOCUMENT_FIELDS = ("doc", "department", "family", "effective_date")


class FileStatus(StrEnum):
    """The one outcome every input file ends in."""

    INGESTED = "ingested"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Page:
    """One page of extracted text; ``number`` counts from 1.

    ``ocr_confidence`` is set on a page read by OCR (a scanned page: no text layer, or a garbled
    one): Tesseract's mean word confidence in [0, 1].

    ``links``: the ``(start, end)`` character spans of the link texts in the page's navigation blocks
    (a block the HTML parser found made mostly of links: a nav bar, a "previous / next topic" box),
    in order. Boilerplate keys such a block by its template, its link texts masked, so chrome that
    differs from page to page only in the pages it links to is one key.
    """

    number: int
    text: str
    has_text_layer: bool = True
    ocr_confidence: float | None = None
    links: tuple[tuple[int, int], ...] = ()

    @property
    def ocr(self) -> bool:
        """True when the page's text was read by OCR."""
        return self.ocr_confidence is not None


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed input document.

    ``department``, ``family`` and ``effective_date`` are the recognised metadata keys; every
    other key lives in ``metadata`` (the recognised ones are repeated there so filters see all).
    """

    doc_id: str
    path: str
    pages: tuple[Page, ...]
    content_hash: str
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)
    department: str | None = None
    family: str | None = None
    effective_date: date | None = None
    title: str | None = None

    @property
    def unit(self) -> str:
        """The unit boilerplate document frequency counts: the family when known, else the document."""
        return f"family:{self.family}" if self.family else f"doc:{self.doc_id}"


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """What parsing one input file gave: documents, or a reason it gave none.

    A JSONL file gives one document per line; other formats give at most one.
    ``status`` is ``ingested`` when documents were produced (``notes`` may still name pages
    without a text layer), else ``skipped`` or ``failed`` with a ``reason``.
    """

    path: str
    documents: tuple[Document, ...]
    status: FileStatus
    reason: str | None = None
    notes: tuple[str, ...] = ()
    #: ids of documents the index holds exactly as this parse would build them (JSONL records whose
    #: bytes, line and input are unchanged): not built again, left as they are stored
    kept: tuple[str, ...] = ()
    #: every document id in file order, when some are ``kept`` (else the ``documents``' ids)
    order: tuple[str, ...] = ()

    @property
    def doc_ids(self) -> tuple[str, ...]:
        """The file's document ids in file order, built and kept."""
        return self.order or tuple(d.doc_id for d in self.documents)


@dataclass(frozen=True, slots=True)
class FileResult:
    """The report line of one input file after an ingest run."""

    path: str
    status: FileStatus
    doc_ids: tuple[str, ...] = ()
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class StrippedLine:
    """One line removed from one page, with the reason (scope) and its boilerplate key."""

    page: int
    line: str
    key: str
    scope: Scope


@dataclass(frozen=True, slots=True)
class DocumentKeys:
    """A document's boilerplate keys: those it counts, and every key
    :func:`~chunkdedup.text.boilerplate.strip` could remove in it.

    ``candidates`` enter the corpus document frequency. ``strippable`` (a superset) are the keys of
    its counted blocks and of every line on a page edge: a line that sits on one edge only is not
    counted by this document, but it is stripped here once the corpus makes its key chrome, so a
    change of the chrome set that touches ``strippable`` must re-strip the document.
    """

    candidates: frozenset[str]
    strippable: frozenset[str]


@dataclass(frozen=True, slots=True)
class BoilerplateKey:
    """A key that is stripped: example text, how many units and pages carry it, and why."""

    key: str
    example: str
    scope: Scope
    doc_count: int
    page_count: int
    forced: bool = False


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of a cleaned page: ``text == clean_page_text[start:end]``."""

    doc_id: str
    page: int
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """Where a canonical chunk's text occurs, and how it was matched to the canonical."""

    doc_id: str
    page: int
    start: int
    end: int
    relation: Relation = "exact"
    similarity: float = 1.0

    @property
    def order(self) -> tuple[str, int, int]:
        """The tie rule: the smallest (doc_id, page, start) represents a canonical."""
        return (self.doc_id, self.page, self.start)


@dataclass(frozen=True, slots=True)
class CanonicalChunk:
    """One indexed text with every place it came from."""

    id: str
    text: str
    sources: tuple[ChunkRef, ...]

    @property
    def copies(self) -> int:
        return len(self.sources)


@dataclass(frozen=True, slots=True)
class KeyedChunk:
    """A chunk with its exact key and the id of the canonical it belongs to."""

    chunk: Chunk
    key: str
    canonical_id: str

    @property
    def ref(self) -> ChunkRef:
        c = self.chunk
        return ChunkRef(c.doc_id, c.page, c.start, c.end, "exact", 1.0)


@dataclass(frozen=True, slots=True)
class KeyedDocument:
    """One document after boilerplate stripping, chunking and exact keys: what the index stores of it."""

    doc_id: str
    clean: tuple[Page, ...]
    keyed: tuple[KeyedChunk, ...]
    stripped: tuple[StrippedLine, ...]


@dataclass(frozen=True, slots=True)
class ContextSource:
    """What a document's context is made from: its id, file, metadata, title, stripped running lines
    and its first page's text (as parsed: its header fields)."""

    doc_id: str
    path: str
    metadata: Mapping[str, MetaValue]
    title: str | None = None
    running: tuple[str, ...] = ()
    first_page: str = ""


@dataclass(frozen=True, slots=True)
class Citation:
    """One source of a hit that passed the filter: the same fields as export's ``sources``.

    ``effective_date`` and ``superseded_by`` come from the document's family (``None`` when it has
    none, or when no newer version within the filter exists).

    ``text`` is this source's own words when they are not the words shown with it (a near or
    semantic copy of the shown text, or the canonical a near copy joined): a citation never vouches
    for words its source does not hold. ``differs`` names the words that differ from the shown text
    (``+word`` only in this source, ``-word`` only in the shown text; casefolded, at most 20).
    Both are empty for a source whose words are the shown ones. ``ocr_confidence`` is set when the
    source's page was read by OCR (export and ``show`` write ``ocr: true`` with it).
    """

    doc: str
    page: int
    start: int
    end: int
    relation: Relation
    similarity: float
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)
    effective_date: str | None = None
    superseded_by: str | None = None
    text: str | None = None
    differs: tuple[str, ...] = ()
    ocr_confidence: float | None = None

    @property
    def own_words(self) -> bool:
        """True when this source holds other words than the ones shown with it."""
        return self.text is not None

    def to_json(self) -> dict[str, Any]:
        """Exactly the fields of an export source; ``text`` and ``differs`` only for a source whose
        words are not the shown ones."""
        out: dict[str, Any] = {
            "doc": self.doc,
            "page": self.page,
            "start": self.start,
            "end": self.end,
            "relation": self.relation,
            "similarity": self.similarity,
            "metadata": dict(self.metadata),
        }
        if self.text is not None:
            out["text"] = self.text
            out["differs"] = list(self.differs)
        if self.ocr_confidence is not None:
            out["ocr"] = True
            out["ocr_confidence"] = self.ocr_confidence
        return out

    def note(self, shown: Citation) -> str:
        """How this source's words relate to the words shown (those of ``shown``), for a person:
        ``""`` when they are its own, else e.g. "near copy (0.878) of the text shown, from
        docs/aapl.pdf p.32; differs in: -apple +amazon.com,"."""
        if self.text is None:
            return ""
        words = " ".join(self.differs) if self.differs else "case, spacing or generated ids only"
        if self.relation != "exact" and shown.relation == "exact":
            how = f"{self.relation} copy ({self.similarity:.3f}) of the text shown, from"
        elif self.relation != "exact":  # both joined one canonical: the similarities are to it
            how = (
                f"{self.relation} copy ({self.similarity:.3f}) of the canonical the text shown"
                f" ({shown.similarity:.3f}) also joined, from"
            )
        else:
            how = f"the text shown is its {shown.relation} copy ({shown.similarity:.3f}), from"
        return f"{how} {shown.doc} p.{shown.page}; differs in: {words}"


@dataclass(frozen=True, slots=True)
class Hit:
    """One returned passage: ``score`` is the retriever's, at full precision (higher is better).

    ``effective_date``/``superseded_by`` describe the newest cited version holding the text; they are
    filled whenever the cited documents carry dates (the ``label`` policy prints them next to the text).
    """

    rank: int
    score: float
    id: str
    text: str
    citations: tuple[Citation, ...]
    effective_date: str | None = None
    superseded_by: str | None = None

    def to_json(self, *, label: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "score": self.score,
            "id": self.id,
            "text": self.text,
            "citations": [c.to_json() for c in self.citations],
        }
        if label:
            out["effective_date"] = self.effective_date
            out["superseded_by"] = self.superseded_by
        return out


@dataclass(frozen=True, slots=True)
class ExportRecord:
    """One line of ``export``: a canonical chunk with every source (``Citation`` without the version
    fields), or, in a ``--changes-since`` delta, an id to delete.

    ``op`` is ``None`` in a full export (the JSON then has no ``op`` key), ``upsert`` or ``delete``
    in a delta; a delete carries only its ``id``.
    """

    id: str
    text: str | None
    sources: tuple[Citation, ...] = ()
    op: ExportOp | None = None

    @classmethod
    def delete(cls, chunk_id: str) -> ExportRecord:
        return cls(chunk_id, None, (), "delete")

    def to_json(self) -> dict[str, Any]:
        """The JSONL line of this record (written with sorted keys)."""
        if self.op == "delete":
            return {"op": "delete", "id": self.id}
        sources = [s.to_json() for s in self.sources]
        out: dict[str, Any] = {"id": self.id, "text": self.text, "sources": sources}
        if self.op is not None:
            out["op"] = self.op
        return out


@dataclass(frozen=True, slots=True)
class KnownFile:
    """What an index holds of an input file: its content hash (``None``: none), so an unchanged file
    is only hashed, and its documents, so a changed JSONL or Parquet file's unchanged records are not
    keyed again (they are not stored again either).

    ``documents`` holds ``(content hash, doc id, pages)`` of each of the file's documents, by doc id,
    as the store reads them: what a changed file is compared with (:meth:`document_hashes`, the
    records known by their bytes) is made from them for a changed file only, not for the unchanged
    ones that are most of an incremental run's files.
    """

    content_hash: str | None = None
    documents: tuple[tuple[str, str, int], ...] = ()

    def document_hashes(self) -> frozenset[str]:
        """The content hashes of the file's documents."""
        return frozenset(row[0] for row in self.documents)


@dataclass(frozen=True, slots=True)
class GroupRow:
    """What clustering needs of a group: its text, its order, its cluster. ``text`` is None where the
    reader held the group's exact key already and left the text unread (a million groups' texts are
    most of a cluster pass's memory)."""

    id: str
    text: str | None
    order: tuple[str, int, int]
    canonical_id: str


@dataclass(frozen=True, slots=True)
class Assignment:
    """The decided cluster of one group."""

    group_id: str
    canonical_id: str
    relation: str
    similarity: float
    differing: tuple[str, ...] = ()
