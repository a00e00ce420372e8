"""The compiled boilerplate layout: :func:`chunkdedup.text.boilerplate._page_blocks`'s blocks in one walk.

:func:`page_blocks` gives the blocks of a page as ``_page_blocks`` makes them (the same lines, edge
flags, keys and counts), from one compiled walk over the page's characters: it splits the page into
lines, finds the non-blank ones, the edge band and the blocks, and writes the boilerplate key of every
line and block it keys into one buffer. Python then only slices the page and the buffer. The str path
of :mod:`chunkdedup.text.boilerplate` stays the definition (tests compare the two on real and generated
text).

The walk reads one byte per character (:func:`chunkdedup.text.chunk_kernel.proxy`: ASCII as itself, any
other character as a class byte that keeps whether it is whitespace), so the lines, blank lines, word
counts and lengths are exact on any page. A key is written by the walk when its text is ASCII: there
``boilerplate_key`` is casefold (ASCII lowering), whitespace runs (str's, with \\x1c-\\x1f) made one
space, and each run of tokens holding a digit masked as one ``#``. A line or block holding any other
character is keyed in Python by :func:`~chunkdedup.normalize.boilerplate_key` itself (NFKC and
casefold of non-ASCII text are not worth a second implementation).
"""

from __future__ import annotations

from typing import NamedTuple, cast

import numpy as np
import numpy.typing as npt

from chunkdedup.config import BoilerplateConfig
from chunkdedup.jit import kernel
from chunkdedup.normalize import boilerplate_key, has_letters, has_words
from chunkdedup.text.chunk_kernel import proxy
from chunkdedup.text.lines import Block, Line
from chunkdedup.types import Page

U8Array = npt.NDArray[np.uint8]
U16Array = npt.NDArray[np.uint16]
I64Array = npt.NDArray[np.int64]

_WS = 1  # whitespace: str.isspace (ASCII's with \x1c-\x1f, and the proxy's class byte 0x80)
_DIGIT = 2  # 0-9 (a non-ASCII digit is in a non-ASCII text: keyed in Python)
_LETTER = 4  # A-Z, a-z: has_letters of an ASCII key (lowered)
_HIGH = 8  # a non-ASCII character (its class byte): its text is keyed in Python

#: what the walk keys: every line (``lines``), edge lines and one-line blocks, edge lines only (``edges``)
EVERY, READ, EDGES = 0, 1, 2
_NO_KEY = -1  # the empty key (a line not keyed, or too long)
_PYTHON = -2  # a key of a text holding a non-ASCII character: boilerplate_key in Python
#: a kernel's zero (and false) start for a value it passes to another kernel: typed int64 (bool), where
#: the literal 0 (False) is typed as that constant, and numba compiles the callee for it a second time
_ZERO = cast(int, np.int64(0))
_FALSE = cast(bool, np.bool_(False))


def _tables() -> tuple[U8Array, U8Array]:
    flags = np.zeros(256, np.uint8)
    lower = np.arange(256, dtype=np.uint8)
    for i in range(128):
        c = chr(i)
        if c.isspace():
            flags[i] |= _WS
        if c in "0123456789":
            flags[i] |= _DIGIT
        if c.isalpha():
            flags[i] |= _LETTER
        lower[i] = ord(c.lower())
    flags[128:] |= _HIGH
    flags[0x80] |= _WS  # chunk_kernel's class byte of a non-ASCII whitespace character
    return flags, lower


_FLAGS, _LOWER = _tables()
# One lookup a character: its flags in the high byte, its lowered byte in the low one.
_TABLE: U16Array = (_FLAGS.astype(np.uint16) << 8 | _LOWER).astype(np.uint16)
_T_WS, _T_DIGIT, _T_LETTER, _T_HIGH = _WS << 8, _DIGIT << 8, _LETTER << 8, _HIGH << 8


