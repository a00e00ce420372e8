"""What each page of the web view shows, as typed records built from the store's read API.

No web framework here: each ``*_page`` function takes an open :class:`~chunkdedup.index.Index`
and the request's parameters and returns a frozen record with ``to_json()`` (the ``?format=json``
body); the templates render the same record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard, get_args

from chunkdedup.config import QueryConfig
from chunkdedup.errors import ConfigError
from chunkdedup.index import (
    CanonicalRow,
    DocumentFacets,
    DocumentRow,
    FileProblem,
    Index,
    IndexStats,
    KeySummary,
    Kind,
    MergeRow,
    Order,
    PairRow,
    RunRow,
    Slice,
    SourceRow,
    StatusCount,
    StrippedRow,
    VariantRow,
)
from chunkdedup.query import QueryResult, search
from chunkdedup.query.records import Dropped
from chunkdedup.types import VersionPolicy
from chunkdedup.web.text import ContextLine, Segment, Span, Word, key_lines, layout, word_diff

#: Pages of a document shown at once, and boilerplate documents whose context a key shows.
DOCUMENT_PAGES = 10
CONTEXT_DOCS = 5
#: The pages of one document searched for a key's lines, and the pages of context shown per document.
CONTEXT_SCAN_PAGES = 50
CONTEXT_PAGES = 2
VARIANTS = 50
STEPS = ("versions", "dedup_chunks", "cap", "mmr", "rank")


@dataclass(frozen=True, slots=True)
class Funnel:
    """Chunks before and after each dedup tier."""

    raw_chunks: int
    after_exact: int
    canonical_chunks: int
    exact_merged: int
    near_merged: int
    variant_pairs: int

    def to_json(self) -> dict[str, Any]:
        return {"raw_chunks": self.raw_chunks, "after_exact": self.after_exact,
                "canonical_chunks": self.canonical_chunks, "exact_merged": self.exact_merged,
                "near_merged": self.near_merged, "variant_pairs": self.variant_pairs}

    def share(self, n: int) -> float:
        """``n`` as a share of the raw chunks (for the funnel bars)."""
        return n / self.raw_chunks if self.raw_chunks else 0.0


@dataclass(frozen=True, slots=True)
class OverviewPage:
    """``/``: the funnel, files and documents by status, problems with reasons, size and engine."""

    index: str
    funnel: Funnel
    documents: int
    pages: int
    pages_without_text: int
    lines_running: int
    lines_chrome: int
    boilerplate_keys: int
    index_bytes: int
    text_engine: str
    text_pending: int | None
    #: the command that moves the index to tantivy, when it is on fts5 with enough texts that
    #: tantivy answers much faster (:meth:`Index.slow_text_engine`); else None
    tantivy_command: str | None
    files: tuple[StatusCount, ...]
    states: tuple[StatusCount, ...]
    problems: Slice[FileProblem]
    runs: tuple[RunRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "funnel": self.funnel.to_json(),
            "documents": self.documents,
            "pages": self.pages,
            "pages_without_text": self.pages_without_text,
            "lines_stripped": {"running": self.lines_running, "chrome": self.lines_chrome},
            "boilerplate_keys": self.boilerplate_keys,
            "index_bytes": self.index_bytes,
            "text_engine": {"name": self.text_engine, "pending": self.text_pending,
                            "tantivy_command": self.tantivy_command},
            "files": [s.to_json() for s in self.files],
            "document_states": [s.to_json() for s in self.states],
            "problems": self.problems.to_json(),
            "runs": [r.to_json() for r in self.runs],
        }


def overview_page(
    ix: Index, *, limit: int, offset: int, stats: IndexStats | None = None
) -> OverviewPage:
    """``stats``: :meth:`Index.stats` of this index, when the caller keeps it (without the counts the
    last write stored, it counts whole tables)."""
    stats = ix.stats() if stats is None else stats
    views = ix.views
    engine = stats.text_engine
    slow = ix.slow_text_engine(stats.after_exact)
    funnel = Funnel(stats.raw_chunks, stats.after_exact, stats.canonical_chunks,
                    stats.exact_merged, stats.near_merged, stats.variant_pairs)
    return OverviewPage(
        str(ix.store.path), funnel, stats.documents, stats.pages, stats.pages_without_text,
        stats.lines_running, stats.lines_chrome, stats.boilerplate_keys,
        stats.index_bytes, engine.name, engine.pending,
        slow.command if slow else None, views.file_statuses(),
        views.document_states(), views.problems(limit=limit, offset=offset), views.runs(limit=5),
    )


@dataclass(frozen=True, slots=True)
class DocumentsPage:
    """``/documents``: the documents a page at a time, sorted by a column (``sort``, ``descending``),
    kept by state, family, department or words of their id or title, with the facets to pick from."""

    state: str | None
    documents: Slice[DocumentRow]
    facets: DocumentFacets
    family: str | None = None
    department: str | None = None
    text: str | None = None
    sort: str = "doc"
    descending: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state, "family": self.family, "department": self.department, "q": self.text,
            "sort": self.sort, "descending": self.descending, "facets": self.facets.to_json(),
            "documents": self.documents.to_json(),
        }


def documents_page(
    ix: Index, *, limit: int, offset: int, state: str | None, family: str | None = None,
    department: str | None = None, text: str | None = None, sort: str = "doc", descending: bool = False,
) -> DocumentsPage:
    found = ix.views.documents(
        limit=limit, offset=offset, state=state, family=family, department=department, text=text,
        sort=sort, descending=descending,
    )
    return DocumentsPage(
        state, found, ix.views.document_facets(), family, department, text, sort, descending
    )


@dataclass(frozen=True, slots=True)
class BoilerplatePage:
    """``/boilerplate``: every stripped key with its counts, scope and an example."""

    keys: Slice[KeySummary]

    def to_json(self) -> dict[str, Any]:
        return {"keys": self.keys.to_json()}


def boilerplate_page(
    ix: Index, *, limit: int, offset: int, keys: Sequence[KeySummary] | None = None
) -> BoilerplatePage:
    """``keys``: ``ix.views.boilerplate()``, when the caller keeps it."""
    every = ix.views.boilerplate() if keys is None else keys
    return BoilerplatePage(Slice(tuple(every[offset : offset + limit]), len(every), limit, offset))


@dataclass(frozen=True, slots=True)
class KeyContext:
    """Where a key was stripped on one page: its lines with the raw lines around them."""

    doc_id: str
    page: int
    lines: tuple[ContextLine, ...]

    def to_json(self) -> dict[str, Any]:
        return {"doc": self.doc_id, "page": self.page, "lines": [ln.to_json() for ln in self.lines]}


@dataclass(frozen=True, slots=True)
class KeyPage:
    """``/boilerplate/{khash}``: a key per scope, its documents, and its lines in page context."""

    khash: int
    summaries: tuple[KeySummary, ...]
    documents: Slice[StrippedRow]
    contexts: tuple[KeyContext, ...]

    def to_json(self) -> dict[str, Any]:
        return {"khash": self.khash, "scopes": [s.to_json() for s in self.summaries],
                "documents": self.documents.to_json(), "contexts": [c.to_json() for c in self.contexts]}


def key_page(ix: Index, khash: int, *, limit: int, offset: int) -> KeyPage | None:
    """None when no document has the key stripped."""
    views = ix.views
    summaries = views.key(khash)
    if not summaries:
        return None
    docs = views.key_documents(khash, limit=limit, offset=offset)
    contexts: list[KeyContext] = []
    for row in docs.items[:CONTEXT_DOCS]:
        found = 0
        for page in views.pages(row.doc_id, first=1, limit=CONTEXT_SCAN_PAGES):
            lines = key_lines(page.raw_text, page.clean_text, khash)
            if lines:
                contexts.append(KeyContext(row.doc_id, page.page, lines))
                found += 1
                if found >= CONTEXT_PAGES:
                    break
    return KeyPage(khash, summaries, docs, tuple(contexts))


@dataclass(frozen=True, slots=True)
class PageView:
    """One page of a document: its segments (stripped lines, chunks) and its chunks' rows."""

    page: int
    has_text: bool
    segments: tuple[Segment, ...]
    aligned: bool
    chunks: tuple[SourceRow, ...]
    ocr_confidence: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"page": self.page, "has_text": self.has_text, "aligned": self.aligned,
                "ocr": self.ocr_confidence is not None, "ocr_confidence": self.ocr_confidence,
                "segments": [s.to_json() for s in self.segments],
                "chunks": [c.to_json() for c in self.chunks]}


