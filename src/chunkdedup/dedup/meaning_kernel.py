"""The meaning guard's compiled first reading: the near pairs whose differing words can change no
meaning, settled in one pass over their UTF-8 bytes.

:func:`chunkdedup.dedup.meaning.meaning_diff` stays the definition. Most near pairs differ in words
that no rule reads (the count of :func:`~chunkdedup.dedup.meaning._may_matter` finds no listed word,
no capital, no reference, fewer than ``CONTENT_WORDS`` new words); :func:`settled` finds most of
those pairs without a Python call per pair, and the rest are read as before.

A pair is *settled* (certainly no meaning change) only when every one of these holds, else it is
left to the Python reading (so a pair the kernel cannot judge costs what it cost before):

* the words (runs of bytes between ASCII whitespace) one side holds more often than the other are
  all ASCII: then they split as ``str.split`` splits them, and every other word is the same in both;
* none of them holds ``@`` (what :func:`~chunkdedup.dedup.meaning._text` may leave out lies within
  one word: a link's target is cut out of the word) or joins a compound's or a path's parts (``-`` or
  ``/`` between two letters or digits: the Python reading reads the parts), and the stretch read holds
  no HTML comment mark;
* none of them opens with a capital once its marks are left out;
* their normal forms (lower case, letters and digits) hold no listed word (negation, modality,
  ordinal, qualifier), do not only move (each form's count changes), and add or drop fewer than
  ``CONTENT_WORDS`` words on either side;
* none may make or unmake a lettered reference (a bracket, one letter, a short roman numeral, the
  name of a part) where the stretch read holds a bracket or a part's name;
* no word whose normal form's count changes holds a comma, stands beside a joining word (and, or,
  nor; a function word or a figure aside) or opens a link's text, and each side holds as many bullets
  (``*``, ``+``, ``-``, ``•``) as the other: else an enumeration's item or a link may have come or gone;
* no changed word holds a URL or a ``www.`` address that stands in the text (another site), no link
  of either text has a title and the stretch holds no image or hidden address (their words spread
  over spaces), and the words holding a digit are not the same ones in another order.

Equal words are matched by a 64-bit hash of their bytes and then compared byte for byte: a pair
whose words collide is left to the Python reading, never settled on a hash.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

from chunkdedup.jit import kernel

U8Array = npt.NDArray[np.uint8]
I64Array = npt.NDArray[np.int64]
U64Array = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]
I8Array = npt.NDArray[np.int8]

#: what :func:`settled` says of a pair: the Python reading decides it; no meaning change; the Python
#: reading's word count would send it to the word-by-word reading (it holds a listed word, six new
#: words or only moved words, all in plain ASCII words)
UNKNOWN, SETTLED, READ = 0, 1, 2

__all__ = ["READ", "SETTLED", "UNKNOWN", "norm_hashes", "settled"]

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
#: a kernel's zero start for a value it passes to another kernel: typed int64, where
#: the literal 0 is typed as that constant, and numba compiles the callee for it a second time
_ZERO = cast(int, np.int64(0))


@kernel
def _space(c: int) -> bool:
    """ASCII whitespace as ``str.split`` sees it (tab to carriage return, the four separators, space)."""
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


@kernel
def _alnum(c: int) -> bool:
    """An ASCII letter or digit."""
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122


@kernel
def _norm_hash(buf: U8Array, lo: int, hi: int) -> tuple[np.uint64, int, bool]:
    """The FNV-1a hash of the ASCII word ``buf[lo:hi]``'s normal form (lower case, letters and digits
    only), its length, and whether it is a short roman numeral of i, v and x."""
    h = _FNV_OFFSET
    n = 0
    roman = True
    for k in range(lo, hi):
        c = buf[k]
        if 65 <= c <= 90:
            c += 32
        elif not (97 <= c <= 122 or 48 <= c <= 57):
            continue
        h = (h ^ np.uint64(c)) * _FNV_PRIME
        n += 1
        if c != 105 and c != 118 and c != 120:
            roman = False
    return h, n, roman and n <= 4


@kernel
def _words(buf: U8Array, lo: int, hi: int) -> tuple[U64Array, I64Array, I64Array]:
    """The words of ``buf[lo:hi]`` (runs between ASCII whitespace): each one's byte hash, start, end."""
    most = (hi - lo) // 2 + 1
    hashes = np.empty(most, np.uint64)
    starts = np.empty(most, np.int64)
    ends = np.empty(most, np.int64)
    n = 0
    k = lo
    while k < hi:
        while k < hi and _space(buf[k]):
            k += 1
        if k >= hi:
            break
        h = _FNV_OFFSET
        starts[n] = k
        while k < hi and not _space(buf[k]):
            h = (h ^ np.uint64(buf[k])) * _FNV_PRIME
            k += 1
        hashes[n] = h
        ends[n] = k
        n += 1
    return hashes[:n], starts[:n], ends[:n]