def page_blocks(
    page: Page, config: BoilerplateConfig, *, edges: bool = False, lines: bool = True
) -> list[Block]:
    """``_page_blocks(page, config, edges=edges, lines=lines)``, from one compiled walk."""
    text = page.text
    mode = EDGES if edges else EVERY if lines else READ
    rows, spans, buf, _ = _layout(
        proxy(text),
        text.count("\n"),
        _TABLE,
        config.max_block_chars,
        config.edge_lines,
        mode,
        config.min_block_words,
    )
    if not spans.size:
        return []
    keys = buf.tobytes().decode("ascii")
    row = rows.tolist()
    out: list[Block] = []
    for first, last, ks, ke, words, letters in spans.tolist():
        if last - first == 1:  # a one-line block: its key is its line's
            at, s, e, edge, _, _, _ = row[first]
            t = text[s:e]
            if ks >= 0:
                key = keys[ks:ke]
                counted = bool(words and letters)
            elif ks == _NO_KEY:
                key = ""
                counted = False
            else:
                key = boilerplate_key(t)
                counted = bool(key) and bool(words) and has_letters(key)
            out.append(Block((Line(at, t, key, edge == 1),), key, counted))
            continue
        block: list[Line] = []
        for at, s, e, edge, lks, lke, _ in row[first:last]:
            t = text[s:e]
            lk = keys[lks:lke] if lks >= 0 else "" if lks == _NO_KEY else boilerplate_key(t)
            block.append(Line(at, t, lk, edge == 1))
        if ks >= 0:
            key = keys[ks:ke]
            counted = bool(words and letters)
        elif ks == _NO_KEY:
            key = ""
            counted = False
        else:
            key = boilerplate_key(" ".join(ln.text for ln in block))
            counted = bool(key) and bool(words) and has_letters(key)
        out.append(Block(tuple(block), key, counted))
    return out


class PageKeys(NamedTuple):
    """What :func:`~chunkdedup.text.boilerplate.document_keys` and a
    :func:`~chunkdedup.text.boilerplate.strip` without ``always_strip`` read of a page: its counted
    blocks and the edge lines whose key holds a letter (every other line is never looked at, so no
    object is made for it)."""

    text: str
    #: the non-blank lines, ``(at, start, end, ...)`` rows (see :func:`_layout`)
    lines: I64Array
    #: the key of each counted block
    counted: list[str]
    #: ``(first line, last line + 1)`` of each counted block, in the order of ``counted``
    where: I64Array
    #: ``(key, line)`` of each edge line whose key holds a letter
    edges: list[tuple[str, int]]


def page_keys(page: Page, config: BoilerplateConfig, *, edges: bool = False) -> PageKeys:
    """The counted blocks and lettered edge lines of ``_page_blocks(page, config, lines=False)`` (or of
    ``edges=True``), with the same keys, from one compiled walk (a page of one line, such as most
    records, is keyed as ``_page_blocks`` keys it: one ``boilerplate_key``, less than the walk's
    start-up)."""
    text = page.text
    if "\n" not in text:
        return _one_line(text, config)
    rows, _, buf, chosen = _layout(
        proxy(text),
        text.count("\n"),
        _TABLE,
        config.max_block_chars,
        config.edge_lines,
        EDGES if edges else READ,
        config.min_block_words,
    )
    m = len(rows)
    if not m:
        return PageKeys(text, rows, [], chosen[:, :2], [])
    keys = buf.tobytes().decode("ascii")
    python: dict[int, str] = {}  # the keys of lines holding a non-ASCII character, by line

    def line_key(r: int) -> str:
        key = python.get(r)
        if key is None:
            key = python[r] = boilerplate_key(text[rows[r, 1] : rows[r, 2]])
        return key

    found = chosen.tolist()
    if all(ks >= 0 for _, _, ks, _ in found):  # every key made by the walk (ASCII text)
        counted = [keys[ks:ke] for _, _, ks, ke in found]
        where = chosen[:, :2]
    else:
        counted = []
        held: list[int] = []
        for i, (first, last, ks, ke) in enumerate(found):
            if ks >= 0:
                key = keys[ks:ke]
            else:
                if last - first == 1:
                    key = line_key(first)
                else:
                    key = boilerplate_key(" ".join(text[s:e] for s, e in rows[first:last, 1:3].tolist()))
                if not (key and has_letters(key)):
                    continue
            counted.append(key)
            held.append(i)
        where = chosen[held, :2]
    band = config.edge_lines
    edge_rows = list(enumerate(rows.tolist())) if m <= 2 * band else [
        *enumerate(rows[:band].tolist()),
        *enumerate(rows[m - band :].tolist(), m - band),
    ]
    lettered: list[tuple[str, int]] = []
    for r, (_, _, _, _, ks, ke, letters) in edge_rows:
        if ks >= 0:
            if letters:
                lettered.append((keys[ks:ke], r))
        elif ks == _PYTHON:
            key = line_key(r)
            if has_letters(key):
                lettered.append((key, r))
    return PageKeys(text, rows, counted, where, lettered)


def _one_line(text: str, config: BoilerplateConfig) -> PageKeys:
    """:func:`page_keys` of a page without a new line (``_page_blocks``' own shortcut)."""
    if not text or text.isspace():
        return PageKeys(text, _NO_LINES, [], _NO_BLOCKS, [])
    key = boilerplate_key(text) if len(text) <= config.max_block_chars else ""
    lettered = has_letters(key)
    if lettered and has_words(text, config.min_block_words):
        return PageKeys(text, _ONE_LINE, [key], _ONE_BLOCK, [(key, 0)])
    return PageKeys(text, _ONE_LINE, [], _NO_BLOCKS, [(key, 0)] if lettered else [])


