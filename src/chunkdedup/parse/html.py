"""HTML to text blocks with BeautifulSoup's stdlib parser: one block per heading, paragraph, list, row.

A list (``<ul>``, ``<ol>``, ``<menu>``) is one block of ``- item`` lines, as a Markdown list is: a
site's navigation or footer links are then one block the corpus chrome can count, not a dozen
one-word blocks too short to count (30 pages sharing an 8-link nav kept 8 of its links in every
page's first chunk). ``<pre>`` keeps its text as written (code keeps its lines and indentation).
"""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from chunkdedup.normalize import collapse_ws
from chunkdedup.parse.base import Extracted, Extraction
from chunkdedup.parse.text import decode_text
from chunkdedup.types import Page

# "title" too: without a <head> element html.parser leaves it in the body; it goes to metadata instead.
_DROP = frozenset({"script", "style", "noscript", "template", "head", "title"})
# Text inside these stays in the block around it; every other tag starts a block of its own.
_INLINE = frozenset(
    {
        "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "br", "cite", "code", "data", "del", "dfn",
        "em", "font", "i", "img", "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span",
        "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
    }
)  # fmt: skip
_NON_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)
#: elements whose block children are lines of one block (its items), not blocks of their own
_LISTS = frozenset({"ul", "ol", "menu"})


def html_blocks(markup: str) -> tuple[str | None, list[str]]:
    """The ``<title>`` and the text blocks of an HTML document, whitespace collapsed in each.

    Example:
        >>> html_blocks("<title>T</title><h1>Refunds</h1><ul><li>30 days</li><li>a receipt</li></ul>")
        ('T', ['Refunds', '- 30 days\\n- a receipt'])
        >>> html_blocks("<p>Run</p><pre>if x:\\n    y()\\n</pre>")[1]
        ['Run', 'if x:\\n    y()']
    """
    soup = BeautifulSoup(markup, "html.parser")
    title_tag = soup.find("title")
    title = collapse_ws(title_tag.get_text()) if isinstance(title_tag, Tag) else ""
    # Removed up front so that table cells, read with get_text, do not pick up script text either.
    for tag in soup.find_all(_DROP):
        tag.decompose()
    blocks: list[str] = []
    _block(soup, blocks, "")
    return title or None, blocks


def _walk(node: Any, blocks: list[str], buf: list[str], prefix: str) -> None:
    """Collect inline text of ``node`` into ``buf``; each block-level child flushes it and starts anew."""
    for child in node.children:
        if isinstance(child, _NON_TEXT):
            continue
        if isinstance(child, NavigableString):
            buf.append(str(child))
            continue
        if not isinstance(child, Tag) or child.name in _DROP:
            continue
        if child.name == "br":
            buf.append("\n")
        elif child.name in _INLINE:
            _walk(child, blocks, buf, prefix)
        elif child.name == "tr":
            _flush(buf, blocks, prefix)
            _row(child, blocks)
        elif child.name == "pre":
            _flush(buf, blocks, prefix)
            text = child.get_text().strip("\n")
            if text.strip():
                blocks.append(text)
        elif child.name in _LISTS:
            _flush(buf, blocks, prefix)
            items: list[str] = []
            _block(child, items, "")
            if items:
                blocks.append("\n".join(items))
        else:
            _flush(buf, blocks, prefix)
            _block(child, blocks, "- " if child.name == "li" else "")


def _block(node: Any, blocks: list[str], prefix: str) -> None:
    """Emit the blocks of a block-level element: its own inline text, and its block children in order."""
    buf: list[str] = []
    _walk(node, blocks, buf, prefix)
    _flush(buf, blocks, prefix)


def _flush(buf: list[str], blocks: list[str], prefix: str) -> None:
    text = collapse_ws("".join(buf))
    buf.clear()
    if text:
        blocks.append(prefix + text)


def _row(tr: Tag, blocks: list[str]) -> None:
    cells = [collapse_ws(cell.get_text(" ")) for cell in tr.find_all(["td", "th"], recursive=False)]
    if any(cells):
        blocks.append(" | ".join(cells))


class HtmlParser:
    """HTML files as one page of blank-line separated blocks; ``<title>`` goes to metadata."""

    def parse(self, data: bytes) -> Extraction:
        """Decode, drop scripts and styles, and join the text blocks."""
        title, blocks = html_blocks(decode_text(data))
        page = Page(number=1, text="\n\n".join(blocks))
        metadata = {"title": title} if title else {}
        return Extraction(documents=(Extracted(pages=(page,), metadata=metadata),))
