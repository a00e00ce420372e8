"""Pure text normalisation: the two keys and the hashes built on them.

Two keys, two purposes:

* the **exact key** keeps digits, because numbers make versions distinct ("30 days" vs "45 days");
* the **boilerplate key** masks every token that holds a digit, and merges adjacent masks, so page
  numbers and per-document case ids ("Page 2 of 4 NYC08CA055", "Page 1 of 4") do not hide a
  repeated footer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import xxhash

_DIGIT = re.compile(r"\d")
_SPACE = re.compile(r"\s")
_ASCII_DIGITS = "0123456789"
_LETTER = re.compile(r"[^\W\d_]")
# Tokens generated per copy (a template's document GUID, a long hex id of 16+ characters holding a digit
# and a letter): removed from the exact key. One pass finds both; the hex run's digit-and-letter test is
# made on the token (two lookaheads at every word start cost more than the rest of the key together).
_ID_TOKEN = re.compile(
    r"\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,})\b"
)
# Every id token starts with eight hex characters: a text without such a run (most prose) skips the
# pass above, which costs more than the plain scan for the run.
_HEX_RUN = re.compile(r"[0-9a-f]{8}")
_HEX_DIGIT = re.compile(r"[0-9]")
_HEX_LETTER = re.compile(r"[a-f]")
_SPACE_OR_DIGIT = re.compile(r"[\s\d]")
# Bytes tables of the fast paths (see _fold): ASCII lowered, ASCII whitespace made b" "; hex and
# digit marks. Every non-ASCII byte maps to itself (_FOLD) or to a byte no mark uses.
_ASCII = bytes(range(128))
_WHITESPACE = "".join(chr(i) for i in range(128) if chr(i).isspace())
_FOLD = bytes(
    ord(" ") if chr(i) in _WHITESPACE else ord(chr(i).lower()) if i < 128 else i for i in range(256)
)
_HEX_MARKS = bytes(ord("x") if chr(i) in "0123456789abcdef" else ord(".") for i in range(256))
_HEX8 = b"x" * 8
_SPACES = re.compile(rb"  +")
_DIGIT_MARK = ord("0")
_DIGIT_MARKS = bytes(_DIGIT_MARK if chr(i) in _ASCII_DIGITS else ord(".") for i in range(256))


def _drop_id(m: re.Match[str]) -> str:
    token = m.group()
    if "-" in token or (_HEX_DIGIT.search(token) and _HEX_LETTER.search(token)):
        return " "
    return token
# A letter-digit run's parts: each digit run, and each letter run of at least three letters.
_PARTS = re.compile(r"\d+|[^\W\d_]{3,}")
_MIXED = re.compile(r"(?=\w*\d)(?=\w*[^\W\d_])[^\W_]+")
#: a letter-digit run in a text: tried only where a run begins (the lookbehind), so a long run costs
#: one scan, not one per character (70,000 letters took 35 s)
_MIXED_RUN = re.compile(r"(?<![^\W_])(?=[^\W_]*\d)(?=[^\W_]*[^\W\d_])[^\W_]+")


def collapse_ws(text: str) -> str:
    """Collapse every whitespace run to one space and strip the ends.

    ``str.split()`` splits where ``\\s+`` matches (both test ``Py_UNICODE_ISSPACE``), 5x faster.
    """
    return " ".join(text.split())


def exact_key(text: str) -> str:
    """The exact-dedup key: NFKC, casefold, identifier-like tokens removed, whitespace collapsed.

    Example:
        >>> exact_key("Refunds  within\\n30 days. Ref 123e4567-e89b-12d3-a456-426614174000")
        'refunds within 30 days. ref'
    """
    t = text if text.isascii() else unicodedata.normalize("NFKC", text)  # NFKC of ASCII is ASCII
    folded = _fold(t, _SPACE)
    if folded is None or _HEX8 in folded.translate(_HEX_MARKS):
        return _exact_key(t)  # NFKC is idempotent: t gives text's key
    return _squeeze(folded).decode()


def _exact_key(text: str) -> str:
    """:func:`exact_key` on str alone: the definition its bytes path must equal."""
    t = unicodedata.normalize("NFKC", text).casefold()
    if _HEX_RUN.search(t) is not None:
        t = _ID_TOKEN.sub(_drop_id, t)
    return " ".join(t.split())  # str.split's whitespace is re's \s: collapse_ws, 3x faster


def boilerplate_key(text: str) -> str:
    """The boilerplate key: NFKC, casefold, whitespace collapsed, each run of tokens holding a digit
    masked as one ``#``.

    Example:
        >>> boilerplate_key("Apple Inc. | Q3 2022 Form 10-Q | 17")
        'apple inc. | # form # | #'
        >>> boilerplate_key("Page 2 of 4 NYC08CA055") == boilerplate_key("Page 1 of 4")
        True
    """
    t = text if text.isascii() else unicodedata.normalize("NFKC", text)
    folded = _fold(t, _SPACE_OR_DIGIT)
    if folded is None:
        return _boilerplate_key(t)
    digits = folded.translate(_DIGIT_MARKS)
    d = digits.find(_DIGIT_MARK)
    if d < 0:
        return _squeeze(folded).decode()
    # as in _boilerplate_key, with a gap between two masked runs collapsed whole: in a text without a
    # double space (the only whitespace left is b" ") that is stripping it, not splitting it into words
    squeeze = bytes.strip if b"  " not in folded else _squeeze
    parts: list[bytes] = []
    prev = 0
    n = len(folded)
    while d >= 0:
        space = folded.rfind(b" ", prev, d)
        start = prev if space < 0 else space + 1
        space = folded.find(b" ", d)
        end = n if space < 0 else space
        gap = squeeze(folded[prev:start])
        if gap or prev == 0:
            if gap:
                parts.append(gap)
            parts.append(b"#")
        prev = end
        d = digits.find(_DIGIT_MARK, end)
    tail = squeeze(folded[prev:])
    if tail:
        parts.append(tail)
    return b" ".join(parts).decode()


def _boilerplate_key(text: str) -> str:
    """:func:`boilerplate_key` on str alone: the definition its bytes path must equal."""
    t = unicodedata.normalize("NFKC", text).casefold()
    # the first digit: in a long ASCII text, ten substring searches beat the regex 4x
    if len(t) > 160 and t.isascii():
        at = min((i for i in map(t.find, _ASCII_DIGITS) if i >= 0), default=-1)
        m = _DIGIT.search(t, at) if at >= 0 else None
    else:
        m = _DIGIT.search(t)
    if m is None:
        return _collapse(t)
    # Visit only the tokens that hold a digit (a prose line has few): the text between two of them is
    # collapsed as it is, and each run of them (only whitespace between) becomes one "#".
    words: list[str] = []
    prev = 0
    n = len(t)
    while m is not None:
        start = m.start()
        while start > prev and not t[start - 1].isspace():
            start -= 1
        space = _SPACE.search(t, m.start())
        end = n if space is None else space.start()
        gap = t[prev:start].split()
        if gap or prev == 0:
            words.extend(gap)
            words.append("#")
        prev = end
        m = _DIGIT.search(t, end)
    words.extend(t[prev:].split())
    return " ".join(words)


def _fold(t: str, reject: re.Pattern[str]) -> bytes | None:
    """``t.casefold()`` in UTF-8 with each whitespace character made one ASCII space, when bytes give
    exactly that: every non-ASCII character of ``t`` is its own casefold and ``reject`` finds none of
    them (else ``None``; the caller takes the str path).

    Casefolding maps each character on its own, so with the non-ASCII ones fixed it is the ASCII
    lowering of the bytes. ASCII whitespace (str's, with \\x1c-\\x1f, which ``bytes.split`` would
    keep) becomes b" ", so ``bytes.split`` and ``find(b" ")`` see str's words.
    """
    data = t.encode()
    if not t.isascii():
        rest = data.translate(None, _ASCII).decode()  # the non-ASCII characters, in order
        if rest.casefold() != rest or reject.search(rest) is not None:
            return None
    return data.translate(_FOLD)


def _squeeze(folded: bytes) -> bytes:
    """``b" ".join(folded.split())`` for a text whose only whitespace is b" "."""
    return (folded if b"  " not in folded else _SPACES.sub(b" ", folded)).strip()  # sub: 3x a split


def _collapse(t: str) -> str:
    """``" ".join(t.split())``: a printable text without a double space holds no whitespace but single
    ASCII spaces (``isprintable`` is False for every other whitespace character), so stripping it is
    the same, without splitting it into words."""
    if t.isprintable() and "  " not in t:
        return t.strip()
    return " ".join(t.split())


def word_parts(word: str) -> list[str]:
    """The parts a letter-digit run adds to itself as search terms (empty for any other word).

    The tokenizer keeps ``FY2018`` as one token, which no filing that writes "fiscal 2018" holds, so a
    query (and a document's context) also gets the run's digit runs and its letter runs of three or
    more letters (a lone ``q`` or ``fy`` would match everything).

    Example:
        >>> word_parts("fy2018"), word_parts("q3"), word_parts("covid19"), word_parts("policy")
        (['2018'], ['3'], ['covid', '19'], [])
    """
    if word.isalpha() or word.isdigit() or _MIXED.fullmatch(word) is None:
        return []
    return _PARTS.findall(word)


def with_word_parts(text: str) -> str:
    """``text`` followed by the parts of its letter-digit runs (see :func:`word_parts`), for indexing.

    Example:
        >>> with_word_parts("3M FY2018 10-K")
        '3M FY2018 10-K 3 2018'
    """
    extra = [part for word in _MIXED_RUN.findall(text) for part in word_parts(word)]
    return " ".join([text, *extra]) if extra else text


def has_letters(text: str) -> bool:
    """True when the text holds at least one letter (a bare number or ``$#,#`` is never chrome)."""
    return _LETTER.search(text) is not None


def word_count(text: str) -> int:
    """The number of whitespace-separated words."""
    return len(text.split())


def has_words(text: str, n: int) -> bool:
    """``word_count(text) >= n``, without splitting past the ``n``-th word (``split(None, k)`` gives
    min(words, k + 1) parts)."""
    return n <= 0 or len(text.split(None, n - 1)) >= n


def fits_words(text: str, n: int) -> bool:
    """``word_count(text) <= n``; settled by counting spaces when the text has few enough.

    Each word but the first follows a whitespace character, so with every whitespace character an
    ASCII one (made a space by ``_FOLD``) the spaces plus one bound the words from above.
    """
    data = text.encode()
    if (text.isascii() or _SPACE.search(data.translate(None, _ASCII).decode()) is None) and data.translate(
        _FOLD
    ).count(b" ") < n:
        return True
    return len(text.split()) <= n


def key_hash(key: str) -> str:
    """A stable 128-bit hex digest of a key (xxh3)."""
    return xxhash.xxh3_128_hexdigest(key.encode("utf-8"))


def canonical_id(key: str) -> str:
    """The id of the canonical chunk holding ``key``: stable across runs and indexes."""
    return "c" + key_hash(key)[:24]


def bytes_hash(data: bytes | memoryview) -> str:
    """A content hash of raw file bytes (a view of them is read in place)."""
    return xxhash.xxh3_128_hexdigest(data)


#: The hex digits of a document's content hash (its first 64 bits): it is compared only with the hashes
#: of the same file's documents an index holds and its own previous one, to know an unchanged document;
#: two documents of one file share it once in 2**64 / n**2 (n documents). An index keeps it in 8 bytes.
DOCUMENT_HASH_DIGITS = 16


def document_hash(digest: str) -> str:
    """A document's content hash from a hex digest of its bytes (:func:`bytes_hash`)."""
    return digest[:DOCUMENT_HASH_DIGITS]


def key_id(key: str) -> int:
    """A signed 64-bit id of a boilerplate key (fits an SQLite INTEGER)."""
    return xxhash.xxh3_64_intdigest(key.encode("utf-8")) - (1 << 63)


def running_lines(examples: Sequence[str]) -> tuple[str, ...]:
    """The distinct lines of the stripped running headers/footers' examples, in order."""
    return tuple(dict.fromkeys(ln.strip() for ex in examples for ln in ex.split("\n") if ln.strip()))
