"""The demo corpus: deterministic, self-describing, and holding every case the pipeline handles."""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import re
from collections import defaultdict
from datetime import date
from pathlib import Path

import pypdfium2 as pdfium
import pytest
import yaml

from chunkdedup.demo import MANIFEST_KEYS, MANIFEST_NAME, DemoCorpus, write_demo_corpus
from chunkdedup.demo_text import COMPANY, FOOTER, SHARED_CLAUSES
from chunkdedup.errors import InputError

Record = dict[str, str]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> DemoCorpus:
    return write_demo_corpus(tmp_path_factory.mktemp("demo") / "corpus", seed=0)


@pytest.fixture(scope="module")
def records(corpus: DemoCorpus) -> list[Record]:
    lines = corpus.manifest.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def texts(corpus: DemoCorpus, records: list[Record]) -> dict[str, str]:
    """Each document's visible text, whitespace collapsed, by manifest path."""
    return {r["path"]: _visible_text(corpus.folder / r["path"]) for r in records}


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _pdf_pages(path: Path) -> list[str]:
    pdf = pdfium.PdfDocument(path)
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


def _visible_text(path: Path) -> str:
    raw = "\n".join(_pdf_pages(path)) if path.suffix == ".pdf" else path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
        raw = html.unescape(re.sub(r"<[^>]+>", " ", raw))
    if path.suffix == ".md":
        raw = raw.split("---\n", 2)[2]
    return " ".join(raw.split())


def _front_matter(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), path
    loaded = yaml.safe_load(text.split("---\n", 2)[1])
    assert isinstance(loaded, dict)
    return loaded


def _sentences(text: str) -> set[str]:
    # Crude on purpose: both versions are cut the same way, so equal sentences still match.
    # Running headers, page numbers and the effective-date line differ by design; leave them out.
    # Case and punctuation go, so a heading in capitals or a list dash does not hide a match.
    text = re.sub(rf"{COMPANY} \| [^|]+ \| Rev \d+|Page \d+ of \d+", " ", text.replace(FOOTER, " "))
    return {
        " ".join(re.sub(r"[^\w\s]", " ", s.casefold()).split())
        for s in re.split(r"(?<=[.;:])\s+", text)
        if not re.search(r"\d{4}-\d\d-\d\d", s)
    }


def _mask(sentence: str) -> str:
    """Digits masked; "$1 250 00" (punctuation already gone) is one number."""
    return re.sub(r"\d+(?: \d+)*", "#", sentence)


# ---- determinism -------------------------------------------------------------------------------


def test_same_seed_gives_byte_identical_files(corpus: DemoCorpus, tmp_path: Path) -> None:
    again = write_demo_corpus(tmp_path / "again", seed=0)
    first, second = _digests(corpus.folder), _digests(again.folder)
    assert any(name.endswith(".pdf") for name in first)
    assert first == second


def test_other_seed_gives_other_content(corpus: DemoCorpus, tmp_path: Path) -> None:
    other = _digests(write_demo_corpus(tmp_path / "other", seed=1).folder)
    first = _digests(corpus.folder)
    common = set(first) & set(other)
    changed = [name for name in common if first[name] != other[name]]
    assert len(changed) > len(common) / 2


