"""Parsing: discovery and ids, manifests, every format, and bad inputs, on real corpora and tmp files."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import time
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from hypothesis import given, settings
from hypothesis import strategies as st
from pypdf import PdfReader, PdfWriter

import chunkdedup.parse as parse_pkg
from chunkdedup.config import ParseConfig
from chunkdedup.errors import DuplicateDocumentError, InputError
from chunkdedup.normalize import bytes_hash, document_hash
from chunkdedup.parse import InputFile, discover, file_hash, parse_file
from chunkdedup.parse.html import html_blocks
from chunkdedup.parse.pdf import clean_page_text
from chunkdedup.parse.text import decode_text, split_pages
from chunkdedup.types import FileStatus, ParsedFile

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEC = DATA / "sec-10q" / "docs"
NTSB = DATA / "ntsb" / "docs"
POLICY = DATA / "site-policy"
CONFIG = ParseConfig()
COMPANY = {
    "AAPL": "apple inc.",
    "AMZN": "amazon.com, inc.",
    "INTC": "intel corporation",
    "MSFT": "microsoft corporation",
    "NVDA": "nvidia corporation",
}


def _parse_one(path: Path, doc_id: str | None = None, config: ParseConfig = CONFIG) -> ParsedFile:
    return parse_file(InputFile(path=path, doc_id=doc_id or path.name, metadata={}), config)


def _pdf(pages: list[str]) -> bytes:
    """A PDF with one page per string; an empty string gives a page with a drawing and no text."""
    pdf = FPDF()
    for text in pages:
        pdf.add_page()
        if text:
            pdf.set_font("helvetica", size=12)
            pdf.multi_cell(w=0, text=text)
        else:
            pdf.rect(20, 20, 100, 50, style="F")
    return bytes(pdf.output())


def _write(folder: Path, rel: str, data: bytes | str) -> Path:
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def test_public_api_is_exported() -> None:
    for name in parse_pkg.__all__:
        assert hasattr(parse_pkg, name), name
    assert {"InputFile", "discover", "parse_file", "file_hash"} <= set(parse_pkg.__all__)


# --- real corpora -------------------------------------------------------------------------------


@pytest.mark.slow
def test_sec_10q_pdfs_parse_page_by_page() -> None:
    inputs = discover([SEC], None, CONFIG)
    assert len(inputs) == 20
    for inp in inputs:
        result = parse_file(inp, CONFIG)
        assert result.status == FileStatus.INGESTED, result.reason
        (doc,) = result.documents
        assert doc.doc_id == inp.path.name
        assert len(doc.pages) > 1
        assert [p.number for p in doc.pages] == list(range(1, len(doc.pages) + 1))
        assert COMPANY[inp.path.stem.split()[-1]] in doc.pages[0].text.casefold()
        assert "\r" not in doc.pages[0].text and " \n" not in doc.pages[0].text
        assert doc.content_hash == document_hash(file_hash(inp.path))
        assert doc.content_hash == bytes_hash(inp.path.read_bytes())[:16]


def test_10q_printed_page_numbers_follow_pdf_pages() -> None:
    (doc,) = _parse_one(SEC / "2022 Q3 AAPL.pdf").documents
    # Each body page ends with "Apple Inc. | Q3 2022 Form 10-Q | <n>", three pages after the cover.
    footers = {p.number: re.search(r"Form 10-Q \| (\d+)$", p.text) for p in doc.pages}
    numbered = {n: int(m.group(1)) for n, m in footers.items() if m}
    assert len(numbered) >= 20
    assert all(printed == n - 3 for n, printed in numbered.items())


def test_pdf_page_text_has_unix_newlines_and_no_trailing_spaces() -> None:
    assert clean_page_text("Total  \rNet\t\r\nEnd ") == "Total\nNet\nEnd"


def test_ntsb_pages_carry_their_page_footer() -> None:
    inputs = discover([NTSB], None, CONFIG)
    assert len(inputs) == 20
    for inp in inputs:
        (doc,) = parse_file(inp, CONFIG).documents
        for page in doc.pages:
            assert f"Page {page.number} of {len(doc.pages)}" in page.text


def test_site_policy_with_manifest_types_metadata_and_skips_the_manifest() -> None:
    inputs = discover([POLICY], POLICY / "manifest.jsonl", CONFIG)
    ids = [i.doc_id for i in inputs]
    assert ids == sorted(ids)
    assert "manifest.jsonl" not in ids
    assert "LICENSE.md" in ids  # not in the manifest: still an input, without metadata
    rows = {r["path"]: r for r in map(json.loads, (POLICY / "manifest.jsonl").read_text().splitlines())}
    docs = {}
    for inp in inputs:
        result = parse_file(inp, CONFIG)
        assert result.status == FileStatus.INGESTED, (inp.doc_id, result.reason)
        docs[inp.doc_id] = result.documents[0]
    listed = [d for d in docs.values() if d.family is not None]
    assert len(listed) == len(rows) == 185
    for rel, row in rows.items():
        doc = docs[rel]
        assert doc.family == row["family"] and doc.department == row["department"]
        assert doc.effective_date == date.fromisoformat(row["effective_date"])
        assert doc.metadata["effective_date"] == row["effective_date"]
        assert doc.metadata["version"] == row["version"]
    aup = docs["current/acceptable-use-policies/github-acceptable-use-policies.md"]
    assert aup.metadata["title"] == "GitHub Acceptable Use Policies"
    assert isinstance(aup.metadata["redirect_from"], str)  # a YAML list, kept as JSON text
    assert not aup.pages[0].text.startswith("---")
    assert docs["LICENSE.md"].family is None and docs["LICENSE.md"].metadata.get("family") is None


def test_site_policy_without_manifest_reads_it_as_a_jsonl_input() -> None:
    with_manifest = [i.doc_id for i in discover([POLICY], POLICY / "manifest.jsonl", CONFIG)]
    without = discover([POLICY], None, CONFIG)
    assert [i.doc_id for i in without] == sorted([*with_manifest, "manifest.jsonl"])
    assert all(not i.metadata for i in without)
    manifest_as_data = parse_file(next(i for i in without if i.doc_id == "manifest.jsonl"), CONFIG)
    assert manifest_as_data.status == FileStatus.FAILED and "'text'" in (manifest_as_data.reason or "")


# --- bad inputs ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad")
    real = (SEC / "2022 Q3 AAPL.pdf").read_bytes()
    _write(folder, "truncated.pdf", real[: len(real) // 2])
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_pdf(["A secret page."]))))
    writer.encrypt("secret")
    out = io.BytesIO()
    writer.write(out)
    _write(folder, "encrypted.pdf", out.getvalue())
    _write(folder, "scanned.pdf", _pdf(["", ""]))
    _write(folder, "one-blank-page.pdf", _pdf(["Text on page one.", "", "Text on page three."]))
    _write(folder, "empty.txt", b"")
    _write(folder, "blank.md", b"  \n\n\t\n")
    _write(folder, "random.txt", random.Random(0).randbytes(4096))
    _write(folder, "latin1.txt", "Le café est très bon.\nÀ bientôt.\n".encode("latin-1"))
    _write(folder, "notes.weird", "kept as text")
    return folder


@pytest.mark.parametrize(
    ("name", "status", "reason"),
    [
        ("truncated.pdf", FileStatus.FAILED, "damaged or not a PDF"),
        ("encrypted.pdf", FileStatus.FAILED, "qpdf --decrypt"),
        ("scanned.pdf", FileStatus.SKIPPED, "no text layer on any page"),
        ("empty.txt", FileStatus.SKIPPED, "empty file"),
        ("blank.md", FileStatus.SKIPPED, "empty file"),
        ("random.txt", FileStatus.SKIPPED, "binary content"),
    ],
)
def test_bad_inputs_get_a_status_and_a_reason(
    bad_folder: Path, name: str, status: FileStatus, reason: str
) -> None:
    result = _parse_one(bad_folder / name)
    assert (result.status, result.documents) == (status, ())
    assert result.reason is not None and reason in result.reason


def test_a_page_without_text_is_kept_empty_and_noted(bad_folder: Path) -> None:
    result = _parse_one(bad_folder / "one-blank-page.pdf")
    assert result.status == FileStatus.INGESTED
    pages = result.documents[0].pages
    assert [p.has_text_layer for p in pages] == [True, False, True]
    assert pages[1].text == "" and "page three" in pages[2].text
    (note,) = result.notes  # blank to OCR where it runs (tests/test_ocr.py), else not read
    assert note.startswith("page 2 has no text layer")
    off = _parse_one(bad_folder / "one-blank-page.pdf", config=ParseConfig(ocr="off"))
    assert off.notes == ('page 2 has no text layer, not read: OCR is off ([parse] ocr = "off")',)


def test_latin1_text_decodes(bad_folder: Path) -> None:
    (doc,) = _parse_one(bad_folder / "latin1.txt").documents
    assert doc.pages[0].text == "Le café est très bon.\nÀ bientôt.\n"


def test_explicit_file_with_unknown_suffix_is_read_as_text(bad_folder: Path) -> None:
    assert "notes.weird" not in [i.doc_id for i in discover([bad_folder], None, CONFIG)]
    (inp,) = discover([bad_folder / "notes.weird"], None, CONFIG)
    assert inp.doc_id == "notes.weird"
    assert parse_file(inp, CONFIG).documents[0].pages[0].text == "kept as text"


def test_a_50mb_single_line_file_parses_quickly(tmp_path: Path) -> None:
    utf8 = _write(tmp_path, "big.txt", b"plain words, one long line " * 2_000_000)
    latin = _write(tmp_path, "big-latin1.txt", ("un café noir " * 4_000_000).encode("latin-1"))
    for path in (utf8, latin):
        assert path.stat().st_size > 50_000_000
        started = time.perf_counter()
        result = _parse_one(path)
        elapsed = time.perf_counter() - started
        assert result.status == FileStatus.INGESTED
        assert elapsed < 10, f"{path.name} took {elapsed:.1f} s"
    assert _parse_one(latin).documents[0].pages[0].text.startswith("un café noir un café")


def test_size_limit_unreadable_and_vanished_files(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.txt", "some text")
    result = _parse_one(path, config=ParseConfig(max_file_bytes=4))
    assert result.status == FileStatus.SKIPPED and "parse.max_file_bytes" in (result.reason or "")
    gone = _parse_one(tmp_path / "vanished.txt")
    assert gone.status == FileStatus.FAILED and "No such file" in (gone.reason or "")
    folder = tmp_path / "folder.txt"
    folder.mkdir()
    not_a_file = _parse_one(folder)
    assert not_a_file.status == FileStatus.FAILED and "Is a directory" in (not_a_file.reason or "")
    if os.geteuid() != 0:  # root reads anything
        path.chmod(0)
        denied = _parse_one(path)
        path.chmod(0o644)
        assert denied.status == FileStatus.FAILED and "Permission denied" in (denied.reason or "")


# --- formats ------------------------------------------------------------------------------------


def test_html_keeps_blocks_and_drops_scripts(tmp_path: Path) -> None:
    markup = """<!doctype html><html><head><title>Refund  policy</title><style>p {color: red}</style>
    <script>var tracking = 1;</script></head><body><nav>Home</nav>
    <h1>Refunds</h1><p>Refunds are paid
       within <b>30</b> days.</p><!-- hidden -->
    <ul><li>Keep the receipt</li><li>Ask <a href="#">support</a></li></ul>
    <table><tr><th>Plan</th><th>Days</th></tr><tr><td>Pro</td><td>45</td></tr></table>
    <div>Loose text<noscript>enable js</noscript></div><template><p>never</p></template></body></html>"""
    (doc,) = _parse_one(_write(tmp_path, "p.html", markup)).documents
    assert doc.pages[0].text.split("\n\n") == [
        "Home",
        "Refunds",
        "Refunds are paid within 30 days.",
        "- Keep the receipt\n- Ask support",  # a list is one block, an item a line
        "Plan | Days",
        "Pro | 45",
        "Loose text",
    ]
    assert doc.metadata == {"title": "Refund policy"}


def test_html_pre_keeps_its_lines_and_indentation(tmp_path: Path) -> None:
    """Code on a documentation page: whitespace collapsed, it became `def f(x): if x: return 1 return 2`."""
    code = "def f(x):\n    if x:\n        return 1\n    return 2"
    markup = f"<html><body><p>Call   it   so:</p><pre>\n{code}\n</pre><p>Done.</p></body></html>"
    (doc,) = _parse_one(_write(tmp_path, "code.html", markup)).documents
    assert doc.pages[0].text == f"Call it so:\n\n{code}\n\nDone."


@given(st.lists(st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=8), max_size=6))
def test_html_paragraphs_become_one_block_each(words: list[str]) -> None:
    _, blocks = html_blocks("".join(f"<p>  {w}\n</p>" for w in words))
    assert blocks == words


def test_a_comment_in_a_markdown_code_block_is_no_title(tmp_path: Path) -> None:
    """A shell comment in a fenced block outranked the page's `##` heading as its title (the title
    goes into the document's retrieval context)."""
    text = "## Installing the CLI\n\n```sh\n# remove all user data\nrm -rf ~/.app\n```\n\n~~~\n# x\n~~~\n"
    (doc,) = _parse_one(_write(tmp_path, "install.md", text)).documents
    assert doc.title == "Installing the CLI"


