"""PDF text extraction with pypdfium2, one ``Page`` per PDF page; scanned pages read by OCR."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium

from chunkdedup.config import ParseConfig
from chunkdedup.errors import ParseError
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.ocr import KEPT_GARBLED, NOT_READ, PageOcr, PageReader, garbled
from chunkdedup.types import Page

NO_TEXT_LAYER = "no text layer on any page (scanned PDF?)"
ENCRYPTED = "encrypted PDF: decrypt it first (e.g. qpdf --decrypt) and re-run"
DAMAGED = "the file is damaged or not a PDF"


def clean_page_text(raw: str) -> str:
    """Normalise pdfium's page text: ``\\r\\n`` and ``\\r`` become ``\\n``, trailing spaces go.

    Example:
        >>> clean_page_text("Revenue  \\r\\nTotal\\r")
        'Revenue\\nTotal\\n'
    """
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    return "\n".join(line.rstrip(" \t") for line in text.split("\n"))


class PdfParser:
    """PDF files through pdfium. A page without a text layer, or with a garbled one, is read by OCR
    (``[parse] ocr``, see :mod:`chunkdedup.parse.ocr`); one OCR cannot read is kept empty and noted.

    ``reader`` replaces Tesseract as the OCR engine.
    """

    def __init__(self, config: ParseConfig | None = None, reader: PageReader | None = None) -> None:
        self.config = config if config is not None else ParseConfig()
        self.reader = reader

    def parse(self, data: bytes) -> Extraction:
        """Extract the text of every page; raise ``ParseError`` for encrypted or damaged files."""
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as e:
            if "password" in str(e).lower():
                raise ParseError(ENCRYPTED) from None
            raise ParseError(_damaged(e)) from None
        try:
            with PageOcr(self.config, self.reader) as ocr:
                read = tuple(_page(pdf, i, ocr) for i in range(len(pdf)))
            title = _title(pdf)
        finally:
            pdf.close()
        if not read:
            raise ParseError("the PDF has no pages", skipped=True)
        pages = tuple(r.page for r in read)
        if not any(p.has_text_layer or p.ocr for p in pages):
            why = f": {ocr.unavailable}" if ocr.unavailable else ""
            raise ParseError(NO_TEXT_LAYER + why, skipped=True)
        return Extraction(documents=(Extracted(pages=pages, title=title),), notes=_notes(read, ocr))


@dataclass(frozen=True, slots=True)
class _Read:
    """A page as read, and how: ``layer`` is ``text``, ``none`` or ``garbled``; ``failed`` says why
    OCR could not read a page it was given; ``blank``: a white page without a text layer (no engine
    was given it); ``wordless``: a page without a text layer that OCR read no words on."""

    page: Page
    layer: str
    failed: str | None = None
    blank: bool = False
    wordless: bool = False


def _title(pdf: Any) -> str | None:
    """The document's title metadata, when it has one (a damaged info dictionary gives none)."""
    try:
        title = pdf.get_metadata_value("Title")
    except (pdfium.PdfiumError, KeyError, ValueError):
        return None
    return str(title).strip() or None if title else None


def _damaged(error: Exception) -> str:
    return f"{str(error).rstrip('.')}: {DAMAGED}"


def _page(pdf: Any, index: int, ocr: PageOcr) -> _Read:
    number = index + 1
    try:
        page = pdf[index]
    except pdfium.PdfiumError as e:
        raise ParseError(f"page {number}: {_damaged(e)}") from None
    try:
        text = _text_layer(page, number)
        layer = "none" if not text.strip() else "garbled" if garbled(text) else "text"
        if layer == "text":
            return _Read(Page(number=number, text=text), layer)
        try:
            found = ocr.read_page(page)
        except (pdfium.PdfiumError, RuntimeError) as e:
            return _Read(Page(number=number, text=text, has_text_layer=False), layer, str(e))
    finally:
        page.close()
    if found is None:  # OCR is off or cannot run: the page as it is
        return _Read(Page(number=number, text=text, has_text_layer=layer != "none"), layer)
    ocr_text = clean_page_text(found.text).strip("\n")
    if not ocr_text and layer == "none":
        empty = Page(number=number, text="", has_text_layer=False)
        return _Read(empty, layer, blank=not found.engine, wordless=found.engine)
    return _Read(Page(number, ocr_text + "\n" if ocr_text else "", False, found.confidence), layer)


def _text_layer(page: Any, number: int) -> str:
    try:
        textpage = page.get_textpage()
        try:
            return clean_page_text(textpage.get_text_range())
        finally:
            textpage.close()
    except pdfium.PdfiumError as e:
        raise ParseError(f"page {number}: {_damaged(e)}") from None


def _notes(read: tuple[_Read, ...], ocr: PageOcr) -> tuple[str, ...]:
    """What a person should know of the pages that had no usable text layer: read by OCR (with the
    confidence), blank, or not read and why."""
    notes: list[str] = []
    scanned = [r for r in read if r.layer != "text"]
    done = [r for r in scanned if r.page.ocr and r.page.text]
    if done:
        low = min(r.page.ocr_confidence or 0.0 for r in done)
        mean = sum(r.page.ocr_confidence or 0.0 for r in done) / len(done)
        notes.append(
            f"{_pages([r.page.number for r in done])} read by OCR ({ocr.language}): mean confidence"
            f" {mean:.2f}, lowest {low:.2f}"
        )
    blank = [r.page.number for r in scanned if r.blank]
    if blank:
        notes.append(f"{_pages(blank)} {_have(blank)} no text layer and nothing to read (blank)")
    wordless = [r.page.number for r in scanned if r.wordless]
    if wordless:
        notes.append(
            f"{_pages(wordless)} {_have(wordless)} no text layer, and OCR read no words"
            " (an image without text, or noise)"
        )
    for r in scanned:
        if r.failed is not None:
            left = "its garbled text layer is kept as it is" if r.layer == "garbled" else "it is kept empty"
            notes.append(f"page {r.page.number}: OCR failed ({r.failed}); {left}")
    missing = [r.page.number for r in scanned if not r.page.ocr and not (r.blank or r.wordless)
               and r.failed is None and r.layer == "none"]
    if missing:
        notes.append(f"{_pages(missing)} {_have(missing)} {NOT_READ}{ocr.unavailable}")
    kept = [r.page.number for r in scanned if not r.page.ocr and r.failed is None and r.layer == "garbled"]
    if kept:
        notes.append(f"{_pages(kept)} {_have(kept)} {KEPT_GARBLED}{ocr.unavailable}")
    return tuple(notes)


def _pages(numbers: list[int]) -> str:
    """``page 3`` or ``pages 1-4, 7``: page numbers with runs joined.

    Example:
        >>> _pages([1, 2, 3, 4, 7]), _pages([3])
        ('pages 1-4, 7', 'page 3')
    """
    if len(numbers) == 1:
        return f"page {numbers[0]}"
    runs: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return f"pages {', '.join(runs)}"


def _have(numbers: list[int]) -> str:
    return "has" if len(numbers) == 1 else "have"
