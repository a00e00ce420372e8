"""The compiled chunker: :func:`chunkdedup.text.chunk.chunk_page`'s sentences and packing in one pass.

:func:`chunk_spans` gives the (start, end) of a page's chunks as ``chunk_page`` makes them, from one
compiled walk over the page's characters: per page, not per sentence, in Python. The regex path of
:mod:`chunkdedup.text.chunk` stays the definition (tests compare the two on real and generated text).

Both paths see a text as words (maximal runs of non-whitespace, ``str.split``'s) and the whitespace
runs between them. A sentence ends at a run when one of the chunker's rules cuts inside it (every
cut is at a whitespace character, and a cut's sentence resumes at the next non-whitespace, so what
matters is whether a run holds a cut):

* a boundary: the word before ends in ``[.!?]`` and closing quotes or brackets, the word after
  starts with a capital, digit, bullet, ``-`` or ``*`` (after one opening quote or bracket), and the
  mark is no abbreviation's period;
* a list item: the run's last new line is followed by spaces and tabs only, and the word after opens
  an item (``- ``, ``12. ``, ``(a) ``, ``## ``);
* a paragraph: the run holds two new lines with only spaces and tabs between;
* a heading: the run holds the new line that ends a ``#{1,6}[ \\t]`` line.

The kernel reads one byte per character: ASCII characters as themselves, every other character as a
class byte (see :func:`_class_of`) that keeps what the rules ask of it: whitespace, the curly quotes,
the bullet, a non-ASCII decimal digit, a letter that is a one-letter abbreviation, the Kelvin sign
(the one character besides A-Z whose lower case is an ASCII letter).
"""

from __future__ import annotations

import functools
import re

import numpy as np
import numpy.typing as npt

from chunkdedup.jit import kernel
from chunkdedup.text.lines import ABBREVIATIONS

U8Array = npt.NDArray[np.uint8]
I64Array = npt.NDArray[np.int64]

# Class bytes of the non-ASCII characters.
_C_SPACE = 0x80
_C_RSQUO = 0x81  # ’ closes
_C_RDQUO = 0x82  # ” closes
_C_LSQUO = 0x83  # ‘ opens
_C_LDQUO = 0x84  # “ opens
_C_BULLET = 0x85  # •
_C_DIGIT = 0x86  # a decimal digit but 0-9 (re's \d)
_C_KELVIN = 0x87  # U+212A, lower case "k"
_C_LETTER = 0x88  # its lower case is one letter: a one-letter word of it is an initial
_C_OTHER = 0x89
_SPECIAL = {"’": _C_RSQUO, "”": _C_RDQUO, "‘": _C_LSQUO, "“": _C_LDQUO, "•": _C_BULLET, "\u212a": _C_KELVIN}
_DECIMAL = re.compile(r"\d")

# Flags of each byte (the table below).
_WS = 1  # whitespace: str.isspace, re's \s
_MARK = 2  # . ! ?
_CLOSER = 4  # may follow the mark: ' " ’ ” ) ]
_OPEN_B = 8  # may precede the next sentence's first character: ' " ‘ “ ( [
_START = 16  # a next sentence's first character: A-Z 0-9 • - *
_OPEN_A = 32  # stripped from a word before its abbreviation check: ( [ " ' ‘ “
_LETTER = 64  # a one-character word of it is an initial (after lower-casing: one letter)
_DIGIT = 128  # re's \d


def _flags() -> U8Array:
    table = np.zeros(256, np.uint8)
    ascii_spaces = "".join(chr(i) for i in range(128) if chr(i).isspace())
    ascii_letters = "".join(chr(i) for i in range(128) if chr(i).isalpha())
    for chars, flag in (
        (ascii_spaces + chr(_C_SPACE), _WS),
        (".!?", _MARK),
        ("'\")]" + chr(_C_RSQUO) + chr(_C_RDQUO), _CLOSER),
        ("'\"([" + chr(_C_LSQUO) + chr(_C_LDQUO), _OPEN_B),
        ("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-*" + chr(_C_BULLET), _START),
        ("([\"'" + chr(_C_LSQUO) + chr(_C_LDQUO), _OPEN_A),
        (ascii_letters + chr(_C_KELVIN) + chr(_C_LETTER), _LETTER),
        ("0123456789" + chr(_C_DIGIT), _DIGIT),
    ):
        for c in chars:
            table[ord(c)] |= flag
    return table