def test_markdown_front_matter_becomes_metadata(tmp_path: Path) -> None:
    text = "---\ntitle: Leave\neffective_date: 2024-03-01\ntags: [hr, leave]\n---\n\n# Leave\n\nTake it.\n"
    (doc,) = _parse_one(_write(tmp_path, "leave.md", text)).documents
    assert doc.pages[0].text == "# Leave\n\nTake it."
    assert doc.effective_date == date(2024, 3, 1)
    assert doc.metadata == {"title": "Leave", "effective_date": "2024-03-01", "tags": '["hr", "leave"]'}


def test_markdown_bad_yaml_and_bad_date_fail_with_the_fix(tmp_path: Path) -> None:
    bad_yaml = _parse_one(_write(tmp_path, "a.md", "---\ntitle: ok\nkey: [unclosed\n---\nBody\n"))
    assert bad_yaml.status == FileStatus.FAILED and "not valid YAML" in (bad_yaml.reason or "")
    assert "line " in (bad_yaml.reason or "")
    bad_date = _parse_one(_write(tmp_path, "b.md", "---\neffective_date: last spring\n---\nBody\n"))
    assert bad_date.status == FileStatus.FAILED
    assert "'last spring'" in (bad_date.reason or "") and "YYYY-MM-DD" in (bad_date.reason or "")