@dataclass(frozen=True, slots=True)
class DocumentPage:
    """``/documents/{doc_id}``: a run of pages from ``first``, the keys stripped from the document."""

    document: DocumentRow
    first: int
    pages: tuple[PageView, ...]
    next_first: int | None
    prev_first: int | None
    stripped: tuple[StrippedRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {"document": self.document.to_json(), "first": self.first, "next_first": self.next_first,
                "pages": [p.to_json() for p in self.pages], "stripped": [s.to_json() for s in self.stripped]}


def document_page(ix: Index, doc_id: str, *, first: int, limit: int) -> DocumentPage | None:
    views = ix.views
    doc = views.document(doc_id)
    if doc is None:
        return None
    stripped = views.stripped(doc_id)
    scopes: dict[int, str] = {s.khash: s.scope for s in stripped}
    shown: list[PageView] = []
    for p in views.pages(doc_id, first=first, limit=limit):
        chunks = views.page_chunks(doc_id, p.page)
        spans = [Span(c.start, c.end, c.canonical_id, c.relation) for c in chunks]
        segments, ok = layout(p.raw_text, p.clean_text, spans, scopes)
        shown.append(PageView(p.page, p.has_text, segments, ok, chunks, p.ocr_confidence))
    last = shown[-1].page if shown else first
    more = bool(views.pages(doc_id, first=last + 1, limit=1)) if shown else False
    prev = max(1, first - limit) if first > 1 else None
    return DocumentPage(doc, first, tuple(shown), last + 1 if more else None, prev, stripped)


@dataclass(frozen=True, slots=True)
class MergedCopy:
    """An exact-key group merged into a canonical, its words marked where they differ from it."""

    group: MergeRow
    words: tuple[Word, ...]

    def to_json(self) -> dict[str, Any]:
        out = self.group.to_json()
        out["changed_words"] = [w.text for w in self.words if w.changed]
        return out


@dataclass(frozen=True, slots=True)
class Version:
    """A canonical kept apart by a guard: both texts with their differing words marked
    (``changed_words`` in the other text, ``this_changed_words`` in this one: a version that only
    drops words has none of the first)."""

    variant: VariantRow
    this_words: tuple[Word, ...]
    other_words: tuple[Word, ...]

    def to_json(self) -> dict[str, Any]:
        out = self.variant.to_json()
        out["changed_words"] = [w.text for w in self.other_words if w.changed]
        out["this_changed_words"] = [w.text for w in self.this_words if w.changed]
        return out


@dataclass(frozen=True, slots=True)
class ChunkPage:
    """``/chunks/{canonical_id}``: text, every source, merged copies and guard variants."""

    canonical: CanonicalRow
    sources: Slice[SourceRow]
    copies: Slice[MergedCopy]
    versions: tuple[Version, ...]

    def to_json(self) -> dict[str, Any]:
        return {"canonical": self.canonical.to_json(), "sources": self.sources.to_json(),
                "merged": self.copies.to_json(), "variants": [v.to_json() for v in self.versions]}


def chunk_page(ix: Index, canonical_id: str, *, limit: int, offset: int) -> ChunkPage | None:
    views = ix.views
    row = views.canonical(canonical_id)
    if row is None:
        return None
    groups = views.groups(canonical_id, limit=limit, offset=0)
    copies = tuple(MergedCopy(g, word_diff(row.text, g.text)[1]) for g in groups.items)
    versions = []
    for v in views.variants(canonical_id, limit=VARIANTS):
        mine, theirs = word_diff(row.text, v.other_text)
        versions.append(Version(v, mine, theirs))
    return ChunkPage(
        row,
        views.sources(canonical_id, limit=limit, offset=offset),
        Slice(copies, groups.total, groups.limit, groups.offset),
        tuple(versions),
    )


@dataclass(frozen=True, slots=True)
class QueryForm:
    """The options of ``chunkdedup query``, as the query page's form holds them."""

    q: str
    where: tuple[str, ...] = ()
    versions: str = "latest"
    retriever: str = "auto"
    safety_net: bool = True
    k: int = 5

    def to_json(self) -> dict[str, Any]:
        return {"q": self.q, "where": list(self.where), "versions": self.versions,
                "retriever": self.retriever, "safety_net": self.safety_net, "k": self.k}


@dataclass(frozen=True, slots=True)
class StepDrops:
    """The candidates one step of the query dropped, each with why."""

    step: str
    dropped: tuple[Dropped, ...]

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "dropped": [d.to_json() for d in self.dropped]}


