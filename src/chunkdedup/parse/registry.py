"""The parser contract, the suffix -> parser map, and ``parse_file`` built on them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

from chunkdedup.config import ParseConfig
from chunkdedup.errors import ParseError
from chunkdedup.normalize import bytes_hash, document_hash
from chunkdedup.parse.base import (
    SHOWN_CHARS,
    Extracted,
    Keep,
    Parser,
    RecordParser,
    meta_value,
    parse_date,
    shown,
)
from chunkdedup.types import Document, FileStatus, MetaValue, Page, ParsedFile

if TYPE_CHECKING:
    from chunkdedup.parse.discover import InputFile

_HASH_BLOCK = 1 << 20


def parser_for(suffix: str, config: ParseConfig | None = None) -> Parser:
    """The parser for a file suffix; an unknown suffix is read as plain text. ``config`` reaches the
    parsers that read it (PDF: OCR).

    Example:
        >>> type(parser_for(".MD")).__name__
        'MarkdownParser'
    """
    # Imports are local so that reading text files never loads pdfium or selectolax.
    match suffix.lower():
        case ".pdf":
            from chunkdedup.parse.pdf import PdfParser

            return PdfParser(config)
        case ".html" | ".htm" | ".xhtml":
            from chunkdedup.parse.html import HtmlParser

            return HtmlParser()
        case ".md" | ".markdown":
            from chunkdedup.parse.markdown import MarkdownParser

            return MarkdownParser()
        case ".jsonl" | ".ndjson" | ".json-lines":
            from chunkdedup.parse.jsonl import JsonlParser

            return JsonlParser()
        case ".parquet":
            from chunkdedup.parse.parquet import ParquetParser

            return ParquetParser()
        case _:
            from chunkdedup.parse.text import TextParser

            return TextParser()


#: the formats written for a screen, not a printed page: their text has no page a running line recurs on
SCREEN_SUFFIXES = frozenset({".html", ".htm", ".xhtml", ".md", ".markdown"})


def from_print(path: str) -> bool:
    """Whether a file's text may come from printed pages (PDF, text, records of converted filings), so
    a short line recurring through a page at regular intervals can be a running header or footer
    (:func:`chunkdedup.text.boilerplate.strip`'s ``unpaged``); HTML and Markdown have no printed pages,
    and what recurs through one of their pages is its own (a code line, a parameter list's first item).

    Example:
        >>> from_print("filings/10-K.txt"), from_print("docs/fs.html"), from_print("a.jsonl#r1")
        (True, False, True)
    """
    return Path(path.split("#", 1)[0]).suffix.lower() not in SCREEN_SUFFIXES


@dataclass(frozen=True, slots=True)
class TypedMetadata:
    """Metadata as JSON scalars, with the recognised keys also as typed values."""

    metadata: dict[str, MetaValue]
    department: str | None = None
    family: str | None = None
    effective_date: date | None = None


def typed_metadata(raw: Mapping[str, object]) -> TypedMetadata:
    """Convert metadata to JSON scalars and type the recognised keys; a bad date raises ``ParseError``."""
    meta = {str(k): meta_value(v) for k, v in raw.items()}
    when = parse_date(raw.get("effective_date"))
    if when is not None:
        meta["effective_date"] = when.isoformat()
    department = raw.get("department")
    family = raw.get("family")
    return TypedMetadata(
        metadata=meta,
        department=None if department is None else str(meta["department"]),
        family=None if family is None else str(meta["family"]),
        effective_date=when,
    )


def file_hash(path: Path) -> str:
    """``normalize.bytes_hash`` of a file's bytes, read in blocks so large files are not held in memory.

    The blocks are read into one buffer (unbuffered, straight from the file): a new block each read
    was fresh memory the kernel zeroed and mapped, page by page (an incremental run of a 67 MB corpus
    that changed nothing took 18k page faults, 16k of them for its blocks)."""
    digest = xxhash.xxh3_128()
    block = bytearray(_HASH_BLOCK)
    view = memoryview(block)
    with path.open("rb", buffering=0) as f:
        while n := f.readinto(block):
            digest.update(view[:n])
    return str(digest.hexdigest())


def input_fingerprint(inp: InputFile) -> str:
    """What decides whether an input is unchanged: its bytes, its document id and its manifest metadata
    (so reclassifying a file in the manifest re-ingests it, and a filter sees the new metadata).

    ``"<hash of all three>.<hash of the id and metadata>"``: the second part (:func:`input_context`)
    tells a changed file whose id and metadata are unchanged, whose unchanged records need not be
    parsed again.
    """
    extra = json.dumps([inp.doc_id, dict(inp.metadata)], sort_keys=True, default=str)
    whole = bytes_hash(f"{file_hash(inp.path)}\x00{extra}".encode())
    return f"{whole}.{bytes_hash(extra.encode())[:16]}"


def input_context(fingerprint: str | None) -> str | None:
    """The id-and-metadata part of an :func:`input_fingerprint` (``None``: none, or an older index's
    fingerprint without it)."""
    if fingerprint is None:
        return None
    return fingerprint.partition(".")[2] or None


def parse_file(inp: InputFile, config: ParseConfig, keep: Keep | None = None) -> ParsedFile:
    """Parse one input file; bad content gives a ``skipped`` or ``failed`` result, never an exception.

    ``keep`` (a multi-record format only, see :class:`~chunkdedup.parse.base.RecordParser`) names the
    records the index holds exactly as they would be built: they are listed in ``kept``, not built.

    Example:
        >>> result = parse_file(inp, ParseConfig())  # doctest: +SKIP
        >>> result.status, [d.doc_id for d in result.documents]  # doctest: +SKIP
        ('ingested', ['policies/refunds.md'])
    """
    path = str(inp.path)
    try:
        size = inp.path.stat().st_size
        if size > config.max_file_bytes:
            return ParsedFile(
                path,
                (),
                FileStatus.SKIPPED,
                f"file is {size:,} bytes, over parse.max_file_bytes ({config.max_file_bytes:,}); "
                "raise parse.max_file_bytes in the config to read it",
            )
        data = inp.path.read_bytes()
    except OSError as e:
        return ParsedFile(path, (), FileStatus.FAILED, f"cannot read the file: {e}")
    if not data or data.isspace():
        return ParsedFile(path, (), FileStatus.SKIPPED, "empty file")
    try:
        parser = parser_for(inp.path.suffix, config)
        if keep is not None and isinstance(parser, RecordParser):
            extraction = parser.parse_known(data, keep)
        else:
            extraction = parser.parse(data)
        whole = bytes_hash(data)
        split_notes: list[str] = []
        documents = tuple(
            record_document(inp, split_long_pages(ex, config.max_page_chars, split_notes), whole)
            for ex in extraction.documents
        )
        prefix = record_prefix(inp)  # _record_doc_id, for each of a file's (many) records
        kept = tuple(prefix + rid for rid in extraction.kept)
        order = tuple(prefix + rid for rid in extraction.order) if kept else ()
    except ParseError as e:
        return ParsedFile(path, (), FileStatus.SKIPPED if e.skipped else FileStatus.FAILED, e.reason)
    except RecursionError:
        return ParsedFile(path, (), FileStatus.FAILED, "the file is nested too deeply to parse")
    except Exception as e:
        # One odd file must not stop a run over thousands; the reason keeps the error for a bug report.
        return ParsedFile(
            path, (), FileStatus.FAILED, f"unexpected {type(e).__name__} while parsing: {e} (please report)"
        )
    if not kept and not any(page.text.strip() for doc in documents for page in doc.pages):
        return ParsedFile(path, (), FileStatus.SKIPPED, "no text found in the file")
    notes = extraction.notes + tuple(split_notes)
    return ParsedFile(path, documents, FileStatus.INGESTED, notes=notes, kept=kept, order=order)


def split_page_text(text: str, limit: int) -> list[str]:
    """``text`` cut into parts of at most ``limit`` characters, each cut at the last paragraph break,
    else line break, else space in the second half of its window (a hard cut when there is none).
    Linear in ``len(text)``; ``"".join(parts) == text``.

    Example:
        >>> split_page_text("aaaa\\n\\nbbbb cc", 8)
        ['aaaa\\n\\n', 'bbbb cc']
    """
    parts: list[str] = []
    start = 0
    while len(text) - start > limit:
        end = start + limit
        floor = start + limit // 2
        cut = -1
        for sep in ("\n\n", "\n", " "):
            at = text.rfind(sep, floor, end)
            if at >= 0:
                cut = at + len(sep)
                break
        if cut <= start:
            cut = end
        parts.append(text[start:cut])
        start = cut
    parts.append(text[start:])
    return parts


def split_long_pages(ex: Extracted, limit: int, notes: list[str]) -> Extracted:
    """Pages over ``limit`` characters split into several (numbered on from there), with a note.

    Chunking, boilerplate and the store's offsets work page by page; one page of many megabytes would
    cost time and memory that grow faster than its size.
    """
    if all(len(p.text) <= limit for p in ex.pages):
        return ex
    pages: list[Page] = []
    for page in ex.pages:
        if len(page.text) <= limit:
            pages.append(replace(page, number=len(pages) + 1))
            continue
        parts = split_page_text(page.text, limit)
        first = len(pages) + 1
        at = 0
        for part in parts:  # the parts are the text, in order: each takes the links within it
            end = at + len(part)
            links = tuple((s - at, e - at) for s, e in page.links if at <= s and e <= end)
            pages.append(Page(len(pages) + 1, part, page.has_text_layer, page.ocr_confidence, links))
            at = end
        if len(parts) > 1:
            which = f"record {_shown_id(ex.record_id)} " if ex.record_id is not None else ""
            notes.append(
                f"{which}page {page.number} has {len(page.text):,} characters, over parse.max_page_chars "
                f"({limit:,}): split into pages {first}-{first + len(parts) - 1}"
                + ("; later pages are numbered on from there" if page is not ex.pages[-1] else "")
            )
    return replace(ex, pages=tuple(pages))


def _shown_id(rid: str) -> str:
    """A record id as a note names it: as written, or cut (:func:`~chunkdedup.parse.base.shown`) when long."""
    return rid if len(rid) <= SHOWN_CHARS else shown(rid)


def record_prefix(inp: InputFile) -> str:
    """What the document ids of a multi-record file's records start with (then the record id)."""
    return f"{inp.doc_id}#"


def _record_doc_id(inp: InputFile, record_id: str) -> str:
    return record_prefix(inp) + record_id


def record_document(inp: InputFile, ex: Extracted, whole_hash: str) -> Document:
    """The document of what a parser extracted from ``inp`` (``whole_hash``: the file's content hash,
    for a document without its own)."""
    # The manifest is the operator's explicit statement about a file, so it wins over the file itself.
    typed = typed_metadata({**ex.metadata, **inp.metadata})
    return Document(
        doc_id=inp.doc_id if ex.record_id is None else _record_doc_id(inp, ex.record_id),
        path=str(inp.path),
        pages=ex.pages,
        content_hash=document_hash(ex.content_hash or whole_hash),
        metadata=typed.metadata,
        department=typed.department,
        family=typed.family,
        effective_date=typed.effective_date,
        title=_title(typed.metadata.get("title"), ex.title),
    )


def _title(meta_title: MetaValue, found: str | None) -> str | None:
    """A metadata ``title`` (manifest or front matter) wins over the one the format carries."""
    text = (str(meta_title) if isinstance(meta_title, str) else found or "").strip()
    return " ".join(text.split())[:500] or None
