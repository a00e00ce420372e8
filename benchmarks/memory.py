"""Peak memory of an ingest for inputs that hold much in one place, and the index size of many tiny records.

**Rows**, each a whole ``chunkdedup ingest`` process into a fresh index (peak RSS from the child's
``ru_maxrss``):

* ``pdf page``: one PDF page holding ``--pdf-chars`` characters of text (default 5,000,000), written
  as a plain content stream; also the peak of PDFium's text page alone (``get_textpage``), the part of
  the parse that holds per-character records;
* ``nested html``: one HTML file of ``--html-depth`` nested ``<div>`` elements (default 20,000);
* ``tiny records``: one JSONL file of ``--records`` records of 3-12 words (default 100,000), with the
  index's size against the file's and its ten largest tables and indexes (SQLite's ``dbstat``); its
  bytes UTF-8, UTF-8 with CRLF line ends or cp1252 (``--encoding``), or a Parquet file (``--format``).

Example:
    python benchmarks/memory.py
    python benchmarks/memory.py --records 1000000 --skip pdf --skip html
    python benchmarks/memory.py --records 1000000 --skip pdf --skip html --encoding cp1252
    python benchmarks/memory.py --records 300000 --skip pdf --skip html --phases
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CLI = [sys.executable, "-c", "from chunkdedup.cli import main; main()"]

_TEXTPAGE = """
import resource, sys
import pypdfium2 as pdfium
page = pdfium.PdfDocument(sys.argv[1])[0]
page.get_textpage().get_text_range()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


#: one ingest in this process, its RSS sampled every 0.1 s with the phase the main thread is in (by the
#: sequence's function on its stack): the peak of each phase, in MB
_PHASES = """
import json, sys, threading, time
from chunkdedup import ingest
PHASES = (("update_clusters", "cluster pass"), ("chunk_phase", "chunk"), ("_parse_phase", "parse"),
          ("sync", "text and vector index"))
main = threading.get_ident()
peaks = {}
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))
def phase():
    frame, names = sys._current_frames().get(main), set()
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    return next((label for name, label in PHASES if name in names), "other")
def sample():
    while True:
        label, now = phase(), rss()
        peaks[label] = max(peaks.get(label, 0), now)
        time.sleep(0.1)
threading.Thread(target=sample, daemon=True).start()
ingest([sys.argv[1]], sys.argv[2])
print(json.dumps(peaks))
"""


def write_pdf(path: Path, chars: int, seed: int = 1) -> None:
    """A one-page PDF whose content stream shows ``chars`` characters of words in Helvetica."""
    rng = random.Random(seed)
    words = [f"word{i}" for i in range(5_000)]
    ops = ["BT", "/F1 2 Tf", "2 TL", "10 780 Td"]
    size = 0
    while size < chars:
        line = " ".join(rng.choice(words) for _ in range(12))
        ops.append(f"({line}) Tj T*")
        size += len(line) + 1
    ops.append("ET")
    content = "\n".join(ops).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))


def write_records(path: Path, records: int, seed: int = 1, encoding: str = "utf-8") -> None:
    """``records`` tiny records (3-12 words) as JSON Lines, or as a Parquet file (one row group, as
    ``pyarrow.parquet.write_table`` writes up to 1M rows) when ``path`` ends in ``.parquet``.

    ``encoding`` (JSON Lines only): ``utf-8``; ``crlf``, UTF-8 with CRLF line ends; ``cp1252``, five
    words in eight with an accent (``café17``, ``größe19``), written in cp1252: a file that is not
    UTF-8, read as charset-normalizer guesses (cp1252)."""
    rng = random.Random(seed)
    accented = encoding == "cp1252"
    stems = ("café", "naïve", "größe", "über", "élan", "word", "word", "word") if accented else ("word",)
    words = [f"{stems[i % len(stems)]}{i}" for i in range(30_000)]
    texts = (" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(records))
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = {"id": [f"t{i}" for i in range(records)], "text": list(texts)}
        pq.write_table(pa.table(rows), path)
        return
    end = "\r\n" if encoding == "crlf" else "\n"
    with path.open("w", encoding="cp1252" if accented else "utf-8", newline="") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"id": f"t{i}", "text": text}, ensure_ascii=not accented) + end)