def test_text_form_feeds_split_pages(tmp_path: Path) -> None:
    (doc,) = _parse_one(_write(tmp_path, "p.txt", "one\r\n\ftwo\n\fthree\n\f")).documents
    assert [(p.number, p.text) for p in doc.pages] == [(1, "one\n"), (2, "two\n"), (3, "three\n")]


_PAGE_CHARS = st.characters(codec="utf-8", exclude_characters="\f\r\x00\ufeff")


@settings(max_examples=200)
@given(st.lists(st.text(_PAGE_CHARS), min_size=1, max_size=8))
def test_form_feed_pages_round_trip(pages: list[str]) -> None:
    pages = [*pages[:-1], pages[-1] + "end"]  # a blank last page is pdftotext's trailer, not a page
    text = decode_text("\f".join(pages).encode("utf-8"))
    assert [p.text for p in split_pages(text)] == pages


def test_jsonl_records_ids_metadata_and_bad_lines(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "r1", "text": "First.", "department": "hr", "effective_date": "2024-01-02T10:00"}),
        "",
        json.dumps({"text": "No id here.", "score": 0.5, "tags": ["a"]}),
        "{not json",
        json.dumps({"id": 7, "body": "no text field"}),
    ]
    path = _write(tmp_path, "recs.jsonl", "\n".join(lines) + "\n")
    result = parse_file(InputFile(path, "data/recs.jsonl", {"family": "faq"}), CONFIG)
    assert result.status == FileStatus.INGESTED
    first, second = result.documents
    assert (first.doc_id, second.doc_id) == ("data/recs.jsonl#r1", "data/recs.jsonl#@3")
    assert first.department == "hr" and first.family == "faq" and first.effective_date == date(2024, 1, 2)
    assert first.metadata == {"department": "hr", "effective_date": "2024-01-02", "family": "faq"}
    assert second.metadata == {"score": 0.5, "tags": '["a"]', "family": "faq"}
    assert first.content_hash == document_hash(bytes_hash(lines[0].encode())) != second.content_hash
    assert [n.split(":")[0] for n in result.notes] == ["line 4", "line 5"]
    assert "not valid JSON" in result.notes[0] and "'text'" in result.notes[1]


