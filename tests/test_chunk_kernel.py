"""The compiled chunker (:mod:`chunkdedup.text.chunk_kernel`) must make the regex chunker's chunks, byte for
byte: on the project's real documents (parsed and stripped as the ingest does), on generated text full
of the rules' edge cases, and against the plain chunker the fast paths were first checked against."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from chunkdedup.config import ChunkConfig, Config
from chunkdedup.ingestion import sequence as pipeline
from chunkdedup.parse import discover, parse_file
from chunkdedup.text import boilerplate
from chunkdedup.text.chunk import chunk_document, chunk_page
from chunkdedup.types import Document, FileStatus, Page
from export_reference import REFERENCE, corpora, digests
from test_text_fast_paths import _TRICKY, _plain_chunk_page, texts

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_CONFIGS = [
    ChunkConfig(),
    ChunkConfig(target_words=8, max_words=12, paragraph_words=3),
    ChunkConfig(target_words=2, max_words=2),
    ChunkConfig(target_words=40, max_words=60, paragraph_words=20),
    ChunkConfig(target_words=1, max_words=1, paragraph_words=1),
]


def _same(text: str, config: ChunkConfig) -> None:
    page = Page(3, text)
    assert chunk_page("d", page, config, compiled=True) == chunk_page("d", page, config), repr(text)


# Strings aimed at each rule: abbreviations and initials (behind brackets and quotes, upper case, the
# Kelvin sign, dotted forms), quotes and brackets around the mark, unicode punctuation and spaces,
# bullets, items, headings, paragraph breaks with odd whitespace, very long words, empty text.
ADVERSARIAL = [
    "",
    " ",
    "\n\n\n",
    ".",
    ". A",
    "a. B",
    "A. B. C. Smith went home. He slept.",
    "See e.g. Fig. 3 and U.S. Pat. No. 5. Then (e.g. Dr. Who) left. (Etc. More.) Next",
    'He said "Stop." Then \'she\' left! Why? "Because." (Really.) [Yes.] Done.',
    "He said “Stop.” Then ‘she’ left! Why? ‘Because.’ “Quote” — Next.",
    "Price is 3.5% today. 4.5 tomorrow. $1,250.00 total. 10-Q filed. 2022. Done.",
    "u.s.c. 101 applies. Ph.D. Jones. ph.d. x. Approx. 5 min. APPROX. 6. approxi. 7. st. 8.",
    "\u212aG. Next. \u212a. Next. İ. Next. Σ. Next. ß. Next. ǅ. Next. ﬁ. Next.",
    "word.\u00a0Next word.\u2003Next.\u3000Next.\u2028Next.\u0085Next.\x1cNext.\x1fNext.",
    "Item list:\n- one\n* two\n• three\n+ four\n1. five\n12) six\n123. seven\n1234. no\n(a) eight\n(ab1) no",
    "\n   - indented item\n\t* tab item\n \u00a0- nbsp item\n\r- cr item\n\x0c- ff item",
    "# Title\nBody text here. More.\n## Sub\n\n### Third\tx\n####### seven\n#nospace\n#\n# \nend",
    "para one.\n\npara two.\n \t \npara three\n\n\n\npara four\n\u00a0\npara five\n\r\npara six",
    "٣. arabic digit item\n٣٣٣٣. four\n\n١) paren\n(٣) not ascii paren",
    "a" * 5000 + ". B" + " x" * 600 + ". C",
    ("word " * 449 + "end. ") * 3,
    ("w " * 1000).strip(),
    "((((((((no. X and ((((((((word. Y and abcdefg. Z",
    "# Title  \n\u00a0\nbody. Next\n\n- item. (e.g. More) \u2003\n",
    "p\x00. Next. e\x00g. Next. \x00. Next.",
    "Lone \ud800. Next \udfff. X\ud83d. Y. Emoji 🙅. Next 🍾! Then 𝐀. B. 𝟙. item\n𝟙. x",
    "End!) Next. End?” Next. End.’ Next. End.] Next. End.)] Next. x.'.') Next",
    "Tab.\tNext. Vtab.\x0bNext. Many.   \n  \n  Next.",
    "- starts with item\n- and more.\n\n1. first. Second sentence here.\n2. next",
    "Ends in whitespace.  \n\n  ",
    "\n\n  Starts in whitespace. Ok.",
    "Mr. Smith, Mrs. Jones, Ms. Lee, Jr. Sr. St. Mt. Co. Inc. Ltd. LLC. PLC. Corp. vs. cf. al. etc. X",
    "Jan. Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct. Nov. Dec. 5 Vol. pp. p. sec. art. ch. para. X",
]


@pytest.mark.parametrize("text", ADVERSARIAL)
@pytest.mark.parametrize("config", _CONFIGS)
def test_adversarial_strings_chunk_as_the_regex_chunker(text: str, config: ChunkConfig) -> None:
    _same(text, config)
    _same(text.replace("\n", "\n\n"), config)


@settings(max_examples=3000, deadline=None)
@given(texts, st.sampled_from(_CONFIGS))
@example("p\x00. Next", ChunkConfig())
@example("\u212a. Next \u212aG. Next", ChunkConfig(target_words=2, max_words=2))
def test_generated_text_chunks_as_the_regex_chunker(text: str, config: ChunkConfig) -> None:
    _same(text, config)


_words = st.lists(st.sampled_from([*_TRICKY, "Word", "word.", "Next", " ", "\n", "\n\n"]), max_size=200)


@settings(max_examples=1000, deadline=None)
@given(_words.map("".join), st.sampled_from(_CONFIGS))
def test_longer_generated_text_chunks_as_the_plain_chunker(text: str, config: ChunkConfig) -> None:
    page = Page(1, text)
    assert chunk_page("d", page, config, compiled=True) == _plain_chunk_page("d", page, config)


def _documents(name: str) -> Iterator[Document]:
    cfg = Config()
    for inp in discover([DATA / name], None, cfg.parse):
        parsed = parse_file(inp, cfg.parse)
        if parsed.status == FileStatus.INGESTED:
            yield from parsed.documents


@pytest.mark.parametrize("name", ["sec-10q", "ntsb", "site-policy"])
def test_real_documents_chunk_as_the_regex_chunker(name: str) -> None:
    if not (DATA / name).is_dir():
        pytest.skip(f"{DATA / name} is not here")
    bp = Config().boilerplate
    docs = list(_documents(name))
    assert docs
    for doc in docs:
        clean = boilerplate.strip(doc.pages, (), bp).pages  # as the ingest's chunk stage sees them
        for pages in (clean, doc.pages):
            for config in _CONFIGS:
                got = chunk_document(doc.doc_id, pages, config, compiled=True)
                assert got == chunk_document(doc.doc_id, pages, config), (doc.doc_id, config)


@pytest.mark.parametrize("name", sorted(json.loads(REFERENCE.read_text(encoding="utf-8"))))
def test_an_ingest_with_every_chunk_job_compiled_writes_the_reference_index(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference corpora are small enough for the regex chunker; here every job chunks compiled."""
    monkeypatch.setattr(pipeline, "NUMPY_CHARS", -1)
    index = corpora()[name](tmp_path / "index.sqlite")
    assert digests(index) == json.loads(REFERENCE.read_text(encoding="utf-8"))[name]
