"""The text stages' fast paths (bytes keys, prefilters, windowed abbreviation check, in-place word
counts) must give what their general forms give, on any text: each test compares the two."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hypothesis import example, given, settings
from hypothesis import strategies as st

from chunkdedup import normalize
from chunkdedup.config import BoilerplateConfig, ChunkConfig
from chunkdedup.text import chunk
from chunkdedup.text.boilerplate import _page_blocks
from chunkdedup.types import Chunk, Page

# Pieces that sit on the edges of the fast paths: whitespace str.split sees and bytes.split does not
# (\x1c-\x1f, \x85, NBSP, em space, line separator), characters casefold changes (ß, Σ, İ, the Kelvin
# sign, fullwidth A), non-ASCII digits, hex runs and GUIDs, abbreviations behind brackets and quotes,
# headings, list items and paragraph breaks.
_TRICKY = [
    " ", "  ", "\n", "\n\n", "\n \n", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f",
    "\x85", "\u00a0", "\u2003", "\u2028", "\u3000", "\u200b",
    "ß", "Σ", "ς", "İ", "\u212a", "Ａ", "é", "e\u0301", "’", "“", "”", "—", "§", "ﬁ", "½", "²", "٣", "７",
    ".", ". ", "! ", "? ", '." ', ".) ", ".] ", "...", "3.5", "U.S. ", "e.g. ", "i.e. ", "(e.g. ",
    '("etc. ', "‘Fig. ", "“U.K. ", "((((((((no. ", "((((((((word. ", "approx. ", "Approx. ", "A. ",
    "Mr. ", "St. ", "u.s.c. ", "ph.d. ", "\u212aG. ",
    "# ", "## Heading\n", "\n# Title\n", "\n- item", "\n* item", "\n• item", "\n1. item", "\n(a) item",
    "deadbeef", "DEADBEEF", "0123456789abcdef", "123e4567-e89b-12d3-a456-426614174000", "12345678",
    "Page 2 of 4", "NYC08CA055", "10-Q", "$1,250.00", "A", "Z", "a", "word", "Words", "x1",
]
_piece = st.one_of(st.sampled_from(_TRICKY), st.text(max_size=8), st.text("aZ09 .\n#-()", max_size=8))
texts = st.lists(_piece, max_size=40).map("".join)


@settings(max_examples=3000, deadline=None)
@given(texts)
@example("A\x1cb 12345678 c\u00a0d")
@example("Straße ΣΑΣ İ \u212a 1\x1f2")
def test_the_bytes_keys_are_the_str_keys(text: str) -> None:
    assert normalize.exact_key(text) == normalize._exact_key(text)
    assert normalize.boilerplate_key(text) == normalize._boilerplate_key(text)


@settings(max_examples=1000, deadline=None)
@given(texts, st.integers(-1, 12))
def test_has_words_counts_like_split(text: str, n: int) -> None:
    assert normalize.has_words(text, n) == (len(text.split()) >= n)


@settings(max_examples=1000, deadline=None)
@given(texts, st.integers(0, 12))
def test_fits_words_counts_like_split(text: str, n: int) -> None:
    assert normalize.fits_words(text, n) == (len(text.split()) <= n)


@settings(max_examples=3000, deadline=None)
@given(texts)
@example("((((((((e.g. x")
@example("abcdefg. x ((((((((((\u212a. y")
def test_the_windowed_abbreviation_check_is_the_walk(text: str) -> None:
    for dot in range(len(text)):
        assert chunk._is_abbreviation(text, dot) == chunk._is_abbreviation_walk(text, dot), dot


@settings(max_examples=3000, deadline=None)
@given(texts)
@example("((((((((no. X and ((((((((word. Y and abcdefg. Z")
@example("# Title  \n\u00a0\nbody. Next\n\n- item. (e.g. More) \u2003\n")
def test_sentence_spans_with_prefilters_are_the_plain_spans(text: str) -> None:
    assert chunk.sentence_spans(text) == chunk._sentence_spans(text)


@settings(max_examples=1000, deadline=None)
@given(texts)
def test_single_spaced_means_only_single_spaces_and_new_lines(text: str) -> None:
    """Exact on ASCII; elsewhere it may say no (then words are split), never a wrong yes."""
    truth = "  " not in text and not {c for c in text if c.isspace()} - {" ", "\n"}
    assert chunk._single_spaced(text) == truth or (not text.isascii() and not chunk._single_spaced(text))


def _plain_pieces(text: str, config: ChunkConfig) -> Iterator[tuple[int, int, int]]:
    """The pieces as they were made before the fast paths (split per sentence)."""
    for s, e in chunk._sentence_spans(text):
        n = len(text[s:e].split())
        if n <= config.max_words:
            yield s, e, n
            continue
        words = [(m.start(), m.end()) for m in re.compile(r"\S+").finditer(text, s, e)]
        for i in range(0, len(words), config.max_words):
            part = words[i : i + config.max_words]
            yield part[0][0], part[-1][1], len(part)


def _plain_chunk_page(doc_id: str, page: Page, config: ChunkConfig) -> list[Chunk]:
    """:func:`chunk.chunk_page` as it was before the fast paths."""
    text = page.text
    chunks: list[Chunk] = []
    start = end = -1
    words = 0
    for s, e, n in _plain_pieces(text, config):
        at_paragraph = start >= 0 and re.search(r"\n[ \t]*\n\s*", text[end:s]) is not None
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


_small = ChunkConfig(target_words=8, max_words=12, paragraph_words=3)
_tiny = ChunkConfig(target_words=2, max_words=2)
_one_line = st.lists(st.sampled_from([w for w in _TRICKY if "\n" not in w and "\x85" not in w]), max_size=30)


@settings(max_examples=2000, deadline=None)
@given(texts, st.sampled_from([ChunkConfig(), _small]))
def test_chunk_page_is_the_plain_chunker(text: str, config: ChunkConfig) -> None:
    page = Page(1, text)
    assert chunk.chunk_page("d", page, config) == _plain_chunk_page("d", page, config)


@settings(max_examples=2000, deadline=None)
@given(_one_line.map("".join), st.sampled_from([ChunkConfig(), _small, _tiny]))
def test_a_one_line_page_chunks_as_the_plain_chunker(text: str, config: ChunkConfig) -> None:
    page = Page(1, text)
    assert chunk.chunk_page("d", page, config) == _plain_chunk_page("d", page, config)


def _plain_blocks(text: str, config: BoilerplateConfig) -> list[tuple[tuple[int, ...], str, bool]]:
    """The blocks as they were made before the fast paths: (line indexes, key, counted)."""
    raw = text.split("\n")
    out: list[tuple[tuple[int, ...], str, bool]] = []
    current: list[int] = []
    for i in [*range(len(raw)), -1]:
        if i >= 0 and raw[i].strip():
            current.append(i)
            continue
        if current:
            joined = " ".join(raw[j] for j in current)
            key = normalize._boilerplate_key(joined) if len(joined) <= config.max_block_chars else ""
            words = len(joined.split())
            counted = bool(key) and words >= config.min_block_words and normalize.has_letters(key)
            out.append((tuple(current), key, counted))
            current = []
    return out


_short = BoilerplateConfig(min_block_words=2, max_block_chars=30)


@settings(max_examples=1000, deadline=None)
@given(texts, st.sampled_from([BoilerplateConfig(), _short]))
def test_page_blocks_are_the_plain_blocks(text: str, config: BoilerplateConfig) -> None:
    blocks = _page_blocks(Page(1, text), config)
    assert [(tuple(ln.at for ln in b.lines), b.key, b.counted) for b in blocks] == _plain_blocks(text, config)
    nonblank = [i for i, line in enumerate(text.split("\n")) if line.strip()]
    edge = set(nonblank[: config.edge_lines]) | set(nonblank[-config.edge_lines :])
    for b in blocks:
        for ln in b.lines:
            raw = text.split("\n")[ln.at]
            assert ln.text == raw and ln.edge == (ln.at in edge)
            assert ln.key == (normalize._boilerplate_key(raw) if len(raw) <= config.max_block_chars else "")
