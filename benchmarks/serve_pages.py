"""Latency of every page of ``chunkdedup serve``, through Starlette's ``TestClient`` on an index.

Each route is requested as a browser does (HTML; ``--json`` asks for ``?format=json`` instead): the
app is the one ``chunkdedup serve`` runs (:func:`chunkdedup.web.create_app`), so a request opens the
index read-only, builds the page record and renders it. Ids and filter values are read from the index
(a document, a boilerplate key, the canonical with the most sources, the first families), questions are
2-4 words of the first groups' texts (``query_filters.py``'s, seeded). The first request of the
overview and boilerplate pages computes whole-index aggregates the app then keeps while the index is
unchanged: that request is timed apart (``first``), on a fresh app, before the warm requests. With
``--cold`` the OS page cache of the index file (and its ``-wal``) is evicted just before it
(``posix_fadvise(DONTNEED)``: no root needed), as after a reboot.

The index is opened read-only and never written (an index that needs a migration is refused: open it
once with ``chunkdedup stats`` first).

Example:
    python benchmarks/serve_pages.py --index /tmp/qf-big-tantivy.sqlite
    python benchmarks/serve_pages.py --index /tmp/qf-big.sqlite --repeat 10 --out /tmp/fts5-pages.json
    python benchmarks/serve_pages.py --index /tmp/m3.sqlite --repeat 1 --questions 1 --cold
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "serve_pages.json"
sys.path.insert(0, str(REPO / "benchmarks"))

from query_filters import questions  # noqa: E402


@dataclass(frozen=True, slots=True)
class Route:
    """One measured row: a name, what it shows, and the URLs requested (cycled over the repeats)."""

    name: str
    what: str
    urls: tuple[str, ...]
    first: bool = False  # also time the first request on a fresh app (whole-index aggregates)


def routes(index: Path, n_questions: int) -> list[Route]:
    """The measured routes, their ids and filter values read from ``index`` (read-only)."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        doc = conn.execute("SELECT doc_id FROM documents ORDER BY doc_id LIMIT 1 OFFSET 41").fetchone()[0]
        fams = [r[0] for r in conn.execute("SELECT family FROM documents WHERE family IS NOT NULL LIMIT 400")]
        key = conn.execute(
            "SELECT khash FROM stripped GROUP BY khash ORDER BY COUNT(*) DESC LIMIT 1"
        ).fetchone()
        big = conn.execute("SELECT id FROM canonicals ORDER BY n_sources DESC, id LIMIT 1").fetchone()[0]
        one = conn.execute("SELECT id FROM canonicals ORDER BY id LIMIT 1").fetchone()[0]
    finally:
        conn.close()
    fam_one, fam_two = fams[37 % len(fams)], fams[-1]
    qs = questions(index, n_questions)

    def query(where: list[str], append: str = "") -> tuple[str, ...]:
        asked = [f"{q} {append}" if append else q for q in qs]
        return tuple("/query?" + urlencode([("q", q)] + [("where", w) for w in where]) for q in asked)

    out = [
        Route("/", "overview: counts, files, states, problems, runs", ("/",), first=True),
        Route("/documents", "documents, first page of 50", ("/documents",)),
        Route(
            "/documents/<id>",
            "one document: its pages, chunks, stripped lines",
            ("/documents/" + quote(doc),),
        ),
        Route("/boilerplate", "boilerplate keys, first page of 50", ("/boilerplate",), first=True),
    ]
    if key is not None:
        out.append(
            Route("/boilerplate/<key>", "the most stripped key: its documents", (f"/boilerplate/{key[0]}",))
        )
    out += [
        Route(
            "/chunks/<id> (most sources)",
            "a canonical: sources, merged copies, variants",
            ("/chunks/" + quote(big, safe=""),),
        ),
        Route("/chunks/<id> (first)", "the first canonical by id", ("/chunks/" + quote(one, safe=""),)),
        Route("/query", "no filter", query([])),
        Route("/query family=ONE", "a family of 4 documents", query([f"family={fam_one}"])),
        Route(
            "/query family=ONE + its name",
            "the question names the family: context boost",
            query([f"family={fam_one}"], fam_one),
        ),
        Route(
            "/query family=ONE OR TWO",
            "two families OR-ed",
            query([f"family={fam_one}", f"family={fam_two}"]),
        ),
        Route("/query doc=ONE", "one document", query([f"doc={doc}"])),
        Route("/query family=NONE", "nothing passes", query(["family=none-such"])),
    ]
    return out


def evict(index: Path) -> None:
    """Drop the OS page cache of the index file and its WAL (the pages are clean: nothing is lost)."""
    for p in (index, index.with_name(index.name + "-wal")):
        if p.exists():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def measure(
    index: Path, rows: list[Route], repeat: int, as_json: bool, cold: bool = False
) -> list[dict[str, Any]]:
    """Time every route: the first request on a fresh app where asked (``cold``: on an evicted OS
    cache), then ``repeat`` passes."""
    from starlette.testclient import TestClient

    from chunkdedup.web import create_app

    def get(client: TestClient, url: str) -> float:
        if as_json:
            url += ("&" if "?" in url else "?") + "format=json"
        start = time.perf_counter()
        r = client.get(url)
        took = time.perf_counter() - start
        if r.status_code != 200:
            raise SystemExit(f"{url}: HTTP {r.status_code}: {r.text[:300]}")
        return took

    out: list[dict[str, Any]] = []
    firsts: dict[str, float] = {}
    with TestClient(create_app(index)) as fresh:
        if cold:
            evict(index)
        for row in rows:
            if row.first:
                firsts[row.name] = get(fresh, row.urls[0])
    with TestClient(create_app(index)) as client:
        for row in rows:
            get(client, row.urls[0])  # warm: page cache, app memo
            times = [get(client, url) for _ in range(repeat) for url in row.urls]
            ms = sorted(t * 1000 for t in times)
            out.append(
                {
                    "route": row.name,
                    "what": row.what,
                    "n": len(ms),
                    "first_ms": firsts[row.name] * 1000 if row.name in firsts else None,
                    "p50_ms": statistics.median(ms),
                    "p95_ms": ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
                    "max_ms": ms[-1],
                }
            )
            print(f"  {row.name}: {out[-1]['p50_ms']:.1f} ms p50", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True, help="an ingested index (opened read-only)")
    ap.add_argument("--repeat", type=int, default=5, help="passes over each route's URLs")
    ap.add_argument("--questions", type=int, default=10, help="questions per /query row")
    ap.add_argument("--json", action="store_true", help="request ?format=json instead of HTML")
    ap.add_argument("--cold", action="store_true", help="evict the OS cache before the first requests")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    from rich.console import Console
    from rich.table import Table

    from chunkdedup.store import Store, textindex

    with Store.open(args.index, readonly=True) as store:  # refuses an index that needs a migration
        engine = textindex.engine(store)
    rows = routes(args.index, args.questions)
    measured = measure(args.index, rows, args.repeat, args.json, args.cold)
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "index": {"path": str(args.index), "bytes": args.index.stat().st_size, "text_engine": engine},
        "format": "json" if args.json else "html",
        "repeat": args.repeat,
        "questions": args.questions,
        "cold": args.cold,
        "rows": measured,
    }
    table = Table(
        "route",
        "what",
        "n",
        "first ms",
        "p50 ms",
        "p95 ms",
        title=f"serve pages, {args.index.name} ({engine})",
    )
    for r in measured:
        first = "" if r["first_ms"] is None else f"{r['first_ms']:.0f}"
        table.add_row(r["route"], r["what"], str(r["n"]), first, f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}")
    console = Console(width=150)
    console.print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