@kernel
def _same(buf: U8Array, a0: int, a1: int, b0: int, b1: int) -> bool:
    if a1 - a0 != b1 - b0:
        return False
    for k in range(a1 - a0):  # noqa: SIM110 (numba compiles no generator)
        if buf[a0 + k] != buf[b0 + k]:
            return False
    return True


@kernel
def _holds(buf: U8Array, lo: int, hi: int, mark: U8Array) -> bool:
    m = mark.size
    for k in range(lo, hi - m + 1):
        found = True
        for q in range(m):
            if buf[k + q] != mark[q]:
                found = False
                break
        if found:
            return True
    return False


@kernel
def _member(sorted_set: U64Array, h: np.uint64) -> bool:
    at = np.searchsorted(sorted_set, h)
    return bool(at < sorted_set.size and sorted_set[at] == h)


@kernel
def _punct(buf: U8Array, k: int, hi: int) -> int:
    """The length of the non-ASCII punctuation ``str.split`` keeps in a word and the guard's normal
    form drops (curly quotes, dashes, the ellipsis, the bullet) at ``buf[k]``, else 0."""
    if k + 2 < hi and buf[k] == 0xE2 and buf[k + 1] == 0x80:
        c = buf[k + 2]
        if c in (0x93, 0x94, 0x98, 0x99, 0x9C, 0x9D, 0xA2, 0xA6):
            return 3
    return 0


@kernel
def _lettered(buf: U8Array, lo: int, hi: int) -> bool:
    """Whether ``buf[lo:hi]`` may hold a lettered reference ``x(b)`` (``(s)`` is none); a non-ASCII
    byte where a letter may stand counts as one."""
    for k in range(lo + 1, hi - 2):
        if buf[k] != 40:
            continue
        p = buf[k - 1]
        if not (p >= 128 or p == 41 or p == 95 or 48 <= p <= 57 or 65 <= p <= 90 or 97 <= p <= 122):
            continue
        n = 0
        q = k + 1
        while q < hi and n <= 4 and (buf[q] >= 128 or 65 <= buf[q] <= 90 or 97 <= buf[q] <= 122):
            n += 1
            q += 1
        plural = n == 1 and (buf[k + 1] == 115 or buf[k + 1] == 83)  # (s)
        if 1 <= n <= 4 and q < hi and buf[q] == 41 and not plural:
            return True
    return False


@kernel
def _strip_marks(
    buf: U8Array, lo: int, hi: int, out_lo: I64Array, out_hi: I64Array, n: int, marks: U8Array
) -> int:
    """The parts of word ``buf[lo:hi]`` once link targets ``](...)`` are left out (as
    :func:`~chunkdedup.dedup.meaning._text` leaves them out, a space in their place), appended to
    ``out_lo``/``out_hi`` from ``n``; returns the new count, or -1 (the Python reading decides) where a
    target does not close within the word or a URL or ``www.`` address stands in it."""
    begin = lo
    k = lo
    while k < hi:
        if buf[k] == 93 and k + 1 < hi and buf[k + 1] == 40:  # ](target)
            q = k + 2
            while q < hi and buf[q] != 41:
                if buf[q] >= 128:
                    return -1  # a space beyond ASCII may end the target: leave the pair to Python
                q += 1
            if q >= hi:
                return -1  # a link's title or a space inside its target: leave the pair to Python
            if _holds(buf, begin, k, marks[9:12]):
                return -1  # a URL before a link target: Python's order of removal, not read here
            if k > begin:
                out_lo[n] = begin
                out_hi[n] = k
                n += 1
            begin = q + 1
            k = q + 1
            continue
        k += 1
    # a URL or a www. address standing in the text names a site: the Python reading compares them
    if _holds(buf, begin, hi, marks[9:12]) or _holds(buf, begin, hi, marks[14:18]):
        return -1
    if hi > begin:
        out_lo[n] = begin
        out_hi[n] = hi
        n += 1
    return n