@dataclass(frozen=True, slots=True)
class QueryPage:
    """``/query``: the form, and (when asked) the hits and what each step dropped and why."""

    form: QueryForm
    result: QueryResult | None
    steps: tuple[StepDrops, ...]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"form": self.form.to_json(), "error": self.error}
        if self.result is not None:
            out["result"] = self.result.to_json(explain=True)
            out["steps"] = [s.to_json() for s in self.steps]
        return out


def _is_policy(value: str) -> TypeGuard[VersionPolicy]:
    return value in get_args(VersionPolicy)


def query_page(ix: Index, form: QueryForm, config: QueryConfig | None = None) -> QueryPage:
    """Run the query the form describes with the library's ``search`` (as ``query --explain``).

    A bad option (an unknown retriever, a malformed filter) raises ``ConfigError``.
    """
    if not form.q.strip():
        return QueryPage(form, None, ())
    if not _is_policy(form.versions):
        raise ConfigError(f"versions must be latest, label or all, got {form.versions!r}")
    result = search(
        ix, form.q, k=form.k, where=list(form.where), versions=form.versions,
        safety_net=form.safety_net, retriever=form.retriever, config=config,
    )
    steps = tuple(
        StepDrops(step, tuple(d for d in result.dropped if d.step == step)) for step in STEPS
        if any(d.step == step for d in result.dropped)
    )
    return QueryPage(form, result, steps)


