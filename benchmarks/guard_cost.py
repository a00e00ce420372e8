"""What the meaning guard (and the numbering rule) cost a whole ingest: the same ingest with the default
guards and with ``[near] meaning = []`` and ``numbering = false``, run in turn (A B A B ...), each
run a fresh index in its own process; the ratio A/B is taken pair by pair (pairing keeps it
meaningful when the machine's speed drifts) and the medians are printed, wall and CPU (user + system
of the child, from ``os.wait4``).

The corpus is the 50k-record one of ``ingest_vs_datasketch.py`` (written once into ``--work``). One
warm-up run of each (not counted) loads numba's kernel cache.

Example:
    python benchmarks/guard_cost.py --records 50000 --rounds 7 --work WORK_DIR \
        --out benchmarks/results/guard_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

NO_GUARD = "[near]\nmeaning = []\nnumbering = false\n"


def run(args: list[str]) -> tuple[float, float]:
    """One command's wall and CPU seconds (user + system of the child)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed with exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--work", type=Path, required=True, help="a scratch folder (corpus and indexes)")
    parser.add_argument("--out", type=Path, help="write the JSON summary here")
    a = parser.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    corpus = a.work / f"corpus-{a.records}"
    if not corpus.exists():
        here = Path(__file__).resolve().parent
        subprocess.run(
            [sys.executable, str(here / "ingest_vs_datasketch.py"), "--write-corpus", str(corpus),
             "--records", str(a.records)],
            check=True, stdout=subprocess.DEVNULL,
        )
    config = a.work / "no-guard.toml"
    config.write_text(NO_GUARD, encoding="utf-8")
    exe = shutil.which("chunkdedup") or "chunkdedup"

    def ingest(name: str, *extra: str) -> tuple[float, float]:
        index = a.work / f"{name}.sqlite"
        for p in a.work.glob(f"{name}.sqlite*"):
            p.unlink()
        return run([exe, "ingest", str(corpus), "--index", str(index), *extra])

    guarded = lambda: ingest("guarded")  # noqa: E731
    plain = lambda: ingest("plain", "--config", str(config))  # noqa: E731
    guarded(), plain()  # warm-up: numba's cache, the page cache
    pairs = [(guarded(), plain()) for _ in range(a.rounds)]
    wall_ratio = statistics.median(g[0] / p[0] for g, p in pairs)
    cpu_ratio = statistics.median(g[1] / p[1] for g, p in pairs)
    summary = {
        "records": a.records,
        "rounds": a.rounds,
        "guarded": {"wall_s": statistics.median(g[0] for g, _ in pairs),
                    "cpu_s": statistics.median(g[1] for g, _ in pairs)},
        "no_guard": {"wall_s": statistics.median(p[0] for _, p in pairs),
                     "cpu_s": statistics.median(p[1] for _, p in pairs)},
        "ratio": {"wall": wall_ratio, "cpu": cpu_ratio},
        "pairs": [{"guarded": g, "no_guard": p} for g, p in pairs],
    }
    table = Table(title=f"meaning guard's cost, {a.records:,} records, {a.rounds} pairs (medians)")
    for col in ("run", "wall s", "CPU s"):
        table.add_column(col, justify="right" if col != "run" else "left")
    for label, key in (("default guards", "guarded"), ("meaning = [], numbering = false", "no_guard")):
        table.add_row(label, f"{summary[key]['wall_s']:.2f}", f"{summary[key]['cpu_s']:.2f}")
    table.add_row("ratio (pair by pair)", f"{wall_ratio:.3f}x", f"{cpu_ratio:.3f}x")
    Console().print(table)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
