"""Boilerplate detection: unit rules, then the real corpora."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkdedup import BoilerplateConfig, Index, Page, boilerplate_key, candidate_keys, running_keys, strip
from chunkdedup.store.schema import CLEAN_TEXT, RAW_TEXT
from chunkdedup.text.boilerplate import _is_structure, document_keys, is_chrome, key_id
from conftest import chunk_texts, clean_pages

CFG = BoilerplateConfig()


WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


def _pages(n: int, header: str, footer: str = "") -> list[Page]:
    """Pages whose edge lines differ per page (words, not digits, since digits are masked)."""
    out = []
    for i in range(1, n + 1):
        w = WORDS[i - 1]
        lines = [header.format(i=i), "", f"{w} body", f"{w} intro", f"{w} intro two"]
        lines += ["Middle repeated line on every page", "more text"]
        lines += ["", f"{w} x", f"{w} y", f"{w} z"]  # pad so the middle lines are outside the edge band
        if footer:
            lines.append(footer.format(i=i))
        out.append(Page(i, "\n".join(lines)))
    return out


def test_digit_masking_makes_page_numbers_one_key() -> None:
    assert boilerplate_key("Apple Inc. | Q3 2022 Form 10-Q | 7") == boilerplate_key(
        "Apple Inc. | Q3 2022 Form 10-Q | 17"
    )
    assert boilerplate_key("www.epc-cep.eu 35") == boilerplate_key("www.epc-cep.eu 36")
    assert boilerplate_key("Refunds within 30 days") != boilerplate_key("Refunds within the month")


def _regex_key(text: str) -> str:
    """The key's definition as one regex: a run of whitespace-separated digit-bearing tokens -> #."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", re.sub(r"\S*\d\S*(?:\s+\S*\d\S*)*", "#", t)).strip()


@given(st.text(alphabet="aB1 \t\n2#-\u00a0\u0663\u2009.", max_size=40))
def test_boilerplate_key_equals_its_regex_definition(text: str) -> None:
    assert boilerplate_key(text) == _regex_key(text)


def test_running_header_needs_half_the_pages_and_three_pages() -> None:
    pages = _pages(4, "ACME Corp Travel Policy | page {i}")
    assert boilerplate_key("ACME Corp Travel Policy | page 1") in running_keys(pages, CFG)
    assert running_keys(pages[:2], CFG) == set()  # two pages are too few to call anything running
    # on 2 of 6 pages only: not running
    six = _pages(6, "Header {i}")
    mixed = [Page(p.number, ("Rare header line\n" if p.number <= 2 else "") + p.text) for p in six]
    assert boilerplate_key("Rare header line") not in running_keys(mixed, CFG)


def test_middle_lines_are_never_stripped_by_the_running_rule() -> None:
    pages = _pages(5, "Letterhead of the company")
    result = strip(pages, set(), CFG)
    for page in result.pages:
        assert "Middle repeated line on every page" in page.text
        assert "Letterhead of the company" not in page.text
    assert {s.scope for s in result.stripped} == {"running"}
    assert len(result.stripped) == 5


def test_chrome_share_is_strict_and_needs_min_units() -> None:
    assert not is_chrome(2, 10, CFG)  # exactly 20% is not more than 20%
    assert is_chrome(5, 10, BoilerplateConfig(min_units=5))
    assert not is_chrome(3, 3, CFG)  # a 3-document corpus does not strip everything
    assert not is_chrome(4, 100, CFG)


def test_keys_without_letters_are_never_candidates() -> None:
    page = Page(1, "$ 1,234\n\nText of a paragraph that is long enough to count here.\n\n2022 2021")
    keys = candidate_keys([page], CFG)
    assert all(re.search(r"[a-z]", k) for k in keys)
    assert boilerplate_key("2022 2021") not in keys


def test_short_body_lines_are_not_counted_but_edge_lines_are() -> None:
    body = "A long enough body paragraph with several words in it."
    text = f"Title line\n\nThree Months Ended\n\n{body}\n\nmore\n\nlast"
    keys = candidate_keys([Page(1, text)], BoilerplateConfig(edge_lines=1))
    assert boilerplate_key("Three Months Ended") not in keys
    assert boilerplate_key("Title line") in keys and boilerplate_key("last") in keys


