"""Plain text: byte decoding shared by every text format, and form-feed pages."""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

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
#: bytes a file is scanned (and decoded, read a block at a time) at a time
_SCAN_BYTES = 1 << 20
_REPLACEMENT = "\ufffd".encode()
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_WIDE_BOMS = tuple(bom for bom, _ in _BOMS)


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
    guessing a single-byte encoding for it would turn every accented letter into mojibake. How the
    bytes are read is :func:`decoding_of`'s decision, the one a file read a block at a time
    (:func:`text_lines`) takes too.

    Example:
        >>> decode_noted("café".encode("cp1252"))[1]
        'not UTF-8: decoded as cp1252 (a guess; save the file as UTF-8 to be sure)'
    """
    if b"\x00" not in data and not data.startswith(_WIDE_BOMS):
        # bytes in memory that are valid UTF-8 (most files) are decoded once, not checked block by block
        # first: the decision decoding_of takes for them (no UTF-16/32 BOM, no NUL, UTF-8 after a BOM)
        try:
            return _newlines(data.decode("utf-8-sig")), None
        except UnicodeDecodeError:
            pass
    decoding = decoding_of(HeldBytes(data))
    try:
        text = data.decode(decoding.encoding, decoding.errors)
    except UnicodeDecodeError:  # bytes a BOM's encoding rejects
        raise ParseError(NOT_TEXT, skipped=True) from None
    return _newlines(text), decoding.note


@dataclass(frozen=True, slots=True)
class Decoding:
    """How a file's bytes are read as text (:func:`decoding_of`): the codec, ``replace`` where bytes
    it rejects become U+FFFD (``strict``: none do), the note a reader is given (``None``: UTF-8), and
    whether the bytes are plain UTF-8 (:func:`plain_utf8`: no BOM, no ``\\r``; their lines are the
    text's lines)."""

    encoding: str
    errors: Literal["strict", "replace"] = "strict"
    note: str | None = None
    plain: bool = False


class ByteSource(Protocol):
    """A file's bytes as :func:`decoding_of` reads them: from the start a block at a time (a decision
    over a large file holds a block, not the file), or a window of them (the detection sample)."""

    def blocks(self) -> Iterator[bytes]:
        """The bytes in order, a block at a time."""
        ...

    def window(self, start: int, size: int) -> bytes:
        """At most ``size`` bytes from offset ``start``."""
        ...


@dataclass(frozen=True, slots=True)
class HeldBytes:
    """Bytes in memory as a :class:`ByteSource`."""

    data: bytes
    block: int = _SCAN_BYTES

    def blocks(self) -> Iterator[bytes]:
        """The bytes a block at a time."""
        data, block = self.data, self.block
        return (data[start : start + block] for start in range(0, len(data), block))

    def window(self, start: int, size: int) -> bytes:
        """At most ``size`` bytes from ``start``."""
        return self.data[start : start + size]


@dataclass(frozen=True, slots=True)
class FileBytes:
    """A file's bytes as a :class:`ByteSource`, read a block at a time (``OSError`` if it cannot be)."""

    path: Path
    block: int = _SCAN_BYTES

    def blocks(self) -> Iterator[bytes]:
        """The file's bytes a block at a time."""
        with self.path.open("rb") as f:
            while block := f.read(self.block):
                yield block

    def window(self, start: int, size: int) -> bytes:
        """At most ``size`` bytes from ``start``, read by seeking."""
        with self.path.open("rb") as f:
            f.seek(start)
            return f.read(size)


def decoding_of(source: ByteSource) -> Decoding:
    """How the bytes of ``source`` are read as text, decided over all of them, a block at a time:

    a UTF-32 or UTF-16 BOM names its encoding (bytes it rejects are not text); else a NUL byte says
    the file is not text; else valid UTF-8 (after a BOM, if any) is UTF-8; else a file whose
    characters beyond ASCII outnumber its invalid sequences four to one is UTF-8 with a few damaged
    bytes, replaced by U+FFFD; else charset-normalizer guesses the encoding from a sample centred on
    the first byte UTF-8 rejects (where encodings differ). Raises ``ParseError(skipped=True)`` when
    the bytes are not text.

    Example:
        >>> decoding_of(HeldBytes("naïve\\r\\n".encode()))
        Decoding(encoding='utf-8-sig', errors='strict', note=None, plain=False)
    """
    head = source.window(0, 4)
    # UTF-32 must be tested before UTF-16: its little-endian BOM starts with UTF-16's.
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return Decoding(encoding)
    skip = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    scan = _scan(source.blocks(), skip)
    if scan.nul:
        raise ParseError(NOT_TEXT, skipped=True)
    if scan.error is None:
        return Decoding("utf-8-sig", plain=not skip and not scan.cr)
    bad, wide = _tally(source.blocks(), skip)
    if wide >= 4 * bad:  # mostly valid multi-byte UTF-8: a few damaged bytes, not another encoding
        note = f"{bad:,} byte sequence(s) are not valid UTF-8: replaced by U+FFFD"
        return Decoding("utf-8-sig", "replace", note)
    encoding = _detect(source.window(max(0, scan.error - _SAMPLE_BYTES // 2), _SAMPLE_BYTES))
    note = f"not UTF-8: decoded as {encoding} (a guess; save the file as UTF-8 to be sure)"
    return Decoding(encoding, "replace", note)


def text_lines(blocks: Iterable[bytes], decoding: Decoding) -> Iterator[str]:
    """The lines of :func:`decode_noted`'s text (``text.split("\\n")``) of the bytes ``blocks`` give
    in order, read as ``decoding`` (:func:`decoding_of` of the same bytes) says, a block at a time:
    what is held is a block's text and the line it ends in, not the file's. A ``\\r`` at a block's
    end waits for the next block, whose ``\\n`` may end the same line. Raises
    ``ParseError(skipped=True)`` where a BOM's encoding rejects the bytes (as a whole read does).

    Example:
        >>> list(text_lines([b'{"a": 1}\\r', b'\\n\\r'], Decoding("utf-8-sig")))
        ['{"a": 1}', '', '']
    """
    decoder = codecs.getincrementaldecoder(decoding.encoding)(decoding.errors)
    held: list[str] = []  # the start of the line a block ended in
    cr = False
    for text in _decoded(decoder, blocks):
        if cr:
            text = "\r" + text
        cr = text.endswith("\r")
        lines = _newlines(text[:-1] if cr else text).split("\n")
        if len(lines) > 1:
            yield "".join([*held, lines[0]])
            yield from lines[1:-1]
            held = []
        held.append(lines[-1])
    if cr:  # the file's last byte, a line end
        yield "".join(held)
        held = []
    yield "".join(held)


def _decoded(decoder: codecs.IncrementalDecoder, blocks: Iterable[bytes]) -> Iterator[str]:
    """The text of each block, then what the decoder held at the end."""
    try:
        for block in blocks:
            yield decoder.decode(block)
        yield decoder.decode(b"", True)
    except UnicodeDecodeError:  # bytes a BOM's encoding rejects
        raise ParseError(NOT_TEXT, skipped=True) from None


def _newlines(text: str) -> str:
    """``text`` with every line end (``\\r\\n``, ``\\r``) a ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True, slots=True)
class _Scan:
    """What one pass over a file's bytes found: a NUL byte, a ``\\r``, the offset of the first byte
    UTF-8 rejects (``None``: they are valid UTF-8)."""

    nul: bool
    cr: bool
    error: int | None


def _scan(blocks: Iterator[bytes], skip: int) -> _Scan:
    """:class:`_Scan` of the bytes after the first ``skip`` (a UTF-8 BOM); it stops at a NUL byte."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    cr = False
    error: int | None = None
    offset = skip
    for block in _after(blocks, skip):
        if b"\x00" in block:
            return _Scan(True, cr, error)
        cr = cr or b"\r" in block
        if error is None:
            error = _rejected(decoder, block, offset)
        offset += len(block)
    if error is None:
        error = _rejected(decoder, b"", offset, final=True)
    return _Scan(False, cr, error)


def _after(blocks: Iterator[bytes], skip: int) -> Iterator[bytes]:
    """The blocks of the bytes after the first ``skip``."""
    for block in blocks:
        if skip:
            block, skip = block[skip:], max(0, skip - len(block))
        yield block


def _rejected(decoder: codecs.IncrementalDecoder, block: bytes, at: int, final: bool = False) -> int | None:
    """The offset of the first byte strict UTF-8 ``decoder`` rejects in ``block`` (at offset ``at``,
    after the bytes it holds of a sequence the last block cut), if any."""
    held = decoder.getstate()[0]
    if not held and not final and block.isascii():
        return None
    try:
        decoder.decode(block, final)
    except UnicodeDecodeError as e:
        return at - len(held) + e.start
    return None


def _tally(blocks: Iterator[bytes], skip: int) -> tuple[int, int]:
    """The byte sequences that are not UTF-8 (each one U+FFFD in the lenient text), and the lenient
    text's characters beyond ASCII that are not U+FFFD, of the bytes after the first ``skip``."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    bad = wide = 0
    tail = b""
    for block in _after(blocks, skip):
        # a U+FFFD the bytes hold themselves is not a bad sequence, one cut by a block's end counted once
        bad -= block.count(_REPLACEMENT) + (tail + block[:2]).count(_REPLACEMENT)
        tail = (tail + block[-2:])[-2:]
        if block.isascii() and not decoder.getstate()[0]:
            continue
        replaced, beyond = _counts(decoder.decode(block))
        bad, wide = bad + replaced, wide + beyond
    replaced, beyond = _counts(decoder.decode(b"", True))
    return bad + replaced, wide + beyond


def _counts(text: str) -> tuple[int, int]:
    """U+FFFD in ``text``, and its other characters beyond ASCII."""
    replaced = text.count("\ufffd")
    return replaced, len(text) - len(text.encode("ascii", "ignore")) - replaced


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