def test_rewrites_a_previous_demo_corpus(corpus: DemoCorpus, tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    write_demo_corpus(folder, seed=1)
    write_demo_corpus(folder, seed=0)
    assert _digests(folder) == _digests(corpus.folder)


# ---- manifest and metadata --------------------------------------------------------------------


def test_manifest_lists_every_file_and_nothing_else(corpus: DemoCorpus, records: list[Record]) -> None:
    written = set(_digests(corpus.folder)) - {MANIFEST_NAME}
    listed = [r["path"] for r in records]
    assert sorted(listed) == sorted(written)
    assert len(set(listed)) == len(listed)
    for record in records:
        assert tuple(record) == MANIFEST_KEYS
        assert record["path"] == f"{record['department']}/{record['family']}-{record['version']}" + (
            Path(record["path"]).suffix
        )
        date.fromisoformat(record["effective_date"])


def test_counts_match_the_manifest(corpus: DemoCorpus, records: list[Record]) -> None:
    families = {r["family"] for r in records}
    suffixes = [Path(r["path"]).suffix for r in records]
    assert corpus.manifest == corpus.folder / MANIFEST_NAME
    assert corpus.documents == len(records) == 36
    assert corpus.families == len(families) == 24
    assert corpus.pdfs == suffixes.count(".pdf") == 12
    assert suffixes.count(".md") == 12
    assert suffixes.count(".html") >= 3 and suffixes.count(".txt") >= 3
    assert corpus.shared_clauses == len(SHARED_CLAUSES) >= 3
    assert len({r["department"] for r in records}) == 6
    per_family = defaultdict(list)
    for r in records:
        per_family[r["family"]].append(r)
    versioned = [rs for rs in per_family.values() if len(rs) > 1]
    assert corpus.versioned_families == len(versioned) == 8
    assert all(len(rs) <= 3 for rs in versioned)


def test_versions_are_dated_in_order(records: list[Record]) -> None:
    per_family: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        per_family[r["family"]].append(r)
    for family, rs in per_family.items():
        rs.sort(key=lambda r: int(r["version"][1:]))
        assert [r["version"] for r in rs] == [f"v{n}" for n in range(1, len(rs) + 1)], family
        dates = [r["effective_date"] for r in rs]
        assert dates == sorted(set(dates)), family
        assert len({(r["department"], r["title"]) for r in rs}) == 1, family


def test_markdown_front_matter_matches_the_manifest(corpus: DemoCorpus, records: list[Record]) -> None:
    markdown = [r for r in records if r["path"].endswith(".md")]
    assert markdown
    for record in markdown:
        front = _front_matter(corpus.folder / record["path"])
        assert {key: str(value) for key, value in front.items()} == {
            key: record[key] for key in MANIFEST_KEYS if key != "path"
        }


# ---- formats ----------------------------------------------------------------------------------


def test_pdf_pages_carry_header_footer_and_page_number(corpus: DemoCorpus, records: list[Record]) -> None:
    pdfs = [r for r in records if r["path"].endswith(".pdf")]
    assert pdfs
    for record in pdfs:
        pages = _pdf_pages(corpus.folder / record["path"])
        assert 3 <= len(pages) <= 6, record["path"]
        header = f"{COMPANY} | {record['title']} | Rev {record['version'][1:]}"
        with pdfium.PdfDocument(corpus.folder / record["path"]) as pdf:
            stamps = pdf.get_metadata_dict()
        # No timestamp of the run: the creation date is pinned so output is byte-stable.
        assert stamps["CreationDate"].startswith("D:2024"), stamps
        assert date.today().strftime("%Y%m%d") not in stamps["CreationDate"]
        for number, page in enumerate(pages, start=1):
            lines = [line.strip() for line in page.splitlines()]
            assert lines[0] == header, (record["path"], number)
            assert FOOTER in lines, (record["path"], number)
            assert lines[-1] == f"Page {number} of {len(pages)}", (record["path"], number)


def test_pdf_text_is_latin1(texts: dict[str, str]) -> None:
    for path, text in texts.items():
        if path.endswith(".pdf"):
            text.encode("latin-1")


def test_html_has_script_and_style_to_drop(corpus: DemoCorpus, records: list[Record]) -> None:
    pages = [r["path"] for r in records if r["path"].endswith(".html")]
    assert pages
    for path in pages:
        raw = (corpus.folder / path).read_text(encoding="utf-8")
        assert "<script>" in raw and "<style>" in raw
        assert "window.portal" not in _visible_text(corpus.folder / path)


def test_text_files_have_form_feed_pages(corpus: DemoCorpus, records: list[Record]) -> None:
    paths = [r["path"] for r in records if r["path"].endswith(".txt")]
    assert paths
    for path in paths:
        pages = (corpus.folder / path).read_text(encoding="utf-8").split("\f")
        assert 2 <= len(pages) <= 3, path
        assert " ".join(pages[-1].split()).endswith(FOOTER), path


def test_body_paragraphs_have_policy_length(corpus: DemoCorpus, records: list[Record]) -> None:
    for record in (r for r in records if r["path"].endswith(".md")):
        body = (corpus.folder / record["path"]).read_text(encoding="utf-8").split("---\n", 2)[2]
        blocks = [b.strip() for b in body.split("\n\n") if b.strip()]
        paragraphs = [
            b for b in blocks
            if not b.startswith(("#", "-", "Effective date:")) and not b.endswith(":") and b != FOOTER
        ]
        assert 5 <= len(paragraphs) <= 14, record["path"]  # plus one list paragraph: 6-15 in all
        for paragraph in paragraphs:
            assert 40 <= len(paragraph.split()) <= 120, (record["path"], paragraph)


def test_text_exercises_a_sentence_splitter(texts: dict[str, str]) -> None:
    corpus_text = " ".join(texts.values())
    for marker in ("e.g.", "i.e.", "U.S.", "Inc."):
        assert marker in corpus_text
    assert re.search(r"\b\d+\.\d%", corpus_text)
    assert re.search(r"\$\d{1,3}(,\d{3})+\.\d{2}\b", corpus_text)


# ---- what the pipeline must find --------------------------------------------------------------


def test_confidentiality_footer_is_corpus_chrome(texts: dict[str, str]) -> None:
    with_footer = [path for path, text in texts.items() if FOOTER in text]
    assert len(with_footer) > len(texts) / 2
    for path, text in texts.items():
        if not path.endswith(".pdf"):  # PDFs carry it on every page (checked above)
            assert text.endswith(FOOTER), path


def test_shared_clauses_are_content_not_chrome(records: list[Record], texts: dict[str, str]) -> None:
    families = {r["family"] for r in records}
    for name, clause in SHARED_CLAUSES:
        holders = {r["family"] for r in records if clause in texts[r["path"]]}
        assert 2 <= len(holders) < 0.2 * len(families), (name, sorted(holders))


def test_versions_differ_in_a_number_and_share_most_text(
    records: list[Record], texts: dict[str, str]
) -> None:
    per_family: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        per_family[r["family"]].append(r)
    pairs = 0
    for rs in per_family.values():
        rs.sort(key=lambda r: r["version"])
        for old, new in itertools.pairwise(rs):
            a, b = _sentences(texts[old["path"]]), _sentences(texts[new["path"]])
            only_old = {_mask(s) for s in a - b}
            renumbered = [s for s in b - a if _mask(s) != s and _mask(s) in only_old]
            # Besides the review date, a figure changes: "within 30 days" becomes "within 45 days".
            assert [s for s in renumbered if "review of this policy" not in s], (old["path"], new["path"])
            assert len(a & b) > 0.5 * len(a | b), (old["path"], new["path"])
            pairs += 1
    assert pairs >= 8


# ---- the folder -------------------------------------------------------------------------------


def test_missing_and_empty_folders_are_used(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert write_demo_corpus(empty).documents == 36
    assert write_demo_corpus(tmp_path / "a" / "b").manifest.is_file()


def test_foreign_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(str(tmp_path))) as info:
        write_demo_corpus(tmp_path)
    assert "empty folder" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_demo_corpus_with_an_extra_file_is_refused(tmp_path: Path) -> None:
    write_demo_corpus(tmp_path, seed=0)
    extra = tmp_path / "hr" / "my-notes.md"
    extra.write_text("keep me", encoding="utf-8")
    before = _digests(tmp_path)
    with pytest.raises(InputError, match=r"my-notes\.md"):
        write_demo_corpus(tmp_path, seed=1)
    assert _digests(tmp_path) == before


def test_foreign_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / MANIFEST_NAME).write_text(json.dumps({"path": "a.txt"}) + "\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("not a demo", encoding="utf-8")
    with pytest.raises(InputError):
        write_demo_corpus(tmp_path)
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "not a demo"


def test_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "corpus"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="is a file"):
        write_demo_corpus(target)