_TABLE = _flags()


def _class_of(c: str) -> int:
    """The class byte of a non-ASCII character."""
    if c.isspace():
        return _C_SPACE
    if c in _SPECIAL:
        return _SPECIAL[c]
    if _DECIMAL.match(c):
        return _C_DIGIT
    low = c.lower()
    if len(low) == 1 and low.isalpha():
        return _C_LETTER
    return _C_OTHER


def _code(word: str) -> int:
    """An ASCII word of at most 7 characters as an integer: its bytes, little-endian, and its length
    in the top byte (so "p" and "p\\x00" differ)."""
    return int.from_bytes(word.encode("ascii"), "little") | len(word) << 56


# The abbreviations (ASCII, lower case) as sorted codes, and the longest one's length.
_CODES = np.array(sorted(map(_code, ABBREVIATIONS)), np.int64)
_LONGEST = max(map(len, ABBREVIATIONS))
assert _LONGEST <= 7, "an abbreviation's code holds at most 7 characters"


@functools.cache
def _bmp() -> U8Array:
    """The class byte of every character of the Basic Multilingual Plane (ASCII as itself): built on
    the first text with a non-ASCII character (65,536 calls of :func:`_class_of`, 20-25 ms that an
    ASCII corpus, or an incremental run of a few documents, never pays), then kept: a constant."""
    return np.array([i if i < 128 else _class_of(chr(i)) for i in range(1 << 16)], np.uint8)


def proxy(text: str) -> U8Array:
    """One byte per character of ``text``: ASCII as itself, any other character as its class byte.

    Always a read-only array (as the ASCII path's view of the encoded bytes is): numba compiles a
    kernel once per argument type, and a read-only array is another type than a writable one, so a
    writable proxy would compile every text kernel a second time (seconds of a first run)."""
    if text.isascii():
        return np.frombuffer(text.encode("ascii"), np.uint8)
    units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), np.uint16)  # a lone surrogate too
    if units.size == len(text):  # no character beyond the BMP: one UTF-16 unit each
        out: U8Array = _lookup(units, _bmp())
    else:
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
        out = points.astype(np.uint8)
        high = points >= 128
        chars, where = np.unique(points[high], return_inverse=True)
        classes = np.array([_class_of(chr(c)) for c in chars.tolist()], np.uint8)
        out[high] = classes[where]
    out.flags.writeable = False
    return out


@kernel
def _lookup(units: npt.NDArray[np.uint16], table: U8Array) -> U8Array:  # pragma: no cover - compiled
    out = np.empty(units.size, np.uint8)
    for i in range(units.size):
        out[i] = table[units[i]]
    return out


def chunk_spans(text: str, target_words: int, max_words: int, paragraph_words: int) -> list[int]:
    """The chunks of ``text`` as ``chunk_page`` makes them: flat (start, end) pairs."""
    spans = _chunk_spans(proxy(text), _TABLE, _CODES, _LONGEST, target_words, max_words, paragraph_words)
    return list(spans.tolist())