@kernel
def _titled(buf: U8Array, lo: int, hi: int) -> bool:
    """Whether ``buf[lo:hi]`` holds a link with a title (``](target "title")``): its words spread."""
    for k in range(lo, hi - 1):
        if buf[k] != 93 or buf[k + 1] != 40:
            continue
        q = k + 2
        while q < hi and buf[q] != 41 and not _space(buf[q]):
            q += 1
        while q < hi and (buf[q] == 32 or buf[q] == 9):
            q += 1
        if q < hi and q > k + 2 and buf[q] == 34 and _space(buf[q - 1]):
            return True
    return False


@kernel
def _opens_link(buf: U8Array, lo: int, hi: int) -> bool:
    """Whether word ``buf[lo:hi]`` opens a link's text (``[``, after emphasis marks)."""
    k = lo
    while k < hi and (buf[k] == 42 or buf[k] == 95):
        k += 1
    return k < hi and buf[k] == 91


@kernel
def _beside_joining(
    buf: U8Array, hs: U64Array, s: I64Array, e: I64Array, w: int, other: U64Array,
    joining: U64Array, function: U64Array, opens: U64Array,
) -> bool:
    """Whether a word equal to word ``w`` (of the words ``s``/``e``, byte hashes ``hs``; ``other``:
    the other side's) may stand as an enumeration's item: after a joining word, or before one where
    an item opens (the word before closes with a comma, a colon or a semicolon, is one of ``opens``
    or changed too, or there is none), word ``w`` being no function word and holding no digit."""
    h = _norm_hash(buf, s[w], e[w])[0]
    if _member(function, h):
        return False
    for k in range(s[w], e[w]):
        if 48 <= buf[k] <= 57:
            return False  # a figure: the number guard's
    for x in range(hs.size):
        if hs[x] != hs[w]:
            continue
        if x > 0 and _member(joining, _norm_hash(buf, s[x - 1], e[x - 1])[0]):
            return True
        if x + 1 >= hs.size or not _member(joining, _norm_hash(buf, s[x + 1], e[x + 1])[0]):
            continue
        if x == 0 or _member(opens, _norm_hash(buf, s[x - 1], e[x - 1])[0]):
            return True
        q = e[x - 1] - 1  # the last mark of the word before, closing marks aside
        while q > s[x - 1] and buf[q] in (41, 93, 125, 42, 95, 96, 34, 39, 92):
            q -= 1
        if buf[q] == 44 or buf[q] == 58 or buf[q] == 59 or buf[q] >= 128:
            return True  # a comma, colon or semicolon (or a mark beyond ASCII: left to Python)
        if _count(hs, hs[x - 1]) != _count(other, hs[x - 1]):
            return True  # the word before changed too: the item may start there
    return False


@kernel
def _count(hs: U64Array, h: np.uint64) -> int:
    n = 0
    for x in range(hs.size):
        if hs[x] == h:
            n += 1
    return n


@kernel
def _figures_moved(buf: U8Array, sa: I64Array, ea: I64Array, sb: I64Array, eb: I64Array) -> bool:
    """Whether the words holding a digit are the same on both sides (normal forms) in another order
    ("30 days ... 60 days" against "60 days ... 30 days")."""
    fa = _figures(buf, sa, ea)
    fb = _figures(buf, sb, eb)
    if fa.size != fb.size or fa.size < 2:
        return False
    same = True
    for k in range(fa.size):
        if fa[k] != fb[k]:
            same = False
            break
    if same:
        return False
    return bool(np.all(np.sort(fa) == np.sort(fb)))


