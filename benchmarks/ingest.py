"""Ingest throughput, stage by stage, on a real corpus.

Each stage runs the library's public pure functions over the whole corpus (parse, boilerplate,
chunk, exact dedup), then ``chunkdedup.ingest()`` runs end to end into a fresh SQLite file, and a
second ``ingest()`` over the unchanged corpus shows the cost of a no-op re-run. Reference rows parse
the same PDFs with pypdf (why pypdfium2 was chosen) and with poppler's ``pdftotext`` (Debian's
``poppler-utils``, installed with apt-get when missing): the floor a text extraction can reach. An OCR
row reads ``--ocr-docs`` ntsb reports scanned at 300 dpi (``ocr.py``'s scans; the ``[ocr]`` extra).

HTML: the blocks of the same pages (``--html DIR``, else seeded documentation pages) by the former
BeautifulSoup extraction (``html_bs4.py``, the ``[bench]`` extra) and by ``html_blocks``, in MB/s,
and whether they agree; then ``parse_file`` in a process of its own on three hard ``--hard-mb``
pages (``<div>`` nested millions deep, ``<p>x</p>`` millions wide, documentation pages end to end),
with its CPU time and peak RSS.

``--first-run`` times instead the first and the second ingest after a fresh install, on the 50k-record
JSONL corpus of ``ingest_vs_datasketch.py`` (``--records``): numba's cache is an empty folder
(``NUMBA_CACHE_DIR``), each ingest a process of its own (``ingest()``, one process, as ``chunkdedup
ingest`` runs on 2 cores). Rows, wall seconds from the process's start and its CPU seconds:

* ``first run, cold cache``: the run takes the NumPy twins while a process of its own compiles the
  kernels into the cache (that process's CPU is not the run's: see the warming row);
* ``second run, warm cache``: the same cache once that process has finished, a fresh index;
* ``first run, kernels compiled inline``: ``ingest(kernels=True)`` over another empty cache, as every
  first run was before the twins stood in (each kernel compiled at its first call);
* ``warming process alone``: ``python -m chunkdedup.ingestion.warm`` over a third empty cache.

Example:
    python benchmarks/ingest.py --repeat 3 --out benchmarks/results/ingest.json
    python benchmarks/ingest.py --only html
    python benchmarks/ingest.py --first-run --records 50000   # ~4 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.table import Table

import chunkdedup
from chunkdedup import Config, ingest
from chunkdedup.dedup.exact import dedup_exact, key_chunk
from chunkdedup.parse import discover, parse_file
from chunkdedup.parse.html import html_blocks
from chunkdedup.parse.text import decode_text
from chunkdedup.text.boilerplate import candidate_keys, is_chrome, key_id, strip
from chunkdedup.text.chunk import chunk_document
from chunkdedup.types import Chunk, Document, FileStatus, Page

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "sec-10q" / "docs"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "ingest.json"

T = TypeVar("T")
sys.path.insert(0, str(REPO / "benchmarks"))

from html_pages import write_hard, write_site  # noqa: E402

#: ``parse_file`` on one file in a fresh process: its status and reason, CPU and wall seconds, peak RSS
#: (VmHWM: the process's own; after a fork and exec ``ru_maxrss`` counts the parent's RSS at the fork)
_PROBE = """
import json, sys, time
from pathlib import Path
from chunkdedup.config import ParseConfig
from chunkdedup.parse import InputFile, parse_file
path = Path(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
r = parse_file(InputFile(path=path, doc_id=path.name, metadata={}), ParseConfig())
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
status = Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]
print(json.dumps({"status": r.status.value, "reason": r.reason, "cpu_s": cpu, "wall_s": wall,
    "chars": sum(len(p.text) for d in r.documents for p in d.pages), "peak_rss_mib": int(status) / 1024}))
