"""Scanned PDF pages read by OCR: pdfium renders the page, Tesseract reads the image.

Tesseract comes through ``tesserocr`` (the ``ocr`` extra: ``pip install 'chunkdedup[ocr]'``), which
runs the engine in the process: one engine per document, no image file or subprocess per page. Its
language data comes from the system (Debian: ``apt-get install tesseract-ocr tesseract-ocr-eng``).
A page's image lives only while its page is read.
"""

from __future__ import annotations

import math
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from chunkdedup.errors import ParseError

if TYPE_CHECKING:
    from chunkdedup.config import ParseConfig

#: where Tesseract's language data is looked for when neither ``[parse] ocr_tessdata`` nor
#: ``TESSDATA_PREFIX`` names a folder (Debian 12 and 11, other Linux, Homebrew)
TESSDATA_DIRS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
)
#: a rendered page holds at most this many pixels (a poster-sized page is rendered below ``ocr_dpi``)
MAX_PIXELS = 40_000_000
#: a text layer is garbled when at least this share of its visible characters are control,
#: private-use, unassigned or replacement characters, or fewer than ``MIN_WORD_SHARE`` are letters
#: or digits (a font without a Unicode map gives glyph ids, not text)
GARBLED_SHARE = 0.25
MIN_WORD_SHARE = 0.25
#: a recognised word this short, without a letter and read less surely than this, is a speck
SPECK_CHARS = 2
SPECK_CONFIDENCE = 50.0
#: a text layer shorter than this (visible characters) is never called garbled
GARBLED_MIN_CHARS = 40
_BAD_CATEGORIES = frozenset({"Cc", "Co", "Cn", "Cs"})
_WHITE = bytes(range(250, 256))
#: What the note of an ingested PDF says of pages OCR could not read (the extra or its language
#: missing): such a file is parsed again by the first ingest that finds OCR ready (:func:`ocr_ready`),
#: though its bytes are the same.
NOT_READ = "no text layer, not read: "
KEPT_GARBLED = "a garbled text layer, kept as it is: "
AWAITING_OCR = (NOT_READ, KEPT_GARBLED)


def install_hint(language: str) -> str:
    """How to get OCR for ``language`` (``"eng+deu"``: both packages).

    Example:
        >>> install_hint("eng+deu")
        "pip install 'chunkdedup[ocr]' and apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu"
    """
    packages = " ".join(f"tesseract-ocr-{lang.lower().replace('_', '-')}" for lang in language.split("+"))
    return f"pip install 'chunkdedup[ocr]' and apt-get install tesseract-ocr {packages}"


def garbled(text: str) -> bool:
    """True when a page's text layer is not text a person wrote: mostly control, private-use or
    replacement characters, or hardly a letter or digit among many characters.

    Example:
        >>> garbled("Revenue rose 4% in the third quarter of 2023."), garbled("\\x03\\x11\\x07\\x1d" * 20)
        (False, True)
    """
    visible = [ch for ch in text if not ch.isspace()]
    if len(visible) < GARBLED_MIN_CHARS:
        return False
    bad = sum(ch == "\ufffd" or unicodedata.category(ch) in _BAD_CATEGORIES for ch in visible)
    words = sum(ch.isalnum() for ch in visible)
    return bad >= GARBLED_SHARE * len(visible) or words < MIN_WORD_SHARE * len(visible)


@dataclass(frozen=True, slots=True)
class OcrText:
    """What OCR read on one page: the text, Tesseract's mean word confidence in [0, 1], and whether an
    engine read it (``False``: a blank page, given to no engine)."""

    text: str
    confidence: float
    engine: bool = True


@dataclass(frozen=True, slots=True)
class TextLine:
    """One line the engine read, with its place on the image (pixels from the top left): ``top``
    and ``bottom`` of its box, its ``left`` edge."""

    text: str
    top: int
    bottom: int
    left: int


