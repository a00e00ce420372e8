"""HTML to text blocks with selectolax (lexbor's HTML5 parser): one block per heading, paragraph, list, row.

A list (``<ul>``, ``<ol>``, ``<menu>``) is one block of ``- item`` lines, as a Markdown list is: a
site's navigation or footer links are then one block the corpus chrome can count, not a dozen
one-word blocks too short to count (30 pages sharing an 8-link nav kept 8 of its links in every
page's first chunk). ``<pre>`` keeps its text as written (code keeps its lines and indentation).

**Navigation blocks.** A short block of two lines or more, at least half of them links (see
:func:`_is_navigation`), is navigation: a nav bar, a breadcrumb, a sidebar box such as
"Previous topic / <the previous page>". An element whose own blocks together make such a block (a ``<div>``
holding a heading and a link) becomes one block of lines, as a list does.
The page records where the link texts of its navigation blocks stand (:attr:`Page.links`), so the
boilerplate keys such a block by its template, its link texts masked: the box that names a different
previous page on every page is then one key, counted and stripped as corpus chrome.

The tree is walked with a loop over the nodes' links (child, next, parent), not by recursion, so a
deep page costs no Python stack. Before parsing, :func:`html_shape` reads the markup's tags (a vector
scan, no tree), and a page whose parse would cost minutes or gigabytes is refused with a
``ParseError`` saying why: an HTML5 parser's work grows with the square of the nesting (every start
tag looks down the stack of open elements), its tree takes ~155 bytes a tag and ~265 an attribute,
and it opens unclosed formatting elements again in every block that follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from selectolax.lexbor import LexborHTMLParser, LexborNode

from chunkdedup.errors import ParseError
from chunkdedup.normalize import collapse_ws
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.text import decode_text
from chunkdedup.types import Page

# "title" too: a <title> in the body is no text of the page; the first one goes to metadata instead.
# An <iframe>'s, <noembed>'s and <noframes>' content is raw text to an HTML5 parser (markup and all), and
# a browser shows none of it.
_DROP = frozenset(
    {"script", "style", "noscript", "template", "head", "title", "iframe", "noembed", "noframes"}
)
# Text inside these stays in the block around it; every other tag starts a block of its own.
_INLINE = frozenset(
    {
        "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "br", "cite", "code", "data", "del", "dfn",
        "em", "font", "i", "img", "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span",
        "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
    }
)  # fmt: skip
#: elements whose block children are lines of one block (its items), not blocks of their own
_LISTS = frozenset({"ul", "ol", "menu"})
_TEXT = "-text"

#: a line is a link when its links hold at least this share of its letters and digits
#: (:func:`_is_navigation`): "- next |" all, "Read the guide first." 8 of 17
NAV_LINK_SHARE = 0.6
#: the most words, lines and characters of a navigation block (:func:`_is_navigation`)
NAV_MAX_WORDS = 40
NAV_MAX_LINES = 16
NAV_MAX_CHARS = 600
# Where a link's text opens and closes while blocks are read: two noncharacters (Unicode keeps them for
# a program's own use; they are taken out of the page's text first).
_OPEN, _CLOSE = "\ufdd0", "\ufdd1"
_MARKS = _OPEN + _CLOSE
_LINK = re.compile(f"{_OPEN}([^{_OPEN}{_CLOSE}]*){_CLOSE}")

#: deepest nesting read: 10x what the former recursive walk read (it ran out of Python's stack at 500
#: <div>), and an HTML5 parse of a page this deep takes ~0.1 s
MAX_DEPTH = 5_000
#: largest parsed tree read (:attr:`HtmlShape.tree_bytes`): lexbor's tree of 60 MB of documentation
#: pages (1.95M tags) took 425 MB, of 1M ``<span>`` with 5 attributes each 1.6 GB
MAX_TREE_BYTES = 400_000_000
#: bytes of lexbor's tree per tag (an element is two tags, a text node lies between two) and per
#: attribute, measured (selectolax 1.0: 1M ``<span>x</span>`` took 306 MB; 5 attributes each, 1.62 GB)
_TAG_BYTES = 155
_ATTRIBUTE_BYTES = 265
#: most parser work (each start tag's depth, summed; ~5 ns a step): a page 5,000 deep with 2M tags
#: under it would take minutes
MAX_WORK = 500_000_000
#: most formatting work (each start tag's count of open formatting elements, summed): an HTML5 parser
#: opens again, at each new block, every formatting element a block closed unclosed: 1,414 distinct
#: unclosed ``<b class=...>`` in as many paragraphs (26 KB, at this limit) make 1M elements (370 MB)
MAX_FORMATTING = 2_000_000

# Names not counted as nesting: void elements (never closed), elements whose end tag may be left out
# and that the parser closes itself (a page of unclosed <p> and <li> is not deep), and those a start
# tag of the same name closes (<a>, <nobr>, <button>).
_FLAT = (
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rp",
    "colgroup", "tbody", "thead", "tfoot", "caption", "frame", "keygen", "basefont", "bgsound", "a",
    "nobr", "button",
)  # fmt: skip
#: the formatting elements an HTML5 parser reopens (less <a> and <nobr>, which do not pile up)
_FORMATTING = ("b", "big", "code", "em", "font", "i", "s", "small", "strike", "strong", "tt", "u")
#: elements whose content is text up to their end tag (what looks like a tag inside is no tag)
_RAW = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes")
_NAME_BYTES = 8  # names compared on their first 8 bytes (every name above is shorter)
_FLAT_KIND, _FORMATTING_KIND, _RAW_KIND = 1, 2, 3
_KIND_SIZES = (len(_FLAT), len(_FORMATTING), len(_RAW))
_TAG_REACH = 1 << 16  # how far past a block a tag begun in it is read for its "=" and ">"
_SCAN_BLOCK = 1 << 20  # 1 MB of markup a block: ~25 MB of arrays at one tag every 5 bytes


@dataclass(frozen=True, slots=True)
class HtmlShape:
    """What a scan of the markup's tags finds: how deep the elements nest and how many tags there are.

    Estimates, read without a parse: a ``<`` followed by a letter is a start tag and ``</`` an end tag
    (in comments too, not inside ``<script>``, ``<style>`` and the other ``_RAW`` elements); the names
    in ``_FLAT`` do not count as nesting, and an end tag with nothing open to close is ignored.
    ``work``: each start tag's depth, summed; ``formatting``: each start tag's count of open
    formatting elements, summed; ``attributes``: the ``=`` inside start tags.

    The scan keeps no stack, so it does not see an end tag close what was opened inside it (``</td>``
    closes an unclosed ``<font>``): a page that leaves a ``<font>`` or ``<b>`` open in each of over
    ~1,100 table cells or ~1,400 paragraphs is refused, though lexbor would read it.
    """

    depth: int
    tags: int
    work: int
    formatting: int
    attributes: int = 0

    @property
    def tree_bytes(self) -> int:
        """About what the parsed tree takes."""
        return self.tags * _TAG_BYTES + self.attributes * _ATTRIBUTE_BYTES

    def refusal(self) -> str | None:
        """Why a page of this shape is not parsed (and what to do about it), or None."""
        if self.depth > MAX_DEPTH:
            return (
                f"HTML nested about {self.depth:,} elements deep, over the {MAX_DEPTH:,} read (an HTML "
                "parse's time grows with the square of the depth; unclosed tags nest): fix or split the file"
            )
        if self.tree_bytes > MAX_TREE_BYTES:
            return (
                f"HTML with about {self.tags:,} tags and {self.attributes:,} attributes: its parsed tree "
                f"would take about {self.tree_bytes / 1e6:,.0f} MB, over the {MAX_TREE_BYTES / 1e6:,.0f} MB "
                "read in one file: split the file"
            )
        if self.work > MAX_WORK:
            return (
                f"HTML whose {self.tags:,} tags lie {self.work // max(self.tags, 1):,} elements deep on "
                f"average: parsing would take minutes (over {MAX_WORK:,} steps): fix or split the file"
            )
        if self.formatting > MAX_FORMATTING:
            return (
                f"HTML whose tags lie inside {self.formatting // max(self.tags, 1):,} unclosed formatting "
                "elements (<b>, <i>, <font>...) on average: parsing would open them again at every block "
                "(gigabytes): close them, or split the file"
            )
        return None


def html_shape(markup: str) -> HtmlShape:
    """The :class:`HtmlShape` of ``markup``, from a vector scan of its bytes in 1 MB blocks (memory bounded).

    Example:
        >>> html_shape("<div><p>a<br>b</p><div><b>c</b></div></div>")
        HtmlShape(depth=3, tags=9, work=8, formatting=1, attributes=0)
        >>> html_shape('<p class="a" id=b>x = 1</p><img src=y alt="z">').attributes
        4
        >>> html_shape("<script>if (a<b) { s = '<div>' }</script><style>a</style><i>x</i>")
        HtmlShape(depth=1, tags=6, work=3, formatting=1, attributes=0)
    """
    data = np.frombuffer(markup.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    names = np.array([_name_key(name) for name in (*_FLAT, *_FORMATTING, *_RAW)], dtype=np.uint64)
    kinds = np.repeat(np.array([_FLAT_KIND, _FORMATTING_KIND, _RAW_KIND], dtype=np.int8), _KIND_SIZES)
    order = np.argsort(names)
    names, kinds = names[order], kinds[order]
    depth = deepest = tags = work = open_formatting = formatting_work = attributes = 0
    open_raw: int | None = None
    for lo in range(0, len(data), _SCAN_BLOCK):
        keys, closing, equals = _tags(data, lo, min(lo + _SCAN_BLOCK, len(data)))
        at = np.minimum(np.searchsorted(names, keys), names.size - 1)
        kind = np.where(names[at] == keys, kinds[at], 0)
        kept, open_raw = _outside_raw_text(keys, closing, kind == _RAW_KIND, open_raw)
        keys, closing, equals, kind = keys[kept], closing[kept], equals[kept], kind[kept]
        if not keys.size:
            continue
        tags += int(keys.size)
        attributes += int(equals.sum())
        sign = np.where(closing, -1, 1).astype(np.int64)
        nesting = np.where(kind == _FLAT_KIND, 0, sign)
        walk = _walk(depth, nesting)
        deepest = max(deepest, int(walk.max()))
        work += int(walk[~closing].sum())
        depth = int(walk[-1])
        open_walk = _walk(open_formatting, np.where(kind == _FORMATTING_KIND, sign, 0))
        formatting_work += int(open_walk[~closing].sum())
        open_formatting = int(open_walk[-1])
    return HtmlShape(deepest, tags, work, formatting_work, attributes)


def _outside_raw_text(
    keys: np.ndarray, closing: np.ndarray, is_raw: np.ndarray, open_raw: int | None
) -> tuple[np.ndarray, int | None]:
    """Which tags are tags, not text inside a ``<script>``, ``<style>``... (up to the end tag of the
    same name), and the raw text element still open after them (``open_raw``: the one open before).

    A loop over the raw text elements' tags only (a page has tens of scripts, not millions)."""
    inside = np.zeros(keys.size + 1, dtype=np.int32)
    begin = 0 if open_raw is not None else -1
    for i in np.flatnonzero(is_raw).tolist():
        key = int(keys[i])
        if open_raw is None and not closing[i]:
            open_raw, begin = key, i + 1
        elif open_raw == key and closing[i]:
            inside[begin] += 1
            inside[i] -= 1
            open_raw = None
    if open_raw is not None:
        inside[begin] += 1
    return np.cumsum(inside[:-1]) == 0, open_raw