def test_the_demo_keeps_its_headings_and_lead_ins_and_strips_its_chrome(
    corpus: DemoCorpus, tmp_path: Path
) -> None:
    """Every policy repeats the house style's section headings and some list lead-ins: chrome by
    document frequency, but each opens the policy's own text, so it stays; the footer still goes."""
    from chunkdedup import Index, ingest

    index = tmp_path / "demo.sqlite"
    ingest([corpus.folder], index, manifest=corpus.manifest)
    with Index.open(index) as ix:
        examples = {b.example for b in ix.boilerplate(limit=None) if b.scope == "chrome"}
        docs = [d["doc"] for d in ix.documents()]
        pages = {doc: [p.text for p in ix.store.documents.load_pages(doc, clean=True)] for doc in docs}
    assert any(FOOTER.startswith(e.split("\n")[0][:40]) for e in examples)
    assert not [e for e in examples if "Purpose and scope" in e or e.rstrip().endswith(":")], examples
    for doc, texts in pages.items():
        text = "\n".join(texts)
        assert FOOTER not in " ".join(text.split()), doc
        assert re.search(r"^(## )?1\. Purpose and scope$", text, re.M | re.I), doc
    lead_in = "To complete the process, the responsible manager must:"
    assert sum(lead_in in "\n".join(t) for t in pages.values()) >= 5