@kernel
def _figures(buf: U8Array, s: I64Array, e: I64Array) -> U64Array:
    """The normal forms' hashes of the words holding an ASCII digit, in order."""
    out = np.empty(s.size, np.uint64)
    n = 0
    for w in range(s.size):
        for k in range(s[w], e[w]):
            if 48 <= buf[k] <= 57:
                h = _norm_hash(buf, s[w], e[w])[0]
                out[n] = h
                n += 1
                break
    return out[:n]


@kernel
def _pair_settled(
    buf: U8Array, a0: int, a1: int, b0: int, b1: int,
    listed: U64Array, referring: U64Array, joining: U64Array, function: U64Array, opens: U64Array,
    marks: U8Array, content: int,
) -> int:
    la = a1 - a0
    lb = b1 - b0
    n = min(la, lb)
    head = 0
    while head < n and buf[a0 + head] == buf[b0 + head]:
        head += 1
    if head == la and head == lb:
        return SETTLED
    tail = 0
    while tail < n - head and buf[a1 - 1 - tail] == buf[b1 - 1 - tail]:
        tail += 1
    # read from the word before the first difference (a part's name before its letter) to the end of
    # the word after the one where the last difference ends: cut at whitespace inside the shared head
    # and tail
    start = head
    while start > 0 and not _space(buf[a0 + start - 1]):
        start -= 1
    while start > 0 and _space(buf[a0 + start - 1]):
        start -= 1
    while start > 0 and not _space(buf[a0 + start - 1]):
        start -= 1
    cut = la - tail
    while cut < la and not _space(buf[a0 + cut]):
        cut += 1
    while cut < la and _space(buf[a0 + cut]):  # and the word after it (a joining word beside an item)
        cut += 1
    while cut < la and not _space(buf[a0 + cut]):
        cut += 1
    after = la - cut
    wa0, wa1, wb0, wb1 = a0 + start, a1 - after, b0 + start, b1 - after
    # an HTML comment may cross the stretch: _text reads the whole texts then
    if _holds(buf, wa0, wa1, marks[0:4]) or _holds(buf, wb0, wb1, marks[0:4]):
        return UNKNOWN
    if _holds(buf, wa0, wa1, marks[4:7]) or _holds(buf, wb0, wb1, marks[4:7]):
        return UNKNOWN
    # an image, a hidden address or a link's title may spread over words: _text reads them whole
    if _holds(buf, wa0, wa1, marks[12:14]) or _holds(buf, wb0, wb1, marks[12:14]):
        return UNKNOWN
    if _holds(buf, wa0, wa1, marks[18:27]) or _holds(buf, wb0, wb1, marks[18:27]):
        return UNKNOWN
    if _titled(buf, a0, a1) or _titled(buf, b0, b1):
        return UNKNOWN
    ha, sa, ea = _words(buf, wa0, wa1)
    hb, sb, eb = _words(buf, wb0, wb1)
    if _figures_moved(buf, sa, ea, sb, eb):
        return UNKNOWN  # the same figures in another order
    oa = np.argsort(ha, kind="mergesort")
    ob = np.argsort(hb, kind="mergesort")
    changed = np.empty(oa.size + ob.size, np.int64)  # word index; b's words offset by oa.size
    nc = 0
    i = 0
    j = 0
    while i < oa.size or j < ob.size:
        if i < oa.size and j < ob.size and ha[oa[i]] == hb[ob[j]]:
            if not _same(buf, sa[oa[i]], ea[oa[i]], sb[ob[j]], eb[ob[j]]):
                return UNKNOWN  # two words share a hash: leave the pair to the Python reading
            i += 1
            j += 1
        elif j >= ob.size or (i < oa.size and ha[oa[i]] < hb[ob[j]]):
            changed[nc] = oa[i]
            nc += 1
            i += 1
        else:
            changed[nc] = oa.size + ob[j]
            nc += 1
            j += 1
    if nc == 0:
        return READ  # the same words, moved or not at all: read in full
    # the changed words as the Python reading sees them: link targets and URLs left out
    most = 0
    for c in range(nc):
        w = changed[c]
        most += (ea[w] - sa[w] if w < oa.size else eb[w - oa.size] - sb[w - oa.size]) // 2 + 1
    part_lo = np.empty(most, np.int64)
    part_hi = np.empty(most, np.int64)
    part_side = np.empty(most, np.int64)
    part_word = np.empty(most, np.int64)  # the word a part is of (b's words offset by oa.size)
    np_ = _ZERO
    for c in range(nc):
        w = changed[c]
        if w < oa.size:
            lo, hi, d = sa[w], ea[w], 1
        else:
            lo, hi, d = sb[w - oa.size], eb[w - oa.size], -1
        was = np_
        np_ = _strip_marks(buf, lo, hi, part_lo, part_hi, np_, marks)
        if np_ < 0:
            return UNKNOWN
        for q in range(was, np_):
            part_side[q] = d
            part_word[q] = w
    # parts equal on both sides cancel (a link's target was all that changed)
    gone = np.zeros(np_, np.bool_)
    for p in range(np_):
        if gone[p] or part_side[p] != 1:
            continue
        for q in range(np_):
            if gone[q] or part_side[q] != -1:
                continue
            if _same(buf, part_lo[p], part_hi[p], part_lo[q], part_hi[q]):
                gone[p] = True
                gone[q] = True
                break
    forms = np.empty(np_, np.uint64)
    delta = np.empty(np_, np.int64)
    words = np.empty(np_, np.int64)
    links = np.zeros(np_, np.bool_)
    commas = np.zeros(np_, np.bool_)
    bullets = np.zeros(4, np.int64)  # the count each side holds more of *, +, - and the bullet sign
    nf = 0
    refers = False
    for p in range(np_):
        if gone[p]:
            continue
        lo, hi = part_lo[p], part_hi[p]
        if hi - lo == 1 and (buf[lo] == 42 or buf[lo] == 43 or buf[lo] == 45):
            bullets[0 if buf[lo] == 42 else (1 if buf[lo] == 43 else 2)] += part_side[p]
        elif hi - lo == 3 and buf[lo] == 0xE2 and buf[lo + 1] == 0x80 and buf[lo + 2] == 0xA2:
            bullets[3] += part_side[p]
        first = -1
        has_comma = False
        k = lo
        while k < hi:
            ch = buf[k]
            if ch == 44:
                has_comma = True
            if ch >= 128:
                skip = _punct(buf, k, hi)
                if skip == 0:
                    return UNKNOWN  # a letter or space beyond ASCII
                k += skip
                continue
            if ch == 64:
                return UNKNOWN  # an address
            if (ch == 45 or ch == 47) and lo < k < hi - 1 and _alnum(buf[k - 1]) and _alnum(buf[k + 1]):
                return UNKNOWN  # a compound or a path: the Python reading reads its parts
            if ch == 40:
                refers = True
            if first < 0 and (65 <= ch <= 90 or 97 <= ch <= 122 or 48 <= ch <= 57):
                first = ch
            k += 1
        if 65 <= first <= 90:
            return UNKNOWN  # a capital: a name or a sentence's start
        h, length, roman = _norm_hash(buf, lo, hi)
        if length == 1 or (roman and length > 0) or _member(referring, h):
            refers = True
        forms[nf] = h
        delta[nf] = part_side[p]
        words[nf] = part_word[p]
        links[nf] = _opens_link(buf, lo, hi)
        commas[nf] = has_comma
        nf += 1
    if nf == 0:
        return READ  # only moved: read in full
    order = np.argsort(forms[:nf], kind="mergesort")
    gained = 0
    lost = 0
    moved = True
    unknown = False
    k = 0
    while k < nf:
        h = forms[order[k]]
        net = 0
        comma = False
        first_k = k
        while k < nf and forms[order[k]] == h:
            net += delta[order[k]]
            comma = comma or commas[order[k]]
            k += 1
        if net != 0:
            moved = False
            for q in range(first_k, k):
                # a link's words, or an enumeration's item, may have come or gone (after the counts)
                w = words[order[q]]
                if w < oa.size:
                    beside = _beside_joining(buf, ha, sa, ea, w, hb, joining, function, opens)
                else:
                    beside = _beside_joining(buf, hb, sb, eb, w - oa.size, ha, joining, function, opens)
                unknown = unknown or links[order[q]] or beside
            if _member(listed, h):
                return READ
            if comma:
                return UNKNOWN  # a comma-closed item may have come or gone: the Python reading decides
            if net > 0:
                gained += net
            else:
                lost -= net
    if moved or gained >= content or lost >= content:
        return READ
    if unknown:
        return UNKNOWN
    for q in range(4):
        if bullets[q] != 0:
            return UNKNOWN  # a list's item came or went: the Python reading decides
    if refers:  # a reference needs a lettered x(b) or a part's name in the stretch
        if _lettered(buf, wa0, wa1) or _lettered(buf, wb0, wb1):
            return UNKNOWN
        for c in range(ha.size):
            h, length, roman = _norm_hash(buf, sa[c], ea[c])
            if _member(referring, h):
                return UNKNOWN
        for c in range(hb.size):
            h, length, roman = _norm_hash(buf, sb[c], eb[c])
            if _member(referring, h):
                return UNKNOWN
    return SETTLED


