"""PDF text extraction with pypdfium2, one ``Page`` per PDF page."""

from __future__ import annotations

from typing import Any

import pypdfium2 as pdfium

from chunkdedup.errors import ParseError
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.types import Page

NO_TEXT_LAYER = "no text layer on any page (scanned PDF?); OCR is out of scope"
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
    """PDF files through pdfium; pages without a text layer are kept empty and flagged."""

    def parse(self, data: bytes) -> Extraction:
        """Extract the text of every page; raise ``ParseError`` for encrypted or damaged files."""
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as e:
            if "password" in str(e).lower():
                raise ParseError(ENCRYPTED) from None
            raise ParseError(_damaged(e)) from None
        try:
            pages = tuple(_page(pdf, i) for i in range(len(pdf)))
            title = _title(pdf)
        finally:
            pdf.close()
        if not pages:
            raise ParseError("the PDF has no pages", skipped=True)
        if not any(p.has_text_layer for p in pages):
            raise ParseError(NO_TEXT_LAYER, skipped=True)
        return Extraction(documents=(Extracted(pages=pages, title=title),))


def _title(pdf: Any) -> str | None:
    """The document's title metadata, when it has one (a damaged info dictionary gives none)."""
    try:
        title = pdf.get_metadata_value("Title")
    except (pdfium.PdfiumError, KeyError, ValueError):
        return None
    return str(title).strip() or None if title else None


def _damaged(error: Exception) -> str:
    return f"{str(error).rstrip('.')}: {DAMAGED}"


def _page(pdf: Any, index: int) -> Page:
    number = index + 1
    try:
        page = pdf[index]
    except pdfium.PdfiumError as e:
        raise ParseError(f"page {number}: {_damaged(e)}") from None
    try:
        textpage = page.get_textpage()
        try:
            text = clean_page_text(textpage.get_text_range())
        finally:
            textpage.close()
    except pdfium.PdfiumError as e:
        raise ParseError(f"page {number}: {_damaged(e)}") from None
    finally:
        page.close()
    if not text.strip():
        return Page(number=number, text="", has_text_layer=False)
    return Page(number=number, text=text)
