"""The number/date guard: two near-duplicate texts that differ in a number or a date are versions,
not copies, and must never be merged.

``numeric_tokens(key)`` reads every token that holds a digit from an exact key (casefolded,
single-spaced, see :func:`chunkdedup.normalize.exact_key`) and writes it in a canonical form, so
that a change of *value* shows and a change of *formatting* does not:

=============================  ==========================  =========================================
written                        token                       rule
=============================  ==========================  =========================================
``march 17, 2026``             ``2026-03-17``              month-name dates become one ISO token;
``17 march 2026``              ``2026-03-17``              day/month order, commas, ``of``, ordinal
``mar. 17th``                  ``03-17``                   suffixes and abbreviations do not matter;
``march 2026``                 ``2026-03``                 a missing year or day is left out
``2026-3-17``                  ``2026-03-17``              ISO dates are zero-padded
``3/17/26``                    ``3/17/26``                 numeric dates: leading zeros dropped,
                                                           order kept (it is ambiguous, not ours)
``$1,250.00``, ``$1250``       ``$1250``                   amounts: currency symbol kept, value
``$1.2 million``               ``$1200000``                canonical (separators, trailing zeros
                                                           and scale words folded into the value)
``3.50%``, ``3.5 percent``     ``3.5%``                    percentages: value canonical
``10:30 a.m.``, ``9 p.m.``     ``10:30am``, ``9pm``        times (an hour only with a.m./p.m.)
``-5%``, ``(−0.3)``            ``-5%``, ``-0.3``           a minus sign opening a word is the
                                                           value's (``covid-19``, ``10-20``: none)
``1st``, ``21st``              ``1st``, ``21st``           ordinals, as written
``1,000``, ``2.10``, ``2021``  ``1000``, ``2.10``, ``2021``  other numbers: thousands separators
                                                           dropped, decimals kept as written
                                                           (section ``2.10`` is not ``2.1``)
``sha256``, ``30days``         ``sha256``, ``30days``      any other word holding a digit, verbatim
=============================  ==========================  =========================================

Every digit of the key belongs to exactly one token, so no digit change can slip through; a month
name only counts when it is written next to a day or a year ("in march" is a word, "march 2026" a
date). The regular expressions are module constants, compiled once at import; nothing else is
kept between calls.

``guard_diff(a, b)`` is the symmetric multiset difference of the two token lists: ``-tok`` for a
token only (or more often) in ``a``, ``+tok`` for one only in ``b``, sorted by token then sign.
An empty tuple means the guard passes.

``guard_fingerprints(keys)`` is the fast path for many pairs: one uint64 per key such that equal
fingerprints imply ``guard_diff == ()``. A key's *digit windows* are its words holding a digit, a
``$`` or any non-ASCII byte (which covers other currency signs and digit scripts), each widened by
one word to the left and three to the right (the most a token reaches: ``17th of march, 2026``),
overlapping windows merged. No token crosses a window's edge and a window tokenises the same alone
as in its key, so the token multiset is the union of the windows' token multisets; the fingerprint
is a hash of the multiset of window texts (a compiled pass over UTF-8 bytes, about a microsecond a
key). Pairs whose fingerprints differ, a small share, get the exact check.

Example:
    >>> numeric_tokens("refunds within 30 days of march 1, 2024: $1,250.00 (3.5%)")
    ('$1250', '2024-03-01', '3.5%', '30')
    >>> guard_diff("within 30 days", "within 45 days")
    ('-30', '+45')
    >>> guard_diff("within 30 days", "inside 30 days")
    ()
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation

import numpy as np
import numpy.typing as npt

from chunkdedup.dedup.minhash import fmix64  # one 64-bit finaliser for every compiled hash
from chunkdedup.jit import kernel

__all__ = ["guard_diff", "guard_fingerprints", "numeric_sequence", "numeric_tokens", "token_diff"]

U8Array = npt.NDArray[np.uint8]
U64Array = npt.NDArray[np.uint64]
I64Array = npt.NDArray[np.int64]

_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}  # fmt: skip
_SCALES: dict[str, int] = {
    "thousand": 10**3, "k": 10**3, "million": 10**6, "m": 10**6, "mm": 10**6, "mn": 10**6,
    "billion": 10**9, "bn": 10**9, "b": 10**9, "trillion": 10**12, "tn": 10**12,
}  # fmt: skip

# Word edges: a token neither starts nor ends inside a run of letters/digits.
_NB = r"(?<![^\W_])"
_NA = r"(?![^\W_])"
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=lambda w: (-len(w), w))) + r")\.?"
# "section 5 may apply" is not the fifth of May: day-first "may" needs a year.
_MONTH_NOT_MAY = r"(?:" + "|".join(sorted(set(_MONTHS) - {"may"}, key=lambda w: (-len(w), w))) + r")\.?"
_DAY = r"(?:3[01]|[12][0-9]|0?[1-9])(?:st|nd|rd|th)?(?![0-9])"
_YEAR = r"[12][0-9]{3}(?![0-9])"
_NUM = r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?"
_SCALE = "|".join(sorted(_SCALES, key=lambda w: (-len(w), w)))

# Every token starts at a digit or a currency sign. Scanning for those with a bare character class
# runs at C speed (the regex engine skips to the next candidate without trying each alternative at
# every position): a 300-word key costs a few microseconds, not hundreds.
_LEAD = re.compile(r"[\d$€£¥₹]")
#: minus signs (the hyphen-minus, U+2212), and what may stand before one that opens a word
_MINUS = "-\u2212"
_SIGN_BEFORE = " ([{\"'"
# A month name written just before the digit: "march 17", "mar. 17", "march 2026".
_MONTH_BEFORE = re.compile(rf"{_NB}(?P<m>{_MONTH}),? $")
_MONTH_LOOKBACK = 12
_AFTER_MONTH = re.compile(rf"{_NB}(?:(?P<d>{_DAY})(?:,? (?P<y>{_YEAR}))?|(?P<y_only>{_YEAR})){_NA}")
_TOKEN = re.compile(
    "|".join(
        [
            # 17 march 2026 / 17th of march, 2026
            rf"{_NB}(?P<dm_d>{_DAY}) (?:of )?(?P<dm_m>{_MONTH_NOT_MAY}|may(?=,? {_YEAR}))"
            rf"(?:,? (?P<dm_y>{_YEAR}))?{_NA}",
            # 2026-03-17, 2026/3/17
            rf"{_NB}(?P<iso_y>[0-9]{{4}})(?P<iso_sep>[-/])(?P<iso_m>[0-9]{{1,2}})(?P=iso_sep)"
            rf"(?P<iso_d>[0-9]{{1,2}}){_NA}",
            # 3/17/2026, 17-03-26
            rf"{_NB}(?P<num_date>[0-9]{{1,2}}(?P<nd_sep>[-/])[0-9]{{1,2}}(?P=nd_sep)[0-9]{{2,4}}){_NA}",
            # 10:30, 10:30:15 a.m.
            rf"{_NB}(?P<time>[0-9]{{1,2}}:[0-9]{{2}}(?::[0-9]{{2}})?)(?: ?(?P<ampm>[ap])\.?m\b\.?)?{_NA}",
            # 9 a.m., 9pm: an hour is a time only with its a.m./p.m. (9 a.m. is not 9 p.m.)
            rf"{_NB}(?P<hour>1[0-2]|0?[1-9]) ?(?P<h_ampm>[ap])\.?m\b\.?{_NA}",
            # $1,250.00, € 3 million
            rf"(?P<cur>[$€£¥₹]) ?(?P<amount>{_NUM})(?: ?(?P<scale>{_SCALE}){_NA})?(?![0-9])",
            # 3.5%, 3.5 percent
            rf"{_NB}(?P<pct>{_NUM})(?: ?%| ?per ?cent{_NA})",
            # 1st, 22nd
            rf"{_NB}(?P<ordinal>[0-9]+(?:st|nd|rd|th)){_NA}",
            # 1,000 / 2.10 / 2021 / 1.2.3
            rf"{_NB}(?P<number>[0-9]{{1,3}}(?:,[0-9]{{3}})+(?:\.[0-9]+)*|[0-9]+(?:\.[0-9]+)*){_NA}",
            # anything else holding a digit (sha256, 30days, v2): from here to the word's end; the
            # start is moved back to the word's start in _word_start
            r"(?P<word>\d[^\W_]*)",
        ]
    )
)


def _month_date(month: str, day: str | None, year: str | None) -> str:
    m = f"{_MONTHS[month.rstrip('.')]:02d}"
    d = f"{int(day.rstrip('stndrh')):02d}" if day else None
    if d is None:
        return f"{year}-{m}"
    return f"{year}-{m}-{d}" if year else f"{m}-{d}"


def _value(number: str, scale: int = 1) -> str:
    """The canonical decimal form of a value: no separators, no trailing zeros, no exponent."""
    try:
        v = Decimal(number.replace(",", "")) * scale
    except InvalidOperation:  # pragma: no cover - the regex only passes digits, dots and commas
        return number
    text = format(v, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _word_start(key: str, pos: int) -> int:
    while pos > 0 and key[pos - 1].isalnum():
        pos -= 1
    return pos


def _token(key: str, m: re.Match[str]) -> str:
    g = m.group
    if (number := g("number")) is not None:  # the common case first
        return number.replace(",", "")
    if g("word") is not None:  # any other word holding a digit
        return key[_word_start(key, m.start()) : m.end()]
    if g("dm_m"):
        return _month_date(g("dm_m"), g("dm_d"), g("dm_y"))
    if g("iso_y"):
        return f"{g('iso_y')}-{int(g('iso_m')):02d}-{int(g('iso_d')):02d}"
    if g("num_date"):
        return "/".join(str(int(p)) for p in re.split(r"[-/]", g("num_date")))
    if g("time"):
        return g("time") + (g("ampm") + "m" if g("ampm") else "")
    if g("hour"):
        return str(int(g("hour"))) + g("h_ampm") + "m"
    if g("amount"):
        scale = _SCALES[g("scale")] if g("scale") else 1
        return g("cur") + _value(g("amount"), scale)
    if g("pct"):
        return _value(g("pct")) + "%"
    return g("ordinal")


def _tokens(key: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while (lead := _LEAD.search(key, pos)) is not None:
        p = lead.start()
        if (
            p >= 1
            and key[p - 1] == " "
            and (before := _MONTH_BEFORE.search(key, max(0, p - _MONTH_LOOKBACK), p))
        ):
            after = _AFTER_MONTH.match(key, p)
            if after is not None:
                year = after.group("y") or after.group("y_only")
                out.append(_month_date(before.group("m"), after.group("d"), year))
                pos = after.end()
                continue
        m = _TOKEN.match(key, p)
        if m is None:  # a currency sign with no amount
            pos = p + 1
            continue
        token = _token(key, m)
        # a minus sign opening the word (-5%, −0.3): a change of sign is a change of value; a hyphen
        # inside a word or a range (covid-19, 10-20) is none
        if p >= 1 and key[p - 1] in _MINUS and (p == 1 or key[p - 2] in _SIGN_BEFORE):
            token = "-" + token
        out.append(token)
        pos = m.end()
    return out


def numeric_tokens(key: str) -> tuple[str, ...]:
    """The sorted multiset of number, amount, percentage and date tokens of an exact key.

    Example:
        >>> numeric_tokens("effective 17 march 2026, fees rise 4% to $1,000")
        ('$1000', '2026-03-17', '4%')
    """
    return tuple(sorted(_tokens(key)))


def numeric_sequence(key: str) -> tuple[str, ...]:
    """The number, amount, percentage and date tokens of an exact key in the order the key writes
    them (:func:`numeric_tokens` sorts them).

    Example:
        >>> numeric_sequence("pay 60 days after notice, or 30 days after")
        ('60', '30')
    """
    return tuple(_tokens(key))


def token_diff(ta: tuple[str, ...], tb: tuple[str, ...]) -> tuple[str, ...]:
    """``guard_diff`` of two keys from their ``numeric_tokens``."""
    if ta == tb:
        return ()
    ca, cb = Counter(ta), Counter(tb)
    # the tokens whose counts differ, from the (token, count) pairs only one side has (a set operation
    # in C, not two Counter subtractions in Python)
    changed = {t for t, _ in ca.items() ^ cb.items()}
    out = [(t, 0) for t in changed for _ in range(ca.get(t, 0) - cb.get(t, 0))]
    out += [(t, 1) for t in changed for _ in range(cb.get(t, 0) - ca.get(t, 0))]
    out.sort()
    return tuple(("-" if side == 0 else "+") + t for t, side in out)


def guard_diff(a: str, b: str) -> tuple[str, ...]:
    """The numeric tokens that differ between two keys, ``-`` only in ``a``, ``+`` only in ``b``;
    ``()`` means the guard passes.

    Example:
        >>> guard_diff("effective march 1, 2024", "effective march 1, 2025")
        ('-2024-03-01', '+2025-03-01')
    """
    if a == b:
        return ()
    return token_diff(numeric_tokens(a), numeric_tokens(b))


# ---------------------------------------------------------------------------------------------
# Fingerprints: the compiled fast path (numba compiles on first call, caches on disk)
# ---------------------------------------------------------------------------------------------

_U64 = np.uint64
_WINDOW_LEFT = 1
_WINDOW_RIGHT = 3


@kernel
def _fingerprint_kernel(buf: U8Array, offsets: I64Array, out: U64Array) -> None:
    """``out[r]``: an order-free hash of the digit windows of key ``buf[offsets[r]:offsets[r + 1]]``."""
    longest = 1
    for r in range(offsets.size - 1):
        longest = max(longest, offsets[r + 1] - offsets[r])
    starts = np.empty(longest // 2 + 2, np.int64)
    ends = np.empty(longest // 2 + 2, np.int64)
    marked = np.empty(longest // 2 + 2, np.bool_)
    for r in range(offsets.size - 1):
        lo = offsets[r]
        hi = offsets[r + 1]
        nw = 0
        i = lo
        while i < hi:  # split on spaces; mark words holding a digit, '$' or a non-ASCII byte
            if buf[i] == 32:
                i += 1
                continue
            starts[nw] = i
            mark = False
            while i < hi and buf[i] != 32:
                c = buf[i]
                if (48 <= c <= 57) or c == 36 or c >= 128:
                    mark = True
                i += 1
            ends[nw] = i
            marked[nw] = mark
            nw += 1
        acc = _U64(0)
        count = _U64(0)
        w = 0
        while w < nw:
            if not marked[w]:
                w += 1
                continue
            first = max(0, w - _WINDOW_LEFT)
            last = min(nw - 1, w + _WINDOW_RIGHT)
            w += 1
            while w < nw and w <= last + _WINDOW_LEFT + 1:  # merge windows that touch or overlap
                if marked[w]:
                    last = min(nw - 1, w + _WINDOW_RIGHT)
                w += 1
            h = _U64(0xCBF29CE484222325)
            for b in range(starts[first], ends[last]):
                h = (h ^ _U64(buf[b])) * _U64(0x100000001B3)
            acc += fmix64(h ^ _U64(ends[last] - starts[first]))
            count += _U64(1)
        out[r] = fmix64(acc ^ fmix64(count + _U64(0x9E3779B97F4A7C15)))


def guard_fingerprints(keys: Sequence[str]) -> U64Array:
    """One uint64 per key; equal fingerprints imply ``guard_diff(a, b) == ()`` (not the reverse).

    Example:
        >>> f = guard_fingerprints(["pay within 30 days", "pay in 30 days", "pay within 45 days"])
        >>> bool(f[0] == f[2])
        False
    """
    encoded = [k.encode("utf-8", "surrogatepass") for k in keys]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=offsets[1:])
    buf = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    out = np.empty(len(encoded), dtype=np.uint64)
    if len(encoded):
        _fingerprint_kernel(buf, offsets, out)
    return out
