"""Filtered query latency: ``search()`` with ``where`` filters, version policies and the safety net
on and off, on an ingested synthetic index, for this tree and (``--base``) an older commit side by side.

The index is ``scale.py``'s corpus (``write_corpus``: one-page JSONL documents in families of 4
dated versions with ``family`` and ``effective_date`` metadata, about one chunk per paragraph)
ingested with ``chunkdedup ingest``; ``--index`` reuses one. Questions are 2-4 words of the first
groups' texts (seeded), so they hit posting lists of the corpus's own shape. Every case times the
same questions; ``--base COMMIT`` runs the identical measurement in a second process on that
commit's ``src`` (``git archive``), so before and after are measured in one run on one index, and
each case's results (``repr`` of every ``QueryResult``: hits, order, scores at full precision,
citations, drops) are hashed in both processes and compared; ``hits`` counts the hits the case's
questions returned in all (k of each at most).

Example:
    python benchmarks/query_filters.py --chunks 1000000 --workdir /tmp/qf --base 719486a
    python benchmarks/query_filters.py --index /tmp/big.sqlite --questions 10
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "benchmarks" / "results" / "query_filters.json"


def cases(index: Path) -> list[dict[str, Any]]:
    """The measured cases: a filter (``where``), a version policy and the safety net on or off.

    Filter values are read from the index (its first families and dates), so they exist in it.
    """
    import sqlite3

    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        fams = [r[0] for r in conn.execute("SELECT family FROM documents WHERE family IS NOT NULL LIMIT 400")]
        dates = sorted(
            {
                r[0]
                for r in conn.execute("SELECT effective_date FROM documents WHERE effective_date IS NOT NULL")
            }
        )
        doc = conn.execute("SELECT doc_id FROM documents ORDER BY doc_id LIMIT 1 OFFSET 41").fetchone()[0]
    finally:
        conn.close()
    one, two = fams[37 % len(fams)], fams[-1]
    mid = dates[len(dates) // 3]
    out: list[dict[str, Any]] = []
    for where, what in (
        (None, "no filter"),
        ([f"family={one}"], "family=ONE (4 documents)"),
        ([f"family={one}", f"family={two}"], "family=ONE OR family=TWO"),
        ([f"doc={doc}"], "doc=ONE"),
        ([f"effective_date<={mid}"], f"effective_date<={mid}"),
        (["family=none-such"], "family=NONE (nothing passes)"),
    ):
        out.append({"where": where, "what": what, "versions": "latest", "net": True})
        out.append({"where": where, "what": what, "versions": "latest", "net": False})
    out.append(
        {"where": [f"family={one}"], "what": "family=ONE (4 documents)", "versions": "all", "net": True}
    )
    out.append(
        {"where": [f"family={one}"], "what": "family=ONE (4 documents)", "versions": "label", "net": True}
    )
    # the question also names the family: its documents' context boosts their chunks
    out.append(
        {"where": [f"family={one}"], "what": "family=ONE, + its name", "versions": "latest", "net": True,
         "append": one}
    )  # fmt: skip
    return out


def questions(index: Path, n: int, seed: int = 0) -> list[str]:
    import sqlite3

    rng = random.Random(seed)
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        texts = [r[0] for r in conn.execute("SELECT text FROM groups ORDER BY gid LIMIT 500")]
    finally:
        conn.close()
    out = []
    for _ in range(n):
        words = [w.strip(".,") for w in rng.choice(texts).split()]
        out.append(" ".join(rng.sample(words, min(len(words), rng.randint(2, 4)))))
    return out


def measure(index: Path, n_questions: int, repeat: int) -> dict[str, Any]:
    """Time every case in this process (the ``chunkdedup`` on ``sys.path``): p50/p95/max ms, and a
    hash of the results."""
    from chunkdedup import Index, search

    qs = questions(index, n_questions)
    rows = []
    with Index.open(index) as ix:
        search(ix, qs[0])  # warm the page cache
        for case in cases(index):
            times: list[float] = []
            digest = hashlib.sha256()
            hits = 0
            for _ in range(repeat):
                for q in qs:
                    asked = f"{q} {case['append']}" if case.get("append") else q
                    start = time.perf_counter()
                    result = search(
                        ix, asked, where=case["where"], versions=case["versions"], safety_net=case["net"]
                    )
                    times.append(time.perf_counter() - start)
                    digest.update(repr(result).encode())
                    hits += len(result.hits)
            ms = sorted(t * 1000 for t in times)
            rows.append(
                {
                    **case,
                    "n": len(ms),
                    "p50_ms": statistics.median(ms),
                    "p95_ms": ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))],
                    "max_ms": ms[-1],
                    "results_sha256": digest.hexdigest(),
                    "hits": hits,
                }
            )
            print(
                f"  {case['what']}, {case['versions']}, net {'on' if case['net'] else 'off'}: "
                f"{rows[-1]['p50_ms']:.1f} ms p50",
                file=sys.stderr,
            )
    import chunkdedup

    return {"source": str(Path(chunkdedup.__file__).parent), "rows": rows}


def build(workdir: Path, chunks: int) -> tuple[Path, float]:
    """``scale.py``'s corpus of about ``chunks`` chunks, ingested (kept in ``workdir`` for reuse)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from scale import write_corpus

    corpus, index = workdir / f"corpus-{chunks}", workdir / f"index-{chunks}.sqlite"
    if index.exists():
        return index, 0.0
    if not corpus.exists():
        write_corpus(corpus, chunks)
    start = time.perf_counter()
    cmd = [str(Path(sys.executable).with_name("chunkdedup")), "ingest", str(corpus), "--index", str(index)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return index, time.perf_counter() - start


def measure_commit(commit: str, index: Path, n_questions: int, repeat: int) -> dict[str, Any]:
    """:func:`measure` in a second process on ``commit``'s ``src`` (this script run with ``--measure``)."""
    with tempfile.TemporaryDirectory(prefix="query-filters-base-") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", commit, "src"], check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        out = Path(tmp) / "rows.json"
        env = {**os.environ, "PYTHONPATH": str(Path(tmp) / "src")}
        cmd = [sys.executable, __file__, "--measure", str(out), "--index", str(index),
               "--questions", str(n_questions), "--repeat", str(repeat)]  # fmt: skip
        subprocess.run(cmd, check=True, env=env)
        data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    data["commit"] = commit
    return data


def commit_of(ref: str) -> str:
    run = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", ref], check=True, capture_output=True, text=True
    )
    return run.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, help="an ingested index to query (default: build one)")
    ap.add_argument("--chunks", type=int, default=1_000_000, help="corpus size when building")
    ap.add_argument("--workdir", type=Path, help="keep the corpus and index here (default: a temp dir)")
    ap.add_argument("--base", help="also measure this commit, in its own process, on the same index")
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1, help="passes over the questions per case")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # internal: the --base process
    args = ap.parse_args()
    if args.measure:
        data = measure(args.index, args.questions, args.repeat)
        args.measure.write_text(json.dumps(data), encoding="utf-8")
        return

    from rich.console import Console
    from rich.table import Table

    with tempfile.TemporaryDirectory(prefix="query-filters-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        index, build_s = (args.index, 0.0) if args.index else build(workdir, args.chunks)
        import sqlite3

        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        sizes = {
            t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("documents", "sources", "groups", "canonicals")
        }
        conn.close()
        base = measure_commit(args.base, index, args.questions, args.repeat) if args.base else None
        head = measure(index, args.questions, args.repeat)
    head["commit"] = commit_of("HEAD")
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "index": {"path": str(index), "bytes": index.stat().st_size, "build_seconds": build_s, **sizes},
        "questions": args.questions,
        "repeat": args.repeat,
        "head": head,
        "base": base,
    }
    title = (
        f"search() latency, {sizes['sources']:,} sources / {sizes['canonicals']:,} canonicals (k=5, pool 40)"
    )
    cols = ["filter", "versions", "net", "p50 ms", "p95 ms", "hits"]
    if base:
        cols = [
            "filter",
            "versions",
            "net",
            "before p50",
            "before p95",
            "after p50",
            "after p95",
            "hits before",
            "hits after",
            "same results",
        ]
    table = Table(*cols, title=title)
    for i, row in enumerate(head["rows"]):
        cells = [row["what"], row["versions"], "on" if row["net"] else "off"]
        if base:
            old = base["rows"][i]
            cells += [f"{old['p50_ms']:.1f}", f"{old['p95_ms']:.1f}"]
        cells += [f"{row['p50_ms']:.1f}", f"{row['p95_ms']:.1f}"]
        if base:
            cells.append(str(old.get("hits", "-")))
        cells.append(str(row["hits"]))
        if base:
            cells.append("yes" if old["results_sha256"] == row["results_sha256"] else "NO")
        table.add_row(*cells)
    console = Console(width=150)
    console.print(table)
    if base:
        console.print(f"before: {base['commit']}  after: {head['commit']} (plus any uncommitted change)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
