"""The rows an index is read as: one frozen, typed record per thing a reader asks for.

:class:`~chunkdedup.store.index.IndexReader` (and so :class:`chunkdedup.index.Index`) and the paginated
reads of :mod:`~chunkdedup.store.views` return these, and every face (the CLI, the web view, the
integrations, the evaluation, the export) reads them. Each row has typed attributes and ``to_json()``;
reading it as a mapping (``row["key"]``, ``dict(row)``) gives its ``to_json()`` fields, so code that read
the dicts ``Index`` once returned (``ix.stats()["canonical_chunks"]``, ``d["doc"]``) reads them unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from chunkdedup.types import MetaValue, Relation, Scope


class JsonRow(Mapping[str, Any]):
    """A row that reads as the mapping of its ``to_json()`` fields (read-only)."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_json())

    def __len__(self) -> int:
        return len(self.to_json())


class _Jsonable(Protocol):
    def to_json(self) -> dict[str, Any]: ...


T = TypeVar("T", bound=_Jsonable)


@dataclass(frozen=True, slots=True)
class Slice(Generic[T]):
    """One page of a longer list: the rows, how many there are in all, and where this page starts."""

    items: tuple[T, ...]
    total: int
    limit: int
    offset: int

    @property
    def next_offset(self) -> int | None:
        end = self.offset + len(self.items)
        return end if end < self.total else None

    @property
    def prev_offset(self) -> int | None:
        return max(0, self.offset - self.limit) if self.offset > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "items": [i.to_json() for i in self.items],
            "total": self.total,
            "limit": self.limit,
            "offset": self.offset,
        }


@dataclass(frozen=True, slots=True)
class StatusCount(JsonRow):
    """How many input files ended in one status (ingested, unchanged, skipped, failed)."""

    status: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "count": self.count}


@dataclass(frozen=True, slots=True)
class FacetCount:
    """How many documents hold one value of a field (a family, a department)."""

    value: str
    count: int

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "count": self.count}


@dataclass(frozen=True, slots=True)
class DocumentFacets:
    """The documents table's facets: the most common families and departments, with their counts."""

    families: tuple[FacetCount, ...]
    departments: tuple[FacetCount, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "families": [f.to_json() for f in self.families],
            "departments": [d.to_json() for d in self.departments],
        }


@dataclass(frozen=True, slots=True)
class FileProblem(JsonRow):
    """An input file that was skipped or failed, with the reason the ingest gave."""

    path: str
    status: str
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "status": self.status, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RunRow(JsonRow):
    """One ingest run: when, and how it ended."""

    id: int
    started: str
    finished: str | None
    status: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "started": self.started, "finished": self.finished, "status": self.status}


@dataclass(frozen=True, slots=True)
class DocumentRow(JsonRow):
    """One indexed document: where it came from, its pages, its state and metadata."""

    doc_id: str
    path: str
    title: str | None
    pages: int
    state: str
    family: str | None
    department: str | None
    effective_date: str | None
    metadata: Mapping[str, MetaValue] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "doc": self.doc_id,
            "path": self.path,
            "title": self.title,
            "pages": self.pages,
            "state": self.state,
            "family": self.family,
            "department": self.department,
            "effective_date": self.effective_date,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True)
class PageText(JsonRow):
    """A page as parsed and as stripped (``clean_text`` is the raw text where stripping changed nothing);
    ``ocr_confidence`` is set on a page read by OCR."""

    page: int
    has_text: bool
    raw_text: str
    clean_text: str
    ocr_confidence: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"page": self.page, "has_text": self.has_text, "raw_text": self.raw_text,
                "clean_text": self.clean_text, "ocr": self.ocr_confidence is not None,
                "ocr_confidence": self.ocr_confidence}


@dataclass(frozen=True, slots=True)
class SourceRow(JsonRow):
    """One chunk of a document: its span of a clean page, its exact-key group and its canonical
    (``ocr_confidence``: its page was read by OCR; read for a canonical's sources)."""

    doc_id: str
    page: int
    start: int
    end: int
    group_id: str
    canonical_id: str
    relation: Relation
    similarity: float
    ocr_confidence: float | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "doc": self.doc_id,
            "page": self.page,
            "start": self.start,
            "end": self.end,
            "group": self.group_id,
            "canonical": self.canonical_id,
            "relation": self.relation,
            "similarity": self.similarity,
        }
        if self.ocr_confidence is not None:
            out |= {"ocr": True, "ocr_confidence": self.ocr_confidence}
        return out


@dataclass(frozen=True, slots=True)
class StrippedRow(JsonRow):
    """A boilerplate key stripped from one document: scope, pages and lines, the first page's text."""

    doc_id: str
    khash: int
    scope: Scope
    pages: int
    lines: int
    example: str

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.doc_id, "khash": self.khash, "scope": self.scope, "pages": self.pages,
                "lines": self.lines, "example": self.example}


