"""OCR of scanned PDF pages, on scans made here from the real corpora.

An ntsb accident report and a site policy (set as a text PDF) are rendered to images at 150 and 300
dpi, turned a little, speckled and compressed as JPEG, and put back into image-only PDFs: what a
scanner gives. The OCR'd text is held against the text layer of the page it was made from, the
scanned report's running footer against the one stripped from the text report, and the scanned
policy against its text copy (a near merge citing both).

Tesseract's language data is a system package: the tests install it with apt-get when it is missing
(as ``.ci/run`` does), and are skipped only where that cannot be done.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pypdfium2 as pdfium
import pytest
from click.testing import CliRunner
from fpdf import FPDF
from PIL import Image

from chunkdedup import Index, ingest
from chunkdedup.cli import main
from chunkdedup.config import Config, ParseConfig
from chunkdedup.errors import ConfigError
from chunkdedup.parse import parse_file
from chunkdedup.parse.discover import InputFile
from chunkdedup.parse.ocr import OcrText, OcrUnavailable, TesseractReader, garbled, ocr_ready, tessdata_dir
from chunkdedup.parse.pdf import PdfParser
from chunkdedup.store.views import IndexViews
from chunkdedup.types import FileStatus
from conftest import NTSB, POLICY

#: a three-page report with a running "Page N of 3 <id>" footer
REPORT = NTSB / "20080102X00002.pdf"
POLICY_MD = POLICY / "current" / "acceptable-use-policies" / "github-appeal-and-reinstatement.md"
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def _ensure_tesseract() -> None:
    """Tesseract's English data where tesserocr finds it: installed with apt-get when missing."""
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        pytest.fail("tesserocr is missing: pip install -e '.[test]' (it holds the [ocr] extra)")
    try:
        tessdata_dir("eng")
        return
    except OcrUnavailable:
        pass
    if shutil.which("apt-get") is None:
        pytest.skip("Tesseract's English data is missing and apt-get is not here to install it")
    install = ("apt-get update -qq && DEBIAN_FRONTEND=noninteractive"
               " apt-get install -y -qq tesseract-ocr tesseract-ocr-eng")
    done = subprocess.run(["sh", "-c", install], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot install tesseract-ocr-eng with apt-get: {done.stderr.strip()[-300:]}")
    tessdata_dir("eng")


def words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.casefold()))


def word_f1(reference: str, found: str) -> float:
    """Bag-of-words F1 of ``found`` against ``reference`` (casefolded words)."""
    ref, got = words(reference), words(found)
    hit = sum((ref & got).values())
    if not hit:
        return 0.0
    precision, recall = hit / sum(got.values()), hit / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def text_layers(pdf: bytes) -> list[str]:
    doc = pdfium.PdfDocument(pdf)
    try:
        out = []
        for i in range(len(doc)):
            textpage = doc[i].get_textpage()
            out.append(textpage.get_text_range())
            textpage.close()
        return out
    finally:
        doc.close()


def scanned(pdf: bytes, dpi: int, seed: int, pages: int | None = None) -> bytes:
    """An image-only copy of ``pdf`` (its first ``pages``) as a scanner makes it at ``dpi``: each page
    turned by 0.3-0.8 degrees, grey noise and black and white specks added, stored as JPEG."""
    rng = np.random.default_rng(seed)
    doc = pdfium.PdfDocument(pdf)
    images = []
    try:
        for i in range(min(len(doc), pages or len(doc))):
            bitmap = doc[i].render(scale=dpi / 72, grayscale=True)
            image = bitmap.to_pil().convert("L")
            bitmap.close()
            angle = float(rng.uniform(0.3, 0.8) * rng.choice([-1, 1]))
            image = image.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
            pixels = np.asarray(image, dtype=np.int16)
            noise = rng.integers(0, 1000, pixels.shape, dtype=np.int16)
            pixels = np.clip(pixels + noise % 21 - 10, 0, 255)
            pixels[noise == 0] = 0
            pixels[noise == 999] = 255
            images.append(Image.fromarray(pixels.astype(np.uint8), "L"))
    finally:
        doc.close()
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=float(dpi), save_all=True, append_images=images[1:], quality=80)
    return out.getvalue()