def test_jsonl_duplicate_ids_and_no_usable_record_fail(tmp_path: Path) -> None:
    dup = _write(tmp_path, "dup.jsonl", '{"id": "x", "text": "a"}\n{"text": "b"}\n{"id": "x", "text": "c"}\n')
    result = _parse_one(dup)
    assert result.status == FileStatus.FAILED
    assert "'x'" in (result.reason or "") and "lines 1 and 3" in (result.reason or "")
    none = _parse_one(_write(tmp_path, "none.jsonl", "[1, 2]\n{oops\n"))
    assert none.status == FileStatus.FAILED and "line 1" in (none.reason or "")


# --- discovery and manifests ---------------------------------------------------------------------


def test_discover_walks_sorted_skips_hidden_and_filters_suffixes(tmp_path: Path) -> None:
    for rel in ["b/z.md", "b/a.TXT", "a.pdf", ".hidden/x.txt", "b/.secret.txt", "b/image.png"]:
        _write(tmp_path / "root", rel, "x")
    inputs = discover([tmp_path / "root"], None, CONFIG)
    assert [i.doc_id for i in inputs] == ["a.pdf", "b/a.TXT", "b/z.md"]
    assert all(i.path.is_absolute() for i in inputs)
    with pytest.raises(InputError, match="does not exist"):
        discover([tmp_path / "missing"], None, CONFIG)