REVIEW_REASONS = ("number", "order", "negation", "modality", "ordinal", "reference", "qualifier", "name",
                  "content", "doubt", "override")


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """A pair of the review queue, both texts with the words that differ marked."""

    pair: PairRow
    a_words: tuple[Word, ...]
    b_words: tuple[Word, ...]

    def to_json(self) -> dict[str, Any]:
        return self.pair.to_json()


@dataclass(frozen=True, slots=True)
class ReviewPage:
    """The review queue (``/review``): merges nearest the threshold or in the largest clusters, or the
    pairs a guard kept apart (``reason`` keeps one reason), each with its decision."""

    kind: Kind
    order: Order
    reason: str | None
    pairs: Slice[ReviewItem]
    doc: str | None = None
    family: str | None = None
    similarity: tuple[float | None, float | None] = (None, None)  # the range kept, either end open
    text: str | None = None  # the words either text holds

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "order": self.order, "reason": self.reason, "doc": self.doc,
                "family": self.family, "min_similarity": self.similarity[0],
                "max_similarity": self.similarity[1], "q": self.text, "pairs": self.pairs.to_json()}


def review_page(
    ix: Index, *, kind: Kind, order: Order, reason: str | None, limit: int, offset: int,
    doc: str | None = None, family: str | None = None,
    similarity: tuple[float | None, float | None] = (None, None), text: str | None = None,
) -> ReviewPage:
    found = ix.review.pairs(
        kind, order=order, reason=reason, limit=limit, offset=offset, doc=doc, family=family,
        similarity=similarity, text=text,
    )
    items = []
    for p in found.items:
        a_words, b_words = word_diff(p.a_text, p.b_text)
        items.append(ReviewItem(p, a_words, b_words))
    listed = Slice(tuple(items), found.total, found.limit, found.offset)
    return ReviewPage(kind, order, reason, listed, doc, family, similarity, text)