@kernel
def _settled_all(
    buf: U8Array, a_lo: I64Array, a_hi: I64Array, b_lo: I64Array, b_hi: I64Array,
    listed: U64Array, referring: U64Array, joining: U64Array, function: U64Array, opens: U64Array,
    marks: U8Array, content: int,
) -> I8Array:
    out = np.zeros(a_lo.size, np.int8)
    for p in range(a_lo.size):
        out[p] = _pair_settled(
            buf, a_lo[p], a_hi[p], b_lo[p], b_hi[p], listed, referring, joining, function, opens, marks,
            content,
        )
    return out


#: the marks the kernel looks for, one after another: ``<!--``, ``-->``, ``](``, ``://``, an image's
#: ``![`` (12:14), ``www.`` (14:18) and a hidden address's ``protected`` (18:27)
_MARKS = np.frombuffer(b"<!---->](://![www.protected", dtype=np.uint8).copy()


def norm_hashes(words: frozenset[str]) -> U64Array:
    """The sorted hashes of ``words``' normal forms as the kernel hashes them (ASCII words only)."""
    out = []
    with np.errstate(over="ignore"):  # FNV-1a multiplies modulo 2**64
        for word in words:
            data = np.frombuffer(word.encode("ascii"), dtype=np.uint8)
            out.append(_norm_hash.py_func(data, 0, data.size)[0])  # type: ignore[attr-defined]
    return np.unique(np.asarray(out, dtype=np.uint64))