def _ingest(folder: Path, index: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one ingest process."""
    start = time.perf_counter()
    args = [*_CLI, "ingest", str(folder), "--index", str(index)]
    done = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):
        raise SystemExit(f"ingest of {folder} failed ({done.returncode}):\n{done.stderr}")
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _largest(index: Path, n: int = 10) -> list[tuple[str, float]]:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        sql = "SELECT name, SUM(pgsize) s FROM dbstat GROUP BY name ORDER BY s DESC LIMIT ?"
        rows = conn.execute(sql, (n,))
        return [(name, size / 1e6) for name, size in rows]
    finally:
        conn.close()


def _reason(index: Path) -> str | None:
    """The records file's note (how its bytes were decoded, if not as UTF-8)."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT reason FROM files").fetchone()
        return None if row is None else row[0]
    finally:
        conn.close()


def _canonicals(index: Path) -> int:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM canonicals").fetchone()[0])
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf-chars", type=int, default=5_000_000)
    parser.add_argument("--html-depth", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl",
                        help="the tiny records' file: JSON Lines or Parquet")
    parser.add_argument("--encoding", choices=["utf-8", "crlf", "cp1252"], default="utf-8",
                        help="the JSON Lines records' bytes: UTF-8, UTF-8 with CRLF line ends, or cp1252")
    parser.add_argument("--skip", action="append", default=[], choices=["pdf", "html", "records"])
    parser.add_argument("--phases", action="store_true",
                        help="ingest the records once more in one process, printing each phase's peak RSS")
    args = parser.parse_args(argv)
    if args.format == "parquet" and args.encoding != "utf-8":
        parser.error("--encoding is for --format jsonl: a Parquet file's text is UTF-8")
    # ru_maxrss of RUSAGE_CHILDREN is the largest child's so far: the rows run in order of size
    with tempfile.TemporaryDirectory(prefix="chunkdedup-memory-") as tmp:
        root = Path(tmp)
        if "html" not in args.skip:
            folder = root / "html"
            folder.mkdir()
            page = "<html><body>" + "<div>" * args.html_depth + "deep text" + "</div>" * args.html_depth
            (folder / "nested.html").write_text(page)
            wall, peak = _ingest(folder, root / "html.sqlite")
            print(f"nested html, {args.html_depth:,} deep: {wall:.1f} s, peak RSS so far {peak:,.0f} MB")
        if "records" not in args.skip:
            folder = root / "records"
            folder.mkdir()
            records = folder / f"tiny.{args.format}"
            write_records(records, args.records, encoding=args.encoding)
            index = root / "records.sqlite"
            wall, peak = _ingest(folder, index)
            size, text = index.stat().st_size, records.stat().st_size
            kind = args.format if args.format == "parquet" else f"{args.format}, {args.encoding}"
            print(f"{args.records:,} tiny records ({kind}, {text / 1e6:.1f} MB): {wall:.1f} s, "
                  f"peak RSS so far {peak:,.0f} MB, index {size / 1e6:.1f} MB = {size / text:.1f}x the file, "
                  f"{_canonicals(index):,} canonical chunks; the file's note: {_reason(index)}")
            for name, mb in _largest(index):
                print(f"    {name:32s} {mb:7.1f} MB")
            if args.phases:
                again = root / "phases.sqlite"
                done = subprocess.run([sys.executable, "-c", _PHASES, str(folder), str(again)],
                                      capture_output=True, text=True, check=True)
                peaks = json.loads(done.stdout.strip().splitlines()[-1])
                said = ", ".join(f"{k} {v:,} MB" for k, v in peaks.items())
                print(f"    peak RSS by phase (sampled): {said}")
        if "pdf" not in args.skip:
            folder = root / "pdf"
            folder.mkdir()
            write_pdf(folder / "page.pdf", args.pdf_chars)
            alone = subprocess.run([sys.executable, "-c", _TEXTPAGE, str(folder / "page.pdf")],
                                   capture_output=True, text=True, check=True)
            wall, peak = _ingest(folder, root / "pdf.sqlite")
            print(f"pdf page of {args.pdf_chars:,} characters: {wall:.1f} s, peak RSS so far {peak:,.0f} MB; "
                  f"PDFium's text page alone {int(alone.stdout) / 1024:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