@kernel
def _chunk_spans(
    b: U8Array,
    table: U8Array,
    abbreviations: I64Array,
    longest: int,
    target_words: int,
    max_words: int,
    paragraph_words: int,
) -> I64Array:  # pragma: no cover - compiled; tests call it through chunk_page
    n = b.size
    out = np.empty(n + 2, np.int64)  # a chunk holds a word: at most (n + 1) // 2 chunks
    k = 0
    line = 0  # where the current line starts
    i = 0
    while i < n and table[b[i]] & _WS:
        if b[i] == 10:
            line = i + 1
        i += 1
    c_start = -1  # the chunk being packed
    c_end = -1
    c_words = 0
    p_start = -1  # the piece being built (a sentence, or max_words of an over-long one)
    p_words = 0
    p_para = False  # a paragraph break before the piece
    gap_para = False  # the run before the current word held a paragraph break
    while i < n:
        w = i
        while i < n and not table[b[i]] & _WS:
            i += 1
        if p_words == 0:
            p_start = w
            p_para = gap_para
        p_words += 1
        p_end = i
        # the whitespace run after the word
        j = i
        para = False
        heading = False
        new_line = False
        spaces_only = False  # since the run's last new line, only spaces and tabs
        while j < n and table[b[j]] & _WS:
            c = b[j]
            if c == 10:
                if new_line and spaces_only:
                    para = True
                h = 0
                while line + h < j and b[line + h] == 35:  # '#'
                    h += 1
                if 1 <= h <= 6 and line + h < j and (b[line + h] == 32 or b[line + h] == 9):
                    heading = True
                line = j + 1
                new_line = True
                spaces_only = True
            elif c != 32 and c != 9:
                spaces_only = False
            j += 1
        end_of_text = j >= n
        cut = para or heading
        if not cut and not end_of_text and new_line and spaces_only:
            cut = _item_at(b, table, j)
        if not cut and not end_of_text:
            m = i - 1
            while m >= w and table[b[m]] & _CLOSER:
                m -= 1
            if m >= w and table[b[m]] & _MARK:
                c0 = table[b[j]]
                if c0 & _START != 0 or (c0 & _OPEN_B != 0 and j + 1 < n and table[b[j + 1]] & _START != 0):
                    cut = b[m] != 46 or not _abbreviation(b, table, abbreviations, longest, w, m)
        if cut or end_of_text or p_words == max_words:
            # the piece is whole: pack it
            if c_start >= 0 and (
                c_words + p_words > target_words or (p_para and c_words >= paragraph_words)
            ):
                out[k] = c_start
                out[k + 1] = c_end
                k += 2
                c_start = -1
                c_words = 0
            if c_start < 0:
                c_start = p_start
            c_end = p_end
            c_words += p_words
            p_words = 0
        gap_para = para
        i = j
    if c_start >= 0:
        out[k] = c_start
        out[k + 1] = c_end
        k += 2
    return out[:k]


@kernel
def _item_at(b: U8Array, table: U8Array, z: int) -> bool:  # pragma: no cover - compiled
    """Whether a list item or heading opens at ``z`` (``[-*•+]\\s``, ``\\d{1,3}[.)]\\s``,
    ``\\([a-z0-9]{1,3}\\)\\s``, ``#{1,6}\\s``)."""
    n = b.size
    c = b[z]
    if c == 45 or c == 42 or c == 43 or c == _C_BULLET:  # - * +
        return z + 1 < n and table[b[z + 1]] & _WS != 0
    if table[c] & _DIGIT:
        d = 0
        while z + d < n and table[b[z + d]] & _DIGIT:
            d += 1
        e = z + d
        return d <= 3 and e + 1 < n and (b[e] == 46 or b[e] == 41) and table[b[e + 1]] & _WS != 0
    if c == 40:  # (
        d = 0
        while z + 1 + d < n and (97 <= b[z + 1 + d] <= 122 or 48 <= b[z + 1 + d] <= 57):
            d += 1
        e = z + 1 + d
        return 1 <= d <= 3 and e + 1 < n and b[e] == 41 and table[b[e + 1]] & _WS != 0
    if c == 35:  # #
        d = 0
        while z + d < n and b[z + d] == 35:
            d += 1
        return d <= 6 and z + d < n and table[b[z + d]] & _WS != 0
    return False


@kernel
def _abbreviation(
    b: U8Array, table: U8Array, abbreviations: I64Array, longest: int, w: int, dot: int
) -> bool:  # pragma: no cover - compiled
    """Whether the word ``b[w:dot]`` (openers stripped, lower-cased) is an abbreviation or an initial."""
    while w < dot and table[b[w]] & _OPEN_A:
        w += 1
    size = dot - w
    if size == 0:
        return False
    if size == 1:
        return bool(table[b[w]] & _LETTER != 0)
    if size > longest:
        return False
    code = size << 56
    for t in range(size):
        c = int(b[w + t])
        if 65 <= c <= 90:
            c += 32
        elif c == _C_KELVIN:
            c = 107
        elif c >= 128:
            return False
        code |= c << (8 * t)
    at = np.searchsorted(abbreviations, code)
    return bool(at < abbreviations.size and abbreviations[at] == code)