def policy_pdf() -> bytes:
    """The site policy set as a text PDF (its Markdown marks dropped)."""
    body = POLICY_MD.read_text(encoding="utf-8").split("---", 2)[2]
    text = LINK.sub(r"\1", body).replace("’", "'").replace("“", '"').replace("”", '"')
    paragraphs = [" ".join(p.strip("#*_ \n").split()) for p in re.split(r"\n\s*\n|\n\* ", text)]
    pdf = FPDF(format="letter")
    pdf.set_auto_page_break(True, margin=25)
    pdf.set_font("Helvetica", size=16)  # under 300 words a page: one chunk a page, in a scan too
    for para in filter(None, paragraphs):
        if pdf.page_no() == 0:
            pdf.add_page()
        latin = para.encode("latin-1", "replace").decode("latin-1")
        pdf.multi_cell(0, 8, latin, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
    return bytes(pdf.output())


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The text PDFs and their scans, by file name (also written to a folder: ``scans_dir``)."""
    _ensure_tesseract()
    report, policy = REPORT.read_bytes(), policy_pdf()
    return {
        "report.pdf": report,
        "report-scan-300.pdf": scanned(report, 300, 1),
        "report-scan-150.pdf": scanned(report, 150, 2, pages=2),
        "policy.pdf": policy,
        "policy-scan-300.pdf": scanned(policy, 300, 3, pages=2),
        "policy-scan-200.pdf": scanned(policy, 200, 3, pages=2),
        "policy-scan-150.pdf": scanned(policy, 150, 5, pages=1),
    }


@pytest.fixture(scope="module")
def indexed(scans: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    """The text PDFs and their scans ingested into one index by two parse workers."""
    folder = tmp_path_factory.mktemp("scans")
    for name, data in scans.items():
        (folder / name).write_bytes(data)
    index = folder.parent / "scans.sqlite"
    report = ingest([folder], index, workers=2)
    assert {f.status for f in report.files} == {FileStatus.INGESTED}, report.to_json()
    with Index.open(index) as ix:
        yield ix


def _pages(ix: Index, doc: str) -> list[tuple[str, str, float | None]]:
    """A document's pages: raw text, clean text, OCR confidence."""
    pages = IndexViews(ix.store).pages(doc, first=1, limit=99)
    return [(p.raw_text, p.clean_text, p.ocr_confidence) for p in pages]


@pytest.mark.parametrize(("scan", "source", "floor"), [
    ("report-scan-300.pdf", "report.pdf", 0.95),
    ("policy-scan-300.pdf", "policy.pdf", 0.95),
    ("report-scan-150.pdf", "report.pdf", 0.80),
    ("policy-scan-150.pdf", "policy.pdf", 0.90),
])
def test_ocr_text_matches_the_text_layer_of_the_page_it_was_scanned_from(
    indexed: Index, scans: dict[str, bytes], scan: str, source: str, floor: float
) -> None:
    original = text_layers(scans[source])
    pages = _pages(indexed, scan)
    scores = [word_f1(ref, raw) for ref, (raw, _, _) in zip(original, pages, strict=False)]
    assert len(scores) == len(pages) >= 1
    print(scan, "word F1 per page", [round(s, 4) for s in scores])
    assert all(conf is not None and 0.5 < conf <= 1.0 for _, _, conf in pages)
    assert min(scores) >= floor
    assert not any(conf is not None for _, _, conf in _pages(indexed, source))


def test_running_footer_of_scanned_pages_is_stripped_as_on_the_text_pages(indexed: Index) -> None:
    """The report's "Page N of 3 <id>" footer: stripped from the 300 dpi scan by the same key as from
    the text report. (At 150 dpi OCR misreads it on some page, "ce Page 1 of 3", and a footer must
    read alike on every page of a three-page report to count as running.)"""
    footer = re.compile(r"Page \d of \d", re.I)
    for doc in ("report.pdf", "report-scan-300.pdf"):
        pages = _pages(indexed, doc)
        assert all(footer.search(raw) for raw, _, _ in pages), doc  # OCR read the footer...
        assert not any(footer.search(clean) for _, clean, _ in pages), doc  # ...and it is stripped
    views = IndexViews(indexed.store)
    stripped = {doc: {(s.khash, s.scope, s.pages) for s in views.stripped(doc)}
                for doc in ("report.pdf", "report-scan-300.pdf")}
    assert stripped["report.pdf"] == stripped["report-scan-300.pdf"] != set()


@pytest.mark.parametrize("scan", ["policy-scan-300.pdf", "policy-scan-200.pdf"])
def test_scanned_policy_is_merged_with_its_text_version(indexed: Index, scan: str) -> None:
    """Every chunk of a scan is merged with the text policy's chunk, citing both: as an exact copy
    where OCR read every word (300 dpi), as a near copy where it misread a few (200 dpi)."""
    records = [r for r in indexed.records() if any(s.doc == scan for s in r.sources)]
    assert len(records) >= 2
    relations = []
    for record in records:
        docs = {s.doc: s for s in record.sources}
        assert "policy.pdf" in docs, record
        assert docs[scan].ocr_confidence is not None and docs["policy.pdf"].ocr_confidence is None
        relations.append(max(docs[scan].relation, docs["policy.pdf"].relation))  # "near" over "exact"
    print(scan, relations)
    assert "near" in relations or scan.endswith("300.pdf")


def test_a_scan_too_poor_to_merge_is_kept_apart(indexed: Index) -> None:
    """The 150 dpi scan's OCR misreads about one word in twenty or thirty: too many for a near copy
    (5-word shingles at threshold 0.85), so its chunks stay its own, none wrongly merged elsewhere."""
    for record in indexed.records():
        docs = {s.doc for s in record.sources}
        if "policy-scan-150.pdf" in docs:
            assert docs == {"policy-scan-150.pdf"}, record


def test_export_show_and_web_mark_ocr_pages(indexed: Index, tmp_path: Path) -> None:
    assert indexed.stats().pages_without_text == 0  # a page read by OCR has text
    path = indexed.store.path
    out = tmp_path / "chunks.jsonl"
    runner = CliRunner()
    assert runner.invoke(main, ["export", "--index", str(path), "--out", str(out)]).exit_code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    sources = [s for line in lines for s in line["sources"]]
    scanned_docs = {s["doc"] for s in sources if s.get("ocr") is True}
    assert scanned_docs == {name for name in lines_docs(lines) if "-scan-" in name}
    assert len(scanned_docs) == 5
    assert all(0 < s["ocr_confidence"] <= 1 for s in sources if s.get("ocr"))
    assert all("ocr" not in s for s in sources if s["doc"] in ("report.pdf", "policy.pdf"))

    chunk = next(line for line in lines if any(s["doc"] == "policy-scan-300.pdf" for s in line["sources"]))
    shown = runner.invoke(main, ["show", chunk["id"], "--index", str(path)])
    assert shown.exit_code == 0, shown.output
    assert re.search(r"policy-scan-300\.pdf p\.\d .* ocr \(confidence 0\.\d\d\)", shown.output)
    assert re.search(r"policy\.pdf p\.\d \[\d+:\d+\] \w+ [\d.]+\n", shown.output)  # no mark

    from starlette.testclient import TestClient

    from chunkdedup.web import create_app

    with TestClient(base_url="http://localhost", app=create_app(path)) as client:
        page = client.get(f"/documents/{quote('policy-scan-300.pdf')}").text
        assert "read by OCR, confidence 0." in page
        assert "read by OCR" not in client.get(f"/documents/{quote('policy.pdf')}").text
        data = client.get(f"/documents/{quote('policy-scan-300.pdf')}?format=json").json()
        assert all(p["ocr"] and 0 < p["ocr_confidence"] <= 1 for p in data["pages"])
        assert ">OCR</span>" in client.get(f"/chunks/{chunk['id']}").text


def lines_docs(lines: list[dict[str, Any]]) -> set[str]:
    return {s["doc"] for line in lines for s in line["sources"]}


def _input(path: Path) -> InputFile:
    return InputFile(path=path, doc_id=path.name, metadata={})


def test_without_the_extra_a_scan_is_skipped_with_a_note_naming_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(language: str, tessdata: str = "") -> TesseractReader:
        raise OcrUnavailable(f"the ocr extra is not installed (no tesserocr): pip install ...{language}")

    monkeypatch.setattr(TesseractReader, "open", staticmethod(missing))
    text = tmp_path / "mixed.pdf"
    text.write_bytes(_mixed_pdf())
    result = parse_file(_input(text), ParseConfig())
    assert result.status == FileStatus.INGESTED
    assert [p.has_text_layer for p in result.documents[0].pages] == [True, False]
    assert result.notes == (
        "page 2 has no text layer, not read: the ocr extra is not installed (no tesserocr):"
        " pip install ...eng",
    )
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(scanned(_mixed_pdf(), 100, 5))
    skipped = parse_file(_input(scan), ParseConfig())
    assert skipped.status == FileStatus.SKIPPED and skipped.reason is not None
    assert skipped.reason.startswith("no text layer on any page (scanned PDF?): the ocr extra is not")
    failed = parse_file(_input(scan), ParseConfig(ocr="require"))
    assert failed.status == FileStatus.FAILED and failed.reason is not None
    assert failed.reason.endswith('pip install ...eng ([parse] ocr = "require")')
    off = parse_file(_input(scan), ParseConfig(ocr="off"))
    assert off.status == FileStatus.SKIPPED and off.reason is not None and 'ocr = "off"' in off.reason


def _mixed_pdf() -> bytes:
    """A page of text, then a page with only a drawing of a word (no text layer)."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=14)
    pdf.multi_cell(0, 8, "Refunds are paid within thirty days of the request.")
    pdf.add_page()
    pdf.set_line_width(1.5)
    for x in (40, 60, 80):
        pdf.line(x, 40, x + 10, 80)
    return bytes(pdf.output())


class _Reader:
    """A stand-in OCR engine: says what it read, and counts the pages it was given."""

    def __init__(self, text: str, confidence: float = 0.875) -> None:
        self.text = text
        self.confidence = confidence
        self.pages = 0

    def read(self, pixels: bytes, width: int, height: int, stride: int, dpi: int) -> OcrText:
        self.pages += 1
        assert len(pixels) == height * stride and width <= stride and dpi == 300
        return OcrText(self.text, self.confidence)

    def close(self) -> None:
        pass


def test_only_pages_without_a_usable_text_layer_go_to_the_engine() -> None:
    reader = _Reader("The drawn word.\n\n")
    extraction = PdfParser(ParseConfig(), reader).parse(_mixed_pdf())
    (doc,) = extraction.documents
    assert reader.pages == 1
    first, second = doc.pages
    assert first.ocr_confidence is None and first.has_text_layer
    assert (second.text, second.has_text_layer, second.ocr_confidence) == ("The drawn word.\n", False, 0.875)
    assert extraction.notes == ("page 2 read by OCR (eng): mean confidence 0.88, lowest 0.88",)


def test_a_page_the_engine_fails_on_is_kept_empty_with_a_note() -> None:
    class Failing(_Reader):
        def read(self, pixels: bytes, width: int, height: int, stride: int, dpi: int) -> OcrText:
            raise RuntimeError("engine crashed")

    extraction = PdfParser(ParseConfig(), Failing("")).parse(_mixed_pdf())
    assert extraction.documents[0].pages[1].text == ""
    assert extraction.notes == ("page 2: OCR failed (engine crashed); it is kept empty",)


def test_a_garbled_text_layer_is_read_again_and_a_blank_page_is_not() -> None:
    assert garbled("\x03\x11\x07\x1d\x05" * 30)
    assert garbled("\ue001\ue002 \ue003\ue004" * 20)
    assert not garbled("Total net sales  $ 81,797  $ 82,959  (1) %  .......... 12,345")
    assert not garbled("\x03\x04")  # too short to judge
    for page in text_layers(REPORT.read_bytes()):
        assert not garbled(page)
    blank = FPDF()
    blank.add_page()
    reader = _Reader("never read")
    with pytest.raises(Exception, match="no text layer on any page"):
        PdfParser(ParseConfig(), reader).parse(bytes(blank.output()))
    assert reader.pages == 0  # a white page is not given to the engine


def test_a_blank_page_opens_no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(language: str, tessdata: str = "") -> TesseractReader:
        raise AssertionError("an engine was opened for a blank page")

    monkeypatch.setattr(TesseractReader, "open", staticmethod(never))
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=14)
    pdf.multi_cell(0, 8, "The last page of this filing is intentionally blank.")
    pdf.add_page()
    extraction = PdfParser().parse(bytes(pdf.output()))
    assert extraction.notes == ("page 2 has no text layer and nothing to read (blank)",)


def test_a_page_ocr_reads_no_words_on_is_no_blank_page() -> None:
    """A drawn page the engine was given and read no words on (an image without text, noise) is said
    to be that, not a blank page."""
    reader = _Reader("", 0.0)
    extraction = PdfParser(ParseConfig(), reader).parse(_mixed_pdf())
    assert reader.pages >= 1
    wordless = [n for n in extraction.notes if "OCR read no words" in n]
    assert len(wordless) == 1 and "(an image without text, or noise)" in wordless[0]
    assert not any("blank" in n for n in extraction.notes)


def test_a_garbled_text_layer_is_replaced_by_ocr_or_kept_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page whose text layer is glyph ids (a font without a Unicode map) is read again by OCR; where
    OCR cannot run, the layer is kept as it is, with a note saying why."""
    import chunkdedup.parse.pdf as pdf_module

    layer = pdf_module._text_layer
    glyphs = "\x03\x11\x07\x1d\x05 " * 30

    def first_page_garbled(page: Any, number: int) -> str:
        return glyphs if number == 1 else layer(page, number)

    monkeypatch.setattr(pdf_module, "_text_layer", first_page_garbled)
    reader = _Reader("Refunds are paid within thirty days of the request.\n")
    (doc,) = PdfParser(ParseConfig(), reader).parse(_mixed_pdf()).documents
    assert reader.pages == 2  # the garbled page and the drawn one
    assert doc.pages[0].text == "Refunds are paid within thirty days of the request.\n"
    assert (doc.pages[0].has_text_layer, doc.pages[0].ocr_confidence) == (False, 0.875)
    off = PdfParser(ParseConfig(ocr="off")).parse(_mixed_pdf())
    assert off.documents[0].pages[0].text == glyphs and off.documents[0].pages[0].has_text_layer
    assert 'page 1 has a garbled text layer, kept as it is: OCR is off ([parse] ocr = "off")' in off.notes


def test_a_rescanned_or_retyped_document_keeps_the_confidence_of_its_pages_as_they_are_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The confidence is written with the page and goes with it: a document re-ingested as a text PDF
    holds none, and one scanned again holds the new reading's."""
    readers = [_Reader("Refunds are paid within thirty days of the request.\n")]
    monkeypatch.setattr(TesseractReader, "open", staticmethod(lambda language, tessdata="": readers[-1]))
    folder, index = tmp_path / "docs", tmp_path / "i.sqlite"
    folder.mkdir()
    doc = folder / "refunds.pdf"

    def confidences() -> list[float | None]:
        with Index.open(index) as ix:
            return [conf for _, _, conf in _pages(ix, "refunds.pdf")]

    doc.write_bytes(scanned(_mixed_pdf(), 100, 7))
    ingest([folder], index)
    assert confidences() == [0.875, 0.875]
    readers.append(_Reader("Refunds are paid within thirty days.\n", 0.5))
    doc.write_bytes(scanned(_mixed_pdf(), 100, 8))
    ingest([folder], index)
    assert confidences() == [0.5, 0.5]
    doc.write_bytes(_mixed_pdf())
    ingest([folder], index)
    assert confidences() == [None, 0.5]  # page 2, a drawing, is still read by OCR


@pytest.mark.parametrize(("field", "value", "message"), [
    ("ocr", "sometimes", "parse.ocr must be auto, require or off"),
    ("ocr_language", "eng deu", "joined by '+'"),
    ("ocr_language", "", "joined by '+'"),
    ("ocr_dpi", 40, "parse.ocr_dpi must be in [72, 600]"),
])
def test_ocr_settings_are_checked(field: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ParseConfig(**{field: value})  # type: ignore[arg-type]
    assert ParseConfig(ocr_language="eng+deu").ocr_language == "eng+deu"
    assert Config.from_dict({"parse": {"ocr": "off"}}).parse.ocr == "off"


def test_a_pdf_ingested_before_ocr_could_run_is_read_again_once_it_can(
    scans: dict[str, bytes], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PDF with a text page and a scanned one, ingested while the extra is missing, keeps its scanned
    page empty with a note; the first ingest with OCR ready reads it (the bytes are the same), and the
    next one finds the file unchanged."""
    mixed = pdfium.PdfDocument.new()
    for part in (policy_pdf(), scans["policy-scan-300.pdf"]):
        mixed.import_pages(pdfium.PdfDocument(part), [0])
    out = io.BytesIO()
    mixed.save(out)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "mixed.pdf").write_bytes(out.getvalue())
    index = tmp_path / "i.sqlite"

    def missing(language: str, tessdata: str = "") -> TesseractReader:
        raise OcrUnavailable("the ocr extra is not installed (no tesserocr): pip install ...")

    with monkeypatch.context() as m:
        m.setattr(TesseractReader, "open", staticmethod(missing))
        before = ingest([folder], index)
        assert not ocr_ready(ParseConfig())
    assert [f.status for f in before.files] == [FileStatus.INGESTED]
    assert "page 2 has no text layer, not read" in (before.files[0].reason or "")
    with Index.open(index) as ix:
        (_, _, none), (empty, _, _) = _pages(ix, "mixed.pdf")
        assert empty == "" and none is None
    again = ingest([folder], index)
    assert [f.status for f in again.files] == [FileStatus.INGESTED]
    assert "not read" not in (again.files[0].reason or "") and "read by OCR" in (again.files[0].reason or "")
    with Index.open(index) as ix:
        text, read = _pages(ix, "mixed.pdf")
        assert read[2] is not None and word_f1(text[0], read[0]) >= 0.9
        assert ix.views.page_chunks("mixed.pdf", 2), "the OCR'd page is chunked and cited"
    assert [f.status for f in ingest([folder], index).files] == [FileStatus.UNCHANGED]
