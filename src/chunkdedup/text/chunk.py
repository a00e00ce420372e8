"""Sentence-aware chunking with page numbers and character offsets.

A small, tested splitter: a sentence ends at ``.``, ``!`` or ``?`` (with closing quotes or
brackets) followed by whitespace and a capital, digit, quote or bullet, unless the word before is
a known abbreviation or an initial; a blank line, a list item and a Markdown heading also start a
new sentence. Decimals (3.5%) never split because no whitespace follows their point.

Chunks pack whole sentences up to ``target_words``; a sentence longer than ``max_words`` is split at
word boundaries. A chunk also ends at a paragraph break once it holds ``paragraph_words`` words, so
a clause copied between documents as its own paragraph becomes its own chunk in each copy (and
exact dedup can merge it) instead of being glued to whatever precedes it.

Chunks stay within a page, so a citation names one page, and every chunk is a verbatim slice of
its cleaned page: ``chunk.text == page.text[chunk.start:chunk.end]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from chunkdedup.config import ChunkConfig
from chunkdedup.normalize import fits_words
from chunkdedup.text.lines import ABBREVIATIONS
from chunkdedup.types import Chunk, Page

# Brackets and quotes that may open the word before a period (not part of the abbreviation).
_OPENERS = "([\"'‘“"
# The window the word before a period is looked for in: one character more than the longest
# abbreviation (lowercasing never shortens a word, so a longer one is never an abbreviation).
_WINDOW = max(map(len, ABBREVIATIONS)) + 1
_BOUNDARY = re.compile(r"""[.!?]['"’”)\]]*(?P<ws>\s+)(?=['"‘“(\[]?[A-Z0-9•\-*])""")
# _BOUNDARY, with ``long`` set when the _WINDOW characters before the mark are a word's and the first
# of them no bracket or quote: too long a word for an abbreviation (see _is_abbreviation), so no call.
# The lookbehind sits after the mark, so the search still skips to a mark; its empty branch keeps
# every match _BOUNDARY makes.
_LONG_WORD = r"""[^\s(\["'‘“]\S""" + "{" + str(_WINDOW - 1) + "}"
_BOUNDARY_AFTER_LONG = re.compile(
    r"[.!?](?:(?<=(?P<long>" + _LONG_WORD + r")[.!?])|)" + _BOUNDARY.pattern.removeprefix("[.!?]")
)
# A new line that opens a list item or a heading is a sentence start even without punctuation.
_ITEM_START = re.compile(r"\n(?P<ws>[ \t]*)(?=(?:[-*•+]\s|\d{1,3}[.)]\s|\([a-z0-9]{1,3}\)\s|#{1,6}\s))")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
# The line after a Markdown heading starts a new sentence too.
_HEADING_END = re.compile(r"^#{1,6}[ \t][^\n]*(?P<ws>\n)", re.MULTILINE)
_WORD = re.compile(r"\S+")
_ASCII_SPACE_BUT_SPACE_AND_NEW_LINE = "\t\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the period at ``dot`` closes an abbreviation or an initial.

    Looks at the last ``_WINDOW`` characters only: when they hold a whitespace the word is whole in
    them; when they do not, the word is too long unless it opens with brackets or quotes (its first
    window character is one), and only then is it walked back in full (:func:`_is_abbreviation_walk`).
    """
    if text[dot] != ".":
        return False
    lo = dot - _WINDOW
    if lo <= 0:
        return _is_abbreviation_walk(text, dot)
    if text[dot - 1].isspace():
        return False
    window = text[lo:dot]
    word = window.rsplit(None, 1)[-1]  # the window ends in a word: its last part is that word's tail
    if len(word) == len(window):
        return window[0] in _OPENERS and _is_abbreviation_walk(text, dot)
    return _is_word_abbreviation(word)


def _is_abbreviation_walk(text: str, dot: int) -> bool:
    """:func:`_is_abbreviation` by walking back to the whitespace before the word: its definition."""
    if text[dot] != ".":
        return False
    start = dot
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return _is_word_abbreviation(text[start:dot])


def _is_word_abbreviation(word: str) -> bool:
    word = word.lstrip(_OPENERS).lower()
    if not word:
        return False
    return word in ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into sentences; returns (start, end) spans with surrounding whitespace trimmed.

    Example:
        >>> t = "Refunds, e.g. for U.S. travel, take 3.5 days. Next one!"
        >>> [t[s:e] for s, e in sentence_spans(t)]
        ['Refunds, e.g. for U.S. travel, take 3.5 days.', 'Next one!']
    """
    # Every cut is at a whitespace character; each maps to where the next sentence starts (the first
    # non-whitespace after it), which is where the match that made the cut ends (a heading's is walked).
    n = len(text)
    resume = {
        m.start("ws"): m.end()
        for m in _BOUNDARY_AFTER_LONG.finditer(text)
        if m.start("long") >= 0 or not _is_abbreviation(text, m.start())
    }
    cuts: Iterable[int] = resume  # finditer's matches do not overlap: in order
    if "\n" in text:  # every other cut is at a new line, and a heading's needs a "#"
        for pattern in (_ITEM_START, _PARAGRAPH):
            resume.update((m.start(), m.end()) for m in pattern.finditer(text))
        if "#" in text:
            for m in _HEADING_END.finditer(text):
                at = m.start("ws")
                while at < n and text[at].isspace():
                    at += 1
                resume[m.start("ws")] = at
        cuts = sorted(resume)
    spans: list[tuple[int, int]] = []
    s = 0
    while s < n and text[s].isspace():
        s += 1
    for cut in (*cuts, n):
        e = cut
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((s, e))
        s = resume.get(cut, n)
    return spans


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """:func:`sentence_spans` without its shortcuts: the definition they must equal."""
    cuts: set[int] = set()
    for m in _BOUNDARY.finditer(text):
        if not _is_abbreviation_walk(text, m.start()):
            cuts.add(m.start("ws"))
    for pattern in (_ITEM_START, _PARAGRAPH):
        for m in pattern.finditer(text):
            cuts.add(m.start())
    for m in _HEADING_END.finditer(text):
        cuts.add(m.start("ws"))
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in [*sorted(cuts), len(text)]:
        s, e = _trim(text, start, cut)
        if s < e:
            spans.append((s, e))
        start = cut
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _word_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]


