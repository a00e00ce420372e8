"""A scan of an HTML page's tags before it is parsed: how deep its elements nest, how many tags and
attributes its tree would hold, how often the parser would reopen unclosed formatting elements.

An HTML5 parser's work grows with the square of the nesting (every start tag looks down the stack of
open elements), its tree takes ~155 bytes a tag and ~265 an attribute, and it opens unclosed
formatting elements again in every block that follows: a page whose parse would cost minutes or
gigabytes is refused (:meth:`HtmlShape.refusal`) from a vector scan of its markup, no tree built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