def test_always_keep_and_always_strip_override_statistics() -> None:
    pages = _pages(4, "Letterhead of the company")
    cfg = BoilerplateConfig(always_keep=("Letterhead of the company",), always_strip=("more text",))
    result = strip(pages, set(), cfg)
    assert all("Letterhead of the company" in p.text for p in result.pages)
    assert all("more text" not in p.text for p in result.pages)
    chrome = {key_id(boilerplate_key("Letterhead of the company"))}
    assert all("Letterhead" in p.text for p in strip(pages, chrome, cfg).pages)


_POLICY = "\n".join([
    "# Remote Work Policy",
    "",
    "## 1. Purpose and scope",  # a house style's heading: in every policy, over this one's own text
    "",
    "Staff of the Oslo office may work from home two days a week after their probation ends.",
    "",
    "To complete the process, the responsible manager must:",  # a lead-in over this policy's list
    "",
    "- confirm the home desk meets the Oslo ergonomics checklist",
    "- record the agreed days in the Oslo rota",
    "",
    "## 2. Compliance",  # a heading over chrome: nothing of its own under it
    "",
    "CONFIDENTIAL - internal use only. Do not distribute outside the company.",
])
_HOUSE_STYLE = (
    "## 1. Purpose and scope",
    "To complete the process, the responsible manager must:",
    "## 2. Compliance",
    "CONFIDENTIAL - internal use only. Do not distribute outside the company.",
)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_heading_or_lead_in_over_its_documents_own_text_stays_though_chrome(compiled: bool) -> None:
    """Corpus chrome is what surrounds a document; a heading or a lead-in that every policy of a house
    style repeats opens this one's own text, so it stays (the demo corpus lost its section headings
    and list lead-ins). A heading over chrome, or at a page's end, is not the body's: it goes."""
    chrome = {key_id(boilerplate_key(line)) for line in _HOUSE_STYLE}
    result = strip([Page(1, _POLICY)], chrome, CFG, compiled=compiled)
    text = result.pages[0].text
    assert "## 1. Purpose and scope\n\nStaff of the Oslo office" in text
    assert "To complete the process, the responsible manager must:\n\n- confirm" in text
    assert [s.line for s in result.stripped] == list(_HOUSE_STYLE[2:])
    # a heading that ends its page has no body under it
    body = "Body of the page, in words of its own that make most of this short document."
    last = strip([Page(1, body + "\n\n## 1. Purpose and scope")], chrome, CFG, compiled=compiled)
    assert [s.line for s in last.stripped] == ["## 1. Purpose and scope"]
    # a running header goes although it reads as a heading over the page's text
    pages = [Page(i, f"Section 2 Travel rules\nBody text {w} of the page.\nMore {w}.") for i, w in
             enumerate(WORDS[:4], 1)]
    ran = strip(pages, {key_id(boilerplate_key("Section 2 Travel rules"))}, CFG, compiled=compiled)
    assert len(ran.stripped) == 4 and all("Section" not in p.text for p in ran.pages)
    # a line the config strips always goes, heading or not
    forced = BoilerplateConfig(always_strip=("## 1. Purpose and scope",))
    assert "Purpose" not in strip([Page(1, _POLICY)], chrome, forced, compiled=compiled).pages[0].text


def test_only_headings_and_lead_ins_read_as_the_documents_structure() -> None:
    heads = ["## Scope", "1. Purpose and scope", "2.3 Retention periods", "IV. Terms", "B. Fees",
             "Section 4 Definitions", "ARTICLE II", "The manager must:"]
    chrome = ["Table of Contents", "Page 1 of 4", "2022 Annual Report", "Apple Inc. | Q3 2023 Form 10-Q | 7",
              "Confidential: internal use only.", "#hashtag", "e.g. this one", "2022: a year in review"]
    assert [h for h in heads if not _is_structure(h)] == []
    assert [c for c in chrome if _is_structure(c)] == []


def test_ntsb_page_footers_are_gone_from_every_chunk(ntsb_index: Path) -> None:
    footer = re.compile(r"Page \d+ of \d+")
    texts = chunk_texts(ntsb_index)
    assert len(texts) > 40
    assert not [t for t in texts if footer.search(t)]
    assert not [p for _, _, p in clean_pages(ntsb_index) if footer.search(p)]
    # the reports' content stays
    assert sum("Pilot Information" in t or "pilot" in t.lower() for t in texts) >= 10


