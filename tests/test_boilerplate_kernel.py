"""The compiled boilerplate layout (:mod:`chunkdedup.text.boilerplate_kernel`) must make the str path's
blocks, byte for byte: the same lines, edge flags, keys and counts, so the same candidate keys, the same
chrome decisions and the same cleaned pages. Checked on every page of the project's real documents, on
strings aimed at the keys' edges, on generated text, and against the str definition of the key."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from chunkdedup.config import BoilerplateConfig
from chunkdedup.ingestion import sequence as pipeline
from chunkdedup.normalize import _boilerplate_key
from chunkdedup.text import boilerplate, boilerplate_kernel
from chunkdedup.text.boilerplate import _page_blocks, key_id
from chunkdedup.text.boilerplate_kernel import PageKeys, page_blocks
from chunkdedup.text.lines import Block
from chunkdedup.types import Page
from export_reference import REFERENCE, corpora, digests
from test_boilerplate_keys import _chrome
from test_chunk_kernel import DATA, _documents
from test_text_fast_paths import _TRICKY, texts

_CONFIGS = [
    BoilerplateConfig(),
    BoilerplateConfig(min_block_words=2, max_block_chars=30, edge_lines=1),
    BoilerplateConfig(min_block_words=1, max_block_chars=200, edge_lines=2, running_min_pages=2),
    BoilerplateConfig(min_block_words=12, max_block_chars=10, edge_lines=5),
]
# the layouts document_keys and strip ask for: every line keyed, edge lines and one-line blocks, edges only
_MODES = [{"edges": False, "lines": True}, {"edges": False, "lines": False}, {"edges": True, "lines": True}]


def _outcome(
    layout: Callable[..., list[Block]], page: Page, config: BoilerplateConfig, **mode: bool
) -> object:
    """The blocks, or the error raised (a lone surrogate cannot be encoded: both paths must say so)."""
    try:
        return layout(page, config, **mode)
    except UnicodeEncodeError as e:
        return type(e)


def _same(text: str, config: BoilerplateConfig) -> None:
    page = Page(2, text)
    for mode in _MODES:
        want = _outcome(_page_blocks, page, config, **mode)
        assert _outcome(page_blocks, page, config, **mode) == want, (repr(text), mode)


ADVERSARIAL = [
    "",
    " ",
    "\n",
    "\n\n\n",
    " \t \n\t\n \x0b\x0c\r\n",
    "one line, no newline 12 and 34",
    "Page 2 of 4 NYC08CA055",
    "Apple Inc. | Q3 2022 Form 10-Q | 17",
    "# 5 # 6 ## 7 8 #",
    "12 34 56",
    "  12 a 34  b 56 78  ",
    "x1 x2 y z3 4 5 w",
    "Header line\r\nbody line one\r\nbody line two\r\n\r\nFooter 3\r\n",
    "a\x1cb\x1dc\x1ed\x1ff 1\x1c2",
    "\x1c\x1d\n\x1e\x1f\nword\n\x1c",
    "caf\u00e9 menu 12\nPlain 3 line\nStra\u00dfe \u03a3\u0391\u03a3 \u0130 \u212a\n\u212aelvin 4",
    "nbsp\u00a0inside 7\n\u00a0\n\u2003\u3000\n\u2028\nem\u2003space 8\n\x85\nnel\x85line",
    "\u0663\u0664 arabic digits\nfull\uff17width\n\u00bd half \u00b2 sup\n\ufb01le ligature 9",
    "e\u0301 combining 1\n\u200b zero width\n\u200b\n",
    "lone \ud800 surrogate\nnext line 5",
    "emoji \U0001f645 1\n\U0001d400 bold\n\U0001d7d9 digit",
    "x" * 1999 + "\n" + "y" * 2000 + "\n" + "z" * 2001 + "\n" + "w 1 " * 600,
    ("short 1\nshort 2\n" * 700) + "end",
    "A block line\nof two lines 3\n\nand a block\nof three\nlines 4\n\n\n\nlast",
    "\n\n  lead blank lines\nthen text\n\n",
    "\t tab led 1\t\n\tspace trailed 2 \n",
    "UPPER Case MiXeD 42x ABC-123 $1,250.00 10-Q",
    "_under_score_ 1_2 __ a_1",
    "\x00 nul 1\n\x7f del 2",
]


@pytest.mark.parametrize("text", ADVERSARIAL)
@pytest.mark.parametrize("config", _CONFIGS)
def test_adversarial_pages_lay_out_as_the_str_path(text: str, config: BoilerplateConfig) -> None:
    _same(text, config)
    _same(text.replace("\n", "\n\n"), config)
    _same(text.replace(" ", "\n"), config)


@pytest.mark.parametrize("text", [t for t in ADVERSARIAL if t.strip()])
def test_a_line_is_keyed_as_the_str_definition(text: str) -> None:
    for line in text.split("\n"):
        if line.strip() and "\ud800" not in line:
            config = BoilerplateConfig(max_block_chars=100_000)
            (block,) = page_blocks(Page(1, line), config)
            assert block.key == _boilerplate_key(line), repr(line)


_lines = st.lists(
    st.one_of(
        st.sampled_from([
            *_TRICKY, "Page 1 of 9", "ACME Corp | 10-Q | 17", "word " * 8, "", " ", "\t",
            "## 1. Purpose and scope", "To complete the process, the manager must:",  # structure
        ]),
        texts,
    ),
    max_size=30,
).map("\n".join)


@settings(max_examples=3000, deadline=None)
@given(texts, st.sampled_from(_CONFIGS))
@example("A\x1cb 12345678 c\u00a0d", BoilerplateConfig())
@example("Stra\u00dfe \u03a3\u0391\u03a3 \u0130 \u212a 1\x1f2", BoilerplateConfig())
def test_generated_text_lays_out_as_the_str_path(text: str, config: BoilerplateConfig) -> None:
    _same(text, config)


@settings(max_examples=2000, deadline=None)
@given(_lines, st.sampled_from(_CONFIGS))
def test_generated_lines_lay_out_as_the_str_path(text: str, config: BoilerplateConfig) -> None:
    _same(text, config)


_bodies = st.lists(st.one_of(_lines, texts), min_size=1, max_size=6)
# half the documents carry a running footer (its page number masked), so running lines go too
_pages = st.tuples(_bodies, st.booleans()).map(
    lambda d: [f"{t}\nACME Corp | Page {i} of 9" if d[1] else t for i, t in enumerate(d[0])]
)


@settings(max_examples=1500, deadline=None)
@given(_pages, st.sampled_from(_CONFIGS), st.randoms(use_true_random=False))
@example(["Footer 1\nbody one here", "Footer 2\nbody two here", "Footer 3\nbody"], BoilerplateConfig(), None)
def test_generated_documents_key_and_strip_as_the_str_path(
    texts_: list[str], config: BoilerplateConfig, rnd: random.Random | None
) -> None:
    """Keys, and strip under no chrome, all of the document's strippable keys as chrome, and a random
    part of them (the compiled strip looks only at counted blocks and lettered edge lines)."""
    pages = [Page(i + 1, t) for i, t in enumerate(texts_)]
    keys = boilerplate.document_keys(pages, config, compiled=True)
    assert keys == boilerplate.document_keys(pages, config)
    ids = sorted(key_id(k) for k in keys.strippable)
    some = set(rnd.sample(ids, len(ids) // 2)) if rnd is not None else set(ids[:1])
    for chrome in (set(), set(ids), some):
        want = boilerplate.strip(pages, chrome, config)
        assert boilerplate.strip(pages, chrome, config, compiled=True) == want


@settings(max_examples=2000, deadline=None)
@given(st.text(st.characters(codec="ascii"), max_size=300))
def test_ascii_text_is_keyed_as_the_str_definition(text: str) -> None:
    config = BoilerplateConfig(max_block_chars=10_000)
    for block in page_blocks(Page(1, text), config):
        if len(block.lines) == 1:
            assert block.key == _boilerplate_key(block.lines[0].text)
        else:
            assert block.key == _boilerplate_key(" ".join(ln.text for ln in block.lines))
        for ln in block.lines:
            assert ln.key == _boilerplate_key(ln.text)


@pytest.mark.parametrize("name", ["sec-10q", "ntsb", "site-policy"])
def test_real_documents_lay_out_key_and_strip_as_the_str_path(name: str) -> None:
    if not (DATA / name).is_dir():
        pytest.skip(f"{DATA / name} is not here")
    docs = list(_documents(name))
    assert docs
    pages = [p for d in docs for p in d.pages]
    for config in _CONFIGS:
        for page in pages:
            for mode in _MODES:
                assert page_blocks(page, config, **mode) == _page_blocks(page, config, **mode), page.number
    some_line = next(ln for p in pages for ln in p.text.split("\n") if len(ln.split()) > 3)
    stripped = 0
    for config in [
        *_CONFIGS,
        BoilerplateConfig(share=0.05, min_units=2),
        BoilerplateConfig(always_strip=(some_line,), always_keep=("Page 1",)),
    ]:
        keys = [boilerplate.document_keys(d.pages, config, compiled=True) for d in docs]
        assert keys == [boilerplate.document_keys(d.pages, config) for d in docs]
        chrome = _chrome(docs, keys, config)
        for d, dk in zip(docs, keys, strict=True):
            for ids in (chrome & {key_id(k) for k in dk.strippable}, chrome, set()):
                got = boilerplate.strip(d.pages, ids, config, compiled=True)
                assert got == boilerplate.strip(d.pages, ids, config), (d.doc_id, config)
                stripped += len(got.stripped)
    assert stripped  # the comparison saw lines go


def test_the_walk_keys_ascii_text_and_leaves_the_rest_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both key paths run: an ASCII line is keyed by the walk, a line holding another character by
    ``boilerplate_key`` (so the tests above compare both with the str path)."""
    calls: list[str] = []
    real = boilerplate_kernel.boilerplate_key

    def spy(text: str) -> str:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(boilerplate_kernel, "boilerplate_key", spy)
    blocks = page_blocks(Page(1, "Plain 1 line\n\ncaf\u00e9 2\n\nnbsp\u00a0here"), BoilerplateConfig())
    assert [b.key for b in blocks] == ["plain # line", "caf\u00e9 #", "nbsp here"]
    assert calls == ["caf\u00e9 2", "nbsp\u00a0here"]


@pytest.mark.parametrize("name", sorted(json.loads(REFERENCE.read_text(encoding="utf-8"))))
def test_an_ingest_that_keys_and_strips_compiled_writes_the_reference_index(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference corpora are small enough for the str path; here every parse and chunk job is
    compiled (and the walk is seen to run)."""
    monkeypatch.setattr(pipeline, "NUMPY_CHARS", -1)
    walked: list[int] = []
    real = boilerplate_kernel.page_keys

    def counting(page: Page, config: BoilerplateConfig, *, edges: bool = False) -> PageKeys:
        walked.append(page.number)
        return real(page, config, edges=edges)

    monkeypatch.setattr(boilerplate_kernel, "page_keys", counting)
    index = corpora()[name](tmp_path / "index.sqlite")
    assert walked
    assert digests(index) == json.loads(REFERENCE.read_text(encoding="utf-8"))[name]