def reading_text(lines: list[TextLine]) -> str:
    """The page's text from its lines in the engine's reading order, but with the top row and the
    bottom row of the page first and last when white space of a line's height parts them from the
    rest, each as one line: a running header or footer stands in the page's edge lines as on a text
    page, where the engine's column order can put it among the body's columns. No blank lines part
    paragraphs, as none do in the text layers pdfium gives: a scanned copy chunks like its text copy.

    Example:
        >>> lines = [TextLine("Left one", 100, 120, 50), TextLine("Left two", 130, 150, 50),
        ...          TextLine("Page 2 of 3", 900, 920, 400), TextLine("Right one", 100, 120, 400),
        ...          TextLine("Right two", 130, 150, 400)]
        >>> reading_text(lines)
        'Left one\\nLeft two\\nRight one\\nRight two\\nPage 2 of 3\\n'
    """
    if not lines:
        return ""
    gap = sorted(line.bottom - line.top for line in lines)[len(lines) // 2]
    head = _edge_row(lines, gap, top=True)
    foot = _edge_row([line for line in lines if line not in head], gap, top=False)
    body = [line for line in lines if line not in head and line not in foot]
    texts = [_row(head), *(line.text for line in body), _row(foot)]
    return "".join(f"{text}\n" for text in texts if text)


def _row(lines: list[TextLine]) -> str:
    """A row's lines as one line, left to right (as a text layer gives a header or footer)."""
    return " ".join(line.text for line in sorted(lines, key=lambda line: line.left))


def _edge_row(lines: list[TextLine], gap: int, *, top: bool) -> list[TextLine]:
    """The lines of the page's first (``top``) or last row, when at least ``gap`` pixels of white
    space part them from every other line; else none."""
    if len(lines) < 2:
        return []
    anchor = min(lines, key=lambda line: line.top) if top else max(lines, key=lambda line: line.bottom)
    row = [line for line in lines if anchor.top <= (line.top + line.bottom) / 2 <= anchor.bottom]
    rest = [line for line in lines if line not in row]
    if not rest:
        return []
    if top:
        apart = min(line.top for line in rest) - max(line.bottom for line in row)
    else:
        apart = min(line.top for line in row) - max(line.bottom for line in rest)
    return row if apart >= gap else []


class PageReader(Protocol):
    """Reads the text of one rendered page (8-bit grayscale, ``stride`` bytes a row)."""

    def read(self, pixels: bytes, width: int, height: int, stride: int, dpi: int) -> OcrText:
        """The text on the image and how sure the reader is of it."""
        ...


class TesseractReader:
    """One Tesseract engine (tesserocr), for the pages of one document; ``close()`` frees it."""

    def __init__(self, api: Any) -> None:
        self._api = api

    @classmethod
    def open(cls, language: str, tessdata: str = "") -> TesseractReader:
        """An engine for ``language``; ``OcrUnavailable`` says what is missing and how to install it."""
        try:
            import tesserocr
        except ImportError as e:
            raise OcrUnavailable(f"the ocr extra is not installed ({e}): {install_hint(language)}") from None
        folder = tessdata_dir(language, tessdata)
        try:
            api = tesserocr.PyTessBaseAPI(path=folder, lang=language)
        except RuntimeError as e:
            raise OcrUnavailable(
                f"Tesseract could not load language {language!r} from {folder} ({e}): "
                f"{install_hint(language)}, or set [parse] ocr_tessdata to the folder of its .traineddata"
            ) from None
        return cls(api)

    def read(self, pixels: bytes, width: int, height: int, stride: int, dpi: int) -> OcrText:
        import tesserocr

        api = self._api
        try:
            api.SetImageBytes(pixels, width, height, 1, stride)
            api.SetSourceResolution(dpi)
            api.Recognize()
            lines = _lines(api, tesserocr)
            confidence = api.MeanTextConf() / 100.0
        finally:
            api.Clear()  # the engine's copy of the image goes with the page
        return OcrText(reading_text(lines), round(min(1.0, max(0.0, confidence)), 3))

    def close(self) -> None:
        self._api.End()

    def __enter__(self) -> TesseractReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lines(api: Any, tesserocr: Any) -> list[TextLine]:
    """The recognised page's lines, their words but the specks (:func:`speck`) joined by spaces."""
    lines: list[TextLine] = []
    words: list[str] = []
    box: tuple[int, int, int, int] | None = None
    line, word = tesserocr.RIL.TEXTLINE, tesserocr.RIL.WORD
    iterator = api.GetIterator()
    if iterator is None:  # nothing recognised (a drawing, a photo)
        return lines
    for item in tesserocr.iterate_level(iterator, word):
        if item.IsAtBeginningOf(line):
            if words and box is not None:
                lines.append(TextLine(" ".join(words), box[1], box[3], box[0]))
            words, box = [], item.BoundingBox(line)
        try:
            text = (item.GetUTF8Text(word) or "").strip()
        except RuntimeError:  # tesserocr's "No text returned": an empty element
            continue
        if text and not speck(text, item.Confidence(word)):
            words.append(text)
    if words and box is not None:
        lines.append(TextLine(" ".join(words), box[1], box[3], box[0]))
    return lines


def speck(word: str, confidence: float) -> bool:
    """True for a "word" the engine made of a speck of dirt: at most :data:`SPECK_CHARS` characters,
    no letter, read with less than :data:`SPECK_CONFIDENCE` confidence (0-100). A printed number or
    mark reads far surer (above 90 on the real scans of the tests); a stray "3" would keep a scan
    apart from its text copy as another version of it.

    Example:
        >>> speck("3", 35.0), speck("3", 96.0), speck("or", 8.0), speck("|", 38.0)
        (True, False, False, True)
    """
    return len(word) <= SPECK_CHARS and confidence < SPECK_CONFIDENCE and not any(c.isalpha() for c in word)


class OcrUnavailable(Exception):
    """OCR cannot run here (the extra or the language data is missing); the message says the fix."""


def tessdata_dir(language: str, configured: str = "") -> str:
    """The folder Tesseract reads ``language``'s data from: ``configured``, else ``TESSDATA_PREFIX``,
    else the first of :data:`TESSDATA_DIRS` that holds it."""
    if configured:
        return configured
    if env := os.environ.get("TESSDATA_PREFIX"):
        return env
    first = language.split("+")[0]
    for folder in TESSDATA_DIRS:
        if (Path(folder) / f"{first}.traineddata").is_file():
            return folder
    raise OcrUnavailable(
        f"no Tesseract language data for {first!r} in {', '.join(TESSDATA_DIRS)}: {install_hint(language)},"
        " or set [parse] ocr_tessdata (or TESSDATA_PREFIX) to the folder that holds it"
    )


def render_scale(width_pt: float, height_pt: float, dpi: int) -> float:
    """pdfium's render scale for a page of this size (points) at ``dpi``, at most :data:`MAX_PIXELS`.

    Example:
        >>> render_scale(612, 792, 300), round(render_scale(7200, 7200, 300), 3)
        (4.166666666666667, 0.878)
    """
    scale = dpi / 72.0
    pixels = width_pt * height_pt * scale * scale
    if pixels > MAX_PIXELS:
        scale *= math.sqrt(MAX_PIXELS / pixels)
    return scale


class PageOcr:
    """The OCR of one document's pages under a :class:`~chunkdedup.config.ParseConfig`: the engine is
    opened at the first page that needs it, once, and closed with the document.

    ``reader`` replaces Tesseract (a test's reader, another engine).
    """

    def __init__(self, config: ParseConfig, reader: PageReader | None = None) -> None:
        self.mode = config.ocr
        self.language = config.ocr_language
        self.dpi = config.ocr_dpi
        self.tessdata = config.ocr_tessdata
        self._reader = reader
        self._own: TesseractReader | None = None
        #: why OCR cannot run, once an attempt found out
        self.unavailable: str | None = "OCR is off ([parse] ocr = \"off\")" if self.mode == "off" else None

    def engine(self) -> PageReader | None:
        """The reader, opened on first use; ``None`` when OCR is off or cannot run (``unavailable``
        says why). With ``ocr = "require"`` a missing engine raises ``ParseError`` (the file fails)."""
        if self._reader is not None:
            return self._reader
        if self.unavailable is not None:
            return None
        try:
            self._own = TesseractReader.open(self.language, self.tessdata)
        except OcrUnavailable as e:
            self.unavailable = str(e)
            if self.mode == "require":
                raise ParseError(f"{e} ([parse] ocr = \"require\")") from None
            return None
        self._reader = self._own
        return self._reader

    def read_page(self, page: Any) -> OcrText | None:
        """Render a pdfium page and read it (``None``: OCR is off or cannot run); the image is freed
        before this returns. A blank page is not given to the engine: it reads as empty text."""
        if self._reader is None and self.unavailable is not None:
            return None
        width, height = page.get_size()
        scale = render_scale(width, height, self.dpi)
        bitmap = page.render(scale=scale, grayscale=True)
        try:
            pixels = bytes(bitmap.buffer)
            w, h, stride = bitmap.width, bitmap.height, bitmap.stride
        finally:
            bitmap.close()
        if _blank(pixels):  # no engine is opened for it (a text PDF's empty last page)
            return OcrText("", 1.0, engine=False)
        reader = self.engine()
        if reader is None:
            return None
        return reader.read(pixels, w, h, stride, round(scale * 72))

    def close(self) -> None:
        if self._own is not None:
            self._own.close()
            self._own = None
            self._reader = None

    def __enter__(self) -> PageOcr:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def ocr_ready(config: ParseConfig) -> bool:
    """Whether OCR can read pages now under ``config``: it is not off and Tesseract opens for its
    language (the engine is opened and closed again)."""
    try:
        with PageOcr(config) as ocr:
            return ocr.engine() is not None
    except ParseError:  # ocr = "require" and no engine
        return False


def _blank(pixels: bytes) -> bool:
    """True when every pixel is (nearly) white: nothing on the page to read."""
    return not pixels.strip(_WHITE)
