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
from collections.abc import Iterator, Sequence

from chunkdedup.config import ChunkConfig
from chunkdedup.types import Chunk, Page

# Lowercased, without the final period.
_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "etc",
        "vs",
        "cf",
        "al",
        "approx",
        "dept",
        "est",
        "fig",
        "inc",
        "ltd",
        "co",
        "corp",
        "llc",
        "plc",
        "jr",
        "sr",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "no",
        "nos",
        "vol",
        "pp",
        "p",
        "sec",
        "art",
        "ch",
        "para",
        "u.s",
        "u.k",
        "u.n",
        "e.u",
        "a.m",
        "p.m",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "mt",
        "ft",
        "oz",
        "lb",
        "lbs",
        "ph.d",
        "m.d",
        "b.a",
        "u.s.c",
    ]
)
_BOUNDARY = re.compile(r"""[.!?]['"’”)\]]*(?P<ws>\s+)(?=['"‘“(\[]?[A-Z0-9•\-*])""")
# A new line that opens a list item or a heading is a sentence start even without punctuation.
_ITEM_START = re.compile(r"\n(?P<ws>[ \t]*)(?=(?:[-*•+]\s|\d{1,3}[.)]\s|\([a-z0-9]{1,3}\)\s|#{1,6}\s))")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
# The line after a Markdown heading starts a new sentence too.
_HEADING_END = re.compile(r"^#{1,6}[ \t][^\n]*(?P<ws>\n)", re.MULTILINE)
_WORD = re.compile(r"\S+")


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the period at ``dot`` closes an abbreviation or an initial."""
    if text[dot] != ".":
        return False
    start = dot
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:dot].lstrip("([\"'‘“").lower()
    if not word:
        return False
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into sentences; returns (start, end) spans with surrounding whitespace trimmed.

    Example:
        >>> t = "Refunds, e.g. for U.S. travel, take 3.5 days. Next one!"
        >>> [t[s:e] for s, e in sentence_spans(t)]
        ['Refunds, e.g. for U.S. travel, take 3.5 days.', 'Next one!']
    """
    cuts: set[int] = set()
    for m in _BOUNDARY.finditer(text):
        if not _is_abbreviation(text, m.start()):
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


def _pieces(text: str, config: ChunkConfig) -> Iterator[tuple[int, int, int]]:
    """Sentences as (start, end, words); an over-long sentence becomes several word-bounded pieces."""
    for s, e in sentence_spans(text):
        n = len(text[s:e].split())  # str.split's words are _WORD's (\S+), without a match object each
        if n <= config.max_words:
            yield s, e, n
            continue
        words = _word_spans(text, s, e)
        for i in range(0, len(words), config.max_words):
            part = words[i : i + config.max_words]
            yield part[0][0], part[-1][1], len(part)


def chunk_page(doc_id: str, page: Page, config: ChunkConfig) -> list[Chunk]:
    """Pack a page's sentences into chunks of about ``target_words`` words."""
    text = page.text
    chunks: list[Chunk] = []
    start = end = -1
    words = 0
    for s, e, n in _pieces(text, config):
        at_paragraph = start >= 0 and _PARAGRAPH.search(text, end, s) is not None
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


def chunk_document(doc_id: str, pages: Sequence[Page], config: ChunkConfig) -> list[Chunk]:
    """Chunk every page of a cleaned document, in page order."""
    out: list[Chunk] = []
    for page in pages:
        out.extend(chunk_page(doc_id, page, config))
    return out
