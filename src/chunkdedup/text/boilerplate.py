"""Statistical boilerplate detection: running headers/footers and corpus chrome.

No hand-written patterns of boilerplate. Two detectors work on boilerplate keys (digits masked); the
only pattern read is a heading's syntax, and it keeps a line (the structure rule of 2.):

1. **Running lines** (per document): a line in a page's edge band (its first or last
   ``edge_lines`` non-blank lines) whose key recurs on at least ``running_share`` of the
   document's pages, and on at least ``running_min_pages`` pages, is stripped from that document.
   Lines in the middle of a page are never stripped by this rule.
2. **Corpus chrome** (across documents): every block (consecutive non-blank lines) of at least
   ``min_block_words`` words and every page-edge line yields a key; a key found in strictly more
   than ``share`` of the units (families when documents carry one, else documents), and in at
   least ``min_units`` of them, is chrome. Short body lines are not counted: table headers such
   as "Three Months Ended" are content. A key with no letters is never chrome. A line of the
   document's own structure stays although its key is chrome: a heading (Markdown ``#``, a numbered
   section such as "1. Purpose and scope") or a lead-in ending in a colon, when the next non-blank
   line of its page is text that stays (:func:`_keep_structure`). The section headings every
   policy of a house style repeats are chrome by frequency, but they open the body under them.

The corpus statistics are kept by the caller (the store keeps them so incremental ingest can
re-decide them); this module gives the pure parts: :func:`document_keys` (what a document
counts, and what :func:`strip` could remove in it), :func:`is_chrome` and :func:`strip`.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from types import MappingProxyType

from chunkdedup.config import BoilerplateConfig
from chunkdedup.normalize import boilerplate_key, has_letters, has_words
from chunkdedup.normalize import key_id as key_id
from chunkdedup.text.lines import Block, Line
from chunkdedup.types import DocumentKeys as DocumentKeys
from chunkdedup.types import Page, StrippedLine

_NO_MASKS: Mapping[int, str] = MappingProxyType({})


#: in text without page breaks, the longest line read as a running header or footer, and the fewest
#: lines between two of its copies (a page's length)
UNPAGED_MAX_WORDS = 10
UNPAGED_PLAIN_WORDS = 4
UNPAGED_MIN_GAP = 15
#: the fewest copies whose gaps can be seen to be regular
UNPAGED_MIN_COPIES = 3

#: a line that opens a part of the document's own body: a Markdown heading, a numbered section
#: ("1. Purpose and scope", "2.3 Scope", "IV. Terms", "B. Fees") or a named one ("Section 4",
#: "Article IV"); a lead-in is a line ending in a colon (see :func:`_is_structure`)
_HEADING = re.compile(
    r"\s*(?:#{1,6}\s+\S"
    r"|(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVXLC]{1,6}\.|[A-Z]\.)\s+[^\W\d]"
    r"|(?i:section|article|chapter|part|appendix|annex|schedule)\s+(?:\d{1,3}|[IVXLC]{1,6})\b)"
)


def _page_blocks(
    page: Page, config: BoilerplateConfig, *, edges: bool = False, lines: bool = True
) -> list[Block]:
    """Split a page into blocks of consecutive non-blank lines, marking edge lines; ``edges``: key only
    the edge lines (every other line and block gets the empty key, as a line too long for one does);
    ``lines=False``: key a line only when it stands on an edge or is a block of its own, the only line
    keys :func:`document_keys` and a :func:`strip` without ``always_strip`` read (in a PDF page most
    lines are inside a paragraph's block: their keys are most of the work)."""
    limit = config.max_block_chars
    text = page.text
    if "\n" not in text:  # one line (a record): one block, on the edge, unless it is blank
        if not text or text.isspace():
            return []
        return [_block([Line(0, text, boilerplate_key(text) if len(text) <= limit else "", True)], config)]
    raw = text.split("\n")
    masked = masked_links(raw, page.links) if page.links else {}
    nonblank = [i for i, line in enumerate(raw) if line and not line.isspace()]  # line.strip(), uncopied
    n = config.edge_lines
    edge = set(nonblank[:n]) | set(nonblank[-n:])
    every = lines and not edges  # key every line (else edge lines, and a line that is a block alone)
    last = len(nonblank) - 1
    blocks: list[Block] = []
    current: list[Line] = []
    for j, i in enumerate(nonblank):
        if current and current[-1].at != i - 1:
            blocks.append(_block(current, config, edges=edges, masked=masked))
            current = []
        line = raw[i]
        on_edge = i in edge
        if len(line) > limit:
            keyed = False
        elif on_edge or every:
            keyed = True
        else:  # a line alone in its block: its key is the block's
            keyed = not edges and not current and (j == last or nonblank[j + 1] != i + 1)
        current.append(Line(i, line, _line_key(line, masked.get(i)) if keyed else "", on_edge))
    if current:
        blocks.append(_block(current, config, edges=edges, masked=masked))
    return blocks


def masked_links(lines: Sequence[str], links: Sequence[tuple[int, int]]) -> dict[int, str]:
    """The lines (by index) that hold a link text of a navigation block (:attr:`Page.links`, spans of
    the page's text, whose lines are ``lines``), each link text masked as ``@``: the key of the block's
    template, the same on every page whatever pages its links name.

    Example:
        >>> masked_links(["Next topic", "Lists and tuples"], [(11, 27)])
        {1: '@'}
    """
    starts = _line_starts(lines)
    cuts: dict[int, list[tuple[int, int]]] = {}
    for s, e in links:
        i = bisect.bisect_right(starts, s) - 1
        while 0 <= i < len(lines) and starts[i] < e:
            lo, hi = max(s - starts[i], 0), min(e - starts[i], len(lines[i]))
            if lo < hi:
                cuts.setdefault(i, []).append((lo, hi))
            i += 1
    out: dict[int, str] = {}
    for i, spans in cuts.items():
        line, parts, at = lines[i], [], 0
        for lo, hi in sorted(spans):
            parts.append(line[at:lo] + "@")
            at = max(at, hi)
        out[i] = "".join(parts) + line[at:]
    return out


def _line_key(line: str, masked: str | None) -> str:
    """A line's key: its template's (its link texts masked) when the template holds a word of its own
    ("next topic @"), else its text's ("- @ |", a line of links only, would be every such line's)."""
    if masked is not None:
        key = boilerplate_key(masked)
        if has_letters(key):
            return key
    return boilerplate_key(line)


def _block(
    lines: list[Line],
    config: BoilerplateConfig,
    *,
    edges: bool = False,
    masked: Mapping[int, str] = _NO_MASKS,
) -> Block:
    """The block of consecutive non-blank ``lines`` (``edges``: a block of several lines is not keyed;
    ``masked``: the lines whose link texts are masked, :func:`masked_links`).

    A navigation block is keyed by its template (:func:`masked_links`) when the template holds a word
    of its own ("previous topic @", not "- @ - @": a list of two links anywhere would share that), and
    is then counted however few its words: it is links, not a table's header."""
    if len(lines) == 1:  # a one-line block's text is its line's: the line's key is the block's
        text = lines[0].text
        key = lines[0].key
    else:
        text = " ".join(ln.text for ln in lines)
        # Boilerplate is short: a longer block gets no key (and is never counted or stripped).
        key = boilerplate_key(text) if len(text) <= config.max_block_chars and not edges else ""
        if key and masked and any(ln.at in masked for ln in lines):
            template = boilerplate_key(" ".join(masked.get(ln.at, ln.text) for ln in lines))
            if has_letters(template):
                return Block(tuple(lines), template, True)
    counted = bool(key) and has_words(text, config.min_block_words) and has_letters(key)
    return Block(tuple(lines), key, counted)


def _layout(
    pages: Sequence[Page],
    config: BoilerplateConfig,
    *,
    edges: bool = False,
    lines: bool = True,
    compiled: bool = False,
) -> list[list[Block]]:
    """Each page's blocks (``compiled``: from the compiled walk of :mod:`chunkdedup.text.boilerplate_kernel`,
    the same blocks)."""
    if compiled:
        from chunkdedup.text.boilerplate_kernel import (
            page_blocks,  # numpy and the kernel: only when asked for
        )

        return [page_blocks(page, config, edges=edges, lines=lines) for page in pages]
    return [_page_blocks(page, config, edges=edges, lines=lines) for page in pages]


def _edge_lines(blocks: Sequence[Block]) -> Iterator[Line]:
    for block in blocks:
        for line in block.lines:
            if line.edge and has_letters(line.key):
                yield line


def _edge_key_pages(layout: list[list[Block]]) -> tuple[int, dict[str, int]]:
    """The number of pages with text, and on how many of them each edge-line key stands."""
    seen: dict[str, int] = {}
    n = 0
    for blocks in layout:
        if blocks:
            n += 1
        for key in {ln.key for ln in _edge_lines(blocks)}:
            seen[key] = seen.get(key, 0) + 1
    return n, seen


def running_keys(pages: Sequence[Page], config: BoilerplateConfig) -> set[str]:
    """Keys of page-edge lines that recur on enough of this document's pages."""
    return _running(_layout(pages, config), config)


def _running(layout: list[list[Block]], config: BoilerplateConfig) -> set[str]:
    return _running_of(*_edge_key_pages(layout), config)


def _running_of(n: int, seen: dict[str, int], config: BoilerplateConfig) -> set[str]:
    """The running keys, from the pages with text and each edge key's page count."""
    if n < config.running_min_pages:
        return set()
    need = max(config.running_min_pages, math.ceil(config.running_share * n))
    return {k for k, c in seen.items() if c >= need}


#: a document without a key
_NO_KEYS = DocumentKeys(frozenset(), frozenset())


def document_keys(
    pages: Sequence[Page], config: BoilerplateConfig, *, compiled: bool = False
) -> DocumentKeys:
    """The candidate and strippable keys of one document (one layout pass for both).

    Candidates: counted blocks, and edge lines that stand on the edge of at least ``running_share``
    of the document's pages (every page of a one-page document). A heading that happens to open a
    few pages of a long filing ("Three Months Ended") is not a page-edge line of that filing; a
    footer on every page is, and so is the last line of a one-page policy. ``compiled``: lay the pages
    out with the compiled walk (the same keys; see :mod:`chunkdedup.text.boilerplate_kernel`).
    """
    if len(pages) == 1 and "\n" not in pages[0].text:
        return _one_line_keys(pages[0].text, config)
    if compiled and not any(p.links for p in pages):  # the compiled walk masks no link
        n, seen, counted = _compiled_keys(pages, config)
    else:
        # it reads block keys and edge-line keys only
        layout = _layout(pages, config, lines=False)
        n, seen = _edge_key_pages(layout)
        counted = {b.key for blocks in layout for b in blocks if b.counted}
    need = math.ceil(config.running_share * n)
    candidates = counted | {k for k, c in seen.items() if c >= need}
    return DocumentKeys(frozenset(candidates), frozenset(candidates | seen.keys()))


def _one_line_keys(text: str, config: BoilerplateConfig) -> DocumentKeys:
    """``document_keys`` of a document of one page holding one line (most JSONL and Parquet records):
    its line is its only edge line and stands on every page with text (``need`` is 1, as
    ``running_share`` is in (0, 1]), so its key, when it holds a letter, is both candidate and
    strippable, whether or not the line is also a counted block. One key instead of a layout: 50k
    records of ~1,300 characters spent ~23 us each in the layout's way, ~12 us here."""
    if text.isspace():
        return _NO_KEYS
    key = boilerplate_key(text) if len(text) <= config.max_block_chars else ""
    if not has_letters(key):
        return _NO_KEYS
    keys = frozenset((key,))
    return DocumentKeys(keys, keys)


def _compiled_keys(pages: Sequence[Page], config: BoilerplateConfig) -> tuple[int, dict[str, int], set[str]]:
    """``document_keys``' three counts from the compiled walk: the pages with text, on how many of them
    each lettered edge-line key stands, and the keys of the counted blocks."""
    from chunkdedup.text.boilerplate_kernel import page_keys  # numpy and the kernel: only when asked for

    seen: dict[str, int] = {}
    counted: set[str] = set()
    n = 0
    for page in pages:
        pk = page_keys(page, config)
        if len(pk.lines):
            n += 1
        counted.update(pk.counted)
        for key in {key for key, _ in pk.edges}:
            seen[key] = seen.get(key, 0) + 1
    return n, seen, counted


def candidate_keys(pages: Sequence[Page], config: BoilerplateConfig) -> set[str]:
    """The keys this document contributes to corpus document frequency (see :func:`document_keys`)."""
    return set(document_keys(pages, config).candidates)


def is_chrome(unit_count: int, total_units: int, config: BoilerplateConfig) -> bool:
    """The corpus-chrome rule: strictly more than ``share`` of units, and at least ``min_units``."""
    return unit_count >= config.min_units and unit_count > config.share * total_units


@dataclass(frozen=True, slots=True)
class StripResult:
    """Cleaned pages and every line removed, with its scope."""

    pages: tuple[Page, ...]
    stripped: tuple[StrippedLine, ...]


def strip(
    pages: Sequence[Page],
    chrome: Collection[int],
    config: BoilerplateConfig,
    *,
    compiled: bool = False,
    unpaged: bool = True,
) -> StripResult:
    """Remove running lines and chrome from one document's pages.

    ``chrome`` holds the :func:`key_id` of each corpus-chrome key (or only those of the document's
    :class:`DocumentKeys` ``strippable``: the only ones it can match, so the same result). ``always_keep``
    keys are never stripped; lines and blocks of ``always_strip`` keys are removed wherever they stand.
    A document of fewer than ``running_min_pages`` pages (text without page breaks) first loses the
    lines that recur through a page at regular intervals (:func:`_unpaged_running`), unless ``unpaged``
    is False: text written for a screen (HTML, Markdown) had no printed pages, and a line recurring
    through it (a code line, a parameter list's first item) is its own.
    ``compiled``: lay the pages out with the compiled walk (the same result).
    """
    keep = {boilerplate_key(k) for k in config.always_keep}
    first: list[StrippedLine] = []
    if unpaged and len(pages) < config.running_min_pages:  # no page breaks: running lines stand inside
        running = [_unpaged_running(page, config, keep) for page in pages]
        if any(running):
            pages = [_dropped(page, drop, first) for page, drop in zip(pages, running, strict=True)]
    result = _strip_pages(pages, chrome, config, keep, compiled)
    if chrome and _is_the_document(result.stripped, pages, config):
        result = _strip_pages(pages, (), config, keep, compiled)
    return StripResult(result.pages, (*first, *result.stripped)) if first else result


def _is_the_document(
    stripped: Sequence[StrippedLine], pages: Sequence[Page], config: BoilerplateConfig
) -> bool:
    """Whether the chrome (not the forced keys, which go wherever they stand) would take more than
    ``max_chrome_share`` of the document's words: then it is the document's own content."""
    forced = {boilerplate_key(k) for k in config.always_strip}
    words = sum(len(s.line.split()) for s in stripped if s.scope == "chrome" and s.key not in forced)
    if not words or config.max_chrome_share >= 1.0:
        return False
    total = sum(len(page.text.split()) for page in pages)
    return words > config.max_chrome_share * total


def _strip_pages(
    pages: Sequence[Page], chrome: Collection[int], config: BoilerplateConfig, keep: set[str], compiled: bool
) -> StripResult:
    """:func:`strip` but for the running lines inside a page of text without page breaks."""
    forced = {boilerplate_key(k) for k in config.always_strip} - keep
    keep_ids = {key_id(k) for k in keep}
    compiled = compiled and not any(p.links for p in pages)  # the compiled walk masks no link
    chrome_ids = set(chrome) - keep_ids
    if not forced and not chrome_ids and len(pages) < config.running_min_pages:
        # no chrome, nothing forced, too few pages for a running line: nothing can go
        return StripResult(tuple(pages), ())
    if compiled and not forced:
        return _compiled_strip(pages, chrome_ids, keep, config)
    if not forced and not chrome_ids:
        # only running lines can go, and they are edge lines: no other line or block needs its key
        layout = _layout(pages, config, edges=True, compiled=compiled)
    else:
        # a forced key is looked for on every line; chrome only on blocks and edge lines
        layout = _layout(pages, config, lines=bool(forced), compiled=compiled)
    running = _running(layout, config) - keep

    def is_chrome_key(key: str) -> bool:
        return key_id(key) in chrome_ids

    out_pages: list[Page] = []
    stripped: list[StrippedLine] = []
    for page, blocks in zip(pages, layout, strict=True):
        drop: dict[int, StrippedLine] = {}
        lines: list[int] = []  # the chrome lines that may be the document's structure
        for block in blocks:
            if block.key in forced:
                for ln in block.lines:
                    drop[ln.at] = StrippedLine(page.number, ln.text, block.key, "chrome")
                continue
            if block.counted and is_chrome_key(block.key):
                for ln in block.lines:
                    drop[ln.at] = StrippedLine(page.number, ln.text, block.key, "chrome")
                if len(block.lines) == 1 and not (block.lines[0].edge and block.key in running):
                    lines.append(block.lines[0].at)
                continue
            for ln in block.lines:
                if ln.key in forced:
                    drop[ln.at] = StrippedLine(page.number, ln.text, ln.key, "chrome")
                elif ln.edge and has_letters(ln.key) and is_chrome_key(ln.key):
                    drop[ln.at] = StrippedLine(page.number, ln.text, ln.key, "chrome")
                    if ln.key not in running:
                        lines.append(ln.at)
                elif ln.edge and ln.key in running:
                    drop[ln.at] = StrippedLine(page.number, ln.text, ln.key, "running")
        _keep_structure(page.text, drop, lines)
        out_pages.append(_dropped(page, drop, stripped))
    return StripResult(tuple(out_pages), tuple(stripped))


def _unpaged_running(
    page: Page, config: BoilerplateConfig, keep: Collection[str]
) -> dict[int, StrippedLine]:
    """The running lines of a page that is a whole document's text (no page breaks: an EDGAR exhibit,
    a plain-text contract): a short line (at most ``UNPAGED_MAX_WORDS`` words holding a number, or at
    most ``UNPAGED_PLAIN_WORDS`` words without one) that recurs on at least ``running_min_pages``
    (and 3) lines at regular intervals (a page's length apart: each gap at least ``UNPAGED_MIN_GAP`` lines,
    the longest at most twice the shortest), as a lone page number or a "Source: COMPANY, 10-12G,
    8/26/1999" footer does."""
    lines = page.text.split("\n")
    if len(lines) < config.running_min_pages * UNPAGED_MIN_GAP:
        return {}
    where: dict[str, list[int]] = {}
    for at, line in enumerate(lines):
        text = line.strip()
        words = len(text.split())
        if text and words <= UNPAGED_MAX_WORDS:
            key = boilerplate_key(text)
            # a number (a page's, a date) marks a running line; without one only a few words do: a
            # sentence repeated in each section ("We do not allow content that:") is the text's own
            if key not in keep and ("#" in key or (words <= UNPAGED_PLAIN_WORDS and has_letters(key))):
                where.setdefault(key, []).append(at)
    drop: dict[int, StrippedLine] = {}
    for key, ats in where.items():
        if len(ats) < max(UNPAGED_MIN_COPIES, config.running_min_pages):
            continue
        gaps = [b - a for a, b in pairwise(ats)]
        if min(gaps) >= UNPAGED_MIN_GAP and max(gaps) <= 2 * min(gaps):
            drop.update((at, StrippedLine(page.number, lines[at], key, "running")) for at in ats)
    return drop


def _is_structure(line: str) -> bool:
    """Whether ``line`` reads as a heading or a lead-in of the body (see ``_HEADING``)."""
    return line.rstrip().endswith(":") or _HEADING.match(line) is not None


def _keep_structure(text: str, drop: dict[int, StrippedLine], chrome: Sequence[int]) -> None:
    """Take out of ``drop`` each line of ``chrome`` (lines the corpus-chrome rule dropped: one-line
    blocks and edge lines, none of them a running line; a block of several lines is not a heading)
    that is the document's own structure: it reads as a heading or a lead-in (:func:`_is_structure`)
    and the next non-blank line of its page stays (a kept heading counts, so a section's heading over
    its subsection's stays too).

    Chrome is text that surrounds a document; a heading opens the body under it, however many
    documents of a house style repeat it. A heading whose next line goes too (a page-edge line over a
    running header or a footer) or that ends its page stays chrome; running lines are never given
    back, and neither is a line of ``always_strip``."""
    heads = {at for at in chrome if _is_structure(drop[at].line)}
    if not heads:
        return
    lines = text.split("\n")
    below = False  # the next non-blank line stays
    for at in range(len(lines) - 1, min(heads) - 1, -1):
        line = lines[at]
        if not line or line.isspace():
            continue
        if at not in drop:
            below = True
        elif at in heads and below:
            del drop[at]
        else:
            below = False


def _dropped(page: Page, drop: dict[int, StrippedLine], stripped: list[StrippedLine]) -> Page:
    """``page`` without the lines ``drop`` holds (by index), whose records join ``stripped`` in order:
    a run of empty lines left by them is one, and empty lines at the ends go. The link spans of the
    lines kept (:attr:`Page.links`; a link text stands within one line) move with their lines."""
    if not drop:
        return page
    stripped.extend(drop[i] for i in sorted(drop))
    lines = page.text.split("\n")
    kept: list[int] = []
    for i, line in enumerate(lines):
        if i in drop or (not line and (not kept or not lines[kept[-1]])):
            continue
        kept.append(i)
    while kept and not lines[kept[-1]]:
        kept.pop()
    text = "\n".join(lines[i] for i in kept)
    if not page.links:
        return Page(page.number, text, page.has_text_layer)
    old = _line_starts(lines)
    new: dict[int, int] = {}
    at = 0
    for i in kept:
        new[i] = at
        at += len(lines[i]) + 1
    links = []
    for s, e in page.links:
        i = bisect.bisect_right(old, s) - 1
        if i in new:
            links.append((new[i] + s - old[i], new[i] + e - old[i]))
    return Page(page.number, text, page.has_text_layer, links=tuple(links))


def _line_starts(lines: Sequence[str]) -> list[int]:
    """Where each of a text's lines (``text.split("\\n")``) begins, and the text's length plus one."""
    return list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))


