"""HTML at depth and at size: deep pages are read without recursion, and a page whose parse would take
minutes or gigabytes is refused, quickly, with a reason that says why."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chunkdedup.config import ParseConfig
from chunkdedup.errors import ParseError
from chunkdedup.parse import InputFile, parse_file
from chunkdedup.parse.html import html_blocks
from chunkdedup.parse.html_shape import MAX_DEPTH, html_shape
from chunkdedup.types import FileStatus, ParsedFile


def _parse(folder: Path, markup: str) -> ParsedFile:
    path = folder / "page.html"
    path.write_text(markup, encoding="utf-8")
    return parse_file(InputFile(path=path, doc_id=path.name, metadata={}), ParseConfig())


def test_a_page_thousands_deep_keeps_its_text(tmp_path: Path) -> None:
    """The recursive walk failed a page 500 ``<div>`` deep (RecursionError: 'nested too deeply')."""
    depth = 3_000
    lists = "<ul><li>" * 200 + "item" + "</li></ul>" * 200
    inline = "<span>" * 1_000 + "inline" + "</span>" * 1_000
    markup = (
        "<html><head><title>Deep</title></head><body><p>Intro</p>"
        + "<div>" * depth
        + f"<h2>Heading</h2><p>deep text</p>{lists}<table><tr><td>{inline}</td></tr></table>"
        + "</div>" * depth
        + "<p>Outro</p></body></html>"
    )
    parsed = _parse(tmp_path, markup)
    assert parsed.status == FileStatus.INGESTED, parsed.reason
    (doc,) = parsed.documents
    blocks = doc.pages[0].text.split("\n\n")
    assert blocks[:3] == ["Intro", "Heading", "deep text"]
    assert blocks[-2:] == ["inline", "Outro"]
    assert blocks[3] == "- item"  # a list in an item is lines of that item
    assert doc.title == "Deep"


def test_a_page_nested_too_deeply_is_refused_quickly_with_its_depth(tmp_path: Path) -> None:
    depth = 50_000  # an HTML5 parse of it takes ~5 s (quadratic), the refusal milliseconds
    start = time.perf_counter()
    parsed = _parse(tmp_path, "<div>" * depth + "deep text" + "</div>" * depth)
    assert time.perf_counter() - start < 5
    assert parsed.status == FileStatus.SKIPPED
    assert parsed.path == str(tmp_path / "page.html")
    assert parsed.reason is not None
    assert f"nested about {depth:,} elements deep, over the {MAX_DEPTH:,} read" in parsed.reason
    assert "Traceback" not in parsed.reason and "RecursionError" not in parsed.reason


def test_unclosed_tags_nest_and_flat_ones_do_not() -> None:
    assert html_shape("<p>a<p>b<li>c<br><img src=x><hr><td>d").depth == 0
    assert html_shape("<DIV><Div><section>x</section></div></DIV>").depth == 3
    assert html_shape("<font>" * 10 + "x").depth == 10
    assert html_shape("</div></div><div>x</div>").depth == 1  # end tags with nothing open are ignored


def test_a_page_whose_tree_would_take_too_much_memory_is_refused_before_it_is_parsed() -> None:
    """Lexbor's tree takes ~155 bytes a tag and ~265 an attribute: 1.6 GB for 1M five-attribute spans."""
    with pytest.raises(ParseError, match=r"2,800,000 tags and 0 attributes: its parsed tree would take"):
        html_blocks("<p>x</p>" * 1_400_000)
    with pytest.raises(ParseError, match=r"800,000 tags and 1,200,000 attributes"):
        html_blocks('<p class="a" id="b" title="c">x</p>' * 400_000)
    assert html_shape('<p class="a" id="b" title="c">x</p>' * 100_000).refusal() is None


def test_unclosed_formatting_reopened_at_every_block_is_refused() -> None:
    """1,500 distinct unclosed ``<b>`` in as many paragraphs: 27 KB an HTML5 parser makes 1.1M
    elements of (every ``<p>`` opens again each ``<b>`` the previous one closed)."""
    markup = "".join(f"<p><b class=c{i}>x" for i in range(1_500))
    with pytest.raises(ParseError, match="unclosed formatting elements"):
        html_blocks(markup)
    assert html_blocks("<p><b>bold</b> text</p>" * 5_000)[1][0] == "bold text"


def test_broken_markup_reads_as_an_html5_parser_builds_it() -> None:
    """Cells without a row are one row; a head left open does not swallow the body; an iframe's
    fallback (raw text to an HTML5 parser, markup and all) is not text of the page."""
    assert html_blocks("<table><td>a</td><td>b</td></table>")[1] == ["a | b"]
    assert html_blocks("<html><head><title>T</title><h1>Header</h1><p>Body</p>") == ("T", ["Header", "Body"])
    assert html_blocks("<p>a</p><iframe><p>no frames</p></iframe><p>b</p>")[1] == ["a", "b"]
