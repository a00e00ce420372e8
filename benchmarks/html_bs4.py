"""The HTML block extraction as it was before selectolax: BeautifulSoup over the stdlib parser,
walked recursively. Kept only as the reference row of ``ingest.py --html`` (needs the ``[bench]``
extra's beautifulsoup4).

Example:
    >>> html_blocks_bs4("<title>T</title><h1>Refunds</h1><ul><li>30 days</li></ul>")
    ('T', ['Refunds', '- 30 days'])
"""

from __future__ import annotations

from typing import Any

from bs4 import BeautifulSoup
from bs4.element import Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from chunkdedup.normalize import collapse_ws

_DROP = frozenset({"script", "style", "noscript", "template", "head", "title"})
_INLINE = frozenset(
    {
        "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "br", "cite", "code", "data", "del", "dfn",
        "em", "font", "i", "img", "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span",
        "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
    }
)  # fmt: skip
_NON_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)
_LISTS = frozenset({"ul", "ol", "menu"})


def html_blocks_bs4(markup: str) -> tuple[str | None, list[str]]:
    """The ``<title>`` and the text blocks of an HTML document (the BeautifulSoup implementation)."""
    soup = BeautifulSoup(markup, "html.parser")
    title_tag = soup.find("title")
    title = collapse_ws(title_tag.get_text()) if isinstance(title_tag, Tag) else ""
    for tag in soup.find_all(_DROP):
        tag.decompose()
    blocks: list[str] = []
    _block(soup, blocks, "")
    return title or None, blocks


def _walk(node: Any, blocks: list[str], buf: list[str], prefix: str) -> None:
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
