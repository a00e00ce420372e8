"""``document_keys`` and ``strip`` key only the lines they read (edge lines, one-line blocks, every
block; every line only when ``always_strip`` asks): the same keys, the same candidates, the same cleaned
pages and stripped lines as keying every line, on generated text and on the project's real documents."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkdedup.config import BoilerplateConfig, Config
from chunkdedup.normalize import boilerplate_key, has_letters
from chunkdedup.text import boilerplate
from chunkdedup.text.boilerplate import DocumentKeys, StripResult, _layout, _page_blocks, key_id
from chunkdedup.text.lines import Block
from chunkdedup.types import Document, Page, StrippedLine
from test_chunk_kernel import DATA, _documents
from test_text_fast_paths import texts

_CONFIGS = [
    BoilerplateConfig(),
    BoilerplateConfig(min_block_words=2, max_block_chars=30, edge_lines=1),
    BoilerplateConfig(min_block_words=1, max_block_chars=200, edge_lines=2, running_min_pages=2),
]


def _read(blocks: list[Block]) -> list[tuple[object, ...]]:
    """What document_keys and strip read of a layout: each block's key and count, each line's place,
    text and edge, and the key of each edge line and of each one-line block's line."""
    out: list[tuple[object, ...]] = []
    for b in blocks:
        alone = len(b.lines) == 1
        lines = [(ln.at, ln.text, ln.edge, ln.key if ln.edge or alone else None) for ln in b.lines]
        out.append((b.key, b.counted, lines))
    return out


@settings(max_examples=2000, deadline=None)
@given(texts, st.sampled_from(_CONFIGS))
def test_a_layout_of_edge_and_block_keys_reads_as_the_full_one(text: str, config: BoilerplateConfig) -> None:
    page = Page(1, text)
    full = _page_blocks(page, config)
    assert _read(_page_blocks(page, config, lines=False)) == _read(full)
    # the edge-only layout: every edge line's key
    edges = _page_blocks(page, config, edges=True)
    want = [(ln.at, ln.key) for b in full for ln in b.lines if ln.edge]
    assert [(ln.at, ln.key) for b in edges for ln in b.lines if ln.edge] == want


def _plain_document_keys(pages: Sequence[Page], config: BoilerplateConfig) -> DocumentKeys:
    """``document_keys`` over a layout with every line keyed (as before)."""
    layout = _layout(pages, config)
    n, seen = boilerplate._edge_key_pages(layout)
    need = math.ceil(config.running_share * n)
    counted = {b.key for blocks in layout for b in blocks if b.counted}
    candidates = counted | {k for k, c in seen.items() if c >= need}
    return DocumentKeys(frozenset(candidates), frozenset(candidates | seen.keys()))


def _plain_strip(pages: Sequence[Page], chrome: Collection[int], config: BoilerplateConfig) -> StripResult:
    """``strip`` as it was before its layouts keyed only what it reads: every line keyed, always (after
    the running lines of text without page breaks, a rule of its own: tests/test_unpaged_running.py)."""
    keep = {boilerplate_key(k) for k in config.always_keep}
    first: list[StrippedLine] = []
    if len(pages) < config.running_min_pages:
        unpaged = [boilerplate._unpaged_running(page, config, keep) for page in pages]
        if any(unpaged):
            pairs = zip(pages, unpaged, strict=True)
            pages = [boilerplate._dropped(page, drop, first) for page, drop in pairs]
    forced = {boilerplate_key(k) for k in config.always_strip} - keep
    chrome_ids = set(chrome) - {key_id(k) for k in keep}
    layout = _layout(pages, config)
    running = boilerplate._running(layout, config) - keep
    out_pages: list[Page] = []
    stripped: list[StrippedLine] = []
    for page, blocks in zip(pages, layout, strict=True):
        drop: dict[int, StrippedLine] = {}
        for block in blocks:
            if (block.counted and key_id(block.key) in chrome_ids) or block.key in forced:
                for ln in block.lines:
                    drop[ln.at] = StrippedLine(page.number, ln.text, block.key, "chrome")
                continue
            for ln in block.lines:
                if ln.key in forced or (ln.edge and has_letters(ln.key) and key_id(ln.key) in chrome_ids):
                    drop[ln.at] = StrippedLine(page.number, ln.text, ln.key, "chrome")
                elif ln.edge and ln.key in running:
                    drop[ln.at] = StrippedLine(page.number, ln.text, ln.key, "running")
        if drop:
            lines = page.text.split("\n")
            text = "\n".join(line for i, line in enumerate(lines) if i not in drop)
            text = re.sub(r"\n{3,}", "\n\n", text)
            out_pages.append(Page(page.number, text.strip("\n"), page.has_text_layer))
            stripped.extend(drop[i] for i in sorted(drop))
        else:
            out_pages.append(page)
    return StripResult(tuple(out_pages), (*first, *stripped))


def _chrome(docs: list[Document], keys: list[DocumentKeys], config: BoilerplateConfig) -> set[int]:
    units: dict[int, set[str]] = {}
    for d, dk in zip(docs, keys, strict=True):
        for k in dk.candidates:
            units.setdefault(key_id(k), set()).add(d.unit)
    total = len({d.unit for d in docs})
    return {h for h, u in units.items() if boilerplate.is_chrome(len(u), total, config)}


@pytest.mark.parametrize("name", ["sec-10q", "ntsb", "site-policy"])
def test_real_documents_keep_their_keys_and_strip_the_same_lines(name: str) -> None:
    if not (DATA / name).is_dir():
        pytest.skip(f"{DATA / name} is not here")
    docs = list(_documents(name))
    default = Config().boilerplate
    some_line = next(ln for d in docs for p in d.pages for ln in p.text.split("\n") if len(ln.split()) > 3)
    configs = [
        *_CONFIGS,
        BoilerplateConfig(share=0.05, min_units=2),  # more chrome
        BoilerplateConfig(always_strip=(some_line,), always_keep=("Page 1",)),  # every line looked at
    ]
    stripped_any = 0
    for config in configs:
        keys = [boilerplate.document_keys(d.pages, config) for d in docs]
        assert keys == [_plain_document_keys(d.pages, config) for d in docs]
        chrome = _chrome(docs, keys, config)
        for d, dk in zip(docs, keys, strict=True):
            held = chrome & {key_id(k) for k in dk.strippable}
            for ids in (held, chrome, set()):
                got = boilerplate.strip(d.pages, ids, config)
                assert got == _plain_strip(d.pages, ids, config), (d.doc_id, config)
                stripped_any += len(got.stripped)
    assert stripped_any  # the comparison saw lines go
    assert default == BoilerplateConfig()


def test_an_always_strip_line_inside_a_block_still_goes() -> None:
    page = Page(1, "Title line here\nfirst body line\nSECRET INTERNAL LINE\nlast body line\nfooter line")
    config = BoilerplateConfig(always_strip=("secret internal line",), edge_lines=1)
    got = boilerplate.strip([page], (), config)
    assert "SECRET" not in got.pages[0].text
    assert got == _plain_strip([page], (), config)


@settings(max_examples=2000, deadline=None)
@given(texts.map(lambda t: t.replace("\n", " ")), st.sampled_from(_CONFIGS))
def test_a_one_line_record_gets_the_keys_of_its_layout(text: str, config: BoilerplateConfig) -> None:
    # document_keys keys a one-page, one-line document from its line alone (the records' shortcut)
    pages = [Page(1, text)]
    want = _plain_document_keys(pages, config)
    assert boilerplate.document_keys(pages, config) == want
    assert boilerplate.document_keys(pages, config, compiled=True) == want
