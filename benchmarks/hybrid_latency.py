"""``search()`` latency, BM25 and hybrid, on an index ``ann.py`` built (1M chunks with vectors, a tantivy
folder and an HNSW folder), each question asked once in a fresh process (no question warms another's
rows), and side by side with another checkout's code on the same index (``--baseline SRC``: its
``src`` folder), the two alternating round by round so a change of the machine's load falls on both.

Only the public API times the questions (``Index.open``, ``QueryConfig``, ``search``), so an older
checkout runs the same code; the index is opened read-only, so neither side changes it. An older
checkout refuses an index a newer one has migrated (and a newer one needs its migrations applied), so
across a schema change each side reads its own copy: ``--baseline-index`` is the baseline's (a copy of
the index with its ``.tantivy`` and ``.vectors`` folders, made before this checkout opened it writable).

Example:
    python benchmarks/ann.py --chunks 1000000 --workdir DIR           # builds DIR's index once
    python benchmarks/hybrid_latency.py --workdir DIR --baseline ../before/src --rounds 3
    # across a migration, each side its own copy:
    python benchmarks/hybrid_latency.py --index NEW.sqlite --baseline ../before/src \
        --baseline-index OLD.sqlite --rounds 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from query import percentiles

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "benchmarks" / "results" / "hybrid_latency.json"

#: run in a fresh process under the code being timed: the public API only
_TIMED = """
import csv, json, sys, time
from chunkdedup import Index, QueryConfig, search
index, questions, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = list(csv.DictReader(open(questions, encoding="utf-8-sig")))
asked = [r["Question"] for r in rows][:n]
out = {}
with Index.open(index) as ix:
    cfg = QueryConfig(k=5, pool=40, vector_index="ann")
    for retriever in ("bm25", "hybrid"):
        for q in asked[:2]:  # loads the folders and the embedder
            search(ix, q, config=cfg, retriever=retriever)
        times = []
        for q in asked:
            start = time.perf_counter()
            search(ix, q, config=cfg, retriever=retriever)
            times.append(time.perf_counter() - start)
        out[retriever] = times
print(json.dumps(out))
"""


def _timed(src: Path, index: Path, questions: Path, n: int) -> dict[str, dict[str, float]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", _TIMED, str(index), str(questions), str(n)],
        capture_output=True, text=True, env=env, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the timing under {src} failed:\n{done.stderr}")
    return {name: percentiles(times) for name, times in json.loads(done.stdout).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", type=Path, help="ann.py's --workdir (its index is used)")
    ap.add_argument("--index", type=Path, help="the index (default: WORKDIR/synthetic-CHUNKS-DIMd.sqlite)")
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--questions", type=Path, default=DATA / "sec-10q" / "qna_data.csv")
    ap.add_argument("--n", type=int, default=50, help="questions timed (each once a round)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", type=Path, help="another checkout's src folder, timed alternately")
    ap.add_argument("--baseline-index", type=Path, help="the index the baseline reads (default: the same)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    built = f"synthetic-{args.chunks}-{args.dim}d.sqlite"
    index = args.index or (args.workdir / built if args.workdir else None)
    if index is None or not index.exists():
        raise SystemExit("give --index, or --workdir where `benchmarks/ann.py --workdir DIR` built its index")
    theirs = args.baseline_index or index
    sides = [("this checkout", REPO / "src", index)]
    if args.baseline:
        sides.append(("baseline", args.baseline, theirs))
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds):
        order = sides if r % 2 == 0 else sides[::-1]  # neither side always goes first
        for name, src, at in order:
            runs.append({"round": r + 1, "code": name, "load": os.getloadavg()[0],
                         **_timed(src, at, args.questions, args.n)})
    table = Table(title=f"search() latency, {args.n} questions each once a round ({index.name})")
    for col in ("round", "code", "load", "bm25 p50", "bm25 p95", "hybrid p50", "hybrid p95"):
        table.add_column(col, justify="left" if col == "code" else "right")
    for run in runs:
        table.add_row(str(run["round"]), run["code"], f"{run['load']:.2f}",
                      *(f"{run[k][p]:.1f}" for k in ("bm25", "hybrid") for p in ("p50_ms", "p95_ms")))
    summary: dict[str, Any] = {}
    for name, _, _ in sides:
        mine = [run for run in runs if run["code"] == name]
        summary[name] = {
            f"{k}_{p}_median": statistics.median(run[k][p] for run in mine)
            for k in ("bm25", "hybrid") for p in ("p50_ms", "p95_ms")
        }
    console = Console()
    console.print(table)
    for name, figures in summary.items():
        console.print(f"{name}: medians over rounds " + ", ".join(f"{k} {v:.1f}" for k, v in figures.items()))
    if args.baseline:
        ours, theirs = summary["this checkout"], summary["baseline"]
        console.print("ratio (this checkout / baseline): " + ", ".join(
            f"{k} {ours[k] / theirs[k]:.2f}" for k in ours))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "index": str(index),
        "baseline_index": str(theirs) if args.baseline else None, "runs": runs,
        "summary": summary,
    }, indent=2))
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