def settled(
    texts: list[bytes],
    pairs: I64Array,
    listed: U64Array,
    referring: U64Array,
    content: int,
    joining: U64Array,
    function: U64Array,
    opens: U64Array,
) -> I8Array:
    """For each row ``(i, j)`` of ``pairs``, what the kernel knows of texts ``i`` and ``j`` (UTF-8):
    ``SETTLED`` (certainly no meaning change the guard reads; see the module docstring), ``READ`` (the
    word-by-word reading of :func:`~chunkdedup.dedup.meaning.meaning_diff` decides it, its count need
    not run) or ``UNKNOWN`` (``meaning_diff`` decides it all). ``listed`` and ``referring``:
    :func:`norm_hashes` of the listed words and of the parts' names; ``content``: ``CONTENT_WORDS``;
    ``joining``, ``function`` and ``opens``: of the joining words (and, or, nor), of the words that make
    no enumeration's item alone and of those after which an enumeration's first item opens."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not pairs.size:
        return np.zeros(0, dtype=np.int8)
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths)
    starts = ends - lengths
    buf = np.frombuffer(b"".join(texts), dtype=np.uint8)
    if not buf.size:
        buf = np.zeros(1, dtype=np.uint8)
    a, b = pairs[:, 0], pairs[:, 1]
    result: I8Array = _settled_all(
        buf, starts[a], ends[a], starts[b], ends[b], listed, referring, joining, function, opens, _MARKS,
        content,
    )
    return result
