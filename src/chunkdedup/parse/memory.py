"""Documents given in memory (a framework's Documents, a program's records) as parsed documents: the
ids as given, the metadata typed as a manifest's, long pages split as a file's are."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from chunkdedup.errors import InputError, ParseError
from chunkdedup.normalize import bytes_hash, document_hash
from chunkdedup.parse.base import shown
from chunkdedup.parse.markdown import split_front_matter
from chunkdedup.parse.registry import split_page_text, typed_metadata
from chunkdedup.types import Document, Page

#: What the file path of an in-memory source starts with in the index (``memory:NAME``).
MEMORY_PREFIX = "memory:"


@dataclass(frozen=True, slots=True)
class InputRecord:
    """One document given in memory: its id, the text of each page (one for a plain text) and its
    metadata (``department``, ``family`` and ``effective_date`` are recognised, as in a manifest).

    Example:
        >>> InputRecord.of("policies/refunds.md", "Refunds within 30 days.", {"family": "refunds"}).pages
        ('Refunds within 30 days.',)
    """

    id: str
    pages: tuple[str, ...]
    metadata: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise InputError(f"an in-memory document needs a non-empty string id, got {shown(self.id)}")
        if isinstance(self.pages, str) or not isinstance(self.pages, tuple):
            raise InputError(
                f"document {shown(self.id)}: pages must be a tuple of page texts, got "
                f"{type(self.pages).__name__}; use InputRecord.of(id, text) for one text"
            )
        if not self.pages or not all(isinstance(p, str) for p in self.pages):
            raise InputError(f"document {shown(self.id)}: pages must be one or more strings")

    @classmethod
    def of(cls, id: str, text: str, metadata: Mapping[str, object] | None = None) -> InputRecord:
        """A one-page document."""
        return cls(id, (text,), dict(metadata or {}))


def source_path(name: str) -> str:
    """The file path the index keeps an in-memory source under (``memory:NAME``)."""
    path = MEMORY_PREFIX + name
    if not name.strip() or "/" in name or "\x00" in name:
        raise InputError(
            f"in-memory source name {shown(name)} must be a non-empty name without '/' (e.g. 'langchain')"
        )
    return path


def memory_documents(
    path: str, records: Iterable[InputRecord], max_page_chars: int
) -> tuple[tuple[Document, ...], tuple[str, ...]]:
    """The records as documents of the source ``path``, and notes (a record without text is left
    out, a long page split). A repeated id or a bad ``effective_date`` raises ``InputError``."""
    docs: list[Document] = []
    notes: list[str] = []
    seen: set[str] = set()
    for rec in records:
        if rec.id in seen:
            raise InputError(
                f"document id {shown(rec.id)} is given twice: give each document its own id "
                "(or its pages as one InputRecord)"
            )
        seen.add(rec.id)
        texts = [t.replace("\r\n", "\n").replace("\r", "\n") for t in rec.pages]
        metadata = dict(rec.metadata)
        if _is_markdown(rec) and texts and texts[0].startswith("---"):
            try:  # a loader's Markdown keeps its front matter in the text: metadata, as a file's is
                front, texts[0] = split_front_matter(texts[0])
            except ParseError as e:
                raise InputError(f"document {shown(rec.id)}: {e.reason}") from None
            metadata = {**front, **metadata}  # what the loader says of the document wins
        if not any(t.strip() for t in texts):
            notes.append(f"document {shown(rec.id)}: no text, left out")
            continue
        pages = _pages(rec.id, texts, max_page_chars, notes)
        try:
            typed = typed_metadata(metadata)
        except ParseError as e:
            raise InputError(f"document {shown(rec.id)}: {e.reason}") from None
        digest = json.dumps([rec.id, texts, typed.metadata], sort_keys=True, ensure_ascii=False)
        title = typed.metadata.get("title")
        docs.append(
            Document(
                doc_id=rec.id,
                path=path,
                pages=pages,
                content_hash=document_hash(bytes_hash(digest.encode("utf-8"))),
                metadata=typed.metadata,
                department=typed.department,
                family=typed.family,
                effective_date=typed.effective_date,
                title=" ".join(title.split())[:500] or None if isinstance(title, str) else None,
            )
        )
    return tuple(sorted(docs, key=lambda d: d.doc_id)), tuple(notes)


#: the metadata keys that name a loader Document's file (LangChain ``source``, LlamaIndex
#: ``file_path``/``file_name``, Haystack ``file_path``)
_FILE_KEYS = ("source", "file_path", "file_name")
_MARKDOWN = (".md", ".markdown")


def _is_markdown(rec: InputRecord) -> bool:
    """Whether a record is a Markdown file's text: its id or the file its metadata names ends so."""
    names = [rec.id, *(v for k in _FILE_KEYS if isinstance(v := rec.metadata.get(k), str))]
    return any(n.casefold().endswith(_MARKDOWN) for n in names)


def source_fingerprint(docs: Iterable[tuple[str, str]]) -> str:
    """What tells an unchanged source: its documents' ``(id, content hash)``, in id order."""
    return bytes_hash("\n".join(f"{d}\x00{h}" for d, h in sorted(docs)).encode("utf-8"))


def _pages(doc_id: str, texts: list[str], limit: int, notes: list[str]) -> tuple[Page, ...]:
    pages: list[Page] = []
    for number, text in enumerate(texts, start=1):
        parts = split_page_text(text, limit) if len(text) > limit else [text]
        if len(parts) > 1:
            notes.append(
                f"document {shown(doc_id)} page {number} has {len(text):,} characters, over "
                f"parse.max_page_chars ({limit:,}): split into {len(parts)} pages"
            )
        pages.extend(Page(len(pages) + 1, part) for part in parts)
    return tuple(pages)