def _frozen(rows: list[list[int]], width: int) -> I64Array:
    out = np.array(rows, np.int64).reshape(len(rows), width)
    out.flags.writeable = False
    return out


# The rows of a page without a new line (shared, read-only): its one line runs to the end of the text
# (the largest end a slice takes), so one row serves every such page.
_NO_LINES = _frozen([], 7)
_ONE_LINE = _frozen([[0, 0, 2**62, 1, _NO_KEY, _NO_KEY, 0]], 7)
_NO_BLOCKS = _frozen([], 2)
_ONE_BLOCK = _frozen([[0, 1]], 2)


@kernel
def _layout(
    b: U8Array, breaks: int, table: U16Array, limit: int, edge_lines: int, mode: int, min_words: int
) -> tuple[I64Array, I64Array, U8Array, I64Array]:  # pragma: no cover - compiled; tested through its callers
    """The non-blank lines ``(at, start, end, edge, key start, key end, key has a letter)``, the blocks
    ``(first line, last line + 1, key start, key end, enough words, key has a letter)``, the key
    buffer (a key's start is ``_NO_KEY`` for the empty key, ``_PYTHON`` for a key Python makes), and
    ``(first line, last line + 1, key start, key end)`` of each block that may be counted (enough words,
    and a key with a letter or one Python makes).

    Unless only edge lines are keyed, each line is keyed as it is read (its end is found by the same
    pass); a key the blocks then show is not needed stays unused in the buffer."""
    n = b.size
    rows = np.empty((breaks + 1, 7), np.int64)
    buf = np.empty(2 * n + 2, np.uint8)
    pos = _ZERO
    speculate = mode != EDGES
    m = 0
    at = 0
    if speculate:
        i = _ZERO
        while True:
            e, got, letters, nonblank = _line_key(b, table, i, n, limit, buf, pos)
            if nonblank:
                rows[m, 0] = at
                rows[m, 1] = i
                rows[m, 2] = e
                if got >= 0:
                    rows[m, 4] = pos
                    rows[m, 5] = got
                    pos = got
                else:
                    rows[m, 4] = got
                    rows[m, 5] = got
                rows[m, 6] = 1 if letters else 0
                m += 1
            at += 1
            if e >= n:
                break
            i = e + 1
    else:  # only the lines: each one's end, and whether it holds a word (up to its first)
        s = 0
        for i in range(n + 1):
            if i == n or b[i] == 10:
                for k in range(s, i):
                    if table[b[k]] & _T_WS == 0:
                        rows[m, 0] = at
                        rows[m, 1] = s
                        rows[m, 2] = i
                        m += 1
                        break
                at += 1
                s = i + 1
    spans = np.empty((m, 6), np.int64)
    chosen = np.empty((m, 4), np.int64)
    nc = 0
    nb = 0
    j = 0
    while j < m:
        first = j
        while j + 1 < m and rows[j + 1, 0] == rows[j, 0] + 1:
            j += 1
        last = j + 1
        j += 1
        alone = last - first == 1
        for r in range(first, last):
            start = rows[r, 1]
            end = rows[r, 2]
            on_edge = r < edge_lines or r >= m - edge_lines
            rows[r, 3] = 1 if on_edge else 0
            if end - start > limit:
                keyed = False
            elif on_edge or mode == EVERY:
                keyed = True
            else:
                keyed = mode == READ and alone
            if not keyed:
                rows[r, 4] = _NO_KEY
                rows[r, 5] = _NO_KEY
                rows[r, 6] = 0
            elif not speculate:
                got, letters = _key(b, table, start, end, buf, pos)
                rows[r, 6] = 1 if letters else 0
                if got < 0:
                    rows[r, 4] = _PYTHON
                    rows[r, 5] = _PYTHON
                else:
                    rows[r, 4] = pos
                    rows[r, 5] = got
                    pos = got
        start = rows[first, 1]
        end = rows[last - 1, 2]
        spans[nb, 0] = first
        spans[nb, 1] = last
        spans[nb, 4] = 1 if _has_words(b, table, start, end, min_words) else 0
        if alone:
            spans[nb, 2] = rows[first, 4]
            spans[nb, 3] = rows[first, 5]
            spans[nb, 5] = rows[first, 6]
        elif mode == EDGES or end - start > limit:
            spans[nb, 2] = _NO_KEY
            spans[nb, 3] = _NO_KEY
            spans[nb, 5] = 0
        else:
            got, letters = _key(b, table, start, end, buf, pos)
            spans[nb, 5] = 1 if letters else 0
            if got < 0:
                spans[nb, 2] = _PYTHON
                spans[nb, 3] = _PYTHON
            else:
                spans[nb, 2] = pos
                spans[nb, 3] = got
                pos = got
        if spans[nb, 4] == 1 and (spans[nb, 5] == 1 or spans[nb, 2] == _PYTHON):
            chosen[nc, 0] = first
            chosen[nc, 1] = last
            chosen[nc, 2] = spans[nb, 2]
            chosen[nc, 3] = spans[nb, 3]
            nc += 1
        nb += 1
    return rows[:m], spans[:nb], buf[:pos], chosen[:nc]