def _walk(start: int, steps: np.ndarray) -> np.ndarray:
    """The running depth from ``start`` after each step, floored at 0 (an end tag with nothing open
    to close is ignored): the running sum less its lowest dip below 0 so far."""
    walk = start + np.cumsum(steps)
    walk -= np.minimum(np.minimum.accumulate(walk), 0)
    return walk


def _name_key(name: str) -> int:
    """A tag name's first ``_NAME_BYTES`` bytes, lower-cased, as one little-endian integer."""
    return int.from_bytes(name.lower().encode()[:_NAME_BYTES].ljust(_NAME_BYTES, b"\0"), "little")


def _tags(data: np.ndarray, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The name keys (:func:`_name_key`) of the tags that begin in ``data[lo:hi]``, which of them are
    end tags, and the ``=`` in each (up to its ``>``, within ``_TAG_REACH`` bytes; 0 for an end tag)."""
    window = data[lo : hi + _TAG_REACH]
    at = np.flatnonzero(window[: hi - lo] == 0x3C)  # "<"
    padded = np.concatenate([window, np.zeros(_NAME_BYTES + 2, dtype=np.uint8)])
    closing = padded[at + 1] == 0x2F  # "/"
    first = at + 1 + closing
    letters = padded[first] | 0x20
    tag = (letters >= 0x61) & (letters <= 0x7A)
    first, closing = first[tag], closing[tag]
    name = padded[first[:, None] + np.arange(_NAME_BYTES)]
    upper = (name >= 0x41) & (name <= 0x5A)
    name = np.where(upper, name | np.uint8(0x20), name)
    # a name runs over letters, digits and "-"; the bytes after it are zeroed ("br" and "br/" are one)
    in_name = ((name >= 0x61) & (name <= 0x7A)) | ((name >= 0x30) & (name <= 0x39)) | (name == 0x2D)
    in_name = np.logical_and.accumulate(in_name, axis=1)
    keys = (name * in_name).astype(np.uint8).view("<u8").ravel()
    equals = np.zeros(keys.size, dtype=np.int64)
    starts = first[~closing]
    if starts.size:
        ends = np.append(np.flatnonzero(window == 0x3E), window.size)  # each ">", then the window's end
        stop = ends[np.searchsorted(ends, starts)]
        before = np.concatenate([[0], np.cumsum(window == 0x3D, dtype=np.int32)])  # "=" before each byte
        equals[~closing] = before[stop] - before[starts]
    return keys, closing, equals


def html_blocks(markup: str) -> tuple[str | None, list[str]]:
    """The ``<title>`` and the text blocks of an HTML document, whitespace collapsed in each.

    Raises ``ParseError`` for a page too deep or too large to parse (:meth:`HtmlShape.refusal`).

    Example:
        >>> html_blocks("<title>T</title><h1>Refunds</h1><ul><li>30 days</li><li>a receipt</li></ul>")
        ('T', ['Refunds', '- 30 days\\n- a receipt'])
        >>> html_blocks("<p>Run</p><pre>if x:\\n    y()\\n</pre>")[1]
        ['Run', 'if x:\\n    y()']
    """
    title, marked = _marked_blocks(markup)
    return title, [text for text in (_unmark(block)[0] for block in marked) if text]


def html_page(markup: str) -> tuple[str | None, str, tuple[tuple[int, int], ...]]:
    """The ``<title>``, the page's text (its blocks, a blank line between two) and the spans of the link
    texts in its navigation blocks (:func:`_is_navigation`; see :attr:`Page.links`).

    Example:
        >>> html_page('<p>Intro</p><div><h4>Next topic</h4><p><a href="b.html">Lists</a></p></div>')
        (None, 'Intro\\n\\nNext topic\\nLists', ((18, 23),))
    """
    title, marked = _marked_blocks(markup)
    parts: list[str] = []
    links: list[tuple[int, int]] = []
    at = 0
    for block in marked:
        text, spans = _unmark(block)
        if not text:
            continue
        if parts:
            at += 2
        if _is_navigation(text, spans):
            links.extend((at + s, at + e) for s, e in spans)
        parts.append(text)
        at += len(text)
    return title, "\n\n".join(parts), tuple(links)


def _marked_blocks(markup: str) -> tuple[str | None, list[str]]:
    """The title and the blocks, each link's text between ``_OPEN`` and ``_CLOSE``."""
    refusal = html_shape(markup).refusal()
    if refusal is not None:
        raise ParseError(refusal, skipped=True)
    tree = LexborHTMLParser(markup)
    document = tree.root.parent if tree.root is not None else None
    if document is None:
        return None, []
    title_tag = tree.css_first("title")
    title = collapse_ws(_text(title_tag, "")) if title_tag is not None else ""
    return title or None, _blocks(document)


def _unmark(block: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A block without its link marks (each marked line's spaces collapsed again), and the spans of its
    link texts, in order."""
    if _OPEN not in block and _CLOSE not in block:
        return block, ()
    if "\n" not in block:  # one line: no navigation block, no spans wanted
        return _unmarked(block), ()
    lines: list[str] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for line in block.split("\n"):
        if _OPEN in line or _CLOSE in line:
            clean = _unmarked(line)
            pos = 0
            for inner in _LINK.findall(line):
                link = collapse_ws(inner)
                found = clean.find(link, pos) if link else -1
                if found >= 0:
                    spans.append((at + found, at + found + len(link)))
                    pos = found + len(link)
            line = clean
        lines.append(line)
        at += len(line) + 1
    return "\n".join(lines).strip("\n"), tuple(spans)


def _unmarked(line: str) -> str:
    """A collapsed line without its link marks (a mark between two spaces leaves two)."""
    text = line.replace(_OPEN, "").replace(_CLOSE, "")
    if "  " in text or text.startswith(" ") or text.endswith(" "):
        return collapse_ws(text)
    return text


def _is_navigation(text: str, spans: tuple[tuple[int, int], ...]) -> bool:
    """Whether a block is navigation: two lines or more, at most :data:`NAV_MAX_LINES`,
    :data:`NAV_MAX_WORDS` and :data:`NAV_MAX_CHARS`, and at least half of its lines links
    (:data:`NAV_LINK_SHARE` of a line's letters and digits in link texts): a box's label ("Next
    topic") is one line, the page it names another."""
    if not spans or len(text) > NAV_MAX_CHARS:
        return False
    lines = text.split("\n")
    if not 2 <= len(lines) <= NAV_MAX_LINES:
        return False
    # words hold a letter or a digit: a list's dashes and a bar's "|" or "»" are none
    if sum(1 for word in text.split() if word.isalnum() or _letters(word)) > NAV_MAX_WORDS:
        return False
    linked = 0
    at = 0
    for line in lines:
        end = at + len(line)
        inside = sum(_letters(text[max(s, at) : min(e, end)]) for s, e in spans if s < end and e > at)
        if inside >= NAV_LINK_SHARE * _letters(line) > 0:
            linked += 1
        at = end + 1
    return 2 * linked >= len(lines)


def _letters(text: str) -> int:
    """The letters and digits of ``text`` (a link line's separators, "|" or "»", are no part of it)."""
    return sum(ch.isalnum() for ch in text)


class _Nav(str):
    """A navigation block joined from an element's blocks (:func:`_Frame.close`): an element around it
    is not joined again, so a sidebar of several boxes keeps one template a box."""

    __slots__ = ()


@dataclass(slots=True)
class _Frame:
    """A block being read: where its blocks go, its inline text so far, and the depth of the node
    that opened it.

    ``items``: a list's frame, whose ``out`` are its item lines, joined into one block of ``items``.
    """

    out: list[str]
    prefix: str
    level: int
    items: list[str] | None = None
    buf: list[str] = field(default_factory=list)
    start: int = 0  # where the element's own blocks begin in ``out``

    def flush(self) -> None:
        if not self.buf:
            return
        text = collapse_ws("".join(self.buf))
        self.buf.clear()
        if text and (text[0] not in _MARKS or text.strip(_MARKS + " ")):  # not a link's mark alone
            self.out.append(self.prefix + text)

    def close(self) -> None:
        self.flush()
        if self.items is not None:
            if self.out:
                self.items.append("\n".join(self.out))
        elif self.level > 0 and 2 <= len(self.out) - self.start <= NAV_MAX_LINES:
            self._join_navigation()

    def _join_navigation(self) -> None:
        """The element's blocks as one block of lines, when they are together a navigation block (at
        least two, no navigation block among them, few words and lines, mostly links)."""
        own = self.out[self.start :]
        if any(isinstance(b, _Nav) for b in own):
            return
        joined = "\n".join(own)
        # too few links for half its lines, or too long: most elements end here, unread
        links, marks = joined.count(_OPEN), joined.count(_OPEN) + joined.count(_CLOSE)
        if 2 * links < joined.count("\n") + 1 or len(joined) - marks > NAV_MAX_CHARS:
            return
        if _is_navigation(*_unmark(joined)):
            self.out[self.start :] = [_Nav(joined)]


def _blocks(document: LexborNode) -> list[str]:
    """The blocks of a parsed document: a pre-order walk over the node links, one frame per open block.

    Inline elements share the frame of the block around them; every other element flushes that
    frame's text and opens a frame of its own (a list: one whose blocks are its item lines).
    """
    blocks: list[str] = []
    frames = [_Frame(blocks, "", 0)]
    links: list[int] = []  # the levels of the open links
    node: LexborNode | None = document.child
    level = 1
    while node is not None:
        top = frames[-1]
        tag = node.tag
        descend = False
        if tag == _TEXT:
            text = node.text_content or ""
            if _OPEN in text or _CLOSE in text:
                text = text.replace(_OPEN, "").replace(_CLOSE, "")
            top.buf.append(text)
        elif not node.is_element_node or tag in _DROP:
            pass
        elif tag == "br":
            top.buf.append("\n")
        elif tag in _INLINE:
            if tag == "a":
                top.buf.append(_OPEN)
                links.append(level)
            descend = True
        elif tag == "tr":
            top.flush()
            _row(node, top.out)
        elif tag == "pre":
            top.flush()
            text = _text(node, "").strip("\n")
            if text.strip():
                top.out.append(text)
        else:
            top.flush()
            if tag in _LISTS:
                frames.append(_Frame([], "", level, items=top.out))
            else:
                frames.append(_Frame(top.out, "- " if tag == "li" else "", level, start=len(top.out)))
            descend = True
        child = node.child if descend else None
        if child is not None:
            node, level = child, level + 1
            continue
        # leave ``node`` and every ancestor it is the last child of, closing the frames they opened
        while True:
            if links and links[-1] == level:  # leaving a link
                links.pop()
                frames[-1].buf.append(_CLOSE)
            if frames[-1].level == level:
                frames.pop().close()
            following = node.next
            if following is not None:
                node = following
                break
            parent = node.parent
            level -= 1
            if parent is None or level == 0:
                node = None
                break
            node = parent
    return blocks


def _text(node: LexborNode, sep: str) -> str:
    """The texts under ``node`` joined with ``sep`` (as BeautifulSoup's ``get_text``), the dropped
    elements and comments left out; a loop over the node links with a stack of the siblings to come."""
    parts: list[str] = []
    stack: list[LexborNode] = []
    child = node.child
    if child is not None:
        stack.append(child)
    while stack:
        current: LexborNode | None = stack.pop()
        while current is not None:
            tag = current.tag
            if tag == _TEXT:
                parts.append(current.text_content or "")
            elif current.is_element_node and tag not in _DROP:
                following = current.next
                if following is not None:
                    stack.append(following)
                current = current.child
                continue
            current = current.next
    return sep.join(parts)


def _row(tr: LexborNode, blocks: list[str]) -> None:
    cells: list[str] = []
    cell = tr.child
    while cell is not None:
        if cell.tag in ("td", "th"):
            cells.append(collapse_ws(_text(cell, " ")))
        cell = cell.next
    if any(cells):
        blocks.append(" | ".join(cells))


class HtmlParser:
    """HTML files as one page of blank-line separated blocks; ``<title>`` goes to metadata."""

    def parse(self, data: bytes) -> Extraction:
        """Decode, drop scripts and styles, and join the text blocks."""
        title, text, links = html_page(decode_text(data))
        page = Page(number=1, text=text, links=links)
        metadata = {"title": title} if title else {}
        return Extraction(documents=(Extracted(pages=(page,), metadata=metadata),))
