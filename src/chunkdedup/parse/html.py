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
deep page costs no Python stack. Before parsing, :func:`~chunkdedup.parse.html_shape.html_shape` reads
the markup's tags (a vector scan, no tree), and a page whose parse would cost minutes or gigabytes is
refused with a ``ParseError`` saying why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from chunkdedup.errors import ParseError
from chunkdedup.normalize import collapse_ws
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.html_shape import html_shape
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