"""


def timed(
    fn: Callable[[], T], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, T]:
    """Median time of ``repeat`` calls (wall time, or ``clock``'s), and the last call's result."""
    times: list[float] = []
    result: T
    for _ in range(repeat):
        start = clock()
        result = fn()
        times.append(clock() - start)
    return statistics.median(times), result


def parse_corpus(corpus: Path, cfg: Config) -> list[Document]:
    docs: list[Document] = []
    for inp in discover([corpus], None, cfg.parse):
        parsed = parse_file(inp, cfg.parse)
        if parsed.status == FileStatus.INGESTED:
            docs.extend(parsed.documents)
    return docs


def decide_and_strip(docs: list[Document], cfg: Config) -> list[tuple[str, tuple[Page, ...]]]:
    """Candidate keys per document, the chrome decision over units, then strip: as the pipeline does."""
    bp = cfg.boilerplate
    units: dict[str, set[str]] = {}
    for doc in docs:
        units.setdefault(doc.unit, set()).update(candidate_keys(doc.pages, bp))
    counts = Counter(key for keys in units.values() for key in keys)
    chrome = {key_id(k) for k, n in counts.items() if is_chrome(n, len(units), bp)}
    return [(doc.doc_id, strip(doc.pages, chrome, bp).pages) for doc in docs]


def chunk_corpus(clean: list[tuple[str, tuple[Page, ...]]], cfg: Config) -> list[Chunk]:
    return [c for doc_id, pages in clean for c in chunk_document(doc_id, pages, cfg.chunk)]


def pypdf_pages(pdfs: list[Path]) -> tuple[int, list[Path]]:
    """Pages pypdf extracted, and the PDFs it could not read (those are left out of the ratio)."""
    from pypdf import PdfReader  # test extra; only the reference row needs it

    n = 0
    failed: list[Path] = []
    for pdf in pdfs:
        try:
            pages = PdfReader(pdf).pages
            for page in pages:
                page.extract_text()
            n += len(pages)
        except Exception:  # pypdf raises many types (e.g. LimitReachedError); any of them is a miss
            failed.append(pdf)
    return n, failed


def pdftotext_command() -> str | None:
    """poppler's ``pdftotext``, installed with apt-get when it is missing and this is root (``None``
    when it cannot be had)."""
    found = shutil.which("pdftotext")
    if found is None and shutil.which("apt-get") is not None and os.geteuid() == 0:
        install = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils"
        subprocess.run(["sh", "-c", install], capture_output=True, check=False)
        found = shutil.which("pdftotext")
    return found


def pdftotext_pages(command: str, pdfs: list[Path]) -> int:
    """Every page of ``pdfs`` read by ``pdftotext`` (one process a file, as a shell loop would); the
    pages counted by its form feeds."""
    pages = 0
    for pdf in pdfs:
        out = subprocess.run([command, "-q", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, check=True)
        pages += out.stdout.count(b"\f")
    return pages


def ocr_row(docs: int, repeat: int) -> dict[str, Any] | None:
    """``parse_file`` with OCR over ``docs`` ntsb reports scanned at 300 dpi (``ocr.py``'s scans), in
    pages/s; ``None`` when ``docs`` is 0 or the ``[ocr]`` extra is missing."""
    if docs <= 0:
        return None
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        return None
    from chunkdedup.config import ParseConfig
    from ocr import NTSB, parse_all, scanned

    with tempfile.TemporaryDirectory() as tmp:
        scans = []
        for seed, src in enumerate(sorted(NTSB.glob("*.pdf"))[:docs]):
            scans.append(Path(tmp) / src.name)
            scans[-1].write_bytes(scanned(src.read_bytes(), 300, seed))
        runs = [parse_all(scans, ParseConfig()) for _ in range(max(1, min(repeat, 2)))]
    pages = sum(len(t) for t in runs[0][2].values())
    wall = statistics.median(r[0] for r in runs)
    return row(f"OCR: parse_file of {docs} scanned ntsb reports, 300 dpi", wall, pages, None, "1 process")


def run_ingest(corpus: Path, repeat: int) -> tuple[float, float, dict[str, Any]]:
    """Median fresh-ingest and no-op re-ingest times, each fresh run into a new temp index."""
    fresh: list[float] = []
    noop: list[float] = []
    totals: dict[str, Any] = {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="chunkdedup-bench-") as tmp:
            index = Path(tmp) / "index.sqlite"
            start = time.perf_counter()
            totals = ingest([corpus], index).totals
            fresh.append(time.perf_counter() - start)
            start = time.perf_counter()
            again = ingest([corpus], index).totals
            noop.append(time.perf_counter() - start)
            if again["files"]["unchanged"] != sum(totals["files"].values()):
                raise SystemExit(f"re-ingest was not a no-op: {again['files']}")
    return statistics.median(fresh), statistics.median(noop), totals


def row(stage: str, seconds: float, pages: int | None, chunks: int | None, note: str = "") -> dict[str, Any]:
    return {
        "stage": stage,
        "seconds": round(seconds, 4),
        "pages_per_s": round(pages / seconds, 1) if pages and seconds else None,
        "chunks_per_s": round(chunks / seconds, 1) if chunks and seconds else None,
        "note": note,
    }


def html_files(folder: Path | None, pages: int, tmp: Path) -> list[Path]:
    """The HTML files of ``folder``, else ``pages`` seeded documentation pages written under ``tmp``."""
    if folder is not None:
        return sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".html", ".htm", ".xhtml"))
    return write_site(tmp / "site", pages)


def probe(path: Path) -> dict[str, Any]:
    """``parse_file`` on ``path`` in a fresh process (so that its peak RSS is its own)."""
    env = {**os.environ, "PYTHONPATH": str(Path(chunkdedup.__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        return {"status": "crashed", "reason": done.stderr.strip()[-300:], "cpu_s": None, "wall_s": None,
                "chars": 0, "peak_rss_mib": None}  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_html(
    folder: Path | None, pages: int, hard_mb: float, repeat: int, console: Console
) -> dict[str, Any]:
    """MB/s of the former and the current HTML extraction on the same pages, then the hard pages.

    CPU time (the work is one thread): on a shared machine wall time measures the neighbours too."""
    cpu = time.process_time
    with tempfile.TemporaryDirectory(prefix="chunkdedup-bench-html-") as tmp:
        files = html_files(folder, pages, Path(tmp))
        texts = [decode_text(p.read_bytes()) for p in files]
        mb = sum(p.stat().st_size for p in files) / 1e6
        rows: list[dict[str, Any]] = []
        try:
            from html_bs4 import html_blocks_bs4  # the [bench] extra's beautifulsoup4
        except ImportError:
            html_blocks_bs4 = None
        before: list[tuple[str | None, list[str]]] = []
        if html_blocks_bs4 is not None:
            with console.status("html: BeautifulSoup"):
                t_bs4, before = timed(lambda: [html_blocks_bs4(t) for t in texts], repeat, cpu)
            rows.append(html_row("before: BeautifulSoup html.parser (html_bs4.py)", t_bs4, mb))
        with console.status("html: selectolax"):
            t_now, after = timed(lambda: [html_blocks(t) for t in texts], repeat, cpu)
        rows.append(html_row("now: selectolax / lexbor (html_blocks)", t_now, mb))
        cfg = Config()
        inputs = discover(files, None, cfg.parse)
        with console.status("html: parse_file"):
            t_file, _ = timed(lambda: [parse_file(i, cfg.parse) for i in inputs], repeat, cpu)
        rows.append(html_row("now: parse_file (read, decode, scan, blocks)", t_file, mb))
        same = sum(_lines(a) == _lines(b) for a, b in zip(before, after, strict=True)) if before else None
        hard: list[dict[str, Any]] = []
        for name, path in write_hard(Path(tmp) / "hard", int(hard_mb * 1e6)).items():
            with console.status(f"html: {name} {hard_mb:g} MB page, in its own process"):
                hard.append({"page": name, "mb": round(path.stat().st_size / 1e6, 1), **probe(path)})
    return {
        "files": len(files),
        "mb": round(mb, 2),
        "source": str(folder) if folder else f"{pages} generated documentation pages (seed 0)",
        "rows": rows,
        "speedup": round(t_bs4 / t_now, 1) if before else None,
        "same_lines": same,
        "hard": hard,
    }


def _lines(extracted: tuple[str | None, list[str]]) -> tuple[str | None, list[str]]:
    """The title and the lines of the blocks: a navigation box is one block of lines now, where the
    former extraction kept its heading and its links apart."""
    title, blocks = extracted
    return title, [line for block in blocks for line in block.split("\n")]


def html_row(name: str, seconds: float, mb: float) -> dict[str, Any]:
    return {
        "row": name,
        "cpu_s": round(seconds, 4),
        "mb_per_s": round(mb / seconds, 2) if seconds else None,
    }


def print_html(html: dict[str, Any], console: Console) -> None:
    table = Table(title=f"HTML extraction: {html['source']} ({html['files']} files, {html['mb']:.2f} MB)")
    for col in ("row", "CPU s", "MB/s"):
        table.add_column(col, justify="left" if col == "row" else "right")
    for r in html["rows"]:
        table.add_row(r["row"], f"{r['cpu_s']:.3f}", f"{r['mb_per_s']:,.2f}")
    console.print(table)
    if html["speedup"] is not None:
        console.print(
            f"selectolax / BeautifulSoup: {html['speedup']}x; same lines and title on "
            f"{html['same_lines']} of {html['files']} files"
        )
    hard = Table(title="parse_file on hard HTML pages, each in its own process")
    for col in ("page", "MB", "status", "CPU s", "wall s", "peak RSS MiB", "reason"):
        hard.add_column(col, justify="left" if col in ("page", "status", "reason") else "right")
    for h in html["hard"]:
        cells = (h["cpu_s"], h["wall_s"], h["peak_rss_mib"])
        shown = [f"{c:,.2f}" if isinstance(c, float) and c < 100 else f"{c:,.0f}" if c else "" for c in cells]
        hard.add_row(h["page"], f"{h['mb']:g}", h["status"], *shown, (h["reason"] or "")[:90])
    console.print(hard)
#: one ingest in a process of its own: prints its wall seconds since the start and its CPU seconds
_ONE_INGEST = """
import json, resource, sys, time
from pathlib import Path
from chunkdedup import ingest
ingest([Path(sys.argv[1])], Path(sys.argv[2]), kernels=json.loads(sys.argv[3]))
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": ru.ru_utime + ru.ru_stime}))
"""


def _in_process(cmd: list[str], cache: Path) -> dict[str, float]:
    """Run ``cmd`` with ``cache`` as numba's cache: its wall seconds, its own CPU seconds (what it
    prints; else all below) and those of every process it waited for too (a warming process the run
    started is counted when the run saw it end)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, check=True, env=env, stdout=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    every = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines()
    own = float(json.loads(lines[-1])["cpu"]) if lines and lines[-1].startswith("{") else every
    return {"wall_s": round(wall, 2), "cpu_s": round(own, 2), "cpu_with_children_s": round(every, 2)}


