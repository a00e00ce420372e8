"""Navigation that differs from page to page only in the pages it links to is chrome.

A documentation site's pages carry a nav bar whose last breadcrumb is the page itself and a sidebar
naming the previous and the next page: no two pages hold the same text there, so a key of the text
never recurs. The HTML parser records the link texts of such blocks (``Page.links``) and the
boilerplate keys them by their template, link texts masked.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkdedup import Index, Page, ingest
from chunkdedup.config import BoilerplateConfig, ParseConfig
from chunkdedup.parse import InputFile, parse_file
from chunkdedup.parse.html import html_blocks, html_page
from chunkdedup.text.boilerplate import _dropped, document_keys, masked_links, strip
from chunkdedup.types import StrippedLine
from conftest import chunk_texts

TOPICS = [
    ("string", "Common string operations", "formats values with replacement fields and keeps constants"),
    ("re", "Regular expression operations", "matches patterns compiled from a small language"),
    ("difflib", "Helpers for computing deltas", "compares sequences and writes unified diffs"),
    ("textwrap", "Text wrapping and filling", "breaks paragraphs into lines of a given width"),
    ("unicodedata", "Unicode Database", "looks up character properties such as the category"),
    ("stringprep", "Internet String Preparation", "maps strings for comparison in network protocols"),
    ("readline", "GNU readline interface", "edits the input line and keeps a history file"),
    ("rlcompleter", "Completion function for GNU readline", "completes valid identifiers and keywords"),
    ("struct", "Interpret bytes as packed binary data", "converts between values and C structs"),
    ("codecs", "Codec registry and base classes", "encodes and decodes text with registered codecs"),
    ("datetime", "Basic date and time types", "represents dates, times and the intervals between them"),
    ("zoneinfo", "IANA time zone support", "reads time zone rules from the system database"),
]


def _page(i: int) -> str:
    name, title, does = TOPICS[i]
    prev_name, prev_title, _ = TOPICS[i - 1]
    next_name, next_title, _ = TOPICS[(i + 1) % len(TOPICS)]
    return f"""<html><head><title>{name} — {title}</title></head><body>