def test_id_collision_names_both_inputs(tmp_path: Path) -> None:
    one = _write(tmp_path, "one/a.txt", "x")
    two = _write(tmp_path, "two/a.txt", "y")
    with pytest.raises(DuplicateDocumentError) as caught:
        discover([tmp_path / "one", tmp_path / "two"], None, CONFIG)
    assert str(one) in str(caught.value) and str(two) in str(caught.value)
    # The same file reached twice is one input, not a collision.
    assert len(discover([tmp_path / "one", one], None, CONFIG)) == 1


@pytest.mark.parametrize("kind", ["jsonl", "csv"])
def test_manifest_gives_ids_and_metadata(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "corpus"
    _write(root, "hr/leave.md", "Leave text")
    _write(root, "hr/partial.txt", "Partial text")
    _write(root, "hr/unlisted.txt", "Unlisted text")
    outside = _write(tmp_path, "elsewhere/extra.txt", "Outside text")
    rows = [
        {"path": "hr/leave.md", "department": "hr", "family": "leave", "effective_date": "2024-05-01"},
        {"path": "hr/partial.txt", "department": "hr", "family": "", "effective_date": ""},
        {"path": "hr/gone.md", "department": "hr", "family": "gone", "effective_date": "2020-01-01"},
        {"path": "../elsewhere/extra.txt", "department": "ops", "family": "", "effective_date": ""},
    ]
    if kind == "jsonl":
        kept = [{k: v for k, v in r.items() if v} for r in rows]
        manifest = _write(root, "manifest.jsonl", "\n".join(json.dumps(r) for r in kept) + "\n")
    else:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        manifest = _write(root, "manifest.csv", buf.getvalue())
    inputs = discover([root, outside], manifest, CONFIG)
    # Files under the manifest's folder get ids relative to it; others fall back to the PATH rules.
    by_id = {i.doc_id: i for i in inputs}
    assert list(by_id) == ["extra.txt", "hr/leave.md", "hr/partial.txt", "hr/unlisted.txt"]
    assert by_id["hr/partial.txt"].metadata == {"department": "hr"}  # empty cells are absent keys
    assert by_id["hr/unlisted.txt"].metadata == {}
    assert by_id["extra.txt"].metadata == {"department": "ops"}
    leave = parse_file(by_id["hr/leave.md"], CONFIG).documents[0]
    assert (leave.department, leave.family, leave.effective_date) == ("hr", "leave", date(2024, 5, 1))


def test_manifest_folder_gives_ids_and_wins_over_front_matter(tmp_path: Path) -> None:
    _write(tmp_path, "docs/leave.md", "---\ndepartment: sales\ntitle: Leave\n---\nBody\n")
    manifest = _write(tmp_path, "manifest.csv", "path,department,note\ndocs/leave.md,hr,\n")
    (inp,) = discover([tmp_path / "docs"], manifest, CONFIG)
    assert inp.doc_id == "docs/leave.md" and inp.metadata == {"department": "hr"}
    (doc,) = parse_file(inp, CONFIG).documents
    assert doc.department == "hr" and doc.metadata == {"department": "hr", "title": "Leave"}


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("m.jsonl", '{"path": "a.txt"}\n{broken\n', "line 2: not valid JSON"),
        ("m.jsonl", '{"file": "a.txt"}\n', "line 1: expected a JSON object with a 'path'"),
        ("m.jsonl", '{"path": "a.txt"}\n{"path": "a.txt"}\n', "lines 1 and 2"),
        ("m.csv", "file,department\na.txt,hr\n", "line 1: the header has no 'path' column"),
        ("m.csv", "path,department\na.txt,hr,extra\n", "line 2: more cells"),
        ("m.csv", "path,department\n,hr\n", "line 2: 'path' must be a non-empty string"),
        ("m.yaml", "path: a.txt\n", "use a .jsonl or .csv"),
    ],
)
def test_malformed_manifest_names_file_line_and_fix(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    _write(tmp_path, "a.txt", "x")
    manifest = _write(tmp_path, name, content)
    with pytest.raises(InputError, match=message) as caught:
        discover([tmp_path], manifest, CONFIG)
    assert name in str(caught.value)


def test_unreadable_manifest_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot be read"):
        discover([tmp_path], tmp_path / "missing.jsonl", CONFIG)


def test_file_hash_streams_to_the_bytes_hash(tmp_path: Path) -> None:
    data = random.Random(1).randbytes(3 * (1 << 20) + 17)
    assert file_hash(_write(tmp_path, "blob.bin", data)) == bytes_hash(data)


_BOM = "\ufeff".encode()
_LINE_BYTES = st.lists(
    st.sampled_from(
        [b"a", b" ", b"\n", b"\r", b"\x00", b"\t", "é".encode(), "\u3000".encode(), b"\xff", b"{}"]
    ),
    max_size=40,
)


@given(_LINE_BYTES.map(b"".join), st.booleans())
@settings(max_examples=300, deadline=None)
def test_plain_utf8_lines_are_the_decoded_texts_lines(body: bytes, bom: bool) -> None:
    """Where plain_utf8 holds, the byte lines decode to decode_text's lines one for one (so a line's
    bytes hash is the hash of its text's UTF-8, and a kept line's place is its place in the text)."""
    from chunkdedup.parse.text import decode_text, line_views, plain_utf8

    data = (_BOM if bom else b"") + body
    views = [bytes(v) for v in line_views(data)]
    assert views == data.split(b"\n")
    if plain_utf8(data):
        assert [v.decode("utf-8") for v in views] == decode_text(data).split("\n")


def test_a_changed_shard_that_is_not_plain_utf8_keeps_its_known_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shard with CRLF line ends, a BOM or cp1252 bytes is read as text (not as byte lines): its
    unchanged records are still known, and the re-run equals a fresh ingest; a line of Unicode
    whitespace alone is blank on both paths."""
    from chunkdedup import ingest
    from test_ingest import _count_built_records, snapshot

    records = [
        {"id": f"r{i}", "text": f"Record {i} says refunds take {i} days. Café rules."} for i in range(6)
    ]
    for name, encode in (
        ("crlf", lambda t: t.replace("\n", "\r\n").encode("utf-8")),
        ("bom", lambda t: "\ufeff".encode() + t.encode("utf-8")),
        ("cp1252", lambda t: t.encode("cp1252")),
        ("plain", lambda t: t.encode("utf-8")),
    ):
        corpus = tmp_path / name / "corpus"
        corpus.mkdir(parents=True)
        shard = corpus / "records.jsonl"

        def write(recs: list[dict[str, str]], encode: Any = encode, shard: Path = shard) -> None:
            lines = [json.dumps(r, ensure_ascii=False) for r in recs]
            shard.write_bytes(encode("\n".join([lines[0], "\xa0 ", *lines[1:]]) + "\n"))

        write(records)
        index = tmp_path / name / "i.sqlite"
        ingest([corpus], index)
        edited = [*records[:2], {**records[2], "text": "Record 2 says refunds take 9 days."}, *records[3:]]
        write(edited)
        with monkeypatch.context() as m:
            built = _count_built_records(m)
            again = ingest([corpus], index)
        assert built == [4], name  # the edited record's line (the blank line 2 is never built)
        assert again.totals["documents_chunked"] == 1, name
        fresh = tmp_path / name / "fresh.sqlite"
        report = ingest([corpus], fresh)
        assert again.files[0].doc_ids == report.files[0].doc_ids
        assert snapshot(index) == snapshot(fresh), name