@dataclass(frozen=True, slots=True)
class KeySummary(JsonRow):
    """A stripped boilerplate key over the corpus: documents, pages and lines, and an example."""

    khash: int
    key: str
    scope: Scope
    documents: int
    pages: int
    lines: int
    example: str

    def to_json(self) -> dict[str, Any]:
        return {"khash": self.khash, "key": self.key, "scope": self.scope, "documents": self.documents,
                "pages": self.pages, "lines": self.lines, "example": self.example}


@dataclass(frozen=True, slots=True)
class CanonicalRow(JsonRow):
    """A canonical chunk's text, its number of sources and the run that last changed it."""

    id: str
    text: str
    n_sources: int
    updated_run: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "sources": self.n_sources, "updated_run": self.updated_run}


@dataclass(frozen=True, slots=True)
class MergeRow(JsonRow):
    """An exact-key group of a canonical: how it joined (exact leader, near, semantic), its copies."""

    group_id: str
    relation: Relation
    similarity: float
    differing: tuple[str, ...]
    copies: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group_id, "relation": self.relation, "similarity": self.similarity,
                "differing": list(self.differing), "copies": self.copies, "text": self.text}


@dataclass(frozen=True, slots=True)
class VariantRow(JsonRow):
    """A canonical kept apart from another by a guard: its text, the tokens or words differing, and
    why (``number`` for the number/date guard, else the meaning guard's reason)."""

    other_id: str
    other_text: str
    similarity: float
    differing: tuple[str, ...]
    reason: str = "number"

    def to_json(self) -> dict[str, Any]:
        return {"other": self.other_id, "text": self.other_text, "similarity": self.similarity,
                "differing": list(self.differing), "reason": self.reason}




@dataclass(frozen=True, slots=True)
class FamilyCounts(JsonRow):
    """Per document family: canonical chunks kept, exact-key groups merged as near or semantic copies,
    and groups kept apart from a near neighbour by a guard (versions)."""

    family: str
    kept: int
    near: int
    semantic: int
    variant: int

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "kept": self.kept, "near": self.near, "semantic": self.semantic,
                "variant": self.variant}


@dataclass(frozen=True, slots=True)
class TextEngine(JsonRow):
    """The BM25 engine (``fts5`` or ``tantivy``); for tantivy, the changes its folder still lacks and the
    folder's size in bytes."""

    name: str
    pending: int | None = None
    folder_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        if self.pending is None and self.folder_bytes is None:
            return {"name": self.name}
        return {"name": self.name, "pending": self.pending, "folder_bytes": self.folder_bytes}


@dataclass(frozen=True, slots=True)
class SlowTextEngine(JsonRow):
    """An index on FTS5 with enough texts that tantivy answers a question much faster: how many texts,
    and the command that moves it to tantivy."""

    texts: int
    command: str

    def to_json(self) -> dict[str, Any]:
        return {"texts": self.texts, "command": self.command}


@dataclass(frozen=True, slots=True)
class IndexStats(JsonRow):
    """What an index holds, in counts a person can act on: documents, pages, stripped lines, chunks
    before and after each dedup tier, and the newest finished run (the ``--changes-since`` watermark)."""

    documents: int
    pending_documents: int
    pages: int
    pages_without_text: int
    lines_running: int
    lines_chrome: int
    boilerplate_keys: int
    raw_chunks: int
    after_exact: int
    canonical_chunks: int
    variant_pairs: int
    index_bytes: int
    last_run: int | None
    text_engine: TextEngine

    @property
    def exact_merged(self) -> int:
        return self.raw_chunks - self.after_exact

    @property
    def near_merged(self) -> int:
        return self.after_exact - self.canonical_chunks

    @property
    def exact_share_removed(self) -> float:
        return round(self.exact_merged / self.raw_chunks, 6) if self.raw_chunks else 0.0

    @property
    def near_share_removed(self) -> float:
        return round(self.near_merged / self.raw_chunks, 6) if self.raw_chunks else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "pending_documents": self.pending_documents,
            "pages": self.pages,
            "pages_without_text": self.pages_without_text,
            "lines_stripped": {"running": self.lines_running, "chrome": self.lines_chrome},
            "boilerplate_keys": self.boilerplate_keys,
            "raw_chunks": self.raw_chunks,
            "after_exact": self.after_exact,
            "canonical_chunks": self.canonical_chunks,
            "exact_merged": self.exact_merged,
            "near_merged": self.near_merged,
            "exact_share_removed": self.exact_share_removed,
            "near_share_removed": self.near_share_removed,
            "variant_pairs": self.variant_pairs,
            "index_bytes": self.index_bytes,
            "last_run": self.last_run,
            "text_engine": self.text_engine.to_json(),
        }
