"""Plain text: byte decoding shared by every text format, and form-feed pages."""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from chunkdedup.errors import ParseError
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.types import Page

NOT_TEXT = "not a text file (binary content); check the file type"
# charset-normalizer reads a sample, not a 50 MB file: detection on 256 KiB is as good and bounded in time.
_SAMPLE_BYTES = 256 * 1024
# Above this mess ratio the "text" is noise; charset-normalizer itself rejects candidates near 0.2.
_MAX_CHAOS = 0.2
# Western text is the common case, and charset-normalizer ties cp1250/cp1252 on short Latin-1 text.
_PREFERRED = "cp1252"
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode_text(data: bytes) -> str:
    """Decode file bytes as text: UTF-8 first, then a detected encoding; newlines become ``\\n``.

    Raises ``ParseError(skipped=True)`` for binary content.

    Example:
        >>> decode_text("café\\r\\n".encode("latin-1"))
        'café\\n'
    """
    return decode_noted(data)[0]


def decode_noted(data: bytes) -> tuple[str, str | None]:
    """:func:`decode_text`, with a note saying how bytes that are not UTF-8 were read (None: UTF-8).

    A file that is mostly UTF-8 with a few bad bytes stays UTF-8, the bad bytes replaced by U+FFFD:
    guessing a single-byte encoding for it would turn every accented letter into mojibake.

    Example:
        >>> decode_noted("café".encode("cp1252"))[1]
        'not UTF-8: decoded as cp1252 (a guess; save the file as UTF-8 to be sure)'
    """
    text, note = _decode(data)
    return text.replace("\r\n", "\n").replace("\r", "\n"), note


def plain_utf8(data: bytes) -> bool:
    """Whether :func:`decode_text` reads ``data`` as plain UTF-8 and changes nothing (no BOM, no
    ``\\r``, no NUL): then line ``i`` of ``data.split(b"\\n")`` decoded is line ``i`` of
    ``decode_text(data).split("\\n")``, and its bytes are that line's UTF-8 (a byte ``\\n`` never
    occurs inside a UTF-8 sequence). A multi-record file's lines can then be hashed as the bytes they
    are, and only the lines that need it decoded."""
    if b"\r" in data or b"\x00" in data or data.startswith(codecs.BOM_UTF8):
        return False
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def line_views(data: bytes) -> Iterator[memoryview]:
    """The lines of ``data.split(b"\\n")``, as views of ``data`` (no copies: a shard's lines are
    hashed, and most never read again)."""
    view = memoryview(data)
    find = data.find
    start = 0
    while (end := find(b"\n", start)) >= 0:
        yield view[start:end]
        start = end + 1
    yield view[start:]


def _decode(data: bytes) -> tuple[str, str | None]:
    # UTF-32 must be tested before UTF-16: its little-endian BOM starts with UTF-16's.
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding), None
            except UnicodeDecodeError:
                raise ParseError(NOT_TEXT, skipped=True) from None
    if b"\x00" in data:
        raise ParseError(NOT_TEXT, skipped=True)
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as e:
        # The sample is centred on the first byte UTF-8 rejects: that is where encodings differ.
        start = max(0, e.start - _SAMPLE_BYTES // 2)
        sample = data[start : start + _SAMPLE_BYTES]
    lenient = data.decode("utf-8-sig", errors="replace")
    bad = lenient.count("\ufffd") - data.count("\ufffd".encode())
    wide = sum(1 for c in lenient if c > "\x7f" and c != "\ufffd")
    if wide >= 4 * bad:  # mostly valid multi-byte UTF-8: a few damaged bytes, not another encoding
        return lenient, f"{bad:,} byte sequence(s) are not valid UTF-8: replaced by U+FFFD"
    encoding = _detect(sample)
    return data.decode(encoding, errors="replace"), (
        f"not UTF-8: decoded as {encoding} (a guess; save the file as UTF-8 to be sure)"
    )


def _detect(sample: bytes) -> str:
    """The encoding charset-normalizer finds for a sample of the data."""
    from charset_normalizer import from_bytes

    # Without a BOM or NUL bytes the data is not UTF-16/32; those guesses are artefacts of short input.
    matches = [m for m in from_bytes(sample) if not m.encoding.startswith(("utf_16", "utf_32"))]
    if not matches:
        raise ParseError(NOT_TEXT, skipped=True)
    least = min(m.chaos for m in matches)
    if least > _MAX_CHAOS:
        raise ParseError(NOT_TEXT, skipped=True)
    best = [m for m in matches if m.chaos <= least + 0.01]
    for m in best:
        if _PREFERRED in m.could_be_from_charset:
            return _PREFERRED
    return str(best[0].encoding)


def split_pages(text: str) -> tuple[Page, ...]:
    """Split text on form feeds into pages numbered from 1; a final empty page (pdftotext's) is dropped."""
    parts = text.split("\f")
    if len(parts) > 1 and not parts[-1].strip():
        parts.pop()
    return tuple(Page(number=i, text=part) for i, part in enumerate(parts, start=1))


class TextParser:
    """Plain text; form feeds separate pages as ``pdftotext`` writes them."""

    def parse(self, data: bytes) -> Extraction:
        """Decode the bytes and split them into pages."""
        text, note = decode_noted(data)
        return Extraction(documents=(Extracted(pages=split_pages(text)),), notes=(note,) if note else ())