def _numeric_rows(text: str) -> list[str]:
    num = re.compile(r"^\(?\$?[\d,.]+\)?%?$")
    return [
        ln
        for ln in text.split("\n")
        if sum(bool(num.match(t)) for t in ln.split()) >= 2 and "Form 10-Q" not in ln
    ]


def test_sec_footers_gone_and_tables_headers_and_body_stay(sec_index: Path) -> None:
    footer = re.compile(r"\| Q\d \d{4} Form 10-Q \|")
    texts = chunk_texts(sec_index)
    assert not [t for t in texts if footer.search(t)]
    with Index.open(sec_index) as ix:
        rows = ix.store.conn.execute(f"SELECT doc_id, {RAW_TEXT}, {CLEAN_TEXT}"
            " FROM pages").fetchall()
    raw_words = sum(len(r[1].split()) for r in rows)
    clean_words = sum(len((r[2] or "").split()) for r in rows)
    assert clean_words / raw_words > 0.97  # only chrome went
    assert sum(bool(footer.search(r[1])) for r in rows) > 50  # there was something to strip
    # Table rows stay; the only numeric lines that go are short running section headers ("Item 3, 4").
    lost: list[str] = []
    total = 0
    for _, raw, clean in rows:
        kept = _numeric_rows(clean or "")
        total += len(_numeric_rows(raw))
        lost += [ln for ln in _numeric_rows(raw) if ln not in kept]
    assert all(len(ln.split()) <= 4 and ln.lower().startswith(("item", "part")) for ln in lost), lost[:5]
    assert len(lost) < 0.005 * total
    docs_with_header = {r[0] for r in rows if "Three Months Ended" in (r[2] or "")}
    assert len(docs_with_header) == 20  # column headers stay in every filing
    assert any("Total net sales" in t for t in texts)


def test_sec_stripped_keys_are_reported_with_counts(sec_index: Path) -> None:
    with Index.open(sec_index) as ix:
        keys = ix.boilerplate()
    apple = [k for k in keys if "form" in k.key and "apple" in k.key]
    assert apple and apple[0].scope == "running"
    assert apple[0].doc_count == 4 and apple[0].page_count > 50
    assert "Form 10-Q" in apple[0].example


_LINES = st.sampled_from(["", "Confidential notice for staff", "Page 3 of 9", "alpha bravo", "charlie delta"])
_FEW_PAGES = st.lists(st.lists(_LINES, max_size=8).map("\n".join), min_size=1, max_size=2)


@given(_FEW_PAGES, st.booleans())
def test_no_chrome_and_few_pages_strip_as_an_unrelated_chrome_key_does(texts: list[str], force: bool) -> None:
    """No chrome and too few pages for a running line: the shortcut gives what the full pass gives."""
    cfg = BoilerplateConfig(always_strip=("Confidential notice for staff",)) if force else CFG
    pages = [Page(i + 1, t) for i, t in enumerate(texts)]
    assert strip(pages, set(), cfg) == strip(pages, {key_id("never in these pages")}, cfg)


_MANY_PAGES = st.lists(st.lists(_LINES, max_size=9).map("\n".join), min_size=3, max_size=6)


@given(_MANY_PAGES, st.booleans())
def test_no_chrome_strips_running_lines_as_the_full_pass_does(texts: list[str], header: bool) -> None:
    """With no chrome and nothing forced only running lines can go: keying the edge lines alone gives
    what the full pass (every line and block keyed) gives."""
    pages = [Page(i + 1, ("Acme Corp Handbook\n" if header else "") + t) for i, t in enumerate(texts)]
    assert strip(pages, set(), CFG) == strip(pages, {key_id("never in these pages")}, CFG)


@given(_MANY_PAGES | _FEW_PAGES, st.sets(_LINES))
def test_a_documents_own_chrome_strips_as_the_corpus_chrome_does(texts: list[str], chrome: set[str]) -> None:
    """The chunk jobs give each document the chrome keys among its strippable ones: the same strip."""
    pages = [Page(i + 1, t) for i, t in enumerate(texts)]
    corpus = {key_id(boilerplate_key(line)) for line in chrome} | {key_id("elsewhere only")}
    own = corpus & {key_id(k) for k in document_keys(pages, CFG).strippable}
    assert strip(pages, own, CFG) == strip(pages, corpus, CFG)