<div class="related" role="navigation"><h3>Navigation</h3><ul>
<li class="right"><a href="../genindex.html">index</a></li>
<li class="right"><a href="../py-modindex.html">modules</a> |</li>
<li class="right"><a href="{next_name}.html">next</a> |</li>
<li class="right"><a href="{prev_name}.html">previous</a> |</li>
<li><img src="../_static/py.svg" alt="Python logo"/></li>
<li><a href="https://www.python.org/">Python</a> &#187;</li>
<li class="switchers"><div class="language_switcher_placeholder"></div></li><li></li>
<li><a href="../index.html">3.12 Documentation</a> &#187;</li>
<li><a href="index.html">The Python Standard Library</a> &#187;</li>
<li><a href="">{name} — {title}</a></li>
<li class="right"><div role="search"><form action="../search.html"><input type="search" name="q"/>
<input type="submit" value="Go"/></form></div>|</li>
<li class="right"><label>Theme <select><option value="auto" selected>Auto</option>
<option value="light">Light</option><option value="dark">Dark</option></select></label> |</li></ul></div>
<div class="body"><h1>{name} — {title}</h1>
<p>The <a href="#{name}">{name}</a> module {does}. It is part of the standard library and needs no
installation; import it by name.</p>
<p>Each function of {name} documents its arguments, its return value and the errors it raises, with
an example of its use in {title.lower()}.</p>
<p>Read on in:</p><ul><li><a href="{name}-howto.html">{name} recipes</a></li>
<li><a href="{name}-faq.html">{name} questions</a></li></ul></div>
<div class="sphinxsidebar"><ul><li><a href="about.html">About these pages</a></li>
<li><a href="usage.html">Usage and examples</a></li></ul>
<div><h3><a href="../contents.html">Table of Contents</a></h3>
<ul><li><a href="#">{name} — {title}</a>
<ul><li><a href="#functions">Functions of {name}</a></li></ul></li></ul></div>
<div><h4>Previous topic</h4>
<p class="topless"><a href="{prev_name}.html">{prev_name} — {prev_title}</a></p></div>
<div><h4>Next topic</h4>
<p class="topless"><a href="{next_name}.html">{next_name} — {next_title}</a></p></div>
<div role="note"><h3>This Page</h3><ul><li><a href="../bugs.html">Report a Bug</a></li>
<li><a href="https://github.com/python/cpython/blob/main/Doc/{name}.rst">Show Source</a></li></ul></div>
</div></body></html>"""


def _site(folder: Path, pages: range) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in pages:
        (folder / f"{TOPICS[i][0]}.html").write_text(_page(i), encoding="utf-8")
    return folder


def test_a_sidebar_box_is_one_block_whose_link_texts_are_recorded() -> None:
    _, text, links = html_page(_page(1))
    blocks = text.split("\n\n")
    assert "Previous topic\nstring — Common string operations" in blocks
    assert "Next topic\ndifflib — Helpers for computing deltas" in blocks
    assert "This Page\n- Report a Bug\n- Show Source" in blocks
    linked = [text[s:e] for s, e in links]
    assert "string — Common string operations" in linked and "Show Source" in linked
    assert "previous" in linked and "The Python Standard Library" in linked
    # a body paragraph's link is content, not navigation: it is not recorded, and its block stands alone
    assert not any(s <= text.index("The re module") < e for s, e in links)
    assert "re" not in linked
    assert html_blocks(_page(1))[1] == blocks  # the same blocks as html_page's text


def test_a_body_with_links_is_not_navigation() -> None:
    markup = (
        "<div><p>Read <a href='a'>the guide</a> before you start.</p><p>It names every option.</p></div>"
        "<div><h4>See also</h4><p>The <a href='c'>json</a> module reads and writes a text format that"
        " many other programs can read, with options for every part of it.</p></div>"
        "<ul><li>Install it with <a href='p'>pip</a>.</li><li>Import it by name.</li></ul>"
    )
    _, text, links = html_page(markup)
    assert links == ()
    assert text.count("\n\n") == 4  # five blocks: nothing joined


def test_masked_links_mask_each_link_text_as_one_mark() -> None:
    lines = ["Previous topic", "string — Common string operations", "- index", "- next |"]
    text = "\n".join(lines)
    spans = [(15, 48), (51, 56), (59, 63)]
    assert [text[s:e] for s, e in spans] == ["string — Common string operations", "index", "next"]
    assert masked_links(lines, spans) == {1: "@", 2: "- @", 3: "- @ |"}


def test_navigation_blocks_naming_other_pages_share_one_key() -> None:
    cfg = BoilerplateConfig()
    keys = [document_keys([_parsed(i)], cfg).candidates for i in range(len(TOPICS))]
    shared = set.intersection(*map(set, keys))
    # the nav bar and the two boxes are one template on every page
    bar = "navigation - @ - @ | - @ | - @ | - @ » - @ » - @ » - @ - | - theme auto light dark - |"
    assert {"previous topic @", "next topic @", "this page - @ - @", bar} <= shared
    # without the recorded links no page shares them: each names other pages
    bare = [document_keys([Page(1, _parsed(i).text)], cfg).candidates for i in range(len(TOPICS))]
    assert not any("topic" in key or "documentation" in key for key in set.intersection(*map(set, bare)))


def test_the_compiled_walk_and_the_python_walk_strip_a_page_with_links_alike() -> None:
    cfg = BoilerplateConfig()
    pages = [_parsed(3)]
    chrome = {int(k) for k in _chrome_ids(pages, cfg)}
    assert strip(pages, chrome, cfg, compiled=True) == strip(pages, chrome, cfg, compiled=False)
    assert document_keys(pages, cfg, compiled=True) == document_keys(pages, cfg, compiled=False)


def test_a_documentation_site_loses_its_navigation_and_keeps_every_body(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", range(len(TOPICS)))
    index = tmp_path / "site.sqlite"
    ingest([site], index)
    texts = chunk_texts(index)
    joined = "\n".join(texts)
    for name, _, does in TOPICS:
        assert f"module {does}" in joined  # every body stays
        # a list of two links in the body is no template: "- @ - @" would be every such list's key
        assert f"- {name} recipes\n- {name} questions" in joined
    for box in ("Previous topic", "Next topic", "This Page", "Report a Bug", "3.12 Documentation",
                "About these pages"):
        assert box not in joined, box
    with Index.open(index) as ix:
        stripped = {k.example.split("\n")[0] for k in ix.boilerplate()}
    assert {"Previous topic", "Next topic", "This Page"} <= stripped


def test_links_survive_the_store_and_an_added_batch_equals_one_fresh_ingest(tmp_path: Path) -> None:
    """A document's keys are read again from its stored pages when later batches change the corpus
    statistics: the links must come back with them, or the first batch would keep its navigation."""
    first = _site(tmp_path / "a", range(0, 6))
    second = _site(tmp_path / "b", range(6, len(TOPICS)))
    incremental = tmp_path / "incremental.sqlite"
    ingest([first], incremental)
    with Index.open(incremental) as ix:
        documents = ix.store.documents
        stored = {Path(doc_id).name: documents.load_pages(doc_id)[0] for doc_id in documents.doc_ids()}
    assert len(stored) == 6
    for name, page in stored.items():
        assert page.links and page == _parsed_file(first / name)
    ingest([first, second], incremental)
    fresh = tmp_path / "fresh.sqlite"
    ingest([first, second], fresh)
    assert _export(incremental) == _export(fresh)
    assert "Previous topic" not in "\n".join(chunk_texts(incremental))


def _export(index: Path) -> list[str]:
    with Index.open(index) as ix:
        return sorted(json.dumps(r, sort_keys=True) for r in ix.export())


def _parsed(i: int) -> Page:
    _, text, links = html_page(_page(i))
    return Page(1, text, links=links)


def _parsed_file(path: Path) -> Page:
    parsed = parse_file(InputFile(path, path.name), ParseConfig())
    (doc,) = parsed.documents
    return doc.pages[0]


def _chrome_ids(pages: list[Page], cfg: BoilerplateConfig) -> list[int]:
    from chunkdedup.text.boilerplate import key_id

    return [key_id(k) for k in document_keys(pages, cfg).candidates]


@pytest.mark.parametrize("i", [0, 5])
def test_a_parsed_page_carries_its_links(tmp_path: Path, i: int) -> None:
    path = _site(tmp_path, range(i, i + 1)) / f"{TOPICS[i][0]}.html"
    page = _parsed_file(path)
    assert page.links == _parsed(i).links and page.text == _parsed(i).text


_LINE = st.sampled_from(["", "", "  ", "Next topic", "- index", "Page 3 of 9", "lists and tuples"])


@given(st.lists(_LINE, min_size=1, max_size=12), st.data())
def test_dropping_lines_moves_each_kept_link_with_its_line(lines: list[str], data: st.DataObject) -> None:
    """Lines dropped (running lines of text without page breaks, before chrome is read) leave the text
    without them, each run of three newlines or more made two and the ends stripped of newlines (a page
    that loses nothing is left as it is), with or without links; each link of a kept line still spans
    its own text."""
    text = "\n".join(lines)
    starts = [sum(len(x) + 1 for x in lines[:i]) for i in range(len(lines))]
    links = tuple((starts[i], starts[i] + len(line)) for i, line in enumerate(lines) if line.strip())
    drop = data.draw(st.sets(st.integers(0, len(lines) - 1)))
    records = {i: StrippedLine(1, lines[i], "k", "running") for i in drop}
    plain = _dropped(Page(1, text), records, [])
    linked = _dropped(Page(1, text, links=links), records, [])
    expected = re.sub(r"\n{3,}", "\n\n", "\n".join(x for i, x in enumerate(lines) if i not in drop))
    assert linked.text == plain.text == (expected.strip("\n") if drop else text)  # nothing dropped: as it was
    kept = [text[s:e] for s, e in links if starts.index(s) not in drop]
    assert [linked.text[s:e] for s, e in linked.links] == kept


def test_a_page_split_for_its_length_keeps_the_links_of_each_part(tmp_path: Path) -> None:
    body = "".join(f"<p>Paragraph {i} of the long page says what option {i} does.</p>" for i in range(40))
    path = tmp_path / "long.html"
    path.write_text(_page(2).replace('<div class="sphinxsidebar">', body + '<div class="sphinxsidebar">'))
    whole = _parsed_file(path)
    parsed = parse_file(InputFile(path, path.name), ParseConfig(max_page_chars=len(whole.text) // 2 + 10))
    (doc,) = parsed.documents
    assert len(doc.pages) >= 2 and "".join(p.text for p in doc.pages) == whole.text
    texts = [p.text[s:e] for p in doc.pages for s, e in p.links]
    assert texts == [whole.text[s:e] for s, e in whole.links]  # no link crosses the cut here