def _single_spaced(text: str) -> bool:
    """True when the only whitespace in ``text`` is single spaces and new lines."""
    if "  " in text:
        return False
    if text.isascii():  # a few scans for the other ASCII whitespace beat isprintable's 4x
        return not any(c in text for c in _ASCII_SPACE_BUT_SPACE_AND_NEW_LINE)
    return text.isprintable() or text.replace("\n", "").isprintable()  # whitespace but " " is unprintable


def _pieces(text: str, config: ChunkConfig) -> Iterator[tuple[int, int, int]]:
    """Sentences as (start, end, words); an over-long sentence becomes several word-bounded pieces."""
    # In a text whose only whitespace is single spaces and new lines, a sentence without a new line
    # has one word more than spaces, counted in place.
    single = _single_spaced(text)
    for s, e in sentence_spans(text):
        # s and e are trimmed (no space at either end); str.split's words are _WORD's (\S+)
        n = text.count(" ", s, e) + 1 if single and text.find("\n", s, e) < 0 else len(text[s:e].split())
        if n <= config.max_words:
            yield s, e, n
            continue
        words = _word_spans(text, s, e)
        for i in range(0, len(words), config.max_words):
            part = words[i : i + config.max_words]
            yield part[0][0], part[-1][1], len(part)


def chunk_page(doc_id: str, page: Page, config: ChunkConfig, *, compiled: bool = False) -> list[Chunk]:
    """Pack a page's sentences into chunks of about ``target_words`` words.

    ``compiled``: find the chunks with the compiled walk of :mod:`chunkdedup.text.chunk_kernel` (the same
    chunks; worth numba's start-up only over many pages).
    """
    text = page.text
    if "\n" not in text and fits_words(text, config.target_words):
        # No paragraph break to end a chunk at, and every word fits one (max_words >= target_words):
        # the one chunk runs from the first sentence's start to the last's end, the text stripped.
        stripped = text.strip()
        if not stripped:
            return []
        start = len(text) - len(text.lstrip())
        return [Chunk(doc_id, page.number, start, start + len(stripped), stripped)]
    if compiled:
        return _compiled_chunks(doc_id, page, config)
    chunks: list[Chunk] = []
    start = end = -1
    words = 0
    for s, e, n in _pieces(text, config):
        # the gap between two pieces is whitespace: a paragraph break needs two of its characters
        at_paragraph = start >= 0 and s - end > 1 and _PARAGRAPH.search(text, end, s) is not None
        if start >= 0 and (
            words + n > config.target_words or (at_paragraph and words >= config.paragraph_words)
        ):
            chunks.append(Chunk(doc_id, page.number, start, end, text[start:end]))
            start = -1
            words = 0
        if start < 0:
            start = s
        end = e
        words += n
    if start >= 0:
        chunks.append(Chunk(doc_id, page.number, start, end, text[start:end]))
    return chunks


def _compiled_chunks(doc_id: str, page: Page, config: ChunkConfig) -> list[Chunk]:
    from chunkdedup.text.chunk_kernel import chunk_spans  # numpy and the kernel: only when asked for

    text = page.text
    spans = chunk_spans(text, config.target_words, config.max_words, config.paragraph_words)
    number = page.number
    return [Chunk(doc_id, number, s, e, text[s:e]) for s, e in zip(spans[::2], spans[1::2], strict=True)]


def chunk_document(
    doc_id: str, pages: Sequence[Page], config: ChunkConfig, *, compiled: bool = False
) -> list[Chunk]:
    """Chunk every page of a cleaned document, in page order (``compiled``: see :func:`chunk_page`)."""
    out: list[Chunk] = []
    for page in pages:
        out.extend(chunk_page(doc_id, page, config, compiled=compiled))
    return out
