"""OCR throughput on scanned PDFs made from the ntsb reports.

Each report is rendered to page images at ``--dpi``, turned 0.3-0.8 degrees, speckled, stored as JPEG
and put back into an image-only PDF (what a scanner gives). Then: ``parse_file`` reads the scans in
this process (one Tesseract engine per document), ``ingest()`` reads them end to end with ``--workers``
parse workers, and the OCR'd text of every page is scored against the text layer of the page it was
made from (bag-of-words F1). A reference row parses the original text PDFs.

Example:
    python benchmarks/ocr.py --docs 6 --out benchmarks/results/ocr.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import re
import resource
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pypdfium2 as pdfium
from PIL import Image
from rich.console import Console
from rich.table import Table

from chunkdedup import ingest
from chunkdedup.config import ParseConfig
from chunkdedup.parse import parse_file
from chunkdedup.parse.discover import InputFile
from chunkdedup.types import FileStatus

REPO = Path(__file__).resolve().parents[1]
NTSB = REPO.parent / "shared" / "data" / "ntsb" / "docs"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "ocr.json"


def scanned(pdf: bytes, dpi: int, seed: int) -> bytes:
    """An image-only copy of ``pdf`` at ``dpi``: pages turned a little, grey noise and specks, JPEG."""
    rng = np.random.default_rng(seed)
    doc = pdfium.PdfDocument(pdf)
    images = []
    try:
        for i in range(len(doc)):
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


def text_layers(pdf: bytes) -> list[str]:
    doc = pdfium.PdfDocument(pdf)
    try:
        pages = []
        for i in range(len(doc)):
            textpage = doc[i].get_textpage()
            pages.append(textpage.get_text_range())
            textpage.close()
        return pages
    finally:
        doc.close()


def word_f1(reference: str, found: str) -> float:
    ref = Counter(re.findall(r"\w+", reference.casefold()))
    got = Counter(re.findall(r"\w+", found.casefold()))
    hit = sum((ref & got).values())
    if not hit:
        return 0.0
    precision, recall = hit / sum(got.values()), hit / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def parse_all(paths: list[Path], config: ParseConfig) -> tuple[float, float, dict[str, list[str]]]:
    """Wall and CPU seconds to parse ``paths`` in this process, and each file's page texts."""
    texts: dict[str, list[str]] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    for path in paths:
        parsed = parse_file(InputFile(path=path, doc_id=path.name, metadata={}), config)
        if parsed.status != FileStatus.INGESTED:
            raise SystemExit(f"{path}: {parsed.status} ({parsed.reason})")
        texts[path.name] = [p.text for p in parsed.documents[0].pages]
    return time.perf_counter() - wall, time.process_time() - cpu, texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=6, help="how many ntsb reports to scan (of 20)")
    ap.add_argument("--dpi", type=int, default=300, help="the scans' resolution")
    ap.add_argument("--workers", type=int, default=2, help="parse workers of the ingest() row")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    load = os.getloadavg()[0]
    sources = sorted(NTSB.glob("*.pdf"))[: args.docs]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "scans"
        folder.mkdir()
        start = time.perf_counter()
        for seed, src in enumerate(sources):
            (folder / src.name).write_bytes(scanned(src.read_bytes(), args.dpi, seed))
        made = time.perf_counter() - start
        scans = sorted(folder.glob("*.pdf"))

        text_wall, _, _ = parse_all(sources, ParseConfig(ocr="off"))
        ocr_wall, ocr_cpu, texts = parse_all(scans, ParseConfig())
        pages = sum(len(t) for t in texts.values())
        scores = [
            word_f1(ref, got)
            for src in sources
            for ref, got in zip(text_layers(src.read_bytes()), texts[src.name], strict=True)
        ]
        start = time.perf_counter()
        report = ingest([folder], Path(tmp) / "scans.sqlite", workers=args.workers)
        ingest_wall = time.perf_counter() - start
        if any(f.status != FileStatus.INGESTED for f in report.files):
            raise SystemExit(f"ingest did not read every scan: {report.to_json()['files']}")

    rows = [
        ("parse_file, text layers of the originals", text_wall, pages / text_wall),
        ("parse_file + OCR of the scans, 1 process", ocr_wall, pages / ocr_wall),
        (f"ingest() of the scans, {args.workers} parse workers", ingest_wall, pages / ingest_wall),
    ]
    table = Table(title=f"OCR: {len(scans)} ntsb reports scanned at {args.dpi} dpi, {pages} pages")
    for col in ("row", "seconds", "pages/s"):
        table.add_column(col, justify="left" if col == "row" else "right")
    for name, secs, rate in rows:
        table.add_row(name, f"{secs:.2f}", f"{rate:.2f}")
    console = Console()
    console.print(table)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    console.print(
        f"OCR CPU {ocr_cpu / pages:.2f} s a page in this process; word F1 against the text layer:"
        f" mean {sum(scores) / len(scores):.3f}, lowest {min(scores):.3f};"
        f" the scans were made in {made:.1f} s; peak RSS {rss:.0f} MiB; load average {load:.1f} at the start,"
        f" {os.getloadavg()[0]:.1f} at the end (wall times stretch on a busy machine; CPU time does not)"
    )
    result: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": load},
        "docs": len(scans),
        "pages": pages,
        "dpi": args.dpi,
        "rows": [{"row": n, "seconds": round(s, 3), "pages_per_s": round(r, 3)} for n, s, r in rows],
        "ocr_cpu_s_per_page": round(ocr_cpu / pages, 3),
        "f1_mean": round(sum(scores) / len(scores), 4),
        "f1_min": round(min(scores), 4),
        "f1_pages": [round(s, 4) for s in scores],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