@kernel
def _line_key(
    b: U8Array, table: U16Array, start: int, n: int, limit: int, buf: U8Array, pos: int
) -> tuple[int, int, bool, bool]:  # pragma: no cover - compiled
    """Read the line that starts at ``start``, writing its key at ``buf[pos:]`` as :func:`_key` does:
    (its end, the key's end, whether the key holds a letter, whether the line is non-blank). The key's
    end is ``_PYTHON`` for a line holding a non-ASCII character, ``_NO_KEY`` for one longer than
    ``limit`` (the rest of such a line is only scanned for its end)."""
    letters = 0
    masked = _FALSE  # the last word written is a mask
    first = True
    i = start
    while i < n:
        t = table[b[i]]
        if t & _T_WS:
            if t & _T_HIGH:
                break
            if b[i] == 10:
                return i, pos, letters != 0, not first
            i += 1
            continue
        if i - start > limit:
            break
        i, pos, seen, masked = _word(b, table, i, n, buf, pos, first, masked)
        first = False
        if seen & _T_HIGH:
            break
        if not seen & _T_DIGIT:
            letters |= seen & _T_LETTER
    else:
        return i, pos, letters != 0, not first
    # a non-ASCII character, or past the limit: find the line's end (and whether it has a word)
    nonblank = not first
    while i < n and b[i] != 10:
        if not nonblank and table[b[i]] & _T_WS == 0:
            nonblank = True
        i += 1
    return i, _NO_KEY if i - start > limit else _PYTHON, False, nonblank


@kernel
def _key(
    b: U8Array, table: U16Array, start: int, end: int, buf: U8Array, pos: int
) -> tuple[int, bool]:  # pragma: no cover - compiled
    """Write the boilerplate key of the ASCII text ``b[start:end]`` at ``buf[pos:]``: (its end, whether
    it holds a letter); ``(-1, False)`` when the text holds a non-ASCII character.

    One pass: a word is written lowered as it is read, then replaced by ``#`` when it held a digit (or
    dropped, after a mask)."""
    letters = 0
    masked = _FALSE  # the last word written is a mask
    first = True
    i = start
    while i < end:
        t = table[b[i]]
        if t & _T_HIGH:
            return -1, False
        if t & _T_WS:
            i += 1
            continue
        i, pos, seen, masked = _word(b, table, i, end, buf, pos, first, masked)
        if seen & _T_HIGH:
            return -1, False
        if not seen & _T_DIGIT:
            letters |= seen & _T_LETTER
        first = False
    return pos, letters != 0


@kernel
def _word(
    b: U8Array, table: U16Array, i: int, end: int, buf: U8Array, pos: int, first: bool, masked: bool
) -> tuple[int, int, int, bool]:  # pragma: no cover - compiled
    """Write the word that starts at ``b[i]`` (not whitespace; it ends at whitespace or ``end``) at
    ``buf[pos:]``, lowered, after a space unless it is the ``first``; a word holding a digit becomes
    ``#``, or nothing after a mask (``masked``: the key written so far ends in one). Returns (the word's
    end, the key's end, the flags of its characters or-ed, whether the key now ends in a mask); the key
    is of no use when the flags hold ``_T_HIGH`` (a non-ASCII character)."""
    before = pos  # where the word's separator goes
    if not first:
        buf[pos] = 32
        pos += 1
    word = pos
    seen = 0
    t = table[b[i]]
    while True:
        seen |= t
        buf[pos] = t & 0xFF
        pos += 1
        i += 1
        if i >= end:
            break
        t = table[b[i]]
        if t & _T_WS:
            break
    if not seen & _T_DIGIT:
        return i, pos, seen, False
    if masked:
        return i, before, seen, True
    buf[word] = 35  # '#'
    return i, word + 1, seen, True


@kernel
def _has_words(b: U8Array, table: U16Array, start: int, end: int, n: int) -> bool:  # pragma: no cover
    """Whether ``b[start:end]`` holds at least ``n`` whitespace-separated words."""
    words = 0
    inside = False
    for i in range(start, end):
        if table[b[i]] & _T_WS:
            inside = False
        elif not inside:
            inside = True
            words += 1
            if words >= n:
                return True
    return words >= n


__all__ = ["PageKeys", "page_blocks", "page_keys"]