def _cached(cache: Path) -> bool:
    check = "from chunkdedup.ingestion.warmup import kernels_cached; print(kernels_cached())"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def first_run(records: int, rounds: int, out: Path) -> int:
    """The first and second ingest after a fresh install (see the module docstring)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from ingest_vs_datasketch import compile_package, write_corpus

    compile_package()
    console = Console(width=150)
    load = [os.getloadavg()[0]]
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in ("cold", "warm", "inline", "warming")}
    with tempfile.TemporaryDirectory(prefix="chunkdedup-first-run-") as tmp:
        folder = Path(tmp)
        corpus = folder / "corpus"
        with console.status(f"writing {records:,} records"):
            counts = write_corpus(corpus, records)

        def ingest_cmd(index: str, kernels: bool | None) -> list[str]:
            return [sys.executable, "-c", _ONE_INGEST, str(corpus), str(folder / index), json.dumps(kernels)]

        for r in range(rounds):
            caches = {k: folder / f"numba-{k}-{r}" for k in ("fresh", "inline", "warming")}
            for cache in caches.values():
                cache.mkdir()
            with console.status(f"round {r + 1}: first run, cold cache"):
                rows["cold"].append(_in_process(ingest_cmd(f"cold-{r}.sqlite", None), caches["fresh"]))
            with console.status(f"round {r + 1}: waiting for the warming process"):
                deadline = time.monotonic() + 900
                while not _cached(caches["fresh"]) and time.monotonic() < deadline:
                    time.sleep(2)
            with console.status(f"round {r + 1}: second run, warm cache"):
                rows["warm"].append(_in_process(ingest_cmd(f"warm-{r}.sqlite", None), caches["fresh"]))
            with console.status(f"round {r + 1}: first run, kernels compiled inline"):
                rows["inline"].append(_in_process(ingest_cmd(f"inline-{r}.sqlite", True), caches["inline"]))
            with console.status(f"round {r + 1}: warming process alone"):
                warm = [sys.executable, "-m", "chunkdedup.ingestion.warm"]
                rows["warming"].append(_in_process(warm, caches["warming"]))
            load.append(os.getloadavg()[0])
    names = {
        "cold": "first run, cold cache (twins; kernels compiled meanwhile)",
        "warm": "second run, warm cache",
        "inline": "first run, kernels compiled inline (before)",
        "warming": "warming process alone (beside the first run)",
    }
    title = f"first and second ingest after a fresh install: {records:,} JSONL records (medians of {rounds})"
    table = Table(title=title)
    columns = ("row", "wall s", "CPU s", "CPU s with the processes it saw end", "rounds (wall / CPU)")
    for col in columns:
        table.add_column(col, justify="left" if col in ("row", "rounds (wall / CPU)") else "right")
    medians: dict[str, dict[str, float]] = {}
    for key, runs in rows.items():
        medians[key] = {m: round(statistics.median(x[m] for x in runs), 2) for m in runs[0]}
        each = ", ".join(f"{x['wall_s']:.1f} / {x['cpu_s']:.1f}" for x in runs)
        shown = (f"{medians[key][m]:.1f}" for m in ("wall_s", "cpu_s", "cpu_with_children_s"))
        table.add_row(names[key], *shown, each)
    console.print(table)
    console.print(
        f"first run / second run: {medians['cold']['wall_s'] / medians['warm']['wall_s']:.2f}x wall, "
        f"{medians['cold']['cpu_s'] / medians['warm']['cpu_s']:.2f}x CPU; inline compiling / first run: "
        f"{medians['inline']['wall_s'] / medians['cold']['wall_s']:.2f}x wall; "
        f"load average (1 min) {', '.join(f'{x:.1f}' for x in load)}"
    )
    result = {
        "benchmark": "ingest --first-run",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpu_count": os.cpu_count(),
        },
        "corpus": counts,
        "rounds": rounds,
        "rows": {k: {"name": names[k], "median": medians[k], "runs": runs} for k, runs in rows.items()},
        "load_average_1min": load,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="folder of input files")
    ap.add_argument("--first-run", action="store_true", help="the first and second ingest after an install")
    ap.add_argument("--records", type=int, default=50_000, help="--first-run: JSONL records of the corpus")
    ap.add_argument("--rounds", type=int, default=1, help="--first-run: rounds; medians")
    ap.add_argument("--repeat", type=int, default=3, help="runs per stage; the median is reported")
    ap.add_argument("--pypdf-repeat", type=int, default=1, help="runs of the (slow) pypdf reference")
    ap.add_argument("--out", type=Path, help="JSON results file (default benchmarks/results/ingest.json)")
    ap.add_argument("--only", choices=["all", "html"], default="all", help="html: the HTML rows alone")
    ap.add_argument("--ocr-docs", type=int, default=2, help="ntsb reports scanned for the OCR row (0: none)")
    ap.add_argument("--html", type=Path, help="folder of HTML files (default: generated documentation pages)")
    ap.add_argument("--html-pages", type=int, default=60, help="documentation pages generated without --html")
    ap.add_argument("--hard-mb", type=float, default=48, help="size of each hard HTML page, MB")
    args = ap.parse_args(argv)
    if args.first_run:
        if args.records < 1 or args.rounds < 1:
            ap.error("--records and --rounds must be >= 1")
        out = args.out or DEFAULT_OUT.with_name("ingest_first_run.json")
        return first_run(args.records, args.rounds, out)
    args.out = args.out or DEFAULT_OUT
    if args.repeat < 1 or args.pypdf_repeat < 1:
        ap.error("--repeat and --pypdf-repeat must be >= 1")
    corpus: Path = args.corpus.resolve()
    if not corpus.is_dir():
        ap.error(f"corpus {corpus} is not a folder: pass --corpus PATH")
    if args.html is not None and not args.html.is_dir():
        ap.error(f"--html {args.html} is not a folder")
    cfg = Config()
    console = Console() if sys.stdout.isatty() else Console(width=120)  # a log file gets unwrapped rows
    n = args.repeat
    if args.only == "html":
        html = run_html(args.html, args.html_pages, args.hard_mb, n, console)
        print_html(html, console)
        write_result(args.out, {"benchmark": "ingest", **header(n), "html": html}, console)
        return 0

    with console.status("parse"):
        t_parse, docs = timed(lambda: parse_corpus(corpus, cfg), n)
    pages = sum(len(d.pages) for d in docs)
    with console.status("boilerplate"):
        t_bp, clean = timed(lambda: decide_and_strip(docs, cfg), n)
    with console.status("chunk"):
        t_chunk, chunks = timed(lambda: chunk_corpus(clean, cfg), n)
    with console.status("exact dedup"):
        t_key, keyed = timed(lambda: [k for k in map(key_chunk, chunks) if k is not None], n)
        t_dedup, canon = timed(lambda: dedup_exact(chunks), n)
    with console.status("ingest end to end"):
        t_ingest, t_noop, totals = run_ingest(corpus, n)
    pdfs = sorted(corpus.rglob("*.pdf"))
    with console.status(f"pypdf reference ({len(pdfs)} PDFs)"):
        t_pypdf, (pypdf_n, failed) = timed(lambda: pypdf_pages(pdfs), args.pypdf_repeat)
        same = discover([p for p in pdfs if p not in failed], None, cfg.parse)
        t_ours_pdf, ours = timed(lambda: [parse_file(i, cfg.parse) for i in same], n)
    pdf_pages = sum(len(d.pages) for f in ours for d in f.documents)
    poppler = pdftotext_command()
    if poppler is not None:
        with console.status("pdftotext reference"):
            t_poppler, poppler_pages = timed(lambda: pdftotext_pages(poppler, [i.path for i in same]), n)
    with console.status("OCR row"):
        ocr = ocr_row(args.ocr_docs, n)
    failed_note = f"; pypdf failed on {', '.join(p.name for p in failed)}" if failed else ""

    raw, after_exact, canonical = totals["raw_chunks"], totals["after_exact"], totals["canonical_chunks"]
    # The stage-by-stage run must reproduce what ingest() stored (up to exact dedup: the near tier runs
    # only inside ingest()), or its timings measure something else.
    consistent = (len(keyed), len(canon)) == (raw, after_exact)
    rows = [
        row("parse (discover + parse_file)", t_parse, pages, None),
        row("boilerplate (keys + chrome + strip)", t_bp, pages, None),
        row("chunk (chunk_document)", t_chunk, pages, len(chunks)),
        row("exact: key_chunk", t_key, None, len(chunks)),
        row("exact: dedup_exact (keys + groups)", t_dedup, None, len(chunks)),
        row("ingest() end to end, fresh index", t_ingest, totals["pages"], raw, "incl. SQLite + FTS5 writes"),
        row("ingest() again, all unchanged", t_noop, totals["pages"], None, "hash check per file"),
        row("reference: pypdfium2 (ours), same PDFs", t_ours_pdf, pdf_pages, None, f"median of {n}"),
        row("reference: pypdf extract_text", t_pypdf, pypdf_n, None, f"{args.pypdf_repeat} run(s), slow"),
    ]
    if poppler is not None:
        rows.append(row("reference: pdftotext (poppler), same PDFs", t_poppler, poppler_pages, None,
                        f"median of {n}, a process a file"))
    if ocr is not None:
        rows.append(ocr)
    ratio = (pdf_pages / t_ours_pdf) / (pypdf_n / t_pypdf) if pdf_pages and pypdf_n else None
    ratio_text = f"{ratio:.1f}x" if ratio else "n/a"
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB

    table = Table(title=f"chunkdedup ingest benchmark: {corpus.name} ({len(docs)} documents, {pages} pages)")
    for col in ("stage", "seconds", "pages/s", "chunks/s", "note"):
        table.add_column(col, justify="left" if col in ("stage", "note") else "right")
    for r in rows:
        cells = [r["pages_per_s"], r["chunks_per_s"]]
        shown = ((f"{c:,.0f}" if c >= 10 else f"{c:.2f}") if c else "" for c in cells)
        table.add_row(r["stage"], f"{r['seconds']:.3f}", *shown, r["note"])
    console.print(table)
    console.print(
        f"raw chunks {raw:,}, after exact {after_exact:,}, canonical {canonical:,} "
        f"(in memory: {len(keyed):,} keyed, {len(canon):,} "
        f"canonical); pypdfium2 vs pypdf pages/s: {ratio_text}{failed_note}; peak RSS {peak_mb:,.0f} MiB"
    )

    html = run_html(args.html, args.html_pages, args.hard_mb, n, console)
    print_html(html, console)

    result = {
        "benchmark": "ingest",
        **header(n),
        "corpus": str(corpus),
        "pypdf_repeat": args.pypdf_repeat,
        "documents": len(docs),
        "pages": pages,
        "raw_chunks": raw,
        "after_exact": after_exact,
        "canonical_chunks": canonical,
        "stages_match_ingest": consistent,
        "index_bytes": totals["index_bytes"],
        "stages": rows,
        "pypdfium2_vs_pypdf_pages_per_s": round(ratio, 2) if ratio else None,
        "pypdf_failed": [p.name for p in failed],
        "peak_rss_mib": round(peak_mb, 1),
        "html": html,
    }
    if not consistent:
        console.print("[red]warning: the stage-by-stage chunk counts differ from ingest()'s[/red]")
    write_result(args.out, result, console)
    return 0


def header(repeat: int) -> dict[str, Any]:
    """When and where a result was measured."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpu_count": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
        "repeat": repeat,
    }


def write_result(out: Path, result: dict[str, Any], console: Console) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {out}")


if __name__ == "__main__":
    raise SystemExit(main())
