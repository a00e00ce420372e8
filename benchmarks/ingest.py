"""Ingest throughput, stage by stage, on a real corpus.

Each stage runs the library's public pure functions over the whole corpus (parse, boilerplate,
chunk, exact dedup), then ``chunkdedup.ingest()`` runs end to end into a fresh SQLite file, and a
second ``ingest()`` over the unchanged corpus shows the cost of a no-op re-run. A reference row
parses the same PDFs with pypdf, to show why pypdfium2 was chosen.

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
    python benchmarks/ingest.py --first-run --records 50000   # ~4 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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

from chunkdedup import Config, ingest
from chunkdedup.dedup.exact import dedup_exact, key_chunk
from chunkdedup.parse import discover, parse_file
from chunkdedup.text.boilerplate import candidate_keys, is_chrome, key_id, strip
from chunkdedup.text.chunk import chunk_document
from chunkdedup.types import Chunk, Document, FileStatus, Page

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "sec-10q" / "docs"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "ingest.json"

T = TypeVar("T")


def timed(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Median wall time of ``repeat`` calls, and the last call's result."""
    times: list[float] = []
    result: T
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
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
    cfg = Config()
    console = Console() if sys.stdout.isatty() else Console(width=120)  # a log file gets unwrapped rows
    n = args.repeat

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
    ratio = (pdf_pages / t_ours_pdf) / (pypdf_n / t_pypdf) if pdf_pages and pypdf_n else None
    ratio_text = f"{ratio:.1f}x" if ratio else "n/a"
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB

    table = Table(title=f"chunkdedup ingest benchmark: {corpus.name} ({len(docs)} documents, {pages} pages)")
    for col in ("stage", "seconds", "pages/s", "chunks/s", "note"):
        table.add_column(col, justify="left" if col in ("stage", "note") else "right")
    for r in rows:
        cells = [r["pages_per_s"], r["chunks_per_s"]]
        shown = (f"{c:,.0f}" if c else "" for c in cells)
        table.add_row(r["stage"], f"{r['seconds']:.3f}", *shown, r["note"])
    console.print(table)
    console.print(
        f"raw chunks {raw:,}, after exact {after_exact:,}, canonical {canonical:,} "
        f"(in memory: {len(keyed):,} keyed, {len(canon):,} "
        f"canonical); pypdfium2 vs pypdf pages/s: {ratio_text}{failed_note}; peak RSS {peak_mb:,.0f} MiB"
    )

    result = {
        "benchmark": "ingest",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpu_count": os.cpu_count(),
        },
        "corpus": str(corpus),
        "repeat": n,
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
    }
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if not consistent:
        console.print("[red]warning: the stage-by-stage chunk counts differ from ingest()'s[/red]")
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