def _compiled_strip(
    pages: Sequence[Page], chrome_ids: set[int], keep: set[str], config: BoilerplateConfig
) -> StripResult:
    """:func:`strip` with nothing forced, from the compiled walk: only counted blocks (when there is
    chrome) and lettered edge lines are looked at, the only ones that rule can remove."""
    from chunkdedup.text.boilerplate_kernel import page_keys  # numpy and the kernel: only when asked for

    layout = [page_keys(page, config, edges=not chrome_ids) for page in pages]
    n = 0
    seen: dict[str, int] = {}
    for pk in layout:
        if len(pk.lines):
            n += 1
        for key in {key for key, _ in pk.edges}:
            seen[key] = seen.get(key, 0) + 1
    running = _running_of(n, seen, config) - keep
    out_pages: list[Page] = []
    stripped: list[StrippedLine] = []
    for page, pk in zip(pages, layout, strict=True):
        drop: dict[int, StrippedLine] = {}
        lines: list[int] = []  # the chrome lines that may be the document's structure
        text = pk.text
        if chrome_ids:
            for key, (first, last) in zip(pk.counted, pk.where.tolist(), strict=True):
                if key_id(key) in chrome_ids:
                    for at, s, e in pk.lines[first:last, :3].tolist():
                        drop[at] = StrippedLine(page.number, text[s:e], key, "chrome")
                    at, edge = pk.lines[first, [0, 3]].tolist()
                    if last - first == 1 and not (edge == 1 and key in running):
                        lines.append(at)
        for key, r in pk.edges:
            at, s, e = pk.lines[r, :3].tolist()
            if at in drop:  # its block is chrome
                continue
            if chrome_ids and key_id(key) in chrome_ids:
                drop[at] = StrippedLine(page.number, text[s:e], key, "chrome")
                if key not in running:
                    lines.append(at)
            elif key in running:
                drop[at] = StrippedLine(page.number, text[s:e], key, "running")
        _keep_structure(text, drop, lines)
        out_pages.append(_dropped(page, drop, stripped))
    return StripResult(tuple(out_pages), tuple(stripped))
